"""An EKS cluster the stack creates, and what it runs on: Secrets encrypted, the API endpoint
private or restricted, audit logs kept, add-ons pinned, IMDSv2 on every node group.

They follow the EKS best practices guide (security: "Encrypt Kubernetes Secrets with AWS KMS",
"Make the EKS Cluster Endpoint private", "Enable audit logs", "Restrict access to the instance
profile assigned to the worker node") and what the EKS API does where a field is left out:
CreateCluster opens the public endpoint to 0.0.0.0/0 (botocore's EKS model, VpcConfigRequest:
`endpointPublicAccess` defaults to true, `publicAccessCidrs` to 0.0.0.0/0), and CreateAddon
installs its default version for the cluster's Kubernetes version when `addonVersion` is left
out, which moves as EKS publishes new builds.
"""

from collections.abc import Iterator, Sequence
from typing import Any

from checks import resource_policy
from gpu_pools import check_launch_templates, imdsv2_problems
from networks import WIDEST, wider_than_allowed
from props import elements, flag, shown, text, value_at
from pulumi_policy import (
    EnforcementLevel,
    PolicyResource,
    ReportViolation,
    ResourceValidationArgs,
    StackValidationArgs,
    StackValidationPolicy,
)

CLUSTER_TYPE = "aws:eks/cluster:Cluster"
ADDON_TYPE = "aws:eks/addon:Addon"
REQUIRED_LOGS = ("audit", "authenticator")
NODE_GROUP_IMDSV2 = "eks-node-group-imdsv2"


def secrets_encryption_problems(args: ResourceValidationArgs) -> Iterator[str]:
    configs = value_at(args.props, "encryptionConfig")
    configs = configs if isinstance(configs, list) else [configs] if configs else []
    encrypted = [
        c
        for c in configs
        if "secrets" in elements(c, "resources") and text(c, "provider", "keyArn")
    ]
    if not encrypted:
        yield (
            "the EKS cluster does not encrypt Secrets with a KMS key of its own (encryptionConfig"
            f" is {shown(value_at(args.props, 'encryptionConfig'))}), so a copy of etcd holds"
            " them under AWS-owned keys only. Fix: set encryptionConfig to {resources:"
            ' ["secrets"], provider: {keyArn: <a KMS key ARN>}}.'
        )


def endpoint_problems(args: ResourceValidationArgs) -> Iterator[str]:
    public = flag(args.props, "vpcConfig", "endpointPublicAccess")
    cidrs = elements(args.props, "vpcConfig", "publicAccessCidrs")
    if public is False:
        return
    wide = [cidr for cidr in cidrs if wider_than_allowed(cidr)]
    if not cidrs or wide:
        yield (
            "the EKS cluster's API endpoint answers the whole internet (vpcConfig."
            f"endpointPublicAccess={shown(public)}, publicAccessCidrs={shown(cidrs or None)};"
            " EKS opens it to 0.0.0.0/0 when these are left out"
            + (f"; wider than {WIDEST}: {', '.join(map(str, wide))}" if wide else "")
            + "). Fix: set endpointPublicAccess to false, or list the deployers' egress ranges"
            f" ({WIDEST} or narrower) in publicAccessCidrs."
        )


def audit_log_problems(args: ResourceValidationArgs) -> Iterator[str]:
    logs = elements(args.props, "enabledClusterLogTypes")
    missing = [log for log in REQUIRED_LOGS if log not in logs]
    if missing:
        yield (
            f"the EKS cluster does not send its {' and '.join(missing)} logs to CloudWatch"
            f" (enabledClusterLogTypes={shown(logs)}), so nobody can tell who did what on it, or"
            f" as which IAM identity. Fix: add {', '.join(missing)} to enabledClusterLogTypes."
        )


def addon_pin_problems(args: ResourceValidationArgs) -> Iterator[str]:
    if not text(args.props, "addonVersion"):
        yield (
            f"the EKS add-on {shown(text(args.props, 'addonName'))} has no addonVersion, so EKS"
            " installs whichever version is its default when the add-on is created, and clusters"
            " created a week apart run different ones. Fix: pin addonVersion (`aws eks"
            " describe-addon-versions` lists them)."
        )


def node_group_imdsv2_problems(
    node_group: PolicyResource, template: PolicyResource | None
) -> Iterator[str]:
    subject = f'node group "{node_group.name}"'
    if template is None:
        yield (
            f"the {subject} has no launch template in this stack that requires IMDSv2, and EKS's"
            " own launch template leaves IMDSv1 on, so any pod that reaches the metadata service"
            " takes the node role's credentials. Fix: give it a launch template that sets"
            ' metadataOptions.httpTokens "required" and a hop limit of 1.'
        )
        return
    yield from imdsv2_problems(
        f'launch template "{template.name}" of {subject}',
        value_at(template.props, "metadataOptions", "httpTokens"),
        ("metadataOptions", "httpTokens"),
    )


def validate_node_groups(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    check_launch_templates(
        NODE_GROUP_IMDSV2, _every_node_group, node_group_imdsv2_problems, args, report_violation
    )


def _every_node_group(node_group: PolicyResource, templates: Sequence[PolicyResource]) -> bool:
    return True


def _cluster_policy(name: str, description: str, problems: Any) -> Any:
    return resource_policy(name, description, problems, resource_types=(CLUSTER_TYPE,))


POLICIES = [
    _cluster_policy(
        "eks-cluster-secrets-encryption",
        "An EKS cluster encrypts its Secrets with a KMS key (envelope encryption).",
        secrets_encryption_problems,
    ),
    _cluster_policy(
        "eks-cluster-endpoint",
        "An EKS cluster's API endpoint is private, or public to listed CIDR blocks only.",
        endpoint_problems,
    ),
    _cluster_policy(
        "eks-cluster-audit-logs",
        "An EKS cluster sends its audit and authenticator logs to CloudWatch Logs.",
        audit_log_problems,
    ),
    resource_policy(
        "eks-addons-pinned",
        "Every EKS add-on is pinned to a version.",
        addon_pin_problems,
        resource_types=(ADDON_TYPE,),
    ),
    StackValidationPolicy(
        name=NODE_GROUP_IMDSV2,
        description="Every EKS managed node group's launch template requires IMDSv2.",
        validate=validate_node_groups,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
]
