"""How COS's driver lists name the GPUs GKE offers (gpu_platform/lock/cos.py)."""

from gpu_platform.accelerators import ACCELERATORS
from gpu_platform.lock.cos import COS_GPU_TYPES, cos_gpu_type


def test_every_gpu_gke_offers_has_a_cos_name() -> None:
    assert sorted(COS_GPU_TYPES) == sorted(n for n, a in ACCELERATORS.items() if a.gke_type)


def test_names_a_source_gives() -> None:
    # professional-services tools/gke-gpu-driver-version README.md (--gpu-type NVIDIA_H100_80GB);
    # google/gvisor test/gpu/cos_gpu_compatibility_test.go (NVIDIA_TESLA_V100, _P100, _P4).
    assert [cos_gpu_type(a) for a in ("h100-80gb", "v100", "p100", "p4")] == [
        "NVIDIA_H100_80GB",
        "NVIDIA_TESLA_V100",
        "NVIDIA_TESLA_P100",
        "NVIDIA_TESLA_P4",
    ]
