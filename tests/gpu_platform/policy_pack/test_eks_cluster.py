"""The policies on an EKS cluster the stack creates, through the real pack: the eks-new
stack's cluster, add-ons and node groups pass, and each weakening the EKS best practices guide
warns of is reported (Secrets unencrypted, an endpoint open to the internet, no audit logs, an
add-on of no fixed version, a node group without IMDSv2)."""

import copy
from collections.abc import Callable
from typing import Any

import pytest

from gpu_platform.offline.program import Plan, PlannedResource
from tests.gpu_platform.policy_pack.builders import Analyze, messages, resource
from tests.shared_plans import shared_plan

CLUSTER = "aws:eks/cluster:Cluster"
ADDON = "aws:eks/addon:Addon"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
CLUSTER_POLICIES = (
    "eks-cluster-secrets-encryption",
    "eks-cluster-endpoint",
    "eks-cluster-audit-logs",
)


@pytest.fixture(scope="module")
def plan() -> Plan:
    return shared_plan("eks-new")


def the(plan: Plan, type_: str, name: str) -> PlannedResource:
    return copy.deepcopy(plan.named(name, type_))


def found(analyze: Analyze, policy: str, *resources: PlannedResource) -> list[str]:
    return messages(analyze(*resources), policy)


@pytest.mark.parametrize(
    "policy", [*CLUSTER_POLICIES, "eks-addons-pinned", "eks-node-group-imdsv2"]
)
def test_the_cluster_the_platform_creates_passes(analyze: Analyze, plan: Plan, policy: str) -> None:
    aws = [r for r in plan.resources if r.type.startswith("aws:eks/") or r.type == LAUNCH_TEMPLATE]

    assert found(analyze, policy, *aws) == []


def changed(plan: Plan, change: Callable[[dict[str, Any]], None]) -> PlannedResource:
    cluster = the(plan, CLUSTER, "cluster")
    change(cluster.inputs)
    return cluster


BAD_CLUSTERS: list[tuple[str, Callable[[dict[str, Any]], None], str, str]] = [
    (
        "no encryption",
        lambda i: i.pop("encryptionConfig"),
        "eks-cluster-secrets-encryption",
        "does not encrypt Secrets",
    ),
    (
        "encryption of no secrets",
        lambda i: i["encryptionConfig"].update(resources=[]),
        "eks-cluster-secrets-encryption",
        "does not encrypt Secrets",
    ),
    (
        "public endpoint left to EKS's default",
        lambda i: i.update(vpcConfig={"subnetIds": i["vpcConfig"]["subnetIds"]}),
        "eks-cluster-endpoint",
        "answers the whole internet",
    ),
    (
        "public endpoint open to all",
        lambda i: i["vpcConfig"].update(endpointPublicAccess=True, publicAccessCidrs=["0.0.0.0/0"]),
        "eks-cluster-endpoint",
        "answers the whole internet",
    ),
    (
        "public endpoint open to all in two halves",
        lambda i: i["vpcConfig"].update(
            endpointPublicAccess=True, publicAccessCidrs=["0.0.0.0/1", "128.0.0.0/1"]
        ),
        "eks-cluster-endpoint",
        "wider than /8 (IPv6 /32): 0.0.0.0/1, 128.0.0.0/1",
    ),
    (
        "public endpoint open to all of IPv6",
        lambda i: i["vpcConfig"].update(
            endpointPublicAccess=True, publicAccessCidrs=["203.0.113.0/24", "::/0"]
        ),
        "eks-cluster-endpoint",
        "wider than /8 (IPv6 /32): ::/0",
    ),
    (
        "public endpoint open to a sixteenth of IPv6's unicast space",
        lambda i: i["vpcConfig"].update(endpointPublicAccess=True, publicAccessCidrs=["2600::/16"]),
        "eks-cluster-endpoint",
        "wider than /8 (IPv6 /32): 2600::/16",
    ),
    (
        "no audit log",
        lambda i: i.update(enabledClusterLogTypes=["api", "authenticator"]),
        "eks-cluster-audit-logs",
        "does not send its audit logs",
    ),
]


@pytest.mark.parametrize(
    ("change", "policy", "words"), [b[1:] for b in BAD_CLUSTERS], ids=[b[0] for b in BAD_CLUSTERS]
)
def test_a_weakened_cluster_is_reported(
    analyze: Analyze,
    plan: Plan,
    change: Callable[[dict[str, Any]], None],
    policy: str,
    words: str,
) -> None:
    [message] = found(analyze, policy, changed(plan, change))

    assert words in message


def test_a_public_endpoint_restricted_to_a_providers_ipv6_block_passes(
    analyze: Analyze, plan: Plan
) -> None:
    # A /32 is what a regional registry allocates to a whole provider (documentation range,
    # RFC 3849).
    cluster = changed(
        plan,
        lambda i: i["vpcConfig"].update(
            endpointPublicAccess=True, publicAccessCidrs=["2001:db8::/32"]
        ),
    )

    assert found(analyze, "eks-cluster-endpoint", cluster) == []


def test_a_public_endpoint_restricted_to_cidrs_passes(analyze: Analyze, plan: Plan) -> None:
    cluster = changed(
        plan,
        lambda i: i["vpcConfig"].update(
            endpointPublicAccess=True, publicAccessCidrs=["203.0.113.0/24"]
        ),
    )

    assert found(analyze, "eks-cluster-endpoint", cluster) == []


def test_an_addon_of_no_fixed_version_is_reported(analyze: Analyze, plan: Plan) -> None:
    addon = the(plan, ADDON, "cluster-addon-coredns")
    del addon.inputs["addonVersion"]

    [message] = found(analyze, "eks-addons-pinned", addon)
    assert '"coredns" has no addonVersion' in message


def test_a_node_group_without_a_launch_template_is_reported(analyze: Analyze, plan: Plan) -> None:
    system = the(plan, NODE_GROUP, "cluster-system-nodes")
    del system.inputs["launchTemplate"]
    system.property_dependencies.pop("launchTemplate", None)

    [message] = found(analyze, "eks-node-group-imdsv2", system)
    assert "EKS's own launch template leaves IMDSv1 on" in message


def test_a_launch_template_allowing_imdsv1_is_reported(analyze: Analyze, plan: Plan) -> None:
    template = the(plan, LAUNCH_TEMPLATE, "cluster-system-launch-template")
    template.inputs["metadataOptions"]["httpTokens"] = "optional"
    system = the(plan, NODE_GROUP, "cluster-system-nodes")

    [message] = found(analyze, "eks-node-group-imdsv2", template, system)
    assert "does not require IMDSv2" in message


def test_a_cpu_node_group_of_another_stack_is_held_to_imdsv2_too(analyze: Analyze) -> None:
    general = resource(
        NODE_GROUP,
        "general",
        {"amiType": "AL2023_x86_64_STANDARD", "instanceTypes": ["m7i.large"], "taints": []},
    )

    assert len(found(analyze, "eks-node-group-imdsv2", general)) == 1
