"""Kueue: the job queues through which tenants' GPU jobs are admitted, each whole or not at all."""

from typing import Annotated

from pydantic import Field

from gpu_platform.config.fields import DnsLabel, Model, PoolName

KUEUE_NAMESPACE = "kueue-system"
"""Where Kueue runs by default: the namespace its chart's README installs it in."""


class QueuesSpec(Model):
    """Kueue, installed from its pinned chart: a ResourceFlavor per pool, a ClusterQueue per
    tenant namespace whose GPU quotas are the namespace's own (`gpuQuota`, `sharedGpuQuota`,
    `migQuota`), in one cohort, and a LocalQueue named `default` in each tenant namespace
    (docs/queues.md)."""

    enabled: bool = False
    """Install Kueue and give every tenant namespace its queue, those with
    `queue.enabled: false` excepted. Off by default: Kueue's admission webhooks then hold every Job,
    JobSet, RayJob, PyTorchJob... of the queued namespaces in the namespace's queue until its
    quota has room for all of its pods, and the policy pack and an admission policy on the
    cluster refuse there the GPU pods of workloads Kueue does not queue; turning it on is a
    change in how teams run work, to be announced to them first. Where two pools hand out the
    same GPU resource that a queued namespace has quota of, the namespace splits that quota
    between them (`queue.poolQuotas`, docs/queues.md)."""
    namespace: DnsLabel = KUEUE_NAMESPACE
    """Where Kueue's manager runs: a namespace the platform creates (Pod Security
    `restricted`, which the chart's pod and container security contexts satisfy), no tenant's."""
    cohort: DnsLabel = "gpu-tenants"
    """The cohort every tenant's ClusterQueue joins: quota one tenant leaves unused may be
    borrowed by another, within each tenant's `queue.borrowingLimit` and
    `queue.lendingLimit`."""
    fair_sharing: bool = True
    """Share what the cohort has unused equally among the tenants that borrow it (Kueue's fair
    sharing, every ClusterQueue at its default weight), and let a tenant below its share
    reclaim what it lent by preempting the borrowers' newest workloads. Off, a borrower keeps
    what it took until its workloads end."""
    smoke_test_queue_minutes: int = Field(default=30, ge=0, le=1440)
    """How long `pulumi up` waits for a tenant's smoke test to leave its queue, on top of the
    Job's own deadline (which starts only once Kueue admits it). The smoke test goes before
    every waiting job of its tenant, but waits for running jobs to free the GPUs it needs."""


class TenantQueueSpec(Model):
    """Whether a tenant's jobs go through Kueue, and how much of its GPU quota its ClusterQueue
    borrows and lends within the cohort."""

    enabled: bool = True
    """With `queues.enabled`: give the namespace its queue. `false` leaves it out of Kueue: no
    ClusterQueue or LocalQueue, and Kueue's webhooks, the policy pack's queue rule and the
    cluster's admission policy for queued GPU pods leave its workloads alone; its GPU pods
    start as the scheduler and its ResourceQuota allow. The place for GPU services
    (Deployments, StatefulSets, notebooks), which Kueue does not queue and whose GPUs, in a
    queued namespace, Kueue would not count (docs/queues.md)."""
    borrowing_limit: int = Field(default=0, ge=0, le=10000)
    """The most GPUs (or replicas, or slices) of each pool beyond its quota that the tenant may
    borrow from the cohort; 0, none. The namespace's ResourceQuota allows that many more of
    each GPU resource for each pool that hands it out (Kueue holds the limit on each pool
    apart), so that what Kueue lends it can run: a pod outside Kueue's jobs (the cluster's
    admission policy catches mistakes, not intent) may then take the quota and this many on
    each pool, so keep it small where many pools hand out one resource. Lower it only once
    the tenant borrows nothing on any pool (docs/queues.md)."""
    lending_limit: int | None = Field(default=None, ge=0, le=10000)
    """The most of its quota of each pool the tenant lends to the cohort while it does not use
    it; unset, all of it, 0 none. At most the namespace's quota of each pool, its share where
    `poolQuotas` splits a quota (Kueue refuses a larger one): one value for every pool, so a
    share of 0 allows none above 0."""
    pool_quotas: dict[PoolName, Annotated[int, Field(ge=0, le=100000)]] = Field(
        default_factory=dict
    )
    """Where two or more pools hand out the GPU resource one of the namespace's quotas caps (two
    exclusive pools, both `nvidia.com/gpu` under `gpuQuota`; two pools of one MIG slice): that
    quota split between them, by pool, in its unit (GPUs, replicas or slices), as
    `{h100: 12, a100: 4}` of a `gpuQuota: 16`. Kueue holds a tenant's quota on each pool apart
    and the ResourceQuota one over them all: each pool's share is the ClusterQueue's quota
    there. The shares of one quota name every pool that hands out its resource (canaries
    aside, which Kueue admits nothing on) and add up to at most the quota (`plan` warns of
    less, which leaves the rest unused: the middle step of moving quota between pools).
    Required for such pools unless the quota is 0; no entry for a pool whose resource no other
    pool hands out, whose quota is the namespace's whole. A job whose pod sets may run on
    either pool should select one with `gpu-platform.io/pool` (docs/queues.md)."""
