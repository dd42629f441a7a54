"""Tenant namespaces: where teams run their GPU workloads, and what each one may use."""

from typing import Literal

from pydantic import Field

from gpu_platform.config.fields import DnsLabel, Model, PoolName
from gpu_platform.kubernetes.idle_gpu_reaper import MIN_IDLE_MINUTES

SYSTEM_NAMESPACES = ("kube-system", "kube-public", "kube-node-lease", "default")
"""Kubernetes' own namespaces, which no tenant may take."""


class TenantNamespaceSpec(Model):
    """A namespace where teams run GPU workloads."""

    name: DnsLabel
    """A namespace of the team's own: none of Kubernetes' (`kube-system`, `kube-public`,
    `kube-node-lease`, `default`) and none the operator, monitoring or autoscaler run in."""
    gpu_quota: int = Field(ge=0, le=10000)
    """GPUs (or GPU slices) the namespace may request at once, for each GPU resource the pools
    advertise (`nvidia.com/gpu`, and `nvidia.com/mig-<slice>` on MIG `mixed` pools)."""
    pod_security: Literal["restricted", "baseline"] = "restricted"
    """Pod Security level enforced, audited and warned about; `privileged` is reserved for the
    GPU Operator. `baseline` is for images that cannot run as a non-root user."""
    smoke_test_pool: PoolName | None = None
    """Run a `nvidia-smi` Job on this pool after deployment to prove the GPU path works; when
    the Job fails, so does `pulumi up`."""
    smoke_test_deadline_seconds: int = Field(default=900, ge=120, le=3600)
    """How long the smoke test may take, scaling its pool up from zero and the GPU Operator
    preparing the new node included; past it the Job fails, and `pulumi up` with it."""
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
