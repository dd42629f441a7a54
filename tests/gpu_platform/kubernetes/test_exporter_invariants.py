"""Every GPU node has one DCGM exporter, which finds the pods on its GPUs: on the nodes GKE's
device plugin serves and on the operator's, and on a GKE-shared pool's nodes that joined before
their node pool took the labels of the platform's exporter (a led pool's, until its update after
the canary's gate)."""

from collections.abc import Callable

import pytest

from gpu_platform.kubernetes.monitoring import GKE_DCGM_EXPORTER
from gpu_platform.offline.program import Plan
from tests.conftest import Config
from tests.stack_variants import with_gke_capacity_pools

from .exporter_invariants import EXPORTER_LABELS, exporter_problems

PlanFor = Callable[[Config], Plan]
NODE_POOL = "gcp:container/nodePool:NodePool"
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"


def joined_before_the_exporter_labels(plan: Plan, pool: str) -> Plan:
    labels = plan.named(pool, NODE_POOL).inputs["nodeConfig"]["labels"]
    for key in EXPORTER_LABELS:
        labels.pop(key)
    return plan


@pytest.fixture
def gke_shared_plan(gke_config: Config, shared_plan_for: PlanFor) -> Plan:
    return shared_plan_for(gke_config)


@pytest.fixture
def mixed_plan(gke_config: Config, shared_plan_for: PlanFor) -> Plan:
    # l4-shared, time-sliced by GKE's device plugin, with exclusive A3 pools, the operator's.
    return shared_plan_for(with_gke_capacity_pools(gke_config))


def test_every_gpu_node_of_eks_gke_shared_and_mixed_stacks_has_one_exporter_that_finds_its_pods(
    dev_plan: Plan, gke_shared_plan: Plan, mixed_plan: Plan
) -> None:
    assert exporter_problems(dev_plan, {}) == []
    assert exporter_problems(gke_shared_plan, {}) == []
    assert exporter_problems(mixed_plan, {}) == []


def test_beside_whole_gpu_pools_a_node_that_joined_before_its_pools_update_loses_its_pods(
    mixed_plan: Plan,
) -> None:
    # docs/gpu-sharing.md: add whole-GPU pools once every GKE-shared pool took its labels.
    plan = joined_before_the_exporter_labels(mixed_plan, "l4-shared")

    assert exporter_problems(plan, {}) == [
        "pool l4-shared: the GPU Operator's exporter matches GPUs by uid, its device plugin's"
        " names need device-name"
    ]


def test_selecting_gke_shared_nodes_by_their_pool_gives_early_ones_two_exporters(
    gke_shared_plan: Plan,
) -> None:
    # The operator's exporter leaves a node only for the deploy label's "false"
    # (assets/state-dcgm-exporter/0800_daemonset.yaml at v26.7.0, its only node selector), which
    # comes with the pool's update: the pool label every node has from its start would put the
    # platform's exporter beside it.
    plan = gke_shared_plan
    (exporter,) = [
        r
        for r in plan.of_type("kubernetes:apps/v1:DaemonSet")
        if r.inputs["metadata"]["name"] == GKE_DCGM_EXPORTER
    ]
    exporter.inputs["spec"]["template"]["spec"]["nodeSelector"] = {
        "gpu-platform.io/pool": "l4-shared"
    }

    assert exporter_problems(plan, {}) == [
        "pool l4-shared (a node that joined before its update): 2 DCGM exporters (the GPU"
        " Operator's exporter, DaemonSet gpu-operator-nvidia-dcgm-exporter-gke)"
    ]


def test_the_sweep_sees_an_all_shared_stacks_nodes_that_joined_before_their_pools_update(
    gke_shared_plan: Plan,
) -> None:
    # The plan labels every node as its pool will; the operator's exporter still runs on the
    # nodes that joined before, and without `device-name` it finds none of their pods.
    (operator,) = [
        r
        for r in gke_shared_plan.of_type(HELM_RELEASE)
        if r.inputs["chart"].endswith("gpu-operator")
    ]
    exporter = operator.inputs["values"]["dcgmExporter"]
    exporter["env"] = [
        e for e in exporter["env"] if e["name"] != "DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE"
    ]

    assert exporter_problems(gke_shared_plan, {}) == [
        "pool l4-shared (a node that joined before its update): the GPU Operator's exporter"
        " matches GPUs by uid, its device plugin's names need device-name"
    ]
