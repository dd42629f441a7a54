"""The permissions docs/ci.md gives the deploy identities are exactly what the program needs:
every resource it creates and every lookup it makes, on each cloud.

What each resource type and lookup calls is written out here, from the providers' resources
(the AWS provider's `aws_eks_node_group`, `aws_launch_template`, `aws_autoscaling_group_tag`,
`aws_iam_role`...; the Google provider's `google_container_node_pool`...) and AWS's and Google
Cloud's permission references. A new resource type or lookup fails the test until it is
written here and granted in docs/iam/.
"""

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from fnmatch import fnmatchcase
from typing import Any

import pytest

from gpu_platform.eks import node_group
from gpu_platform.offline.program import Plan, run_program
from gpu_platform.offline.stand_ins import aws as stand_in
from tests.conftest import dev_stack_config
from tests.repository import PROJECT, ROOT
from tests.shared_plans import shared_plan
from tests.stack_variants import with_ec2_reserved_pools

AWS_RESOURCE_ACTIONS: dict[str, set[str]] = {
    "aws:eks/addon:Addon": {
        "eks:CreateAddon",
        "eks:DescribeAddon",
        "eks:UpdateAddon",
        "eks:DeleteAddon",
    },
    "aws:eks/nodeGroup:NodeGroup": {
        "eks:CreateNodegroup",
        "eks:DescribeNodegroup",
        "eks:UpdateNodegroupConfig",
        "eks:UpdateNodegroupVersion",
        "eks:DeleteNodegroup",
        "eks:TagResource",
        "eks:UntagResource",
        "iam:PassRole",
        # EKS creates its node group service-linked role on the account's first node group.
        "iam:CreateServiceLinkedRole",
        # EKS reads the launch template version as the caller ("You are not authorized to
        # describe the launch template version").
        "ec2:DescribeLaunchTemplateVersions",
    },
    "aws:ec2/launchTemplate:LaunchTemplate": {
        "ec2:CreateLaunchTemplate",
        "ec2:CreateLaunchTemplateVersion",
        "ec2:ModifyLaunchTemplate",
        "ec2:DeleteLaunchTemplate",
        "ec2:DescribeLaunchTemplates",
        "ec2:DescribeLaunchTemplateVersions",
        "ec2:CreateTags",
        "ec2:DeleteTags",
    },
    "aws:ec2/securityGroup:SecurityGroup": {
        "ec2:CreateSecurityGroup",
        "ec2:DescribeSecurityGroups",
        "ec2:DeleteSecurityGroup",
        "ec2:AuthorizeSecurityGroupIngress",
        "ec2:AuthorizeSecurityGroupEgress",
        "ec2:RevokeSecurityGroupIngress",
        "ec2:RevokeSecurityGroupEgress",
        # The provider waits for the group's network interfaces to go before deleting it.
        "ec2:DescribeNetworkInterfaces",
        "ec2:CreateTags",
        "ec2:DeleteTags",
    },
    "aws:ec2/placementGroup:PlacementGroup": {
        "ec2:CreatePlacementGroup",
        "ec2:DescribePlacementGroups",
        "ec2:DeletePlacementGroup",
        "ec2:CreateTags",
        "ec2:DeleteTags",
    },
    "aws:autoscaling/tag:Tag": {
        "autoscaling:CreateOrUpdateTags",
        "autoscaling:DeleteTags",
        "autoscaling:DescribeTags",
    },
    # resourceSchedulePut, resourceScheduleRead and resourceScheduleDelete
    # (internal/service/autoscaling/schedule.go).
    "aws:autoscaling/schedule:Schedule": {
        "autoscaling:PutScheduledUpdateGroupAction",
        "autoscaling:DescribeScheduledActions",
        "autoscaling:DeleteScheduledAction",
    },
    "aws:iam/role:Role": {
        "iam:CreateRole",
        "iam:GetRole",
        "iam:DeleteRole",
        "iam:TagRole",
        "iam:UntagRole",
        "iam:UpdateRoleDescription",
        "iam:UpdateAssumeRolePolicy",
        "iam:ListRolePolicies",
        "iam:ListAttachedRolePolicies",
        "iam:ListInstanceProfilesForRole",
    },
    "aws:iam/rolePolicy:RolePolicy": {
        "iam:PutRolePolicy",
        "iam:GetRolePolicy",
        "iam:DeleteRolePolicy",
    },
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": {
        "iam:AttachRolePolicy",
        "iam:DetachRolePolicy",
        "iam:ListAttachedRolePolicies",
    },
    "aws:eks/podIdentityAssociation:PodIdentityAssociation": {
        "eks:CreatePodIdentityAssociation",
        "eks:DescribePodIdentityAssociation",
        "eks:UpdatePodIdentityAssociation",
        "eks:DeletePodIdentityAssociation",
        "eks:TagResource",
        "eks:UntagResource",
        "iam:PassRole",
    },
    # An `EC2_LINUX` entry takes `iam:PassRole` on its role (EKS user guide, access entries).
    "aws:eks/accessEntry:AccessEntry": {
        "eks:CreateAccessEntry",
        "eks:DescribeAccessEntry",
        "eks:UpdateAccessEntry",
        "eks:DeleteAccessEntry",
        "eks:TagResource",
        "eks:UntagResource",
        "iam:PassRole",
    },
    "aws:sqs/queue:Queue": {
        "sqs:CreateQueue",
        "sqs:GetQueueAttributes",
        "sqs:SetQueueAttributes",
        "sqs:DeleteQueue",
        "sqs:ListQueueTags",
        "sqs:TagQueue",
        "sqs:UntagQueue",
    },
    "aws:sqs/queuePolicy:QueuePolicy": {"sqs:SetQueueAttributes", "sqs:GetQueueAttributes"},
    "aws:cloudwatch/eventRule:EventRule": {
        "events:PutRule",
        "events:DescribeRule",
        "events:DeleteRule",
        "events:ListTagsForResource",
        "events:TagResource",
        "events:UntagResource",
    },
    "aws:cloudwatch/eventTarget:EventTarget": {
        "events:PutTargets",
        "events:ListTargetsByRule",
        "events:RemoveTargets",
    },
}
AWS_LOOKUP_ACTIONS: dict[str, str] = {
    "aws:eks/getCluster:getCluster": "eks:DescribeCluster",
    "aws:eks/getNodeGroups:getNodeGroups": "eks:ListNodegroups",
    "aws:eks/getNodeGroup:getNodeGroup": "eks:DescribeNodegroup",
    "aws:ec2/getSubnet:getSubnet": "ec2:DescribeSubnets",
    "aws:ec2/getRouteTables:getRouteTables": "ec2:DescribeRouteTables",
    "aws:ec2/getRouteTable:getRouteTable": "ec2:DescribeRouteTables",
    "aws:ec2/getInstanceType:getInstanceType": "ec2:DescribeInstanceTypes",
    "aws:ec2/getInstanceTypeOfferings:getInstanceTypeOfferings": (
        "ec2:DescribeInstanceTypeOfferings"
    ),
}
# The AWS provider checks its credentials when it starts.
AWS_PROVIDER_ACTIONS = {"sts:GetCallerIdentity"}

NODE_SERVICE_ACCOUNTS_ROLE = "projects/PROJECT_ID/roles/gpuPlatformNodeServiceAccounts"
SECRETS_KEY_ROLE = "projects/PROJECT_ID/roles/gpuPlatformSecretsKey"
GCP_RESOURCE_ROLES: dict[str, set[str]] = {
    "gcp:container/nodePool:NodePool": {"roles/container.admin"},
    # Creating, reading, updating and deleting a service account: iam.serviceAccounts.create,
    # get, update and delete (the IAM permissions reference).
    "gcp:serviceaccount/account:Account": {NODE_SERVICE_ACCOUNTS_ROLE},
    "gcp:projects/iAMMember:IAMMember": {"roles/resourcemanager.projectIamAdmin"},
    # A stack that creates its cluster (docs/iam/gke-deploy-create-roles.json).
    "gcp:container/cluster:Cluster": {"roles/container.admin"},
    "gcp:compute/network:Network": {"roles/compute.networkAdmin"},
    "gcp:compute/subnetwork:Subnetwork": {"roles/compute.networkAdmin"},
    "gcp:compute/router:Router": {"roles/compute.networkAdmin"},
    "gcp:compute/routerNat:RouterNat": {"roles/compute.networkAdmin"},
    "gcp:kms/keyRing:KeyRing": {SECRETS_KEY_ROLE},
    # The project's Binary Authorization policy (`binaryauthorization.policy.get`, `.update`).
    "gcp:binaryauthorization/policy:Policy": {"roles/binaryauthorization.policyEditor"},
    "gcp:kms/cryptoKey:CryptoKey": {SECRETS_KEY_ROLE},
    "gcp:kms/cryptoKeyIAMMember:CryptoKeyIAMMember": {SECRETS_KEY_ROLE},
}
# What terraform-provider-google's KMS resources call (`google/services/kms`): a key ring is
# created and read, never deleted (Cloud KMS deletes none); a key is created, read and patched,
# and on delete its versions are listed and each destroyed; an IAM member reads and sets the
# key's policy. Permission names: Cloud KMS's "Permissions and roles".
GCP_KMS_PERMISSIONS: dict[str, set[str]] = {
    "gcp:kms/keyRing:KeyRing": {"cloudkms.keyRings.create", "cloudkms.keyRings.get"},
    "gcp:kms/cryptoKey:CryptoKey": {
        "cloudkms.cryptoKeys.create",
        "cloudkms.cryptoKeys.get",
        "cloudkms.cryptoKeys.update",
        "cloudkms.cryptoKeyVersions.list",
        "cloudkms.cryptoKeyVersions.destroy",
    },
    "gcp:kms/cryptoKeyIAMMember:CryptoKeyIAMMember": {
        "cloudkms.cryptoKeys.getIamPolicy",
        "cloudkms.cryptoKeys.setIamPolicy",
    },
}
# A node pool runs as its service account: `actAs` on that account (GKE's "Use least privilege
# IAM service accounts"), granted on the account itself.
GCP_SERVICE_ACCOUNT_ROLES = {"roles/iam.serviceAccountUser"}
GCP_LOOKUP_ROLES: dict[str, str] = {
    "gcp:container/getCluster:getCluster": "roles/container.admin",
    "gcp:compute/getZones:getZones": "roles/compute.viewer",
    "gcp:compute/getMachineTypes:getMachineTypes": "roles/compute.viewer",
    # The project's number, which names the GKE service agent: resourcemanager.projects.get.
    "gcp:organizations/getProject:getProject": "roles/resourcemanager.projectIamAdmin",
}
# A week before the block of `with_ec2_reserved_pools` starts, so that its start is scheduled.
BEFORE_THE_BLOCK = datetime(2026, 11, 23, tzinfo=UTC)
# A running node group, so that its sizes are read (`gpu_platform/eks/live_scaling.py`).
RUNNING_GROUP = "t4-shared-20261123120000000000000a1b"


def cloud_calls(plans: Iterable[Plan], provider: str) -> tuple[set[str], set[str]]:
    """The resource types and lookups of `provider` the plans declare and make."""
    types = {r.type for p in plans for r in p.resources if r.type.startswith(f"{provider}:")}
    lookups = {i.token for p in plans for i in p.invokes if i.token.startswith(f"{provider}:")}
    return types, lookups


@pytest.fixture(scope="module")
def eks_plans() -> list[Plan]:
    """Every EKS stack, the dev stack with a running node group and the node monitoring
    agent, and the dev stack with a pool in a capacity reservation and one on a Capacity Block
    yet to start; planned once for the module's tests, which only read them."""
    dev_config = dev_stack_config()
    dev_config["gpu-platform:cluster"]["nodeMonitoringAgentVersion"] = "v1.7.0-eksbuild.1"
    stand_in.LIVE_NODE_GROUPS[RUNNING_GROUP] = {"minSize": 0, "maxSize": 3, "desiredSize": 1}
    try:
        running = run_program("dev", config=dev_config, project=PROJECT)
    finally:
        stand_in.LIVE_NODE_GROUPS.clear()
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(node_group, "now", lambda: BEFORE_THE_BLOCK)
        reserved = run_program("dev", config=with_ec2_reserved_pools(dev_config), project=PROJECT)
    committed = [shared_plan(stack) for stack in ("dev", "prod", "karpenter-dev")]
    return [*committed, running, reserved]


def deploy_statements() -> list[dict[str, Any]]:
    """The Allow statements of the EKS deploy role's policies (docs/iam/eks-deploy-*.json)."""
    return [
        statement
        for path in sorted((ROOT / "docs" / "iam").glob("eks-deploy-*-policy.json"))
        for statement in json.loads(path.read_text())["Statement"]
        if statement["Effect"] == "Allow"
    ]


def granted_aws_actions() -> set[str]:
    return {action for statement in deploy_statements() for action in statement["Action"]}


def test_the_eks_deploy_policy_grants_exactly_what_the_program_calls(
    eks_plans: list[Plan],
) -> None:
    types, lookups = cloud_calls(eks_plans, "aws")
    assert "aws:eks/getNodeGroup:getNodeGroup" in lookups
    assert types <= set(AWS_RESOURCE_ACTIONS), "write the new type's actions here"
    assert lookups <= set(AWS_LOOKUP_ACTIONS), "write the new lookup's action here"

    needed = set().union(*(AWS_RESOURCE_ACTIONS[t] for t in types))
    needed |= {AWS_LOOKUP_ACTIONS[token] for token in lookups} | AWS_PROVIDER_ACTIONS

    assert granted_aws_actions() == needed


def roles_outside_the_deploy_prefix(plan: Plan) -> set[str]:
    """The names of the plan's roles the deploy policy's `iam:CreateRole` does not reach (the
    role pattern reads the deploy role's `gpu-platform-prefix` tag, which each stack exports as
    `deployRoleTags`)."""
    (creates,) = [s for s in deploy_statements() if "iam:CreateRole" in s["Action"]]
    (pattern,) = [creates["Resource"]]
    prefix = plan.outputs["deployRoleTags"]["gpu-platform-prefix"]
    allowed = pattern.replace("${aws:PrincipalTag/gpu-platform-prefix}", prefix)
    names = [r.inputs.get("name") for r in plan.of_type("aws:iam/role:Role")]
    assert names
    return {
        str(n)
        for n in names
        if n is None or not _matches(allowed, f"arn:aws:iam::${{aws:PrincipalAccount}}:role/{n}")
    }


def test_the_eks_deploy_policy_manages_only_the_roles_the_stack_names(
    eks_plans: list[Plan],
) -> None:
    assert [roles_outside_the_deploy_prefix(plan) for plan in eks_plans] == [set()] * len(eks_plans)


def test_an_eks_stack_creating_its_cluster_names_every_role_under_its_prefix() -> None:
    # The control plane's role and the EBS CSI driver's role included (an unnamed role gets a
    # name Pulumi makes up, outside the prefix).
    plan = shared_plan("eks-new")
    names = {r.inputs.get("name") for r in plan.of_type("aws:iam/role:Role")}

    assert {"ml-new.cluster", "ml-new.ebs-csi"} <= names
    assert roles_outside_the_deploy_prefix(plan) == set()


def _matches(pattern: str, name: str) -> bool:
    return fnmatchcase(name, pattern)


def gke_roles_needed(plan: Plan) -> set[str]:
    types, lookups = cloud_calls([plan], "gcp")
    assert types <= set(GCP_RESOURCE_ROLES), "write the new type's roles here"
    assert lookups <= set(GCP_LOOKUP_ROLES), "write the new lookup's role here"
    needed = set().union(*(GCP_RESOURCE_ROLES[t] for t in types))
    return needed | {GCP_LOOKUP_ROLES[token] for token in lookups}


def gke_document(name: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((ROOT / "docs" / "iam" / name).read_text())
    return document


@pytest.fixture(scope="module")
def gke_new_plan() -> Plan:
    return shared_plan("gke-new")


def test_the_gke_deploy_roles_are_exactly_what_the_program_needs() -> None:
    needed = gke_roles_needed(shared_plan("gke-dev"))
    granted = gke_document("gke-deploy-roles.json")

    assert set(granted["projectRoles"]) == needed
    assert set(granted["serviceAccountRoles"]) == GCP_SERVICE_ACCOUNT_ROLES


def test_a_gke_stack_creating_its_cluster_gets_exactly_what_it_needs_beyond_them(
    gke_new_plan: Plan,
) -> None:
    needed = gke_roles_needed(gke_new_plan)
    deploy = set(gke_document("gke-deploy-roles.json")["projectRoles"])
    create = gke_document("gke-deploy-create-roles.json")

    assert deploy <= needed
    assert set(create["projectRoles"]) == needed - deploy
    assert set(create["serviceAccountRoles"]) == GCP_SERVICE_ACCOUNT_ROLES


def test_the_secrets_key_role_holds_exactly_what_the_kms_resources_call(
    gke_new_plan: Plan,
) -> None:
    types, _ = cloud_calls([gke_new_plan], "gcp")
    needed = set().union(*(GCP_KMS_PERMISSIONS[t] for t in types if t in GCP_KMS_PERMISSIONS))
    custom = gke_document("gke-deploy-create-roles.json")["customRoles"]

    assert needed
    assert set(custom[SECRETS_KEY_ROLE.rpartition("/")[2]]["includedPermissions"]) == needed


def test_a_gke_stack_creating_its_cluster_may_grant_only_the_roles_it_grants(
    gke_new_plan: Plan,
) -> None:
    granted_roles = {
        r.inputs["role"] for r in gke_new_plan.of_type("gcp:projects/iAMMember:IAMMember")
    }
    create = gke_document("gke-deploy-create-roles.json")
    condition = create["conditions"]["roles/resourcemanager.projectIamAdmin"]["expression"]

    # gke-new names administrators: their groups get roles/container.clusterViewer.
    assert granted_roles == {
        "roles/container.defaultNodeServiceAccount",
        "roles/container.clusterViewer",
    }
    assert f"hasOnly({sorted(granted_roles)})" in condition


def test_the_gke_deploy_account_may_grant_only_the_node_service_accounts_role() -> None:
    plan = shared_plan("gke-dev")
    granted_roles = {r.inputs["role"] for r in plan.of_type("gcp:projects/iAMMember:IAMMember")}
    roles = json.loads((ROOT / "docs" / "iam" / "gke-deploy-roles.json").read_text())
    condition = roles["conditions"]["roles/resourcemanager.projectIamAdmin"]["expression"]

    assert granted_roles == {"roles/container.defaultNodeServiceAccount"}
    assert f"hasOnly({sorted(granted_roles)})" in condition
