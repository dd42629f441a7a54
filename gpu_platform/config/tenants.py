"""Tenant namespaces: where teams run their GPU workloads, and what each one may use."""

from typing import Annotated, Literal

from pydantic import Field

from gpu_platform.config.fields import DnsLabel, MigSlice, Model, PoolName
from gpu_platform.config.pools import ExclusiveSharing, MigSharing, Sharing
from gpu_platform.config.queues import TenantQueueSpec
from gpu_platform.kubernetes.idle_gpu_reaper import MIN_IDLE_MINUTES

SYSTEM_NAMESPACES = ("kube-system", "kube-public", "kube-node-lease", "default")
"""Kubernetes' own namespaces, which no tenant may take."""

QuotaSetting = Literal["gpuQuota", "sharedGpuQuota", "migQuota"]


def quota_setting(sharing: Sharing, shared_by_gke: bool) -> QuotaSetting:
    """The namespace setting that caps what pods ask of a pool shared this way: whole GPUs of an
    exclusive pool; replicas of a time-sliced or MPS pool and the partitions GKE makes, which
    are all advertised as `nvidia.com/gpu` (where the stack has exclusive pools too, `gpuQuota`
    caps them as well: see `TenantNamespaceSpec.gpu_quota`); the slices the operator's MIG
    manager makes, each profile its own `nvidia.com/mig-<slice>`."""
    if isinstance(sharing, ExclusiveSharing):
        return "gpuQuota"
    if isinstance(sharing, MigSharing) and not shared_by_gke:
        return "migQuota"
    return "sharedGpuQuota"


class TenantNamespaceSpec(Model):
    """A namespace where teams run GPU workloads."""

    name: DnsLabel
    """A namespace of the team's own: none of Kubernetes' (`kube-system`, `kube-public`,
    `kube-node-lease`, `default`) and none the operator, monitoring or autoscaler run in."""
    gpu_quota: int = Field(default=0, ge=0, le=10000)
    """Whole GPUs of exclusive pools the namespace's pods may request at once
    (`requests.nvidia.com/gpu`). Kubernetes names shared GPUs' replicas and GKE's MIG partitions
    `nvidia.com/gpu` too, and cannot tell them from whole GPUs: in a stack with exclusive and
    shared pools this caps both, each replica counted as a GPU, so that pods never take more
    whole GPUs than it allows. Where pools allocate through DRA (`allocation: dra`), it caps the
    GPUs the namespace's ResourceClaims take of each of their models too, each model on its own
    (docs/dra.md)."""
    shared_gpu_quota: int = Field(default=0, ge=0, le=10000)
    """Replicas of time-sliced and MPS pools' GPUs, and MIG partitions GKE makes, the namespace's
    pods may request at once: each is one `nvidia.com/gpu` to Kubernetes. In a stack with
    exclusive pools as well, `gpuQuota` caps whole GPUs and replicas together, and this must be
    left out: replicas cannot be capped apart from whole GPUs there."""
    mig_quota: dict[MigSlice, Annotated[int, Field(ge=0, le=100000)]] = Field(default_factory=dict)
    """MIG slices of each profile the namespace's pods may request at once, by slice
    (`1g.10gb: 56` caps `requests.nvidia.com/mig-1g.10gb`, `1g.10gb.me` the profile with media
    engines), on pools whose slices the operator's MIG manager makes (EKS). Every slice of every
    GPU the platform knows that this leaves out is capped at 0, whatever the stack's pools;
    GKE's partitions are `nvidia.com/gpu`, which `sharedGpuQuota` caps (`gpuQuota` where the
    stack has exclusive pools too)."""
    pod_security: Literal["restricted", "baseline"] = "restricted"
    """Pod Security level enforced, audited and warned about; `privileged` is reserved for the
    GPU Operator. `baseline` is for images that cannot run as a non-root user."""
    smoke_test_pool: PoolName | None = None
    """Run a `nvidia-smi` Job on this pool after deployment to prove the GPU path works; when
    the Job fails, so does `pulumi up`."""
    smoke_test_deadline_seconds: int = Field(default=900, ge=120, le=3600)
    """How long the smoke test may take, scaling its pool up from zero and the GPU Operator
    preparing the new node included; past it the Job fails, and `pulumi up` with it. On a pool
    whose nodes are validated (`pools[].validation`) the deadline grows by the longest a new
    node's validation may take, every check at its timeout (docs/node-validation.md). On GKE
    Ubuntu the smoke test also waits for its pool's new driver, and the deadline grows by the
    longest the operator may keep a node on the old one (`operator.driverUpgradeJobWaitMinutes`
    and 5 minutes) and three times 11 minutes for the node's relabelling and the Job's backoff
    between retries."""
    # The enforcer runs every 10 minutes and wants readings from the first and the last 10
    # minutes of the window (idle_gpu_reaper.py): a shorter limit would hardly be a window, and
    # a run's wait could nearly double it.
    gpu_idle_minutes: int | None = Field(default=None, ge=MIN_IDLE_MINUTES, le=10080)
    """Opt in to ending idle GPU pods: the longest a GPU pod here may hold GPUs that do no work
    (below `monitoring.idleGpuUtilizationPercent`), in minutes. A pod may ask for less with the
    annotation `gpu-platform.io/max-idle-minutes`. Past it, the pod is warned or ended
    (`gpuIdleAction`). Needs `monitoring.prometheusUrl` or `installPrometheusStack`, whose
    Prometheus evaluates the platform's recording rules (docs/idle-gpu-pods.md)."""
    gpu_idle_action: Literal["warn", "end"] = "warn"
    """What happens to a GPU pod idle past `gpuIdleMinutes`: `warn` only marks it, with the
    annotation `gpu-platform.io/idle-gpu` and a Warning Event, so that a namespace sees what
    would end before anything does; `end` deletes a bare pod and scales a Deployment or
    StatefulSet to zero (Jobs are left to end on their own)."""
    queue: TenantQueueSpec = Field(default_factory=TenantQueueSpec)
    """With `queues.enabled`: whether the namespace has a queue, and how much of its GPU quota
    the queue borrows from the other tenants' and lends to them (docs/queues.md)."""
