"""A GKE node pool of GPU nodes, set up for the NVIDIA GPU Operator.

GKE would install its own driver on GPU nodes, which collides with the operator's: the pool
turns GKE's driver installation off (`INSTALLATION_DISABLED`); on COS Google's installer
DaemonSet loads the driver instead (`gpu_platform.gke.driver_installer`).

Who advertises the GPUs depends on the pool (`gpu_platform.node_identity.sharer_for`):
- whole GPUs, and every pool on Ubuntu: the operator's device plugin. GKE's is turned off by
  the `gke-no-default-nvidia-gpu-device-plugin=true` node label, as NVIDIA's GKE guide says.
- time-sliced and MIG pools on COS: GKE's own device plugin, from the accelerator's
  `gpu_sharing_config` or `gpu_partition_size`, because GKE's autoscaler plans a pool from
  those settings and knows nothing of the operator's replicas or MIG slices. The operator's
  device plugin and MIG manager stay off those nodes (`nvidia.com/gpu.deploy.device-plugin`
  and `...mig-manager` set to `false`, which the operator leaves as they are:
  `controllers/state_manager.go` at v26.7.0); its toolkit still runs there, and a DCGM exporter
  that reads GKE's device names replaces the operator's (`nvidia.com/gpu.deploy.dcgm-exporter`
  `false` and `gpu-platform.io/gpu-sharer` `gke`: gpu_platform/kubernetes/gke_dcgm_exporter.py).

The GPU taint is declared explicitly: GKE adds it itself only when the cluster also has a pool
without GPUs (terraform-google-kubernetes-engine#703).

How a pool gets its capacity (docs/gke-capacity.md): on demand, Spot, from Compute Engine
reservations (`gcp.reservation`), or through Dynamic Workload Scheduler as flex-start VMs
(`gcp.flexStart`) or for ProvisioningRequests only (`gcp.queuedProvisioning`). GKE adds the
`cloud.google.com/gke-queued` taint to a queued pool itself, so the pool does not declare it.
"""

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta

import pulumi
from pulumi_gcp import container, projects, serviceaccount

from gpu_platform.accelerators import ACCELERATORS
from gpu_platform.config import (
    ConfigProblem,
    GpuPoolSpec,
    MigSharing,
    Platform,
    TimeSlicingSharing,
    dynamic_workload_scheduler_modes,
    gke_capacity_too_new,
    key_path,
)
from gpu_platform.gke.cluster import POOL_RESOURCE_LABEL, GkeCluster
from gpu_platform.gke.machine_types import boot_disk_types
from gpu_platform.node_identity import GKE_EXPORTER_NODES, GpuSharer, ResolvedPool
from gpu_platform.rollout_timeouts import gke_blue_green_rollout, gke_surge_rollout
from gpu_platform.secrets import secret_if
from gpu_platform.taints import CLOUD_TAINT_EFFECTS
from gpu_platform.version_order import version_key

NODE_SERVICE_ACCOUNT_ROLE = "roles/container.defaultNodeServiceAccount"
"""What a GKE node needs: write logs and metrics, read its cluster's configuration."""
CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
"""Access is decided by the node service account's roles, not by OAuth scopes."""
GKE_DEVICE_PLUGIN_OFF_LABEL = "gke-no-default-nvidia-gpu-device-plugin"
OPERATOR_OPERANDS_OFF_LABELS = {
    "nvidia.com/gpu.deploy.device-plugin": "false",
    "nvidia.com/gpu.deploy.mig-manager": "false",
    **GKE_EXPORTER_NODES,
}
"""On nodes whose GPUs GKE shares, the operator's device plugin and MIG manager stay away, and
its DCGM exporter gives way to the one that matches GKE's device names, which selects these
nodes by `gpu-platform.io/gpu-sharer: gke` as well."""
GKE_TIME_SHARING = "TIME_SHARING"
"""The API's `gpuSharingStrategy` of a time-sliced pool (config validation refuses MPS on GKE)."""
DRIVER_LABEL = "gpu-platform.io/driver"
"""`operator` on nodes whose driver the GPU Operator builds (Ubuntu): the policy pack exempts
them from its secure-boot rule, as that driver is an unsigned kernel module."""
GKE_IMAGE_TYPES: Mapping[Platform, str] = {
    Platform.GKE_COS: "COS_CONTAINERD",
    Platform.GKE_UBUNTU: "UBUNTU_CONTAINERD",
}
# The cluster autoscaler sets the node count; an update must not put it back (and a changed
# `initialNodeCount` would replace the pool).
NODE_COUNT_PROPERTIES = ("initialNodeCount", "nodeCount")
MAINTENANCE_POLICIES = "maintenancePolicies"
RESERVATION_AFFINITIES: Mapping[str, str] = {
    "none": "NO_RESERVATION",
    "any": "ANY_RESERVATION",
    "specific": "SPECIFIC_RESERVATION",
}
"""`gcp.reservation` -> the API's `consumeReservationType`. `ANY_RESERVATION` falls back to
on-demand capacity when no reservation has room; `SPECIFIC_RESERVATION` never does."""
RESERVATION_NAME_KEY = "compute.googleapis.com/reservation-name"
"""The key that targets a specific reservation by name (the API's `ReservationAffinity.key`)."""


@dataclass
class GkeGpuNodePoolArgs:
    pool: ResolvedPool
    cluster: GkeCluster
    platform: Platform
    """`gke-cos` or `gke-ubuntu`: the node image, and with it who installs the driver."""
    zones: Sequence[str]
    """Zones that offer the pool's machine type (`gpu_platform.gke.zones`)."""
    update_timeout: pulumi.CustomTimeouts
    """How long `pulumi up` waits for the pool's update: every node pool's of the cluster
    (`gpu_platform.rollout_timeouts.gke_update_timeout`), as GKE runs one node pool operation at
    a time and the provider waits for the others within the update's own timeout."""
    secret_labels: bool = False
    """The pool's labels came from a config key set as a secret: keep them secret."""
    protect: bool = False
    """Protect the node pool itself from deletion and replacement, not its service account or
    that account's role binding."""
    after: Sequence[pulumi.Resource] = ()
    """What the node pool is created and updated after: the pool's node validator, and a led
    pool's canary gate."""


class GkeGpuNodePool(pulumi.ComponentResource):
    """A GPU node pool, its node service account and that account's one role."""

    def __init__(
        self, name: str, args: GkeGpuNodePoolArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__("gpu-platform:gke:GpuNodePool", name, None, opts)
        spec = args.pool.spec
        depends_on: list[pulumi.Resource] = list(args.after)
        if spec.gcp.service_account is not None:
            service_account = pulumi.Output.from_input(spec.gcp.service_account)
        else:
            account = serviceaccount.Account(
                f"{name}-nodes",
                project=args.cluster.project,
                account_id=node_service_account_id(args.cluster, spec.name),
                display_name=f"GPU nodes of pool {spec.name} in {args.cluster.name}",
                opts=pulumi.ResourceOptions(parent=self),
            )
            role = projects.IAMMember(
                f"{name}-nodes",
                project=args.cluster.project,
                role=NODE_SERVICE_ACCOUNT_ROLE,
                member=account.member,
                opts=pulumi.ResourceOptions(parent=self),
            )
            # Nodes that start before their account holds the role cannot report their logs.
            depends_on.append(role)
            service_account = account.email
        self.node_pool = container.NodePool(
            name,
            args=node_pool_args(args, service_account),
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=depends_on,
                # terraform-provider-google sends the pool's maintenance policy when it creates
                # the pool and has no update for it (resource_container_node_pool.go: only
                # `expandNodePool` reads `maintenance_policy`): a change would show on every
                # preview and do nothing.
                ignore_changes=[*NODE_COUNT_PROPERTIES, MAINTENANCE_POLICIES],
                protect=args.protect,
                custom_timeouts=args.update_timeout,
            ),
        )
        self.node_pool_name = self.node_pool.name
        self.pool_name = spec.name
        self.service_account = service_account
        self.register_outputs(
            {"node_pool_name": self.node_pool_name, "service_account": self.service_account}
        )


def pinned_pool_upgrades(
    spec: GpuPoolSpec, cluster: GkeCluster
) -> tuple[bool, list[container.NodePoolMaintenancePolicyArgs] | None]:
    """Node auto-upgrade, and the pool's own maintenance policy. A pool pinned to a node
    version (`gcp.nodeVersion`) must not be upgraded by GKE: "if this field [version] and
    `auto_upgrade` are both specified, they will fight each other for what the node version
    should be" (pulumi-gcp, container.NodePool `version`), and GKE's upgrade would move canary
    and pool together, past the driver and CUDA labels the platform set. On a cluster enrolled
    in a release channel, auto-upgrade "defaults to true and cannot be disabled" (GKE API,
    ReleaseChannel): the pool keeps it and takes the node pool maintenance exclusion "until end
    of support" instead (NodePool.maintenancePolicy.exclusionUntilEndOfSupport: GKE does not
    upgrade it before its version's end of support). On a cluster without one, auto-upgrade is
    off."""
    if spec.gcp.node_version is None:
        return True, None
    if cluster.release_channel is None:
        return False, None
    exclusion = container.NodePoolMaintenancePolicyExclusionUntilEndOfSupportArgs(enabled=True)
    return True, [
        container.NodePoolMaintenancePolicyArgs(exclusion_until_end_of_supports=[exclusion])
    ]


def node_pool_args(
    args: GkeGpuNodePoolArgs, service_account: pulumi.Input[str]
) -> container.NodePoolArgs:
    pool = args.pool
    spec = pool.spec
    gke_type = ACCELERATORS[pool.gpu.accelerator].gke_type
    assert gke_type is not None, f"{pool.gpu.accelerator} resolved for GKE without a GKE type"
    machine_type = spec.instance_types[0]
    per_zone = spec.gcp.autoscaling_scope == "per-zone"
    auto_upgrade, maintenance_policies = pinned_pool_upgrades(spec, args.cluster)
    return container.NodePoolArgs(
        project=args.cluster.project,
        location=args.cluster.location,
        cluster=args.cluster.name_input,
        node_locations=list(args.zones),
        # Per zone: the cloud component refuses a total `min` that the zones do not divide.
        initial_node_count=spec.min if per_zone else spec.min // len(args.zones),
        ignore_node_count_changes=True,
        autoscaling=container.NodePoolAutoscalingArgs(
            min_node_count=spec.min if per_zone else None,
            max_node_count=spec.max if per_zone else None,
            total_min_node_count=None if per_zone else spec.min,
            total_max_node_count=None if per_zone else spec.max,
            location_policy=location_policy(spec),
        ),
        # A pinned node version is how a canary pool runs a new GKE version (and on COS, a new
        # driver) before the others; unset, the pool follows the cluster's version.
        version=spec.gcp.node_version,
        # GKE's guides create flex-start and queued pools with `--no-enable-autorepair`, as
        # repairs "could disrupt workloads that run on repaired nodes" (the provisioningrequest
        # page). A pinned pool is not auto-upgraded (`pinned_pool_upgrades`).
        management=container.NodePoolManagementArgs(
            auto_repair=not dynamic_workload_scheduler_modes(spec),
            auto_upgrade=auto_upgrade,
        ),
        maintenance_policies=maintenance_policies,
        queued_provisioning=(
            container.NodePoolQueuedProvisioningArgs(enabled=True)
            if spec.gcp.queued_provisioning
            else None
        ),
        upgrade_settings=upgrade_settings(spec),
        node_config=container.NodePoolNodeConfigArgs(
            machine_type=machine_type,
            guest_accelerators=[
                container.NodePoolNodeConfigGuestAcceleratorArgs(
                    type=gke_type,
                    count=pool.gpu.count,
                    gpu_driver_installation_config=container.NodePoolNodeConfigGuestAcceleratorGpuDriverInstallationConfigArgs(
                        gpu_driver_version="INSTALLATION_DISABLED"
                    ),
                    gpu_sharing_config=gke_gpu_sharing_config(pool),
                    gpu_partition_size=gke_gpu_partition_size(pool),
                )
            ],
            image_type=GKE_IMAGE_TYPES[args.platform],
            labels=secret_if(args.secret_labels, node_labels(pool, args.platform)),
            taints=[
                container.NodePoolNodeConfigTaintArgs(
                    key=taint.key, value=taint.value, effect=CLOUD_TAINT_EFFECTS[taint.effect]
                )
                for taint in pool.identity.taints
            ],
            spot=spec.capacity == "spot",
            # Sent only when set, so that a pool created before they existed sees no change.
            flex_start=spec.gcp.flex_start or None,
            max_run_duration=(
                f"{spec.gcp.max_run_hours * 3600}s" if spec.gcp.max_run_hours else None
            ),
            reservation_affinity=reservation_affinity(spec),
            disk_size_gb=spec.disk_size_gib,
            disk_type=spec.gcp.disk_type or boot_disk_types(machine_type)[0],
            service_account=service_account,
            oauth_scopes=[CLOUD_PLATFORM_SCOPE],
            metadata={"disable-legacy-endpoints": "true"},
            # Pods see the GKE metadata server (Workload Identity), never the node's own
            # credentials.
            workload_metadata_config=container.NodePoolNodeConfigWorkloadMetadataConfigArgs(
                mode="GKE_METADATA"
            ),
            shielded_instance_config=container.NodePoolNodeConfigShieldedInstanceConfigArgs(
                # COS's NVIDIA modules are signed and load under secure boot. On Ubuntu the
                # operator compiles the driver on the node, and secure boot would refuse to
                # load that unsigned module: the GPUs would never come up.
                enable_secure_boot=args.platform is Platform.GKE_COS,
                enable_integrity_monitoring=True,
            ),
            resource_labels={POOL_RESOURCE_LABEL: spec.name},
        ),
    )


def upgrade_settings(spec: GpuPoolSpec) -> container.NodePoolUpgradeSettingsArgs:
    """How GKE upgrades the pool's nodes: surge, with the pool's `maxSurge` and
    `maxUnavailable` (by default none surging on a specific reservation: GKE counts surge nodes
    against it, and "continues to attempt" the upgrade while it has no room, GKE's
    node-upgrades-quota page), or blue-green (pulumi-gcp `NodePool.upgrade_settings.
    blue_green_settings`), keeping the drained old nodes `blueGreenSoakHours`.

    Blue-green's standard rollout (container.v1 discovery document, `StandardRolloutPolicy`)
    drains the old nodes batch by batch as soon as the new ones are up (`batchSoakDuration`
    "Default to zero"), evicting running jobs as a surge upgrade does. With
    `blueGreenDrainWaitHours` the pool takes the autoscaled rollout instead
    (`AutoscaledRolloutPolicy`, in Preview on GKE's node-pool-upgrade-strategies page), which
    cordons the old nodes and drains them only after `waitForDrainDuration` ("between 0 and 7
    days"), letting long jobs end."""
    gcp = spec.gcp
    if gcp.upgrade_strategy == "blue-green":
        wait = gcp.blue_green_drain_wait_hours
        return container.NodePoolUpgradeSettingsArgs(
            strategy="BLUE_GREEN",
            blue_green_settings=container.NodePoolUpgradeSettingsBlueGreenSettingsArgs(
                node_pool_soak_duration=_duration(gcp.blue_green_soak_hours),
                standard_rollout_policy=(
                    container.NodePoolUpgradeSettingsBlueGreenSettingsStandardRolloutPolicyArgs(
                        batch_node_count=1
                    )
                    if wait is None
                    else None
                ),
                autoscaled_rollout_policy=(
                    container.NodePoolUpgradeSettingsBlueGreenSettingsAutoscaledRolloutPolicyArgs(
                        wait_for_drain_duration=_duration(wait)
                    )
                    if wait is not None
                    else None
                ),
            ),
        )
    surge, unavailable = gcp.surge_upgrade
    return container.NodePoolUpgradeSettingsArgs(
        strategy="SURGE", max_surge=surge, max_unavailable=unavailable
    )


def longest_upgrade(spec: GpuPoolSpec, zones: int) -> timedelta:
    """The longest upgrade of the pool's nodes (all `max` of them, in each zone where the
    autoscaling scope is per zone) its `upgrade_settings` allow."""
    gcp = spec.gcp
    nodes = spec.max * zones if gcp.autoscaling_scope == "per-zone" else spec.max
    if gcp.upgrade_strategy == "blue-green":
        return gke_blue_green_rollout(
            nodes, _hours(gcp.blue_green_drain_wait_hours), _hours(gcp.blue_green_soak_hours)
        )
    return gke_surge_rollout(nodes, zones, *gcp.surge_upgrade)


def _hours(hours: int | None) -> timedelta | None:
    return None if hours is None else timedelta(hours=hours)


def _duration(hours: int | None) -> str | None:
    """Hours as the API's `google-duration` (seconds, `s`); None leaves GKE's default."""
    return f"{hours * 3600}s" if hours is not None else None


def location_policy(spec: GpuPoolSpec) -> str:
    """How the autoscaler picks a zone to scale up in: `ANY` where capacity is where it is
    (Spot, reservations, Dynamic Workload Scheduler), `BALANCED` for plain on-demand pools.

    `ANY` "prioritize[s] utilization of unused reservations, and reduces preemption risk for
    Spot VMs" (pulumi-gcp's `NodePoolAutoscaling.location_policy`); GKE's guides create
    flex-start and queued pools with `--location-policy=ANY`.
    """
    anywhere = (
        spec.capacity == "spot"
        or spec.gcp.reservation in ("any", "specific")
        or bool(dynamic_workload_scheduler_modes(spec))
    )
    return "ANY" if anywhere else "BALANCED"


def reservation_affinity(
    spec: GpuPoolSpec,
) -> container.NodePoolNodeConfigReservationAffinityArgs | None:
    """Which Compute Engine reservations the nodes consume, where the pool says. GKE's guides
    create flex-start and queued pools with `--reservation-affinity=none`. Otherwise an unset
    `gcp.reservation` sends nothing: the provider replaces a node pool whose affinity changes
    (terraform-provider-google `node_config.go`, `reservation_affinity` ForceNew), so stating a
    default would replace every pool created without one."""
    gcp = spec.gcp
    if gcp.reservation is None:
        if not dynamic_workload_scheduler_modes(spec):
            return None
        return container.NodePoolNodeConfigReservationAffinityArgs(
            consume_reservation_type=RESERVATION_AFFINITIES["none"]
        )
    specific = gcp.reservation == "specific"
    return container.NodePoolNodeConfigReservationAffinityArgs(
        consume_reservation_type=RESERVATION_AFFINITIES[gcp.reservation],
        key=RESERVATION_NAME_KEY if specific else None,
        values=[gcp.reservation_name] if specific and gcp.reservation_name else None,
    )


def cluster_version_problems(pool: ResolvedPool, cluster: GkeCluster) -> list[ConfigProblem]:
    """A pinned node version newer than the control plane's, which GKE refuses (nodes may run
    the control plane's version or an older one, never a newer one: GKE's version skew
    policy), and the pool's capacity settings that the cluster's GKE version does not have yet:
    GKE asks the cluster itself to be on that version, whatever the nodes run (config validation
    checks a pinned `gcp.nodeVersion`)."""
    problems = []
    node_version = pool.spec.gcp.node_version
    if node_version is not None and _newer_than_control_plane(node_version, cluster.master_version):
        problems.append(
            ConfigProblem(
                key_path("pools", pool.index, "gcp", "nodeVersion"),
                node_version,
                f"at most {cluster.master_version}, the version of {cluster.name}'s control"
                " plane: GKE runs no node newer than its control plane; upgrade the cluster"
                " first",
            )
        )
    return problems + [
        ConfigProblem(
            key_path("pools", pool.index, "gcp", key),
            True,
            f"false, or a cluster on GKE {minimum} or later ({cluster.name} runs"
            f" {cluster.master_version}): upgrade the cluster first",
        )
        for key, minimum in gke_capacity_too_new(pool.spec, cluster.master_version).items()
    ]


def _newer_than_control_plane(node_version: str, master_version: str) -> bool:
    """Of a cluster about to be created at a minor (`1.35`, the channel picks the patch), only
    a later minor is known to be newer."""
    master = version_key(master_version)
    if len(master[0]) == 2:
        return version_key(node_version)[0][:2] > master[0]
    return version_key(node_version) > master


def gke_gpu_sharing_config(
    pool: ResolvedPool,
) -> container.NodePoolNodeConfigGuestAcceleratorGpuSharingConfigArgs | None:
    """How GKE's device plugin shares each GPU of a time-sliced pool it serves."""
    sharing = pool.spec.sharing
    if pool.sharer is not GpuSharer.GKE or not isinstance(sharing, TimeSlicingSharing):
        return None
    return container.NodePoolNodeConfigGuestAcceleratorGpuSharingConfigArgs(
        gpu_sharing_strategy=GKE_TIME_SHARING, max_shared_clients_per_gpu=sharing.replicas
    )


def gke_gpu_partition_size(pool: ResolvedPool) -> str | None:
    """The MIG partition (`1g.10gb`) GKE cuts each GPU of a MIG pool it serves into."""
    sharing = pool.spec.sharing
    if pool.sharer is not GpuSharer.GKE or not isinstance(sharing, MigSharing):
        return None
    return sharing.profile.removeprefix("all-")


def node_labels(pool: ResolvedPool, platform: Platform) -> dict[str, str]:
    """The pool's node identity labels, and the ones that say who serves its GPUs."""
    labels = dict(pool.identity.labels)
    if pool.sharer is GpuSharer.GKE:
        labels.update(OPERATOR_OPERANDS_OFF_LABELS)
    else:
        labels[GKE_DEVICE_PLUGIN_OFF_LABEL] = "true"
    if platform is Platform.GKE_UBUNTU:
        labels[DRIVER_LABEL] = "operator"
    return labels


def node_service_account_id(cluster: GkeCluster, pool_name: str, prefix: str = "gpu") -> str:
    """A service account ID (6 to 30 characters) unique to the pool of this cluster, so that
    stacks of two clusters in one project do not claim the same account; `prefix` tells GPU
    pools' accounts from the system pool's."""
    digest = hashlib.sha256(
        f"{cluster.project}/{cluster.location}/{cluster.name}/{pool_name}".encode()
    ).hexdigest()[:6]
    return f"{prefix}-{pool_name[:19]}-{digest}"
