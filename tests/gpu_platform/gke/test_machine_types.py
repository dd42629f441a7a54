from typing import Any

import pytest

from gpu_platform.accelerators import ACCELERATORS
from gpu_platform.config import ConfigError, GpuPoolSpec
from gpu_platform.gke.machine_types import (
    FIXED_GPU_SERIES,
    N1_GPU_VCPU_LIMITS,
    boot_disk_types,
    gpu_shape,
    machine_size,
)
from gpu_platform.node_identity import GpuShape


def pool(machine_type: str, **fields: Any) -> GpuPoolSpec:
    return GpuPoolSpec.model_validate(
        {"name": "gpus", "instanceTypes": [machine_type], "max": 2, **fields}
    )


def problems(machine_type: str, index: int = 3, **fields: Any) -> dict[str, str]:
    with pytest.raises(ConfigError) as raised:
        gpu_shape(pool(machine_type, **fields), index)
    return {p.path: p.expected for p in raised.value.problems}


@pytest.mark.parametrize(
    ("machine_type", "shape"),
    [
        ("a2-highgpu-1g", GpuShape("a100-40gb", 1)),
        ("a2-highgpu-8g", GpuShape("a100-40gb", 8)),
        ("a2-megagpu-16g", GpuShape("a100-40gb", 16)),
        ("a2-ultragpu-4g", GpuShape("a100-80gb", 4)),
        ("a3-highgpu-2g", GpuShape("h100-80gb", 2)),
        ("a3-edgegpu-8g", GpuShape("h100-80gb", 8)),
        ("a3-megagpu-8g", GpuShape("h100-mega-80gb", 8)),
        ("a3-ultragpu-8g", GpuShape("h200-141gb", 8)),
        ("a4-highgpu-8g", GpuShape("b200", 8)),
        ("g2-standard-4", GpuShape("l4", 1)),
        ("g2-standard-24", GpuShape("l4", 2)),
        ("g2-standard-32", GpuShape("l4", 1)),
        ("g2-standard-48", GpuShape("l4", 4)),
        ("g2-standard-96", GpuShape("l4", 8)),
    ],
)
def test_accelerator_optimized_machine_type_gives_its_gpus_when_the_pool_leaves_them_out(
    machine_type: str, shape: GpuShape
) -> None:
    assert gpu_shape(pool(machine_type), 0) == shape


def test_accelerator_optimized_machine_type_accepts_the_gpus_it_comes_with() -> None:
    assert gpu_shape(pool("g2-standard-24", accelerator="l4", gpusPerNode=2), 0) == GpuShape(
        "l4", 2
    )


def test_a3_with_a_t4_is_refused_at_the_pools_accelerator_key() -> None:
    found = problems("a3-highgpu-8g", accelerator="t4")
    assert list(found) == ["gpu-platform:pools[3].accelerator"]
    assert "h100-80gb" in found["gpu-platform:pools[3].accelerator"]
    assert "t4 is attached to N1" in found["gpu-platform:pools[3].accelerator"]


def test_gpu_count_other_than_the_machine_types_is_refused() -> None:
    found = problems("g2-standard-24", gpusPerNode=1)
    assert found == {
        "gpu-platform:pools[3].gpusPerNode": "2 or no value (g2-standard-24 comes with 2 x l4)"
    }


def test_accelerator_of_another_series_names_where_it_is_offered() -> None:
    found = problems("a2-highgpu-1g", accelerator="l4")
    assert "l4 comes with G2 such as g2-standard-4" in found["gpu-platform:pools[3].accelerator"]


def test_accelerator_gke_does_not_offer_is_said_so() -> None:
    found = problems("g2-standard-8", accelerator="a10g")
    assert "GKE does not offer a10g" in found["gpu-platform:pools[3].accelerator"]


@pytest.mark.parametrize("machine_type", ["n2-standard-8", "e2-medium", "c3-standard-8", "a2-x"])
def test_machine_type_without_gpus_is_refused_at_the_instance_type_key(machine_type: str) -> None:
    found = problems(machine_type, accelerator="t4", gpusPerNode=1)
    assert list(found) == ["gpu-platform:pools[3].instanceTypes[0]"]
    assert "N1" in found["gpu-platform:pools[3].instanceTypes[0]"]


def test_n1_takes_the_attached_accelerator_and_count_the_pool_states() -> None:
    shape = gpu_shape(pool("n1-standard-8", accelerator="t4", gpusPerNode=2), 0)
    assert shape == GpuShape("t4", 2)


def test_n1_without_an_accelerator_is_refused() -> None:
    found = problems("n1-standard-8", gpusPerNode=1)
    assert found["gpu-platform:pools[3].accelerator"].startswith("one of t4, p4, p100, v100")


def test_n1_with_a_gpu_that_comes_only_with_g2_is_refused() -> None:
    found = problems("n1-standard-8", accelerator="l4", gpusPerNode=1)
    assert "l4 comes with G2" in found["gpu-platform:pools[3].accelerator"]


def test_n1_gpu_count_is_limited_by_the_machines_vcpus() -> None:
    # One V100 may be attached to at most 12 vCPUs; two to 24.
    found = problems("n1-standard-16", accelerator="v100", gpusPerNode=1)
    assert found == {
        "gpu-platform:pools[3].gpusPerNode": "one of [2, 4, 8] for v100 on n1-standard-16"
        " (16 vCPUs)"
    }


def test_n1_without_a_gpu_count_is_refused() -> None:
    assert "gpu-platform:pools[3].gpusPerNode" in problems("n1-standard-8", accelerator="t4")


def test_n1_count_the_gpu_does_not_come_in_is_refused() -> None:
    assert "gpu-platform:pools[3].gpusPerNode" in problems(
        "n1-standard-8", accelerator="t4", gpusPerNode=8
    )


def test_every_gpu_machine_type_has_a_gpu_model_gke_offers() -> None:
    models = {s.accelerator for s in FIXED_GPU_SERIES} | set(N1_GPU_VCPU_LIMITS)
    assert {m: ACCELERATORS[m].gke_type for m in models if not ACCELERATORS[m].gke_type} == {}


def test_machine_type_counts_are_the_counts_their_names_say() -> None:
    named = {
        machine_type: count
        for series in FIXED_GPU_SERIES
        for machine_type, count in series.gpus.items()
        if not machine_type.startswith("g2-")
    }
    assert {m: c for m, c in named.items() if not m.endswith(f"-{c}g")} == {}


@pytest.mark.parametrize(
    ("machine_type", "default", "allowed"),
    [
        ("g2-standard-8", "pd-balanced", {"pd-balanced", "pd-ssd"}),
        ("n1-standard-8", "pd-balanced", {"pd-balanced", "pd-ssd"}),
        ("a3-highgpu-8g", "pd-balanced", {"pd-balanced", "pd-ssd", "hyperdisk-balanced"}),
        ("a3-ultragpu-8g", "hyperdisk-balanced", {"hyperdisk-balanced"}),
        ("a4-highgpu-8g", "hyperdisk-balanced", {"hyperdisk-balanced"}),
    ],
)
def test_boot_disk_types_follow_the_machine_series(
    machine_type: str, default: str, allowed: set[str]
) -> None:
    types = boot_disk_types(machine_type)
    assert (types[0], set(types)) == (default, allowed)


# Every machine type a GKE pool may name whose GPUs come with it: `fit` judges a pod's CPU and
# memory on it only where its size is held. A4's (a4-highgpu-8g) is not: no stored source gives
# it (Compute Engine's "Accelerator-optimized machine family",
# https://cloud.google.com/compute/docs/accelerator-optimized-machines, has it in its A4 table,
# which the stored copies of the page do not reach). Adding it turns this case into a pass,
# which fails until the mark is removed.
@pytest.mark.parametrize(
    "machine_type",
    [
        pytest.param(
            name,
            marks=pytest.mark.xfail(strict=True, reason="A4's size has no stored source"),
        )
        if name.startswith("a4-")
        else name
        for series in FIXED_GPU_SERIES
        for name in series.gpus
    ],
)
def test_every_gke_machine_type_with_its_own_gpus_has_a_size(machine_type: str) -> None:
    assert machine_size(machine_type) is not None
