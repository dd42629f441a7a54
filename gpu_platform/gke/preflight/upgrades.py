"""What `gpu-platform preflight` finds of how GKE will upgrade a GKE stack's pools, from the
cluster as GKE's `clusters.get` answers it (the `Cluster` schema of the container.v1 discovery
document): pinned node versions against the control plane's, whether each pinned pool that
exists holds GKE's upgrades off with its exclusion until end of support, and when GKE may
upgrade the pools it upgrades itself: the unpinned pools whenever the cluster's maintenance
window and exclusions let it, and the pinned ones too once their exclusion ends at the end of
support of their version (container.v1 `NodePool.ExclusionUntilEndOfSupport.endTime`, "the
cluster control plane version's end of support time"). GKE upgrades nodes automatically "when
there is an open maintenance window and no active maintenance exclusion" (GKE's
maintenance-windows-and-exclusions page), so the window decides when that forced upgrade lands.

GKE runs no node newer than its control plane (its version skew policy), and refuses a node pool
pinned past it at `pulumi up`. During a surge upgrade GKE honours PodDisruptionBudgets for up to
an hour, then evicts (docs/upgrades.md): a pool GKE upgrades automatically runs long jobs at the
mercy of its next upgrade unless the cluster has a maintenance window (upgrades only then) or a
maintenance exclusion in force that holds node upgrades off.
"""

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from gpu_platform.config import GpuPoolSpec, StackConfig, dynamic_workload_scheduler_modes, key_path
from gpu_platform.node_identity import POOL_LABEL
from gpu_platform.preflight.findings import Finding
from gpu_platform.version_order import version_key

# `MaintenanceExclusionOptions.scope` (container.v1.json): an exclusion without one is
# NO_UPGRADES. NO_MINOR_UPGRADES still lets GKE apply patch upgrades to nodes.
_HOLDS_NODE_UPGRADES = frozenset({"NO_UPGRADES", "NO_MINOR_OR_NODE_UPGRADES"})
_EXCLUSION_ONLY = '{"maintenancePolicy": {"exclusionUntilEndOfSupport": {"enabled": true}}}'
"""An `UpdateNodePoolRequest` (container.v1.json) that changes the node pool's maintenance policy
and nothing else."""
NO_CHANNEL = "UNSPECIFIED"
"""`ReleaseChannel.channel`: "No channel specified"."""


def upgrade_findings(
    config: StackConfig, cluster: Mapping[str, Any], now: datetime | None = None
) -> list[Finding]:
    """Pinned node versions past the control plane and pinned pools without their exclusion
    (blocking), then when the cluster lets GKE upgrade the pools it upgrades itself."""
    now = now or datetime.now(UTC)
    version = cluster["currentMasterVersion"]
    findings = [
        Finding(
            "blocking",
            f"pool {pool.name}",
            f"{key_path('pools', i, 'gcp', 'nodeVersion')} is {pool.gcp.node_version}, newer than"
            f" the control plane's GKE {version}: GKE runs no node newer than its control plane"
            " and refuses the pool.",
            f"Upgrade the control plane first, or pin the pool at {version} or older.",
        )
        for i, pool in enumerate(config.pools)
        if pool.gcp.node_version is not None
        and version_key(pool.gcp.node_version) > version_key(version)
    ]
    findings += _unheld_pin_findings(config, cluster, now)
    upgraded = [pool.name for pool in config.pools if _auto_upgraded(pool)]
    pinned = _pinned_until_end_of_support(config, cluster)
    if upgraded or pinned:
        findings.append(_maintenance_finding(config, cluster, upgraded, pinned, now))
    return findings


def _unheld_pin_findings(
    config: StackConfig, cluster: Mapping[str, Any], now: datetime
) -> list[Finding]:
    """Each pinned pool that GKE runs, on a cluster in a release channel, without its node pool
    maintenance exclusion until end of support. The platform declares the exclusion there
    (gpu_platform/gke/node_pool.py, `pinned_pool_upgrades`), but terraform-provider-google sends
    it only when it creates a pool, and the policy pack sees only the inputs the pool was
    created with: a pool created unpinned and pinned later has it only where someone set it, and
    only GKE's answer shows whether they did. A pool GKE does not run yet is created with it.
    A cluster exclusion in force that holds node upgrades off holds the pool too, until it ends:
    then a warning."""
    channel = _channel(cluster)
    if channel == NO_CHANNEL:
        return []
    running = running_node_pools(cluster)
    held = _cluster_exclusions_in_force(cluster, now)
    return [
        _unheld_pin_finding(config, i, pool.name, channel, live, held)
        for i, pool in enumerate(config.pools)
        if pool.gcp.node_version is not None
        and (live := running.get(pool.name)) is not None
        and _own_exclusion(live).get("enabled") is not True
    ]


def _own_exclusion(live: Mapping[str, Any]) -> Mapping[str, Any]:
    """A running node pool's `maintenancePolicy.exclusionUntilEndOfSupport` (container.v1)."""
    exclusion: Mapping[str, Any] = live.get("maintenancePolicy", {}).get(
        "exclusionUntilEndOfSupport", {}
    )
    return exclusion


def _pinned_until_end_of_support(
    config: StackConfig, cluster: Mapping[str, Any]
) -> list[tuple[str, str | None]]:
    """The pinned pools GKE upgrades itself once their exclusion until end of support ends, with
    its `endTime` where GKE reports one: on a cluster in a release channel, whose pinned pools
    keep auto-upgrade on. Without a channel the platform turns their auto-upgrade off."""
    if _channel(cluster) == NO_CHANNEL:
        return []
    running = running_node_pools(cluster)
    return [
        (pool.name, _own_exclusion(running.get(pool.name, {})).get("endTime"))
        for pool in config.pools
        if pool.gcp.node_version is not None and not dynamic_workload_scheduler_modes(pool)
    ]


def running_node_pools(cluster: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The node pools GKE runs (`Cluster.nodePools`), by the name of the stack's pool each is."""
    # Pulumi names each node pool with a random suffix: the platform's label names its pool.
    return {
        labels[POOL_LABEL]: live
        for live in cluster.get("nodePools", [])
        if POOL_LABEL in (labels := live.get("config", {}).get("labels", {}))
    }


def _unheld_pin_finding(
    config: StackConfig,
    i: int,
    name: str,
    channel: str,
    live: Mapping[str, Any],
    cluster_held: Sequence[str],
) -> Finding:
    spec = config.cluster
    url = (
        f"https://container.googleapis.com/v1/projects/{spec.project}/locations/{spec.location}"
        f"/clusters/{spec.name}/nodePools/{live['name']}"
    )
    # The request names the maintenance policy alone, as gcloud's `node-pools update
    # --add-maintenance-exclusion-until-end-of-support` and terraform-provider-google's update of
    # any one field send it, though container.v1 marks `UpdateNodePoolRequest.nodeVersion` and
    # `imageType` "Required": GKE may treat a request with a node version as a node upgrade, and
    # it recreates a pool's nodes when `clusters upgrade --node-pool` upgrades it to the version
    # it runs.
    consequence = (
        f"the cluster's maintenance exclusion {'; '.join(cluster_held)} holds it for now, and"
        f" once that ends GKE, which keeps its auto-upgrade on in release channel {channel},"
        " moves it past the pin"
        if cluster_held
        else f"in release channel {channel} GKE keeps its auto-upgrade on and moves it past the pin"
    )
    return Finding(
        "warning" if cluster_held else "blocking",
        f"pool {name}",
        f"{key_path('pools', i, 'gcp', 'nodeVersion')} pins the pool, whose node pool"
        f" {live['name']} has no maintenance exclusion until end of support"
        f" (maintenancePolicy.exclusionUntilEndOfSupport.enabled is not true): {consequence}."
        " Pulumi cannot add the exclusion to a node pool that exists, and the policy pack cannot"
        " see it there.",
        f"Enable it with gcloud container node-pools update {live['name']} --project"
        f" {spec.project} --location {spec.location} --cluster {spec.name}"
        " --add-maintenance-exclusion-until-end-of-support (gcloud 569.0.0 or later), or the GKE"
        f" API's projects.locations.clusters.nodePools.update: PUT {url} with the body"
        f" {_EXCLUSION_ONLY}. Send the maintenance policy alone: GKE may treat a request that"
        " also names the pool's node version as a node upgrade, which recreates its nodes even"
        " at the version they run.",
    )


def _auto_upgraded(pool: GpuPoolSpec) -> bool:
    # GKE replaces flex-start and queued nodes as they end. A pinned pool is held by its own
    # exclusion until end of support on a cluster in a release channel (judged by
    # `_unheld_pin_findings`, and upgraded after it: `_pinned_until_end_of_support`), and has
    # auto-upgrade off on one without.
    return not dynamic_workload_scheduler_modes(pool) and pool.gcp.node_version is None


def _channel(cluster: Mapping[str, Any]) -> str:
    return str(cluster.get("releaseChannel", {}).get("channel", NO_CHANNEL))


def _cluster_exclusions_in_force(cluster: Mapping[str, Any], now: datetime) -> list[str]:
    """The cluster's maintenance exclusions that hold node upgrades off now, each as "NAME until
    END"."""
    window = cluster.get("maintenancePolicy", {}).get("window", {})
    return [
        f"{name} until {exclusion.get('endTime', 'the end of support')}"
        for name, exclusion in window.get("maintenanceExclusions", {}).items()
        if _in_force(exclusion, now)
    ]


def _pinned_upgrade(pinned: Sequence[tuple[str, str | None]]) -> str:
    """When GKE upgrades the pinned pools: as their exclusion until end of support ends."""
    ends = ", ".join(
        f"{name} at {end}" if end else f"{name} at its version's end of support"
        for name, end in pinned
    )
    return (
        "the pinned pools once their exclusion until end of support ends"
        f" (exclusionUntilEndOfSupport.endTime: {ends})"
    )


def _maintenance_finding(
    config: StackConfig,
    cluster: Mapping[str, Any],
    pools: Sequence[str],
    pinned: Sequence[tuple[str, str | None]],
    now: datetime,
) -> Finding:
    subject = f"cluster {config.cluster.name}"
    window = cluster.get("maintenancePolicy", {}).get("window", {})
    held = _cluster_exclusions_in_force(cluster, now)
    also = f" That includes {_pinned_upgrade(pinned)}." if pinned else ""
    if held:
        return Finding(
            "ok",
            subject,
            f"Maintenance exclusion {'; '.join(held)} holds GKE's node upgrades off.",
            "Nothing.",
        )
    recurring = window.get("recurringWindow") or window.get("recurringMaintenanceWindow")
    daily = window.get("dailyMaintenanceWindow")
    if recurring:
        return Finding(
            "ok",
            subject,
            f"GKE upgrades nodes only in the maintenance window ({recurring.get('recurrence')})."
            + also,
            "Nothing.",
        )
    if daily:
        return Finding(
            "ok",
            subject,
            f"GKE upgrades nodes only in the daily maintenance window from {daily.get('startTime')}"
            " GMT." + also,
            "Nothing.",
        )
    spec = config.cluster
    upgraded = [f"{', '.join(pools)} at any time"] if pools else []
    upgraded += [_pinned_upgrade(pinned)] if pinned else []
    return Finding(
        "warning",
        subject,
        f"No maintenance window or exclusion: GKE may upgrade the nodes of"
        f" {', and those of '.join(upgraded)}, honouring PodDisruptionBudgets for up to an hour"
        " during a surge upgrade before it evicts, so a longer job is ended.",
        "Set a maintenance window, or before long jobs an exclusion"
        f" (gcloud container clusters update {spec.name} --location {spec.location}"
        " --add-maintenance-exclusion-name NAME --add-maintenance-exclusion-start START"
        " --add-maintenance-exclusion-end END --add-maintenance-exclusion-scope"
        " no_minor_or_node_upgrades); or use gcp.upgradeStrategy blue-green with"
        " gcp.blueGreenDrainWaitHours above the longest job (GKE's autoscaled blue-green, in"
        " Preview).",
    )


def _in_force(exclusion: Mapping[str, Any], now: datetime) -> bool:
    """Whether a maintenance exclusion (`TimeWindow`) holds node upgrades off now."""
    scope = exclusion.get("maintenanceExclusionOptions", {}).get("scope", "NO_UPGRADES")
    if scope not in _HOLDS_NODE_UPGRADES:
        return False
    start = _time(exclusion.get("startTime"))
    end = _time(exclusion.get("endTime"))
    return (start is None or start <= now) and (end is None or now < end)


def _time(stamp: str | None) -> datetime | None:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")) if stamp else None
