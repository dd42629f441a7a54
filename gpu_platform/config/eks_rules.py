"""Rules across fields of EKS stacks: EC2 reservations and Capacity Blocks, AMI releases,
Bottlerocket's device plugin, and what Karpenter does instead of node groups."""

import re
from collections.abc import Iterator, Mapping

from gpu_platform.config.capacity import EC2_RESERVED_CAPACITIES, KarpenterSpec
from gpu_platform.config.cloud_options import EksPoolOptions
from gpu_platform.config.fields import Cloud, Platform
from gpu_platform.config.pools import ExclusiveSharing, GpuPoolSpec
from gpu_platform.config.problems import (
    MISSING,
    ConfigProblem,
    key_of,
    key_path,
    set_field_problems,
)
from gpu_platform.config.set_aside import per_element
from gpu_platform.config.stack import StackConfig, known_platform
from gpu_platform.config.tenants import SYSTEM_NAMESPACES
from gpu_platform.drivers import known_releases

# An AL2023 AMI release ends in its build date: `1.33.4-20251016`.
_AL2023_AMI_RELEASE = r"^[0-9]+\.[0-9]+\.[0-9]+-[0-9]{8}$"


# The capacities each reservation setting acts on; on any other it would do nothing.
_RESERVATION_OPTIONS: Mapping[str, tuple[str, ...]] = {
    "capacity_reservation_id": EC2_RESERVED_CAPACITIES,
    "capacity_reservation_resource_group_arn": ("reserved",),
    "capacity_block_start": ("capacity-block",),
    "on_demand_fallback": ("spot", "reserved"),
}


def reservation_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    def of_pool(i: int, pool: GpuPoolSpec) -> Iterator[ConfigProblem]:
        if config.cloud is Cloud.AWS:
            yield from _ec2_reservation_problems(config, pool, i)
        elif pool.capacity in EC2_RESERVED_CAPACITIES:
            yield ConfigProblem(
                key_path("pools", i, "capacity"),
                pool.capacity,
                "on-demand or spot on GKE (reserved and capacity-block buy EC2 capacity; a GKE"
                " pool consumes Compute Engine reservations through gcp.reservation)",
            )

    yield from per_element(config.pools, of_pool)


def _ec2_reservation_problems(
    config: StackConfig, pool: GpuPoolSpec, i: int
) -> Iterator[ConfigProblem]:
    options = pool.aws
    for field, capacities in _RESERVATION_OPTIONS.items():
        value = getattr(options, field)
        if value not in (None, False) and pool.capacity not in capacities:
            yield ConfigProblem(
                key_path("pools", i, "aws", key_of(EksPoolOptions, field)),
                value,
                f"no value unless capacity is {' or '.join(capacities)} (this pool's is"
                f" {pool.capacity})",
            )
    reservation = options.capacity_reservation_id
    group = options.capacity_reservation_resource_group_arn
    if pool.capacity == "capacity-block":
        if reservation is None:
            yield ConfigProblem(
                key_path("pools", i, "aws", "capacityReservationId"),
                MISSING,
                "the Capacity Block's reservation id (cr-...) when capacity is capacity-block",
            )
        yield from _one_placement_problems(
            pool,
            i,
            "exactly one instance type with capacity-block (a block reserves one type)",
            "exactly one zone with capacity-block, the block's: its instances launch only there,"
            " and a node group over other zones would try them in vain",
        )
    elif pool.capacity == "reserved" and reservation is None and group is None:
        yield ConfigProblem(
            key_path("pools", i, "aws", "capacityReservationId"),
            MISSING,
            "the id (cr-...) of the capacity reservation the pool launches into, or a resource"
            " group of reservations in aws.capacityReservationResourceGroupArn, when capacity is"
            " reserved",
        )
    elif pool.capacity == "reserved" and reservation is not None and group is not None:
        yield ConfigProblem(
            key_path("pools", i, "aws", "capacityReservationResourceGroupArn"),
            group,
            "no value beside aws.capacityReservationId: the pool launches into one reservation,"
            " or into one resource group of them",
        )
    if config.provisioner == "cluster-autoscaler":
        yield from _node_group_reservation_problems(pool, i)


# What EC2 does when the reservation a launch asks for has no room (EC2 user guide, "Launch
# instances into an existing Capacity Reservation"): a launch that targets one reservation by id
# fails; one that targets a resource group of them runs on-demand, unless the launch template's
# preference is `capacity-reservations-only` (EC2 API reference,
# LaunchTemplateCapacityReservationSpecificationRequest).
_TARGETED_RESERVATION = (
    "a launch that targets one capacity reservation fails unless it matches the reservation's"
    " instance type and zone"
)


def _node_group_reservation_problems(pool: GpuPoolSpec, i: int) -> Iterator[ConfigProblem]:
    """What a managed node group cannot do with a reservation."""
    if pool.capacity == "reserved" and pool.aws.capacity_reservation_id is not None:
        yield from _one_placement_problems(
            pool,
            i,
            f"exactly one instance type with aws.capacityReservationId, the reservation's:"
            f" {_TARGETED_RESERVATION} (a resource group, aws.capacityReservationResourceGroupArn,"
            " may hold reservations of several)",
            f"exactly one zone with aws.capacityReservationId, the reservation's:"
            f" {_TARGETED_RESERVATION}, and a node group over other zones would try them in vain",
        )
    if not pool.aws.on_demand_fallback:
        return
    path = key_path("pools", i, "aws", "onDemandFallback")
    # One capacity type per node group: the EKS user guide, "Create a managed node group" ("You
    # can't mix different capacity types within the same node group").
    if pool.capacity == "spot":
        yield ConfigProblem(
            path,
            True,
            "false or no value on a spot pool with managed node groups: a node group has one"
            " capacity type, and the cluster autoscaler's priority expander grows on-demand pools"
            " before spot ones, so an on-demand pool beside this one would come first, not after"
            " it; use provisioner karpenter, whose NodePool falls back from spot to on-demand",
        )
    elif pool.aws.capacity_reservation_id is not None:
        yield ConfigProblem(
            path,
            True,
            "false or no value with aws.capacityReservationId on managed node groups: a launch"
            " that targets one reservation fails while it is full, never falling back to"
            " on-demand. Put the reservation in a resource group and name that in"
            " aws.capacityReservationResourceGroupArn instead (EC2 launches on-demand when no"
            " reservation of the group has room), or add an on-demand pool of the same instance"
            " type, which the autoscaler grows once this pool's launches fail",
        )


def _one_placement_problems(
    pool: GpuPoolSpec, i: int, one_type: str, one_zone: str
) -> Iterator[ConfigProblem]:
    """A pool that must launch one instance type in one zone: `one_type` and `one_zone` say why."""
    if len(pool.instance_types) != 1:
        yield ConfigProblem(key_path("pools", i, "instanceTypes"), pool.instance_types, one_type)
    if len(pool.zones) != 1:
        yield ConfigProblem(key_path("pools", i, "zones"), pool.zones, one_zone)


def instance_choice_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    """Each EKS pool names its instance types, or, under Karpenter, instance families or
    categories and its one GPU model."""
    if config.cloud is not Cloud.AWS:
        return

    def of_pool(i: int, pool: GpuPoolSpec) -> Iterator[ConfigProblem]:
        options = pool.aws
        families = key_path("pools", i, "aws", "instanceFamilies")
        categories = key_path("pools", i, "aws", "instanceCategories")
        given = options.instance_families or options.instance_categories
        given_key = families if options.instance_families else categories
        if options.flexible and not config.uses_node_pools:
            yield ConfigProblem(
                given_key,
                given,
                "no value unless provisioner is karpenter or eks-auto-mode: a managed node group"
                " launches the"
                " instance types it lists, which must share one shape; list them in"
                " instanceTypes",
            )
        elif options.instance_families and options.instance_categories:
            yield ConfigProblem(
                categories,
                options.instance_categories,
                "no value beside aws.instanceFamilies: a pool takes its sizes from families or"
                " from categories",
            )
        elif options.flexible and pool.instance_types:
            yield ConfigProblem(
                given_key,
                given,
                "no value beside instanceTypes: a pool lists its instance types, or takes every"
                " size of its families or categories",
            )
        elif options.flexible and pool.accelerator is None:
            yield ConfigProblem(
                key_path("pools", i, "accelerator"),
                MISSING,
                "the pool's one GPU model with aws.instanceFamilies or aws.instanceCategories:"
                " its NodePool admits the sizes of that GPU only (karpenter.k8s.aws/"
                "instance-gpu-name)",
            )
        if not pool.instance_types and not options.flexible:
            yield ConfigProblem(
                key_path("pools", i, "instanceTypes"),
                MISSING,
                "one or more EC2 instance types (or, with provisioner karpenter,"
                " aws.instanceFamilies or aws.instanceCategories)",
            )

    yield from per_element(config.pools, of_pool)


def ami_release_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    platform = known_platform(config)
    # Auto Mode chooses its nodes' AMIs (auto_mode_rules refuses a release there).
    if platform not in (Platform.EKS_AL2023, Platform.EKS_BOTTLEROCKET) or config.uses_auto_mode:
        return

    def of_pool(i: int, pool: GpuPoolSpec) -> Iterator[ConfigProblem]:
        release = pool.aws.ami_release_version
        path = key_path("pools", i, "aws", "amiReleaseVersion")
        if release is None:
            # EKS would take its latest release when the node group is created, so that pools
            # created a month apart run different drivers, and the driver is known to nobody.
            yield ConfigProblem(
                path, MISSING, f"a pinned AMI release; {known_releases(config.node_image)}"
            )
        # An AL2023 release ends in its build date; one ending in a Bottlerocket commit names no
        # AL2023 AMI, and EKS would refuse it only at `pulumi up`. The other way round cannot be
        # told apart: a commit may be all digits.
        elif platform is Platform.EKS_AL2023 and not re.match(_AL2023_AMI_RELEASE, release):
            yield ConfigProblem(
                path,
                release,
                "an AL2023 release with nodeImage al2023: the Kubernetes version and the build"
                " date, such as 1.33.4-20251016 (1.52.0-0d4a7f31 is Bottlerocket's form)",
            )

    yield from per_element(config.pools, of_pool)


def bottlerocket_sharing_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    # Bottlerocket's NVIDIA variant runs its own device plugin, so the GPU Operator's is off
    # there and its per-node sharing configs and MIG manager reach no node: a shared pool would
    # advertise whole GPUs while the autoscaler expects slices.
    if config.cloud is not Cloud.AWS or config.cluster.node_image != "bottlerocket":
        return
    if config.uses_auto_mode:
        return  # Auto Mode's device plugin is its own too: auto_mode_rules says so, its way.

    def of_pool(i: int, pool: GpuPoolSpec) -> Iterator[ConfigProblem]:
        if not isinstance(pool.sharing, ExclusiveSharing):
            yield ConfigProblem(
                key_path("pools", i, "sharing", "mode"),
                pool.sharing.mode,
                "exclusive on Bottlerocket nodes (its own NVIDIA device plugin serves the GPUs,"
                " not the GPU Operator's); use nodeImage al2023 to share GPUs",
            )

    yield from per_element(config.pools, of_pool)


# Pool settings only a managed node group acts on, with what Karpenter does instead: set on a
# Karpenter stack they would read as if they did something. Karpenter lists only active
# reservations (pkg/providers/capacityreservation/types.go at v1.14.1) and drains a Capacity
# Block's nodes 10 minutes before EC2 reclaims them (docs tasks/odcrs.md).
_NODE_GROUP_ONLY_OPTIONS: Mapping[str, str] = {
    "node_group_per_zone": "there are no node groups; Karpenter picks each node's zone among the"
    " pool's zones itself",
    "node_role_arn": "every Karpenter node runs as the node role the platform creates with the"
    " controller, the only role it may pass and the one its access entry admits",
    "capacity_reservation_resource_group_arn": "Karpenter selects reservations by id, not by"
    " resource group: name the reservation in aws.capacityReservationId",
    "capacity_block_start": "Karpenter launches into a Capacity Block once it is active and"
    " drains its nodes before it ends, by itself",
    "node_repair": "EKS node repair acts on managed node groups; Karpenter's own is an alpha"
    " feature the platform leaves off (docs/karpenter.md, Node repair and GPU health)",
    "node_repair_max_unhealthy_nodes": "EKS node repair acts on managed node groups only",
    "update_strategy": "Karpenter replaces drifted nodes within the pool's disruption budget"
    " (aws.maxUnavailablePercent)",
    # kubernetes-sigs/karpenter v1.14.1 serves no ProvisioningRequest (its only
    # autoscaling.x-k8s.io kind is CapacityBuffer, pkg/apis/autoscaling/v1beta1).
    "atomic_scale_up": "Karpenter has no ProvisioningRequests: it launches nodes for the"
    " pending pods of a job Kueue admitted whole, in one batch, each node as EC2 grants it"
    " (docs/queues.md, All-or-nothing scale-up)",
}
# Pool settings only a Karpenter NodePool acts on.
_KARPENTER_ONLY_OPTIONS = ("empty_nodes_budget_percent", "consolidate_after_minutes")
# Karpenter plans a node's `nvidia.com/gpu` from EC2's instance data, one per physical GPU
# (pkg/providers/instancetype/types.go `nvidiaGPUs` at v1.14.1), and knows no `nvidia.com/mig-*`
# resource: pods asking for time-sliced, MPS or MIG shares would never get a node planned for
# them (kubernetes-sigs/karpenter#729, aws/karpenter-provider-aws#3376).
_KARPENTER_SHARING = (
    "exclusive with provisioner karpenter: Karpenter plans nodes with one nvidia.com/gpu per"
    " physical GPU and knows no MIG slices, so pods asking for shares would never get a node"
    " (kubernetes-sigs/karpenter#729); use provisioner cluster-autoscaler to share GPUs"
)


def karpenter_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    if config.cloud is not Cloud.AWS:
        return  # the rule of the other cloud's settings reports provisioner and karpenter there
    if config.uses_auto_mode:
        yield from set_field_problems(
            config.karpenter,
            set(KarpenterSpec.model_fields) - set(AUTO_MODE_NODE_POOL_SETTINGS),
            ("karpenter",),
            "no value with provisioner eks-auto-mode, which runs its own Karpenter: of the"
            " karpenter settings only those of its NodePools apply there"
            f" ({', '.join(key_of(KarpenterSpec, f) for f in AUTO_MODE_NODE_POOL_SETTINGS)})",
        )
    elif not config.uses_karpenter:
        yield from set_field_problems(
            config.karpenter,
            config.karpenter.model_fields_set,
            ("karpenter",),
            "no value unless provisioner is karpenter",
        )
    if not config.uses_auto_mode:
        for i, pool in enumerate(config.pools):
            if pool.aws.drift_window is not None:
                yield ConfigProblem(
                    key_path("pools", i, "aws", "driftWindow"),
                    pool.aws.drift_window.model_dump(),
                    "no value unless provisioner is eks-auto-mode: elsewhere a pool's nodes"
                    " drift only when its settings (aws.amiReleaseVersion) change",
                )
    if not config.uses_karpenter:
        # Auto Mode's NodePools act on them as Karpenter's do.
        for i, pool in enumerate([] if config.uses_auto_mode else config.pools):
            for field in _KARPENTER_ONLY_OPTIONS:
                if field in pool.aws.model_fields_set:
                    yield ConfigProblem(
                        key_path("pools", i, "aws", key_of(EksPoolOptions, field)),
                        getattr(pool.aws, field),
                        "no value unless provisioner is karpenter: a managed node group's"
                        " nodes go when the cluster autoscaler finds them unneeded"
                        " (autoscaler.gpuNodeIdleMinutes), one at a time",
                    )
        return
    yield from set_field_problems(
        config.autoscaler,
        config.autoscaler.model_fields_set,
        ("autoscaler",),
        "no value with provisioner karpenter, which installs Karpenter instead of the"
        " cluster autoscaler (karpenter configures it)",
    )
    yield from _existing_karpenter_problems(config.karpenter)
    for i, pool in enumerate(config.pools):
        if pool.min != 0:
            yield ConfigProblem(
                key_path("pools", i, "min"),
                pool.min,
                "0 with provisioner karpenter: a NodePool has no minimum size, Karpenter starts"
                " nodes for pending pods only",
            )
        if not isinstance(pool.sharing, ExclusiveSharing):
            yield ConfigProblem(
                key_path("pools", i, "sharing", "mode"), pool.sharing.mode, _KARPENTER_SHARING
            )
        for field, why in _NODE_GROUP_ONLY_OPTIONS.items():
            if field in pool.aws.model_fields_set:
                yield ConfigProblem(
                    key_path("pools", i, "aws", key_of(EksPoolOptions, field)),
                    getattr(pool.aws, field),
                    f"no value with provisioner karpenter: {why}",
                )
    # Any pod of a tenant's namespace may run as the controller's service account there, whose
    # AWS role launches and terminates the cluster's instances. A system namespace is reported
    # by `namespace_problems` already.
    for i, ns in enumerate(config.namespaces):
        if ns.name == config.karpenter.namespace and ns.name not in SYSTEM_NAMESPACES:
            yield ConfigProblem(
                key_path("namespaces", i, "name"),
                ns.name,
                f"a namespace of its own, not Karpenter's ({ns.name}, karpenter.namespace)",
            )


# The `karpenter` settings that go into the pools' NodePools, which EKS Auto Mode's take as well.
AUTO_MODE_NODE_POOL_SETTINGS = ("consolidate_after_minutes", "termination_grace_period_hours")

# What only the platform's own Karpenter installation uses (`namespace` still names where an
# existing one runs, which no tenant may share).
_INSTALL_ONLY_OPTIONS = ("chart_version",)


def _existing_karpenter_problems(karpenter: KarpenterSpec) -> Iterator[ConfigProblem]:
    if karpenter.install:
        if karpenter.node_role_arn is not None:
            yield ConfigProblem(
                key_path("karpenter", "nodeRoleArn"),
                karpenter.node_role_arn,
                "no value unless karpenter.install is false: the Karpenter the platform"
                " installs launches its nodes with the node role it creates",
            )
        return
    if karpenter.node_role_arn is None:
        yield ConfigProblem(
            key_path("karpenter", "nodeRoleArn"),
            None,
            "the ARN of the existing Karpenter's node role with karpenter.install false: the"
            " pools' EC2NodeClasses launch their nodes as it",
        )
    for field in _INSTALL_ONLY_OPTIONS:
        if field in karpenter.model_fields_set:
            yield ConfigProblem(
                key_path("karpenter", key_of(KarpenterSpec, field)),
                getattr(karpenter, field),
                "no value with karpenter.install false: the platform installs no Karpenter",
            )
