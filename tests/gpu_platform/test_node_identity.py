"""A pool's node identity: the labels, taints and GPU resources every consumer reads."""

import pytest

from gpu_platform.config import GpuPoolSpec
from gpu_platform.node_identity import (
    ACCELERATOR_LABEL,
    DEVICE_PLUGIN_CONFIG_LABEL,
    GPU_PRESENT_LABEL,
    GPU_TAINT,
    MIG_CONFIG_LABEL,
    POOL_LABEL,
    GpuShape,
    Taint,
    node_identity_for,
    sharing_config_name,
)


def spec(**fields) -> GpuPoolSpec:
    return GpuPoolSpec.model_validate(
        {"name": "gpus", "instanceTypes": ["p4de.24xlarge"], "max": 2, **fields}
    )


A100S = GpuShape("a100-80gb", 8)


def test_every_pool_is_tainted_for_gpu_workloads_only() -> None:
    assert node_identity_for(spec(), A100S).taints[0] == Taint(
        "nvidia.com/gpu", "present", "NoSchedule"
    )


def test_extra_taints_follow_the_gpu_taint() -> None:
    identity = node_identity_for(
        spec(taints=[{"key": "team", "value": "vision", "effect": "NoExecute"}]), A100S
    )

    assert identity.taints == (GPU_TAINT, Taint("team", "vision", "NoExecute"), VALIDATION)


# The cluster autoscaler's startup-taint prefix (`StartupTaintPrefix`, kubernetes/autoscaler
# cluster-autoscaler-1.35.2 cluster-autoscaler/utils/taints/taints.go).
VALIDATION = Taint(
    "startup-taint.cluster-autoscaler.kubernetes.io/gpu-validation",
    "pending",
    "NoSchedule",
)
MIG_STARTUP = Taint(
    "startup-taint.cluster-autoscaler.kubernetes.io/mig-config", "pending", "NoSchedule"
)


@pytest.mark.parametrize(
    ("validation", "taints"),
    [
        pytest.param({}, (GPU_TAINT, VALIDATION), id="by-default"),
        pytest.param(
            {"dcgmDiagLevel": 2, "skipChecks": ["nccl-bandwidth"]},
            (GPU_TAINT, VALIDATION),
            id="configured",
        ),
        pytest.param({"enabled": False}, (GPU_TAINT,), id="off"),
    ],
)
def test_a_validated_pools_nodes_join_with_the_validation_taint(
    validation: dict[str, object], taints: tuple[Taint, ...]
) -> None:
    identity = node_identity_for(spec(validation=validation), A100S)

    assert identity.taints == taints
    assert identity.startup_taints == taints[1:]
    assert identity.lasting_taints == (GPU_TAINT,)


def test_the_validation_taint_key_fits_an_eks_node_group() -> None:
    # botocore `eks` 2017-11-01 service model: `taintKey` "max": 63, the prefix included.
    assert len(VALIDATION.key) <= 63


def test_a_mig_pools_startup_taints_are_the_mig_and_validation_ones() -> None:
    identity = node_identity_for(
        spec(sharing={"mode": "mig", "profile": "all-1g.10gb"}), GpuShape("a100-80gb", 8)
    )

    assert identity.startup_taints == (MIG_STARTUP, VALIDATION)
    assert identity.lasting_taints == (GPU_TAINT,)


def test_labels_name_pool_accelerator_and_gpu_presence() -> None:
    labels = node_identity_for(spec(), A100S).labels

    assert (labels[POOL_LABEL], labels[ACCELERATOR_LABEL], labels[GPU_PRESENT_LABEL]) == (
        "gpus",
        "a100-80gb",
        "true",
    )


def test_extra_labels_are_kept() -> None:
    assert node_identity_for(spec(labels={"team": "vision"}), A100S).labels["team"] == "vision"


def test_exclusive_pool_advertises_one_resource_per_gpu() -> None:
    assert node_identity_for(spec(), A100S).resources == {"nvidia.com/gpu": 8}


@pytest.mark.parametrize("mode", ["time-slicing", "mps"])
def test_shared_pool_advertises_replicas_per_gpu(mode: str) -> None:
    identity = node_identity_for(spec(sharing={"mode": mode, "replicas": 4}), A100S)

    assert identity.resources == {"nvidia.com/gpu": 32}


def test_mig_advertises_slices_by_profile_name_and_no_whole_gpu() -> None:
    sharing = {"mode": "mig", "strategy": "mixed", "profile": "all-1g.10gb"}

    assert node_identity_for(spec(sharing=sharing), A100S).resources == {
        "nvidia.com/gpu": 0,
        "nvidia.com/mig-1g.10gb": 56,
    }


def test_mig_strategy_defaults_to_mixed() -> None:
    sharing = {"mode": "mig", "profile": "all-3g.40gb"}

    assert node_identity_for(spec(sharing=sharing), A100S).resources == {
        "nvidia.com/gpu": 0,
        "nvidia.com/mig-3g.40gb": 16,
    }


def test_mig_pool_selects_its_partition_layout() -> None:
    sharing = {"mode": "mig", "strategy": "mixed", "profile": "all-1g.10gb"}

    assert node_identity_for(spec(sharing=sharing), A100S).labels[MIG_CONFIG_LABEL] == "all-1g.10gb"


def test_non_mig_pool_has_no_partition_label() -> None:
    assert MIG_CONFIG_LABEL not in node_identity_for(spec(), A100S).labels


@pytest.mark.parametrize(
    ("sharing", "name"),
    [
        ({"mode": "exclusive"}, "exclusive"),
        ({"mode": "time-slicing", "replicas": 4}, "time-slicing-4"),
        ({"mode": "mps", "replicas": 2}, "mps-2"),
        ({"mode": "mig", "strategy": "mixed", "profile": "all-1g.10gb"}, "mig-mixed"),
    ],
)
def test_pool_selects_the_device_plugin_config_of_its_sharing_mode(sharing, name) -> None:
    pool = spec(sharing=sharing)

    assert sharing_config_name(pool.sharing) == name
    assert node_identity_for(pool, A100S).labels[DEVICE_PLUGIN_CONFIG_LABEL] == name
