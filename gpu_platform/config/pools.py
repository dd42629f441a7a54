"""GPU pools: what one pool of GPU nodes is, on every cloud, and how its GPUs are shared."""

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from gpu_platform.config.cloud_options import EksPoolOptions, GkePoolOptions
from gpu_platform.config.fields import (
    AcceleratorName,
    LabelKey,
    LabelValue,
    MigProfile,
    Model,
    Platform,
    PoolName,
)

GPU_TAINT_KEY = "nvidia.com/gpu"
"""The taint the platform puts on every GPU node."""
DRA_TAINT_KEY = "gpu-platform.io/allocation"
"""The taint the platform puts on every node of a DRA pool (`allocation: dra`)."""

# --- GPU sharing ---------------------------------------------------------------------------


class ExclusiveSharing(Model):
    """One container owns each GPU."""

    mode: Literal["exclusive"] = "exclusive"
    """`exclusive`."""


class TimeSlicingSharing(Model):
    """`replicas` containers take turns on each GPU, with no memory isolation between them."""

    mode: Literal["time-slicing"]
    """`time-slicing`."""
    replicas: int = Field(ge=2, le=64)
    """Containers per GPU; each node advertises GPUs x replicas `nvidia.com/gpu`. At most 48 on
    GKE, whose own device plugin shares the GPUs there."""


class MpsSharing(Model):
    """`replicas` containers share each GPU through CUDA MPS, with a memory limit each."""

    mode: Literal["mps"]
    """`mps`."""
    # CUDA MPS serves at most 48 clients per GPU on Volta and newer.
    replicas: int = Field(ge=2, le=48)
    """Containers per GPU, each with an equal share of its memory."""


class MigSharing(Model):
    """Each GPU is partitioned into hardware-isolated MIG instances by the MIG manager."""

    mode: Literal["mig"]
    """`mig`."""
    strategy: Literal["single", "mixed"] = "mixed"
    """`mixed`, which advertises slices as `nvidia.com/mig-<slice>`. `single` is refused: it
    advertises slices as `nvidia.com/gpu`, the name a new node's whole GPUs carry until the MIG
    manager has partitioned them, so a pod can get a whole GPU (gpu-operator#2670)."""
    profile: MigProfile
    """A uniform MIG manager profile such as `all-1g.10gb`."""


Sharing = Annotated[
    ExclusiveSharing | TimeSlicingSharing | MpsSharing | MigSharing,
    Field(discriminator="mode"),
]
SHARING_MODES = ("exclusive", "time-slicing", "mps", "mig")


def gke_shares(platform: Platform, sharing: Sharing) -> bool:
    """Whether GKE's own device plugin shares the pool's GPUs: on Container-Optimized OS, every
    pool that is not exclusive (`gpu_platform.node_identity.sharer_for` says why). It advertises
    replicas and MIG partitions alike as `nvidia.com/gpu`."""
    return platform is Platform.GKE_COS and not isinstance(sharing, ExclusiveSharing)


# --- GPU pools -----------------------------------------------------------------------------


class TaintSpec(Model):
    """An extra Kubernetes taint, spelled as Kubernetes spells it."""

    key: LabelKey
    value: LabelValue = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
    """Kubernetes spelling; each cloud component translates it."""


ValidationCheck = Literal[
    "gpu-count", "driver", "ecc", "memory", "pcie", "nvlink", "dcgm-diag", "nccl-bandwidth", "efa"
]
"""A check of the node validator (gpu_platform/kubernetes/node_validation/validate.py `CHECKS`)."""


class PoolValidation(Model):
    """How each new node of the pool proves itself whole before work lands on it
    (docs/node-validation.md)."""

    enabled: bool = True
    """Every new node joins with the validation taint, and only a node whose validation passed
    takes the pool's GPU pods. Off, a node takes them as soon as its device plugin advertises
    GPUs, however broken it joined."""
    dcgm_diag_level: Literal[1, 2] = 1
    """The DCGM diagnostic's level: 1 takes seconds; 2 about two minutes more per node, and
    finds faults (PCIe, memory bandwidth) that level 1 does not."""
    skip_checks: list[ValidationCheck] = Field(default_factory=list)
    """Checks not to run on this pool's nodes: `gpu-count`, `driver`, `ecc`, `memory`, `pcie`,
    `nvlink`, `dcgm-diag`, `nccl-bandwidth`, `efa`."""
    expected_bus_bandwidth_gbps: float | None = Field(default=None, gt=0)
    """The all-reduce bus bandwidth in GB/s (nccl-tests' `busbw`) a whole node of the pool's
    type reaches across its GPUs: set, the NCCL check runs on the pool's nodes of more than one
    GPU. Unset, it does not: neither NVIDIA nor the clouds publish such a figure for any GPU
    model, so there is no default to hold a node to (docs/node-validation.md). The test's image
    is built on CUDA 12.8: the pool's driver must be of branch 570 or later."""
    bus_bandwidth_share: float = Field(default=0.8, gt=0, le=1)
    """The share of `expectedBusBandwidthGbps` a multi-GPU node must reach in the NCCL check."""
    replacements_per_hour: int | None = Field(default=None, ge=0)
    """How many of the pool's nodes that failed validation may be replaced in any hour: the
    failed Node is deleted, and Karpenter terminates its instance and launches another. Beyond
    it a failed node stays, tainted, until someone looks (a bad release must not churn the
    fleet); 0 never replaces. Karpenter pools only (`provisioner: karpenter`), where it is 2
    unless set: nothing terminates a node group's or GKE node pool's instance for a deleted
    Node (docs/node-validation.md)."""

    def runs_nccl_test(self, gpus: int) -> bool:
        """Whether a node of `gpus` GPUs runs the NCCL all-reduce: validated, more than one GPU,
        an expected bandwidth to hold it to, and `nccl-bandwidth` not skipped."""
        return (
            self.enabled
            and gpus > 1
            and self.expected_bus_bandwidth_gbps is not None
            and "nccl-bandwidth" not in self.skip_checks
        )


class GpuPoolSpec(Model):
    """One pool of GPU nodes, described once for every cloud."""

    name: PoolName
    """Names the pool's node group or node pool and its `gpu-platform.io/pool` node label."""
    instance_types: list[Annotated[str, StringConstraints(min_length=1)]] = Field(
        default_factory=list
    )
    """EC2 instance types, or one GCE machine type; required unless a Karpenter pool names
    `aws.instanceFamilies` or `aws.instanceCategories` instead. On managed node groups several
    EC2 types must share one shape (GPUs, vCPUs, memory, architecture): the cluster autoscaler
    plans a node group's nodes from zero as its first type. Under Karpenter they may be sizes of
    one GPU model and architecture (`g6.xlarge`, `g6.12xlarge`): Karpenter picks one per pending
    pod."""
    accelerator: AcceleratorName | None = None
    """The GPU model. Read from the machine when left out: on EKS from the instance type, on GKE
    from accelerator-optimized machine types (A2, A3, A4, G2); N1 pools must state it."""
    gpus_per_node: int | None = Field(default=None, ge=1, le=16)
    """GPUs per node, read from the machine like `accelerator` when left out."""
    min: int = Field(default=0, ge=0)
    """Nodes kept when idle. Every node above zero bills around the clock."""
    max: int = Field(ge=1, le=1000)
    """The most nodes the autoscaler may start: the pool's cost ceiling. Under Karpenter, limits
    of `max` nodes and of `max` times the GPUs and vCPUs of the pool's largest instance type,
    which a fast scale-out can pass by a node or two, and drift by its Drifted budget's nodes
    while the old ones drain (docs/karpenter.md, Limits)."""
    capacity: Literal["on-demand", "spot", "reserved", "capacity-block"] = "on-demand"
    """How the nodes are bought: `reserved` consumes EC2 on-demand capacity reservations
    (`aws.capacityReservationId` or `aws.capacityReservationResourceGroupArn`), `capacity-block`
    an EC2 Capacity Block (docs/capacity-reservations.md); GKE reservations are
    `gcp.reservation`."""
    zones: list[Annotated[str, StringConstraints(min_length=1)]] = Field(default_factory=list)
    """Zones to place nodes in, kept only where every instance type is offered. Empty means
    every zone of the cluster's node subnets (EKS) or of its region that offers the machine
    type (GKE); GKE N1 pools with attached GPUs must list theirs."""
    disk_size_gib: int = Field(default=200, ge=100, le=16384)
    """Root disk; CUDA and framework images run to tens of GiB before any model weights."""
    labels: dict[LabelKey, LabelValue] = Field(default_factory=dict)
    """Extra node labels; the platform's own (`nvidia.com/`, `gpu-platform.io/`) are reserved."""
    taints: list[TaintSpec] = Field(default_factory=list)
    """Extra taints, on top of `nvidia.com/gpu=present:NoSchedule` that every pool has."""
    sharing: Sharing = Field(default_factory=ExclusiveSharing)
    """How workloads share a GPU: `exclusive`, `time-slicing`, `mps` (EKS only) or `mig`. On
    GKE with `nodeImage: cos`, GKE's own device plugin shares `time-slicing` and `mig` pools,
    and `exclusive` pools keep the operator's; a stack may mix them, each kind of node with a
    DCGM exporter that finds its pods (docs/gpu-sharing.md)."""
    canary_of: PoolName | None = None
    """Makes this pool the canary of another pool of the same GPUs and sharing mode: a new AMI
    release (EKS), node version (GKE) or, on GKE Ubuntu, driver (`gcp.driverVersion`) goes here
    first, and the other pool may not run one newer than its canary. Its nodes carry
    `gpu-platform.io/canary-of` and are meant for pods that select the canary by its pool label
    (a smoke test, a team's canary job): the cluster autoscaler and Karpenter rank every canary
    below every other GPU pool, whatever its capacity, so that a pod that selects no canary
    starts a canary node only while no other pool it fits can grow (at its `max`, or out of
    capacity). The other pool's nodes (and, on GKE Ubuntu, its NVIDIADriver) are updated
    only after the canary's: whenever the canary's driver or what pins it changes, `pulumi up`
    first runs a gate Job on a canary node of the new release (on a validated canary, once the
    node has passed validation with the new driver; then `nvidia-smi` and the driver check, and
    `canarySoakMinutes` of `nvidia-smi` every minute), and a gate that fails stops the update
    before the other pool changes, a failed validation with the check's name
    (docs/upgrades.md). The gate is a plain pod, so a
    canary may not be on capacity that never starts a node for one: not `capacity-block` (EKS),
    nor `gcp.queuedProvisioning` (GKE, nodes only for a ProvisioningRequest), nor only the
    targeted reservation of the pool it leads, which that pool fills at its `max` (without
    `aws.onDemandFallback`; a `gcp.reservation: specific` of the same name)."""
    canary_soak_minutes: int = Field(default=15, ge=0, le=720)
    """A `canaryOf` pool: how long its gate Job keeps checking the canary's GPU, every minute,
    after its node passed validation (where the canary validates its nodes) and the driver
    check, before the pool it leads is updated. The gate's deadline allows for it on top of the
    node's start and validation."""
    allocation: Literal["device-plugin", "dra"] = "device-plugin"
    """How pods get the pool's GPUs. `device-plugin`: the GPU Operator's device plugin (or, on
    GKE COS, GKE's) advertises them as `nvidia.com/gpu`, and a pod asks for a count. `dra`:
    NVIDIA's DRA driver publishes each GPU as a device, and a pod claims GPUs of a model through
    a ResourceClaim (Kubernetes 1.34 and later; EKS with the cluster autoscaler only, `min` at
    least 1, `exclusive` sharing, no canary, smoke test or queue, and every GPU pool of the stack
    `dra` or none: docs/dra.md)."""
    validation: PoolValidation = Field(default_factory=PoolValidation)
    """How each new node proves itself before the pool's GPU pods land on it."""
    aws: EksPoolOptions = Field(default_factory=EksPoolOptions)
    """EKS-only settings."""
    gcp: GkePoolOptions = Field(default_factory=GkePoolOptions)
    """GKE-only settings."""
