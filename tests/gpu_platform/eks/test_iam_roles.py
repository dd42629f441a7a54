"""The roles a stack creates: under the stack's name prefix, within the permissions boundary the
deploy policy requires (docs/iam/eks-deploy-iam-policy.json), tagged with their cluster."""

import re

import pytest

from gpu_platform.eks.iam_roles import name_prefix
from gpu_platform.offline.program import Plan
from tests.shared_plans import shared_plan

ROLE = "aws:iam/role:Role"
BOUNDARY = "arn:aws:iam::123456789012:policy/gpu-platform-permissions-boundary"
# IAM's limits on a role's name (botocore's IAM model, CreateRole `RoleName`) and the longest
# pool name the config takes.
ROLE_NAME_LIMIT = 64
LONGEST_POOL = "p" * 32


@pytest.fixture(scope="module", params=["dev", "prod", "karpenter-dev"])
def plan(request: pytest.FixtureRequest) -> Plan:
    return shared_plan(request.param)


def test_every_role_has_the_platforms_boundary(plan: Plan) -> None:
    roles = plan.of_type(ROLE)

    assert roles
    assert {r.inputs["permissionsBoundary"] for r in roles} == {BOUNDARY}


def test_every_role_is_named_under_the_stacks_prefix(plan: Plan) -> None:
    prefix = plan.outputs["deployRoleTags"]["gpu-platform-prefix"]

    assert all(r.inputs["name"].startswith(f"{prefix}.") for r in plan.of_type(ROLE))


def test_every_role_is_tagged_with_its_cluster(plan: Plan) -> None:
    cluster = plan.outputs["deployRoleTags"]["gpu-platform-cluster"]

    assert all(r.inputs["tags"]["gpu-platform.io/cluster"] == cluster for r in plan.of_type(ROLE))


def test_the_roles_are_the_node_and_controller_roles() -> None:
    names = {
        stack: sorted(r.inputs["name"] for r in shared_plan(stack).of_type(ROLE))
        for stack in ("dev", "karpenter-dev")
    }

    assert names == {
        "dev": ["ml-dev.cluster-autoscaler", "ml-dev.pool-t4-shared", "ml-dev.vpc-cni"],
        "karpenter-dev": [
            "ml-karpenter-dev.karpenter",
            "ml-karpenter-dev.karpenter-nodes",
            "ml-karpenter-dev.vpc-cni",
        ],
    }


def test_the_deploy_role_tags_are_the_cluster_the_prefix_the_vpc_and_the_region(
    plan: Plan,
) -> None:
    tags = plan.outputs["deployRoleTags"]

    assert tags == {
        "gpu-platform-cluster": tags["gpu-platform-cluster"],
        "gpu-platform-prefix": tags["gpu-platform-cluster"],
        "gpu-platform-vpc": tags["gpu-platform-vpc"],
        "gpu-platform-region": "us-east-1",
    }
    assert tags["gpu-platform-cluster"] in {"ml-dev", "ml-prod", "ml-karpenter-dev"}
    assert re.fullmatch(r"vpc-[0-9a-f]+", tags["gpu-platform-vpc"])


def test_every_role_is_tagged_with_its_clusters_vpc(plan: Plan) -> None:
    # docs/iam/eks-permissions-boundary.json holds a role's network interface actions to the
    # VPC this tag names; docs/iam/eks-deploy-iam-policy.json requires it at creation.
    vpc = plan.outputs["deployRoleTags"]["gpu-platform-vpc"]

    assert all(r.inputs["tags"]["gpu-platform.io/vpc"] == vpc for r in plan.of_type(ROLE))


def test_every_role_is_tagged_with_its_clusters_region(plan: Plan) -> None:
    # docs/iam/eks-permissions-boundary.json lets a role create instance profiles only under
    # /karpenter/<this tag>/<cluster>/; docs/iam/eks-deploy-iam-policy.json requires it at
    # creation. Every EKS example stack is in us-east-1.
    assert {r.inputs["tags"]["gpu-platform.io/region"] for r in plan.of_type(ROLE)} == {"us-east-1"}


def test_a_long_cluster_names_prefix_leaves_room_for_any_pool() -> None:
    longest, other = "c" * 100, "c" * 99 + "d"

    assert len(f"{name_prefix(longest)}.pool-{LONGEST_POOL}") <= ROLE_NAME_LIMIT
    assert name_prefix(longest) != name_prefix(other)
    assert "." not in name_prefix(longest)


def test_a_prefix_never_begins_another_clusters_role_names() -> None:
    # `ml-dev` and `ml-dev-2`: the `.` after the prefix is in neither cluster name.
    assert not f"{name_prefix('ml-dev-2')}.pool-a".startswith(f"{name_prefix('ml-dev')}.")
