"""Whether the cluster a stack of `provisioner: eks-auto-mode` attaches to runs EKS Auto Mode's
compute with a node role: DescribeCluster's `computeConfig` (botocore's eks model,
`ComputeConfigResponse`: `enabled`, `nodePools`, `nodeRoleArn`). Without it nothing would launch
the pools' NodePools; without the role their NodeClasses name none (EKS user guide,
automode/create-node-pool.adoc, "Cluster without built-in node pools")."""

from collections.abc import Mapping
from typing import Any

from gpu_platform.config import StackConfig, key_path
from gpu_platform.preflight.findings import Finding


def auto_mode_finding(config: StackConfig, subject: str, cluster: Mapping[str, Any]) -> Finding:
    compute = cluster.get("computeConfig") or {}
    if not compute.get("enabled"):
        return Finding(
            "blocking",
            subject,
            f"EKS Auto Mode's compute is off on the cluster, and {key_path('provisioner')} is"
            f" {config.provisioner}: nothing would launch the pools' NodePools.",
            "Turn Auto Mode on for the cluster (aws eks update-cluster-config --compute-config"
            " enabled=true with its storage and load balancing), or choose another provisioner.",
        )
    role = compute.get("nodeRoleArn")
    if not role:
        return Finding(
            "blocking",
            subject,
            "EKS Auto Mode's compute is on without a node role (computeConfig.nodeRoleArn), which"
            " the pools' NodeClasses run their nodes as.",
            "Give the cluster's Auto Mode a node role (with its built-in node pools, or"
            " update-cluster-config --compute-config nodeRoleArn=...).",
        )
    return Finding(
        "ok", subject, f"EKS Auto Mode's compute is on, its nodes running as {role}.", "Nothing."
    )
