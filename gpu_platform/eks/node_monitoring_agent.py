"""`NodeMonitoringAgent`: the EKS node monitoring agent add-on, so node repair sees GPU faults.

A managed node group's node repair acts on the kubelet's `Ready` condition by itself; the agent
adds `AcceleratedHardwareReady`, which it sets to False on the XIDs, double-bit ECC and NVLink
errors that need a reset or a new node (docs.aws.amazon.com/eks/latest/userguide/node-health.html).
It reads them through its own DCGM host engine, the `dcgm-server` DaemonSet, which tolerates no
taint as shipped (aws/eks-node-monitoring-agent chart values, `dcgmAgent.tolerations: []`), so
on tainted GPU nodes it would not run and no GPU fault would reach the condition. The agent's
own DaemonSet tolerates every taint already. The add-on's configuration schema, which EKS checks
`configurationValues` against, has the key (gpu_platform/eks/addon_schemas/).

AWS does not support pointing the agent at an existing DCGM, such as the GPU Operator's exporter:
both run on each GPU node. The add-on is therefore opt-in, at a version the stack pins
(`gpu-platform:cluster.nodeMonitoringAgentVersion`); docs/gpu-health.md says what to watch.
"""

import json
from dataclasses import dataclass

import pulumi
from pulumi_aws import eks

from gpu_platform.eks.cluster import EksCluster
from gpu_platform.node_identity import GPU_TAINT

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
            cluster_name=args.cluster.name,
            addon_name=ADDON_NAME,
            addon_version=args.version,
            configuration_values=json.dumps(node_monitoring_agent_configuration()),
            region=args.cluster.region,
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.register_outputs({"addon": self.addon.id})


def node_monitoring_agent_configuration() -> dict[str, object]:
    """The add-on's configuration: its DCGM server runs on the tainted GPU nodes."""
    toleration = {"key": GPU_TAINT.key, "operator": "Exists", "effect": GPU_TAINT.effect}
    return {"dcgmAgent": {"tolerations": [toleration]}}
