"""Preflight on an EKS stack: a live node group's node repair still stopping at a share of
unhealthy nodes.

Earlier releases of the platform sent `maxUnhealthyNodeThresholdPercentage: 20`, which stops
repair while more than a fifth of a group's nodes are unhealthy: one bad node of a group of four
or fewer is never repaired. The program now sends no threshold unless the pool sets a count
(`aws.nodeRepairMaxUnhealthyNodes`, `gpu_platform.eks.node_repair`), and nothing shows that an
update clears one a group already has: EKS's UpdateNodegroupConfig takes a partial
configuration, and the provider may keep a value it is no longer given. So preflight reads each
node group's `nodeRepairConfig` (DescribeNodegroup, botocore's EKS model) and reports a
percentage left there. The fix it prints sends a count in its place, the only way the API offers
to state another threshold: botocore's EKS model says of NodeRepairConfig's
`maxUnhealthyNodeThresholdCount` and `maxUnhealthyNodeThresholdPercentage` that "you cannot also
set" one with the other. Whether EKS then drops the stored percentage is unverified, so the fix
ends by reading the group's configuration back.
"""

import json
import math
from collections.abc import Mapping
from typing import Any

from gpu_platform.cli.findings import Finding
from gpu_platform.config import GpuPoolSpec, key_path
from gpu_platform.eks.node_repair import node_repair_request

LEFTOVER = "maxUnhealthyNodeThresholdPercentage"


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
    # Above `max` unhealthy nodes never happens: repair never stops, as EKS's own threshold
    # never stops it in a group of up to five nodes (docs/gpu-health.md).
    replacement = pool.max if count is None else count
    request = json.dumps(
        {**node_repair_request(pool), "maxUnhealthyNodeThresholdCount": replacement},
        separators=(",", ":"),
    )
    keep = (
        f"set {count_key}: {replacement} so that `up` keeps sending it"
        if count is None
        else f"the count {count_key} sets"
    )
    return Finding(
        "warning",
        f"pool {pool.name}",
        f"Node group {name} keeps {LEFTOVER} {percentage} from an earlier release of the"
        f" platform: EKS stops repairing while more than {percentage}% of its nodes are"
        f" unhealthy, so with up to {largest} node(s) one unhealthy node is never repaired. The"
        f" program sends no percentage (a count only where {count_key} is set), and whether an"
        " update that omits it clears it is unverified.",
        f"Send a count in its place ({keep}; the API takes no count beside a percentage): aws"
        f" eks update-nodegroup-config --cluster-name {cluster} --nodegroup-name {name}"
        f" --node-repair-config '{request}'. Then check that {LEFTOVER} is gone: aws eks"
        f" describe-nodegroup --cluster-name {cluster} --nodegroup-name {name} --query"
        " nodegroup.nodeRepairConfig.",
    )
