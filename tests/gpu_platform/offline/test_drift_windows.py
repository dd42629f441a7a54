"""The plan's warning for EKS Auto Mode pools without a drift window, whose nodes are never
replaced for drift: not for Auto Mode's AMI releases, the stack's own changes or a Kubernetes
version upgrade."""

from gpu_platform.offline.drift_windows import closed_drift_windows
from tests.shared_plans import shared_plan


def test_an_auto_mode_pool_without_a_drift_window_is_warned_of_by_key() -> None:
    # Pulumi.auto-dev.yaml: l40s sets aws.driftWindow, l4-reserved does not.
    assert closed_drift_windows(shared_plan("auto-dev")) == [
        "pool l4-reserved has no drift window (aws.driftWindow): no drifted node of it is"
        " replaced, so Auto Mode's AMI releases (about weekly), the stack's own changes to the"
        " pool's NodePool or NodeClass (its labels, taints, requirements or NodeClass fields)"
        " and the new Kubernetes version after a control-plane upgrade all reach its nodes only"
        " as they expire (21 days at most) or go empty. Set pools[].aws.driftWindow, e.g."
        ' {schedule: "0 2 * * 6", duration: "4h"}, to have them replaced in that window'
        " instead (docs/eks-auto-mode.md, Node updates)."
    ]


def test_karpenter_pools_are_not_warned_of() -> None:
    # Pulumi.karpenter-dev.yaml's pools are Karpenter's: their nodes drift only on a stack change.
    assert closed_drift_windows(shared_plan("karpenter-dev")) == []
