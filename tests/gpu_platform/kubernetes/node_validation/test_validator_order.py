"""A pool that no canary leads: its validator DaemonSet changes before its nodes do, on every
provisioner. Its pods check each node against the pool's release as the config gives it when the
pod starts (`DRIVER_VERSION`, `EXPECTED_GPUS`, `BY_INSTANCE_TYPE`); declared after the pool, it
checked every node a rolling update started against the old release, and a node that fails is
tainted and never checked again.

Each edge is a direct dependency the program declares, so that taking the line that declares it
away fails its test; `gate_graph.validation_ordering_problems` checks the invariant
transitively, here and in the configuration sweep.
"""

import copy
import dataclasses

import pytest

from gpu_platform.offline.program import Plan, PlannedResource, run_program
from gpu_platform.stack_files import stack_config
from tests.conftest import Config, dev_stack_config, gke_stack_config
from tests.gpu_platform.gke.plans import on_ubuntu
from tests.gpu_platform.kubernetes.gate_graph import (
    DAEMON_SET,
    EKS_NODE_GROUP,
    GKE_NODE_POOL,
    KARPENTER_NODE_CLASS,
    KARPENTER_NODE_POOL,
    NVIDIA_DRIVER,
    validation_ordering_problems,
)
from tests.repository import PROJECT
from tests.shared_plans import shared_plan

pytestmark = pytest.mark.shared_plans


def validator(plan: Plan, pool: str) -> PlannedResource:
    return plan.named(f"node-validation-{pool}", DAEMON_SET)


def ubuntu_config() -> Config:
    """GKE Ubuntu, where the GPU Operator builds `l4-shared`'s driver from its NVIDIADriver."""
    return on_ubuntu(gke_stack_config(dev_stack_config()))


@pytest.fixture(scope="module")
def ubuntu_plan() -> Plan:
    return run_program("dev", config=ubuntu_config(), project=PROJECT)


@pytest.mark.parametrize(
    ("stack", "pool", "nodes", "kind"),
    [
        # An EKS AMI release of another NVIDIA branch, rolled by the managed node group.
        ("dev", "t4-shared", "t4-shared-nodes", EKS_NODE_GROUP),
        # A new AMI in the EC2NodeClass, or a new NodePool template: Karpenter replaces the
        # nodes by drift once `up` has applied it.
        ("karpenter-dev", "l4-on-demand", "l4-on-demand", KARPENTER_NODE_CLASS),
        ("karpenter-dev", "l4-on-demand", "l4-on-demand", KARPENTER_NODE_POOL),
        # A GKE version whose COS ships another driver, or `gcp.driverVersion`.
        ("gke-dev", "l4-shared", "l4-shared", GKE_NODE_POOL),
    ],
)
def test_an_unled_pools_nodes_wait_for_its_validator(
    stack: str, pool: str, nodes: str, kind: str
) -> None:
    plan = shared_plan(stack)
    assert all(
        p.get("canaryOf") != pool for p in stack_config(stack, PROJECT)["gpu-platform:pools"]
    )

    assert validator(plan, pool).urn in plan.named(nodes, kind).dependencies


def test_an_unled_ubuntu_pools_node_pool_and_driver_wait_for_its_validator(
    ubuntu_plan: Plan,
) -> None:
    # The GPU Operator loads the NVIDIADriver's version on running nodes and on every node that
    # joins: a node that joins after the driver moved is checked against the new one.
    pool_validator = validator(ubuntu_plan, "l4-shared")

    assert pool_validator.urn in ubuntu_plan.named("l4-shared", GKE_NODE_POOL).dependencies
    assert (
        pool_validator.urn
        in ubuntu_plan.named("gpu-operator-driver-l4-shared", NVIDIA_DRIVER).dependencies
    )


def test_a_validator_does_not_wait_for_its_pools_nodes(ubuntu_plan: Plan) -> None:
    # Nor for anything that waits for them (the GPU Operator's namespace, which waits for what
    # the operator waits for): else the first `up` would never create either.
    assert validation_ordering_problems(ubuntu_plan, ubuntu_config()) == []


def test_pulumi_does_not_wait_for_a_validators_pods(ubuntu_plan: Plan) -> None:
    # pulumi-kubernetes 4.34.2 waits for a DaemonSet's pods to be ready before it reports it
    # created or updated (provider/pkg/await/daemonset.go, pulumi/pulumi-kubernetes PR #2953).
    # The pool's nodes come after their validator, so its pods would be waited for on nodes that
    # `up` only creates once the wait is over.
    assert validator(ubuntu_plan, "l4-shared").inputs["metadata"]["annotations"] == {
        "pulumi.com/skipAwait": "true"
    }


@pytest.mark.parametrize("stack", ["dev", "karpenter-dev", "gke-dev", "prod"])
def test_every_stacks_pools_wait_for_their_validators(stack: str) -> None:
    assert validation_ordering_problems(shared_plan(stack), stack_config(stack, PROJECT)) == []


def test_the_invariant_finds_a_driver_that_does_not_wait_for_its_validator(
    ubuntu_plan: Plan,
) -> None:
    plan = copy.deepcopy(ubuntu_plan)
    driver = plan.named("gpu-operator-driver-l4-shared", NVIDIA_DRIVER)
    gone = validator(plan, "l4-shared").urn
    plan.resources = [
        dataclasses.replace(r, dependencies=tuple(d for d in r.dependencies if d != gone))
        if r is driver
        else r
        for r in plan.resources
    ]

    assert validation_ordering_problems(plan, ubuntu_config()) == [
        "NVIDIADriver gpu-operator-driver-l4-shared of l4-shared does not wait for its validator"
    ]


def test_the_invariant_finds_a_validating_pool_without_a_validator(ubuntu_plan: Plan) -> None:
    plan = copy.deepcopy(ubuntu_plan)
    plan.resources = [r for r in plan.resources if r is not validator(plan, "l4-shared")]
    assert validation_ordering_problems(plan, ubuntu_config()) == [
        "pool l4-shared validates its nodes but has no validator"
    ]
