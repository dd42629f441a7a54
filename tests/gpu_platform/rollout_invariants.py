"""Over any plan: every EKS node group and GKE node pool waits, in `pulumi up`, longer than the
longest rollout of its nodes that its own planned inputs allow, and a GKE node pool longer than
the rollouts of every node pool of the plan's cluster together.

The bound is worked out here from the planned resource alone (its `scalingConfig` and
`updateConfig`, or its `autoscaling`, `nodeLocations` and `upgradeSettings`) and the upstream
per-node durations below, not from the program's own arithmetic, so that a pool whose settings
grew without its timeout shows up. Karpenter's NodePools have no update to wait for (Karpenter
replaces drifted nodes after `pulumi up`), so a Karpenter stack's plan has nothing to check.
"""

import math
import re
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from gpu_platform.offline.program import Plan, PlannedResource

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
NODE_POOL = "gcp:container/nodePool:NodePool"

# EKS user guide, managed-node-update-behavior ("Upgrade phase"): a node's pods get 15 minutes
# to leave before the update fails, then EKS waits 60 seconds after the cordon; "The maximum
# unavailable has a quota of 100 nodes" ("Setup phase").
EKS_BATCH = timedelta(minutes=15) + timedelta(seconds=60)
EKS_QUOTA = 100
# GKE respects disruption budgets for at most an hour while it drains a node it upgrades; "The
# maximum number of nodes upgraded simultaneously is limited to 20" (terraform-provider-google
# google/services/container/resource_container_node_pool.go, `upgrade_settings`).
GKE_DRAIN = timedelta(hours=1)
GKE_PARALLEL = 20
# The start of a GPU node (launch, boot, join, Ready): no cloud states one; the platform allows
# 15 minutes. A blue-green pool without `nodePoolSoakDuration` soaks for GKE's unstated default,
# counted as an hour.
START = timedelta(minutes=15)
UNSET_SOAK = timedelta(hours=1)
# A regional GKE cluster that names no zones puts its nodes in three.
REGION_ZONES = 3

_GO_DURATION = re.compile(r"(\d+(?:\.\d+)?)(h|m|s)")
_UNITS = {"h": 3600, "m": 60, "s": 1}


def timeout_problems(plan: Plan, config: Mapping[str, Any] | None = None) -> list[str]:
    """What waits too short: one line per node group or node pool whose `update` custom timeout
    is missing or does not exceed its longest rollout. `config` is the stack config the plan
    came from; the bound needs only the plan."""
    del config
    # A stack's node pools share its one cluster, where GKE runs one node pool operation at a
    # time; terraform-provider-google retries an update that meets another ("incompatible
    # operation", FAILED_PRECONDITION) within that update's own timeout
    # (resource_container_node_pool.go, `RetryWhileIncompatibleOperation(timeout, ...)`), so
    # each pool may wait through every other pool's rollout before its own.
    cluster_rollouts = sum(
        (_gke_rollout(r.inputs) for r in plan.resources if r.type == NODE_POOL), timedelta(0)
    )
    problems = []
    for resource in plan.resources:
        if resource.type == NODE_GROUP:
            rollout = _eks_rollout(resource.inputs)
        elif resource.type == NODE_POOL:
            rollout = cluster_rollouts
        else:
            continue
        timeout = _go_duration(resource.custom_timeouts.get("update"))
        if timeout is None or timeout <= rollout:
            problems.append(_problem(resource, timeout, rollout))
    return problems


def _problem(resource: PlannedResource, timeout: timedelta | None, rollout: timedelta) -> str:
    waits = "the provider's default" if timeout is None else str(timeout)
    return (
        f"{resource.type} {resource.name}: its update waits {waits}, its rollout may take {rollout}"
    )


def _rounds(nodes: int, at_once: int, zones: int) -> int:
    # A partial round may end each zone; never more rounds than nodes.
    return min(nodes, -(-nodes // at_once) + zones - 1) if nodes > 0 else 0


def _eks_rollout(inputs: Mapping[str, Any]) -> timedelta:
    # EKS takes a percentage of the group as it is when the update starts, any size up to
    # `maxSize`; how it rounds is stated nowhere (EKS API `NodegroupUpdateConfig`), so down, at
    # least one node, the slowest reading.
    update = inputs.get("updateConfig") or {}
    percent = update.get("maxUnavailablePercentage")
    longest = START
    for size in range(1, inputs["scalingConfig"]["maxSize"] + 1):
        if percent is not None:
            at_once = max(1, math.floor(size * percent / 100))
        else:
            at_once = update.get("maxUnavailable", 1)
        rounds = _rounds(size, min(at_once, EKS_QUOTA), 1)
        longest = max(longest, START + rounds * (EKS_BATCH + START))
    return longest


def _gke_rollout(inputs: Mapping[str, Any]) -> timedelta:
    zones = len(inputs.get("nodeLocations") or [None] * REGION_ZONES)
    scaling = inputs.get("autoscaling") or {}
    if "totalMaxNodeCount" in scaling:
        nodes = scaling["totalMaxNodeCount"]
    else:
        nodes = scaling.get("maxNodeCount", inputs.get("nodeCount", 0)) * zones
    settings = inputs.get("upgradeSettings") or {}
    if settings.get("strategy") == "BLUE_GREEN":
        blue_green = settings.get("blueGreenSettings") or {}
        autoscaled = blue_green.get("autoscaledRolloutPolicy") or {}
        wait = _api_duration(autoscaled.get("waitForDrainDuration")) or timedelta(0)
        soak = _api_duration(blue_green.get("nodePoolSoakDuration"))
        batch = (blue_green.get("standardRolloutPolicy") or {}).get("batchNodeCount", 1)
        drains = _rounds(nodes, batch, 1)
        return START + wait + drains * GKE_DRAIN + (UNSET_SOAK if soak is None else soak)
    at_once = min(settings.get("maxSurge", 1) + settings.get("maxUnavailable", 0), GKE_PARALLEL)
    return _rounds(nodes, at_once, zones) * (START + GKE_DRAIN)


def _api_duration(value: str | None) -> timedelta | None:
    """A google-duration (`3600s`)."""
    return None if value is None else timedelta(seconds=float(value.removesuffix("s")))


def _go_duration(value: str | None) -> timedelta | None:
    """A Pulumi custom timeout, a Go duration (`329m`, `1h30m`)."""
    if not value:
        return None
    return timedelta(
        seconds=sum(float(n) * _UNITS[unit] for n, unit in _GO_DURATION.findall(value))
    )
