"""`NodeMonitoringAgent`: the EKS node monitoring agent add-on, so node repair sees GPU faults.

A managed node group's node repair acts on the kubelet's `Ready` condition by itself; the agent
adds `AcceleratedHardwareReady`, which it sets to False on the XIDs, double-bit ECC and NVLink
errors that need a reset or a new node (docs.aws.amazon.com/eks/latest/userguide/node-health.html).
It reads them through its own DCGM host engine, the `dcgm-server` DaemonSet, which tolerates no
taint as shipped (aws/eks-node-monitoring-agent v1.7.0 chart values, `dcgmAgent.tolerations:
[]`), while the agent's own DaemonSet tolerates every taint (`nodeAgent.tolerations: [operator:
Exists]`). On a GPU node the DCGM server does not reach, no GPU fault reaches the condition, and
the agent reports `DCGMError` instead, which sets the condition to False by itself
(docs/node-health-issues.adoc: "Connection to the DCGM host process was lost or could not be
established"): node repair would act on a healthy node. The DCGM server therefore tolerates
every taint, as the agent does, wherever its chart's node affinity lets it run: amd64 nodes of
the NVIDIA instance types its values list, the nodes where the agent needs it. A pool's own
taints, its MIG startup taint and any taint another team's GPU nodes carry are all covered.
The add-on's configuration schema, which EKS checks `configurationValues` against, has the key
(gpu_platform/eks/addon_schemas/).

On arm64 nodes (g5g) the agent turns its NVIDIA monitoring off ("NVIDIA-based monitoring is
disabled for the arm64 architecture", monitors/nvidia/monitor.go at v1.7.0), and the DCGM
server's affinity requires amd64: such pools are repaired on the kubelet's and the other
monitors' conditions, and on NCCL segfaults in the kernel log, but on no XID or other GPU fault
(docs/gpu-health.md).

AWS does not support pointing the agent at an existing DCGM, such as the GPU Operator's exporter:
both run on each GPU node. The add-on is therefore opt-in, at a version the stack pins
(`gpu-platform:cluster.nodeMonitoringAgentVersion`); docs/gpu-health.md says what to watch.
"""

import json
from dataclasses import dataclass

import pulumi
from pulumi_aws import eks

from gpu_platform.eks.cluster import EksCluster

ADDON_NAME = "eks-node-monitoring-agent"


@dataclass
class NodeMonitoringAgentArgs:
    cluster: EksCluster
    version: str
    """The add-on version, such as v1.7.0-eksbuild.1."""


class NodeMonitoringAgent(pulumi.ComponentResource):
    def __init__(
        self, name: str, args: NodeMonitoringAgentArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__("gpu-platform:eks:NodeMonitoringAgent", name, None, opts)
        self.addon = eks.Addon(
            name,
            cluster_name=args.cluster.name_input,
            addon_name=ADDON_NAME,
            addon_version=args.version,
            configuration_values=json.dumps(node_monitoring_agent_configuration()),
            region=args.cluster.region,
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.register_outputs({"addon": self.addon.id})


def node_monitoring_agent_configuration() -> dict[str, object]:
    """The add-on's configuration: its DCGM server runs on every GPU node the agent runs on,
    whatever the node's taints."""
    return {"dcgmAgent": {"tolerations": [{"operator": "Exists"}]}}
