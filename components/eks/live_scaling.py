"""The size a pool's node group runs at now, so that a change of its bounds goes through.

The cluster autoscaler owns a node group's desired size, so the program ignores later changes to
it. But EKS takes a node group's sizes together (UpdateNodegroupConfig's `scalingConfig`), and
checks a new `min` or `max` against the desired size sent with them: raising `min` above the
running size, or lowering `max` below it, is refused ("Minimum capacity 2 can't be greater than
desired size 0") in the middle of `pulumi up`. So the program reads the running node group
(found by the name the AWS provider makes from the pool's prefix, `node_group_names`), and when
the pool's bounds differ from its live ones, sends the live desired size moved within the new
bounds.

Between this read and the update the autoscaler may change the desired size again; the update
then sets it to what was read, moved within the bounds, and the autoscaler corrects it on its
next loop.
"""

from dataclasses import dataclass

from pulumi_aws import eks

from components.config import GpuPoolSpec
from components.eks.cluster import EksCluster
from components.eks.node_group_names import is_node_group_of


@dataclass(frozen=True)
class LiveScaling:
    """A running node group's sizes."""

    node_group: str
    min_size: int
    max_size: int
    desired_size: int


def live_scaling(cluster: EksCluster, pool_name: str) -> LiveScaling | None:
    """The sizes of the pool's running node group; None before it exists, or while a
    replacement runs beside it (two groups of the pool's name)."""
    names = eks.get_node_groups(cluster_name=cluster.name, region=cluster.region).names
    matching = [name for name in names if is_node_group_of(pool_name, name)]
    if len(matching) != 1:
        return None
    found = eks.get_node_group(
        cluster_name=cluster.name, node_group_name=matching[0], region=cluster.region
    )
    (scaling,) = found.scaling_configs
    return LiveScaling(matching[0], scaling.min_size, scaling.max_size, scaling.desired_size)


def desired_size_to_send(spec: GpuPoolSpec, live: LiveScaling | None) -> int | None:
    """The desired size the update must send with the pool's bounds; None where the bounds do
    not change (or the group is new), and the autoscaler's choice stands."""
    if live is None or (live.min_size, live.max_size) == (spec.min, spec.max):
        return None
    return min(max(live.desired_size, spec.min), spec.max)
