"""`EfaDevicePlugin`: AWS's EFA device plugin, on the nodes of the pools that ask for EFA.

The plugin advertises a node's Elastic Fabric Adapters as `vpc.amazonaws.com/efa`, which NCCL
jobs ask for beside their GPUs. The chart (aws/eks-charts `stable/aws-efa-k8s-device-plugin` at
v0.5.30) tolerates only `CriticalAddonsOnly` (templates/daemonset.yaml, then `tolerations`) and
runs on every instance type with EFA; here it runs only where a pool turned EFA on
(`gpu-platform.io/efa`), and tolerates every taint of those pools: the GPU taint, and each of
their own exactly (`gpu_node_tolerations`), as a node it misses never advertises its EFAs. Its
pod mounts the host's `/dev/infiniband` and the kubelet's device-plugin directory (hostPath,
templates/daemonset.yaml), which only Pod Security `privileged` admits: it runs in the GPU
Operator's namespace, privileged for the same reason, and so out of kube-system.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field

import pulumi
from pulumi_kubernetes import helm

from gpu_platform.eks.node_labels import EFA_LABEL
from gpu_platform.kubernetes import helm_release
from gpu_platform.kubernetes.operator_values import gpu_node_tolerations
from gpu_platform.lock.images import pinned_version
from gpu_platform.node_identity import ResolvedPool
from gpu_platform.platform_images import EFA_DEVICE_PLUGIN_IMAGE
from gpu_platform.versions import EFA_DEVICE_PLUGIN_CHART


@dataclass
class EfaDevicePluginArgs:
    namespace: pulumi.Input[str]
    """The GPU Operator's, taken from its Namespace so that the release waits for it."""
    nodes: int = 0
    """The most nodes the EFA pools can have together (`helm_release.most_nodes`), which the
    release's wait grows with."""
    pools: Sequence[ResolvedPool] = field(default_factory=list)
    """The EFA pools, whose nodes' taints the plugin tolerates."""


class EfaDevicePlugin(pulumi.ComponentResource):
    """The EFA device plugin release, pinned."""

    def __init__(
        self, name: str, args: EfaDevicePluginArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__("gpu-platform:eks:EfaDevicePlugin", name, None, opts)
        self.release = helm.v3.Release(
            name,
            name="aws-efa-k8s-device-plugin",
            chart=EFA_DEVICE_PLUGIN_CHART.name,
            version=EFA_DEVICE_PLUGIN_CHART.version,
            repository_opts=helm.v3.RepositoryOptsArgs(repo=EFA_DEVICE_PLUGIN_CHART.repository),
            namespace=args.namespace,
            values=efa_device_plugin_values(args.pools),
            **helm_release.Rollout.with_daemonset(
                helm_release.EFA_DEVICE_PLUGIN_BASE_SECONDS, args.nodes
            ).release_args(),
            # A release in another namespace is a new one (pulumi-kubernetes replaces it on a
            # `namespace` change, helm_release.go), by default started before the old one goes:
            # the old plugin goes first, so that a node's kubelet never has two plugins
            # registering `vpc.amazonaws.com/efa` at once.
            opts=pulumi.ResourceOptions(parent=self, delete_before_replace=True),
        )
        self.register_outputs({"release": self.release.name})


def efa_device_plugin_values(pools: Sequence[ResolvedPool]) -> dict[str, object]:
    return {
        # The chart renders `repository:tag` (templates/daemonset.yaml at chart v0.5.30): the
        # digest the lock holds follows the tag. Set whole, so the policy pack sees it.
        "image": {
            "repository": EFA_DEVICE_PLUGIN_IMAGE.repository,
            "tag": pinned_version(EFA_DEVICE_PLUGIN_IMAGE),
        },
        "tolerations": gpu_node_tolerations(pools),
        "nodeSelector": {EFA_LABEL: "true"},
        # The chart renders `updateStrategy` whole (templates/daemonset.yaml: `toYaml`); its
        # default has no `rollingUpdate`, so Kubernetes' maxUnavailable of 1 would apply.
        "updateStrategy": helm_release.daemonset_update_strategy(),
    }
