"""What a GPU node of a pool looks like to Kubernetes: its labels, taints and GPU resources.

Derived once from the pool's description. The cloud components put it on the nodes, the
autoscaler hints advertise it so a pool can scale up from zero, the GPU Operator's per-node
sharing configs are selected by it, and workloads are placed with it. One derivation keeps all of
them in agreement.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum

from gpu_platform.accelerators import mig_instances_per_gpu
from gpu_platform.config import (
    DRA_TAINT_KEY,
    GPU_TAINT_KEY,
    ExclusiveSharing,
    GpuPoolSpec,
    MigSharing,
    MpsSharing,
    Platform,
    Sharing,
    TimeSlicingSharing,
    gke_shares,
)
from gpu_platform.drivers import CUDA_LABEL, DRIVER_LABEL, NvidiaDriver
from gpu_platform.kubernetes.mig_startup_taint_remover import STARTUP_TAINT_KEY
from gpu_platform.kubernetes.node_validation.names import VALIDATION_TAINT
from gpu_platform.taints import Taint

GPU_RESOURCE = "nvidia.com/gpu"
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"
"""The operator's device plugin under the `mixed` strategy: `nvidia.com/mig-<slice>`."""
POOL_LABEL = "gpu-platform.io/pool"
ACCELERATOR_LABEL = "gpu-platform.io/accelerator"
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
CANARY_LABEL = "gpu-platform.io/canary-of"
# `gke` on the nodes of pools whose GPUs GKE's device plugin serves (`sharer_for`), which the
# platform's DCGM exporter for those nodes selects (gpu_platform/kubernetes/gke_dcgm_exporter.py).
GPU_SHARER_LABEL = "gpu-platform.io/gpu-sharer"
"""On a canary pool's nodes: the pool whose new versions it tries first."""
# The GPU Operator's device plugin reads its sharing config name from this node label, and the
# MIG manager its partition layout from the other one.
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
# The GPU Operator runs its device plugin only where this label is "true"
# (assets/state-device-plugin/0500_daemonset.yaml at v26.7.0, `nodeSelector`), and sets it to
# "true" only where it is missing or empty (controllers/state_manager.go, `addGPUStateLabels`):
# a DRA pool's nodes join with "false", as NVIDIA's DRA driver must not share a node with the
# device plugin (nvidia-dra-driver-gpu v25.12.0 templates/validation.yaml). The driver, toolkit
# and DCGM exporter keep their own labels.
DEVICE_PLUGIN_DEPLOY_LABEL = "nvidia.com/gpu.deploy.device-plugin"
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
# Kubernetes' well-known labels, which the kubelet sets from what the cloud tells it; `fit` and
# Karpenter's NodePools read them like any other node label.
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
ZONE_LABEL = "topology.kubernetes.io/zone"


# Every GPU node carries it, so only pods that tolerate it (GPU workloads and the operator's
# DaemonSets, whose default toleration is `nvidia.com/gpu` Exists) are scheduled there.
GPU_TAINT = Taint(key=GPU_TAINT_KEY, value="present", effect="NoSchedule")
# On every node of a pool whose MIG slices the operator's MIG manager makes, from the moment it
# joins until the partitions exist: until then the device plugin advertises its GPUs whole
# (gpu_platform/kubernetes/mig_startup_taint_remover.py says why, and removes it). The operator's
# DaemonSets tolerate it, as they do every taint of a pool (`extra_taints`); workloads do not.
MIG_STARTUP_TAINT = Taint(key=STARTUP_TAINT_KEY, value="pending", effect="NoSchedule")
# On every node of a pool whose nodes prove themselves (`validation.enabled`), from the moment it
# joins until its validation passed (docs/node-validation.md). Like the MIG one, a startup taint:
# the platform's DaemonSets tolerate it, workloads do not, and the provisioners plan with it gone.
# On every node of a DRA pool (`allocation: dra`). From Kubernetes 1.36 (DRAExtendedResource,
# Beta and on by default: kubernetes pkg/features/kube_features.go) the scheduler serves a pod
# asking for `nvidia.com/gpu` from a DRA node's devices, through a claim it creates itself, as
# the DRA driver's `gpu.nvidia.com` DeviceClass names that extended resource
# (nvidia-dra-driver-gpu v25.12.0 templates/deviceclass-gpu.yaml, `extendedResourceName`); and
# ExtendedResourceToleration lets that pod past the GPU taint. Such a pod would take a GPU no claim
# the policy pack judges describes, and in a tenant namespace be refused by its quota at bind
# time, over and over. Only what tolerates this taint lands there: the platform's DaemonSets, as
# they tolerate every taint of a pool, and the pods that claim the pool's GPUs through the
# `gpuModels` workload snippet.
DRA_TAINT = Taint(key=DRA_TAINT_KEY, value="dra", effect="NoSchedule")
PLATFORM_STARTUP_TAINTS = (MIG_STARTUP_TAINT, VALIDATION_TAINT)
"""The taints the platform puts on a new node and takes off once the node is ready: each under
the cluster autoscaler's startup-taint prefix (`gpu_platform.taints`), each a Karpenter
NodePool's `startupTaints`."""


class GpuSharer(Enum):
    """Who turns a node's GPUs into what its pods ask for."""

    OPERATOR = "operator"
    """The GPU Operator's device plugin (and MIG manager), selected by node labels."""
    GKE = "gke"
    """GKE's own device plugin, from the node pool's GPU sharing or partition settings."""


# The GPU Operator runs its DCGM exporter only where this label is "true", and sets it to "true"
# where it is missing (gpu-operator v26.7.0, 0800_daemonset.yaml and addGPUStateLabels).
EXPORTER_DEPLOY_LABEL = "nvidia.com/gpu.deploy.dcgm-exporter"
GKE_EXPORTER_NODES = {EXPORTER_DEPLOY_LABEL: "false", GPU_SHARER_LABEL: GpuSharer.GKE.value}
"""On the nodes of GKE-shared pools: the operator's exporter stays off, the platform's own
(gpu_platform/kubernetes/gke_dcgm_exporter.py) runs."""


def sharer_for(platform: Platform, sharing: Sharing) -> GpuSharer:
    """GKE shares the GPUs of a shared or partitioned pool on Container-Optimized OS.

    GKE's autoscaler plans a pool from the node pool's own GPU settings, so it counts only the
    replicas and partitions GKE makes itself (`gpu_sharing_config`, `gpu_partition_size`); with
    the operator's device plugin it plans with whole GPUs, and a MIG pool could never scale up
    from zero. GKE's device plugin reads those settings from the node (`/etc/nvidia/
    gpu_config.json`), and Google's COS driver installer creates the partitions in its
    `partition-gpus` init container before the plugin advertises them (container-engine-
    accelerators `partition_gpu/`, `pkg/gpu/nvidia/mig/mig.go`). On Ubuntu the operator builds
    the driver and nothing of GKE's shares it: config validation refuses shared pools there.
    """
    return GpuSharer.GKE if gke_shares(platform, sharing) else GpuSharer.OPERATOR


@dataclass(frozen=True)
class GpuShape:
    """The GPUs on one node: which model and how many, and the node's CPU architecture where the
    cloud's data gives it (EC2's `SupportedArchitectures`); a shape is its GPUs, whatever the
    host."""

    accelerator: str
    count: int
    architecture: str | None = field(default=None, compare=False)


@dataclass(frozen=True)
class NodeIdentity:
    """Labels, taints and extended resources of every node in a pool."""

    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    """The taints the platform declares on the pool."""
    resources: Mapping[str, int] = field(default_factory=dict)
    """Extended resources one node advertises once the device plugin runs."""
    cloud_taints: tuple[Taint, ...] = ()
    """Taints the cloud puts on the nodes itself (GKE's queued-provisioning taint): tolerated
    like the others, never declared on the pool."""

    @property
    def startup_taints(self) -> tuple[Taint, ...]:
        """The taints its nodes join with and lose once they are ready (`PLATFORM_STARTUP_TAINTS`):
        what no workload tolerates, and what a provisioner plans a new node without."""
        return tuple(t for t in self.taints if t in PLATFORM_STARTUP_TAINTS)

    @property
    def lasting_taints(self) -> tuple[Taint, ...]:
        """The taints its nodes keep: the pool's own and the GPU taint."""
        return tuple(t for t in self.taints if t not in PLATFORM_STARTUP_TAINTS)

    @property
    def node_taints(self) -> tuple[Taint, ...]:
        """Every taint the pool's nodes carry: what pods and DaemonSets must tolerate there."""
        return (*self.taints, *self.cloud_taints)


def sharing_config_name(sharing: Sharing) -> str:
    """The name of the device plugin config a pool with this sharing mode selects."""
    match sharing:
        case TimeSlicingSharing(replicas=replicas) | MpsSharing(replicas=replicas):
            return f"{sharing.mode}-{replicas}"
        case MigSharing(strategy=strategy):
            return f"mig-{strategy}"
        case _:
            return "exclusive"


def advertised_resources(
    sharing: Sharing, gpu: GpuShape, sharer: GpuSharer = GpuSharer.OPERATOR
) -> dict[str, int]:
    """What the device plugin on one node will advertise, for the scheduler and autoscaler."""
    match sharing:
        case TimeSlicingSharing(replicas=replicas) | MpsSharing(replicas=replicas):
            return {GPU_RESOURCE: gpu.count * replicas}
        case MigSharing(profile=profile) if sharer is GpuSharer.GKE:
            # GKE's device plugin advertises each partition as one `nvidia.com/gpu`
            # (`pkg/gpu/nvidia/manager.go`, ListGPUPartitionDevices).
            return {GPU_RESOURCE: gpu.count * mig_instances_per_gpu(gpu.accelerator, profile)}
        case MigSharing(profile=profile):
            # `mixed`: once every GPU is partitioned, none is left to advertise whole, and the
            # device plugin reports `nvidia.com/gpu: 0`. Saying so keeps the autoscaler from
            # planning a node at zero with the machine's physical GPUs.
            slice_name = profile.removeprefix("all-")
            per_gpu = mig_instances_per_gpu(gpu.accelerator, profile)
            return {GPU_RESOURCE: 0, MIG_RESOURCE_PREFIX + slice_name: gpu.count * per_gpu}
        case ExclusiveSharing():
            return {GPU_RESOURCE: gpu.count}
    raise AssertionError(f"unhandled sharing mode {sharing!r}")


def node_identity_for(
    pool: GpuPoolSpec,
    gpu: GpuShape,
    sharer: GpuSharer = GpuSharer.OPERATOR,
    driver: NvidiaDriver | None = None,
    cloud_taints: tuple[Taint, ...] = (),
) -> NodeIdentity:
    """The identity every node of `pool` has, extra labels and taints from config included."""
    labels = {
        **pool.labels,
        POOL_LABEL: pool.name,
        ACCELERATOR_LABEL: gpu.accelerator,
        GPU_PRESENT_LABEL: "true",
    }
    # On the node group's own labels rather than left to the operator's feature discovery, so
    # that a pool scaled to zero shows them too: the policy pack reads them from the node group.
    if driver is not None:
        labels[DRIVER_LABEL] = driver.version
        labels[CUDA_LABEL] = driver.cuda
    if pool.canary_of is not None:
        labels[CANARY_LABEL] = pool.canary_of
    if pool.allocation == "dra":
        labels[DEVICE_PLUGIN_DEPLOY_LABEL] = "false"
    elif sharer is GpuSharer.OPERATOR:
        labels[DEVICE_PLUGIN_CONFIG_LABEL] = sharing_config_name(pool.sharing)
        if isinstance(pool.sharing, MigSharing):
            labels[MIG_CONFIG_LABEL] = pool.sharing.profile
    extra_taints = tuple(Taint(t.key, t.value, t.effect) for t in pool.taints)
    if pool.allocation == "dra":
        extra_taints += (DRA_TAINT,)
    if sharer is GpuSharer.OPERATOR and isinstance(pool.sharing, MigSharing):
        extra_taints += (MIG_STARTUP_TAINT,)
    if pool.validation.enabled:
        extra_taints += (VALIDATION_TAINT,)
    return NodeIdentity(
        labels=labels,
        taints=(GPU_TAINT, *extra_taints),
        # A DRA pool's GPUs are devices in ResourceSlices: its nodes advertise no
        # `nvidia.com/gpu`. Said as 0, as a MIG pool's, since the cluster autoscaler's AWS
        # template node otherwise takes the instance type's physical GPUs as `nvidia.com/gpu`
        # before the group's resource tags override it (kubernetes/autoscaler
        # cluster-autoscaler-1.35.2 cloudprovider/aws/aws_manager.go `buildNodeFromTemplate`,
        # lines 285 and 290-294, as at 1.36.1; lines 280 and 285-289 at 1.33.6 and 1.34.5), and
        # would plan a node for a pod counting GPUs that no DRA node can take. A pod claiming a
        # GPU is planned on a running node of the group, its ResourceSlices included, which the
        # tag does not change; a template from the tags carries no devices either way
        # (docs/dra.md).
        resources={GPU_RESOURCE: 0}
        if pool.allocation == "dra"
        else advertised_resources(pool.sharing, gpu, sharer),
        cloud_taints=cloud_taints,
    )


@dataclass(frozen=True)
class ResolvedPool:
    """A pool whose GPUs are known: its description, position in config, GPUs and identity."""

    spec: GpuPoolSpec
    index: int
    """Position in `gpu-platform:pools`, for error messages that name the key."""
    gpu: GpuShape
    identity: NodeIdentity
    sharer: GpuSharer = GpuSharer.OPERATOR
    driver: NvidiaDriver | None = None
    """The NVIDIA driver its nodes run; every pool of a stack has one, and only tests of other
    concerns leave it out."""


def resolve_pool(
    spec: GpuPoolSpec,
    index: int,
    gpu: GpuShape,
    sharer: GpuSharer = GpuSharer.OPERATOR,
    driver: NvidiaDriver | None = None,
    cloud_taints: tuple[Taint, ...] = (),
) -> ResolvedPool:
    identity = node_identity_for(spec, gpu, sharer, driver, cloud_taints)
    return ResolvedPool(spec, index, gpu, identity, sharer, driver)


def pool_software(pool: ResolvedPool) -> dict[str, str | None]:
    """What the stack exports and the plan shows of a pool's driver: its version, the newest
    CUDA its pods may use, what pins it, and the pool it is the canary of."""
    driver = pool.driver
    return {
        "nvidiaDriver": driver.version if driver else None,
        "cuda": driver.cuda if driver else None,
        "pinnedBy": driver.source if driver else None,
        "canaryOf": pool.spec.canary_of,
    }
