"""Which NVIDIA GPUs a Compute Engine machine type has, and how many.

Accelerator-optimized machine types come with a fixed GPU model and count: the A2, A3 and A4
series name the count in the machine type (`a3-highgpu-4g` has four H100s), the G2 series does
not (`g2-standard-24` has two L4s, `g2-standard-32` one). N1 machine types take T4, V100, P4 or
P100 GPUs attached to them, as many as the machine's vCPUs allow. No other machine type takes a
GPU. Sources: Compute Engine's "GPU machine types" (https://cloud.google.com/compute/docs/gpus)
and "Accelerator-optimized machine family"
(https://cloud.google.com/compute/docs/accelerator-optimized-machines).

A pool on an accelerator-optimized machine type may leave out its accelerator and GPU count
(they are read from here) or state them (they must agree); an N1 pool states both.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass

from gpu_platform.config import ConfigError, ConfigProblem, GpuPoolSpec, key_path
from gpu_platform.node_identity import GpuShape


@dataclass(frozen=True)
class FixedGpuSeries:
    """Machine types that come with their GPUs."""

    name: str
    accelerator: str
    gpus: Mapping[str, int]
    """Machine type -> GPUs it comes with."""


def _named_counts(prefix: str, *counts: int) -> dict[str, int]:
    return {f"{prefix}-{count}g": count for count in counts}


FIXED_GPU_SERIES: tuple[FixedGpuSeries, ...] = (
    FixedGpuSeries(
        "A2 Standard",
        "a100-40gb",
        {**_named_counts("a2-highgpu", 1, 2, 4, 8), **_named_counts("a2-megagpu", 16)},
    ),
    FixedGpuSeries("A2 Ultra", "a100-80gb", _named_counts("a2-ultragpu", 1, 2, 4, 8)),
    FixedGpuSeries(
        "A3 High and A3 Edge",
        "h100-80gb",
        {**_named_counts("a3-highgpu", 1, 2, 4, 8), **_named_counts("a3-edgegpu", 8)},
    ),
    FixedGpuSeries("A3 Mega", "h100-mega-80gb", _named_counts("a3-megagpu", 8)),
    FixedGpuSeries("A3 Ultra", "h200-141gb", _named_counts("a3-ultragpu", 8)),
    FixedGpuSeries("A4", "b200", _named_counts("a4-highgpu", 8)),
    FixedGpuSeries(
        "G2",
        "l4",
        {
            "g2-standard-4": 1,
            "g2-standard-8": 1,
            "g2-standard-12": 1,
            "g2-standard-16": 1,
            "g2-standard-24": 2,
            "g2-standard-32": 1,
            "g2-standard-48": 4,
            "g2-standard-96": 8,
        },
    ),
)

# GPU count -> the most vCPUs an N1 machine type may have with that many GPUs attached. The
# memory limits follow from these for the predefined N1 types (6.5 GB per vCPU at most).
N1_GPU_VCPU_LIMITS: Mapping[str, Mapping[int, int]] = {
    "t4": {1: 48, 2: 48, 4: 96},
    "p4": {1: 24, 2: 48, 4: 96},
    "p100": {1: 16, 2: 32, 4: 96},
    "v100": {1: 12, 2: 24, 4: 48, 8: 96},
}
_N1_MACHINE_TYPE = re.compile(r"^n1-(standard|highmem|highcpu)-(\d+)$")

# Boot disk types by machine type prefix, the default first (Compute Engine's disk support per
# machine series, https://cloud.google.com/compute/docs/disks/hyperdisks): A3 Ultra and A4
# take only Hyperdisk, the other A3s both, N1, A2 and G2 only Persistent Disk.
_BOOT_DISK_TYPES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("a3-ultragpu-", ("hyperdisk-balanced",)),
    ("a4-highgpu-", ("hyperdisk-balanced",)),
    ("a3-", ("pd-balanced", "pd-ssd", "hyperdisk-balanced")),
    ("", ("pd-balanced", "pd-ssd")),
)


# GiB of memory per vCPU of the machine types whose size their name gives: N1's predefined
# types (Compute Engine's "General-purpose machine family", N1 series: 3.75, 6.5 and 0.9 GB a
# vCPU, Compute Engine's GB being 1024 MiB) and G2 (4 GB a vCPU, "GPU machine types").
_MEMORY_PER_VCPU = {"n1-standard": 3.75, "n1-highmem": 6.5, "n1-highcpu": 0.9, "g2-standard": 4}
_SIZED_MACHINE_TYPE = re.compile(r"^(n1-standard|n1-highmem|n1-highcpu|g2-standard)-(\d+)$")


# vCPUs and GB (1024 MiB) of the A2 and A3 machine types, whose name gives only their GPUs:
# Compute Engine's machine type list (`gcloud compute machine-types list`, CPUS and MEMORY_GB,
# as Cyclenerd/google-cloud-pricing-cost-calculator tools/machinetypes.csv records it; the same
# figures as "Accelerator-optimized machine family"). A4's are not held.
_FIXED_SIZES: Mapping[str, tuple[int, int]] = {
    "a2-highgpu-1g": (12, 85),
    "a2-highgpu-2g": (24, 170),
    "a2-highgpu-4g": (48, 340),
    "a2-highgpu-8g": (96, 680),
    "a2-megagpu-16g": (96, 1360),
    "a2-ultragpu-1g": (12, 170),
    "a2-ultragpu-2g": (24, 340),
    "a2-ultragpu-4g": (48, 680),
    "a2-ultragpu-8g": (96, 1360),
    "a3-highgpu-1g": (26, 234),
    "a3-highgpu-2g": (52, 468),
    "a3-highgpu-4g": (104, 936),
    "a3-highgpu-8g": (208, 1872),
    "a3-edgegpu-8g": (208, 1872),
    "a3-megagpu-8g": (208, 1872),
    "a3-ultragpu-8g": (224, 2952),
}


def machine_size(machine_type: str) -> tuple[int, int] | None:
    """vCPUs and MiB of memory of an N1, G2, A2 or A3 machine type; None for the others, whose
    size the platform does not hold."""
    if machine_type in _FIXED_SIZES:
        vcpus, gb = _FIXED_SIZES[machine_type]
        return vcpus, gb * 1024
    found = _SIZED_MACHINE_TYPE.match(machine_type)
    if found is None:
        return None
    vcpus = int(found[2])
    return vcpus, int(vcpus * _MEMORY_PER_VCPU[found[1]] * 1024)


def fixed_series_of(machine_type: str) -> FixedGpuSeries | None:
    return next((s for s in FIXED_GPU_SERIES if machine_type in s.gpus), None)


def is_n1(machine_type: str) -> bool:
    return _N1_MACHINE_TYPE.match(machine_type) is not None


def boot_disk_types(machine_type: str) -> tuple[str, ...]:
    """The boot disk types a GPU machine type takes, its default first."""
    return next(types for prefix, types in _BOOT_DISK_TYPES if machine_type.startswith(prefix))


def gpu_shape(pool: GpuPoolSpec, index: int) -> GpuShape:
    """The GPUs on each node of the pool; ConfigError naming the pool's key when the machine
    type has no GPU or disagrees with the accelerator or count the pool states."""
    machine_type = pool.instance_types[0]
    series = fixed_series_of(machine_type)
    if series is not None:
        return _fixed_shape(pool, index, series)
    match = _N1_MACHINE_TYPE.match(machine_type)
    if match is not None:
        return _attached_shape(pool, index, vcpus=int(match.group(2)))
    raise ConfigError(
        [
            ConfigProblem(
                key_path("pools", index, "instanceTypes", 0),
                machine_type,
                "a machine type with NVIDIA GPUs: an accelerator-optimized one ("
                + ", ".join(f"{s.name} such as {next(iter(s.gpus))}" for s in FIXED_GPU_SERIES)
                + ") or an N1 one (n1-standard-N, n1-highmem-N, n1-highcpu-N) with "
                + ", ".join(N1_GPU_VCPU_LIMITS)
                + " GPUs attached",
            )
        ]
    )


def _fixed_shape(pool: GpuPoolSpec, index: int, series: FixedGpuSeries) -> GpuShape:
    machine_type = pool.instance_types[0]
    shape = GpuShape(series.accelerator, series.gpus[machine_type])
    comes_with = f"{machine_type} comes with {shape.count} x {shape.accelerator}"
    problems = []
    if pool.accelerator not in (None, shape.accelerator):
        problems.append(
            ConfigProblem(
                key_path("pools", index, "accelerator"),
                pool.accelerator,
                f"{shape.accelerator} or no value ({comes_with}); "
                f"{_where_offered(pool.accelerator)}",
            )
        )
    if pool.gpus_per_node not in (None, shape.count):
        problems.append(
            ConfigProblem(
                key_path("pools", index, "gpusPerNode"),
                pool.gpus_per_node,
                f"{shape.count} or no value ({comes_with})",
            )
        )
    if problems:
        raise ConfigError(problems)
    return shape


def _attached_shape(pool: GpuPoolSpec, index: int, vcpus: int) -> GpuShape:
    machine_type = pool.instance_types[0]
    accelerator = pool.accelerator
    if accelerator not in N1_GPU_VCPU_LIMITS:
        expected = f"one of {', '.join(N1_GPU_VCPU_LIMITS)} (the GPUs attached to {machine_type})"
        if accelerator is not None:
            expected += f"; {_where_offered(accelerator)}"
        raise ConfigError(
            [ConfigProblem(key_path("pools", index, "accelerator"), accelerator, expected)]
        )
    assert accelerator is not None
    allowed = [count for count, limit in N1_GPU_VCPU_LIMITS[accelerator].items() if vcpus <= limit]
    if pool.gpus_per_node not in allowed:
        raise ConfigError(
            [
                ConfigProblem(
                    key_path("pools", index, "gpusPerNode"),
                    pool.gpus_per_node,
                    f"one of {allowed} for {accelerator} on {machine_type} ({vcpus} vCPUs)"
                    if allowed
                    else f"a smaller N1 machine type: {machine_type} has more vCPUs than"
                    f" {accelerator} GPUs can be attached to",
                )
            ]
        )
    assert pool.gpus_per_node is not None
    return GpuShape(accelerator, pool.gpus_per_node)


def _where_offered(accelerator: str) -> str:
    if accelerator in N1_GPU_VCPU_LIMITS:
        return f"{accelerator} is attached to N1 machine types"
    series = [s for s in FIXED_GPU_SERIES if s.accelerator == accelerator]
    if series:
        examples = ", ".join(f"{s.name} such as {next(iter(s.gpus))}" for s in series)
        return f"{accelerator} comes with {examples}"
    return f"GKE does not offer {accelerator}"
