"""Over any plan: every pool has an idle figure (`idleBilling`), and on EKS it is what the planned
resources make it, read here from them and the upstream delays, not from the program's own
arithmetic: the unneeded time on the pool's Auto Scaling group tag, two of the cluster
autoscaler's 10-second loops (`DefaultScanInterval`, cluster-autoscaler/config/const.go,
cluster-autoscaler-1.33.6 to 1.36.1) and its 5 seconds from the deletion taint to the deletion
(`--node-delete-delay-after-taint`, config/flags/flags.go), with the chart's cooldown after a
scale-up, never past the unneeded time, shown as the cluster-wide hold it is; or
the pool's NodePool `consolidateAfter` and Karpenter's 10-second loop and 15-second validation
(`pollingPeriod`, `commandValidationDelay`, pkg/controllers/disruption/, kubernetes-sigs/karpenter
v1.14.1), none where it is `Never`. A GKE pool's is GKE's published timing at the balanced
profile, a 10-second check, 10 minutes underutilized and the check that removes it ("Troubleshoot
cluster autoscaler not scaling down", cloud.google.com/kubernetes-engine/docs/troubleshooting/
cluster-autoscaler-scale-down).
"""

import re
from typing import Any

from gpu_platform.offline.program import Plan

UNNEEDED_TAG = "k8s.io/cluster-autoscaler/node-template/autoscaling-options/scaledownunneededtime"
AUTOSCALER_LOOPS_AND_TAINT = 2 * 10 + 5
GKE_BALANCED = 10 + 600 + 10
KARPENTER_LOOP_AND_VALIDATION = 10 + 15


def idle_billing_problems(plan: Plan, config: dict[str, Any]) -> list[str]:
    if "idleBilling" in plan.secret_outputs:
        return []
    figures = plan.outputs["idleBilling"]
    pools = [pool["name"] for pool in config["gpu-platform:pools"]]
    if sorted(figures) != sorted(pools):
        return [f"idleBilling covers {sorted(figures)}, not the pools {sorted(pools)}"]
    expected = (
        dict.fromkeys(pools, GKE_BALANCED)
        if config["gpu-platform:cloud"] == "gcp"
        else _karpenter(plan) or _autoscaler(plan, pools)
    )
    cooldown = _cooldown_seconds(plan)
    return [
        f"{pool}: idleSeconds {figures[pool]['idleSeconds']}, the plan's resources make it"
        f" {expected.get(pool, 'unknown')}"
        for pool in pools
        if figures[pool]["idleSeconds"] != expected.get(pool, "unknown")
    ] + [
        f"{pool}: held {[d['seconds'] for d in figures[pool]['deferredBy']]}s after the"
        f" cluster's events, the chart's --scale-down-delay-after-add is {cooldown}s, which must"
        f" not outlast the figure {expected.get(pool)}s"
        for pool in pools
        if cooldown is not None
        and (
            [d["seconds"] for d in figures[pool]["deferredBy"]][:1] != [cooldown]
            or cooldown > (expected.get(pool) or 0)
        )
    ]


def _cooldown_seconds(plan: Plan) -> int | None:
    return next(
        (
            _minutes(release.inputs["values"]["extraArgs"]["scale-down-delay-after-add"]) * 60
            for release in plan.of_type("kubernetes:helm.sh/v3:Release")
            if release.inputs.get("chart") == "cluster-autoscaler"
        ),
        None,
    )


def _karpenter(plan: Plan) -> dict[str, int | None]:
    found: dict[str, int | None] = {}
    for node_pool in plan.of_type("kubernetes:karpenter.sh/v1:NodePool"):
        after = node_pool.inputs["spec"]["disruption"]["consolidateAfter"]
        minutes = None if after == "Never" else int(after.removesuffix("m"))
        found[node_pool.inputs["metadata"]["name"]] = (
            None if minutes is None else minutes * 60 + KARPENTER_LOOP_AND_VALIDATION
        )
    return found


def _autoscaler(plan: Plan, pools: list[str]) -> dict[str, int]:
    found: dict[str, int] = {}
    for tag in plan.of_type("aws:autoscaling/tag:Tag"):
        if tag.inputs["tag"]["key"] != UNNEEDED_TAG:
            continue
        unneeded = _minutes(tag.inputs["tag"]["value"])
        group = tag.inputs["autoscalingGroupName"]
        # The longest: a pool `t4` does not take `t4-shared`'s groups.
        pool = max((p for p in pools if group.startswith(f"eks-{p}-")), key=len)
        found[pool] = unneeded * 60 + AUTOSCALER_LOOPS_AND_TAINT
    return found


def _minutes(duration: str) -> int:
    match = re.fullmatch(r"(\d+)m0s", duration)
    assert match, duration
    return int(match.group(1))
