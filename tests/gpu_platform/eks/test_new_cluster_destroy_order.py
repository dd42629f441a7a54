"""`pulumi destroy` of a stack that created its cluster deletes in the reverse order of
dependencies (pulumi `pkg/resource/graph/dependency_graph.go`: a resource's dependents go
first; its dependencies are `dependencies`, its properties' dependencies, its provider and its
parent). Every Kubernetes object, and every AWS object that names the cluster by its name
alone, must depend on the cluster, or the cluster could go first and leave them to fail; the
Kubernetes objects also on the system nodes and the add-ons their controllers run on, so that
the operator, Karpenter and the pools' finalizers still have their controllers while their
objects are deleted, and CoreDNS's PodDisruptionBudget goes before the nodes it protects."""

from collections.abc import Iterator

import pytest

from gpu_platform.offline.program import Plan, PlannedResource, run_program
from tests.repository import PROJECT

from .test_new_cluster import eks_new, on_karpenter

CLUSTER = "aws:eks/cluster:Cluster"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
SYSTEM_NODES = "cluster-system-nodes"
# AWS objects that reach the cluster by its name only: nothing in their inputs is an output of
# the cluster.
NAMED_BY_CLUSTER_NAME = (
    NODE_GROUP,
    "aws:eks/podIdentityAssociation:PodIdentityAssociation",
    "aws:eks/addon:Addon",
)


@pytest.fixture(scope="module", params=["cluster-autoscaler", "karpenter"])
def plan(request: pytest.FixtureRequest) -> Plan:
    config = eks_new()
    if request.param == "karpenter":
        on_karpenter(config)
    return run_program("eks-new", config=config, project=PROJECT)


def dependencies(resource: PlannedResource) -> Iterator[str]:
    yield from resource.dependencies
    for urns in resource.property_dependencies.values():
        yield from urns
    if resource.provider:
        yield resource.provider.rsplit("::", 1)[0]
    if resource.parent:
        yield resource.parent


def reachable(plan: Plan, start: PlannedResource) -> set[str]:
    by_urn = {r.urn: r for r in plan.resources}
    seen: set[str] = set()
    todo = list(dependencies(start))
    while todo:
        urn = todo.pop()
        if urn in seen:
            continue
        seen.add(urn)
        if urn in by_urn:
            todo += dependencies(by_urn[urn])
    return seen


def test_every_kubernetes_object_is_deleted_before_the_cluster_and_its_system_nodes(
    plan: Plan,
) -> None:
    cluster = plan.named("cluster", CLUSTER).urn
    system = plan.named(SYSTEM_NODES, NODE_GROUP).urn
    coredns = plan.named("cluster-addon-coredns").urn
    objects = [r for r in plan.resources if r.type.startswith("kubernetes:")]

    assert objects
    for resource in objects:
        assert {cluster, system, coredns} <= reachable(plan, resource), resource.name


def test_every_aws_object_named_by_the_cluster_is_deleted_before_it(plan: Plan) -> None:
    cluster = plan.named("cluster", CLUSTER).urn
    named = [r for r in plan.resources if r.type in NAMED_BY_CLUSTER_NAME]

    assert len(named) > 5
    for resource in named:
        assert cluster in reachable(plan, resource), resource.name


def test_coredns_and_its_disruption_budget_go_before_the_system_nodes(plan: Plan) -> None:
    system = plan.named(SYSTEM_NODES, NODE_GROUP).urn

    assert system in reachable(plan, plan.named("cluster-addon-coredns"))


EGRESS = (
    "aws:ec2/natGateway:NatGateway",
    "aws:ec2/routeTable:RouteTable",
    "aws:ec2/routeTableAssociation:RouteTableAssociation",
    "aws:ec2/internetGateway:InternetGateway",
    "aws:ec2/vpcEndpoint:VpcEndpoint",
)


def test_every_kubernetes_object_and_node_group_is_deleted_before_the_nodes_egress(
    plan: Plan,
) -> None:
    # Karpenter's NodeClaim and EC2NodeClass finalizers (karpenter v1.14.1
    # `pkg/controllers/node/termination`, karpenter-provider-aws v1.14.1
    # `pkg/controllers/nodeclass/termination`) terminate instances and delete instance profiles
    # through EC2's and IAM's public endpoints, which private nodes reach through NAT; nodes
    # starting pull the VPC CNI's image from ECR the same way.
    egress = {r.urn for r in plan.resources if r.type in EGRESS}
    waiting = [
        r for r in plan.resources if r.type.startswith("kubernetes:") or r.type == NODE_GROUP
    ]

    # Three zones: a private table each and the public one, six associations, one NAT at least.
    assert len(egress) >= 4 + 6 + 1 + 1 + 1
    for resource in waiting:
        assert egress <= reachable(plan, resource), resource.name
