"""The desired size a change of a pool's bounds sends, read when the update runs, never planned.

The cluster autoscaler owns a node group's desired size, so the program ignores later changes to
it. But EKS takes a node group's sizes together (UpdateNodegroupConfig's `scalingConfig`), and
checks a new `min` or `max` against the desired size sent with them: raising `min` above the
running size, or lowering `max` below it, is refused ("Minimum capacity 2 can't be greater than
desired size 0") in the middle of `pulumi up`. The AWS provider sends all three sizes with any
change of one (`expandNodegroupScalingConfig`, terraform-provider-aws
internal/service/eks/node_group.go), so ignoring the desired size would send the one in the
stack's state, however old.

No size taken from config alone is safe: the new `min` as desired would drain running GPU nodes,
jobs and all, where more run; the new `max` would start and pay for idle ones. The only safe value
is the running size moved within the new bounds, which only the cloud knows, and which the
autoscaler moves at any time. So where a group's bounds change (found by comparing the config's
bounds with the running group's, `live_bounds`, by the names the AWS provider makes from the
pool's prefixes), the desired size is:

- unknown in a preview. A saved plan (`pulumi preview --save-plan`) records it so, and Pulumi
  lets an unknown planned value take any value at `pulumi up --plan` (`checkDiff`,
  pkg/resource/deploy/plan.go; `DeepEqualsIncludeUnknowns`, sdk/go/common/resource/
  properties_diff.go: "Anything is equal to a computed"). A size read at plan time and sent back
  hours later would fail the approved plan as soon as the autoscaler moved ("violates plan:
  properties changed: ~~scalingConfig"), or, without a plan, set the group back to it.
- read in the update itself, after everything the node group waits for is done (an invoke
  gated on those resources), so that the size sent is seconds old, not the age of the run.

Limits: the autoscaler may still move the group in the seconds between that read and EKS taking
the update; the update then sets the size read, moved within the bounds, and the autoscaler
corrects it on its next loop (a node started for nothing idles until it is removed; one the
autoscaler had just asked for is asked for again). The running bounds are read at plan time
only to tell whether the bounds change, which decides `ignoreChanges`: a bound changed by hand
between plan and update fails the approved plan ("ignoreChanges changed"), as it should, since
the plan no longer describes the change. Preflight (`gpu-platform preflight`) says at plan time
how many nodes a bound change starts or removes at the running size.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi_aws import eks

from gpu_platform.eks.cluster import EksCluster
from gpu_platform.eks.node_group_names import is_node_group_of, zone_of
from gpu_platform.instance import lookup_options, lookup_provider


@dataclass(frozen=True)
class LiveBounds:
    """A running node group's name and bounds."""

    node_group: str
    min_size: int
    max_size: int


def live_bounds(cluster: EksCluster, pool_name: str) -> dict[str | None, LiveBounds]:
    """The bounds of the pool's running node groups, by zone (None for a pool's only group). A
    group is left out while a replacement runs beside it (two of the same zone)."""
    if not cluster.exists:
        return {}
    names = eks.get_node_groups(
        cluster_name=cluster.name, region=cluster.region, opts=lookup_options("aws")
    ).names
    by_zone: dict[str | None, list[str]] = {}
    for name in names:
        if is_node_group_of(pool_name, name):
            by_zone.setdefault(zone_of(pool_name, name), []).append(name)
    found = {}
    for zone, (*others, name) in by_zone.items():
        if others:
            continue
        group = eks.get_node_group(
            cluster_name=cluster.name,
            node_group_name=name,
            region=cluster.region,
            opts=lookup_options("aws"),
        )
        (scaling,) = group.scaling_configs
        found[zone] = LiveBounds(name, scaling.min_size, scaling.max_size)
    return found


def desired_size_to_send(
    cluster: EksCluster,
    min_size: int,
    max_size: int,
    live: LiveBounds | None,
    after: Sequence[pulumi.Resource],
) -> pulumi.Output[int] | None:
    """The desired size an update must send with these bounds: the running size moved within
    them, read once `after` are done; unknown in a preview. None where the bounds do not change
    (or the group is new), and the autoscaler's choice stands."""
    if live is None or (live.min_size, live.max_size) == (min_size, max_size):
        return None
    if pulumi.runtime.is_dry_run():
        # The same dependencies as the read below: a saved plan also holds each property's
        # dependencies and refuses an update whose differ (`checkGoal`, plan.go).
        return pulumi.Output(set(after), _resolved(None), _resolved(False))
    group = eks.get_node_group_output(
        cluster_name=cluster.name,
        node_group_name=live.node_group,
        region=cluster.region,
        opts=pulumi.InvokeOutputOptions(depends_on=list(after), provider=lookup_provider("aws")),
    )
    return group.scaling_configs.apply(
        lambda configs: min(max(configs[0].desired_size, min_size), max_size)
    )


async def _resolved(value: object) -> Any:
    return value
