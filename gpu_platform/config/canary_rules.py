"""Rules of canary pools: a canary runs the GPUs of the pool it leads, that pool nothing newer
than its canary, and the canary on capacity that starts a node for its gate's plain pod, which
the reservation of the pool it leads may not have room for."""

from collections.abc import Iterator

from gpu_platform.config.fields import Cloud, Platform
from gpu_platform.config.operator import pool_driver_version
from gpu_platform.config.pools import GpuPoolSpec
from gpu_platform.config.problems import ConfigProblem, key_path
from gpu_platform.config.set_aside import per_element
from gpu_platform.config.stack import StackConfig, known_platform
from gpu_platform.version_order import version_key


def canary_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    by_name = {pool.name: pool for pool in config.pools}

    def of_pool(i: int, pool: GpuPoolSpec) -> Iterator[ConfigProblem]:
        if pool.canary_of is None:
            if "canary_soak_minutes" in pool.model_fields_set:
                yield ConfigProblem(
                    key_path("pools", i, "canarySoakMinutes"),
                    pool.canary_soak_minutes,
                    "no value unless the pool is a canary (canaryOf)",
                )
            return
        yield from _canary_capacity_problems(config, i, pool)
        path = key_path("pools", i, "canaryOf")
        target = by_name.get(pool.canary_of)
        others = sorted(set(by_name) - {pool.name})
        if target is None or target is pool:
            yield ConfigProblem(path, pool.canary_of, f"another pool's name: {others}")
        elif target.canary_of is not None:
            yield ConfigProblem(
                path,
                pool.canary_of,
                f"a pool that is not itself a canary ({target.name} is {target.canary_of}'s)",
            )
        elif (target.instance_types, target.sharing) != (pool.instance_types, pool.sharing):
            yield ConfigProblem(
                path,
                pool.canary_of,
                f"a pool with the canary's instance types and sharing mode: {target.name} has"
                f" {target.instance_types}, {target.sharing.mode}; this pool"
                f" {pool.instance_types}, {pool.sharing.mode}. A canary on other GPUs proves"
                " nothing for them",
            )
        else:
            yield from _shared_reservation_problems(config, i, pool, target)
            yield from _canary_lead_problems(config, i, pool, target)

    yield from per_element(config.pools, of_pool)


def _canary_capacity_problems(
    config: StackConfig, i: int, canary: GpuPoolSpec
) -> Iterator[ConfigProblem]:
    """The gate Job of every new canary release is a plain pod that waits for a node of the
    canary, started from zero if need be: capacity that never starts one for such a pod would
    end the gate at its deadline on every `pulumi up`."""
    if config.cloud is Cloud.AWS and canary.capacity == "capacity-block":
        # EKS updates a Capacity Block node group only at desired size 0, between blocks
        # (EKS user guide, "Create a managed node group with Capacity Blocks for ML"), and
        # no node starts outside the block's window: the gate that follows the update waits
        # for one in vain.
        yield ConfigProblem(
            key_path("pools", i, "capacity"),
            canary.capacity,
            "on-demand, spot or reserved on a canary (canaryOf): a Capacity Block starts nodes"
            " only within its window, and its node group is updated between blocks, so the"
            " canary's gate would wait for a node until its deadline",
        )
    if config.cloud is Cloud.GCP and canary.gcp.queued_provisioning:
        # GKE's provisioningrequest page: a queued pool's nodes come only for a
        # ProvisioningRequest; flex-start alone (concepts/dws) starts them for pending pods.
        yield ConfigProblem(
            key_path("pools", i, "gcp", "queuedProvisioning"),
            canary.gcp.queued_provisioning,
            "false on a canary (canaryOf): a queued pool starts nodes only for a"
            " ProvisioningRequest, never for the canary's gate, a plain pod, which would wait"
            " for a node until its deadline; gcp.flexStart without it starts nodes for pending"
            " pods",
        )


def _shared_reservation_problems(
    config: StackConfig, i: int, canary: GpuPoolSpec, target: GpuPoolSpec
) -> Iterator[ConfigProblem]:
    """A canary whose only capacity is the reservation of the pool it leads gets a node for its
    gate only while that pool leaves room in it: a pool that fills its reservation, as a pool
    bought for its load does at its `max`, would keep the gate waiting until its deadline."""
    if config.cloud is Cloud.AWS:
        reservation = canary.aws.capacity_reservation_id or (
            canary.aws.capacity_reservation_resource_group_arn
        )
        led = (
            target.aws.capacity_reservation_id or target.aws.capacity_reservation_resource_group_arn
        )
        if (
            canary.capacity == "reserved"
            and not canary.aws.on_demand_fallback
            and reservation is not None
            and reservation == led
        ):
            yield ConfigProblem(
                key_path("pools", i, "capacity"),
                canary.capacity,
                f"on-demand or spot on a canary (canaryOf) of {target.name}, a reservation of its"
                f" own, or aws.onDemandFallback: true: {reservation} is {target.name}'s"
                " reservation too, and once that pool fills it the canary's gate waits for a"
                " node until its deadline",
            )
    elif (
        canary.gcp.reservation == "specific"
        and canary.gcp.reservation_name is not None
        and canary.gcp.reservation_name == target.gcp.reservation_name
    ):
        # A `specific` pool never falls back to on-demand capacity (GKE, consuming reserved
        # zonal resources).
        yield ConfigProblem(
            key_path("pools", i, "gcp", "reservationName"),
            canary.gcp.reservation_name,
            f"a reservation of the canary's own, or gcp.reservation none or any, on a canary"
            f" (canaryOf) of {target.name}: it is {target.name}'s reservation too, and once that"
            " pool fills it the canary's gate waits for a node until its deadline",
        )


def _canary_lead_problems(
    config: StackConfig, i: int, canary: GpuPoolSpec, target: GpuPoolSpec
) -> Iterator[ConfigProblem]:
    """A pool runs nothing newer than its canary: what reaches it was tried there first."""
    j = config.pools.index(target)
    if config.cloud is Cloud.AWS:
        ours, theirs = canary.aws.ami_release_version, target.aws.ami_release_version
        ahead = ours is not None and theirs is not None and version_key(theirs) > version_key(ours)
        where = ("aws", "amiReleaseVersion")
    else:
        ours, theirs = canary.gcp.node_version, target.gcp.node_version
        ahead = theirs is not None and (ours is None or version_key(theirs) > version_key(ours))
        where = ("gcp", "nodeVersion")
    if ahead:
        yield ConfigProblem(
            key_path("pools", j, *where),
            theirs,
            f"at most {ours or 'the cluster version'}, the version of its canary pools[{i}]"
            f" ({canary.name}): move the canary first, watch it, then promote",
        )
    if known_platform(config) is Platform.GKE_UBUNTU:
        ours, theirs = (pool_driver_version(config.operator, p) for p in (canary, target))
        if version_key(theirs) > version_key(ours):
            set_by = (
                ("pools", j, "gcp", "driverVersion")
                if target.gcp.driver_version is not None
                else ("operator", "driverVersion")
            )
            yield ConfigProblem(
                key_path(*set_by),
                theirs,
                f"at most {ours}, the NVIDIA driver of pools[{j}] ({target.name})'s canary"
                f" pools[{i}] ({canary.name}): give the canary the new driver first"
                " (gcp.driverVersion), watch it, then promote",
            )
