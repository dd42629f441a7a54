"""Karpenter: a reserved pool's on-demand fallback beside a cheaper pool of the same GPU model.

Karpenter tries the NodePools a pod fits by weight and keeps the first that can take it
(`addToNewNodeClaim`, kubernetes-sigs/karpenter pkg/controllers/provisioning/scheduling/
scheduler.go at v1.14.1). A full reservation is no error there: its offerings are unavailable,
so `offeringsToReserve` (nodeclaim.go) finds no compatible reserved offering and raises no
`ReservedOfferingError`, and a pool that also takes `on-demand` keeps the pod and launches its
own sizes on demand. A reserved pool ranks above the on-demand and spot pools
(`CAPACITY_PREFERENCE`), so with the reservation full a 1-GPU pod would start a g6.12xlarge (4
GPUs) of `l4-reserved` on demand rather than a g6.xlarge of `l4-on-demand`, or a spot node of a
spot pool. Without the fallback the reserved NodePool has no offering left for the pod, and
Karpenter moves on. With the other pool's sizes among its own, the pool still launches into its
reservation while that has room (`getCapacityType`, aws/karpenter-provider-aws
pkg/providers/instance/instance.go at v1.14.1, takes `reserved` wherever an instance type has an
available reserved offering), and its fallback the cheapest size that fits (EC2 Fleet's
`lowest-price` on-demand allocation, pkg/providers/instance/types.go). A NodePool weighs its
capacity types together, so the platform cannot rank the fallback below the other pools while
it keeps the reservation above them: the combination is refused, naming both ways out. Beside a
spot pool the second way out would only move the loss: with the spot pool's sizes among its own,
the fallback still outranks the spot pool and launches those sizes on demand, at several times
spot's price, while spot has room. So there every size of the spot pool's GPU model that the
fallback can launch in its place counts, same shape or not, and the way out is the spot pool's own
`onDemandFallback`: a NodePool that takes both launches spot before on-demand
(Karpenter's docs at v1.14, `concepts/nodepools.md`, "Capacity Type"), so the pods go
to the reservation, then spot, then on demand.

Sizes are compared by what a node costs a pod: its GPUs, then vCPUs, then memory, from EC2's
instance type data, not by the number in the size's name (a g6.16xlarge has 1 GPU, a
g6.12xlarge 4); pools by the GPU model EC2 gives (an L4 of g6 and of gr6 is the same GPU). A
pool of instance families or categories is compared by the sizes of them that EC2 offers with
its GPU model (`NodeGroupPlacement.instance_types`), which is what its NodePool admits.
"""

from collections.abc import Iterator, Mapping, Sequence

from gpu_platform.config import ConfigProblem, GpuPoolSpec, StackConfig, key_path
from gpu_platform.eks.instance_types import (
    InstanceType,
    instance_category,
    instance_family,
    sizes_key,
)

FALLBACK_OVER = ("on-demand", "spot")
"""The capacity types of the pools a reserved pool's weight outranks (`CAPACITY_PREFERENCE`)."""


def fallback_order_problems(
    config: StackConfig, sizes: Mapping[str, Sequence[InstanceType]]
) -> Iterator[ConfigProblem]:
    """A reserved Karpenter pool with `onDemandFallback` beside an on-demand pool with a cheaper
    size of the same GPU model that the reserved pool lacks, or beside a spot pool with a size of
    that model up to the reserved pool's largest: its fallback would take the pods that size
    fits, on demand. `sizes` are the instance types of each pool, by name, as EC2
    describes them; a pool without them is not compared."""
    if not config.uses_node_pools:
        return
    others = [
        (j, pool)
        for j, pool in enumerate(config.pools)
        # A canary is the last pool by weight (`CANARY_PREFERENCE`) and takes only the pods
        # that tolerate its taint: the fallback never competes with it for a pod.
        if pool.capacity in FALLBACK_OVER and pool.canary_of is None and pool.name in sizes
    ]
    # An on-demand pool outranks the spot pools (`CAPACITY_PREFERENCE`): a spot size it offers
    # in the same shape is one Karpenter would start on demand without the fallback too, so the
    # fallback costs nothing more there.
    on_demand = {
        _shape(size)
        for _, other in others
        if other.capacity == "on-demand"
        for size in sizes[other.name]
    }
    for i, pool in enumerate(config.pools):
        if pool.capacity != "reserved" or not pool.aws.on_demand_fallback:
            continue
        own = sizes.get(pool.name)
        if not own:
            continue
        for j, other in others:
            theirs = sizes[other.name]
            if other.capacity == "spot":
                theirs = [size for size in theirs if _shape(size) not in on_demand]
            cheaper = _cheaper_sizes(own, theirs, spot=other.capacity == "spot")
            if cheaper:
                yield _problem(config, i, pool, j, other, own, cheaper)
                break


def _cost(size: InstanceType) -> tuple[int, int, int]:
    """What a node of the size gives a pod, in the order it is paid for."""
    return (size.gpu_count, size.vcpus, size.memory_mib)


def _shape(size: InstanceType) -> tuple[str | None, tuple[int, int, int]]:
    """A size as a pod sees it: its GPU model and what a node gives."""
    return (size.accelerator, _cost(size))


def _cheaper_sizes(
    own: Sequence[InstanceType], other: Sequence[InstanceType], *, spot: bool
) -> list[str]:
    """`other`'s sizes of a GPU model of `own`'s that cost less than `own`'s largest of that
    model and that `own` has no size of the same shape for; of a `spot` pool, every size of the
    model up to `own`'s largest, which the fallback launches on demand in its place."""
    largest: dict[str | None, tuple[int, int, int]] = {}
    for size in own:
        largest[size.accelerator] = max(largest.get(size.accelerator, _cost(size)), _cost(size))
    shapes = {_shape(size) for size in own}
    return [
        size.name
        for size in other
        if size.accelerator in largest
        and (
            _cost(size) <= largest[size.accelerator]
            if spot
            else _cost(size) < largest[size.accelerator] and _shape(size) not in shapes
        )
    ]


def _problem(
    config: StackConfig,
    i: int,
    pool: GpuPoolSpec,
    j: int,
    other: GpuPoolSpec,
    own: Sequence[InstanceType],
    cheaper: list[str],
) -> ConfigProblem:
    path, _ = sizes_key(pool, i)
    other_path, other_sizes = sizes_key(other, j)
    if pool.aws.instance_families:
        add = sorted({instance_family(n) for n in cheaper})
    elif pool.aws.instance_categories:
        add = sorted({instance_category(n) or n for n in cheaper})
    else:
        add = cheaper
    largest = max(own, key=_cost)
    keeps = (
        f"Karpenter keeps this pool, which outranks it, and launches its sizes on demand for pods"
        f" {', '.join(cheaper)} fit (scheduler.go addToNewNodeClaim, kubernetes-sigs/karpenter"
        f" v1.14.1). Without the fallback Karpenter moves on to {other.name}"
    )
    if other.capacity == "spot":
        return ConfigProblem(
            key_path("pools", i, "aws", "onDemandFallback"),
            True,
            f"false or no value beside spot pool {other.name} ({other_path}:"
            f" {', '.join(other_sizes)}, of which {', '.join(cheaper)} have no more GPUs, vCPUs"
            f" or memory than this pool's {largest.name}, {largest.gpu_count} GPU(s)) under"
            f" provisioner {config.provisioner}: with the reservation full, {keeps} and starts"
            f" them as spot nodes. The fallback outranks spot pools of the same sizes too, so"
            " listing them here would launch them on demand while spot has room; for on-demand"
            f" once spot has none, set {key_path('pools', j, 'aws', 'onDemandFallback')}: true"
            " instead (a NodePool launches spot before on-demand)",
        )
    return ConfigProblem(
        key_path("pools", i, "aws", "onDemandFallback"),
        True,
        f"false or no value beside {other.capacity} pool {other.name} ({other_path}:"
        f" {', '.join(other_sizes)}, of which {', '.join(cheaper)} cost less than this pool's"
        f" {largest.name}, {largest.gpu_count} GPU(s)) under provisioner"
        f" {config.provisioner}: with the reservation full, {keeps}; or add {', '.join(add)}"
        f" to {path}, so that the fallback launches the cheapest size that fits",
    )
