"""With `karpenter.install: false`, whether the existing controller's IAM role lets it launch what
the pools ask for: IAM's policy simulator on the role of the controller's Pod Identity
association.

Upstream added what placement groups need to the controller policy only in v1.11.0 and tells
existing users to add it by hand: "there are new changes to IAM permissions in the Karpenter
controller role for supporting placement groups ... If you are using placement groups, you will
need to update your Karpenter controller role" (aws/karpenter-provider-aws v1.14.1,
website/content/en/docs/upgrading/upgrade-guide.md); reservations came with v1.3.0. A role made
before and upgraded by chart alone leaves an EFA pool's EC2NodeClass not ready
(`PlacementGroupResolutionFailed`) and a reserved pool's launches refused, so their pods stay
Pending. The actions and resources are those of the controller policy of upstream's
getting-started template at v1.14.1 (getting-started-with-karpenter/cloudformation.yaml:
`AllowScopedEC2InstanceAccessActions`, `AllowRegionalReadActions` with `aws:RequestedRegion`,
`AllowPassingInstanceRole` with `iam:PassedToService`).
"""

from collections.abc import Mapping, Sequence
from typing import Any

from botocore.exceptions import ClientError

from gpu_platform.config import EC2_RESERVED_CAPACITIES, StackConfig, key_path
from gpu_platform.preflight.findings import Finding

CONTROLLER_ROLE_TAG = "gpu-platform-karpenter-controller-role"
"""The tag on the pre-flight check's role naming the existing controller's role (its name, with
its path), the only role docs/iam/eks-preflight-policy.json lets it simulate."""
DEFAULT_SERVICE_ACCOUNT = "karpenter"
"""The chart's controller service account (charts/karpenter values.yaml `serviceAccount`, named
after the release)."""


def needed_permissions(config: StackConfig, arn: str) -> list[tuple[str, str]]:
    """(action, resource ARN) the controller needs for the stack's pools; `arn` is the
    cluster's, whose partition, region and account they are in."""
    _, partition, _, region, account, _ = arn.split(":", 5)
    ec2 = f"arn:{partition}:ec2:{region}:{account}"
    needed = [("iam:PassRole", str(config.karpenter.node_role_arn))]
    if any(p.aws.efa and p.capacity not in EC2_RESERVED_CAPACITIES for p in config.pools):
        needed += [
            ("ec2:DescribePlacementGroups", "*"),
            ("ec2:CreateFleet", f"{ec2}:placement-group/*"),
            ("ec2:RunInstances", f"{ec2}:placement-group/*"),
        ]
    # Each pool's own reservation, which a Karpenter pool always names (`eks_rules`): a role
    # allowed only the stack's reservations is allowed what the pools need, but a statement
    # naming them does not match the resource `capacity-reservation/*` (a policy's `*` is a
    # pattern; the request's is a character), so the simulator would deny it.
    reservations = sorted(
        {
            f"{ec2}:capacity-reservation/{p.aws.capacity_reservation_id}"
            for p in config.pools
            if p.capacity in EC2_RESERVED_CAPACITIES
        }
    )
    if reservations:
        needed.append(("ec2:DescribeCapacityReservations", "*"))
        needed += [(action, r) for r in reservations for action in _LAUNCHES]
    return needed


_LAUNCHES = ("ec2:CreateFleet", "ec2:RunInstances")


def controller_permissions_finding(
    config: StackConfig,
    cluster: Mapping[str, Any],
    eks: Any,
    iam: Any,
    service_account: str = DEFAULT_SERVICE_ACCOUNT,
) -> Finding:
    """The controller role's permissions for the pools, as IAM's simulator decides them."""
    namespace = config.karpenter.namespace
    subject = f"cluster {config.cluster.name} Karpenter controller role"
    role = _pod_identity_role(eks, cluster["name"], namespace, service_account)
    if role is None:
        return Finding(
            "warning",
            subject,
            f"No Pod Identity association for {namespace}/{service_account}: the check cannot"
            " tell the controller's role (IRSA is not read).",
            "Check that its role allows what upstream's v1.14.1 controller policy does:"
            " placement-group/* and capacity-reservation/* for ec2:CreateFleet and"
            f" ec2:RunInstances, and iam:PassRole on {key_path('karpenter', 'nodeRoleArn')}.",
        )
    try:
        denied, unevaluated = _denied(
            iam, role, needed_permissions(config, cluster["arn"]), cluster
        )
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") != "AccessDenied":
            raise
        return Finding(
            "warning",
            subject,
            f"IAM refused to simulate {role}'s policies: docs/iam/eks-preflight-policy.json"
            " allows it only on the role the check's own role names in its tag"
            f" {CONTROLLER_ROLE_TAG}, so that a preview learns no other role's permissions.",
            f"Tag the role the check runs with {CONTROLLER_ROLE_TAG}={role.split(':role/')[1]}"
            " (docs/iam/README.md), or check that the controller's role allows what upstream's"
            " v1.14.1 controller policy does.",
        )
    if denied:
        return Finding(
            "blocking",
            subject,
            f"{role} may not: {'; '.join(denied)}. Karpenter could not launch the pools' nodes"
            " there, and their pods would stay Pending.",
            "Add them to the controller's policy, as upstream's upgrade guide asks of roles made"
            " before v1.11.0 (docs/karpenter.md, An existing Karpenter).",
        )
    if unevaluated:
        return Finding(
            "warning",
            subject,
            f"IAM's simulator could not decide for {role}: {'; '.join(unevaluated)}. Its"
            " policies' conditions read keys a launch sets but a simulation does not.",
            "Check that those conditions hold for Karpenter's launches, or that the role allows"
            " them unconditionally as upstream's v1.14.1 controller policy does.",
        )
    return Finding("ok", subject, f"{role} may launch what the pools need.", "Nothing.")


def _pod_identity_role(eks: Any, cluster: str, namespace: str, service_account: str) -> str | None:
    found = eks.list_pod_identity_associations(
        clusterName=cluster, namespace=namespace, serviceAccount=service_account
    )["associations"]
    if not found:
        return None
    association = eks.describe_pod_identity_association(
        clusterName=cluster, associationId=found[0]["associationId"]
    )["association"]
    role: str = association["roleArn"]
    return role


def _denied(
    iam: Any, role: str, needed: Sequence[tuple[str, str]], cluster: Mapping[str, Any]
) -> tuple[list[str], list[str]]:
    """`action on resource` for each that the role's policies do not allow, evaluated with the
    context keys upstream's policy conditions read; apart, those only a condition on a key the
    simulation lacks (`MissingContextValues`, e.g. `aws:ResourceTag/...`) keeps from being
    allowed: IAM's simulator evaluates such a condition as false, which a launch need not."""
    region = cluster["arn"].split(":")[3]
    context = [
        {
            "ContextKeyName": "iam:PassedToService",
            "ContextKeyValues": ["ec2.amazonaws.com"],
            "ContextKeyType": "string",
        },
        {
            "ContextKeyName": "aws:RequestedRegion",
            "ContextKeyValues": [region],
            "ContextKeyType": "string",
        },
    ]
    denied, unevaluated = [], []
    for action, resource in needed:
        results = iam.simulate_principal_policy(
            PolicySourceArn=role,
            ActionNames=[action],
            ResourceArns=[resource],
            ContextEntries=context,
        )["EvaluationResults"]
        decisions = {r["EvalDecision"] for r in results}
        if decisions <= {"allowed"}:
            continue
        missing = sorted(
            {key for r in results for key in r.get("MissingContextValues", [])}
            | {
                key
                for r in results
                for specific in r.get("ResourceSpecificResults", [])
                for key in specific.get("MissingContextValues", [])
            }
        )
        if "explicitDeny" in decisions or not missing:
            denied.append(f"{action} on {resource}")
        else:
            unevaluated.append(f"{action} on {resource} ({', '.join(missing)})")
    return denied, unevaluated
