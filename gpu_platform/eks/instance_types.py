"""What EC2 says about a pool's instance types: their GPUs, CPUs and where they are offered.

The GPU model, count and memory come from EC2's own instance type data (`DescribeInstanceTypes`,
which the program reads through `gpu_platform.eks.instance_lookups` and preflight through boto3),
not from a table kept here, so a new instance type works as soon as EC2 knows it. Only the GPU
*name* is translated, from EC2's spelling (`A100`) to the platform's accelerator names
(`a100-80gb`). A pool of instance families or categories takes its candidate sizes from the
platform's table of GPU instance types (`pool_instance_type_names`).
"""

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpu_platform.accelerators import ACCELERATORS
from gpu_platform.config import GpuPoolSpec, key_path
from gpu_platform.eks.max_pods import MAX_PODS
from gpu_platform.node_identity import GpuShape

# EC2's GPU names (`GpuInfo.Gpus[].Name`) -> the platform's accelerator names. The A100 comes
# in two memory sizes under one name, told apart by memory.
_AWS_GPU_NAMES: Mapping[str, str] = {
    "T4": "t4",
    # The T4G of the Graviton g5g instances is a T4 on an Arm host.
    "T4g": "t4",
    "L4": "l4",
    "A10G": "a10g",
    "L40S": "l40s",
    "V100": "v100",
    "H100": "h100-80gb",
    "H200": "h200-141gb",
    "B200": "b200",
}
_A100_80GB_MIN_MIB = 80 * 1024
# EC2 reports a GPU's memory a little below its marketed size (24 GiB A10G: 22888 MiB). A GPU
# with less than half its model's memory is a fraction of one (the g6f instances), which no
# device plugin config here can describe.
_FRACTION_OF_A_GPU = 0.5

ARCHITECTURES = ("x86_64", "arm64")

# How the provider reads an instance type's category (group 1) and generation (group 3) from its
# name; its family is the name before the `.` (`computeRequirements` and `instanceTypeScheme`,
# aws/karpenter-provider-aws pkg/providers/instancetype/types.go at v1.14.1).
INSTANCE_TYPE_SCHEME = re.compile(r"(^[a-z]+)(\-[0-9]+tb)?([0-9]+).*\.")


def instance_family(instance_type: str) -> str:
    """`g6e` of `g6e.xlarge`."""
    return instance_type.partition(".")[0]


def instance_category(instance_type: str) -> str | None:
    """`g` of `g6e.xlarge`, `gr` of `gr6.4xlarge`; None where the provider reads none."""
    scheme = INSTANCE_TYPE_SCHEME.match(instance_type)
    return scheme[1] if scheme else None


def kebab(text: str) -> str:
    """A label value from EC2's spelling, `L40S` -> `l40s` (`lowerKabobCase`, types.go)."""
    return text.lower().replace(" ", "-")


@dataclass(frozen=True)
class InstanceType:
    """One EC2 instance type, as far as a GPU pool cares."""

    name: str
    vcpus: int
    memory_mib: int
    architecture: str | None
    """`x86_64` or `arm64`; None for anything else (an EKS GPU AMI needs one of the two)."""
    gpu_manufacturer: str | None
    gpu_name: str | None
    """EC2's spelling of the GPU model (`T4`); None without GPUs."""
    gpu_count: int
    gpu_memory_mib: int
    """Memory of one GPU."""
    instance_store_gb: int = 0
    """Total size of the instance's local SSDs (NVMe on every GPU type EC2 offers), in GB."""
    efa_interfaces: int = 0
    """How many Elastic Fabric Adapter interfaces it takes, one per network card; 0 without
    EFA."""

    @property
    def accelerator(self) -> str | None:
        """The platform's name for the GPU; None if it is not an NVIDIA GPU the platform knows."""
        if self.gpu_manufacturer != "NVIDIA" or self.gpu_name is None:
            return None
        if self.gpu_name == "A100":
            return "a100-80gb" if self.gpu_memory_mib >= _A100_80GB_MIN_MIB else "a100-40gb"
        accelerator = _AWS_GPU_NAMES.get(self.gpu_name)
        if accelerator is None:
            return None
        whole_gpu_mib = ACCELERATORS[accelerator].memory_gib * 1024
        return accelerator if self.gpu_memory_mib >= whole_gpu_mib * _FRACTION_OF_A_GPU else None

    @property
    def gpu(self) -> GpuShape | None:
        accelerator = self.accelerator
        return GpuShape(accelerator, self.gpu_count, self.architecture) if accelerator else None

    def describe_gpus(self) -> str:
        """`1 x NVIDIA T4 (16384 MiB)`, for error messages."""
        if self.gpu_name is None:
            return "no GPU"
        model = f"{self.gpu_manufacturer} {self.gpu_name}"
        return f"{self.gpu_count} x {model} ({self.gpu_memory_mib} MiB)"


@dataclass(frozen=True)
class Gpus:
    """One entry of an instance type's GPU list (`GpuInfo.Gpus`)."""

    manufacturer: str
    name: str
    count: int
    memory_mib: int


def instance_type(
    name: str,
    vcpus: int,
    memory_mib: int,
    architectures: Iterable[str],
    gpus: Sequence[Gpus],
    instance_store_gb: int = 0,
    efa_interfaces: int = 0,
) -> InstanceType:
    """An instance type from EC2's description of it."""
    supported = set(architectures)
    return InstanceType(
        name=name,
        vcpus=vcpus,
        memory_mib=memory_mib,
        architecture=next((a for a in ARCHITECTURES if a in supported), None),
        gpu_manufacturer=gpus[0].manufacturer if gpus else None,
        gpu_name=gpus[0].name if gpus else None,
        # An instance type lists one entry per GPU model; none of EC2's has two models.
        gpu_count=sum(g.count for g in gpus),
        gpu_memory_mib=gpus[0].memory_mib if gpus else 0,
        instance_store_gb=instance_store_gb,
        efa_interfaces=efa_interfaces,
    )


EFA_COUNTS_EXPECTED = (
    "instance types, or families or categories of sizes, that all take the same number of EFA"
    " interfaces with aws.efa: every node of the pool launches with the same interfaces, so a"
    " larger size would run short of EFAs (list one number's sizes in instanceTypes, and make a"
    " pool for each other number); EFA interfaces: "
)
"""What an EFA pool's instance types must be, for the error that names theirs."""


def different_efa_counts(counts: Mapping[str, int]) -> str | None:
    """`p5.4xlarge 1, p5.48xlarge 32`: instance types and the EFA interfaces each takes, where
    they do not all take the same number; None where they do."""
    if len(set(counts.values())) < 2:
        return None
    return ", ".join(f"{name} {n}" for name, n in sorted(counts.items(), key=lambda c: c[::-1]))


def zones_offering_all(offered: Mapping[str, set[str]], instance_types: Iterable[str]) -> set[str]:
    """The zones where every one of `instance_types` is offered."""
    zone_sets = [offered.get(name, set()) for name in instance_types]
    return set.intersection(*zone_sets) if zone_sets else set()


def pool_instance_type_names(pool: GpuPoolSpec) -> list[str]:
    """The instance types a pool may launch: its `instanceTypes`, or, for a pool of instance
    families or categories, every GPU instance type of them the platform's table lists
    (`MAX_PODS`, every G, Gr and P type of amazon-eks-ami's instance data), of any GPU model;
    empty for a family the table has no GPU type of."""
    if pool.instance_types:
        return list(pool.instance_types)
    families = set(pool.aws.instance_families)
    categories = set(pool.aws.instance_categories)
    return sorted(
        name
        for name in MAX_PODS
        if instance_family(name) in families or instance_category(name) in categories
    )


def sizes_key(spec: GpuPoolSpec, i: int) -> tuple[str, list[str]]:
    """The key, and its value, that gives the pool's sizes: `instanceTypes`, or its instance
    families or categories."""
    if spec.aws.instance_families:
        return key_path("pools", i, "aws", "instanceFamilies"), spec.aws.instance_families
    if spec.aws.instance_categories:
        return key_path("pools", i, "aws", "instanceCategories"), spec.aws.instance_categories
    return key_path("pools", i, "instanceTypes"), spec.instance_types


def described_instance_type(name: str, described: Mapping[str, Any]) -> InstanceType:
    """An instance type from its `DescribeInstanceTypes` entry (boto3's spelling)."""
    return instance_type(
        name,
        int(described["VCpuInfo"]["DefaultVCpus"]),
        int(described["MemoryInfo"]["SizeInMiB"]),
        described["ProcessorInfo"]["SupportedArchitectures"],
        [
            Gpus(g["Manufacturer"], g["Name"], int(g["Count"]), int(g["MemoryInfo"]["SizeInMiB"]))
            for g in (described.get("GpuInfo") or {}).get("Gpus", [])
        ],
    )


def pool_sizes(pool: GpuPoolSpec, described: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The instance types the pool's nodes may be, as far as EC2 describes them (`described`,
    by name): its `instanceTypes`, or the sizes of its families or categories that have its GPU
    model."""
    if not pool.aws.flexible:
        return list(pool.instance_types)
    return [
        name
        for name in pool_instance_type_names(pool)
        if name in described
        and described_instance_type(name, described[name]).accelerator == pool.accelerator
    ]
