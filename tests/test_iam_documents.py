"""Every IAM document the project ships (docs/iam/) or creates (the inline policies, queue policy
and trust policies in every EKS stack's plan), against the rules a security review applies, and
the escalation paths a deploy role with IAM permissions opens, evaluated request by request.

Sources, all in the IAM User Guide unless named: "Permissions boundaries for IAM entities"
(delegating role creation: a boundary required on CreateRole and kept on every later change),
"IAM and AWS STS condition context keys" (iam:PermissionsBoundary, iam:PolicyARN,
iam:PassedToService), "Grant a user permissions to pass a role to an AWS service", the EC2 user
guide's "Grant permission to tag Amazon EC2 resources during creation" (ec2:CreateAction), the
EKS user guide's "Assign IAM roles to Kubernetes service accounts" (EKS Pod Identity:
pods.eks.amazonaws.com), and "IAM and AWS STS quotas" (6,144 characters per managed policy).
"""

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from gpu_platform.offline.program import Plan, run_program
from gpu_platform.stack_files import stack_config
from tests.aws_managed_policies import MANAGED_POLICIES
from tests.aws_service_reference import (
    access_level,
    actions_matching,
    changes_something,
    example_arn,
    resource_types,
    sent,
    supports_condition_key,
    takes_resource,
    unknown_actions,
)
from tests.gpu_platform.test_platform import (
    TWO_PLATFORMS_PROGRAM,
    in_code_project,
    other_config,
    platform_settings,
)
from tests.iam_policy import Policy, Request, Statement, allowed, as_list, statements
from tests.repository import PROJECT, ROOT
from tests.shared_plans import shared_plan

IAM_DOCS = ROOT / "docs" / "iam"
EKS_STACKS = ("dev", "prod", "karpenter-dev")
ACCOUNT = "111111111111"
CLUSTER = "ml-prod"
BOUNDARY_ARN = f"arn:aws:iam::{ACCOUNT}:policy/gpu-platform-permissions-boundary"
# The deploy role of the `ml-prod` stack: its account and the two tags its policies read.
VPC = "vpc-0123456789abcdef0"
REGION = "us-east-1"
DEPLOY_ROLE = {
    "aws:PrincipalAccount": ACCOUNT,
    "aws:PrincipalTag/gpu-platform-cluster": CLUSTER,
    "aws:PrincipalTag/gpu-platform-prefix": CLUSTER,
    "aws:PrincipalTag/gpu-platform-vpc": VPC,
    "aws:PrincipalTag/gpu-platform-region": REGION,
}
NODE_POLICIES = [
    f"arn:aws:iam::aws:policy/{name}"
    for name in ("AmazonEKSWorkerNodePolicy", "AmazonEC2ContainerRegistryPullOnly")
]
MANAGED_POLICY_LIMIT = 6144


def _document(name: str) -> dict[str, Any]:
    return json.loads((IAM_DOCS / name).read_text())


def deploy_policies() -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(IAM_DOCS.glob("eks-deploy-*-policy.json"))]


def boundary() -> dict[str, Any]:
    return _document("eks-permissions-boundary.json")


@pytest.fixture(scope="module")
def eks_plans() -> dict[str, Plan]:
    return {stack: shared_plan(stack) for stack in EKS_STACKS}


def created_policies(plans: Mapping[str, Plan]) -> dict[str, Policy]:
    """The identity policies the stacks create: each role's inline policies."""
    return {
        f"{stack}:{r.name}": json.loads(r.inputs["policy"])
        for stack, plan in plans.items()
        for r in plan.of_type("aws:iam/rolePolicy:RolePolicy")
    }


def resource_policies(plans: Mapping[str, Plan]) -> dict[str, Policy]:
    """The resource policies the stacks create: Karpenter's interruption queue's."""
    return {
        f"{stack}:{r.name}": json.loads(r.inputs["policy"])
        for stack, plan in plans.items()
        for r in plan.of_type("aws:sqs/queuePolicy:QueuePolicy")
    }


def every_document(plans: Mapping[str, Plan]) -> dict[str, Policy]:
    shipped = {
        f"docs/iam/{p.name}": json.loads(p.read_text()) for p in sorted(IAM_DOCS.glob("eks-*.json"))
    }
    managed = {f"aws-managed:{name}": doc for name, doc in MANAGED_POLICIES.items()}
    return shipped | created_policies(plans) | resource_policies(plans) | managed


# --- The rules -----------------------------------------------------------------------------

ROLE_PERMISSION_CHANGES = {
    "iam:createrole",
    "iam:putrolepolicy",
    "iam:attachrolepolicy",
    "iam:putrolepermissionsboundary",
    "iam:updateassumerolepolicy",
}
"""What gives a role permissions or a new truster: each needs the boundary condition."""


def findings(name: str, policy: Policy) -> set[tuple[str, str, str, str]]:
    """(document, statement, rule, action) for every rule an Allow statement breaks."""
    found: set[tuple[str, str, str, str]] = set()
    for index, statement in enumerate(statements(policy)):
        if statement["Effect"] != "Allow":
            continue
        sid = statement.get("Sid", f"#{index}")
        for rule, action in statement_findings(statement):
            found.add((name, sid, rule, action))
    return found


def statement_findings(statement: Statement) -> Iterator[tuple[str, str]]:
    entries = as_list(statement["Action"])
    for unknown in unknown_actions(entries):
        yield "unknown action", unknown
    actions = [a for entry in entries for a in actions_matching(entry)]
    condition_keys = {key for block in statement.get("Condition", {}).values() for key in block}
    wildcard = any(_any_resource(r) for r in as_list(statement["Resource"]))
    every_of_a_type = "Condition" not in statement and any(
        _every_of_a_type(r) for r in as_list(statement["Resource"])
    )
    for action in actions:
        writes = changes_something(action)
        if writes and wildcard and resource_types(action):
            yield "write action on any resource", action
        elif writes and every_of_a_type and resource_types(action):
            yield "unconditioned write on every resource of a type", action
        if action == "iam:PassRole" and "iam:PassedToService" not in condition_keys:
            yield "PassRole without iam:PassedToService", action
        if action.lower() in ROLE_PERMISSION_CHANGES and "iam:PermissionsBoundary" not in (
            condition_keys
        ):
            yield "role change without iam:PermissionsBoundary", action
        if action == "iam:AttachRolePolicy" and "iam:PolicyARN" not in condition_keys:
            yield "AttachRolePolicy without iam:PolicyARN", action
        if access_level(action) == "Tagging" and not condition_keys:
            yield "tagging without conditions", action
        for key in sorted(condition_keys):
            if not supports_condition_key(action, key):
                yield f"condition key {key} not supported", action


def _every_of_a_type(pattern: str) -> bool:
    """An ARN pattern naming every resource of its type in an account (`instance/*`,
    `autoScalingGroup:*:autoScalingGroupName/*`): nothing but a condition narrows it."""
    resource = re.sub(r"\$\{[^}]*\}", "x", pattern).split(":", 5)[-1]
    return re.fullmatch(r"[A-Za-z-]+([/:]\*)+(:[A-Za-z]+/\*)?", resource) is not None


def _any_resource(pattern: str) -> bool:
    """`*`, or an ARN pattern of any account."""
    parts = pattern.split(":")
    return pattern == "*" or (len(parts) >= 6 and parts[4] == "*")


# Findings that stay, each for a reason outside the project's hands.
EXPECTED_FINDINGS = {
    # AWS managed policies, attached as AWS publishes them: the boundary confines them to the
    # cluster's account (`test_the_boundary_leaves_every_role_what_its_policies_grant`).
    *(
        (
            "aws-managed:AmazonEKS_CNI_Policy",
            "AmazonEKSCNIPolicy",
            "write action on any resource",
            a,
        )
        for a in (
            "ec2:AssignPrivateIpAddresses",
            "ec2:AttachNetworkInterface",
            "ec2:CreateNetworkInterface",
            "ec2:DeleteNetworkInterface",
            "ec2:DetachNetworkInterface",
            "ec2:ModifyNetworkInterfaceAttribute",
            "ec2:UnassignPrivateIpAddresses",
        )
    ),
    (
        "aws-managed:AmazonEKS_CNI_Policy",
        "AmazonEKSCNIPolicyENITag",
        "write action on any resource",
        "ec2:CreateTags",
    ),
    (
        "aws-managed:AmazonEKS_CNI_Policy",
        "AmazonEKSCNIPolicyENITag",
        "tagging without conditions",
        "ec2:CreateTags",
    ),
    (
        "aws-managed:AmazonEC2ContainerRegistryPullOnly",
        "#0",
        "write action on any resource",
        "ecr:BatchImportUpstreamImage",
    ),
    # A launch may use subnets, security groups, capacity reservations and placement groups that
    # another account shares through AWS RAM (VPC user guide, "Share your VPC with other
    # accounts"; EC2 user guide, "Shared Capacity Reservations"): Karpenter's template and the
    # boundary leave their account open, and the boundary holds subnets, security groups and
    # network interfaces to the cluster's VPC (`ec2:Vpc`) instead.
    *(
        ("docs/iam/eks-permissions-boundary.json", sid, "write action on any resource", a)
        for sid, actions in (
            ("LaunchInVpc", ("ec2:RunInstances", "ec2:CreateFleet")),
            ("LaunchImages", ("ec2:RunInstances", "ec2:CreateFleet")),
            (
                "EnisInVpc",
                (
                    "ec2:CreateNetworkInterface",
                    "ec2:AttachNetworkInterface",
                    "ec2:DetachNetworkInterface",
                    "ec2:DeleteNetworkInterface",
                    "ec2:ModifyNetworkInterfaceAttribute",
                    "ec2:AssignPrivateIpAddresses",
                    "ec2:UnassignPrivateIpAddresses",
                    "ec2:AssignIpv6Addresses",
                    "ec2:UnassignIpv6Addresses",
                ),
            ),
        )
        for a in actions
    ),
    # An instance has no `ec2:Vpc` key: the network interface's own statement holds the VPC.
    *(
        (
            "docs/iam/eks-permissions-boundary.json",
            "EnisToInstances",
            "unconditioned write on every resource of a type",
            a,
        )
        for a in (
            "ec2:AttachNetworkInterface",
            "ec2:DetachNetworkInterface",
            "ec2:ModifyNetworkInterfaceAttribute",
        )
    ),
    # AmazonEC2ContainerRegistryPullOnly's pull-through cache import, in the account.
    (
        "docs/iam/eks-permissions-boundary.json",
        "PullThroughCache",
        "unconditioned write on every resource of a type",
        "ecr:BatchImportUpstreamImage",
    ),
    *(
        (
            "karpenter-dev:karpenter-node-lifecycle",
            "AllowScopedEC2InstanceAccessActions",
            "write action on any resource",
            a,
        )
        for a in ("ec2:RunInstances", "ec2:CreateFleet")
    ),
}


def test_every_iam_document_keeps_the_rules(eks_plans: dict[str, Plan]) -> None:
    documents = every_document(eks_plans)
    found = set().union(*(findings(name, doc) for name, doc in documents.items()))

    assert {name.partition(":")[0] for name in documents} >= {
        "docs/iam/eks-deploy-cluster-policy.json",
        "docs/iam/eks-deploy-ec2-policy.json",
        "docs/iam/eks-deploy-iam-policy.json",
        "docs/iam/eks-deploy-karpenter-policy.json",
        "docs/iam/eks-permissions-boundary.json",
        "dev",
        "prod",
        "karpenter-dev",
        "aws-managed",
    }
    assert sorted(found) == sorted(EXPECTED_FINDINGS)


@pytest.mark.parametrize(
    ("statement", "rule"),
    [
        (
            {"Effect": "Allow", "Action": "ec2:ModifyLaunchTemplate", "Resource": "*"},
            "write action on any resource",
        ),
        (
            {
                "Effect": "Allow",
                "Action": "eks:UpdateNodegroupVersion",
                "Resource": "arn:aws:eks:*:*:nodegroup/*",
            },
            "write action on any resource",
        ),
        (
            # The boundary's first Auto Scaling statement: every group of the account.
            {
                "Effect": "Allow",
                "Action": "autoscaling:TerminateInstanceInAutoScalingGroup",
                "Resource": "arn:aws:autoscaling:*:${aws:PrincipalAccount}:autoScalingGroup:*:"
                "autoScalingGroupName/*",
            },
            "unconditioned write on every resource of a type",
        ),
        (
            {
                "Effect": "Allow",
                "Action": "iam:PassRole",
                "Resource": "arn:aws:iam::1:role/x-node-role-*",
            },
            "PassRole without iam:PassedToService",
        ),
        (
            {
                "Effect": "Allow",
                "Action": "iam:CreateRole",
                "Resource": "arn:aws:iam::1:role/x-node-role-*",
            },
            "role change without iam:PermissionsBoundary",
        ),
        (
            {
                "Effect": "Allow",
                "Action": "iam:AttachRolePolicy",
                "Resource": "arn:aws:iam::1:role/x-node-role-*",
                "Condition": {
                    "StringEquals": {"iam:PermissionsBoundary": "arn:aws:iam::1:policy/b"}
                },
            },
            "AttachRolePolicy without iam:PolicyARN",
        ),
        (
            {
                "Effect": "Allow",
                "Action": "autoscaling:CreateOrUpdateTags",
                "Resource": "arn:aws:autoscaling:*:1:autoScalingGroup:*:autoScalingGroupName/*",
            },
            "tagging without conditions",
        ),
        (
            {
                "Effect": "Allow",
                "Action": "autoscaling:PutScheduledUpdateGroupAction",
                "Resource": "arn:aws:autoscaling:*:1:autoScalingGroup:*:autoScalingGroupName/*",
                "Condition": {"ForAllValues:StringLike": {"aws:TagKeys": "k8s.io/*"}},
            },
            "condition key aws:TagKeys not supported",
        ),
    ],
    ids=lambda value: value if isinstance(value, str) else "",
)
def test_each_rule_finds_what_the_old_deploy_policy_did(statement: Statement, rule: str) -> None:
    # Statements of the deploy policy this project documented before, each one escalation path.
    policy = {"Version": "2012-10-17", "Statement": [statement]}

    assert rule in {found_rule for _, _, found_rule, _ in findings("old", policy)}


def test_every_shipped_aws_policy_fits_a_managed_policy() -> None:
    for path in IAM_DOCS.glob("eks-*.json"):
        text = json.dumps(json.loads(path.read_text()), separators=(",", ":"))
        assert len(text) <= MANAGED_POLICY_LIMIT, path.name


# --- Escalation paths of the deploy role ---------------------------------------------------


def deploy_may(action: str, resource: str, **context: Any) -> bool:
    """Whether the `ml-prod` deploy role may make this request."""
    keys = {key.replace("__", "/").replace("_", ":", 1): value for key, value in context.items()}
    return allowed(Request(action, resource, DEPLOY_ROLE | keys), deploy_policies())


def role(name: str) -> str:
    return f"arn:aws:iam::{ACCOUNT}:role/{name}"


def test_the_deploy_role_cannot_attach_administrator_access_to_a_role_it_creates() -> None:
    admin = "arn:aws:iam::aws:policy/AdministratorAccess"
    target = role(f"{CLUSTER}.pool-a100")
    bounded = {"iam_PermissionsBoundary": BOUNDARY_ARN}

    assert not deploy_may("iam:AttachRolePolicy", target, iam_PolicyARN=admin, **bounded)
    assert deploy_may("iam:AttachRolePolicy", target, iam_PolicyARN=NODE_POLICIES[0], **bounded)


def test_the_deploy_role_creates_roles_only_with_the_boundary() -> None:
    target = role(f"{CLUSTER}.pool-a100")
    tagged = {
        "aws_RequestTag__gpu-platform.io__cluster": CLUSTER,
        "aws_RequestTag__gpu-platform.io__vpc": VPC,
        "aws_RequestTag__gpu-platform.io__region": REGION,
    }
    other = f"arn:aws:iam::{ACCOUNT}:policy/PowerUserAccess"

    assert not deploy_may("iam:CreateRole", target, **tagged)
    assert not deploy_may("iam:CreateRole", target, iam_PermissionsBoundary=other, **tagged)
    assert deploy_may("iam:CreateRole", target, iam_PermissionsBoundary=BOUNDARY_ARN, **tagged)
    # Tagged for another VPC, or for none: the boundary would hold it to the wrong network.
    for vpc in ({"aws_RequestTag__gpu-platform.io__vpc": "vpc-0other"}, {}):
        wrong = {
            "aws_RequestTag__gpu-platform.io__cluster": CLUSTER,
            "aws_RequestTag__gpu-platform.io__region": REGION,
            **vpc,
        }
        assert not deploy_may(
            "iam:CreateRole", target, iam_PermissionsBoundary=BOUNDARY_ARN, **wrong
        )


def test_the_deploy_role_touches_no_role_outside_its_prefix() -> None:
    bounded = {"iam_PermissionsBoundary": BOUNDARY_ARN}

    for name in ("x-node-role-y", "ml-dev.cluster-autoscaler", "ml-prod-admin", "ml-prod"):
        assert not deploy_may("iam:UpdateAssumeRolePolicy", role(name), **bounded), name
        assert not deploy_may("iam:PutRolePolicy", role(name), **bounded), name
    assert deploy_may("iam:PutRolePolicy", role(f"{CLUSTER}.karpenter"), **bounded)


def test_the_deploy_role_cannot_change_a_role_without_the_boundary() -> None:
    # A role under the prefix that someone created by hand without the boundary.
    target = role(f"{CLUSTER}.by-hand")

    assert not deploy_may("iam:PutRolePolicy", target)
    assert not deploy_may("iam:UpdateAssumeRolePolicy", target)
    assert not deploy_may("iam:AttachRolePolicy", target, iam_PolicyARN=NODE_POLICIES[0])


def test_the_deploy_role_cannot_remove_or_replace_a_boundary_even_if_granted_more() -> None:
    more = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "iam:*", "Resource": "*"}],
    }
    for action, resource in (
        ("iam:DeleteRolePermissionsBoundary", role(f"{CLUSTER}.karpenter")),
        ("iam:PutRolePermissionsBoundary", role(f"{CLUSTER}.karpenter")),
        ("iam:CreatePolicyVersion", BOUNDARY_ARN),
        ("iam:SetDefaultPolicyVersion", BOUNDARY_ARN),
    ):
        assert not allowed(Request(action, resource, DEPLOY_ROLE), [*deploy_policies(), more])


def test_the_deploy_role_passes_each_role_only_to_the_service_that_takes_it() -> None:
    node, controller = role(f"{CLUSTER}.pool-a100"), role(f"{CLUSTER}.cluster-autoscaler")

    assert deploy_may("iam:PassRole", node, iam_PassedToService="eks.amazonaws.com")
    assert deploy_may("iam:PassRole", controller, iam_PassedToService="pods.eks.amazonaws.com")
    for service in ("ec2.amazonaws.com", "lambda.amazonaws.com", "pods.eks.amazonaws.com"):
        assert not deploy_may("iam:PassRole", node, iam_PassedToService=service), service
    assert not deploy_may("iam:PassRole", controller, iam_PassedToService="eks.amazonaws.com")
    assert not deploy_may(
        "iam:PassRole", role("ml-dev.pool-a100"), iam_PassedToService="eks.amazonaws.com"
    )


def test_a_role_the_deploy_role_creates_gets_no_more_than_the_boundary() -> None:
    # Even given AdministratorAccess inline (PutRolePolicy is the deploy role's), the role's
    # requests are the intersection with the boundary.
    admin = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}],
    }
    context = {"aws:PrincipalAccount": ACCOUNT}
    for action, resource in (
        ("iam:CreateUser", f"arn:aws:iam::{ACCOUNT}:user/x"),
        ("iam:PassRole", role("OrganizationAccountAccessRole")),
        ("iam:AttachRolePolicy", role(f"{CLUSTER}.karpenter")),
        ("s3:GetObject", "arn:aws:s3:::pulumi-state/.pulumi/stacks/prod.json"),
        ("secretsmanager:GetSecretValue", f"arn:aws:secretsmanager:us-east-1:{ACCOUNT}:secret:x"),
        ("sts:AssumeRole", role("OrganizationAccountAccessRole")),
    ):
        assert not allowed(Request(action, resource, context), [admin], boundary()), action


# A role the `ml-prod` deploy role creates: whatever it trusts and whatever policy the deploy
# role puts on it, it carries the boundary and the stack's cluster tag (CreateRole requires
# both, UntagRole may not remove the tag, TagRole may not change it).
ML_PROD_ROLE = {
    "aws:PrincipalAccount": ACCOUNT,
    "aws:PrincipalTag/gpu-platform.io/cluster": CLUSTER,
    "aws:PrincipalTag/gpu-platform.io/vpc": VPC,
    "aws:PrincipalTag/gpu-platform.io/region": REGION,
}
ADMIN = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}],
}


@pytest.mark.parametrize(
    ("action", "resource", "context"),
    [
        # Another cluster's (or no cluster's) Auto Scaling groups: EKS tags a managed node
        # group's group `eks:cluster-name` (EKS user guide, managed-node-groups.adoc).
        (
            "autoscaling:TerminateInstanceInAutoScalingGroup",
            f"arn:aws:autoscaling:us-east-1:{ACCOUNT}:autoScalingGroup:u:autoScalingGroupName/eks-b",
            {"aws:ResourceTag/eks:cluster-name": "ml-dev"},
        ),
        (
            "autoscaling:SetDesiredCapacity",
            f"arn:aws:autoscaling:us-east-1:{ACCOUNT}:autoScalingGroup:u:autoScalingGroupName/web",
            {},
        ),
        # Another cluster's Karpenter nodes and launch templates: Karpenter tags everything it
        # creates `eks:eks-cluster-name` (karpenter-provider-aws v1.14.1,
        # website/content/en/v1.14/getting-started/getting-started-with-karpenter/
        # cloudformation.yaml, AllowScopedEC2InstanceActionsWithTags).
        (
            "ec2:TerminateInstances",
            f"arn:aws:ec2:us-east-1:{ACCOUNT}:instance/i-1",
            {
                "aws:ResourceTag/karpenter.sh/nodepool": "gpu",
                "aws:ResourceTag/eks:eks-cluster-name": "ml-dev",
            },
        ),
        (
            "iam:DeleteInstanceProfile",
            f"arn:aws:iam::{ACCOUNT}:instance-profile/ml-dev_123",
            {
                "aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "gpu",
                "aws:ResourceTag/eks:eks-cluster-name": "ml-dev",
            },
        ),
        # Another stack's Karpenter node role, handed to an instance of one's own: a node (and
        # the node role's credentials) in that stack's cluster.
        (
            "iam:PassRole",
            f"arn:aws:iam::{ACCOUNT}:role/ml-dev.karpenter-nodes",
            {
                "iam:PassedToService": "ec2.amazonaws.com",
                "iam:ResourceTag/gpu-platform.io/cluster": "ml-dev",
            },
        ),
        # Another VPC's network interfaces: the VPC CNI's rights name no cluster, so the role's
        # VPC tag holds them (`ec2:Vpc`, Service Authorization Reference for EC2).
        (
            "ec2:ModifyNetworkInterfaceAttribute",
            f"arn:aws:ec2:us-east-1:{ACCOUNT}:network-interface/eni-1",
            {"ec2:Vpc": f"arn:aws:ec2:us-east-1:{ACCOUNT}:vpc/vpc-0database"},
        ),
        (
            "ec2:AttachNetworkInterface",
            f"arn:aws:ec2:us-east-1:{ACCOUNT}:network-interface/eni-1",
            {"ec2:Vpc": f"arn:aws:ec2:us-east-1:{ACCOUNT}:vpc/vpc-0database"},
        ),
        (
            "ec2:CreateNetworkInterface",
            f"arn:aws:ec2:us-east-1:{ACCOUNT}:subnet/subnet-1",
            {"ec2:Vpc": f"arn:aws:ec2:us-east-1:{ACCOUNT}:vpc/vpc-0database"},
        ),
        # Another stack's interruption messages.
        (
            "sqs:DeleteMessage",
            f"arn:aws:sqs:us-east-1:{ACCOUNT}:ml-dev-karpenter",
            {"aws:ResourceTag/gpu-platform.io/cluster": "ml-dev"},
        ),
    ],
    ids=lambda value: value if isinstance(value, str) and ":" in value and "/" not in value else "",
)
def test_a_role_the_deploy_role_creates_reaches_no_other_cluster(
    action: str, resource: str, context: dict[str, Any]
) -> None:
    # The deploy role can create a role under its prefix that trusts whom it likes and put any
    # inline policy on it (IAM has no condition on a trust policy's content): the boundary is
    # then all that keeps the role to the stack's own cluster.
    assert not allowed(Request(action, resource, ML_PROD_ROLE | context), [ADMIN], boundary())


def test_a_role_the_deploy_role_creates_keeps_its_own_clusters_resources() -> None:
    own = {
        "aws:ResourceTag/eks:eks-cluster-name": CLUSTER,
        "aws:ResourceTag/karpenter.sh/nodepool": "gpu",
    }

    assert allowed(
        Request(
            "ec2:TerminateInstances",
            f"arn:aws:ec2:us-east-1:{ACCOUNT}:instance/i-1",
            ML_PROD_ROLE | own,
        ),
        [ADMIN],
        boundary(),
    )


def test_the_deploy_role_cannot_assume_or_tag_a_session_of_a_role_it_creates() -> None:
    # A trust policy naming the deploy role would let it assume the role without an identity
    # policy of its own (same account), and session tags would replace the role's cluster tag
    # that the boundary reads: an explicit deny holds against both ("Policy evaluation logic").
    trusted = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Action": ["sts:AssumeRole", "sts:TagSession"], "Resource": "*"}
        ],
    }
    for action in ("sts:AssumeRole", "sts:TagSession"):
        request = Request(action, role(f"{CLUSTER}.karpenter"), DEPLOY_ROLE)
        assert not allowed(request, [*deploy_policies(), trusted]), action


@pytest.mark.parametrize(
    ("action", "resource", "context"),
    [
        # Add user data to any launch template and make it the default.
        ("ec2:ModifyLaunchTemplate", f"arn:aws:ec2:us-east-1:{ACCOUNT}:launch-template/lt-1", {}),
        (
            "ec2:CreateLaunchTemplateVersion",
            f"arn:aws:ec2:us-east-1:{ACCOUNT}:launch-template/lt-1",
            {"aws:ResourceTag/gpu-platform.io/cluster": "ml-dev"},
        ),
        # Open any security group.
        (
            "ec2:AuthorizeSecurityGroupIngress",
            f"arn:aws:ec2:us-east-1:{ACCOUNT}:security-group/sg-1",
            {},
        ),
        # Tag any group as the autoscaler's, or any instance as Karpenter's.
        (
            "autoscaling:CreateOrUpdateTags",
            f"arn:aws:autoscaling:us-east-1:{ACCOUNT}:autoScalingGroup:u:autoScalingGroupName/web",
            {"aws:TagKeys": ["k8s.io/cluster-autoscaler/ml-prod"]},
        ),
        (
            "autoscaling:CreateOrUpdateTags",
            f"arn:aws:autoscaling:us-east-1:{ACCOUNT}:autoScalingGroup:u:autoScalingGroupName/eks-a",
            {
                "aws:ResourceTag/eks:cluster-name": CLUSTER,
                "aws:TagKeys": ["kubernetes.io/cluster/x"],
            },
        ),
        (
            "ec2:CreateTags",
            f"arn:aws:ec2:us-east-1:{ACCOUNT}:instance/i-1",
            {"aws:TagKeys": ["karpenter.sh/nodepool"], "aws:RequestTag/karpenter.sh/nodepool": "a"},
        ),
        (
            "ec2:CreateTags",
            f"arn:aws:ec2:us-east-1:{ACCOUNT}:launch-template/lt-1",
            {
                "ec2:CreateAction": "CreateLaunchTemplate",
                "aws:RequestTag/gpu-platform.io/cluster": CLUSTER,
                "aws:TagKeys": ["gpu-platform.io/cluster", "kubernetes.io/cluster/ml-prod"],
            },
        ),
        # Another cluster's node groups, associations and access.
        ("eks:UpdateNodegroupVersion", f"arn:aws:eks:us-east-1:{ACCOUNT}:nodegroup/ml-dev/a/u", {}),
        ("eks:CreatePodIdentityAssociation", f"arn:aws:eks:us-east-1:{ACCOUNT}:cluster/ml-dev", {}),
        (
            "eks:CreateAccessEntry",
            f"arn:aws:eks:us-east-1:{ACCOUNT}:cluster/{CLUSTER}",
            {
                "eks:principalArn": "arn:aws:iam::999999999999:role/outsider",
                "eks:accessEntryType": "STANDARD",
            },
        ),
        ("eks:UpdateAddon", f"arn:aws:eks:us-east-1:{ACCOUNT}:addon/{CLUSTER}/vpc-cni/u", {}),
        # Send EventBridge events anywhere but the interruption queue.
        (
            "events:PutTargets",
            f"arn:aws:events:us-east-1:{ACCOUNT}:rule/{CLUSTER}.rebalance",
            {"events:TargetArn": f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:x"},
        ),
        ("sqs:SetQueueAttributes", f"arn:aws:sqs:us-east-1:{ACCOUNT}:orders", {}),
    ],
)
def test_the_deploy_role_cannot_reach_what_the_stack_does_not_own(
    action: str, resource: str, context: dict[str, Any]
) -> None:
    assert not allowed(Request(action, resource, DEPLOY_ROLE | context), deploy_policies())


# --- What the program does is allowed ------------------------------------------------------


STAND_IN_ACCOUNT = "123456789012"


@dataclass(frozen=True)
class StackRequests:
    """Builds the requests the stack's deploy role makes, as the offline plan's stand-in
    account and region see them."""

    plan: Plan

    @property
    def cluster(self) -> str:
        return str(self.plan.outputs["deployRoleTags"]["gpu-platform-cluster"])

    def request(self, action: str, resource: str, **context: Any) -> Request:
        tags = self.plan.outputs["deployRoleTags"]
        principal = {
            "aws:PrincipalAccount": STAND_IN_ACCOUNT,
            "aws:PrincipalTag/gpu-platform-cluster": tags["gpu-platform-cluster"],
            "aws:PrincipalTag/gpu-platform-prefix": tags["gpu-platform-prefix"],
            "aws:PrincipalTag/gpu-platform-vpc": tags["gpu-platform-vpc"],
            "aws:PrincipalTag/gpu-platform-region": tags["gpu-platform-region"],
        }
        return Request(action, resource, principal | context)

    def arn(self, service: str, resource: str) -> str:
        region = "" if service == "iam" else REGION
        return f"arn:aws:{service}:{region}:{STAND_IN_ACCOUNT}:{resource}"

    def of(self, kind: str) -> list[Any]:
        return self.plan.of_type(kind)


def _tags(kind: str, values: Mapping[str, str]) -> dict[str, Any]:
    """The condition keys of tags in a request: `aws:RequestTag/<key>` and `aws:TagKeys`."""
    return {f"aws:{kind}/{k}": v for k, v in values.items()} | {"aws:TagKeys": list(values)}


def iam_requests(stack: StackRequests) -> Iterator[Request]:
    roles = {r.name: r.inputs for r in stack.of("aws:iam/role:Role")}
    by_name = {inputs["name"]: inputs for inputs in roles.values()}

    def on_role(action: str, inputs: Mapping[str, Any], **context: Any) -> Request:
        # A created cluster's own role and its EBS CSI driver's carry no boundary.
        bounded = (
            {"iam:PermissionsBoundary": inputs["permissionsBoundary"]}
            if "permissionsBoundary" in inputs
            else {}
        )
        return stack.request(
            action, stack.arn("iam", f"role/{inputs['name']}"), **bounded, **context
        )

    for inputs in roles.values():
        yield on_role("iam:CreateRole", inputs, **_tags("RequestTag", inputs["tags"]))
    for r in stack.of("aws:iam/rolePolicyAttachment:RolePolicyAttachment"):
        yield on_role(
            "iam:AttachRolePolicy",
            by_name[r.inputs["role"]],
            **{"iam:PolicyARN": r.inputs["policyArn"]},
        )
    for r in stack.of("aws:iam/rolePolicy:RolePolicy"):
        # The mock monitor gives a resource the id `<name>-id`.
        yield on_role("iam:PutRolePolicy", roles[r.inputs["role"].removesuffix("-id")])
    passed = [
        *(
            (g.inputs["nodeRoleArn"], "eks.amazonaws.com")
            for g in stack.of("aws:eks/nodeGroup:NodeGroup")
        ),
        *(
            (a.inputs["roleArn"], "pods.eks.amazonaws.com")
            for a in stack.of("aws:eks/podIdentityAssociation:PodIdentityAssociation")
        ),
        *(
            (e.inputs["principalArn"], "eks.amazonaws.com")
            for e in stack.of("aws:eks/accessEntry:AccessEntry")
        ),
        # EKS Auto Mode's node role, given to the cluster it creates.
        *(
            (c.inputs["computeConfig"]["nodeRoleArn"], "eks.amazonaws.com")
            for c in stack.of("aws:eks/cluster:Cluster")
            if "computeConfig" in c.inputs
        ),
    ]
    for arn, service in passed:
        yield stack.request("iam:PassRole", arn, **{"iam:PassedToService": service})


EC2_KINDS = {
    "aws:ec2/launchTemplate:LaunchTemplate": ("launch-template", "CreateLaunchTemplate"),
    "aws:ec2/securityGroup:SecurityGroup": ("security-group", "CreateSecurityGroup"),
    "aws:ec2/placementGroup:PlacementGroup": ("placement-group", "CreatePlacementGroup"),
}
EC2_CHANGES = {
    "launch-template": ("ec2:ModifyLaunchTemplate", "ec2:CreateLaunchTemplateVersion"),
    "security-group": ("ec2:AuthorizeSecurityGroupIngress", "ec2:RevokeSecurityGroupEgress"),
    "placement-group": ("ec2:DeletePlacementGroup",),
}


def ec2_requests(stack: StackRequests) -> Iterator[Request]:
    owned = {"aws:ResourceTag/gpu-platform.io/cluster": stack.cluster}
    for kind, (resource_type, create) in EC2_KINDS.items():
        for r in stack.of(kind):
            arn = stack.arn("ec2", f"{resource_type}/x")
            requested = _tags("RequestTag", r.inputs["tags"])
            yield stack.request(f"ec2:{create}", arn, **requested)
            yield stack.request("ec2:CreateTags", arn, **{"ec2:CreateAction": create}, **requested)
            for action in EC2_CHANGES[resource_type]:
                yield stack.request(action, arn, **owned)
            if "vpcId" in r.inputs:
                yield stack.request(f"ec2:{create}", stack.arn("ec2", f"vpc/{r.inputs['vpcId']}"))
    group = stack.arn("autoscaling", "autoScalingGroup:u:autoScalingGroupName/eks-x")
    eks_tagged = {"aws:ResourceTag/eks:cluster-name": stack.cluster}
    for r in stack.of("aws:autoscaling/tag:Tag"):
        keys = {"aws:TagKeys": [r.inputs["tag"]["key"]]}
        yield stack.request("autoscaling:CreateOrUpdateTags", group, **eks_tagged, **keys)
    if stack.of("aws:autoscaling/schedule:Schedule"):
        yield stack.request("autoscaling:PutScheduledUpdateGroupAction", group, **eks_tagged)


def cluster_requests(stack: StackRequests) -> Iterator[Request]:
    cluster = stack.arn("eks", f"cluster/{stack.cluster}")
    for g in stack.of("aws:eks/nodeGroup:NodeGroup"):
        yield stack.request("eks:CreateNodegroup", cluster, **_tags("RequestTag", g.inputs["tags"]))
        yield stack.request(
            "eks:UpdateNodegroupVersion", stack.arn("eks", f"nodegroup/{stack.cluster}/x/u")
        )
    if stack.of("aws:eks/podIdentityAssociation:PodIdentityAssociation"):
        yield stack.request("eks:CreatePodIdentityAssociation", cluster)
    for r in stack.of("aws:eks/addon:Addon"):
        yield stack.request("eks:CreateAddon", cluster)
        addon = f"addon/{stack.cluster}/{r.inputs['addonName']}/u"
        yield stack.request("eks:UpdateAddon", stack.arn("eks", addon))
    for r in stack.of("aws:eks/accessEntry:AccessEntry"):
        entry = {
            "eks:principalArn": r.inputs["principalArn"],
            "eks:accessEntryType": r.inputs["type"],
        }
        yield stack.request("eks:CreateAccessEntry", cluster, **entry)


def karpenter_requests(stack: StackRequests) -> Iterator[Request]:
    queues = [stack.arn("sqs", r.inputs["name"]) for r in stack.of("aws:sqs/queue:Queue")]
    for r, queue in zip(stack.of("aws:sqs/queue:Queue"), queues, strict=True):
        yield stack.request("sqs:CreateQueue", queue, **_tags("RequestTag", r.inputs["tags"]))
        yield stack.request("sqs:SetQueueAttributes", queue)
    for r in stack.of("aws:cloudwatch/eventRule:EventRule"):
        rule = stack.arn("events", f"rule/{r.inputs['name']}")
        yield stack.request("events:PutRule", rule, **_tags("RequestTag", r.inputs["tags"]))
        for queue in queues:
            yield stack.request("events:PutTargets", rule, **{"events:TargetArn": queue})


def program_requests(plan: Plan) -> Iterator[Request]:
    """The requests that create what the plan declares, as the deploy role makes them, with the
    condition keys AWS sets on each (from the resources' inputs)."""
    stack = StackRequests(plan)
    for requests in (iam_requests, ec2_requests, cluster_requests, karpenter_requests):
        yield from requests(stack)


def test_the_deploy_policies_allow_what_each_stack_creates(eks_plans: dict[str, Plan]) -> None:
    denied = [
        (stack, r.action, r.resource)
        for stack, plan in eks_plans.items()
        for r in program_requests(plan)
        if not allowed(r, deploy_policies())
    ]
    made = {r.action for plan in eks_plans.values() for r in program_requests(plan)}

    assert {
        "iam:CreateRole",
        "iam:PassRole",
        "ec2:CreateLaunchTemplate",
        "ec2:CreateSecurityGroup",
        "events:PutTargets",
    } <= made
    assert denied == []


# --- The boundary leaves the roles what they need ------------------------------------------


def witnesses(statement: Statement, account: str, region: str) -> Iterator[Request]:
    """Requests the statement allows: each action on each of its resources, with condition keys
    that satisfy its conditions."""
    context = {"aws:PrincipalAccount": account} | _satisfying(statement, account, region)
    for entry in as_list(statement["Action"]):
        for action in actions_matching(entry):
            for pattern in as_list(statement["Resource"]):
                resource = (
                    example_arn(action, account, region)
                    if pattern == "*"
                    else _instance(pattern, account, region)
                )
                # Upstream's policies list every launch action on every resource a launch
                # touches; a pair the reference does not define is no request at all.
                if takes_resource(action, resource):
                    yield Request(action, resource, context)


def _satisfying(statement: Statement, account: str, region: str) -> dict[str, Any]:
    context: dict[str, Any] = {}
    for operator, block in statement.get("Condition", {}).items():
        quantifier, _, name = operator.rpartition(":")
        for key, values in block.items():
            first = _instance(as_list(values)[0], account, region)
            if name.startswith(("StringNot", "ArnNot")) or (name == "Null" and first == "true"):
                continue
            if quantifier == "ForAllValues":
                context[key] = [_instance(v, account, region) for v in as_list(values)]
            elif quantifier == "ForAnyValue":
                context[key] = [first]
            elif not name.endswith("IfExists"):
                context[key] = "x" if name == "Null" else first
    # A request's tags are its tag keys too (`aws:TagKeys`), which a tag-key condition checks.
    request_tags = [k.partition("/")[2] for k in context if k.startswith("aws:RequestTag/")]
    if request_tags and "aws:TagKeys" not in context:
        context["aws:TagKeys"] = request_tags
    return context


def _instance(pattern: str, account: str, region: str) -> str:
    parts = pattern.split(":", 5)
    if len(parts) == 6:
        parts[3] = region if parts[3] == "*" else parts[3]
        parts[4] = account if parts[4] == "*" else parts[4]
        pattern = ":".join(parts)
    return pattern.replace("*", "x").replace("?", "x")


def cluster_of_the_role(cluster: str) -> dict[str, str]:
    """What holds for every request of a role the stack creates: the role's cluster tag, and the
    tags its cluster's resources carry. EKS tags a managed node group's Auto Scaling group
    `eks:cluster-name` (EKS user guide, managed-node-groups.adoc); Karpenter tags every
    instance, launch template and instance profile it creates `eks:eks-cluster-name` (its own
    policy requires it at creation: gpu_platform/eks/karpenter/controller.py, from
    karpenter-provider-aws v1.14.1's cloudformation.yaml); the stack tags its queue
    `gpu-platform.io/cluster`; the role carries its cluster's VPC, in which the CNI's network
    interfaces, subnets and security groups are (`ec2:Vpc`)."""
    return {
        "aws:PrincipalTag/gpu-platform.io/cluster": cluster,
        "aws:PrincipalTag/gpu-platform.io/vpc": VPC,
        "aws:PrincipalTag/gpu-platform.io/region": REGION,
        "ec2:Vpc": f"arn:aws:ec2:us-east-1:123456789012:vpc/{VPC}",
        "aws:ResourceTag/eks:cluster-name": cluster,
        "aws:ResourceTag/eks:eks-cluster-name": cluster,
        "aws:ResourceTag/gpu-platform.io/cluster": cluster,
        "iam:ResourceTag/gpu-platform.io/cluster": cluster,
    }


def test_the_boundary_leaves_every_role_what_its_policies_grant(
    eks_plans: dict[str, Plan],
) -> None:
    policies = created_policies(eks_plans) | {
        f"aws-managed:{n}": d for n, d in MANAGED_POLICIES.items()
    }
    clusters = {
        stack: str(plan.outputs["deployRoleTags"]["gpu-platform-cluster"])
        for stack, plan in eks_plans.items()
    }
    checked, refused = 0, []
    for name, policy in policies.items():
        world = cluster_of_the_role(clusters.get(name.partition(":")[0], CLUSTER))
        for statement in statements(policy):
            for witness in witnesses(statement, "123456789012", "us-east-1"):
                # What AWS sends: a statement listing a launch's request tags beside a resource
                # whose row in the reference has none (upstream's launch template under
                # RunInstances) never allows that resource, and needs no boundary for it.
                context = {**world, **witness.context}
                assert allowed(Request(witness.action, witness.resource, context), [policy])
                request = sent(witness.action, witness.resource, context)
                if not allowed(request, [policy]):
                    continue
                checked += 1
                if not allowed(request, [policy], boundary()):
                    refused.append((name, request.action, request.resource))

    # Upstream's policy lets Karpenter create and tag an instance profile anywhere in the
    # account; the boundary only under the path Karpenter v1.14.1 creates them under,
    # /karpenter/<region>/<cluster>/ (tests/test_karpenter_iam.py replays that creation).
    assert checked > 100
    assert {(name.partition(":")[2], action) for name, action, _ in refused} == {
        ("karpenter-iam-integration", "iam:CreateInstanceProfile"),
        ("karpenter-iam-integration", "iam:TagInstanceProfile"),
    }


# --- The preview role ----------------------------------------------------------------------

# Conditions that only a change carries (the tags and boundary it sets, the service a role is
# passed to, what a target or access entry names): a read has none of them.
WRITE_ONLY_KEYS = (
    "aws:RequestTag/",
    "aws:TagKeys",
    "iam:PermissionsBoundary",
    "iam:PassedToService",
    "ec2:CreateAction",
    "iam:PolicyARN",
    "events:TargetArn",
    "eks:principalArn",
    "eks:accessEntryType",
)
# Reads of what a stack's resources hold rather than how they are set up: a backend's state in
# S3, table items, function code, secrets, parameters, queue messages.
DATA_PLANE_READS = {
    "s3:GetObject",
    "dynamodb:GetItem",
    "dynamodb:Query",
    "dynamodb:Scan",
    "lambda:GetFunction",
    "secretsmanager:GetSecretValue",
    "ssm:GetParameter",
    "ssm:GetParameters",
    "kms:Decrypt",
    "sqs:ReceiveMessage",
    "logs:GetLogEvents",
}


def preview_of(statement: Statement) -> dict[str, Any] | None:
    """A deploy statement as the preview role has it: its reads, on the same resources."""
    reads = [a for a in as_list(statement["Action"]) if access_level(a) in ("Read", "List")]
    if statement["Effect"] != "Allow" or not reads:
        return None
    derived: dict[str, Any] = {
        "Sid": statement["Sid"].replace("Manage", "Read", 1),
        "Effect": "Allow",
        "Action": reads,
        "Resource": statement["Resource"],
    }
    conditions = {
        operator: kept
        for operator, block in statement.get("Condition", {}).items()
        if (kept := {k: v for k, v in block.items() if not k.startswith(WRITE_ONLY_KEYS)})
    }
    return derived | ({"Condition": conditions} if conditions else {})


def test_the_preview_policy_is_the_deploy_policies_reads() -> None:
    derived = [
        preview
        for policy in deploy_policies()
        for statement in statements(policy)
        if (preview := preview_of(statement)) is not None
    ]

    assert _document("eks-preview-policy.json") == {"Version": "2012-10-17", "Statement": derived}


@pytest.mark.parametrize("document", ["eks-preview-policy.json", "eks-preflight-policy.json"])
def test_the_read_only_policies_read_no_data(document: str) -> None:
    actions = {a for s in statements(_document(document)) for a in as_list(s["Action"])}

    assert actions
    # Each names one action, never a pattern a later action of another access level may match.
    assert all([m.lower() for m in actions_matching(a)] == [a.lower()] for a in actions), actions
    assert {access_level(a) for a in actions} <= {"Read", "List"}
    assert actions & DATA_PLANE_READS == set()


@pytest.mark.parametrize(
    ("tag", "role", "expected"),
    [
        ("KarpenterControllerRole-ml", "KarpenterControllerRole-ml", True),
        ("KarpenterControllerRole-ml", "ml-prod.deploy", False),
        (None, "KarpenterControllerRole-ml", False),
    ],
)
def test_the_preflight_policy_simulates_only_the_role_its_tag_names(
    tag: str | None, role: str, expected: bool
) -> None:
    # IAM User Guide, "IAM policy elements: Variables and tags": a variable the request has no
    # value for matches nothing, so an untagged role simulates no role at all.
    context = {"aws:PrincipalAccount": ACCOUNT}
    if tag is not None:
        context["aws:PrincipalTag/gpu-platform-karpenter-controller-role"] = tag
    request = sent("iam:SimulatePrincipalPolicy", f"arn:aws:iam::{ACCOUNT}:role/{role}", context)

    assert allowed(request, [_document("eks-preflight-policy.json")]) is expected


TWO_INSTANCE_STACKS = ("dev", "karpenter-dev", "eks-new")


@pytest.fixture(scope="module")
def two_instance_plans(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Plan]:
    """Each EKS kind of stack (node groups, Karpenter, a created cluster) planned as two
    platforms, `team-a` on ml-dev and `team-b` on ml-other, their parts named under each."""
    plans = {}
    for stack in TWO_INSTANCE_STACKS:
        config = stack_config(stack, PROJECT)
        project = in_code_project(tmp_path_factory.mktemp(stack), platform_settings(config))
        (project.program.parent / "__main__.py").write_text(TWO_PLATFORMS_PROGRAM)
        plans[stack] = run_program(stack, config=other_config(config), project=project)
    return plans


def instance_plan(plan: Plan, instance: str) -> Plan:
    """What the platform `instance` of a two-platform plan declares, with the deploy role tags
    it registers as its outputs (`deployRoleTags`)."""
    (platform,) = [r for r in plan.of_type("gpu-platform:index:GpuPlatform") if r.name == instance]
    return Plan(
        plan.stack,
        resources=[r for r in plan.resources if r.name.startswith(f"{instance}-")],
        outputs=plan.component_outputs[platform.urn],
    )


def instance_role_requests(plan: Plan, instance: str) -> list[Request]:
    """The IAM requests that create, change and pass the roles the platform `instance` of a
    two-platform plan creates."""
    one = instance_plan(plan, instance)
    created = {r.inputs["name"] for r in one.of_type("aws:iam/role:Role")}
    return [r for r in iam_requests(StackRequests(one)) if r.resource.rsplit("/", 1)[-1] in created]


def test_the_deploy_policy_reaches_every_role_two_instances_create_within_the_boundary(
    two_instance_plans: dict[str, Plan],
) -> None:
    # With part_names_under_it a Pod Identity role takes the part's name
    # (`ml-dev.team-a-vpc-cni`); a created cluster's system node group has a node role of its
    # own (`ml-dev.system-nodes`), passed to EKS like the pools'.
    requests = {
        (stack, instance): instance_role_requests(plan, instance)
        for stack, plan in two_instance_plans.items()
        for instance in ("team-a", "team-b")
    }
    roles = {
        (stack, r.resource.rsplit("/", 1)[-1])
        for (stack, instance), made in requests.items()
        if instance == "team-a"
        for r in made
    }

    assert roles == {
        ("dev", "ml-dev.pool-t4-shared"),
        ("dev", "ml-dev.team-a-cluster-autoscaler"),
        ("dev", "ml-dev.team-a-vpc-cni"),
        ("karpenter-dev", "ml-dev.karpenter-nodes"),
        ("karpenter-dev", "ml-dev.team-a-karpenter"),
        ("karpenter-dev", "ml-dev.team-a-vpc-cni"),
        ("eks-new", "ml-dev.cluster"),
        ("eks-new", "ml-dev.ebs-csi"),
        ("eks-new", "ml-dev.pool-l4"),
        ("eks-new", "ml-dev.system-nodes"),
        ("eks-new", "ml-dev.team-a-cluster-autoscaler"),
        ("eks-new", "ml-dev.team-a-vpc-cni"),
    }
    assert {"iam:CreateRole", "iam:PassRole"} <= {
        r.action for made in requests.values() for r in made
    }
    # Only the two roles outside the boundary, which the first `pulumi up` of a created cluster
    # makes as an administrator (docs/iam/README.md, "A stack that creates its EKS cluster").
    assert {
        (stack, r.resource.rsplit("/", 1)[-1])
        for (stack, _), made in requests.items()
        for r in made
        if not allowed(r, deploy_policies())
    } == {
        ("eks-new", "ml-dev.cluster"),
        ("eks-new", "ml-dev.ebs-csi"),
        ("eks-new", "ml-other.cluster"),
        ("eks-new", "ml-other.ebs-csi"),
    }


def test_the_deploy_policies_allow_what_two_instances_on_existing_clusters_create(
    two_instance_plans: dict[str, Plan],
) -> None:
    # Each instance as its own cluster's deploy role makes it: its queue, rules, launch
    # templates and roles under its cluster's prefix.
    assert [
        (stack, instance, r.action, r.resource)
        for stack in ("dev", "karpenter-dev")
        for instance in ("team-a", "team-b")
        for r in program_requests(instance_plan(two_instance_plans[stack], instance))
        if not allowed(r, deploy_policies())
    ] == []
    # Another cluster's, under its own prefix, stays out of reach.
    assert not deploy_may(
        "iam:PassRole",
        role("ml-dev.team-a-karpenter"),
        iam_PassedToService="pods.eks.amazonaws.com",
    )


def test_the_deploy_policy_reaches_auto_modes_node_role_of_a_created_cluster() -> None:
    # Within the boundary like the system node group's role: created, given its two policies
    # and passed to EKS as the cluster's `computeConfig.nodeRoleArn` by the deploy role; only
    # the cluster's own role, outside the boundary, needs an administrator (docs/iam/README.md,
    # "A stack that creates its EKS cluster").
    config = stack_config("eks-new", PROJECT)
    config["gpu-platform:provisioner"] = "eks-auto-mode"
    del config["gpu-platform:pools"][0]["aws"]["amiReleaseVersion"]
    requests = [
        r
        for r in iam_requests(StackRequests(run_program("eks-new", config, PROJECT)))
        if "role/ml-new." in r.resource
    ]
    node_role = [r for r in requests if r.resource.endswith("role/ml-new.auto-mode-nodes")]

    assert {r.action for r in node_role} == {
        "iam:CreateRole",
        "iam:AttachRolePolicy",
        "iam:PassRole",
    }
    assert {
        r.resource.rsplit("/", 1)[-1] for r in requests if not allowed(r, deploy_policies())
    } == {"ml-new.cluster"}
