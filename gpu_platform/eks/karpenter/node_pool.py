"""`KarpenterGpuNodePool`: one GPU pool as a Karpenter NodePool and the EC2NodeClass it launches
nodes with.

The nodes are the managed node group's nodes, launched another way: the same node identity
(labels and taints, `eks_node_identity`), the same pinned NVIDIA AMI release, the same encrypted
gp3 volumes and local NVMe array, IMDSv2 with the pool's hop limit, the same subnets and zones,
the same tags, and for an EFA pool the same network interfaces, EFA security group and placement
group. Karpenter starts a node for pending pods that fit the pool, no more than `max` nodes (and
`max` of its largest size's GPUs and vCPUs), preferring the pools whose capacity is paid for
already; it removes a node once it has run no pod for the pool's `consolidateAfter`, never a
node that runs one, and never because of its age.

Upstream sources are aws/karpenter-provider-aws at the pinned tag (v1.14.1): its code under
`pkg/`, its documentation (`concepts/...`, `tasks/...`) under `website/content/en/docs/`, and
its CRDs (`pkg/apis/crds/`, their schemas in gpu_platform/kubernetes/crd_schemas/).
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi_kubernetes.apiextensions import CustomResource

from gpu_platform.config import (
    DRIFT_BUDGET_PERCENT,
    EC2_RESERVED_CAPACITIES,
    GpuPoolSpec,
)
from gpu_platform.eks.cluster import EksCluster
from gpu_platform.eks.efa import EfaNetwork, efa_network
from gpu_platform.eks.instance_types import kebab
from gpu_platform.eks.karpenter.labels import (
    CAPACITY_TYPE_LABEL,
    KARPENTER_INSTANCE_LABELS,
    InstanceLabels,
)
from gpu_platform.eks.karpenter.network_interfaces import efa_network_interfaces
from gpu_platform.eks.local_storage import uses_instance_store
from gpu_platform.eks.node_group import node_volumes, pool_resource_tags
from gpu_platform.eks.node_labels import eks_node_identity
from gpu_platform.eks.placement import NodeGroupPlacement
from gpu_platform.kubernetes.canary_gate import canary_node_labels
from gpu_platform.node_identity import (
    GPU_RESOURCE,
    INSTANCE_TYPE_LABEL,
    ZONE_LABEL,
    NodeIdentity,
    ResolvedPool,
    Taint,
)
from gpu_platform.secrets import secret_if

NODE_POOL_API_VERSION = "karpenter.sh/v1"
NODE_CLASS_GROUP = "karpenter.k8s.aws"
NODE_CLASS_API_VERSION = f"{NODE_CLASS_GROUP}/v1"
NODE_CLASS_KIND = "EC2NodeClass"
ON_DEMAND_FALLBACK_ANNOTATION = "gpu-platform.io/on-demand-fallback"
"""On the NodePool of a pool that falls back to on-demand capacity, for people and policies."""

# Karpenter buys EC2 capacity reservations, Capacity Blocks included, as capacity type
# `reserved` (tasks/odcrs.md, "Selecting Capacity Reservations").
CAPACITY_TYPES: dict[str, tuple[str, ...]] = {
    "on-demand": ("on-demand",),
    "spot": ("spot",),
    "reserved": ("reserved",),
    "capacity-block": ("reserved",),
}

# Karpenter needs a size for every volume it creates (EC2NodeClass CEL: "snapshotID or
# volumeSize must be defined"), where a launch template may keep the AMI's, as the node group does
# for Bottlerocket's OS volume: it gets Karpenter's own default for that volume
# (pkg/providers/amifamily/bottlerocket.go:183-195).
_AMI_SIZED_VOLUME_GIB = 4


@dataclass
class KarpenterGpuNodePoolArgs:
    pool: ResolvedPool
    placement: NodeGroupPlacement
    """Instance types, zones, subnets and the pinned AMI release, as the node group would get."""
    cluster: EksCluster
    node_image: str
    """`al2023` or `bottlerocket`."""
    node_role_name: pulumi.Input[str]
    """The IAM role of Karpenter's nodes; Karpenter makes their instance profile from it."""
    consolidate_after_minutes: int
    """How long a node must have run no pod before Karpenter removes it, unless the pool says
    otherwise (`aws.consolidateAfterMinutes`)."""
    termination_grace_period_hours: int
    """How long Karpenter may drain a node it removes before it deletes the pods left on it."""
    weight: int
    """The NodePool's `weight` among the stack's pools (`gpu_platform.config.pool_preference`)."""
    secret_labels: bool = False
    """The pool's labels came from a config key set as a secret: keep them secret."""
    protect: bool = False
    """Protect the NodePool from deletion and replacement: it owns its NodeClaims, so deleting it
    deletes them, and Karpenter drains and terminates every node of the pool
    (concepts/disruption.md, "Manual Methods"). Only the NodePool: deleting the EC2NodeClass
    takes no node down (its finalizer waits until no NodeClaim uses it,
    pkg/controllers/nodeclass/controller.go:216-228), and it goes after its NodePool, which
    protection stops first."""
    after: Sequence[pulumi.Resource] = ()
    """What the node class and NodePool are created and updated after: the pool's node
    validator, and a led pool's canary gate."""


class KarpenterGpuNodePool(pulumi.ComponentResource):
    """A NodePool and its EC2NodeClass for one GPU pool. The caller's options carry the
    Kubernetes provider and what the objects wait for (Karpenter's CRDs)."""

    def __init__(
        self, name: str, args: KarpenterGpuNodePoolArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__("gpu-platform:eks:KarpenterGpuNodePool", name, None, opts)
        efa = (
            efa_network(
                name,
                args.cluster,
                args.pool.spec.capacity in EC2_RESERVED_CAPACITIES,
                pool_resource_tags(args.cluster, args.pool.spec),
                pulumi.ResourceOptions(parent=self),
            )
            if args.placement.efa_interfaces
            else None
        )
        self.node_class = custom_resource(
            name,
            ec2_node_class_for(args, efa),
            pulumi.ResourceOptions(parent=self, depends_on=list(args.after)),
        )
        # Deleted before its node class: Karpenter holds an EC2NodeClass that NodeClaims still
        # use until they are gone. A change of the NodePool's template alone (labels, sizes)
        # drifts its nodes too (kubernetes-sigs/karpenter pkg/controllers/nodeclaim/disruption/
        # drift.go, the NodePool hash), so it waits for what the node class waits for as well.
        self.node_pool = node_pool_resource(name, node_pool_for(args), self.node_class, args, self)
        self.register_outputs({"node_pool_name": name, "node_class_name": name})


def node_pool_resource(
    name: str,
    obj: dict[str, Any],
    node_class: CustomResource,
    args: KarpenterGpuNodePoolArgs,
    parent: pulumi.Resource,
) -> CustomResource:
    """The NodePool `obj`, created after its node class and deleted before it.

    Its delete timeout stays pulumi-kubernetes' default (`await.Deletion`,
    provider/pkg/await/await.go: minutes), though its NodeClaims hold it (`BlockOwnerDeletion`,
    kubernetes-sigs/karpenter pkg/controllers/provisioning/scheduling/nodeclaimtemplate.go at
    v1.14.1) while their nodes drain GPU work, up to `terminationGracePeriod` each: a timeout
    that outlasted the drain (a day) would outlast the deploy workflow's job
    (.github/workflows/pulumi-stack.yml, `timeout-minutes`) too, which would leave the stack
    locked mid-update, where a failed delete is only run again."""
    return custom_resource(
        name,
        obj,
        pulumi.ResourceOptions(
            parent=parent,
            depends_on=[node_class, *args.after],
            protect=args.protect,
        ),
    )


@dataclass(frozen=True)
class NodePoolShape:
    """What differs between the NodePools of a Karpenter the cluster runs and of EKS Auto Mode:
    the API group and kind of their node classes, the labels they choose sizes by, and how long
    a node may live."""

    node_class_group: str
    node_class_kind: str
    instance_labels: InstanceLabels
    expire_after: str
    drifts_by_itself: bool = False
    """Whether the nodes drift without the stack changing (Auto Mode's own AMI releases), so
    that drift is held to the pool's `aws.driftWindow`."""


KARPENTER_SHAPE = NodePoolShape(
    NODE_CLASS_GROUP,
    NODE_CLASS_KIND,
    KARPENTER_INSTANCE_LABELS,
    # The default, 720h, drains every node a month old, jobs and all; AMI releases reach the
    # nodes through drift instead.
    "Never",
)


def node_pool_for(
    args: KarpenterGpuNodePoolArgs, shape: NodePoolShape = KARPENTER_SHAPE
) -> dict[str, Any]:
    """The pool's NodePool, launching nodes with the node class of the pool's name. With secret
    labels the template's labels are a secret output: the engine gets them as a secret inside
    `spec`, and the program (the Python SDK marks secrets on top-level properties only) and the
    offline plan hold the whole `spec` as one."""
    spec, placement = args.pool.spec, args.placement
    identity = eks_node_identity(args.pool, placement.efa_interfaces)
    largest_vcpus = max(t.vcpus for t in placement.instance_types)
    metadata: dict[str, Any] = {"name": spec.name}
    if spec.aws.on_demand_fallback:
        metadata["annotations"] = {ON_DEMAND_FALLBACK_ANNOTATION: "true"}
    return {
        "apiVersion": NODE_POOL_API_VERSION,
        "kind": "NodePool",
        "metadata": metadata,
        "spec": {
            # Among NodePools a pod fits, Karpenter launches from the one of the highest weight,
            # and of equal weights from the one whose name sorts last (`OrderByWeight`,
            # kubernetes-sigs/karpenter pkg/utils/nodepool/nodepool.go at v1.14.1): ranked as
            # the cluster autoscaler ranks node groups, a pod that fits a Capacity Block pool and
            # an on-demand one starts in the block, and a canary stays below its pool.
            "weight": args.weight,
            "template": {
                "metadata": {
                    "labels": secret_if(
                        args.secret_labels,
                        {**identity.labels, **canary_node_labels(args.pool, "karpenter")},
                    )
                },
                "spec": {
                    "nodeClassRef": {
                        "group": shape.node_class_group,
                        "kind": shape.node_class_kind,
                        "name": spec.name,
                    },
                    "taints": [_taint(t) for t in identity.lasting_taints],
                    # Karpenter plans a node without them (a pod need not tolerate them to have
                    # a node started for it) and puts them on the node it starts (karpenter.sh
                    # v1.14 docs, concepts/nodepools; the NodePool CRD's `startupTaints`).
                    **_startup_taints(identity),
                    "requirements": [
                        *size_requirements(spec, placement, shape.instance_labels),
                        one_of(ZONE_LABEL, list(placement.zones)),
                        one_of(CAPACITY_TYPE_LABEL, capacity_types(spec)),
                    ],
                    "expireAfter": shape.expire_after,
                    # A node being removed (drifted) is drained for at most this long, then its
                    # remaining pods are deleted, `do-not-disrupt` ones included; with it set,
                    # drift also takes nodes that run such pods (concepts/disruption.md,
                    # "TerminationGracePeriod", and `EventualDisruptionClass`,
                    # kubernetes-sigs/karpenter pkg/controllers/disruption/types.go, v1.14.1).
                    "terminationGracePeriod": f"{args.termination_grace_period_hours}h",
                },
            },
            # `max` nodes, and no more GPUs and vCPUs than `max` nodes of the largest size have:
            # Karpenter picks the size, so without `nodes` a pool of [g6.16xlarge, g6.12xlarge]
            # could start max x 4 g6.16xlarge for its GPUs. Karpenter counts a node's
            # `nvidia.com/gpu` from EC2's instance data, one per physical GPU
            # (pkg/providers/instancetype/types.go `nvidiaGPUs`). `nodes` counts the nodes
            # running when a scheduling pass starts; within a pass Karpenter takes off each new
            # NodeClaim the most GPUs and vCPUs of its sizes and no node (`subtractMax`,
            # kubernetes-sigs/karpenter pkg/controllers/provisioning/scheduling/scheduler.go at
            # v1.14.1), so there the GPU and CPU limits hold a burst: neither is redundant.
            # Limits are checked while nodes launch in parallel, so a fast scale-out can pass
            # them (concepts/nodepools.md, "spec.limits").
            "limits": {
                GPU_RESOURCE: str(spec.max * args.pool.gpu.count),
                "cpu": str(spec.max * largest_vcpus),
                "nodes": str(spec.max),
            },
            "disruption": {
                # Never consolidate a node that runs a pod: a GPU job it moved would start over.
                "consolidationPolicy": "WhenEmpty",
                "consolidateAfter": consolidate_after(args),
                "budgets": disruption_budgets(spec, shape.drifts_by_itself),
            },
        },
    }


def size_requirements(
    spec: GpuPoolSpec,
    placement: NodeGroupPlacement,
    labels: InstanceLabels = KARPENTER_INSTANCE_LABELS,
) -> list[dict[str, Any]]:
    """The requirements that choose the pool's sizes: its instance types, or, as data-on-eks
    writes its GPU NodePools, its instance families or categories and EC2's name of its GPU
    (labels `karpenter.k8s.aws/instance-family`, `-category` and `-gpu-name`, aws/karpenter-
    provider-aws pkg/apis/v1/labels.go at v1.14.1, which `computeRequirements` in
    pkg/providers/instancetype/types.go sets from DescribeInstanceTypes)."""
    options = spec.aws
    if not options.flexible:
        return [one_of(INSTANCE_TYPE_LABEL, [t.name for t in placement.instance_types])]
    gpu_names = sorted({kebab(t.gpu_name) for t in placement.instance_types if t.gpu_name})
    chosen = (
        one_of(labels.family, list(options.instance_families))
        if options.instance_families
        else one_of(labels.category, list(options.instance_categories))
    )
    return [chosen, one_of(labels.gpu_name, gpu_names)]


def ec2_node_class_for(
    args: KarpenterGpuNodePoolArgs, efa: EfaNetwork | None = None
) -> dict[str, Any]:
    """The pool's EC2NodeClass; `efa` where the pool has EFA interfaces."""
    spec = args.pool.spec
    release = args.placement.release_version
    assert release is not None  # config requires one outside Auto Mode
    security_groups: list[pulumi.Input[str]] = [args.cluster.security_group_id]
    if efa is not None:
        security_groups.append(efa.security_group_id)
    node_class: dict[str, Any] = {
        "role": args.node_role_name,
        "amiSelectorTerms": [{"alias": ami_alias(args.node_image, release)}],
        "subnetSelectorTerms": [{"id": subnet} for subnet in args.placement.subnet_ids],
        # Karpenter gives every interface all of them (`generateNetworkInterfaces`,
        # pkg/providers/launchtemplate/launchtemplate.go at v1.14.1).
        "securityGroupSelectorTerms": [{"id": group} for group in security_groups],
        "metadataOptions": {
            "httpEndpoint": "enabled",
            # IMDSv2 only, one hop: the token cannot cross into a pod's network namespace, so
            # pods cannot take the node role's credentials (the node group's reasons).
            "httpTokens": "required",
            "httpPutResponseHopLimit": spec.aws.metadata_hop_limit,
            "httpProtocolIPv6": "disabled",
        },
        "blockDeviceMappings": _block_device_mappings(args.node_image, spec),
        "tags": pool_resource_tags(args.cluster, spec),
    }
    reservation = spec.aws.capacity_reservation_id
    if reservation is not None:
        # A reserved or capacity-block pool's, which config requires under Karpenter: Karpenter
        # launches into no reservation it is not given, open ones included (tasks/odcrs.md).
        node_class["capacityReservationSelectorTerms"] = [{"id": reservation}]
    if args.placement.efa_interfaces:
        node_class["networkInterfaces"] = efa_network_interfaces(args.placement.efa_interfaces)
    if efa is not None and efa.placement_group_name is not None:
        node_class["placementGroupSelector"] = {"name": efa.placement_group_name}
    if uses_instance_store(spec, args.placement.instance_types):
        # What the node group's user data does: nodeadm's `localStorage.strategy: RAID0` on
        # AL2023 (pkg/providers/amifamily/bootstrap/nodeadm.go:87-89), `apiclient
        # ephemeral-storage init` and `bind` of the kubelet's and containerd's directories on
        # Bottlerocket (bootstrap/bottlerocket.go:96-113).
        node_class["instanceStorePolicy"] = "RAID0"
    return {
        "apiVersion": NODE_CLASS_API_VERSION,
        "kind": NODE_CLASS_KIND,
        "metadata": {"name": spec.name},
        "spec": node_class,
    }


def ami_alias(node_image: str, release: str) -> str:
    """The EC2NodeClass alias of the EKS NVIDIA AMI release the node group would run.

    Karpenter resolves an alias through SSM for the cluster's Kubernetes version
    (pkg/providers/amifamily/ami.go:86-104), as EKS resolves the node group's AMI type (and an
    AL2023 release is refused unless it is built for that version), and for every variant of
    the family: AL2023's `/aws/service/eks/optimized-ami/<k8s>/
    amazon-linux-2023/<arch>/nvidia/amazon-eks-node-al2023-<arch>-nvidia-<k8s>-v<date>/image_id`
    (al2023.go:39-80), Bottlerocket's `/aws/service/bottlerocket/aws-k8s-<k8s>-nvidia/<arch>/
    <version>/image_id` (bottlerocket.go:44-53). A GPU instance type gets the NVIDIA variant:
    only its requirements admit instance types with `karpenter.k8s.aws/instance-gpu-count`
    (types.go:86-97, matched in ami.go:228-241).

    AL2023 `1.35.6-20260714` is `al2023@v20260714`. Bottlerocket `1.54.0-0d4a7f31` is
    `bottlerocket@v1.54.0`, its release tag, as Karpenter pins Bottlerocket (its EC2NodeClass
    docs, "spec.amiSelectorTerms"): Bottlerocket publishes each release's AMIs under its version
    (QUICKSTART-EKS.md, "Finding an AMI"), and the commit EKS's release version adds names that
    release's build.
    """
    version, _, build = release.partition("-")
    if node_image == "bottlerocket":
        return f"bottlerocket@v{version}"
    return f"al2023@v{build}"


def consolidate_after(args: KarpenterGpuNodePoolArgs) -> str:
    """The pool's `consolidateAfter` (`consolidate_after_minutes`)."""
    minutes = consolidate_after_minutes(args.pool.spec, args.consolidate_after_minutes)
    return "Never" if minutes is None else f"{minutes}m"


def consolidate_after_minutes(spec: GpuPoolSpec, stack_minutes: int) -> int | None:
    """How long the pool's empty nodes wait before Karpenter removes them, None for never: the
    pool's own, else never where its nodes run on capacity paid for whether used or not (a
    Capacity Block, a reservation it never falls back from), else the stack's `stack_minutes`.
    A pool falling back to on-demand would keep its on-demand nodes too."""
    own = spec.aws.consolidate_after_minutes
    if own is None:
        prepaid = spec.capacity in EC2_RESERVED_CAPACITIES and not spec.aws.on_demand_fallback
        own = "never" if prepaid else stack_minutes
    return None if own == "never" else int(own)


def capacity_types(spec: GpuPoolSpec) -> list[str]:
    """The `karpenter.sh/capacity-type` values the pool's nodes may have (config allows
    `onDemandFallback` on spot and reserved pools only). Karpenter takes reserved capacity
    first, then spot, then on-demand, whatever their order (concepts/nodepools.md, "Capacity
    Type")."""
    fallback = ["on-demand"] if spec.aws.on_demand_fallback else []
    return [*CAPACITY_TYPES[spec.capacity], *fallback]


def custom_resource(name: str, obj: dict[str, Any], opts: pulumi.ResourceOptions) -> CustomResource:
    return CustomResource(
        name,
        api_version=obj["apiVersion"],
        kind=obj["kind"],
        metadata=obj["metadata"],
        spec=obj["spec"],
        opts=opts,
    )


def _taint(taint: Taint) -> dict[str, str]:
    # The NodePool's taint value must not be empty (its CRD pattern); a taint without one has
    # none, as Kubernetes writes it.
    value = {"value": taint.value} if taint.value else {}
    return {"key": taint.key, **value, "effect": taint.effect}


def _startup_taints(identity: NodeIdentity) -> dict[str, Any]:
    startup = [_taint(t) for t in identity.startup_taints]
    return {"startupTaints": startup} if startup else {}


def one_of(key: str, values: list[str]) -> dict[str, Any]:
    return {"key": key, "operator": "In", "values": values}


def disruption_budgets(spec: GpuPoolSpec, drifts_by_itself: bool = False) -> list[dict[str, Any]]:
    """How many of the pool's nodes Karpenter may take down at once, by reason: empty ones
    `emptyNodesBudgetPercent` (all by default), drifted ones (a new AMI release) and
    underutilized ones (which `WhenEmpty` never has) `maxUnavailablePercent`, else
    `DRIFT_BUDGET_PERCENT`.

    A budget without `reasons` holds for every reason, `Empty` too, and Karpenter takes from
    each budget the pool's nodes that are NotReady or being deleted (`BuildDisruptionBudgetMapping`,
    kubernetes-sigs/karpenter pkg/controllers/disruption/helpers.go at v1.14.1; reasons in
    pkg/apis/v1/nodepool.go `GetAllowedDisruptionsByReason`): one `nodes: "1"` for all would let
    a single NotReady node stop every empty node of the pool from going."""
    percent = spec.aws.max_unavailable_percent
    return [
        {"nodes": f"{spec.aws.empty_nodes_budget_percent}%", "reasons": ["Empty"]},
        {
            "nodes": f"{DRIFT_BUDGET_PERCENT if percent is None else percent}%",
            "reasons": ["Drifted", "Underutilized"],
        },
        *(_drift_closed(spec) if drifts_by_itself else []),
    ]


def _drift_closed(spec: GpuPoolSpec) -> list[dict[str, Any]]:
    """No drifted node taken outside the pool's drift window, or at all without one.

    A budget with a schedule holds only from each of its schedule's hits for its duration, and
    the most restrictive budget holding wins (`IsActive`, `GetAllowedDisruptionsByReason`,
    kubernetes-sigs/karpenter pkg/apis/v1/nodepool.go at v1.14.1): no budget opens what another
    closes, so the closed budget runs from the window's close until it opens again."""
    closed: dict[str, Any] = {"nodes": "0", "reasons": ["Drifted"]}
    window = spec.aws.drift_window
    if window is None:
        return [closed]
    schedule, duration = window.closed()
    return [{**closed, "schedule": schedule, "duration": duration}]


def _block_device_mappings(node_image: str, spec: GpuPoolSpec) -> list[dict[str, Any]]:
    mappings = []
    for volume in node_volumes(node_image, spec):
        ebs: dict[str, Any] = {
            "volumeSize": f"{volume.size_gib or _AMI_SIZED_VOLUME_GIB}Gi",
            "volumeType": "gp3",
            "encrypted": True,
            "deleteOnTermination": True,
        }
        if volume.iops is not None:
            ebs["iops"] = volume.iops
        if volume.throughput_mibps is not None:
            ebs["throughput"] = volume.throughput_mibps
        mappings.append({"deviceName": volume.device_name, "ebs": ebs})
    return mappings
