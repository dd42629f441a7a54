"""Rules across fields of GKE stacks: who installs the driver on each node image, GPU sharing
GKE does itself, Dynamic Workload Scheduler and Compute Engine reservations."""

from collections.abc import Iterator

from gpu_platform.config.capacity import dynamic_workload_scheduler_modes, gke_capacity_too_new
from gpu_platform.config.fields import Cloud, Platform
from gpu_platform.config.operator import OPERATOR_DRIVER_OPTIONS
from gpu_platform.config.pools import (
    ExclusiveSharing,
    GpuPoolSpec,
    MpsSharing,
    TimeSlicingSharing,
)
from gpu_platform.config.problems import MISSING, ConfigProblem, key_path, set_field_problems
from gpu_platform.config.set_aside import per_element
from gpu_platform.config.stack import StackConfig, known_platform
from gpu_platform.version_order import version_key


def gke_pool_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    if config.cloud is not Cloud.GCP:
        return
    # On COS, Google's driver installer loads COS's signed driver; a driver the operator built
    # as well would fight it for the same GPUs.
    driver = config.operator.overrides.get("driver", {})
    platform = known_platform(config)
    if platform is Platform.GKE_COS and driver.get("enabled") is True:
        yield ConfigProblem(
            key_path("operator", "overrides", "driver", "enabled"),
            True,
            "false or no value with nodeImage cos (Google's driver installer owns the driver"
            " there); for the operator's own driver, use nodeImage ubuntu",
        )
    if platform is Platform.GKE_COS:
        yield from set_field_problems(
            config.operator,
            OPERATOR_DRIVER_OPTIONS,
            ("operator",),
            "no value with nodeImage cos, where Google's installer loads COS's driver",
        )
    if platform is Platform.GKE_UBUNTU:
        yield from _nvidia_driver_problems(config)

    def of_pool(i: int, pool: GpuPoolSpec) -> Iterator[ConfigProblem]:
        if pool.gcp.cos_driver_branch is not None and platform is not Platform.GKE_COS:
            yield ConfigProblem(
                key_path("pools", i, "gcp", "cosDriverBranch"),
                pool.gcp.cos_driver_branch,
                "no value unless nodeImage is cos (on ubuntu the pool's gcp.driverVersion, else"
                " operator.driverVersion, holds)",
            )
        if pool.gcp.driver_version is not None and platform is Platform.GKE_COS:
            yield ConfigProblem(
                key_path("pools", i, "gcp", "driverVersion"),
                pool.gcp.driver_version,
                "no value unless nodeImage is ubuntu, where the GPU Operator builds the driver;"
                " on cos the pool's GKE version decides it (gcp.nodeVersion, gcp.cosDriverBranch)",
            )
        yield from _gke_sharing_problems(config, pool, i)
        yield from _upgrade_problems(pool, i)

    yield from per_element(config.pools, of_pool)


def _upgrade_problems(pool: GpuPoolSpec, i: int) -> Iterator[ConfigProblem]:
    gcp = pool.gcp
    if gcp.upgrade_strategy == "surge":
        if gcp.surge_upgrade == (0, 0):
            yield ConfigProblem(
                key_path("pools", i, "gcp", "maxSurge"),
                0,
                "at least 1 when maxUnavailable is 0 (GKE could upgrade no node)",
            )
        yield from set_field_problems(
            gcp,
            ("blue_green_drain_wait_hours", "blue_green_soak_hours"),
            ("pools", i, "gcp"),
            "no value unless gcp.upgradeStrategy is blue-green",
        )
        return
    yield from set_field_problems(
        gcp,
        ("max_surge", "max_unavailable"),
        ("pools", i, "gcp"),
        "no value with upgradeStrategy blue-green, which replaces every node (they set surge"
        " upgrades)",
    )
    # Blue-green starts as many new nodes as the pool has before it drains the old ones.
    if gcp.reservation == "specific":
        yield ConfigProblem(
            key_path("pools", i, "gcp", "upgradeStrategy"),
            gcp.upgrade_strategy,
            "surge with reservation specific: blue-green starts a second set of nodes, which the"
            " reservation, sized to the pool, cannot hold, and the upgrade would never end",
        )
    modes = dynamic_workload_scheduler_modes(pool)
    if modes:
        yield ConfigProblem(
            key_path("pools", i, "gcp", "upgradeStrategy"),
            gcp.upgrade_strategy,
            f"surge with {' and '.join(f'gcp.{m}' for m in modes)}: GKE upgrades such nodes"
            " by replacing them as they end (short-lived upgrades)",
        )


# On GKE Ubuntu each pool's nodes get their driver from an NVIDIADriver resource of their own
# (gpu_platform/kubernetes/nvidia_driver.py). From v26.7.0 the operator routes every GPU node to
# the one NVIDIADriver selecting it, hands nodes over from ClusterPolicy's driver through its
# upgrade controller, and applies each NVIDIADriver's own upgrade policy to its nodes
# (gpu-operator v26.7.0 internal/nvidiadriver/nvidiadriver.go AssignOwners,
# controllers/upgrade_controller.go reconcileNVIDIADriverUpgrades); up to v26.3.3 one
# ClusterPolicy policy covered every driver pod.
NVIDIA_DRIVER_MIN_CHART_VERSION = "v26.7.0"
NVIDIA_DRIVER_OVERRIDES = ("repository", "image", "imagePullSecrets")
"""The `operator.overrides.driver` values the platform's NVIDIADriver resources take over."""
# With the NVIDIADriver CRD on, the chart renders ClusterPolicy's other driver values no more,
# and the operator reads its own upgrade policy from each NVIDIADriver: only `enabled` and the
# driver manager's image (the operator's DRIVER_MANAGER_IMAGE) still act (v26.7.0
# templates/clusterpolicy.yaml, templates/operator.yaml). `version` has a rule of its own.
_CHART_DRIVER_OVERRIDES = ("enabled", "manager", "version")


def _nvidia_driver_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    chart = config.operator.chart_version
    if version_key(chart) < version_key(NVIDIA_DRIVER_MIN_CHART_VERSION):
        yield ConfigProblem(
            key_path("operator", "chartVersion"),
            chart,
            f"{NVIDIA_DRIVER_MIN_CHART_VERSION} or newer with nodeImage ubuntu, where each pool"
            " has an NVIDIADriver resource of its own: older operators neither hand nodes over"
            " to it nor roll it out with its own upgrade policy",
        )
    canaries = [i for i, pool in enumerate(config.pools) if pool.canary_of is not None]
    if canaries and config.operator.driver_upgrade_job_wait_minutes == 0:
        yield ConfigProblem(
            key_path("operator", "driverUpgradeJobWaitMinutes"),
            0,
            f"1 or more with a canary pool (pools[{canaries[0]}].canaryOf) on"
            " nodeImage ubuntu: the canary's gate waits for the GPU Operator to load the new"
            " driver on one of the canary's nodes, which it does only after that node's Jobs,"
            " and the gate must end",
        )
    taken = (*NVIDIA_DRIVER_OVERRIDES, *_CHART_DRIVER_OVERRIDES)
    for key, value in config.operator.overrides.get("driver", {}).items():
        # The operator reconciles NVIDIADriver resources whenever ClusterPolicy's
        # useNvidiaDriverCRD is on, whatever its driver.enabled (v26.7.0
        # controllers/nvidiadriver_controller.go:120-131): `false` would install the pools'
        # drivers all the same.
        if key == "enabled" and value is not True:
            yield ConfigProblem(
                key_path("operator", "overrides", "driver", key),
                value,
                "true or no value with nodeImage ubuntu, where the platform's NVIDIADriver"
                " resources install each pool's driver whatever it says, and nothing else"
                " installs one; for a driver the GPU Operator does not build, use nodeImage cos"
                " (Google's installer loads COS's driver)",
            )
        if key not in taken:
            yield ConfigProblem(
                key_path("operator", "overrides", "driver", key),
                value,
                f"no value with nodeImage ubuntu, where only {', '.join(taken[:-1])} act on the"
                " driver: the platform's NVIDIADriver resources build it (per pool with"
                " gcp.driverVersion, rolled out within operator.driverUpgrade... settings)",
            )


# GKE's API takes 2 to 48 clients per GPU, for time-sharing and MPS alike.
_GKE_MAX_SHARED_CLIENTS = 48


def _gke_sharing_problems(
    config: StackConfig, pool: GpuPoolSpec, i: int
) -> Iterator[ConfigProblem]:
    # On GKE, GKE itself shares and partitions GPUs, so that its autoscaler counts what the
    # nodes advertise (gpu_platform.node_identity.sharer_for); it does so on COS only.
    if isinstance(pool.sharing, ExclusiveSharing):
        return
    if known_platform(config) is Platform.GKE_UBUNTU:
        yield ConfigProblem(
            key_path("pools", i, "sharing", "mode"),
            pool.sharing.mode,
            "exclusive with nodeImage ubuntu, where the operator builds the driver and GKE's"
            " autoscaler would plan the pool with whole GPUs; use nodeImage cos to share GPUs",
        )
    elif isinstance(pool.sharing, MpsSharing):
        # GKE's device plugin starts serving an MPS pool only once an MPS control daemon runs
        # on the node ("NVIDIA MPS is not running on this node": container-engine-accelerators
        # pkg/gpu/nvidia/manager.go, isMpsHealthy), and mounts its pipe directory
        # /tmp/nvidia-mps into the clients; nothing the platform runs beside Google's driver
        # installer starts one, and GKE's MPS examples run their clients with hostIPC, which
        # Pod Security `restricted` refuses. Unproven on a node, so refused.
        yield ConfigProblem(
            key_path("pools", i, "sharing", "mode"),
            pool.sharing.mode,
            "time-slicing or mig on GKE: GKE's device plugin serves MPS only where an MPS"
            " control daemon runs on the node, which nothing starts beside the driver the"
            " platform installs, and its clients need hostIPC, which restricted tenant"
            " namespaces refuse (docs/gpu-sharing.md)",
        )
    elif (
        isinstance(pool.sharing, TimeSlicingSharing)
        and pool.sharing.replicas > _GKE_MAX_SHARED_CLIENTS
    ):
        yield ConfigProblem(
            key_path("pools", i, "sharing", "replicas"),
            pool.sharing.replicas,
            f"at most {_GKE_MAX_SHARED_CLIENTS} on GKE (its maxSharedClientsPerGpu)",
        )


def gke_capacity_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    # On AWS, the rule of the other cloud's settings refuses the whole `gcp` block.
    if config.cloud is not Cloud.GCP:
        return

    def of_pool(i: int, pool: GpuPoolSpec) -> Iterator[ConfigProblem]:
        gcp = pool.gcp
        modes = " and ".join(f"gcp.{key}" for key in dynamic_workload_scheduler_modes(pool))
        yield from _gke_reservation_problems(pool, i, bool(modes))
        # Spot VMs are a provisioning model of their own, as flex-start VMs are: Google's
        # cluster-toolkit refuses the two together (modules/compute/gke-node-pool/main.tf at
        # 01a7a3e, its preconditions, as for the rules below).
        if gcp.flex_start and pool.capacity == "spot":
            yield ConfigProblem(
                key_path("pools", i, "capacity"),
                pool.capacity,
                "on-demand with gcp.flexStart: flex-start VMs are a provisioning model of their"
                " own, not Spot VMs",
            )
        # GKE's guides create these pools with `--num-nodes 0` and a minimum of 0: a flex-start
        # node ends after its run time, and a queued pool gets nodes only for a
        # ProvisioningRequest (cluster-toolkit: "autoscaling_total_min_nodes should be 0").
        if modes and pool.min != 0:
            yield ConfigProblem(
                key_path("pools", i, "min"),
                pool.min,
                f"0 with {modes}: GKE starts such nodes only when they are asked for, never to"
                " keep a floor",
            )
        if gcp.max_run_hours is not None and not gcp.flex_start:
            yield ConfigProblem(
                key_path("pools", i, "gcp", "maxRunHours"),
                gcp.max_run_hours,
                "no value unless gcp.flexStart is true (a queued pool's ProvisioningRequests"
                " set their own maxRunDurationSeconds)",
            )
        if gcp.node_version is not None:
            for key, minimum in gke_capacity_too_new(pool, gcp.node_version).items():
                yield ConfigProblem(
                    key_path("pools", i, "gcp", "nodeVersion"),
                    gcp.node_version,
                    f"{minimum} or later with gcp.{key}, the oldest GKE version with it",
                )

    yield from per_element(config.pools, of_pool)


def _gke_reservation_problems(
    pool: GpuPoolSpec, i: int, dynamic_workload_scheduler: bool
) -> Iterator[ConfigProblem]:
    gcp = pool.gcp
    if gcp.reservation == "specific":
        if gcp.reservation_name is None:
            yield ConfigProblem(
                key_path("pools", i, "gcp", "reservationName"),
                MISSING,
                "the name of the Compute Engine reservation to consume, with reservation specific",
            )
        if len(pool.zones) != 1:
            yield ConfigProblem(
                key_path("pools", i, "zones"),
                pool.zones,
                "exactly one zone with reservation specific, the reservation's: reservations"
                " are zonal, and the pool's nodes in any other zone could never start",
            )
    elif gcp.reservation_name is not None:
        yield ConfigProblem(
            key_path("pools", i, "gcp", "reservationName"),
            gcp.reservation_name,
            "no value unless gcp.reservation is specific",
        )
    if gcp.reservation in (None, "none"):
        return
    path = key_path("pools", i, "gcp", "reservation")
    # Compute Engine's "Choose a reservation type" page: reserved capacity cannot create Spot VMs.
    if pool.capacity == "spot":
        yield ConfigProblem(
            path,
            gcp.reservation,
            "none, or no value, with capacity spot: Spot VMs cannot consume reservations",
        )
    # GKE creates flex-start and queued pools with `--reservation-affinity=none` (its
    # provisioningrequest and flex-start pages); cluster-toolkit refuses any other affinity.
    if dynamic_workload_scheduler:
        yield ConfigProblem(
            path,
            gcp.reservation,
            "none, or no value, with gcp.flexStart or gcp.queuedProvisioning: Dynamic Workload"
            " Scheduler finds their capacity, outside any reservation",
        )
