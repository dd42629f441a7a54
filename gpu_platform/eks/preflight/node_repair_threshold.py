"""Preflight on an EKS stack: a live node group's node repair still stopping at a share of
unhealthy nodes.

Earlier releases of the platform sent `maxUnhealthyNodeThresholdPercentage: 20`, which stops
repair while more than a fifth of a group's nodes are unhealthy: one bad node of a group of four
or fewer is never repaired. The program now sends no threshold unless the pool sets a count
(`aws.nodeRepairMaxUnhealthyNodes`, `gpu_platform.eks.node_repair`), and nothing shows that an
update clears one a group already has: EKS's UpdateNodegroupConfig takes a partial
configuration, and the provider may keep a value it is no longer given. So preflight reads each
node group's `nodeRepairConfig` (DescribeNodegroup, botocore's EKS model) and reports a
percentage left there, with two routes to replace it. botocore's EKS model says of
NodeRepairConfig's `maxUnhealthyNodeThresholdCount` and `maxUnhealthyNodeThresholdPercentage`
that "you cannot also set" one with the other, so if EKS merges an update into the stored
configuration, one that sends a count beside the stored percentage may be refused, and so may
every later `up` that sends it. The first route sends the pool's count where it sets one, else
a percentage of 100 (the model's largest `PercentCapacity`) in the stored one's own member, so
that no count sits beside it and no share of nodes is ever above it. The second turns repair
off (`enabled: false`, what the program sends for a pool without repair) and on again with the
full configuration. Whether EKS
merges, and whether turning repair off drops the stored thresholds, is unverified, so the fix
ends by reading the group's configuration back. A count printed from the pool's `max` would go
stale when `max` grows; the count is the pool's own setting or none.
"""

import json
import math
from collections.abc import Mapping
from typing import Any

from gpu_platform.config import GpuPoolSpec, key_path
from gpu_platform.eks.node_repair import node_repair_request
from gpu_platform.preflight.findings import Finding

LEFTOVER = "maxUnhealthyNodeThresholdPercentage"
NEVER_STOPS = 100
"""The largest percentage botocore's EKS model takes (`PercentCapacity`, 1 to 100): repair
stops only above it, which no share of a group's nodes is."""
REPAIR_OFF = {"enabled": False}
"""What the program sends for a pool without repair (`node_repair_request`)."""


def leftover_threshold_finding(
    cluster: str, i: int, pool: GpuPoolSpec, group: Mapping[str, Any]
) -> Finding | None:
    """A warning where node group `group` (DescribeNodegroup's `nodegroup`) of the pool at
    `pools[i]` repairs and keeps a percentage threshold under which one unhealthy node already
    stops repair."""
    percentage = (group.get("nodeRepairConfig") or {}).get(LEFTOVER)
    if percentage is None or not pool.aws.node_repair:
        return None
    # One unhealthy node of n is above the threshold while n < 100 / percentage.
    largest = math.ceil(100 / percentage) - 1
    if largest < 1:
        return None
    name = group["nodegroupName"]
    count_key = key_path("pools", i, "aws", "nodeRepairMaxUnhealthyNodes")
    count = pool.aws.node_repair_max_unhealthy_nodes
    full = node_repair_request(pool)
    in_place = {**full, LEFTOVER: NEVER_STOPS} if count is None else full
    update = (
        f"aws eks update-nodegroup-config --cluster-name {cluster} --nodegroup-name {name}"
        " --node-repair-config"
    )
    if count is None:
        why = (
            f"{LEFTOVER} {NEVER_STOPS}, which no share of unhealthy nodes is above, in the same"
            " member, so that no count sits beside it"
        )
        again, left = f"the first command again without {LEFTOVER}", f"{NEVER_STOPS} or gone"
        bound = (
            f" To stop repair above a number of unhealthy nodes instead, set {count_key}, which"
            " `up` then sends (a count you raise with `max` yourself: one printed here from"
            " `max` would go stale when it grows), and take the second route with"
            " maxUnhealthyNodeThresholdCount in place of the percentage."
        )
    else:
        why = f"the count {count_key} sets, which `up` sends too"
        again, left, bound = "the first command again", "gone", ""
    return Finding(
        "warning",
        f"pool {pool.name}",
        f"Node group {name} keeps {LEFTOVER} {percentage} from an earlier release of the"
        f" platform: EKS stops repairing while more than {percentage}% of its nodes are"
        f" unhealthy, so with up to {largest} node(s) one unhealthy node is never repaired. The"
        f" program sends no percentage (a count only where {count_key} is set), and whether an"
        " update that omits it clears it is unverified.",
        f"Replace it in place ({why}): {update} '{_json(in_place)}'. The API takes no count"
        " beside a percentage, and whether an update merges into the stored configuration is"
        " unverified: if EKS refuses that or the percentage stays, turn repair off and on"
        f" again: {update} '{_json(REPAIR_OFF)}', then {again} (whether turning repair off"
        f" drops the stored threshold is unverified too). Then check that {LEFTOVER} is {left}:"
        f" aws eks describe-nodegroup --cluster-name {cluster} --nodegroup-name {name} --query"
        f" nodegroup.nodeRepairConfig.{bound}",
    )


def _json(request: Mapping[str, Any]) -> str:
    return json.dumps(request, separators=(",", ":"))
