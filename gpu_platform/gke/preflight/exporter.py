"""What `gpu-platform preflight` finds of the DCGM exporters a GKE stack on Container-Optimized OS
is about to change: whether the GKE-shared pools GKE runs already carry the labels of the
platform's exporter before a pool of whole GPUs makes the operator's exporter match by UUID.

While every pool of a COS stack is GKE-shared, the GPU Operator's exporter matches pods by device
name (gpu_platform/kubernetes/operator_values.py, `exporter_gpu_id_type`), and it still runs on
GKE-shared nodes that joined before their node pool took `nvidia.com/gpu.deploy.dcgm-exporter:
"false"` and `gpu-platform.io/gpu-sharer: gke`: the operator sets the deploy label "true" on a
GPU node without it (gpu-operator v26.7.0 controllers/state_manager.go, `addGPUStateLabels`).
The stack's first pool of whole GPUs switches that exporter to UUIDs, which GKE's device plugin
does not use, so the GPU series of those nodes lose their pod and namespace until their pool is
updated, which for a pool led by a canary waits for the canary's gate.
"""

from collections.abc import Mapping
from typing import Any

from gpu_platform.config import StackConfig
from gpu_platform.gke.preflight.upgrades import running_node_pools
from gpu_platform.node_identity import GKE_EXPORTER_NODES, GpuSharer, sharer_for
from gpu_platform.preflight.findings import Finding


def exporter_label_findings(config: StackConfig, cluster: Mapping[str, Any]) -> list[Finding]:
    """A warning naming the GKE-shared pools GKE runs without the platform's exporter labels,
    where the stack has a pool of whole GPUs on Container-Optimized OS."""
    sharers = {pool.name: sharer_for(config.platform, pool.sharing) for pool in config.pools}
    whole = [name for name, sharer in sharers.items() if sharer is GpuSharer.OPERATOR]
    if not whole or GpuSharer.GKE not in sharers.values():
        return []
    running = running_node_pools(cluster)
    unlabelled = [
        name
        for name, live in running.items()
        if sharers.get(name) is GpuSharer.GKE
        and not GKE_EXPORTER_NODES.items() <= live.get("config", {}).get("labels", {}).items()
    ]
    if not unlabelled:
        return []
    labels = ", ".join(f"{key}={value}" for key, value in GKE_EXPORTER_NODES.items())
    new = [name for name in whole if name not in running]
    update = f"{', '.join(unlabelled)} (a pool a canary leads once the canary's gate passes)"
    action = (
        f"Leave {', '.join(new)} out of the stack until pulumi up has updated {update}, then add"
        " them"
        if new
        else f"Run pulumi up to update {update}"
    )
    return [
        Finding(
            "warning",
            f"cluster {config.cluster.name}",
            f"The node pools of GKE-shared pools {', '.join(unlabelled)} lack {labels}: their"
            " nodes run the GPU Operator's DCGM exporter, which matches pods by device name only"
            f" while every pool is GKE-shared. With the pools of whole GPUs {', '.join(whole)} it"
            " matches by UUID, and those nodes' GPU series lose their pod and namespace (the"
            " idle-GPU alert and the reaper do not see those pods) until their node pools are"
            " updated, which for a pool a canary leads waits for the canary's gate.",
            f"{action} (docs/gpu-sharing.md).",
        )
    ]
