"""The Auto Scaling group tags that let the cluster autoscaler scale a GPU node group from zero.

With no node running, the autoscaler can only tell what a node of the group would look like from
the group's tags: its labels, taints and extended resources (`node-template` hints). Without
them a GPU pod that selects the pool, tolerates the GPU taint and asks for `nvidia.com/gpu` fits
no group it knows, and the group stays at zero. EKS does not copy a managed node group's labels
or taints to its Auto Scaling group (aws/containers-roadmap#608), so the platform tags the group
itself.
"""

from collections.abc import Iterator, Mapping

from gpu_platform.config import ConfigProblem, key_path
from gpu_platform.eks.node_labels import AWS_ACCELERATOR_LABEL
from gpu_platform.kubernetes.node_validation.duration import go_duration
from gpu_platform.node_identity import NodeIdentity, ResolvedPool

AUTOSCALER_PREFIX = "k8s.io/cluster-autoscaler/"
NODE_TEMPLATE_PREFIX = AUTOSCALER_PREFIX + "node-template/"
LABEL_TAG_PREFIX = NODE_TEMPLATE_PREFIX + "label/"
TAINT_TAG_PREFIX = NODE_TEMPLATE_PREFIX + "taint/"
RESOURCE_TAG_PREFIX = NODE_TEMPLATE_PREFIX + "resources/"
OPTION_TAG_PREFIX = NODE_TEMPLATE_PREFIX + "autoscaling-options/"
DISCOVERY_TAG = AUTOSCALER_PREFIX + "enabled"

# EC2 Auto Scaling holds 50 tags per group. EKS puts three tags of its own on the group besides
# the two discovery tags it shares with these.
ASG_TAG_LIMIT = 50
_EKS_OWN_TAGS = 3


def cluster_discovery_tag(cluster_name: str) -> str:
    """The tag that tells this cluster's autoscaler the group is one of its own."""
    return AUTOSCALER_PREFIX + cluster_name


def autoscaler_tags(
    identity: NodeIdentity,
    cluster_name: str,
    idle_minutes: int,
    disk_size_gib: int,
    allocatable: Mapping[str, str] | None = None,
    until_validated_seconds: int = 0,
) -> dict[str, str]:
    """The discovery tags, every node-template hint and the scale-down options for a group of
    nodes with `identity` whose kubelet keeps pods' data on a `disk_size_gib` filesystem
    (`gpu_platform.eks.local_storage.kubelet_disk_gib`) and offers pods `allocatable` CPU,
    memory and pods (`gpu_platform.eks.kubelet_allocatable`), and whose new nodes may stay
    unvalidated up to `until_validated_seconds` after their scale-up.

    EKS tags a managed node group's Auto Scaling group for discovery itself; these use the same
    values, so neither overwrites the other, and discovery no longer hangs on it.
    """
    tags = {DISCOVERY_TAG: "true", cluster_discovery_tag(cluster_name): "owned"}
    tags.update({LABEL_TAG_PREFIX + key: value for key, value in identity.labels.items()})
    # Not the startup taints: the autoscaler reads a taint tag into the template node
    # (`extractTaintsFromAsg`, cloudprovider/aws/aws_manager.go) and then drops every taint of the
    # startup prefix from the template (`SanitizeTaints`, utils/taints/taints.go; both
    # cluster-autoscaler-1.35.2), so such a tag would spend one of the group's 50 for nothing.
    tags.update(
        {
            TAINT_TAG_PREFIX + taint.key: f"{taint.value}:{taint.effect}"
            for taint in identity.lasting_taints
        }
    )
    tags.update({RESOURCE_TAG_PREFIX + name: str(n) for name, n in identity.resources.items()})
    tags[RESOURCE_TAG_PREFIX + "ephemeral-storage"] = f"{ephemeral_storage_gib(disk_size_gib)}Gi"
    tags.update({RESOURCE_TAG_PREFIX + name: q for name, q in (allocatable or {}).items()})
    # Per-group override of `--scale-down-unneeded-time`, so GPU nodes get their own idle time
    # without changing it for every other node group of the cluster.
    tags[OPTION_TAG_PREFIX + "scaledownunneededtime"] = f"{idle_minutes}m0s"
    tags.update(_never_drain_a_running_job(identity))
    if until_validated_seconds:
        # A node still validating is unready to the autoscaler, which removes an unready node
        # after `--scale-down-unready-time` (20 minutes; core/scaledown/eligibility/
        # eligibility.go), read per group from this tag (`GetOptions`, cloudprovider/aws/
        # aws_manager.go; cluster-autoscaler-1.35.2).
        tags[OPTION_TAG_PREFIX + "scaledownunreadytime"] = go_duration(until_validated_seconds)
    return tags


def ephemeral_storage_gib(disk_size_gib: int) -> int:
    """What a node's kubelet will offer pods of its volume, rounded down: the template holds no
    ephemeral storage otherwise, so a pod that requests any would never scale the group up from
    zero (kubernetes/autoscaler#1650; `buildNodeFromTemplate` in cloudprovider/aws/aws_manager.go
    sets CPU, memory, pods and GPUs only).

    The kubelet keeps back the 10% `nodefs.available` eviction threshold and 1Gi of
    kube-reserved ephemeral storage (amazon-eks-ami nodeadm/internal/kubelet/config.go, the
    AL2023 defaults; Bottlerocket's are the same, inferred); a further 1Gi allows for the
    filesystem being a little smaller than its volume."""
    return int(disk_size_gib * 0.9) - 2


# The scale-down threshold of GPU pools: a node is removed only at or below it. Not 0: until
# 66d2242f61 (December 2025) the autoscaler kept a node whose utilization was `>=` its threshold
# (core/scaledown/eligibility/eligibility.go; `>` from 1.32.6, 1.33.4, 1.34.3 and 1.35.0 on), so
# under 0 an empty node was never removed by an older autoscaler, which a cluster that runs its
# own (`autoscaler.install: false`) or an older `imageTag` may have. One millionth gives the same
# answers under both comparisons: an empty node (utilization 0) is removable, and any pod's
# request is above it (one millicore of a 192-CPU p5.48xlarge is 0.0000052; utilization is
# requested over allocatable milli-units, simulator/utilization/info.go).
EMPTY_NODE_THRESHOLD = "0.000001"


def _never_drain_a_running_job(identity: NodeIdentity) -> dict[str, str]:
    """Scale-down thresholds that leave a node alone while any GPU workload runs on it.

    The autoscaler removes a node whose utilization is at or below the group's threshold and
    whose pods fit elsewhere (core/scaledown/eligibility/eligibility.go, 1.35.2 line 188), and
    for a GPU node it counts only the GPU: requested over allocatable (simulator/utilization/
    info.go). The default threshold of 0.5 has it evict a 4-GPU job from a half-used 8-GPU
    node to pack it onto another; at `EMPTY_NODE_THRESHOLD` only a node no GPU pod holds is
    removed. A node is a GPU node by the AWS GPU label, which MIG nodes go without
    (gpu_platform/eks/node_labels.py): on those the autoscaler counts CPU and memory requests
    instead, so their threshold is the same, with the DaemonSets (the GPU Operator's, on every
    GPU node) left out of the count; tenant namespaces give GPU pods a CPU and memory request
    by default (their LimitRange), so that a pod asking only for a MIG slice still counts.
    """
    if AWS_ACCELERATOR_LABEL in identity.labels:
        return {OPTION_TAG_PREFIX + "scaledowngpuutilizationthreshold": EMPTY_NODE_THRESHOLD}
    return {
        OPTION_TAG_PREFIX + "scaledownutilizationthreshold": EMPTY_NODE_THRESHOLD,
        OPTION_TAG_PREFIX + "ignoredaemonsetsutilization": "true",
    }


def autoscaler_tag_problems(pool: ResolvedPool, tags: Mapping[str, str]) -> Iterator[ConfigProblem]:
    """Taints and labels of the pool's own that its Auto Scaling group cannot carry as hints.

    (Keys fit: EKS's 63-character limit on label and taint keys keeps every hint key within
    the 128 characters of a tag key.)
    """
    i = pool.index
    # (One keyed like the GPU taint is refused with the rest of the config.)
    seen: set[str] = set()
    for j, taint in enumerate(pool.spec.taints):
        if taint.key in seen:
            yield ConfigProblem(
                key_path("pools", i, "taints", j, "key"),
                taint.key,
                "a key no other taint of the pool has (the autoscaler hints one taint per key)",
            )
        seen.add(taint.key)
    if len(tags) + _EKS_OWN_TAGS > ASG_TAG_LIMIT:
        yield ConfigProblem(
            key_path("pools", i, "labels"),
            pool.spec.labels,
            f"fewer labels and taints: their autoscaler hints come to {len(tags)} tags, and an"
            f" Auto Scaling group holds {ASG_TAG_LIMIT - _EKS_OWN_TAGS} besides EKS's own",
        )
