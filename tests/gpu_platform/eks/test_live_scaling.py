"""A change of a pool's bounds carries a desired size EKS accepts: the running node group's,
moved within the new bounds, read when the update runs and unknown in a preview, so that a saved
plan applies however the autoscaler moved. Otherwise the autoscaler's desired size stands."""

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from gpu_platform.eks.node_group import DESIRED_SIZE
from gpu_platform.offline.program import Plan, run_program
from gpu_platform.offline.stand_ins import aws as stand_in
from tests.repository import PROJECT

from .plans import component, launch_template, node_group, with_pool

Config = dict[str, Any]
PlanFor = Callable[[Config], Plan]
# The dev pool's node group as the AWS provider names it from `t4-shared-` (Terraform's
# PrefixedUniqueId: 18 digits and 8 hex digits).
RUNNING = "t4-shared-20261123120000000000000a1b"


@pytest.fixture
def running() -> Iterator[Callable[..., None]]:
    def run(name: str = RUNNING, *, min_size: int, max_size: int, desired: int) -> None:
        stand_in.LIVE_NODE_GROUPS[name] = {
            "minSize": min_size,
            "maxSize": max_size,
            "desiredSize": desired,
        }

    yield run
    stand_in.LIVE_NODE_GROUPS.clear()


def test_raising_min_above_the_running_size_sends_the_new_min_as_desired(
    dev_config: Config, plan_for: PlanFor, running: Callable[..., None]
) -> None:
    # EKS: "Minimum capacity 2 can't be greater than desired size 0".
    running(min_size=0, max_size=3, desired=0)

    group = node_group(plan_for(with_pool(dev_config, min=2, max=3)))

    assert group.inputs["scalingConfig"] == {"minSize": 2, "desiredSize": 2, "maxSize": 3}
    assert DESIRED_SIZE not in group.ignore_changes


def test_lowering_max_below_the_running_size_sends_the_new_max_as_desired(
    dev_config: Config, plan_for: PlanFor, running: Callable[..., None]
) -> None:
    running(min_size=0, max_size=3, desired=3)

    group = node_group(plan_for(with_pool(dev_config, min=0, max=2)))

    assert group.inputs["scalingConfig"]["desiredSize"] == 2
    assert DESIRED_SIZE not in group.ignore_changes


def test_new_bounds_that_admit_the_running_size_send_it_unchanged(
    dev_config: Config, plan_for: PlanFor, running: Callable[..., None]
) -> None:
    running(min_size=0, max_size=3, desired=2)

    group = node_group(plan_for(with_pool(dev_config, min=1, max=4)))

    assert group.inputs["scalingConfig"]["desiredSize"] == 2


def test_unchanged_bounds_leave_the_desired_size_to_the_autoscaler(
    dev_config: Config, plan_for: PlanFor, running: Callable[..., None]
) -> None:
    running(min_size=0, max_size=3, desired=2)

    group = node_group(plan_for(with_pool(dev_config, min=0, max=3)))

    assert group.ignore_changes == (DESIRED_SIZE,)


def test_two_running_groups_of_the_pool_leave_the_desired_size_alone(
    dev_config: Config, plan_for: PlanFor, running: Callable[..., None]
) -> None:
    # A replacement runs beside the group it replaces: which one the update is for is unknown.
    running(min_size=0, max_size=3, desired=0)
    running("t4-shared-20261123130000000000000c2d", min_size=0, max_size=3, desired=0)

    assert node_group(plan_for(with_pool(dev_config, min=2))).ignore_changes == (DESIRED_SIZE,)


def test_a_group_of_another_pool_is_not_read_as_this_ones(
    dev_config: Config, plan_for: PlanFor, running: Callable[..., None]
) -> None:
    running("t4-shared-extra-20261123120000000000000a1b", min_size=0, max_size=3, desired=0)

    assert node_group(plan_for(with_pool(dev_config, min=2))).ignore_changes == (DESIRED_SIZE,)


def test_a_saved_plan_holds_no_desired_size_the_autoscaler_can_move(
    dev_config: Config, running: Callable[..., None]
) -> None:
    # pulumi pkg/resource/deploy/plan.go (`checkDiff`) refuses `up --plan` where an input differs
    # from the planned one ("violates plan: properties changed: ~~scalingConfig") unless the
    # planned one is unknown (sdk/go/common/resource/properties_diff.go,
    # `DeepEqualsIncludeUnknowns`: "Anything is equal to a computed"); it also compares each
    # property's dependencies and the `ignoreChanges` set (`checkGoal`).
    config = with_pool(dev_config, min=2, max=3)
    running(min_size=0, max_size=3, desired=0)
    planned = node_group(run_program("dev", config=config, project=PROJECT, preview=True))
    # The autoscaler moves the group between the plan and the update.
    running(min_size=0, max_size=3, desired=3)
    replanned = node_group(run_program("dev", config=config, project=PROJECT, preview=True))
    applied = node_group(run_program("dev", config=config, project=PROJECT))

    for plan in (planned, replanned):
        assert plan.inputs["scalingConfig"] == {"minSize": 2, "maxSize": 3}
        assert plan.unknown_inputs == {"scalingConfig.desiredSize"}
        assert plan.ignore_changes == ()
    assert applied.inputs["scalingConfig"] == {"minSize": 2, "desiredSize": 3, "maxSize": 3}
    assert applied.ignore_changes == ()
    # A set of URNs: the SDK gathers them from a set of resources, in no order of its own.
    assert set(planned.property_dependencies["scalingConfig"]) == set(
        applied.property_dependencies["scalingConfig"]
    )
    assert applied.property_dependencies["scalingConfig"]


def test_a_held_back_pool_reads_its_desired_size_only_after_its_gate_and_node_role(
    running: Callable[..., None],
) -> None:
    # prod's a100-inference is led by a100-canary (Pulumi.prod.yaml, `canaryOf`): its node group
    # waits for the canary's gate, its launch template and its node role's policy attachments.
    # The size read must wait for them too, or it is as old as the wait (hours behind a gate);
    # and the preview's unknown carries the same dependencies as the update's read, which a
    # saved plan compares (pulumi pkg/resource/deploy/plan.go, `checkGoal`).
    running("a100-inference-20261123120000000000000a1b", min_size=0, max_size=3, desired=1)
    plan = run_program("prod", project=PROJECT, preview=True)
    group = node_group(plan, "a100-inference")
    waits_for = {
        plan.named("a100-canary-canary-gate", "kubernetes:batch/v1:Job").urn,
        launch_template(plan, "a100-inference").urn,
        *(
            r.urn
            for r in plan.children_of(component(plan, "a100-inference"))
            if r.type == "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
        ),
    }

    assert len(waits_for) > 2
    assert group.unknown_inputs == {"scalingConfig.desiredSize"}
    assert waits_for <= set(group.property_dependencies["scalingConfig"])
