"""What a unit of each pool's GPU resource is worth in GPUs (gpu_platform/kubernetes/gpu_hours.py),
from pools as the config describes them. The promtool tests of alert_tests/gpu_hours.test.yaml
show what the rules do with it."""

from fractions import Fraction
from typing import Any

from gpu_platform.config import GpuPoolSpec, Platform
from gpu_platform.kubernetes.gpu_hours import (
    PoolGpuShare,
    kube_state_resource,
    pool_gpu_shares,
    pool_share_rules,
)
from gpu_platform.node_identity import GpuShape, ResolvedPool, resolve_pool, sharer_for


def pool(name: str, accelerator: str, gpus: int, platform: Platform, **fields: Any) -> ResolvedPool:
    spec = GpuPoolSpec.model_validate({"name": name, "instanceTypes": ["x"], "max": 2, **fields})
    return resolve_pool(spec, 0, GpuShape(accelerator, gpus), sharer_for(platform, spec.sharing))


def test_a_whole_gpu_is_a_gpu() -> None:
    h100 = pool("h100", "h100-80gb", 8, Platform.EKS_AL2023)

    assert pool_gpu_shares([h100]) == [PoolGpuShare("h100", "nvidia.com/gpu", Fraction(1))]


def test_a_replica_of_a_gpu_shared_n_ways_is_an_nth() -> None:
    time_sliced = pool(
        "ts", "l4", 4, Platform.EKS_AL2023, sharing={"mode": "time-slicing", "replicas": 4}
    )
    mps = pool("mps", "l4", 1, Platform.GKE_COS, sharing={"mode": "mps", "replicas": 3})

    assert pool_gpu_shares([time_sliced, mps]) == [
        PoolGpuShare("ts", "nvidia.com/gpu", Fraction(1, 4)),
        PoolGpuShare("mps", "nvidia.com/gpu", Fraction(1, 3)),
    ]


def test_a_mig_slice_is_its_share_of_the_gpu_under_either_device_plugin() -> None:
    # NVIDIA's MIG user guide, supported profiles of the A100 80GB: seven 1g.10gb instances
    # or two 3g.40gb instances per GPU.
    operator = pool(
        "mig",
        "a100-80gb",
        8,
        Platform.EKS_AL2023,
        sharing={"mode": "mig", "profile": "all-1g.10gb"},
    )
    halves = pool(
        "half",
        "a100-80gb",
        8,
        Platform.EKS_AL2023,
        sharing={"mode": "mig", "profile": "all-3g.40gb"},
    )
    gke = pool(
        "gke", "a100-80gb", 1, Platform.GKE_COS, sharing={"mode": "mig", "profile": "all-1g.10gb"}
    )

    assert pool_gpu_shares([operator, halves, gke]) == [
        PoolGpuShare("mig", "nvidia.com/mig-1g.10gb", Fraction(1, 7)),
        PoolGpuShare("half", "nvidia.com/mig-3g.40gb", Fraction(1, 2)),
        # GKE's device plugin advertises each partition as one nvidia.com/gpu.
        PoolGpuShare("gke", "nvidia.com/gpu", Fraction(1, 7)),
    ]


def test_each_share_is_a_constant_series_labelled_as_kube_state_metrics_names_the_resource() -> (
    None
):
    share = PoolGpuShare("mig", "nvidia.com/mig-1g.10gb.me", Fraction(1, 7))

    assert pool_share_rules([share]) == [
        {
            "record": "gpu_platform:pool_gpus_per_request",
            "expr": "vector(1 / 7)",
            "labels": {"pool": "mig", "resource": "nvidia_com_mig_1g_10gb_me"},
        }
    ]


def test_kube_state_metrics_names_a_resource_with_underscores_for_its_punctuation() -> None:
    # kube-state-metrics v2.20.0 internal/store/pod.go: `SanitizeLabelName(resourceName)`.
    assert kube_state_resource("nvidia.com/gpu") == "nvidia_com_gpu"
