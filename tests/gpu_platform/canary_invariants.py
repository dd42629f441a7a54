"""What any plan must hold of its canaries' capacity and rank, read from the stack's config as
written (never the loader's reading of it) and the plan.

1. `canary_capacity_problems`: a canary starts a node for its gate, a plain pod, so it may not
   sit on capacity that starts no node for one, nor hold only the reservation of the pool it
   leads (whose nodes fill it, so the canary's node never starts):
   - EKS `capacity: capacity-block`: a capacity block starts instances only inside its booked
     window (EC2 user guide, "Capacity Blocks for ML").
   - GKE `gcp.queuedProvisioning: true`: such a pool grows only for a ProvisioningRequest, never
     for a pending pod (GKE docs, "Deploy GPUs for batch and AI workloads with
     ProvisioningRequest").
   - EKS `capacity: reserved` on the led pool's `aws.capacityReservationId` (or resource group)
     without `aws.onDemandFallback`; GKE `gcp.reservation: specific` on the led pool's
     `gcp.reservationName`.
2. `canary_rank_problems`: every canary ranks strictly below every GPU pool that is not a canary,
   so a pod that fits both grows the pool, not the canary's release not yet proven: a Karpenter
   NodePool's `spec.weight` (higher wins, `OrderByWeight`, kubernetes-sigs/karpenter
   pkg/utils/nodepool/nodepool.go at v1.14.1), and the cluster autoscaler's `priority` expander
   (tests/gpu_platform/eks/priority_expander.py) over the Auto Scaling group names EKS gives the
   planned node groups. GKE's own autoscaler takes no priorities: nothing to rank there.
"""

from collections.abc import Iterator, Mapping
from typing import Any

from gpu_platform.offline.program import Plan
from tests.gpu_platform.eks.priority_expander import parsed_priorities, rendered_config_map

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
KARPENTER_NODE_POOL = "kubernetes:karpenter.sh/v1:NodePool"
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
PRIORITY_CONFIG_MAP = "cluster-autoscaler-priority-expander"
POOL_LABEL = "gpu-platform.io/pool"
# A provider-made node group name suffix: 18 digits of time and 8 hex digits of a counter
# (Terraform's `PrefixedUniqueId`, which the AWS provider's `node_group_name_prefix` uses), and the
# `-<uuid>` EKS appends to `eks-<node group name>` for the node group's Auto Scaling group.
NODE_GROUP_SUFFIX = "20261205120000000000000001"
ASG_UUID = "a2c6b3e4-1d2f-4a5b-8c9d-0e1f2a3b4c5d"
Config = Mapping[str, Any]


def canary_capacity_problems(plan: Plan, config: Config) -> list[str]:
    """What in `config` (fully qualified keys, as `run_program` takes it) puts a canary on
    capacity that never starts its node; [] when nothing does."""
    return [
        f"canary {canary['name']}: {problem}"
        for canary, led in _pairs(config)
        for problem in _capacity_problems(canary, led)
    ]


def _pairs(config: Config) -> Iterator[tuple[Config, Config]]:
    pools = config.get("gpu-platform:pools", [])
    by_name = {pool["name"]: pool for pool in pools}
    for pool in pools:
        led = by_name.get(pool.get("canaryOf"))
        if led is not None:
            yield pool, led


def _capacity_problems(canary: Config, led: Config) -> Iterator[str]:
    aws, led_aws = canary.get("aws") or {}, led.get("aws") or {}
    gcp, led_gcp = canary.get("gcp") or {}, led.get("gcp") or {}
    if canary.get("capacity") == "capacity-block":
        yield "capacity-block starts no node for a plain pod"
    if gcp.get("queuedProvisioning"):
        yield "gcp.queuedProvisioning starts no node for a plain pod"
    if canary.get("capacity") == "reserved" and led.get("capacity") == "reserved":
        for key in ("capacityReservationId", "capacityReservationResourceGroupArn"):
            shared = aws.get(key) is not None and aws.get(key) == led_aws.get(key)
            if shared and not aws.get("onDemandFallback"):
                yield f"only the reservation of {led['name']} (aws.{key} {aws[key]})"
    if gcp.get("reservation") == "specific" and led_gcp.get("reservation") == "specific":
        name = gcp.get("reservationName")
        if name is not None and name == led_gcp.get("reservationName"):
            yield f"only the reservation of {led['name']} (gcp.reservationName {name})"


def canary_rank_problems(plan: Plan, config: Config) -> list[str]:
    """Where a canary of `config` ranks no lower than a pool that is not a canary, by the plan's
    NodePool weights or priority expander; [] when every canary ranks below."""
    pools = config.get("gpu-platform:pools", [])
    names = {p["name"] for p in pools}
    canaries = {p["name"] for p in pools if p.get("canaryOf") is not None}
    if not canaries:
        return []
    ranks = [("NodePool weight", _karpenter_weights(plan))]
    priorities = _expander_priorities(plan)
    if priorities is not None:
        ranks.append(("priority expander", priorities))
    problems = []
    for what, all_ranks in ranks:
        rank = {name: all_ranks[name] for name in names & all_ranks.keys()}
        problems += [f"{what}: pool {name} has no rank" for name in rank if rank[name] is None]
        for canary in sorted(canaries & rank.keys()):
            for pool in sorted(rank.keys() - canaries):
                ours, theirs = rank[canary], rank[pool]
                if ours is not None and theirs is not None and ours >= theirs:
                    problems.append(
                        f"{what}: canary {canary} ranks {ours}, not below pool {pool}'s {theirs}"
                    )
    return problems


def _karpenter_weights(plan: Plan) -> dict[str, int | None]:
    # An unset weight is 0 (karpenter.sh_nodepools.yaml at v1.14.1: `weight`, minimum 1, optional).
    return {
        n.inputs["metadata"]["name"]: int(n.inputs["spec"].get("weight") or 0)
        for n in plan.of_type(KARPENTER_NODE_POOL)
    }


def _expander_priorities(plan: Plan) -> dict[str, int | None] | None:
    """Each pool's lowest priority over its node groups (None where one matches no expression,
    which the expander drops), or None without a `priority` expander in the plan."""
    config_map = next(
        (
            c.inputs
            for c in plan.of_type(CONFIG_MAP)
            if c.inputs.get("metadata", {}).get("name") == PRIORITY_CONFIG_MAP
        ),
        None,
    )
    for release in plan.of_type(HELM_RELEASE):
        config_map = config_map or rendered_config_map(release.inputs.get("values") or {})
    if config_map is None:
        return None
    levels = parsed_priorities(config_map)
    found: dict[str, int | None] = {}
    for group in plan.of_type(NODE_GROUP):
        pool = (group.inputs.get("labels") or {}).get(POOL_LABEL)
        if pool is None:
            continue
        name = group.inputs.get("nodeGroupName") or (
            group.inputs["nodeGroupNamePrefix"] + NODE_GROUP_SUFFIX
        )
        asg = f"eks-{name}-{ASG_UUID}"
        # The expander keeps a group at the highest level any of whose expressions it matches.
        matched = [level for level, found_ in levels.items() if any(e.search(asg) for e in found_)]
        priority = max(matched, default=None)
        if pool in found:
            current = found[pool]
            priority = None if current is None or priority is None else min(current, priority)
        found[pool] = priority
    return found
