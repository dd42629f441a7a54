"""The cluster autoscaler's settings the GPU pools rely on, whoever installs it: the flags and
the `priority` expander's configuration. The release the stack installs gets them as chart values
(`gpu_platform.eks.cluster_autoscaler`); a cluster that runs its own autoscaler is told them
(`own_autoscaler_settings`) and preflight checks them
(`gpu_platform.eks.preflight.autoscaler_settings`).
"""

import re
from collections.abc import Sequence
from typing import Any

from gpu_platform.config import (
    CAPACITY_PREFERENCE,
    ClusterAutoscalerSpec,
    GpuPoolSpec,
    pool_preference,
)
from gpu_platform.eks.node_group_names import node_group_pattern
from gpu_platform.idle_billing import scale_down_delay_after_add_minutes
from gpu_platform.kubernetes.node_validation.duration import go_duration, until_validated_seconds

# Higher wins. Capacity already paid for comes first, capacity that can be taken back last. A
# group whose new nodes fail to start (a full reservation) is backed off and another one grown:
# at the latest after `max-node-provision-time` (cluster-autoscaler FAQ, "How does scale-up
# work?"), sooner where the AWS provider sees the Auto Scaling group's scaling activity fail
# (isNodeGroupAvailable, cloudprovider/aws/auto_scaling_groups.go).
CAPACITY_PRIORITIES = CAPACITY_PREFERENCE
# Every other group of the cluster ranks above the GPU pools. The expander keeps only the
# options of the highest priority any of them matches and drops every group no expression matches
# ("The group won't be used", `BestOptions` in expander/priority/priority.go, cluster-autoscaler
# 1.33.6 to 1.36.1), and the installed autoscaler manages every managed node group of the
# cluster: ranked below a GPU pool, or left out, a CPU group would lose to it for a CPU pod that
# tolerates the GPU taint (common in ML charts), and a p5 would start for it. A GPU pod never
# fits a CPU group, so ranking those first costs GPU pods nothing. The expander only ranks the
# groups that can grow: where every CPU group is at its maximum or backed off, such a pod still
# grows a GPU pool.
OTHER_GROUPS_PRIORITY = 50
# A group named like a pool's (`eks-<pool>-...`) that is none of the pool's own node groups:
# last, but never dropped.
LOOKALIKE_PRIORITY = 1


def expander_priorities(pools: Sequence[GpuPoolSpec]) -> str:
    """The `priority` expander's configuration (priority -> node group name expressions), as the
    YAML text the chart puts in the `cluster-autoscaler-priority-expander` ConfigMap.

    Every group the autoscaler can see matches an expression: the cluster's other groups
    (`OTHER_GROUPS_PRIORITY`), each GPU pool's by its capacity (a canary's below every pool's,
    `pool_preference`), and at the bottom any group named like a pool's. On AWS the
    autoscaler names a node group by its Auto Scaling group. EKS names a managed node group's
    group `eks-<node group name>-<uuid>`, and the pools' node groups are
    named from a prefix, `<pool>-` (or `<pool>-<zone>-` per zone), and a unique suffix of 26
    characters (18 digits of time and 8 hex of a counter, Terraform's `UniqueId`, which the AWS
    provider uses for `name_prefix`): anchored on it, one pool's expression never matches
    another pool whose name it begins (`node_group_names`). Go's regular expressions have no
    negative lookahead, so "not a GPU pool's" is spelt out character by character
    (`not_prefixed_by`)."""
    by_priority: dict[int, list[str]] = {}
    for pool in pools:
        expression = f"^eks-{node_group_pattern(pool.name)}-"
        by_priority.setdefault(pool_preference(pool), []).append(expression)
    prefixes = sorted({f"eks-{pool.name}-" for pool in pools})
    levels: list[tuple[int, str, list[str]]] = [
        (
            OTHER_GROUPS_PRIORITY,
            "Every node group whose name does not begin eks-<GPU pool>-: the cluster's own"
            " groups, first for any pod that fits them.",
            [not_prefixed_by(prefixes)],
        ),
        *(
            (level, _level_comment(level), by_priority[level])
            for level in sorted(by_priority, reverse=True)
        ),
        (
            LOOKALIKE_PRIORITY,
            "Groups named like a GPU pool's that are none of its node groups: last.",
            ["^(?:" + "|".join(re.escape(p) for p in prefixes) + ")"],
        ),
    ]
    return "".join(
        f"# {comment}\n{level}:\n" + "".join(f"  - {_yaml_string(e)}\n" for e in expressions)
        for level, comment, expressions in levels
    )


def _level_comment(level: int) -> str:
    by_level = {priority: capacity for capacity, priority in CAPACITY_PRIORITIES.items()}
    if level in by_level:
        return f"GPU pools of capacity {by_level[level]}."
    return "Canaries: below every GPU pool, whatever their capacity."


def _yaml_string(text: str) -> str:
    # Single-quoted YAML scalars take every character but `'`, which they double.
    return "'" + text.replace("'", "''") + "'"


def not_prefixed_by(prefixes: Sequence[str]) -> str:
    """A regular expression without lookahead (Go's RE2 syntax) that matches exactly the names
    beginning with none of `prefixes`: at each character of a prefix, a name may end, differ, or
    go on to the next character."""
    trie: dict[str, Any] = {}
    for prefix in prefixes:
        node = trie
        for char in prefix:
            node = node.setdefault(char, {})
        node[""] = {}

    def branch(node: dict[str, Any]) -> str | None:
        if "" in node:
            return None
        followers = [
            re.escape(char) + f"(?:{rest})"
            for char, child in sorted(node.items())
            if (rest := branch(child)) is not None
        ]
        differs = "[^" + "".join(_class_char(c) for c in sorted(node)) + "]"
        return "|".join(["$", differs, *followers])

    return f"^(?:{branch(trie)})"


def _class_char(char: str) -> str:
    return "\\" + char if char in "\\]^-[" else char


# Labels that differ between the node groups of one pool, one per zone, besides those the AWS
# provider already ignores when it compares groups (`CreateAwsNodeInfoComparator`,
# processors/nodegroupset/aws_nodegroups.go, and `BasicIgnoredLabels` in compare_nodegroups.go:
# the zone labels, `eks.amazonaws.com/nodegroup`, `topology.ebs.csi.aws.com/zone`, the hostname).
# The template turns every `eks:` tag of the Auto Scaling group into a label (`extractLabelsFromAsg`
# in cloudprovider/aws/aws_manager.go, 1.33.6 to 1.36.1), so EKS's own `eks:nodegroup-name` tag
# becomes `nodegroup-name`, which names each group (kubernetes/autoscaler#6954): unignored, no two
# zonal groups are ever similar, and a burst fills one zone before the next. The chart passes
# `extraArgs` as `--<key>=<value>`, dropping what follows a `_` in the key (templates/
# deployment.yaml, chart 9.59.0), which is how a flag given twice would be spelt.
BALANCING_IGNORED_LABELS = {"balancing-ignore-label": "nodegroup-name"}
PRIORITY_CONFIG_MAP = "cluster-autoscaler-priority-expander"
"""The ConfigMap the `priority` expander reads, under the key `priorities`, in the namespace of
the autoscaler's `--namespace` flag (`PriorityConfigMapName`, expander/priority/priority.go)."""


def autoscaler_args(spec: ClusterAutoscalerSpec, pools: Sequence[GpuPoolSpec]) -> dict[str, Any]:
    """The autoscaler's flags the platform depends on, as the chart's `extraArgs`."""
    return {
        "balance-similar-node-groups": spec.balance_similar_node_groups,
        **(BALANCING_IGNORED_LABELS if spec.balance_similar_node_groups else {}),
        # Groups of one priority are compared by the next expander of the list.
        "expander": "priority,least-waste" if spec.expander == "priority" else spec.expander,
        # The cooldown after a scale-up is the cluster's: longer than the GPU nodes' unneeded
        # time, it would keep an empty GPU node billing past it (`gpu_platform.idle_billing`).
        "scale-down-delay-after-add": (
            f"{scale_down_delay_after_add_minutes(spec.gpu_node_idle_minutes)}m0s"
        ),
        **_validation_start_times(pools),
        **_provisioning_requests(pools),
        **_dynamic_resource_allocation(pools),
    }


def _dynamic_resource_allocation(pools: Sequence[GpuPoolSpec]) -> dict[str, bool]:
    """Where a pool's GPUs are DRA devices (`allocation: dra`), the flag that has the autoscaler
    simulate ResourceClaims: false by default at cluster-autoscaler-1.34.5, locked to true from
    1.35.0, where false stops it (config/flags/flags.go, `enable-dynamic-resource-allocation`).
    Without it, a pod claiming a GPU fits every node to the autoscaler."""
    if not any(pool.allocation == "dra" for pool in pools):
        return {}
    return {"enable-dynamic-resource-allocation": True}


def _provisioning_requests(pools: Sequence[GpuPoolSpec]) -> dict[str, bool]:
    """Where a pool scales up atomically (`aws.atomicScaleUp`), the flag that has the autoscaler
    act on ProvisioningRequests, of the `best-effort-atomic-scale-up` class among others
    (`enable-provisioning-requests`, false by default: config/flags/flags.go at
    cluster-autoscaler-1.33.6 to 1.36.1)."""
    if not any(pool.aws.atomic_scale_up for pool in pools):
        return {}
    return {"enable-provisioning-requests": True}


def _validation_start_times(pools: Sequence[GpuPoolSpec]) -> dict[str, str]:
    """How long the autoscaler lets a new node start, stretched to a validated node's longest wait.

    A node still carrying the validation taint (a startup taint) is not ready to the autoscaler.
    Younger than `max-node-startup-time` it is starting; older, unready, and removed once unready
    `scale-down-unready-time` (`updateReadinessStats`, clusterstate/clusterstate.go). A scale-up
    whose node is not started by `max-node-provision-time` times out and backs its group off
    (`updateScaleRequests`). Both default to 15 minutes (config/flags/flags.go), less than a
    validation at its tools' timeouts takes. On AWS neither can be set per group: its
    `autoscaling-options/` tags are read for the scale-down options only (`GetOptions`,
    cloudprovider/aws/aws_manager.go; all cluster-autoscaler-1.35.2), so they are the
    cluster's flags, and every group's scale-up timeout grows with them.
    """
    seconds = until_validated_seconds(pools)
    if not seconds:
        return {}
    return {
        "max-node-provision-time": go_duration(seconds),
        "max-node-startup-time": go_duration(seconds),
    }


def own_autoscaler_settings(
    spec: ClusterAutoscalerSpec, pools: Sequence[GpuPoolSpec]
) -> dict[str, Any]:
    """What a cluster that runs its own autoscaler (`autoscaler.install: false`) must give it for
    the GPU pools to scale as the platform plans them: the flags, spelt as on its command line,
    and the priority expander's ConfigMap text (None where the stack's expander is another)."""
    flags = [
        f"--{key}={str(value).lower() if isinstance(value, bool) else value}"
        for key, value in autoscaler_args(spec, pools).items()
    ]
    return {
        "flags": flags,
        "priorityConfigMap": (
            {
                "name": PRIORITY_CONFIG_MAP,
                "key": "priorities",
                "data": expander_priorities(pools),
            }
            if spec.expander == "priority"
            else None
        ),
    }
