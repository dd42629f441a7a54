"""The GKE side of the platform (first cut: pools as declared, the deployer's kubeconfig)."""

from collections.abc import Sequence

import pulumi

from components.cloud import ClusterConnection, pools_as_declared
from components.config import ConfigError, ConfigProblem, StackConfig, key_path
from components.kubernetes.provider import connect_with_kubeconfig_context
from components.node_identity import ResolvedPool


class GkeCloud:
    def __init__(self, config: StackConfig):
        self.config = config

    def resolve_pools(self) -> list[ResolvedPool]:
        return pools_as_declared(self.config)

    def connect(self) -> ClusterConnection:
        context = self.config.cluster.kubeconfig_context
        if context is None:
            raise ConfigError(
                [ConfigProblem(key_path("cluster", "kubeconfigContext"), None, "a context")]
            )
        return connect_with_kubeconfig_context(context)

    def create_pools(
        self, pools: Sequence[ResolvedPool], connection: ClusterConnection
    ) -> list[pulumi.Resource]:
        return []
