"""What a plan warns of for EKS Auto Mode pools without a drift window (`aws.driftWindow`): their
NodePool blocks drift at all times, so Auto Mode's AMI releases reach their nodes only as the
nodes expire or go empty."""

from gpu_platform.eks.auto_mode.names import NODE_CLASS_GROUP
from gpu_platform.offline.program import Plan

NODE_POOL = "kubernetes:karpenter.sh/v1:NodePool"

_CLOSED = {"nodes": "0", "reasons": ["Drifted"]}


def closed_drift_windows(plan: Plan) -> list[str]:
    """A warning for each Auto Mode NodePool whose drift no window opens."""
    warnings = []
    for pool in plan.of_type(NODE_POOL):
        spec = pool.inputs.get("spec")
        if not isinstance(spec, dict):
            continue  # secret labels hide the spec, and the pool with it
        group = spec["template"]["spec"]["nodeClassRef"]["group"]
        if group == NODE_CLASS_GROUP and _CLOSED in spec["disruption"]["budgets"]:
            name = pool.inputs["metadata"]["name"]
            warnings.append(
                f"pool {name} has no drift window (aws.driftWindow): its nodes never take Auto"
                " Mode's AMI releases (about weekly) by drift, only as they expire (21 days at"
                ' most) or go empty. Set pools[].aws.driftWindow, e.g. {schedule: "0 2 * * 6",'
                ' duration: "4h"}, to have them replaced in that window instead'
                " (docs/eks-auto-mode.md, Node updates)."
            )
    return warnings
