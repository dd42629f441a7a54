"""GPU shape from EC2's instance type data (as moto ships it): EC2's GPU names mapped to the
platform's accelerators, fractional and non-NVIDIA GPUs refused; zones offering every type."""

import pytest

from gpu_platform.eks.instance_types import Gpus, InstanceType, instance_type, zones_offering_all
from gpu_platform.node_identity import GpuShape
from gpu_platform.offline.stand_ins.aws import ec2_instance_types


def described(name: str) -> InstanceType:
    """An instance type as EC2's data describes it."""
    data = ec2_instance_types()[name]
    gpus = (data.get("GpuInfo") or {}).get("Gpus", [])
    return instance_type(
        name,
        data["VCpuInfo"]["DefaultVCpus"],
        data["MemoryInfo"]["SizeInMiB"],
        data["ProcessorInfo"]["SupportedArchitectures"],
        [
            Gpus(g["Manufacturer"], g["Name"], g["Count"], g["MemoryInfo"]["SizeInMiB"])
            for g in gpus
        ],
    )


@pytest.mark.parametrize(
    ("name", "gpu", "architecture"),
    [
        ("g4dn.xlarge", GpuShape("t4", 1), "x86_64"),
        ("g4dn.12xlarge", GpuShape("t4", 4), "x86_64"),
        ("g5g.xlarge", GpuShape("t4", 1), "arm64"),
        ("g5.xlarge", GpuShape("a10g", 1), "x86_64"),
        ("g6.xlarge", GpuShape("l4", 1), "x86_64"),
        ("g6e.xlarge", GpuShape("l40s", 1), "x86_64"),
        ("p3dn.24xlarge", GpuShape("v100", 8), "x86_64"),
        ("p4d.24xlarge", GpuShape("a100-40gb", 8), "x86_64"),
        ("p4de.24xlarge", GpuShape("a100-80gb", 8), "x86_64"),
        ("p5.48xlarge", GpuShape("h100-80gb", 8), "x86_64"),
        ("p6-b200.48xlarge", GpuShape("b200", 8), "x86_64"),
    ],
)
def test_gpu_comes_from_ec2s_data(name: str, gpu: GpuShape, architecture: str) -> None:
    found = described(name)

    assert (found.gpu, found.architecture) == (gpu, architecture)


def test_an_arm_hosts_gpus_carry_its_architecture() -> None:
    # gpuModels keeps the T4s of g5g apart from those of g4dn (gpu_pod.model_name).
    shape = described("g5g.xlarge").gpu

    assert shape is not None and shape.architecture == "arm64"


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("m5.large", "no GPU"),
        ("g6f.xlarge", "a fraction of an L4"),
        ("inf2.xlarge", "no GPU (Inferentia is not one)"),
    ],
)
def test_instance_types_without_a_whole_known_nvidia_gpu_have_no_gpu_shape(
    name: str, why: str
) -> None:
    assert described(name).gpu is None, why


def test_gpus_of_another_manufacturer_are_not_taken_for_nvidia_ones() -> None:
    radeon = InstanceType("g4ad.xlarge", 4, 16384, "x86_64", "AMD", "Radeon Pro V520", 1, 8192)

    assert radeon.gpu is None
    assert radeon.describe_gpus() == "1 x AMD Radeon Pro V520 (8192 MiB)"


def test_zones_offering_all_is_the_intersection() -> None:
    offered = {"a": {"z1", "z2", "z3"}, "b": {"z2", "z3"}, "c": {"z3", "z4"}}

    assert zones_offering_all(offered, ["a", "b"]) == {"z2", "z3"}
    assert zones_offering_all(offered, ["a", "b", "c"]) == {"z3"}
    assert zones_offering_all(offered, ["b", "unknown"]) == set()
