"""`EksGpuNodeGroup`: one GPU pool as an EKS managed node group that scales from zero, or one
per zone (`aws.nodeGroupPerZone`).

Children: the node IAM role (unless the pool names one), a launch template (IMDSv2, encrypted
gp3 disk, no SSH key, and the pool's capacity reservation), the managed node groups with the
pool's labels and taints, one tag per scale-from-zero hint on each node group's Auto Scaling
group, and, for a Capacity Block that has yet to start, the scheduled action that grows each
group when it does.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pulumi
from pulumi_aws import autoscaling, ec2, eks, iam

from gpu_platform.config import EC2_RESERVED_CAPACITIES, GpuPoolSpec
from gpu_platform.eks.autoscaler_tags import autoscaler_tags
from gpu_platform.eks.cluster import EksCluster
from gpu_platform.eks.efa import efa_launch_template_options
from gpu_platform.eks.iam_roles import cluster_tags, managed_policy_attachments, platform_role
from gpu_platform.eks.kubelet_allocatable import kubelet_allocatable
from gpu_platform.eks.live_scaling import desired_size_to_send
from gpu_platform.eks.local_storage import kubelet_disk_gib, node_config_user_data
from gpu_platform.eks.node_group_names import node_group_name_prefix, zone_share
from gpu_platform.eks.node_labels import eks_node_identity
from gpu_platform.eks.node_repair import node_repair_config_for
from gpu_platform.eks.placement import NodeGroupPlacement
from gpu_platform.kubernetes.node_validation.duration import until_validated_seconds
from gpu_platform.node_identity import POOL_LABEL, ResolvedPool
from gpu_platform.rollout_timeouts import eks_update_timeout
from gpu_platform.secrets import secret_if
from gpu_platform.taints import CLOUD_TAINT_EFFECTS

# The autoscaler owns the group's size between min and max: a `pulumi up` that set it back
# would drain nodes from under running jobs. Engine (camelCase) property path. A change of the
# bounds sends it, as the running size moved within them, read when the update runs and unknown
# in a preview, so that an approved plan applies however the autoscaler moved (`live_scaling`).
DESIRED_SIZE = "scalingConfig.desiredSize"

# A reserved pool's nodes are on-demand instances launched into the reservation: the launch
# template targets it (`capacity_reservation_options`).
CAPACITY_TYPES = {
    "on-demand": "ON_DEMAND",
    "spot": "SPOT",
    "reserved": "ON_DEMAND",
    "capacity-block": "CAPACITY_BLOCK",
}

# What a node needs: join the cluster and pull images. The VPC CNI's policy is added unless the
# cluster gives the CNI its own identity (`cluster.cniPolicyOnNodeRole`).
NODE_POLICIES = ("AmazonEKSWorkerNodePolicy", "AmazonEC2ContainerRegistryPullOnly")
CNI_POLICY = "AmazonEKS_CNI_Policy"
# Instances may take a node role (the EKS user guide's node IAM role, create-node-role.adoc).
EC2_TRUST_POLICY: Mapping[str, Any] = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {"Service": "ec2.amazonaws.com"},
            "Action": "sts:AssumeRole",
        }
    ],
}

# Root devices of the EKS NVIDIA AMIs. Bottlerocket boots from a small OS volume and keeps
# images and container state on a second, data volume: that one is sized for GPU images.
_AL2023_ROOT = "/dev/xvda"
_BOTTLEROCKET_OS = "/dev/xvda"
_BOTTLEROCKET_DATA = "/dev/xvdb"


@dataclass
class EksGpuNodeGroupArgs:
    pool: ResolvedPool
    placement: NodeGroupPlacement
    cluster: EksCluster
    node_image: str
    """`al2023` or `bottlerocket`."""
    cni_policy_on_node_role: bool
    idle_minutes: int
    """How long a node may sit unneeded before the autoscaler removes it."""
    secret_labels: bool = False
    """The pool's labels came from a config key set as a secret: keep them secret."""
    protect: bool = False
    """Protect the node group itself from deletion and replacement. Only the node group: its
    role, policy attachments, launch template and Auto Scaling group tags change or are replaced
    by ordinary updates, which protection would refuse."""
    after: Sequence[pulumi.Resource] = ()
    """What the node groups are created and updated after: the VPC CNI's identity, the pool's
    node validator, and a led pool's canary gate."""


class EksGpuNodeGroup(pulumi.ComponentResource):
    """A managed node group for one GPU pool, tagged so the autoscaler scales it from zero."""

    def __init__(
        self, name: str, args: EksGpuNodeGroupArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__("gpu-platform:eks:GpuNodeGroup", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        spec = args.pool.spec
        role_arn, attachments = _pool_node_role(name, args, child)
        launch_template = ec2.LaunchTemplate(
            f"{name}-launch-template",
            description=f"GPU pool {spec.name} of EKS cluster {args.cluster.name}",
            # `metadataHopLimit: 2` is for workloads that need IMDS.
            metadata_options=imdsv2_only(spec.aws.metadata_hop_limit),
            block_device_mappings=block_device_mappings(args.node_image, spec),
            user_data=node_config_user_data(spec, args.placement.instance_types, args.node_image),
            tag_specifications=[
                ec2.LaunchTemplateTagSpecificationArgs(
                    resource_type=resource_type, tags=_resource_tags(args)
                )
                for resource_type in ("instance", "volume")
            ],
            **capacity_reservation_options(spec),
            **efa_launch_template_options(
                name,
                args.cluster,
                args.placement.efa_interfaces,
                spec.capacity in EC2_RESERVED_CAPACITIES,
                _resource_tags(args),
                child,
            ),
            region=args.cluster.region,
            tags=_resource_tags(args),
            opts=child,
        )
        identity = eks_node_identity(args.pool, args.placement.efa_interfaces)
        disk_gib = kubelet_disk_gib(spec, args.placement.instance_types, args.node_image)
        allocatable = kubelet_allocatable(args.placement.instance_types[0])
        hints = autoscaler_tags(
            identity,
            args.cluster.name,
            args.idle_minutes,
            disk_gib,
            allocatable,
            until_validated_seconds([spec]),
        )
        self.node_groups: list[eks.NodeGroup] = []
        autoscaling_group_names = []
        for group in node_groups_of(spec, args.placement):
            # A pool's only group keeps the names it has always had, so that no stack that
            # has one replaces it.
            suffix = "" if group.zone is None else f"-{group.zone}"
            waits_for = [launch_template, *attachments, *args.after]
            desired = desired_size_to_send(
                args.cluster,
                group.min_size,
                group.max_size,
                args.placement.live_bounds.get(group.zone),
                waits_for,
            )
            node_group = eks.NodeGroup(
                f"{name}-nodes{suffix}",
                cluster_name=args.cluster.name_input,
                node_group_name_prefix=node_group_name_prefix(spec.name, group.zone),
                node_role_arn=role_arn,
                subnet_ids=list(group.subnet_ids),
                ami_type=args.placement.ami_type,
                release_version=args.placement.release_version,
                instance_types=[t.name for t in args.placement.instance_types],
                capacity_type=CAPACITY_TYPES[spec.capacity],
                scaling_config=eks.NodeGroupScalingConfigArgs(
                    min_size=group.min_size,
                    desired_size=group.min_size if desired is None else desired,
                    max_size=group.max_size,
                ),
                update_config=_update_config(args),
                node_repair_config=node_repair_config_for(spec),
                labels=secret_if(args.secret_labels, dict(identity.labels)),
                taints=[
                    eks.NodeGroupTaintArgs(
                        key=t.key, value=t.value or None, effect=CLOUD_TAINT_EFFECTS[t.effect]
                    )
                    for t in identity.taints
                ],
                # Disk size and instance profile come from the launch template; setting the
                # node group's `disk_size` as well makes EKS refuse the group.
                launch_template=eks.NodeGroupLaunchTemplateArgs(
                    id=launch_template.id, version=launch_template.latest_version.apply(str)
                ),
                region=args.cluster.region,
                tags=_resource_tags(args),
                opts=pulumi.ResourceOptions(
                    parent=self,
                    depends_on=[*attachments, *args.after],
                    ignore_changes=[DESIRED_SIZE] if desired is None else [],
                    protect=args.protect,
                    custom_timeouts=eks_update_timeout(
                        group.max_size,
                        _MAX_UNAVAILABLE,
                        spec.aws.max_unavailable_percent,
                    ),
                ),
            )
            autoscaling_group_name = node_group.resources.apply(_autoscaling_group_name)
            for key, value in hints.items():
                autoscaling.Tag(
                    f"{name}{suffix}-{key}",
                    autoscaling_group_name=autoscaling_group_name,
                    tag=autoscaling.TagTagArgs(
                        key=key,
                        value=secret_if(args.secret_labels, value),
                        # Hints describe the group to the autoscaler, not the instances: copied
                        # to every instance they would use up EC2's 50 tags per instance for
                        # nothing.
                        propagate_at_launch=False,
                    ),
                    region=args.cluster.region,
                    opts=child,
                )
            scale_up = capacity_block_scale_up(spec, now())
            if scale_up is not None:
                # Only the scale-up: EKS itself schedules the scale-down ("Amazon EKS Node Group
                # Capacity Scaledown Before Reservation End") 40 minutes before the block ends, and
                # asks that it be left alone (EKS user guide, capacity-blocks-mng).
                autoscaling.Schedule(
                    f"{name}{suffix}-capacity-block-start",
                    autoscaling_group_name=autoscaling_group_name,
                    scheduled_action_name=(
                        f"gpu-platform scale-up at start of Capacity Block"
                        f" {spec.aws.capacity_reservation_id}"
                    ),
                    start_time=scale_up,
                    desired_capacity=group.max_size,
                    min_size=UNCHANGED,
                    max_size=UNCHANGED,
                    region=args.cluster.region,
                    opts=child,
                )
            self.node_groups.append(node_group)
            autoscaling_group_names.append(autoscaling_group_name)
        self.register_outputs(
            {
                "node_group_names": [g.node_group_name for g in self.node_groups],
                "autoscaling_group_names": autoscaling_group_names,
            }
        )


@dataclass(frozen=True)
class NodeGroupShape:
    """One of a pool's node groups: where it goes and its share of the pool's size."""

    zone: str | None
    """None for a pool's only node group, across its zones."""
    subnet_ids: tuple[pulumi.Input[str], ...]
    min_size: int
    max_size: int


def node_groups_of(spec: GpuPoolSpec, placement: NodeGroupPlacement) -> list[NodeGroupShape]:
    """The pool's node group, or one per zone with `min` and `max` shared out over them."""
    if not spec.aws.node_group_per_zone:
        return [NodeGroupShape(None, placement.subnet_ids, spec.min, spec.max)]
    zones = len(placement.subnets_by_zone)
    return [
        NodeGroupShape(zone, ids, zone_share(spec.min, zones, i), zone_share(spec.max, zones, i))
        for i, (zone, ids) in enumerate(placement.subnets_by_zone)
    ]


def _autoscaling_group_name(resources: Sequence[eks.outputs.NodeGroupResource]) -> str:
    """The Auto Scaling group EKS made for the node group (a managed node group has one)."""
    groups = resources[0].autoscaling_groups or []
    return str(groups[0].name)


@dataclass(frozen=True)
class NodeVolume:
    """One of a node's EBS volumes: gp3, encrypted, deleted with the instance."""

    device_name: str
    size_gib: int | None = None
    """None keeps the size of the AMI's snapshot."""
    throughput_mibps: int | None = None
    iops: int | None = None


def node_volumes(node_image: str, spec: GpuPoolSpec) -> list[NodeVolume]:
    """The node's volumes; the one holding container images sized `disk_size_gib`, with the
    pool's throughput and IOPS."""
    images = (spec.disk_size_gib, spec.aws.volume_throughput_mibps, spec.aws.volume_iops)
    if node_image == "bottlerocket":
        # The OS volume keeps the AMI's size and speed; it only needs encrypting.
        return [NodeVolume(_BOTTLEROCKET_OS), NodeVolume(_BOTTLEROCKET_DATA, *images)]
    return [NodeVolume(_AL2023_ROOT, *images)]


def imdsv2_only(hop_limit: int) -> ec2.LaunchTemplateMetadataOptionsArgs:
    """IMDSv2 only. A hop limit of 1 means the token response cannot cross the extra network hop
    into a pod's network namespace, so pods cannot take the node role's credentials."""
    return ec2.LaunchTemplateMetadataOptionsArgs(
        http_endpoint="enabled",
        http_tokens="required",
        http_put_response_hop_limit=hop_limit,
        instance_metadata_tags="disabled",
    )


def block_device_mappings(
    node_image: str, spec: GpuPoolSpec
) -> list[ec2.LaunchTemplateBlockDeviceMappingArgs]:
    return [
        ec2.LaunchTemplateBlockDeviceMappingArgs(
            device_name=volume.device_name,
            ebs=ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
                volume_type="gp3",
                volume_size=volume.size_gib,
                throughput=volume.throughput_mibps,
                iops=volume.iops,
                # The provider takes these two as strings (tri-state "true"/"false"/unset).
                encrypted="true",
                delete_on_termination="true",
            ),
        )
        for volume in node_volumes(node_image, spec)
    ]


def _pool_node_role(
    name: str, args: EksGpuNodeGroupArgs, child: pulumi.ResourceOptions
) -> tuple[pulumi.Input[str], Sequence[pulumi.Resource]]:
    """The pool's node role ARN and the policy attachments the node group must wait for.

    No EKS access entry or aws-auth mapping is created for the role: EKS adds one itself for a
    managed node group's role, and a second one for the same role makes either creation fail.
    """
    if args.pool.spec.aws.node_role_arn is not None:
        return args.pool.spec.aws.node_role_arn, []
    role, attachments = node_role(
        f"{name}-node-role",
        purpose=f"pool-{args.pool.spec.name}",
        attachment_prefix=name,
        description=f"Nodes of GPU pool {args.pool.spec.name} in EKS cluster {args.cluster.name}",
        cluster=args.cluster,
        cni_policy_on_node_role=args.cni_policy_on_node_role,
        opts=child,
        tags=_resource_tags(args),
    )
    return role.arn, attachments


def node_role(
    name: str,
    purpose: str,
    attachment_prefix: str,
    description: str,
    cluster: EksCluster,
    cni_policy_on_node_role: bool,
    opts: pulumi.ResourceOptions,
    tags: Mapping[str, str] | None = None,
    node_policies: Sequence[str] = NODE_POLICIES,
) -> tuple[iam.Role, list[iam.RolePolicyAttachment]]:
    """A role `name` for nodes (`<prefix>.<purpose>` in IAM), with what a node needs attached
    (`node_policies`, and `CNI_POLICY` where `cni_policy_on_node_role`), each as
    `<attachment_prefix>-<policy>`."""
    role = platform_role(name, purpose, cluster, description, EC2_TRUST_POLICY, opts, tags)
    policies = [*node_policies, *([CNI_POLICY] if cni_policy_on_node_role else [])]
    return role, managed_policy_attachments(attachment_prefix, role, policies, cluster, opts)


# EKS's values for `updateConfig.updateStrategy` (botocore's EKS model, NodegroupUpdateStrategies).
UPDATE_STRATEGIES = {"minimal": "MINIMAL", "default": "DEFAULT"}
# Nodes replaced at once where the pool sets no `maxUnavailablePercent`.
_MAX_UNAVAILABLE = 1


def _update_config(args: EksGpuNodeGroupArgs) -> eks.NodeGroupUpdateConfigArgs:
    # One node at a time by default: GPU jobs rarely survive a drain, so updates go slowly.
    # The strategy decides whether EKS starts the replacement before or after the old node goes
    # (EKS user guide, managed-node-update-behavior, "Upgrade phase").
    spec = args.pool.spec.aws
    strategy = UPDATE_STRATEGIES[spec.update_strategy]
    if spec.max_unavailable_percent is not None:
        return eks.NodeGroupUpdateConfigArgs(
            max_unavailable_percentage=spec.max_unavailable_percent, update_strategy=strategy
        )
    return eks.NodeGroupUpdateConfigArgs(max_unavailable=_MAX_UNAVAILABLE, update_strategy=strategy)


def capacity_reservation_options(spec: GpuPoolSpec) -> dict[str, Any]:
    """A reservation is launched into through the launch template, not the node group: a
    Capacity Block's in its market, a reserved pool's by the reservation's id or its resource
    group's ARN.

    A launch that targets one reservation fails while it is full; one that targets a resource
    group runs on-demand when no reservation of the group has room, unless the preference is
    `capacity-reservations-only` (EC2 user guide, "Launch instances into an existing Capacity
    Reservation"; EC2 API reference, LaunchTemplateCapacityReservationSpecificationRequest).
    `aws.onDemandFallback` decides between the two on a resource group; config validation
    refuses it on a single reservation, which has no fallback.
    """
    options = spec.aws
    target = ec2.LaunchTemplateCapacityReservationSpecificationCapacityReservationTargetArgs(
        capacity_reservation_id=options.capacity_reservation_id,
        capacity_reservation_resource_group_arn=options.capacity_reservation_resource_group_arn,
    )
    if spec.capacity == "capacity-block":
        return {
            "instance_market_options": ec2.LaunchTemplateInstanceMarketOptionsArgs(
                market_type="capacity-block"
            ),
            "capacity_reservation_specification": (
                ec2.LaunchTemplateCapacityReservationSpecificationArgs(
                    capacity_reservation_target=target
                )
            ),
        }
    if spec.capacity != "reserved":
        return {}
    only_reserved = (
        options.capacity_reservation_resource_group_arn is not None
        and not options.on_demand_fallback
    )
    return {
        "capacity_reservation_specification": (
            ec2.LaunchTemplateCapacityReservationSpecificationArgs(
                capacity_reservation_preference=(
                    "capacity-reservations-only" if only_reserved else None
                ),
                capacity_reservation_target=target,
            )
        )
    }


def now() -> datetime:
    """The time the program plans at: the one clock it reads, which tests set."""
    return datetime.now(UTC)


# The AWS provider sends each size of a scheduled action but -1, which leaves that size as it
# is; unset, it would send 0 (resourceSchedulePut, internal/service/autoscaling/schedule.go).
UNCHANGED = -1
# EC2 Auto Scaling refuses an action that starts in the past (PutScheduledUpdateGroupAction,
# botocore's autoscaling model), and the action is created only once its node group exists,
# which EKS takes minutes to create. A block that starts sooner gets none: the autoscaler grows
# the pool for pending pods once the block is active.
SCHEDULE_LEAD = timedelta(minutes=15)
# How EC2 Auto Scaling takes a start time, in UTC (PutScheduledUpdateGroupAction).
_SCHEDULE_TIME = "%Y-%m-%dT%H:%M:%SZ"


def capacity_block_scale_up(spec: GpuPoolSpec, at: datetime) -> str | None:
    """When a Capacity Block pool's node groups grow to their `max`: the start of its block, as
    EC2 Auto Scaling takes it; None for other pools, and for a block that starts within
    `SCHEDULE_LEAD` of `at` or has started already."""
    start = spec.aws.capacity_block_start
    if spec.capacity != "capacity-block" or start is None or start <= at + SCHEDULE_LEAD:
        return None
    return start.astimezone(UTC).strftime(_SCHEDULE_TIME)


def _resource_tags(args: EksGpuNodeGroupArgs) -> dict[str, str]:
    return pool_resource_tags(args.cluster, args.pool.spec)


def pool_resource_tags(cluster: EksCluster, spec: GpuPoolSpec) -> dict[str, str]:
    """The tags of a pool's AWS resources and of its instances and volumes."""
    return {"Name": f"{cluster.name}-{spec.name}", POOL_LABEL: spec.name, **cluster_tags(cluster)}
