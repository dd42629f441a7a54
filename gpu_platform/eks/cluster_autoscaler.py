"""The Kubernetes cluster autoscaler on EKS: pinned chart, Pod Identity, least privilege.

It finds the node groups by their discovery tags, reads their scale-from-zero hints, and only
changes the size of Auto Scaling groups tagged as this cluster's. Its AWS identity comes from an
EKS Pod Identity association, which needs the cluster's EKS Pod Identity Agent add-on (the
pre-flight check looks for it).
"""

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi_aws import iam
from pulumi_kubernetes import helm

from gpu_platform.config import ClusterAutoscalerSpec, GpuPoolSpec
from gpu_platform.eks.autoscaler_tags import cluster_discovery_tag
from gpu_platform.eks.cluster import EksCluster
from gpu_platform.eks.node_group_names import node_group_pattern
from gpu_platform.eks.pod_identity import pod_identity
from gpu_platform.kubernetes import helm_release
from gpu_platform.node_identity import ResolvedPool
from gpu_platform.versions import (
    CLUSTER_AUTOSCALER_CHART,
    CLUSTER_AUTOSCALER_IMAGES,
    ContainerImage,
)

SERVICE_ACCOUNT = "cluster-autoscaler"

# What the autoscaler reads to discover groups and plan nodes: Auto Scaling groups and their
# tags, the instance types and launch templates behind them, and managed node groups' labels
# and taints (which it also reads for a group at zero).
_READ_ACTIONS = [
    "autoscaling:DescribeAutoScalingGroups",
    "autoscaling:DescribeAutoScalingInstances",
    "autoscaling:DescribeLaunchConfigurations",
    "autoscaling:DescribeScalingActivities",
    "autoscaling:DescribeTags",
    "ec2:DescribeImages",
    "ec2:DescribeInstanceTypes",
    "ec2:DescribeLaunchTemplateVersions",
    "ec2:GetInstanceTypesFromInstanceRequirements",
]
_SCALE_ACTIONS = [
    "autoscaling:SetDesiredCapacity",
    "autoscaling:TerminateInstanceInAutoScalingGroup",
]


@dataclass
class ClusterAutoscalerArgs:
    spec: ClusterAutoscalerSpec
    cluster: EksCluster
    image: ContainerImage
    """Matches the cluster's Kubernetes minor version (`autoscaler_image`)."""
    pools: Sequence[ResolvedPool]
    """The stack's GPU pools, ranked for the `priority` expander by what their capacity is."""


class ClusterAutoscaler(pulumi.ComponentResource):
    """The cluster autoscaler release, its IAM role and Pod Identity association."""

    def __init__(
        self, name: str, args: ClusterAutoscalerArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__("gpu-platform:eks:ClusterAutoscaler", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        cluster = args.cluster
        identity = pod_identity(
            name,
            description=f"Cluster autoscaler of EKS cluster {cluster.name}",
            cluster=cluster,
            namespace=args.spec.namespace,
            service_account=SERVICE_ACCOUNT,
            opts=child,
        )
        policy = iam.RolePolicy(
            f"{name}-policy",
            role=identity.role.id,
            policy=json.dumps(autoscaler_policy(cluster)),
            opts=child,
        )
        self.release = helm.v3.Release(
            name,
            name="cluster-autoscaler",
            chart=CLUSTER_AUTOSCALER_CHART.name,
            version=args.spec.chart_version,
            repository_opts=helm.v3.RepositoryOptsArgs(repo=CLUSTER_AUTOSCALER_CHART.repository),
            namespace=args.spec.namespace,
            values=autoscaler_values(args.spec, cluster, args.image, args.pools),
            **helm_release.CLUSTER_AUTOSCALER.release_args(),
            # Credentials must exist before the first pod asks for them, or it starts without.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[identity.association, policy]),
        )
        self.register_outputs({"release": self.release.name, "role_arn": identity.role.arn})


def autoscaler_policy(cluster: EksCluster) -> dict[str, Any]:
    """Read what it plans with; resize and shrink only this cluster's tagged groups."""
    nodegroups = (
        f"arn:{cluster.partition}:eks:{cluster.region}:{cluster.account_id}"
        f":nodegroup/{cluster.name}/*/*"
    )
    groups = (
        f"arn:{cluster.partition}:autoscaling:{cluster.region}:{cluster.account_id}"
        ":autoScalingGroup:*:autoScalingGroupName/*"
    )
    return {
        "Version": "2012-10-17",
        "Statement": [
            {"Sid": "Discover", "Effect": "Allow", "Action": _READ_ACTIONS, "Resource": "*"},
            {
                "Sid": "ReadNodeGroups",
                "Effect": "Allow",
                "Action": "eks:DescribeNodegroup",
                "Resource": nodegroups,
            },
            {
                "Sid": "ScaleOwnGroups",
                "Effect": "Allow",
                "Action": _SCALE_ACTIONS,
                "Resource": groups,
                "Condition": {
                    "StringEquals": {
                        f"aws:ResourceTag/{cluster_discovery_tag(cluster.name)}": "owned"
                    }
                },
            },
        ],
    }


# Higher wins. Capacity already paid for comes first, capacity that can be taken back last. A
# group whose new nodes fail to start (a full reservation) is backed off and another one grown:
# at the latest after `max-node-provision-time` (cluster-autoscaler FAQ, "How does scale-up
# work?"), sooner where the AWS provider sees the Auto Scaling group's scaling activity fail
# (isNodeGroupAvailable, cloudprovider/aws/auto_scaling_groups.go).
CAPACITY_PRIORITIES = {"capacity-block": 40, "reserved": 30, "on-demand": 20, "spot": 10}
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
    (`OTHER_GROUPS_PRIORITY`), each GPU pool's by its capacity, and at the bottom any group named
    like a pool's. On AWS the autoscaler names a node group by its Auto Scaling group. EKS names
    a managed node group's group `eks-<node group name>-<uuid>`, and the pools' node groups are
    named from a prefix, `<pool>-` (or `<pool>-<zone>-` per zone), and a unique suffix of 26
    characters (18 digits of time and 8 hex of a counter, Terraform's `UniqueId`, which the AWS
    provider uses for `name_prefix`): anchored on it, one pool's expression never matches
    another pool whose name it begins (`node_group_names`). Go's regular expressions have no
    negative lookahead, so "not a GPU pool's" is spelt out character by character
    (`not_prefixed_by`)."""
    by_capacity: dict[int, list[str]] = {}
    for pool in pools:
        expression = f"^eks-{node_group_pattern(pool.name)}-"
        by_capacity.setdefault(CAPACITY_PRIORITIES[pool.capacity], []).append(expression)
    prefixes = sorted({f"eks-{pool.name}-" for pool in pools})
    levels: list[tuple[int, str, list[str]]] = [
        (
            OTHER_GROUPS_PRIORITY,
            "Every node group whose name does not begin eks-<GPU pool>-: the cluster's own"
            " groups, first for any pod that fits them.",
            [not_prefixed_by(prefixes)],
        ),
        *(
            (level, f"GPU pools of capacity {_capacity_at(level)}.", by_capacity[level])
            for level in sorted(by_capacity, reverse=True)
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


def _capacity_at(level: int) -> str:
    return next(c for c, priority in CAPACITY_PRIORITIES.items() if priority == level)


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


def autoscaler_args(spec: ClusterAutoscalerSpec) -> dict[str, Any]:
    """The autoscaler's flags the platform depends on, as the chart's `extraArgs`."""
    return {
        "balance-similar-node-groups": spec.balance_similar_node_groups,
        **(BALANCING_IGNORED_LABELS if spec.balance_similar_node_groups else {}),
        # Groups of one priority are compared by the next expander of the list.
        "expander": "priority,least-waste" if spec.expander == "priority" else spec.expander,
    }


def autoscaler_image(spec: ClusterAutoscalerSpec, kubernetes_version: str) -> ContainerImage | None:
    """The pinned image for the cluster's Kubernetes minor version, or the configured tag of the
    same repository (by tag alone); None if neither exists."""
    if spec.image_tag is None:
        return CLUSTER_AUTOSCALER_IMAGES.get(kubernetes_version)
    repository = next(iter(CLUSTER_AUTOSCALER_IMAGES.values())).repository
    return ContainerImage(repository, spec.image_tag)


def autoscaler_values(
    spec: ClusterAutoscalerSpec,
    cluster: EksCluster,
    image: ContainerImage,
    pools: Sequence[ResolvedPool],
) -> dict:
    """Chart values: auto-discovery by the cluster's tags, the expander, restricted pod."""
    # The chart renders `<repository>:<tag>` (templates/deployment.yaml): a digest goes after
    # the tag.
    tag = image.tag if image.digest is None else f"{image.tag}@{image.digest}"
    return {
        "cloudProvider": "aws",
        "awsRegion": cluster.region,
        # Discovers groups tagged `k8s.io/cluster-autoscaler/enabled` and
        # `k8s.io/cluster-autoscaler/<cluster>` (the chart's default `autoDiscovery.tags`).
        "autoDiscovery": {"clusterName": cluster.name},
        "image": {"repository": image.repository, "tag": tag},
        "rbac": {"serviceAccount": {"create": True, "name": SERVICE_ACCOUNT}},
        "extraArgs": autoscaler_args(spec),
        **(
            {"expanderPriorities": expander_priorities([pool.spec for pool in pools])}
            if spec.expander == "priority"
            else {}
        ),
        "resources": {
            "requests": {"cpu": "100m", "memory": "600Mi"},
            "limits": {"memory": "600Mi"},
        },
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": 65534,
            "runAsGroup": 65534,
            "fsGroup": 65534,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containerSecurityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
    }


def own_autoscaler_settings(
    spec: ClusterAutoscalerSpec, pools: Sequence[GpuPoolSpec]
) -> dict[str, Any]:
    """What a cluster that runs its own autoscaler (`autoscaler.install: false`) must give it for
    the GPU pools to scale as the platform plans them: the flags, spelt as on its command line,
    and the priority expander's ConfigMap text (None where the stack's expander is another)."""
    flags = [
        f"--{key}={str(value).lower() if isinstance(value, bool) else value}"
        for key, value in autoscaler_args(spec).items()
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
