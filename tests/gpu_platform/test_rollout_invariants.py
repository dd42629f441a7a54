"""Every node group and node pool the program declares waits, in `pulumi up`, longer than the
longest rollout its settings allow (`rollout_invariants.timeout_problems`), over the project's
stacks and the settings that lengthen a rollout: a percentage, zonal node groups, per-zone
autoscaling, blue-green with a drain wait and a soak."""

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from gpu_platform.offline.program import Plan
from gpu_platform.stack_files import stack_config
from tests.repository import PROJECT

from .rollout_invariants import NODE_GROUP, NODE_POOL, timeout_problems

Config = dict[str, Any]
PlanFor = Callable[[Config], Plan]


@pytest.mark.parametrize("stack", ["dev", "prod", "gke-dev", "eks-new", "gke-new", "karpenter-dev"])
def test_every_stacks_pools_wait_for_their_longest_rollout(
    stack: str, shared_plan_for: PlanFor
) -> None:
    config = stack_config(stack, PROJECT)

    assert timeout_problems(shared_plan_for(config), config) == []


def test_a_zonal_eks_pool_replacing_a_percentage_waits_for_its_rollout(
    dev_config: Config, plan_for: PlanFor
) -> None:
    pool = dev_config["gpu-platform:pools"][0]
    pool["max"] = 12
    pool.setdefault("aws", {}).update(nodeGroupPerZone=True, maxUnavailablePercent=10)
    plan = plan_for(dev_config)

    assert len(plan.of_type(NODE_GROUP)) > 1
    assert timeout_problems(plan, dev_config) == []


@pytest.mark.parametrize(
    "gcp",
    [
        {"autoscalingScope": "per-zone", "maxSurge": 2},
        {"upgradeStrategy": "blue-green", "blueGreenSoakHours": 3},
        {
            "upgradeStrategy": "blue-green",
            "blueGreenDrainWaitHours": 48,
            "blueGreenSoakHours": 24,
        },
    ],
)
def test_a_gke_pool_waits_for_its_upgrade(
    gcp: dict[str, Any], gke_config: Config, plan_for: PlanFor
) -> None:
    pool = gke_config["gpu-platform:pools"][0]
    pool.update(max=6, capacity="on-demand", gcp=gcp)

    assert timeout_problems(plan_for(gke_config), gke_config) == []


@pytest.mark.parametrize("stack", ["eks-new", "gke-new"])
def test_a_pool_left_at_the_providers_default_is_reported(
    stack: str, shared_plan_for: PlanFor
) -> None:
    config = stack_config(stack, PROJECT)
    plan = shared_plan_for(config)
    plan.resources = [
        dataclasses.replace(r, custom_timeouts={}) if r.type in (NODE_GROUP, NODE_POOL) else r
        for r in plan.resources
    ]

    problems = timeout_problems(plan, config)

    assert len(problems) == len([r for r in plan.resources if r.type in (NODE_GROUP, NODE_POOL)])
    assert all("the provider's default" in p for p in problems)


@pytest.mark.parametrize(("timeout", "reported"), [("407m", True), ("755m", False)])
def test_an_eks_percentage_is_checked_at_every_size_of_the_group(
    timeout: str, reported: bool, dev_plan: Plan
) -> None:
    # max 20 at 10%: at 19 nodes a batch of one (1.9 rounded down; EKS states no rounding), 19
    # rounds of 15 minutes' drain, 60 seconds and 15 minutes' start after a 15-minute scale-up:
    # 604 minutes. 407 covers only the 325 of 20 nodes in batches of two.
    (group,) = dev_plan.of_type(NODE_GROUP)
    inputs = {
        **group.inputs,
        "scalingConfig": {**group.inputs["scalingConfig"], "maxSize": 20},
        "updateConfig": {"maxUnavailablePercentage": 10},
    }
    plan = dataclasses.replace(
        dev_plan,
        resources=[dataclasses.replace(group, inputs=inputs, custom_timeouts={"update": timeout})],
    )

    assert bool(timeout_problems(plan)) is reported


def test_a_gke_pool_timed_for_its_own_rollout_alone_is_reported(
    shared_plan_for: PlanFor,
) -> None:
    # gke-new: the system pool, 2 nodes in each of 3 zones one at a time, 6 rounds of (15
    # minutes' start + an hour's drain) = 450 minutes (563 with the margin); the l4 pool, max 2
    # one at a time, 150 (188). GKE runs one node pool operation at a time and the provider
    # retries within the update's own timeout (terraform-provider-google
    # resource_container_node_pool.go, `RetryWhileIncompatibleOperation(timeout, ...)`): each
    # may wait 600 minutes, more than either covers alone.
    config = stack_config("gke-new", PROJECT)
    plan = shared_plan_for(config)
    own = {"cluster-system": "563m", "l4": "188m"}
    plan.resources = [
        dataclasses.replace(r, custom_timeouts={"update": own[r.name]})
        if r.type == NODE_POOL
        else r
        for r in plan.resources
    ]

    assert len(timeout_problems(plan, config)) == 2
