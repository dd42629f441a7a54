"""Every DaemonSet the platform installs tolerates the taints of the pools it must run on: the
pools' own, their startup taints (MIG's, node validation's), and what the cloud adds (GKE's
queued-provisioning taint)."""

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from gpu_platform.offline.program import Plan, run_program
from gpu_platform.stack_files import stack_config
from tests.conftest import Config
from tests.gpu_platform.eks.test_efa import efa_pool
from tests.repository import PROJECT
from tests.stack_variants import QUEUED_POOL, with_gke_capacity_pools

from .daemonset_tolerations import daemonset_toleration_problems, tolerates

# Its tests plan the same configs again and again, and change the program only through the
# stand-ins' answers.
pytestmark = pytest.mark.shared_plans

PlanFor = Callable[[Config], Plan]
RELEASE = "kubernetes:helm.sh/v3:Release"
TEAM_A = {"key": "dedicated", "value": "team-a", "effect": "NoSchedule"}
TEAM_A_TOLERATION = {**TEAM_A, "operator": "Equal"}
GPU_TAINT_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
VALIDATION_TAINT = "startup-taint.cluster-autoscaler.kubernetes.io/gpu-validation"
VALIDATION_TOLERATION = {
    "key": VALIDATION_TAINT,
    "operator": "Equal",
    "value": "pending",
    "effect": "NoSchedule",
}
# GKE's queued-provisioning taint (GKE, "Deploy GPUs for batch and AI workloads with Dynamic
# Workload Scheduler").
GKE_QUEUED_TOLERATION = {
    "key": "cloud.google.com/gke-queued",
    "operator": "Equal",
    "value": "true",
    "effect": "NoSchedule",
}


def values_of(plan: Plan, chart: str) -> dict[str, Any]:
    (release,) = [r for r in plan.of_type(RELEASE) if r.inputs["chart"].endswith(chart)]
    return dict(release.inputs["values"])


def assert_operator_tolerates(plan: Plan, toleration: dict[str, str]) -> None:
    """Every ClusterPolicy operand takes `daemonsets.tolerations` (gpu-operator v26.7.0
    controllers/object_controls.go, applyCommonDaemonsetConfig); node-feature-discovery 0.19.0
    renders `worker.tolerations` on its worker (templates/worker.yaml)."""
    operator = values_of(plan, "gpu-operator")
    assert toleration in operator["daemonsets"]["tolerations"]
    assert toleration in operator["node-feature-discovery"]["worker"]["tolerations"]


def tainted(config: Config, *taints: dict[str, str], pool: int = 0) -> Config:
    config["gpu-platform:pools"][pool]["taints"] = list(taints)
    return config


# --- Kubernetes' matching ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("toleration", "matches"),
    [
        ({"operator": "Exists"}, True),
        ({"key": "dedicated", "operator": "Exists"}, True),
        ({"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}, False),
        ({"key": "dedicated", "value": "team-a"}, True),
        ({"key": "dedicated", "operator": "Equal", "value": "team-b"}, False),
        ({"key": "other", "operator": "Exists"}, False),
        ({"effect": "NoSchedule", "operator": "Exists"}, True),
    ],
)
def test_tolerations_match_taints_as_kubernetes_matches_them(
    toleration: dict[str, str], matches: bool
) -> None:
    # k8s.io/api core/v1 toleration.go, ToleratesTaint: an empty effect matches all effects,
    # Exists with an empty key matches every key, Equal (the default) compares the value too.
    assert tolerates(toleration, ("dedicated", "team-a", "NoSchedule")) is matches


# --- EKS: a pool tainted for one team ---------------------------------------------------------


def test_every_daemonset_reaches_a_pool_tainted_for_one_team(
    dev_config: Config, plan_for: PlanFor
) -> None:
    config = tainted(dev_config, TEAM_A)
    plan = plan_for(config)

    assert_operator_tolerates(plan, TEAM_A_TOLERATION)
    assert daemonset_toleration_problems(plan, config) == []


def test_the_check_names_a_daemonset_that_misses_a_pools_taint(
    dev_config: Config, plan_for: PlanFor
) -> None:
    config = tainted(dev_config, TEAM_A)
    plan = copy.deepcopy(plan_for(config))
    (addon,) = plan.of_type("aws:eks/addon:Addon")
    # The agent's DCGM server as shipped: `dcgmAgent.tolerations: []` (aws/eks-node-monitoring-
    # agent v1.7.0 chart values).
    addon.inputs["configurationValues"] = json.dumps({})

    assert daemonset_toleration_problems(plan, config) == [
        "the node monitoring agent's DCGM server: taint nvidia.com/gpu=present:NoSchedule of pool"
        " t4-shared not tolerated",
        "the node monitoring agent's DCGM server: taint dedicated=team-a:NoSchedule of pool"
        " t4-shared not tolerated",
        f"the node monitoring agent's DCGM server: taint {VALIDATION_TAINT}=pending:NoSchedule"
        " of pool t4-shared not tolerated",
    ]


def test_every_daemonset_reaches_a_node_before_its_validation(
    dev_plan: Plan, dev_config: Config
) -> None:
    # A DaemonSet kept off an unvalidated node would leave it without its driver, device plugin
    # or exporters until it passed: the operator's operands, feature discovery's worker, the EFA
    # plugin and the monitoring agents tolerate the validation taint as they do the pool's own.
    assert_operator_tolerates(dev_plan, VALIDATION_TOLERATION)
    assert daemonset_toleration_problems(dev_plan, dev_config) == []
    release = next(r for r in dev_plan.of_type(RELEASE) if r.inputs["chart"] == "gpu-operator")
    operands = release.inputs["values"]["daemonsets"]
    operands["tolerations"] = [t for t in operands["tolerations"] if t != VALIDATION_TOLERATION]

    assert daemonset_toleration_problems(dev_plan, dev_config) == [
        f"the GPU Operator's operands: taint {VALIDATION_TAINT}=pending:NoSchedule of pool"
        " t4-shared not tolerated"
    ]


def test_the_dcgm_server_need_not_reach_an_arm64_pool(
    dev_config: Config, plan_for: PlanFor
) -> None:
    # Its node affinity requires `kubernetes.io/arch In [amd64]` (aws/eks-node-monitoring-agent
    # v1.7.0 chart values, `dcgmAgent.affinity`).
    config = tainted(dev_config, TEAM_A)
    plan = copy.deepcopy(plan_for(config))
    (group,) = plan.of_type("aws:eks/nodeGroup:NodeGroup")
    group.inputs["amiType"] = "AL2023_ARM_64_NVIDIA"
    (addon,) = plan.of_type("aws:eks/addon:Addon")
    addon.inputs["configurationValues"] = json.dumps({})

    assert daemonset_toleration_problems(plan, config) == []


def test_a_chart_the_check_does_not_know_is_a_problem(dev_plan: Plan, dev_config: Config) -> None:
    release = next(r for r in dev_plan.of_type(RELEASE) if r.inputs["chart"] == "gpu-operator")
    release.inputs["chart"] = "some-agent"

    assert daemonset_toleration_problems(dev_plan, dev_config) == [
        "gpu-operator: chart some-agent, whose DaemonSets' tolerations are unread"
    ]


# --- EFA --------------------------------------------------------------------------------------


def test_the_efa_device_plugin_reaches_a_tainted_efa_pool(
    dev_config: Config, plan_for: PlanFor
) -> None:
    config = tainted(efa_pool(dev_config), TEAM_A)
    plan = plan_for(config)

    # aws/eks-charts stable/aws-efa-k8s-device-plugin v0.5.30 templates/daemonset.yaml renders
    # `CriticalAddonsOnly` and then `.Values.tolerations`: nothing else reaches a tainted node.
    assert values_of(plan, "aws-efa-k8s-device-plugin")["tolerations"] == [
        GPU_TAINT_TOLERATION,
        TEAM_A_TOLERATION,
        VALIDATION_TOLERATION,
    ]
    assert daemonset_toleration_problems(plan, config) == []


def test_karpenter_pools_tainted_for_a_team_are_reached_by_every_daemonset() -> None:
    config = copy.deepcopy(stack_config("karpenter-dev", PROJECT))
    for pool in config["gpu-platform:pools"]:
        pool["taints"] = [TEAM_A]
    config["gpu-platform:cluster"]["nodeMonitoringAgentVersion"] = "v1.7.0-eksbuild.1"
    plan = run_program("karpenter-dev", config=config, project=PROJECT)

    assert any(p.get("aws", {}).get("efa") for p in config["gpu-platform:pools"])
    assert daemonset_toleration_problems(plan, config) == []


# --- GKE --------------------------------------------------------------------------------------


def test_every_daemonset_reaches_a_queued_provisioning_pool(
    gke_config: Config, plan_for: PlanFor
) -> None:
    config = with_gke_capacity_pools(gke_config)
    config["gpu-platform:monitoring"] = {"installPrometheusStack": True}
    plan = plan_for(config)

    assert any(p["name"] == QUEUED_POOL for p in config["gpu-platform:pools"])
    assert_operator_tolerates(plan, GKE_QUEUED_TOLERATION)
    assert daemonset_toleration_problems(plan, config) == []


def test_node_exporter_reaches_a_pool_tainted_no_execute(
    gke_config: Config, plan_for: PlanFor
) -> None:
    evicting = {"key": "dedicated", "value": "team-a", "effect": "NoExecute"}
    config = tainted(gke_config, evicting)
    config["gpu-platform:monitoring"] = {"installPrometheusStack": True}
    plan = plan_for(config)

    # prometheus-node-exporter 4.56.1 values.yaml tolerates every NoSchedule taint, and no
    # NoExecute one; Helm replaces the list whole.
    assert values_of(plan, "kube-prometheus-stack")["prometheus-node-exporter"]["tolerations"] == [
        {"effect": "NoSchedule", "operator": "Exists"},
        {**evicting, "operator": "Equal"},
    ]
    assert daemonset_toleration_problems(plan, config) == []
