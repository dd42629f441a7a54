"""Karpenter: a reserved pool's on-demand fallback beside an on-demand pool of smaller sizes.

Karpenter tries the NodePools a pod fits by weight and keeps the first that can take it
(`addToNewNodeClaim`, kubernetes-sigs/karpenter pkg/controllers/provisioning/scheduling/
scheduler.go at v1.14.1). A full reservation is no error there: its offerings are unavailable,
so `offeringsToReserve` (nodeclaim.go) finds no compatible reserved offering and raises no
`ReservedOfferingError`, and a pool that also takes `on-demand` keeps the pod and launches its
own sizes on demand. A reserved pool ranks above the on-demand pools (`CAPACITY_PREFERENCE`), so
with the reservation full a 1-GPU pod would start a g6.12xlarge (4 GPUs) of `l4-reserved` on
demand rather than a g6.xlarge of `l4-on-demand`. Without the fallback the reserved NodePool has
no offering left for the pod, and Karpenter moves on to the on-demand pool. With the smaller
sizes among its own instance types, the pool still launches into its reservation while that has
room (`getCapacityType`, aws/karpenter-provider-aws pkg/providers/instance/instance.go at
v1.14.1, takes `reserved` wherever an instance type has an available reserved offering), and
its fallback the cheapest size that fits (EC2 Fleet's `lowest-price` on-demand allocation,
pkg/providers/instance/types.go). A NodePool weighs its capacity types together, so the
platform cannot rank the fallback below the on-demand pools while it keeps the reservation above
them: config refuses the combination and names both ways out.

Only pools naming `instanceTypes` are compared: a reserved pool of instance families falls back
to the cheapest of their sizes that fits, and an on-demand pool's families have sizes config
does not know (EC2 lists them at plan time).
"""

import re
from collections.abc import Iterator

from gpu_platform.config.fields import Cloud
from gpu_platform.config.pools import GpuPoolSpec
from gpu_platform.config.problems import ConfigProblem, key_path
from gpu_platform.config.stack import StackConfig

_SIZE = re.compile(r"^(\d*)xlarge$")
# EC2's sizes below `xlarge`, by the share of one they are (the instance type naming
# conventions, EC2 user guide "Amazon EC2 instance type naming conventions").
_SMALL_SIZES = {"nano": 1 / 32, "micro": 1 / 16, "small": 1 / 8, "medium": 1 / 4, "large": 1 / 2}


def fallback_order_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    """A reserved Karpenter pool with `onDemandFallback` whose instance types are larger than an
    on-demand pool's of the same family: its fallback would take the pods that pool fits."""
    if config.cloud is not Cloud.AWS or not config.uses_karpenter:
        return
    on_demand = [
        (j, pool)
        for j, pool in enumerate(config.pools)
        if pool.capacity == "on-demand" and pool.canary_of is None and pool.instance_types
    ]
    for i, pool in enumerate(config.pools):
        if pool.capacity != "reserved" or not pool.aws.on_demand_fallback:
            continue
        for j, other in on_demand:
            smaller = _smaller_sizes(pool, other)
            if smaller:
                yield ConfigProblem(
                    key_path("pools", i, "aws", "onDemandFallback"),
                    True,
                    f"false or no value beside on-demand pool {other.name}"
                    f" ({key_path('pools', j, 'instanceTypes')}: {', '.join(smaller)}) under"
                    " provisioner karpenter: with the reservation full, Karpenter keeps this"
                    " pool, which outranks it, and launches this pool's"
                    f" {', '.join(pool.instance_types)} on demand for pods {other.name}'s smaller"
                    " sizes fit (scheduler.go addToNewNodeClaim, kubernetes-sigs/karpenter"
                    " v1.14.1). Without the fallback Karpenter moves on to"
                    f" {other.name}; or add {', '.join(smaller)} to"
                    f" {key_path('pools', i, 'instanceTypes')}, so that the fallback launches"
                    " the cheapest size that fits",
                )
                break


def _smaller_sizes(pool: GpuPoolSpec, other: GpuPoolSpec) -> list[str]:
    """`other`'s instance types of a family of `pool`'s that are smaller than `pool`'s
    largest of that family and that `pool` does not list."""
    largest: dict[str, float] = {}
    for name in pool.instance_types:
        family, rank = _family_and_rank(name)
        if rank is not None:
            largest[family] = max(largest.get(family, rank), rank)
    found = []
    for name in other.instance_types:
        family, rank = _family_and_rank(name)
        if (
            rank is not None
            and family in largest
            and rank < largest[family]
            and name not in pool.instance_types
        ):
            found.append(name)
    return found


def _family_and_rank(instance_type: str) -> tuple[str, float | None]:
    """`g6.12xlarge` as (`g6`, 12); a size of no known rank (`metal`) as None."""
    family, _, size = instance_type.partition(".")
    if size in _SMALL_SIZES:
        return family, _SMALL_SIZES[size]
    found = _SIZE.match(size)
    if found is None:
        return family, None
    return family, float(found[1] or 1)
