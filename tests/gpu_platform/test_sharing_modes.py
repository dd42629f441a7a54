"""Each sharing mode on each cloud, end to end through the real program: what a node of an
A100 80GB pool advertises, who serves its GPUs, what the autoscaler is told, and what the
GPU Operator and its DCGM exporter are configured with. One row per cloud and mode; the
reasons, with their upstream sources, are in docs/gpu-sharing.md and the tests of each part.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from gpu_platform.config import ConfigError
from gpu_platform.offline.program import Plan
from tests.stack_variants import AL2023_RELEASE

Config = dict[str, Any]
PlanFor = Callable[[Config], Plan]
POOL = "a100"
MODES = {
    "exclusive": {"mode": "exclusive"},
    "time-slicing": {"mode": "time-slicing", "replicas": 4},
    "mps": {"mode": "mps", "replicas": 2},
    "mig": {"mode": "mig", "profile": "all-1g.10gb"},
}
VIRTUAL_GPUS = [{"name": "KUBERNETES_VIRTUAL_GPUS", "value": "true"}]


@dataclass(frozen=True)
class Row:
    advertised: dict[str, int]
    """What one node advertises once its device plugin runs."""
    plugin_config: str | None
    """The operator's device plugin config the nodes select; None where GKE serves them."""
    mig_manager: bool
    exporter_env: list[dict[str, str]] | None


# p4de.24xlarge: 8 A100 80GB. Seven 1g.10gb instances per GPU (NVIDIA's MIG user guide).
EKS = {
    "exclusive": Row({"nvidia.com/gpu": 8}, "exclusive", False, None),
    "time-slicing": Row({"nvidia.com/gpu": 32}, "time-slicing-4", False, VIRTUAL_GPUS),
    "mps": Row({"nvidia.com/gpu": 16}, "mps-2", False, VIRTUAL_GPUS),
    "mig": Row({"nvidia.com/gpu": 0, "nvidia.com/mig-1g.10gb": 56}, "mig-mixed", True, None),
}
# a2-ultragpu-1g: 1 A100 80GB, on COS.
GKE = {
    "exclusive": Row({"nvidia.com/gpu": 1}, "exclusive", False, None),
    "time-slicing": Row({"nvidia.com/gpu": 4}, None, False, VIRTUAL_GPUS),
    "mig": Row({"nvidia.com/gpu": 7}, None, False, None),
}
"""MPS is refused on GKE (test_gke_refuses_mps)."""
GKE_ACCELERATOR_SETTINGS = {
    "exclusive": {},
    "time-slicing": {
        "gpuSharingConfig": {"gpuSharingStrategy": "TIME_SHARING", "maxSharedClientsPerGpu": 4}
    },
    "mig": {"gpuPartitionSize": "1g.10gb"},
}


def with_only_pool(config: Config, pool: Config) -> Config:
    config["gpu-platform:pools"] = [{"name": POOL, "max": 2, **pool}]
    for namespace in config["gpu-platform:namespaces"]:
        namespace["smokeTestPool"] = POOL
    return config


def eks_plan(mode: str, config: Config, plan_for: PlanFor) -> Plan:
    pool = {
        "instanceTypes": ["p4de.24xlarge"],
        "sharing": MODES[mode],
        "aws": {"amiReleaseVersion": AL2023_RELEASE},
    }
    return plan_for(with_only_pool(config, pool))


def gke_plan(mode: str, config: Config, plan_for: PlanFor) -> Plan:
    pool = {
        "instanceTypes": ["a2-ultragpu-1g"],
        "accelerator": "a100-80gb",
        "gpusPerNode": 1,
        "sharing": MODES[mode],
    }
    return plan_for(with_only_pool(config, pool))


def operator_values(plan: Plan) -> dict[str, Any]:
    return plan.named("gpu-operator", "kubernetes:helm.sh/v3:Release").inputs["values"]


def check_kubernetes_side(plan: Plan, row: Row) -> None:
    exported = plan.outputs["pools"][POOL]
    values = operator_values(plan)
    assert exported["resources"] == row.advertised
    assert exported["labels"].get("nvidia.com/device-plugin.config") == row.plugin_config
    configs = set(values["devicePlugin"]["config"]["data"])
    assert configs == {"exclusive"} | ({row.plugin_config} if row.plugin_config else set())
    assert values["migManager"]["enabled"] is row.mig_manager
    # Beside the platform's metric set (DCGM_EXPORTER_CONFIGMAP_DATA), which every mode gets.
    env = values["dcgmExporter"]["env"]
    assert [e for e in env if e["name"] == "KUBERNETES_VIRTUAL_GPUS"] == (row.exporter_env or [])


@pytest.mark.parametrize("mode", MODES)
def test_eks(mode: str, dev_config: Config, plan_for: PlanFor) -> None:
    plan = eks_plan(mode, dev_config, plan_for)
    row = EKS[mode]

    check_kubernetes_side(plan, row)
    labels = plan.named(f"{POOL}-nodes", "aws:eks/nodeGroup:NodeGroup").inputs["labels"]
    # Without it on MIG nodes; tests/gpu_platform/eks/test_autoscaler_readiness.py says why.
    assert ("k8s.amazonaws.com/accelerator" in labels) is (mode != "mig")
    tags = {
        r.inputs["tag"]["key"]: r.inputs["tag"]["value"]
        for r in plan.of_type("aws:autoscaling/tag:Tag")
    }
    prefix = "k8s.io/cluster-autoscaler/node-template/resources/"
    gpu_hints = prefix + "nvidia.com/"
    hints = {k.removeprefix(prefix): int(v) for k, v in tags.items() if k.startswith(gpu_hints)}
    assert hints == row.advertised


@pytest.mark.parametrize("mode", GKE)
def test_gke_on_cos(mode: str, gke_config: Config, plan_for: PlanFor) -> None:
    plan = gke_plan(mode, gke_config, plan_for)
    row = GKE[mode]

    check_kubernetes_side(plan, row)
    node_config = plan.named(POOL, "gcp:container/nodePool:NodePool").inputs["nodeConfig"]
    (accelerator,) = node_config["guestAccelerators"]
    settings = {
        k: v for k, v in accelerator.items() if k.startswith(("gpuSharing", "gpuPartition"))
    }
    assert settings == GKE_ACCELERATOR_SETTINGS[mode]
    gke_plugin_off = node_config["labels"].get("gke-no-default-nvidia-gpu-device-plugin")
    operator_plugin = node_config["labels"].get("nvidia.com/gpu.deploy.device-plugin")
    if mode == "exclusive":
        assert (gke_plugin_off, operator_plugin) == ("true", None)
    else:
        assert (gke_plugin_off, operator_plugin) == (None, "false")


def test_gke_refuses_mps(gke_config: Config, failed_plan_for: PlanFor) -> None:
    # GKE's device plugin needs an MPS control daemon on the node, which nothing the platform
    # runs starts (docs/gpu-sharing.md).
    plan = gke_plan("mps", gke_config, failed_plan_for)

    assert plan.resources == []
    assert isinstance(plan.error, ConfigError)
    assert [p.path for p in plan.error.problems] == ["gpu-platform:pools[0].sharing.mode"]


@pytest.mark.parametrize("mode", [m for m in MODES if m != "exclusive"])
def test_gke_on_ubuntu_shares_no_gpus(
    mode: str, gke_config: Config, failed_plan_for: PlanFor
) -> None:
    gke_config["gpu-platform:cluster"]["nodeImage"] = "ubuntu"

    plan = gke_plan(mode, gke_config, failed_plan_for)

    assert plan.resources == []
    assert isinstance(plan.error, ConfigError)
    assert [p.path for p in plan.error.problems] == ["gpu-platform:pools[0].sharing.mode"]
