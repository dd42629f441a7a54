"""The plan's warning for EKS Auto Mode pools without a drift window, whose nodes are never
replaced for drift: they leave only by expiry, unpaced, or, where the pool consolidates, empty."""

from gpu_platform.offline.drift_windows import closed_drift_windows
from gpu_platform.stack_files import stack_config
from tests.repository import PROJECT
from tests.shared_plans import shared_plan


def test_an_auto_mode_pool_without_a_drift_window_is_warned_of_by_key() -> None:
    # Pulumi.auto-dev.yaml: l40s sets aws.driftWindow, l4-reserved does not; l4-reserved falls
    # back to on-demand, so it consolidates its empty nodes.
    assert closed_drift_windows(shared_plan("auto-dev")) == [
        "pool l4-reserved has no drift window (aws.driftWindow): no drifted node of it is"
        " replaced, so its nodes leave only as they expire, 21 days after they start, paced by"
        " no disruption budget (nodes started together leave together), or once empty. Set"
        ' pools[].aws.driftWindow, e.g. {schedule: "0 2 * * 6", duration: "4h"}, to have'
        " drifted nodes replaced in that window instead (docs/eks-auto-mode.md, Node updates)."
    ]


def test_a_pool_that_never_consolidates_is_not_said_to_lose_nodes_empty() -> None:
    # A reserved pool without on-demand fallback keeps its empty nodes (consolidateAfter: Never).
    config = stack_config("auto-dev", PROJECT)
    config["gpu-platform:pools"][0]["aws"]["onDemandFallback"] = False

    (warning,) = closed_drift_windows(shared_plan("auto-dev", config))

    assert "leave together). Set" in warning
    assert "empty" not in warning


def test_karpenter_pools_are_not_warned_of() -> None:
    # Pulumi.karpenter-dev.yaml's pools are Karpenter's: their nodes drift only on a stack change.
    assert closed_drift_windows(shared_plan("karpenter-dev")) == []
