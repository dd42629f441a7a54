"""What a plan warns of for EKS Auto Mode pools without a drift window (`aws.driftWindow`): their
NodePool blocks drift at all times, so whatever drifts their nodes (Auto Mode's AMI releases, the
stack's own changes to the pool's NodePool or NodeClass) reaches them only as the nodes expire,
which no disruption budget paces, or, where the pool consolidates, go empty."""

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
            # Karpenter deletes an expired NodeClaim whatever the budgets say, which bind only
            # its disruption methods (kubernetes-sigs/karpenter v1.14.1:pkg/controllers/
            # nodeclaim/expiration/controller.go lines 70-82): without a window, expiry is how
            # every node leaves, nodes started together at once. A pool that never consolidates
            # (a capacity-block pool, a reserved one without on-demand fallback) loses none empty.
            empty = spec["disruption"].get("consolidateAfter") != "Never"
            warnings.append(
                f"pool {name} has no drift window (aws.driftWindow): no drifted node of it is"
                " replaced, so its nodes leave only as they expire, 21 days after they start,"
                " paced by no disruption budget (nodes started together leave together)"
                + (", or once empty" if empty else "")
                + '. Set pools[].aws.driftWindow, e.g. {schedule: "0 2 * * 6", duration: "4h"},'
                " to have drifted nodes replaced in that window instead (docs/eks-auto-mode.md,"
                " Node updates)."
            )
    return warnings
