"""EKS node repair of a GPU node group: when it acts, how far, and on which GPU faults.

EKS repairs a node whose `AcceleratedHardwareReady` condition the node monitoring agent set to
False after 10 minutes, by `Reboot` for most XIDs (EKS user guide, node-health-nma, "NVIDIA XID
error codes": 13, 31, 48, 63, 64, 94 and 95 reboot; 74, 79, 119, 120, 121 and 140 replace).
A reboot ends every pod on the node. NVIDIA's XID catalog answers many of those codes with
`RESTART_APP` ("The application should be restarted. RESET_GPU or RESTART_BM is not deemed
necessary") or `IGNORE`: an illegal memory access in one tenant's kernel (XID 13, 31) or a
contained ECC error (XID 94) would reboot a shared node and kill its co-tenants' work. Each such
code gets a `NoAction` override, the only repair action short of Reboot the API has (EKS API,
RepairAction: Replace, Reboot, NoAction); the workload's own controller restarts the failed
pod. Which codes those are comes from the platform's classes of NVIDIA's catalog
(gpu_platform/kubernetes/alerts/xid-classes.json), which the GPU alerts follow too, so that
repair and alerts never disagree about a code.

The agent raises a node condition only for the codes of its own list and an event for the
others (aws/eks-node-monitoring-agent, monitors/nvidia/dcgm/dcgm_policies.go
`WellKnownXidCodes`: 13, 31 and 94 up to v1.6.3; 63 in every release): the overrides cover
every application or no-action code whatever the agent's version lists. With the pinned
release, 63 is the only code they change. A contained ECC error (XID 94) still repairs the
node: the agent's DCGM double-bit policy fires on any volatile uncorrectable error and sets the
condition with reason `NvidiaDoubleBitError`, which no override names, as the GPU alerts ask
for a reset after any double-bit error (docs/gpu-health.md).
"""

from typing import TYPE_CHECKING, Any

from gpu_platform.config import GpuPoolSpec
from gpu_platform.kubernetes.alerts import xid_classes

if TYPE_CHECKING:
    from pulumi_aws import eks

# The condition the node monitoring agent sets for GPU faults, and the reason it gives an XID
# that sets it (pkg/reasons/reasons.go, `NvidiaXID%dError`).
ACCELERATED_HARDWARE = "AcceleratedHardwareReady"
XID_REASON = "NvidiaXID{code}Error"
NO_ACTION = "NoAction"
# An override must name a wait of at least a minute (botocore's EKS model, NonZeroInteger);
# with NoAction it decides nothing. EKS's own wait for this condition (node-repair).
_REPAIR_WAIT_MINUTES = 10


def no_repair_xids() -> list[int]:
    """The XIDs whose catalog action leaves the node alone: restart the application, or none."""
    classes = xid_classes()
    return sorted([*classes["application"], *classes["ignore"]])


def node_repair_request(spec: GpuPoolSpec) -> dict[str, Any]:
    """The pool's node repair configuration as EKS's API spells it (botocore's EKS model,
    NodeRepairConfig): what the program sends through the provider (`node_repair_config_for`)
    and what `aws eks update-nodegroup-config --node-repair-config` takes. Repair one node at a
    time (many nodes failing at once point at a cause, a driver or the network, that no
    replacement fixes), stopping above the pool's threshold if it has one."""
    if not spec.aws.node_repair:
        return {"enabled": False}
    request: dict[str, Any] = {"enabled": True, "maxParallelNodesRepairedCount": 1}
    if spec.aws.node_repair_max_unhealthy_nodes is not None:
        request["maxUnhealthyNodeThresholdCount"] = spec.aws.node_repair_max_unhealthy_nodes
    request["nodeRepairConfigOverrides"] = [
        {
            "nodeMonitoringCondition": ACCELERATED_HARDWARE,
            "nodeUnhealthyReason": XID_REASON.format(code=code),
            "minRepairWaitTimeMins": _REPAIR_WAIT_MINUTES,
            "repairAction": NO_ACTION,
        }
        for code in no_repair_xids()
    ]
    return request


def node_repair_config_for(spec: GpuPoolSpec) -> "eks.NodeGroupNodeRepairConfigArgs":
    """`node_repair_request` as the provider's arguments."""
    # Here rather than at the top: preflight reads `node_repair_request` and loads no Pulumi SDK.
    from pulumi_aws import eks

    request = node_repair_request(spec)
    overrides = request.get("nodeRepairConfigOverrides")
    return eks.NodeGroupNodeRepairConfigArgs(
        enabled=request["enabled"],
        max_parallel_nodes_repaired_count=request.get("maxParallelNodesRepairedCount"),
        max_unhealthy_node_threshold_count=request.get("maxUnhealthyNodeThresholdCount"),
        node_repair_config_overrides=None
        if overrides is None
        else [
            eks.NodeGroupNodeRepairConfigNodeRepairConfigOverrideArgs(
                node_monitoring_condition=o["nodeMonitoringCondition"],
                node_unhealthy_reason=o["nodeUnhealthyReason"],
                min_repair_wait_time_mins=o["minRepairWaitTimeMins"],
                repair_action=o["repairAction"],
            )
            for o in overrides
        ],
    )
