"""The EKS side of the platform: an existing cluster, GPU node groups and the cluster autoscaler.

`resolve_pools` only looks things up (the cluster, its subnets, the instance types and where EC2
offers them) and raises one `ConfigError` for every pool that cannot work, before any resource
exists. `create_pools` then creates the node groups of each pool, the EFA device plugin where a
pool asks for EFA, and the autoscaler that scales them.
"""

from collections.abc import Iterator, Sequence

import pulumi

from components.cloud import ClusterConnection
from components.config import ConfigError, ConfigProblem, StackConfig, key_path
from components.eks.cluster import (
    EksCluster,
    Subnet,
    connect,
    look_up_cluster,
    look_up_subnets,
    private_subnets,
)
from components.eks.cluster_autoscaler import (
    ClusterAutoscaler,
    ClusterAutoscalerArgs,
    autoscaler_image,
)
from components.eks.efa_device_plugin import EfaDevicePlugin, EfaDevicePluginArgs
from components.eks.node_group import EksGpuNodeGroup, EksGpuNodeGroupArgs
from components.eks.node_group_names import names_a_zone_of
from components.eks.node_monitoring_agent import NodeMonitoringAgent, NodeMonitoringAgentArgs
from components.eks.placement import NodeGroupPlacement, resolve_placement
from components.node_identity import ResolvedPool
from components.versions import CLUSTER_AUTOSCALER_IMAGES


class EksCloud:
    def __init__(self, config: StackConfig):
        self.config = config
        self._cluster: EksCluster | None = None
        self._placements: dict[str, NodeGroupPlacement] = {}
        self._autoscaler_image: str | None = None

    @property
    def cluster(self) -> EksCluster:
        if self._cluster is None:
            self._cluster = look_up_cluster(self.config.cluster)
        return self._cluster

    def resolve_pools(self) -> list[ResolvedPool]:
        subnets = self._node_subnets()
        if not subnets:
            raise ConfigError(
                [
                    ConfigProblem(
                        key_path("cluster", "nodeSubnetIds"),
                        [],
                        f"subnets for the GPU nodes: every subnet of cluster {self.cluster.name}"
                        " assigns public IP addresses",
                    )
                ]
            )
        problems = list(_pool_name_problems(self.config))
        pools = []
        for i, spec in enumerate(self.config.pools):
            try:
                pool, placement = resolve_placement(
                    spec,
                    i,
                    self.cluster,
                    subnets,
                    self._node_image,
                    self.config.autoscaler.gpu_node_idle_minutes,
                )
            except ConfigError as error:
                problems.extend(error.problems)
                continue
            pools.append(pool)
            self._placements[spec.name] = placement
        if self.config.autoscaler.install:
            self._autoscaler_image = autoscaler_image(self.config.autoscaler, self.cluster.version)
            if self._autoscaler_image is None:
                problems.append(
                    ConfigProblem(
                        key_path("autoscaler", "imageTag"),
                        None,
                        f"an autoscaler release for Kubernetes {self.cluster.version}, the"
                        " cluster's version: the platform pins one for"
                        f" {', '.join(CLUSTER_AUTOSCALER_IMAGES)}",
                    )
                )
        if problems:
            raise ConfigError(problems)
        return pools

    def connect(self) -> ClusterConnection:
        return connect(self.cluster, self.config.cluster)

    def create_pools(
        self, pools: Sequence[ResolvedPool], connection: ClusterConnection
    ) -> list[pulumi.Resource]:
        node_groups: list[pulumi.Resource] = [
            EksGpuNodeGroup(
                pool.spec.name,
                EksGpuNodeGroupArgs(
                    pool=pool,
                    placement=self._placements[pool.spec.name],
                    cluster=self.cluster,
                    node_image=self._node_image,
                    cni_policy_on_node_role=self.config.cluster.cni_policy_on_node_role,
                    idle_minutes=self.config.autoscaler.gpu_node_idle_minutes,
                    secret_labels=self.config.is_secret("pools"),
                    protect=self.config.protect,
                ),
            )
            for pool in pools
        ]
        if any(pool.spec.aws.efa for pool in pools):
            node_groups.append(
                EfaDevicePlugin(
                    "efa-device-plugin",
                    EfaDevicePluginArgs(),
                    pulumi.ResourceOptions(provider=connection.provider),
                )
            )
        agent_version = self.config.cluster.node_monitoring_agent_version
        if agent_version is not None:
            node_groups.append(
                NodeMonitoringAgent(
                    "node-monitoring-agent",
                    NodeMonitoringAgentArgs(self.cluster, agent_version),
                )
            )
        if self._autoscaler_image is None:
            return node_groups
        autoscaler = ClusterAutoscaler(
            "cluster-autoscaler",
            ClusterAutoscalerArgs(
                self.config.autoscaler, self.cluster, self._autoscaler_image, pools
            ),
            pulumi.ResourceOptions(provider=connection.provider),
        )
        return [*node_groups, autoscaler]

    @property
    def _node_image(self) -> str:
        return self.config.cluster.node_image or "al2023"

    def _node_subnets(self) -> list[Subnet]:
        chosen = self.config.cluster.node_subnet_ids
        subnets = look_up_subnets(chosen or self.cluster.subnet_ids, self.cluster.region)
        return subnets if chosen else private_subnets(subnets)


def _pool_name_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    """A pool named as another's per-zone node groups are (`<pool>-<zone>`) would have its node
    group taken for the other's when the program and `preflight` find them by name."""
    for i, pool in enumerate(config.pools):
        for other in config.pools:
            if other is not pool and names_a_zone_of(other.name, pool.name):
                yield ConfigProblem(
                    key_path("pools", i, "name"),
                    pool.name,
                    f"a name other than pool {other.name}'s followed by a zone, which names"
                    f" {other.name}'s node group in that zone",
                )
