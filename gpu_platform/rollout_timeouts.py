"""How long `pulumi up` waits for a node group's or node pool's update: longer than the longest
rollout of its nodes its settings allow.

The providers wait for the cloud's update operation within a timeout of their own: 60 minutes
for an EKS node group (terraform-provider-aws `internal/service/eks/node_group.go`,
`Timeouts`) and 30 for a GKE node pool (terraform-provider-google
`google/services/container/resource_container_node_pool.go`, `Timeouts`). A rollout that
replaces GPU nodes one at a time, each drained under its pods' disruption budgets, takes far
longer: past the timeout `pulumi up` fails while the cloud goes on, the resources that wait for
the pool (a canary's gate, the pool it leads) are never reached, and the next `up` meets the
running operation. So each node group and node pool gets an `update` custom timeout of its
longest rollout with a margin (`rollout_timeouts`). Neither Pulumi nor the providers cap a
custom timeout (the engine hands the provider any Go duration), so none is capped here.

A GKE cluster runs one node pool operation at a time, and terraform-provider-google waits for
the others within the update's own timeout: it wraps each node pool update in
`tpgresource.RetryWhileIncompatibleOperation(timeout, ...)` (`resource_container_node_pool.go`),
which retries GKE's FAILED_PRECONDITION ("there is an incompatible operation already running on
the cluster", its comment) until `timeout` runs out. Pools changed in one `up`, and a pool GKE
upgrades on its own meanwhile (a created cluster's system pool follows the control plane), wait
for each other's rollouts, so a GKE pool's timeout counts the longest rollouts of every node pool
of the cluster that may update in the same `up` (`gke_update_timeout`), its own included.

Creating a pool starts its `min` nodes at once, and deleting one does not wait for disruption
budgets (EKS drains each node for "a few minutes" before terminating it, EKS user guide,
delete-managed-node-group; GKE respects no budget on deletion unless the pool's
`node_drain_config.respect_pdb_during_node_pool_deletion` says so, which the platform does not
set): on EKS both stay within the provider's defaults. A GKE pool's creation, though, waits
for the other pools' operations as its update does (the provider's create retries the same way),
so GKE pools take the cluster's total for create and delete as well.

Karpenter's NodePools are not here: `pulumi up` applies a NodePool at once and Karpenter
replaces its drifted nodes afterwards, within the pool's disruption budgets, so no update waits
for them (docs/karpenter.md, Disruption).
"""

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta

import pulumi

# The per-node durations every bound below is made of.

NODE_START = timedelta(minutes=15)
"""Our allowance for one GPU node to launch, boot, join the cluster and turn Ready (a GPU
instance with large images, EFA interfaces, a driver that loads on boot): the clouds state no
bound for it."""
EKS_DRAIN = timedelta(minutes=15)
"""EKS drains each node of a batch before terminating it: "If the Pods don't leave the node
within 15 minutes and there's no force flag, the upgrade phase fails with a PodEvictionFailure
error" (EKS user guide, managed-node-update-behavior, "Upgrade phase")."""
EKS_CORDON_WAIT = timedelta(seconds=60)
"""After the drain EKS "cordons the node after every Pod is evicted and waits for 60 seconds"
before it terminates it (the same page)."""
EKS_MAX_UNAVAILABLE = 100
"""EKS replaces at most 100 nodes at once: "The maximum unavailable has a quota of 100 nodes"
(the same page, "Setup phase")."""
GKE_DRAIN = timedelta(hours=1)
"""GKE respects PodDisruptionBudgets and termination grace periods for up to an hour while it
drains a node it upgrades, then evicts (GKE, node-pool-upgrade-strategies and
cluster-upgrades, "disruption budgets are respected for up to 60 minutes")."""
GKE_MAX_PARALLEL = 20
"""GKE upgrades at most 20 nodes at once: "The maximum number of nodes upgraded simultaneously
is limited to 20" (terraform-provider-google `resource_container_node_pool.go`,
`upgrade_settings`)."""
GKE_UNSET_SOAK = timedelta(hours=1)
"""Our allowance for a blue-green pool's soak when `blueGreenSoakHours` leaves it to GKE: the
API reference states no default (container.v1 `BlueGreenSettings.nodePoolSoakDuration`)."""

EKS_DEFAULT_TIMEOUT = timedelta(minutes=60)
"""terraform-provider-aws `internal/service/eks/node_group.go`: `Update:
schema.DefaultTimeout(60 * time.Minute)`."""
GKE_DEFAULT_TIMEOUT = timedelta(minutes=30)
"""terraform-provider-google `resource_container_node_pool.go`: `Update:
schema.DefaultTimeout(30 * time.Minute)`."""
MARGIN = 1.25
"""A quarter more than the longest rollout: the clouds' own steps between batches (scaling the
Auto Scaling group or instance group back, deleting the old nodes) take time no page bounds."""


def batches(nodes: int, batch: int, zones: int = 1) -> int:
    """How many rounds replace `nodes` nodes `batch` at a time, where the nodes are spread over
    `zones` zones that may each end on a partial round (GKE goes zone by zone): at most one
    round a node."""
    if nodes <= 0:
        return 0
    return min(nodes, math.ceil(nodes / max(batch, 1)) + max(zones, 1) - 1)


def eks_rollout(
    max_size: int, max_unavailable: int | None, max_unavailable_percent: int | None
) -> timedelta:
    """The longest update of an EKS managed node group of up to `max_size` nodes: a scale-up
    (the first replacement nodes), then per batch of `maxUnavailable` (or of the percentage of
    the nodes) the drain, the cordon wait and a replacement's start (EKS user guide,
    managed-node-update-behavior).

    A percentage applies to the group as it is when the update starts, any size up to
    `max_size`, so the longest rollout may be at a smaller size (10% of 19 nodes is a batch of
    one, 19 rounds; of 20, two). Neither the API (botocore `eks` 2017-11-01
    `NodegroupUpdateConfig.maxUnavailablePercentage`: "This percentage of nodes are updated in
    parallel, up to 100 nodes at once") nor the user guide says how EKS rounds it: counted
    rounded down, at least one, the slowest reading."""
    return max(
        _eks_rollout_at(size, max_unavailable, max_unavailable_percent)
        for size in range(max_size + 1)
    )


def _eks_rollout_at(
    size: int, max_unavailable: int | None, max_unavailable_percent: int | None
) -> timedelta:
    if max_unavailable_percent is not None:
        batch = max(1, size * max_unavailable_percent // 100)
    else:
        batch = max_unavailable or 1
    rounds = batches(size, min(batch, EKS_MAX_UNAVAILABLE))
    return NODE_START + rounds * (EKS_DRAIN + EKS_CORDON_WAIT + NODE_START)


def gke_surge_rollout(nodes: int, zones: int, max_surge: int, max_unavailable: int) -> timedelta:
    """The longest surge upgrade of a GKE node pool of `nodes` nodes over `zones` zones:
    `maxSurge + maxUnavailable` nodes at a time (at most 20), each round a new node's start and
    an old node's drain."""
    rounds = batches(nodes, min(max_surge + max_unavailable, GKE_MAX_PARALLEL), zones)
    return rounds * (NODE_START + GKE_DRAIN)


def gke_blue_green_rollout(
    nodes: int, drain_wait: timedelta | None, soak: timedelta | None
) -> timedelta:
    """The longest blue-green upgrade of a GKE node pool of `nodes` nodes: the new nodes' start,
    the autoscaled rollout's wait before the drain (`drain_wait`, None for the standard
    rollout), the old nodes drained one at a time (the standard rollout's `batchNodeCount` 1;
    the autoscaled one is bounded the same way), then the soak before the old nodes go
    (container.v1 `BlueGreenSettings`, GKE's node-pool-upgrade-strategies page)."""
    if nodes <= 0:
        return timedelta(0)
    waited = drain_wait or timedelta(0)
    soaked = GKE_UNSET_SOAK if soak is None else soak
    return NODE_START + waited + nodes * GKE_DRAIN + soaked


@dataclass(frozen=True)
class UpdateTimeout:
    """How long `pulumi up` waits for one update: the longest rollout with `MARGIN`, and never
    less than the provider's default."""

    rollout: timedelta
    default: timedelta

    @property
    def duration(self) -> timedelta:
        return max(self.default, _whole_minutes(self.rollout * MARGIN))

    def custom_timeouts(self, *, every_operation: bool = False) -> pulumi.CustomTimeouts:
        """`update`'s timeout, and with `every_operation` `create`'s and `delete`'s as well."""
        duration = f"{int(self.duration.total_seconds()) // 60}m"
        if every_operation:
            return pulumi.CustomTimeouts(create=duration, update=duration, delete=duration)
        return pulumi.CustomTimeouts(update=duration)


def _whole_minutes(duration: timedelta) -> timedelta:
    return timedelta(minutes=math.ceil(duration.total_seconds() / 60))


def eks_update_timeout(
    max_size: int, max_unavailable: int | None, max_unavailable_percent: int | None
) -> pulumi.CustomTimeouts:
    """The custom timeouts of an EKS managed node group."""
    rollout = eks_rollout(max_size, max_unavailable, max_unavailable_percent)
    return UpdateTimeout(rollout, EKS_DEFAULT_TIMEOUT).custom_timeouts()


def gke_update_timeout(cluster_rollouts: Iterable[timedelta]) -> pulumi.CustomTimeouts:
    """The custom timeouts of every GKE node pool of a cluster whose node pools that may update
    in one `up` have the longest upgrades `cluster_rollouts`: one pool's update may wait through
    all the others' before its own (the module's docstring). Creating a pool waits for them as
    well (terraform-provider-google resource_container_node_pool.go: its create retries while
    another operation runs on the cluster, within the create's own timeout), and so the create
    and the delete get the same: a longer timeout costs nothing where nothing waits."""
    return UpdateTimeout(sum(cluster_rollouts, timedelta(0)), GKE_DEFAULT_TIMEOUT).custom_timeouts(
        every_operation=True
    )
