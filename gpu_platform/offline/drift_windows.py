"""What a plan warns of for EKS Auto Mode pools without a drift window (`aws.driftWindow`): their
NodePool blocks drift at all times, so Auto Mode's AMI releases reach their nodes only as the
nodes expire or go empty."""

from gpu_platform.offline.program import Plan

NODE_POOL = "kubernetes:karpenter.sh/v1:NodePool"

_CLOSED = {"nodes": "0", "reasons": ["Drifted"]}


def closed_drift_windows(plan: Plan) -> list[str]:
    """A warning for each Auto Mode NodePool whose drift no window opens."""
    pools = plan.of_type(NODE_POOL)
    if not pools:
        return []
    # Imported here: a GKE plan loads nothing of the EKS side (tests/gpu_platform/cli/
    # test_imports.py).
    from gpu_platform.eks.auto_mode.names import NODE_CLASS_GROUP

    warnings = []
    for pool in pools:
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
