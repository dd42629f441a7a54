"""What each cloud provides to the rest of the platform.

`GpuPlatform` (`gpu_platform.platform`) asks the stack's cloud, in this order, to: resolve the
pools (lookups only, so a pool that cannot work is a config error before anything is created),
connect to the cluster (a Kubernetes provider and a secret kubeconfig; where the config asks for
a cluster, `cluster.create`, the cloud creates it first and the provider depends on it, so that
every Kubernetes object is deleted before the cluster), and create its GPU pools; and exports
the cloud's own stack outputs. The Kubernetes side (`gpu_platform.kubernetes`) is then the same on
every cloud.

Neither cloud imports this module, which picks between them: what a cloud hands to the
Kubernetes side, its `ClusterConnection`, is defined there (`gpu_platform.kubernetes.provider`).
"""

from collections.abc import Collection, Sequence
from typing import Any, Protocol

import pulumi

from gpu_platform.cluster_facts import ClusterFacts, EksClusterFacts, GkeClusterFacts
from gpu_platform.config import Cloud, ConfigError, ConfigProblem, StackConfig, key_path
from gpu_platform.kubernetes.provider import ClusterConnection
from gpu_platform.node_identity import GpuShape, ResolvedPool, resolve_pool, sharer_for


class GpuCloud(Protocol):
    def resolve_pools(self) -> list[ResolvedPool]:
        """Each pool with its GPUs; raises ConfigError for a pool that cannot work."""
        ...

    def connect(self, opts: pulumi.ResourceOptions) -> ClusterConnection:
        """A Kubernetes provider for the cluster, created with `opts` (its parent); with
        `cluster.create`, the cluster first, under `opts` too, and a provider that depends on
        what Kubernetes objects need of it (the cluster, its access entries, system nodes and
        add-ons)."""
        ...

    def create_pools(
        self,
        pools: Sequence[ResolvedPool],
        connection: ClusterConnection,
        opts: pulumi.ResourceOptions,
        held_back: Collection[str] = (),
    ) -> list[pulumi.Resource]:
        """The cloud's GPU node pools but those `held_back` (those that validate their nodes
        or have a canary), and what serves every pool (an autoscaler, a driver installer),
        created with `opts`; the Kubernetes side waits for them."""
        ...

    def create_held_back_pool(
        self,
        pool: ResolvedPool,
        connection: ClusterConnection,
        opts: pulumi.ResourceOptions,
        after: Sequence[pulumi.Resource],
    ) -> pulumi.Resource:
        """A pool `create_pools` held back, its nodes created and updated only after `after`
        (its node validator, and a led pool's canary gate)."""
        ...

    def kubernetes_version(self) -> str:
        """The cluster's Kubernetes version, its minor at least (`1.35`; GKE's
        `1.35.6-gke.1163000`): the one it is created at, or the running control plane's."""
        ...

    def pool_nodes(self, pool: str) -> pulumi.Resource:
        """What `create_pools` or `create_held_back_pool` created for the named pool's nodes:
        its node group (EKS), NodePool and EC2NodeClass (Karpenter) or node pool (GKE)."""
        ...

    def efa_devices(self, pool: str) -> int:
        """The EFA devices each node of the named pool has: its instance type's EFA interfaces
        on an EKS pool with `aws.efa`, else 0."""
        ...

    def gpus_by_instance_type(self, pool: str) -> dict[str, int]:
        """The GPUs of each instance type the named pool's nodes may be (EKS: a Karpenter pool
        has several sizes); empty where the pool has one machine type (GKE), whose GPUs are the
        pool's."""
        ...

    def create_device_plugins(
        self,
        pools: Sequence[ResolvedPool],
        namespace: pulumi.Input[str],
        opts: pulumi.ResourceOptions,
    ) -> list[pulumi.Resource]:
        """The device plugins the pools' hardware needs beside the GPUs' (EKS: EFA), in
        `namespace`, the GPU Operator's, which Pod Security leaves privileged."""
        ...

    def stack_outputs(self) -> dict[str, Any]:
        """The stack outputs only this cloud has, from what `resolve_pools` looked up."""
        ...


def cloud_for(config: StackConfig, facts: ClusterFacts | None = None) -> GpuCloud:
    """The stack's cloud, on the cluster the settings name or, given its `facts`, on that one.
    Only its own components, and so its own provider SDK, are imported: each SDK takes a good
    part of a second to import, and a stack runs on one cloud."""
    if config.cloud is Cloud.AWS:
        from gpu_platform.eks.cloud import EksCloud

        assert facts is None or isinstance(facts, EksClusterFacts)  # GpuPlatformArgs checks it
        return EksCloud(config, facts)
    from gpu_platform.gke.cloud import GkeCloud

    assert facts is None or isinstance(facts, GkeClusterFacts)
    return GkeCloud(config, facts)


def pools_as_declared(config: StackConfig) -> list[ResolvedPool]:
    """Pools whose accelerator and GPU count the stack file states, as GKE requires."""
    problems: list[ConfigProblem] = []
    resolved: list[ResolvedPool] = []
    for i, pool in enumerate(config.pools):
        for field, alias in (("accelerator", "accelerator"), ("gpus_per_node", "gpusPerNode")):
            if getattr(pool, field) is None:
                problems.append(
                    ConfigProblem(key_path("pools", i, alias), None, f"a value on {config.cloud}")
                )
        if pool.accelerator is not None and pool.gpus_per_node is not None:
            shape = GpuShape(pool.accelerator, pool.gpus_per_node)
            sharer = sharer_for(config.platform, pool.sharing)
            resolved.append(resolve_pool(pool, i, shape, sharer))
    if problems:
        raise ConfigError(problems)
    return resolved
