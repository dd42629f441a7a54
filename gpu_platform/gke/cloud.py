"""The GKE side of the platform: an existing Standard cluster or one it creates
(`cluster.create`, `gpu_platform.gke.new_cluster`), GPU node pools for the GPU Operator, and on
Container-Optimized OS Google's driver installer."""

from collections.abc import Callable, Collection, Sequence
from datetime import timedelta
from typing import Any

import pulumi

from gpu_platform.cluster_facts import GkeClusterFacts
from gpu_platform.config import (
    ConfigError,
    ConfigProblem,
    GpuPoolSpec,
    MigSharing,
    Platform,
    StackConfig,
    key_path,
    mig_problem,
)
from gpu_platform.drivers import NvidiaDriver
from gpu_platform.gke.capacity_taints import gke_added_taints
from gpu_platform.gke.cluster import (
    GkeCluster,
    cluster_problems,
    connect_to,
    existing_cluster,
    given_cluster,
    lookup_cluster,
)
from gpu_platform.gke.driver_installer import CosDriverInstaller
from gpu_platform.gke.machine_types import boot_disk_types, gpu_shape
from gpu_platform.gke.new_cluster import NewGkeCluster, planned_cluster, planned_cluster_problems
from gpu_platform.gke.new_cluster.admins import administrator_bindings
from gpu_platform.gke.new_cluster.break_glass import break_glass_refusal
from gpu_platform.gke.new_cluster.system_pool import system_pool_rollout
from gpu_platform.gke.node_driver import pool_driver
from gpu_platform.gke.node_pool import (
    GkeGpuNodePool,
    GkeGpuNodePoolArgs,
    cluster_version_problems,
    longest_upgrade,
)
from gpu_platform.gke.zones import ZoneOfferings
from gpu_platform.instance import part_name
from gpu_platform.kubernetes.provider import ClusterConnection, connect_with_kubeconfig_context
from gpu_platform.node_identity import ResolvedPool, resolve_pool, sharer_for
from gpu_platform.rollout_timeouts import gke_update_timeout
from gpu_platform.secrets import secret_if


class GkeCloud:
    def __init__(self, config: StackConfig, facts: GkeClusterFacts | None = None):
        self.config = config
        self._facts = facts
        self._cluster: GkeCluster | None = None
        self._zones: dict[str, list[str]] = {}
        self._rollouts: list[timedelta] = []
        """The longest upgrade of each GPU pool, held back or not."""
        self._node_pools: dict[str, GkeGpuNodePool] = {}
        self._created: NewGkeCluster | None = None

    @property
    def cluster(self) -> GkeCluster:
        """The stack's cluster, looked up once (or planned, where the stack creates it, or as
        the program gave it);
        ConfigError when the platform cannot use it."""
        if self._cluster is None:
            if self.config.cluster.create is not None:
                cluster = existing_cluster(self.config.cluster) or planned_cluster(self.config)
                problems = list(planned_cluster_problems(self.config))
            elif self._facts is not None:
                cluster, problems = given_cluster(self.config.cluster, self._facts), []
            else:
                cluster = lookup_cluster(self.config.cluster)
                problems = list(cluster_problems(cluster))
            if problems:
                raise ConfigError(problems)
            self._cluster = cluster
        return self._cluster

    def resolve_pools(self) -> list[ResolvedPool]:
        problems: list[ConfigProblem] = []
        resolved = []
        for i, spec in enumerate(self.config.pools):
            try:
                resolved.append(_resolve(spec, i, self.config.platform, self._driver))
            except ConfigError as error:
                problems += error.problems
        if problems:
            raise ConfigError(problems)
        zones = ZoneOfferings(self.cluster)
        for pool in resolved:
            try:
                self._zones[pool.spec.name] = zones.zones_for(pool)
            except ConfigError as error:
                problems += error.problems
                continue
            problems += initial_size_problems(pool, self._zones[pool.spec.name])
            problems += cluster_version_problems(pool, self.cluster)
        if problems:
            raise ConfigError(problems)
        self._rollouts = [
            longest_upgrade(pool.spec, len(self._zones[pool.spec.name])) for pool in resolved
        ]
        return resolved

    @property
    def _update_timeout(self) -> pulumi.CustomTimeouts:
        """Every node pool's update timeout: the longest upgrades of all node pools of the
        cluster that may update in one `up`, the GPU pools and a created cluster's system pool,
        which GKE upgrades with the control plane (`gpu_platform.rollout_timeouts`)."""
        create = self.config.cluster.create
        system = [] if create is None else [system_pool_rollout(create.gcp.system_node_pool)]
        return gke_update_timeout([*self._rollouts, *system])

    def _driver(self, spec: GpuPoolSpec, index: int, accelerator: str) -> NvidiaDriver:
        return pool_driver(self.config, self.cluster, spec, index, accelerator)

    def connect(self, opts: pulumi.ResourceOptions) -> ClusterConnection:
        context = self.config.cluster.kubeconfig_context
        if context is not None:
            return connect_with_kubeconfig_context(context, opts)
        create = self.config.cluster.create
        if create is None:
            return connect_to(self.cluster, opts)
        # The cluster first, then a provider that waits for it and its system nodes: every
        # Kubernetes object depends on them, so `pulumi destroy` deletes the objects first.
        created = NewGkeCluster(
            part_name("cluster"), self.config, self.cluster, self._update_timeout, opts
        )
        self._created = created
        self._cluster = created.cluster
        connection = connect_to(
            created.cluster,
            pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=created.ready)),
        )
        # With the cluster it grants access to.
        administrator_bindings(
            create.administrators,
            pulumi.ResourceOptions(parent=created, provider=connection.provider),
        )
        break_glass_refusal(
            create.gcp, pulumi.ResourceOptions(parent=created, provider=connection.provider)
        )
        return connection

    def create_pools(
        self,
        pools: Sequence[ResolvedPool],
        connection: ClusterConnection,
        opts: pulumi.ResourceOptions,
        held_back: Collection[str] = (),
    ) -> list[pulumi.Resource]:
        platform = self.config.platform
        created: list[pulumi.Resource] = [
            self._node_pool(pool, opts) for pool in pools if pool.spec.name not in held_back
        ]
        if platform is Platform.GKE_COS:
            created.append(
                CosDriverInstaller(
                    part_name("nvidia-driver-installer"),
                    pulumi.ResourceOptions.merge(
                        opts, pulumi.ResourceOptions(provider=connection.provider)
                    ),
                )
            )
        return created

    def create_held_back_pool(
        self,
        pool: ResolvedPool,
        connection: ClusterConnection,
        opts: pulumi.ResourceOptions,
        after: Sequence[pulumi.Resource],
    ) -> pulumi.Resource:
        return self._node_pool(pool, opts, after)

    def kubernetes_version(self) -> str:
        return self.cluster.master_version

    def pool_nodes(self, pool: str) -> pulumi.Resource:
        return self._node_pools[pool]

    def efa_devices(self, pool: str) -> int:
        return 0

    def gpus_by_instance_type(self, pool: str) -> dict[str, int]:
        return {}

    def create_device_plugins(
        self,
        pools: Sequence[ResolvedPool],
        namespace: pulumi.Input[str],
        opts: pulumi.ResourceOptions,
    ) -> list[pulumi.Resource]:
        return []

    def _node_pool(
        self,
        pool: ResolvedPool,
        opts: pulumi.ResourceOptions,
        after: Sequence[pulumi.Resource] = (),
    ) -> pulumi.Resource:
        # A pool names a created cluster by its name alone: it waits for the cluster and its
        # system nodes explicitly, and is deleted before them.
        ready = self._created.ready if self._created is not None else []
        node_pool = GkeGpuNodePool(
            part_name(pool.spec.name),
            GkeGpuNodePoolArgs(
                pool,
                self.cluster,
                self.config.platform,
                self._zones[pool.spec.name],
                self._update_timeout,
                secret_labels=self.config.is_secret("pools"),
                protect=self.config.protect,
                after=[*after, *ready],
            ),
            opts,
        )
        self._node_pools[pool.spec.name] = node_pool
        return node_pool

    def stack_outputs(self) -> dict[str, Any]:
        """`nodeServiceAccounts`: each pool's node service account, on which the deploy identity
        needs `roles/iam.serviceAccountUser` (docs/iam/README.md); `systemNodeServiceAccount`,
        of a cluster the stack creates, the system nodes' (docs/create-cluster-gke.md);
        `secretsKeyCondition`, where the stack creates the cluster's Secrets key, the IAM
        condition of the deploy identity's Cloud KMS role (docs/iam/README.md)."""
        outputs: dict[str, Any] = {
            "nodeServiceAccounts": secret_if(
                self.config.is_secret("pools"),
                {pool.pool_name: pool.service_account for pool in self._node_pools.values()},
            )
        }
        if self._created is not None:
            outputs["systemNodeServiceAccount"] = self._created.system_service_account
            if self._created.secrets_key_condition is not None:
                outputs["secretsKeyCondition"] = self._created.secrets_key_condition
        return outputs


def initial_size_problems(pool: ResolvedPool, zones: Sequence[str]) -> list[ConfigProblem]:
    """A total `min` GKE cannot start: it creates a node pool with `initial_node_count` nodes in
    each of its zones (pulumi-gcp's NodePool docs), all obtained before the pool exists, so a
    total that is not a whole number per zone would start more nodes than `min`, or than `max`."""
    spec = pool.spec
    if spec.gcp.autoscaling_scope == "per-zone" or spec.min % len(zones) == 0:
        return []
    return [
        ConfigProblem(
            key_path("pools", pool.index, "min"),
            spec.min,
            f"0 or a multiple of the pool's {len(zones)} zones ({', '.join(zones)}): GKE starts"
            " the same number of nodes in each zone; or name fewer zones, or set"
            " gcp.autoscalingScope per-zone",
        )
    ]


def _resolve(
    spec: GpuPoolSpec,
    index: int,
    platform: Platform,
    driver_of: Callable[[GpuPoolSpec, int, str], NvidiaDriver],
) -> ResolvedPool:
    shape = gpu_shape(spec, index)
    problems = []
    # A MIG pool that states its accelerator was checked with the rest of the config.
    if isinstance(spec.sharing, MigSharing) and spec.accelerator is None:
        problem = mig_problem(spec, shape.accelerator, index)
        if problem:
            problems.append(problem)
    machine_type = spec.instance_types[0]
    disk_types = boot_disk_types(machine_type)
    if spec.gcp.disk_type not in (None, *disk_types):
        problems.append(
            ConfigProblem(
                key_path("pools", index, "gcp", "diskType"),
                spec.gcp.disk_type,
                f"one of {list(disk_types)} or no value (the boot disks {machine_type} takes)",
            )
        )
    if problems:
        raise ConfigError(problems)
    sharer = sharer_for(platform, spec.sharing)
    driver = driver_of(spec, index, shape.accelerator)
    return resolve_pool(spec, index, shape, sharer, driver, gke_added_taints(spec))
