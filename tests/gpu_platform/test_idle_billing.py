"""How long each pool's empty GPU node bills after its last pod (`gpu_platform.idle_billing`), as
the stack exports it (`idleBilling`) and the plan shows and warns of it."""

from collections.abc import Callable
from typing import Any

import pytest

from gpu_platform.idle_billing import idle_warnings, minutes_text
from gpu_platform.offline.program import Plan
from tests.repository import STACKS
from tests.shared_plans import shared_plan

Config = dict[str, Any]
PlanFor = Callable[[Config], Plan]


def seconds_by_term(plan: Plan, pool: str) -> list[int | None]:
    return [delay["seconds"] for delay in plan.outputs["idleBilling"][pool]["afterLastPod"]]


def deferred_seconds(plan: Plan, pool: str) -> list[int | None]:
    return [delay["seconds"] for delay in plan.outputs["idleBilling"][pool]["deferredBy"]]


def test_an_autoscaler_pools_empty_node_bills_nine_minutes_twenty_five(dev_plan: Plan) -> None:
    figure = dev_plan.outputs["idleBilling"]["t4-shared"]

    assert seconds_by_term(dev_plan, "t4-shared") == [
        # `--scan-interval`, which the platform leaves at its default: the loop that first
        # finds the node unneeded (DefaultScanInterval, cluster-autoscaler/config/const.go,
        # kubernetes/autoscaler cluster-autoscaler-1.33.6 to 1.36.1).
        10,
        # `--scale-down-unneeded-time` per node group, from the group's `autoscaling-options/
        # scaledownunneededtime` tag (GetOptions, cloudprovider/aws/aws_manager.go), at
        # `autoscaler.gpuNodeIdleMinutes`' default of 9.
        540,
        # The loop after that on which it is removed: one more scan interval at most.
        10,
        # `--node-delete-delay-after-taint`, 5s by default (config/flags/flags.go): an empty
        # node is tainted, then deleted that long after (startDeletion, deleteNodesAsync,
        # core/scaledown/actuation/actuator.go).
        5,
    ]
    assert figure["idleSeconds"] == 565
    assert figure["provisioner"] == "cluster-autoscaler"
    assert figure["setting"] == "autoscaler.gpuNodeIdleMinutes"


def test_an_autoscaler_pools_removal_waits_out_the_whole_clusters_cooldowns(
    dev_plan: Plan,
) -> None:
    # isScaleDownInCooldown (core/static_autoscaler.go:721 at cluster-autoscaler-1.33.6, :931 at
    # 1.36.1) holds every removal until `--scale-down-delay-after-add` after the cluster's last
    # scale-up of any node group, and `--scale-down-delay-after-failure` after its last failed
    # scale-down: the platform's 9 minutes (its unneeded time, under upstream's 10), and
    # upstream's 3 (DefaultScaleDownDelayAfterFailure, config/const.go). They run from the
    # cluster's events, so they are shown apart from the figure, each as a time after its event.
    assert deferred_seconds(dev_plan, "t4-shared") == [540, 180]
    terms = [d["term"] for d in dev_plan.outputs["idleBilling"]["t4-shared"]["deferredBy"]]
    assert terms == [
        "--scale-down-delay-after-add: until 9m after the cluster's last scale-up, of any node"
        " group",
        "--scale-down-delay-after-failure: until 3m after the cluster's last failed scale-down",
    ]


def test_a_new_node_bills_its_validation_before_its_first_pod_not_after_its_last(
    dev_plan: Plan,
) -> None:
    figure = dev_plan.outputs["idleBilling"]["t4-shared"]

    # The dev stack's g4dn.xlarge (one T4, so no NCCL test) validated at level 1: the pod's
    # start (300s), `nvidia-smi -q -x` and `nvidia-smi nvlink` (60s each), the pull of DCGM's
    # image (300s) and `dcgmi diag -r 1` (300s), each at its allowance
    # (gpu_platform/kubernetes/node_validation/validate.py and duration.py).
    assert [d["seconds"] for d in figure["beforeFirstPod"]] == [1020]
    assert figure["idleSeconds"] == 565


def test_a_karpenter_pools_empty_node_bills_nine_minutes_twenty_five() -> None:
    plan = shared_plan("karpenter-dev")

    assert seconds_by_term(plan, "t4-spot") == [
        # `consolidateAfter` from the node's last pod event (Consolidation.Reconcile,
        # pkg/controllers/nodeclaim/disruption/consolidation.go, kubernetes-sigs/karpenter
        # v1.14.1), at `karpenter.consolidateAfterMinutes`' default of 9.
        540,
        # The disruption controller's `pollingPeriod` (pkg/controllers/disruption/controller.go).
        10,
        # `commandValidationDelay`, which emptiness waits out before it deletes
        # (pkg/controllers/disruption/consolidation.go, emptiness.go).
        15,
        # Its budget for empty nodes, 100% by default: no node waits for another loop.
        0,
    ]
    assert plan.outputs["idleBilling"]["t4-spot"]["idleSeconds"] == 565
    # Karpenter's consolidation waits on no cluster-wide cooldown.
    assert deferred_seconds(plan, "t4-spot") == []
    # A Capacity Block is never consolidated (`consolidateAfter: Never`): paid for either way.
    assert plan.outputs["idleBilling"]["h100-block"]["idleSeconds"] is None


def test_an_auto_mode_pools_karpenter_timings_are_labelled_assumed() -> None:
    # AWS documents the NodePool settings Auto Mode honours (consolidateAfter, consolidationPolicy,
    # budgets: awsdocs/amazon-eks-user-guide latest/ug/automode/create-node-pool.adoc,
    # "Disruption") and that it consolidates "periodically" (auto-cost-control.adoc), but not
    # which Karpenter it runs: its loop and validation delay can only be assumed.
    terms = shared_plan("auto-dev").outputs["idleBilling"]["l40s"]["afterLastPod"]
    assumed = (
        " (assumed equal to Karpenter v1.14.1's: AWS publishes no Karpenter version for EKS"
        " Auto Mode)"
    )

    assert [term["term"] for term in terms] == [
        "consolidateAfter after the last pod event (karpenter.consolidateAfterMinutes),"
        " consolidationPolicy WhenEmpty",
        "the disruption loop's polling period" + assumed,
        "the emptiness command's validation delay" + assumed,
        "budget for empty nodes 100% (pools[1].aws.emptyNodesBudgetPercent): every empty node"
        " at once",
    ]
    assert [term["seconds"] for term in terms] == [540, 10, 15, 0]
    assert terms[0]["source"].startswith(
        "awsdocs/amazon-eks-user-guide latest/ug/automode/create-node-pool.adoc, Disruption"
    )


def test_a_gke_pools_figure_is_gkes_published_balanced_timing_and_is_warned_of() -> None:
    figure = shared_plan("gke-dev").outputs["idleBilling"]["l4-shared"]

    # cloud.google.com/kubernetes-engine/docs/troubleshooting/cluster-autoscaler-scale-down
    # ("Troubleshoot cluster autoscaler not scaling down", balanced profile): "Every 10 seconds
    # cluster autoscaler checks the utilization factor", and "If the node is still
    # underutilized after 10 minutes, cluster autoscaler should remove the node": a check to
    # find it, 10 minutes, and a check to remove it, 10m20s, over ten minutes.
    assert figure["provisioner"] == "gke"
    assert [d["seconds"] for d in figure["afterLastPod"]] == [10, 600, 10]
    assert figure["idleSeconds"] == 620
    assert {d["source"] for d in figure["afterLastPod"]} == {
        "https://cloud.google.com/kubernetes-engine/docs/troubleshooting/cluster-autoscaler-scale-down"
    }
    assert idle_warnings({"l4-shared": figure}) == [
        "pool l4-shared (spot): an empty GPU node bills for 10m20s after its last pod ends, over"
        " 10 minutes by GKE's published timing at the cluster's autoscaling profile, taken to be"
        " balanced; only a ComputeClass's autoscalingPolicy.consolidationDelayMinutes shortens"
        " it, and binding the pool to one would taint it against every pod that does not select"
        " the class (docs/idle-billing.md#gke)"
    ]


def test_a_longer_unneeded_time_is_warned_of_by_its_key_and_figure(
    dev_config: Config, plan_for: PlanFor
) -> None:
    dev_config["gpu-platform:autoscaler"] = {"gpuNodeIdleMinutes": 30}

    plan = plan_for(dev_config)

    # 30 minutes, two scan intervals and the 5s deletion delay after the taint; the cooldown
    # after a scale-up stays at its upstream 10 minutes (flags.go).
    assert seconds_by_term(plan, "t4-shared") == [10, 1800, 10, 5]
    assert deferred_seconds(plan, "t4-shared") == [600, 180]
    assert idle_warnings(plan.outputs["idleBilling"]) == [
        "pool t4-shared (spot): an empty GPU node bills for 30m25s after its last pod ends, over"
        " the 10 minutes the defaults keep to; set by autoscaler.gpuNodeIdleMinutes"
    ]


@pytest.mark.parametrize(("idle", "cooldown"), [(5, "5m0s"), (30, "10m0s")])
def test_the_cooldown_after_a_scale_up_never_outlasts_the_unneeded_time(
    dev_config: Config, plan_for: PlanFor, idle: int, cooldown: str
) -> None:
    dev_config["gpu-platform:autoscaler"] = {"gpuNodeIdleMinutes": idle, "install": False}

    flags = plan_for(dev_config).outputs["ownAutoscaler"]["flags"]

    # Upstream's default is 10 minutes (`--scale-down-delay-after-add`, flags.go): kept where
    # the unneeded time is longer, shortened to it where it is shorter.
    assert f"--scale-down-delay-after-add={cooldown}" in flags


def test_a_pools_own_consolidate_after_is_warned_of_by_its_key() -> None:
    figure = {
        "capacity": "on-demand",
        "provisioner": "karpenter",
        "setting": "pools[3].aws.consolidateAfterMinutes",
        "idleSeconds": 20 * 60 + 25,
    }
    never = {**figure, "idleSeconds": None}
    reserved = {**never, "capacity": "reserved"}

    assert idle_warnings({"l4": figure, "l4-kept": never, "l4-reserved": reserved}) == [
        "pool l4 (on-demand): an empty GPU node bills for 20m25s after its last pod ends, over"
        " the 10 minutes the defaults keep to; set by pools[3].aws.consolidateAfterMinutes",
        "pool l4-kept (on-demand): an empty GPU node bills until removed by hand after its last"
        " pod ends, over the 10 minutes the defaults keep to; set by"
        " pools[3].aws.consolidateAfterMinutes",
    ]


# The shipped stacks whose config sets a longer idle time (Pulumi.prod.yaml:
# `gpuNodeIdleMinutes: 15`, 15m25s with the loops and the deletion delay), or whose pools GKE
# removes after 10m20s by its published balanced-profile timing: warned of, pool by pool.
WARNED_POOLS = {
    "prod": {"h100-training", "a100-inference", "a100-canary"},
    "gke-dev": {"l4-shared"},
    "gke-new": {"l4"},
}


@pytest.mark.parametrize("stack", STACKS)
def test_every_shipped_stacks_defaults_bill_ten_minutes_at_most_and_its_settings_are_warned_of(
    stack: str,
) -> None:
    figures = shared_plan(stack).outputs["idleBilling"]

    warned = {warning.split()[1] for warning in idle_warnings(figures)}
    assert warned == WARNED_POOLS.get(stack, set())
    for name, figure in figures.items():
        if figure["capacity"] in ("on-demand", "spot") and name not in warned:
            assert figure["idleSeconds"] <= 600
    if stack.startswith("gke-"):
        assert {figure["idleSeconds"] for figure in figures.values()} == {620}
    if stack == "prod":
        assert {figure["idleSeconds"] for figure in figures.values()} == {15 * 60 + 25}


def test_minutes_read_as_go_durations_do() -> None:
    assert [minutes_text(s) for s in (10, 540, 565, 1825)] == ["10s", "9m", "9m25s", "30m25s"]
