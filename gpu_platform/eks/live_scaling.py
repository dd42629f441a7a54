"""The size a pool's node groups run at now, so that a change of their bounds goes through.

The cluster autoscaler owns a node group's desired size, so the program ignores later changes to
it. But EKS takes a node group's sizes together (UpdateNodegroupConfig's `scalingConfig`), and
checks a new `min` or `max` against the desired size sent with them: raising `min` above the
running size, or lowering `max` below it, is refused ("Minimum capacity 2 can't be greater than
desired size 0") in the middle of `pulumi up`. So the program reads the running node groups
(found by the names the AWS provider makes from the pool's prefixes, `node_group_names`), and
where a group's bounds differ from its live ones, sends its live desired size moved within the
new bounds.

Between this read and the update the autoscaler may change the desired size again; the update
then sets it to what was read, moved within the bounds, and the autoscaler corrects it on its
next loop.
"""

from dataclasses import dataclass

from pulumi_aws import eks

from gpu_platform.eks.cluster import EksCluster
from gpu_platform.eks.node_group_names import is_node_group_of, zone_of


@dataclass(frozen=True)
class LiveScaling:
    """A running node group's sizes."""

    node_group: str
    min_size: int
    max_size: int
    desired_size: int


def live_scalings(cluster: EksCluster, pool_name: str) -> dict[str | None, LiveScaling]:
    """The sizes of the pool's running node groups, by zone (None for a pool's only group). A
    group is left out while a replacement runs beside it (two of the same zone)."""
    if not cluster.exists:
        return {}
    names = eks.get_node_groups(cluster_name=cluster.name, region=cluster.region).names
    by_zone: dict[str | None, list[str]] = {}
    for name in names:
        if is_node_group_of(pool_name, name):
            by_zone.setdefault(zone_of(pool_name, name), []).append(name)
    found = {}
    for zone, (*others, name) in by_zone.items():
        if others:
            continue
        group = eks.get_node_group(
            cluster_name=cluster.name, node_group_name=name, region=cluster.region
        )
        (scaling,) = group.scaling_configs
        found[zone] = LiveScaling(name, scaling.min_size, scaling.max_size, scaling.desired_size)
    return found


def desired_size_to_send(min_size: int, max_size: int, live: LiveScaling | None) -> int | None:
    """The desired size an update must send with these bounds; None where they do not change
    (or the group is new), and the autoscaler's choice stands."""
    if live is None or (live.min_size, live.max_size) == (min_size, max_size):
        return None
    return min(max(live.desired_size, min_size), max_size)
