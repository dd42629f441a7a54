"""Kueue: the job queues through which tenants' GPU jobs are admitted, each whole or not at all."""

from pydantic import Field

from gpu_platform.config.fields import DnsLabel, Model

KUEUE_NAMESPACE = "kueue-system"
"""Where Kueue runs by default: the namespace its chart's README installs it in."""


class QueuesSpec(Model):
    """Kueue, installed from its pinned chart: a ResourceFlavor per pool, a ClusterQueue per
    tenant namespace whose GPU quotas are the namespace's own (`gpuQuota`, `sharedGpuQuota`,
    `migQuota`), in one cohort, and a LocalQueue named `gpu` in each tenant namespace
    (docs/queues.md)."""

    enabled: bool = False
    """Install Kueue and give every tenant namespace its queue. Off by default: Kueue's
    admission webhooks then act on every Job, JobSet, RayJob and PyTorchJob of the tenant
    namespaces, which a team must label with its queue (`kueue.x-k8s.io/queue-name: gpu`)
    before they start; turning it on is a change in how teams submit work, to be announced
    to them first."""
    namespace: DnsLabel = KUEUE_NAMESPACE
    """Where Kueue's manager runs: a namespace the platform creates (Pod Security
    `restricted`, which the chart's pod and container security contexts satisfy), no tenant's."""
    cohort: DnsLabel = "gpu-tenants"
    """The cohort every tenant's ClusterQueue joins: quota one tenant leaves unused may be
    borrowed by another, within each tenant's `queue.borrowingLimit` and
    `queue.lendingLimit`."""
    fair_sharing: bool = True
    """Share what the cohort has unused in proportion to each tenant's quota, and let a tenant
    below its share reclaim it by preempting the borrowers' newest workloads (Kueue's fair
    sharing). Off, a borrower keeps what it took until its workloads end."""


class TenantQueueSpec(Model):
    """How much of a tenant's GPU quota its ClusterQueue borrows and lends within the cohort."""

    borrowing_limit: int = Field(default=0, ge=0, le=10000)
    """The most GPUs (or replicas, or slices) of each pool beyond its quota that the tenant may
    borrow from the cohort; 0, none. The namespace's ResourceQuota allows that many more of
    each GPU resource its pools hand out, so that what Kueue lends it can run."""
    lending_limit: int | None = Field(default=None, ge=0, le=10000)
    """The most of its quota of each pool the tenant lends to the cohort while it does not use
    it; unset, all of it, 0 none. At most the namespace's quota of each GPU resource it has
    (Kueue refuses a larger one)."""
