"""Preflight on an EKS stack: node repair on an arm64 GPU pool sees no GPU fault.

EKS repairs a node group's GPU faults through the node monitoring agent's
`AcceleratedHardwareReady` condition (gpu_platform/eks/node_monitoring_agent.py). On arm64 the
agent turns its NVIDIA monitoring off ("NVIDIA-based monitoring is disabled for the arm64
architecture", aws/eks-node-monitoring-agent v1.7.0 monitors/nvidia/monitor.go), and the add-on's
DCGM server runs only on amd64 nodes (its chart's `dcgmAgent.affinity`): a `g5g` pool with
`aws.nodeRepair` is repaired on the kubelet's and the agent's other conditions, never on an XID.
That is a warning, so that nobody counts on a repair that cannot happen.
"""

from collections.abc import Mapping
from typing import Any

from gpu_platform.config import StackConfig, key_path
from gpu_platform.eks.instance_types import pool_instance_type_names
from gpu_platform.preflight.findings import Finding


def arm64_repair_findings(
    config: StackConfig, described: Mapping[str, Mapping[str, Any]]
) -> list[Finding]:
    """A warning for each node-group pool that repairs its nodes on arm64 instance types
    (`described`, from DescribeInstanceTypes). Karpenter pools have no node groups to repair."""
    if config.provisioner == "karpenter":
        return []
    findings = []
    for i, pool in enumerate(config.pools):
        arm64 = [n for n in pool_instance_type_names(pool) if _arm64(described.get(n, {}))]
        if pool.aws.node_repair and arm64:
            findings.append(
                Finding(
                    "warning",
                    f"pool {pool.name}",
                    f"{', '.join(arm64)} run arm64, where the EKS node monitoring agent watches"
                    " no GPU: node repair acts on the kubelet's and the agent's other"
                    " conditions, never on an XID, ECC or NVLink error.",
                    "Repair this pool's GPU faults by hand when the GPU alerts name them"
                    f" (docs/gpu-health.md); {key_path('pools', i, 'aws', 'nodeRepair')} still"
                    " repairs nodes whose kubelet fails.",
                )
            )
    return findings


def _arm64(described: Mapping[str, Any]) -> bool:
    return "arm64" in described.get("ProcessorInfo", {}).get("SupportedArchitectures", [])
