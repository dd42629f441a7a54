"""Capacity: what launches and scales the GPU nodes on EKS (the cluster autoscaler or Karpenter),
capacity bought ahead of time, and the GKE versions its capacity modes need."""

from collections.abc import Mapping
from typing import Literal

from pydantic import Field

from gpu_platform.config.fields import DnsLabel, ExactImageTag, ExactVersion, IamRoleArn, Model
from gpu_platform.config.pools import GpuPoolSpec
from gpu_platform.version_order import version_key
from gpu_platform.versions import CLUSTER_AUTOSCALER_CHART, KARPENTER_CHART

PLATFORM_NAMESPACE = "gpu-platform-system"
"""The platform's own namespace for the cluster autoscaler, which the platform creates (Pod
Security `restricted`): out of kube-system, so that reading its Helm release (a Secret) needs no
access to kube-system's Secrets."""


class ClusterAutoscalerSpec(Model):
    """EKS: the Kubernetes cluster autoscaler, which scales the GPU node groups (from zero too)."""

    install: bool = True
    """Install it; turn off where the cluster already runs one (two would fight over the same
    node groups). The node groups carry its discovery and scale-from-zero tags either way."""
    namespace: DnsLabel = PLATFORM_NAMESPACE
    """Where it runs: `gpu-platform-system`, which the platform creates (Pod Security
    `restricted`), or a namespace that exists, and no tenant's. Its pod is marked so that it
    never removes the node it runs on, wherever it runs. Changing it replaces the release: the
    old autoscaler is removed before the new one starts (docs/upgrades.md)."""
    chart_version: ExactVersion = CLUSTER_AUTOSCALER_CHART.version
    """The `cluster-autoscaler` chart version; another than the pinned one is declared in the
    stack's policy config (`platform-release-rollback`'s `platformReleases`:
    docs/upgrades.md)."""
    image_tag: ExactImageTag | None = None
    """The autoscaler image tag; by default the pinned release for the cluster's Kubernetes
    minor version, which it must match. An exact version that is an image tag too: no SemVer
    build (`+...`), which no image reference can hold."""
    gpu_node_idle_minutes: int = Field(default=9, ge=1, le=1440)
    """How long a GPU node may sit unneeded before it is removed. Shorter saves idle GPU time;
    longer keeps a node warm between jobs instead of paying its startup again. The default
    keeps an empty node billing at most ten minutes after its last pod, the autoscaler's loops
    included, unless the cluster keeps scaling up (`gpu-platform plan` shows each pool's
    figure, and warns past ten minutes for on-demand and spot pools: docs/idle-billing.md).
    The autoscaler's cooldown after a scale-up (`--scale-down-delay-after-add`, 10 minutes
    upstream), which holds every removal in the cluster, is shortened to it where it is
    shorter: for every node group, CPU ones and those of a cluster's own autoscaler
    included."""
    balance_similar_node_groups: bool = True
    """Spread scale-ups evenly over node groups that offer the same nodes, the zonal node groups
    of one pool included (`aws.nodeGroupPerZone`: the label `nodegroup-name` that tells them
    apart is ignored)."""
    expander: Literal["priority", "least-waste", "most-pods", "random"] = "priority"
    """Which node group to grow when several fit: `priority` ranks every other node group of the
    cluster first, so that a CPU pod that tolerates the GPU taint grows a CPU group, and a GPU
    pool only where no CPU group can grow (at its maximum, or backed off), then capacity-block
    pools, reserved, on-demand and spot ones (capacity already paid for first, capacity that can
    be taken back last; a `canaryOf` pool below every GPU pool, so that it grows for other
    pods only where no pool they fit can), and among those `least-waste`; a group whose
    launches fail is backed off and the next one grown. `least-waste` alone picks the one left
    with the least idle CPU and memory, which may be a GPU node for a CPU pod that tolerates the
    GPU taint."""


class KarpenterSpec(Model):
    """EKS with `provisioner: karpenter`: the Karpenter controller that launches the GPU nodes."""

    install: bool = True
    """Install Karpenter: its CRDs and controller, interruption queue and IAM roles. Turn off
    where the cluster already runs Karpenter (installing its CRDs there fails on Helm's
    ownership metadata, and two controllers would launch nodes for the same pods): the stack
    then declares only the pools' NodePools and EC2NodeClasses, whose nodes run as
    `nodeRoleArn`. `preflight` checks that the cluster's Karpenter CRDs have every field the
    platform sets and that its running controller's release and feature gates act on them, and
    blocks turning it off on a stack that installed Karpenter, which would uninstall its CRDs
    with every NodePool of the cluster (docs/karpenter.md, An existing Karpenter)."""
    node_role_arn: IamRoleArn | None = None
    """With `install: false`, required: the node role of the existing Karpenter's nodes, which
    its controller may pass to EC2 and whose access entry (or `aws-auth` mapping) lets the
    nodes join the cluster."""
    namespace: DnsLabel = "kube-system"
    """Where the controller runs (or, with `install: false`, already runs): a namespace that
    exists, and no tenant's. In `kube-system`, as
    upstream installs it, the API server's default FlowSchemas give its calls the priority of
    the cluster's own controllers; elsewhere, give it a FlowSchema of its own."""
    chart_version: ExactVersion = KARPENTER_CHART.version
    """The `karpenter` and `karpenter-crd` chart version (the two move together); another than
    the pinned one is declared, both charts, in the stack's policy config
    (`platform-release-rollback`'s `platformReleases`: docs/upgrades.md)."""
    consolidate_after_minutes: int = Field(default=9, ge=1, le=1440)
    """How long a GPU node must have been empty before Karpenter removes it, for pools that do
    not set their own (`aws.consolidateAfterMinutes`). Karpenter never consolidates a GPU node
    that still runs a pod. The default keeps an empty node billing at most ten minutes after
    its last pod, Karpenter's disruption loop included (`gpu-platform plan` shows each pool's
    figure, and warns past ten minutes for on-demand and spot pools: docs/idle-billing.md)."""
    termination_grace_period_hours: int = Field(default=24, ge=1, le=8760)
    """How long Karpenter may take to drain a GPU node it is removing (a drifted node: a new
    AMI release, a changed node class) before it deletes the pods left on it, those marked
    `karpenter.sh/do-not-disrupt` and those a PodDisruptionBudget protects included. It also
    makes drift act on nodes that run such pods, which it otherwise never replaces. It bounds
    each node's drain, not a rollout: a pool drifts `maxUnavailablePercent` of its nodes at a
    time (10% by default, at least one), each round taking up to this long, so a rollout takes
    up to ceil(nodes / budget) x this bound (ten rounds at most by default), and only where a
    replacement node can launch: a full Capacity Block or reservation blocks drift of its busy
    nodes. Changing it replaces the pools' nodes (drift)."""


# Higher first: capacity already paid for, then what can be bought, and last what can be taken
# back. The cluster autoscaler's priority expander ranks node groups by it, Karpenter its
# NodePools (`weight`, 1 to 100).
CAPACITY_PREFERENCE: Mapping[str, int] = {
    "capacity-block": 40,
    "reserved": 30,
    "on-demand": 20,
    "spot": 10,
}


CANARY_PREFERENCE = 5
"""The rank of every canary (`canaryOf`) pool, below every other GPU pool's (`CAPACITY_PREFERENCE`)
whatever its capacity or its led pool's, and above the autoscaler's lookalike groups (1)."""


def pool_preference(pool: GpuPoolSpec) -> int:
    """The pool's rank among those a pod fits (the priority expander's priority, a NodePool's
    `weight`): its capacity's, and `CANARY_PREFERENCE` for a canary. The canary runs the led
    pool's instance types, so a pod that fits one fits both, and may fit other pools of the same
    GPUs. Tied with its pool, the cluster autoscaler hands the options to least-waste, which ties
    on identical templates, then to a random pick (the chain's fallback,
    `expander/factory/chain.go` and `expander_factory.go`, cluster-autoscaler 1.33.6 to 1.36.1),
    and Karpenter takes the NodePool whose name sorts last (`OrderByWeight`,
    kubernetes-sigs/karpenter pkg/utils/nodepool/nodepool.go at v1.14.1, `h100-canary` over
    `h100`); ranked from its capacity or one below its led pool, a canary of a reserved pool (30,
    29) would outrank an on-demand pool of the same GPUs (20). Below every pool, a pod that
    selects no canary starts a canary node only while no proven pool it fits can grow."""
    return CANARY_PREFERENCE if pool.canary_of is not None else CAPACITY_PREFERENCE[pool.capacity]


DRIFT_BUDGET_PERCENT = 10
"""Drifted and underutilized nodes Karpenter may take down at once where the pool sets no
`maxUnavailablePercent`: a share, rounded up (`GetAllowedDisruptions`, kubernetes-sigs/karpenter
pkg/apis/v1/nodepool.go at v1.14.1), so one node at a time up to ten nodes and never more than
ten rounds of drift for any pool. A node being drained counts against the budget until it is
gone (`MarkedForDeletion`, pkg/controllers/state/statenode.go; helpers.go), up to
`terminationGracePeriod` each, so a fixed `1` would roll a 32-node pool in 32 such rounds."""


EC2_RESERVED_CAPACITIES = ("reserved", "capacity-block")
"""Capacities bought from EC2 ahead of time; GKE pools consume reservations through
`gcp.reservation` instead."""


# The oldest GKE version whose clusters and nodes take each capacity mode: flex-start from
# 1.32.2-gke.1652000 (GKE's "About flex-start provisioning mode" and provisioningrequest pages),
# queued provisioning from 1.28.3-gke.1098000 (the provisioningrequest page before flex-start).
GKE_CAPACITY_MINIMUM_VERSIONS: Mapping[str, str] = {
    "flexStart": "1.32.2-gke.1652000",
    "queuedProvisioning": "1.28.3-gke.1098000",
}


def dynamic_workload_scheduler_modes(pool: GpuPoolSpec) -> list[str]:
    """The pool's settings (keys under `gcp`) that have Dynamic Workload Scheduler find its
    nodes."""
    enabled = {"flexStart": pool.gcp.flex_start, "queuedProvisioning": pool.gcp.queued_provisioning}
    return [key for key, on in enabled.items() if on]


def gke_capacity_too_new(pool: GpuPoolSpec, gke_version: str) -> dict[str, str]:
    """The pool's capacity settings (keys under `gcp`) that GKE `gke_version` does not have
    yet, each with the oldest version that has it."""
    return {
        key: GKE_CAPACITY_MINIMUM_VERSIONS[key]
        for key in dynamic_workload_scheduler_modes(pool)
        if version_key(gke_version) < version_key(GKE_CAPACITY_MINIMUM_VERSIONS[key])
    }
