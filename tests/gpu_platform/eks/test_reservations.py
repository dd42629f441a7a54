"""Managed node groups in EC2 capacity reservations and Capacity Blocks, in the real program: what
each pool's launch template targets, the scheduled action that grows a Capacity Block pool when
its block starts, and what managed node groups cannot do, refused before anything is created.
Launch templates, node groups and scheduled actions are checked against botocore's models."""

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from gpu_platform.eks import node_group
from gpu_platform.offline.program import Plan, PlannedResource
from tests.stack_variants import (
    BLOCK,
    BLOCK_POOL,
    ODCR,
    ODCR_GROUP,
    ODCR_POOL,
    with_ec2_reserved_pools,
)

from .aws_api import (
    create_launch_template_request,
    create_nodegroup_request,
    request_problems,
)
from .plans import COMPONENT, LAUNCH_TEMPLATE, NODE_GROUP, launch_template, problems_of
from .plans import node_group as planned_node_group

Config = dict[str, Any]
SCHEDULE = "aws:autoscaling/schedule:Schedule"
BEFORE_THE_BLOCK = datetime(2026, 11, 23, 12, tzinfo=UTC)
"""A week before BLOCK_START, 2026-12-01 11:30 UTC."""
BLOCK_START = datetime(2026, 12, 1, 11, 30, tzinfo=UTC)


@pytest.fixture
def plan_at(
    monkeypatch: pytest.MonkeyPatch, plan_for: Callable[[Config], Plan]
) -> Callable[[Config, datetime], Plan]:
    """Run the program for a config at a time of the test's choosing."""

    def run(config: Config, now: datetime) -> Plan:
        monkeypatch.setattr(node_group, "now", lambda: now)
        return plan_for(config)

    return run


@pytest.fixture
def reserved(dev_config: Config) -> Config:
    """The dev stack plus ODCR_POOL in the reservation ODCR and BLOCK_POOL on the Capacity Block
    BLOCK (stack_variants)."""
    return with_ec2_reserved_pools(dev_config)


@pytest.fixture
def reserved_plan(plan_at: Callable[[Config, datetime], Plan], reserved: Config) -> Plan:
    return plan_at(reserved, BEFORE_THE_BLOCK)


def pool_config(config: Config, name: str) -> dict[str, Any]:
    return next(p for p in config["gpu-platform:pools"] if p["name"] == name)


def on_group(config: Config, **aws: Any) -> Config:
    """ODCR_POOL on the resource group ODCR_GROUP instead of its one reservation."""
    options = pool_config(config, ODCR_POOL)["aws"]
    del options["capacityReservationId"]
    options.update(capacityReservationResourceGroupArn=ODCR_GROUP, **aws)
    return config


def schedules(plan: Plan, pool: str = BLOCK_POOL) -> list[PlannedResource]:
    return [r for r in plan.children_of(plan.named(pool, COMPONENT)) if r.type == SCHEDULE]


# --- Reserved pools --------------------------------------------------------------------------


def test_a_reserved_pool_launches_on_demand_instances_into_its_reservation(
    reserved_plan: Plan,
) -> None:
    template = launch_template(reserved_plan, ODCR_POOL).inputs

    assert planned_node_group(reserved_plan, ODCR_POOL).inputs["capacityType"] == "ON_DEMAND"
    # No preference beside the target: a launch that targets one reservation fails while it is
    # full (EC2 user guide, "Launch instances into an existing Capacity Reservation").
    assert template["capacityReservationSpecification"] == {
        "capacityReservationTarget": {"capacityReservationId": ODCR}
    }
    assert "instanceMarketOptions" not in template


def test_a_reserved_pool_on_a_resource_group_launches_only_into_its_reservations(
    plan_at: Callable[[Config, datetime], Plan], reserved: Config
) -> None:
    plan = plan_at(on_group(reserved), BEFORE_THE_BLOCK)

    # Without the preference, EC2 runs the instance on-demand when no reservation of the group
    # has room (EC2 user guide, "Launch instances into Capacity Reservations in a group").
    assert launch_template(plan, ODCR_POOL).inputs["capacityReservationSpecification"] == {
        "capacityReservationPreference": "capacity-reservations-only",
        "capacityReservationTarget": {"capacityReservationResourceGroupArn": ODCR_GROUP},
    }


def test_on_demand_fallback_on_a_resource_group_leaves_ec2_to_fall_back(
    plan_at: Callable[[Config, datetime], Plan], reserved: Config
) -> None:
    plan = plan_at(on_group(reserved, onDemandFallback=True), BEFORE_THE_BLOCK)

    assert launch_template(plan, ODCR_POOL).inputs["capacityReservationSpecification"] == {
        "capacityReservationTarget": {"capacityReservationResourceGroupArn": ODCR_GROUP}
    }
    assert planned_node_group(plan, ODCR_POOL).inputs["capacityType"] == "ON_DEMAND"


def test_on_demand_fallback_on_one_reservation_is_refused_with_what_to_do_instead(
    failed_plan_for: Callable[[Config], Plan], reserved: Config
) -> None:
    pool_config(reserved, ODCR_POOL)["aws"]["onDemandFallback"] = True

    expected = problems_of(failed_plan_for(reserved))["gpu-platform:pools[1].aws.onDemandFallback"]

    assert expected.startswith(
        "false or no value with aws.capacityReservationId on managed node groups: a launch that"
        " targets one reservation fails while it is full, never falling back to on-demand."
    )
    assert "aws.capacityReservationResourceGroupArn" in expected
    assert "add an on-demand pool of the same instance type" in expected


def test_on_demand_fallback_on_a_spot_pool_is_refused_on_managed_node_groups(
    failed_plan_for: Callable[[Config], Plan], dev_config: Config
) -> None:
    # The dev stack's pool is spot. EKS: "You can't mix different capacity types within the
    # same node group" (create-managed-node-group).
    dev_config["gpu-platform:pools"][0].setdefault("aws", {})["onDemandFallback"] = True

    expected = problems_of(failed_plan_for(dev_config))[
        "gpu-platform:pools[0].aws.onDemandFallback"
    ]

    assert expected.startswith("false or no value on a spot pool with managed node groups")
    assert expected.endswith(
        "use provisioner karpenter, whose NodePool falls back from spot to on-demand"
    )


@pytest.mark.parametrize(
    ("change", "path", "words"),
    [
        (
            lambda p: p.update(zones=["us-east-1a", "us-east-1b"]),
            "gpu-platform:pools[1].zones",
            "exactly one zone with aws.capacityReservationId, the reservation's",
        ),
        (
            lambda p: p.update(instanceTypes=["p5.48xlarge", "p5e.48xlarge"]),
            "gpu-platform:pools[1].instanceTypes",
            "exactly one instance type with aws.capacityReservationId, the reservation's",
        ),
        (
            lambda p: p["aws"].update(capacityReservationResourceGroupArn=ODCR_GROUP),
            "gpu-platform:pools[1].aws.capacityReservationResourceGroupArn",
            "no value beside aws.capacityReservationId",
        ),
        (
            lambda p: p["aws"].pop("capacityReservationId"),
            "gpu-platform:pools[1].aws.capacityReservationId",
            "or a resource group of reservations in aws.capacityReservationResourceGroupArn",
        ),
        (
            lambda p: p["aws"].update(capacityBlockStart="2026-12-01T11:30:00Z"),
            "gpu-platform:pools[1].aws.capacityBlockStart",
            "no value unless capacity is capacity-block (this pool's is reserved)",
        ),
    ],
    ids=["two zones", "two instance types", "id and group", "neither", "block start"],
)
def test_a_reserved_pool_names_one_reservation_or_one_group_in_its_zone(
    failed_plan_for: Callable[[Config], Plan],
    reserved: Config,
    change: Callable[[dict[str, Any]], Any],
    path: str,
    words: str,
) -> None:
    change(pool_config(reserved, ODCR_POOL))

    plan = failed_plan_for(reserved)

    assert words in problems_of(plan)[path]
    assert plan.resources == []


# --- Capacity Blocks -------------------------------------------------------------------------


def test_a_capacity_block_pool_grows_to_its_max_when_the_block_starts(
    reserved_plan: Plan,
) -> None:
    (schedule,) = schedules(reserved_plan)
    # The Auto Scaling group EKS made for the pool's node group (the offline plan's stand-in).
    (resources,) = planned_node_group(reserved_plan, BLOCK_POOL).computed_outputs["resources"]
    (autoscaling_group,) = resources["autoscalingGroups"]

    assert schedule.inputs == {
        "autoscalingGroupName": autoscaling_group["name"],
        "scheduledActionName": f"gpu-platform scale-up at start of Capacity Block {BLOCK}",
        "startTime": "2026-12-01T11:30:00Z",
        "desiredCapacity": 2,
        # -1: the provider leaves the group's min and max as they are.
        "minSize": -1,
        "maxSize": -1,
        "region": "us-east-1",
    }


def test_a_block_start_given_in_another_offset_is_scheduled_in_utc(
    plan_at: Callable[[Config, datetime], Plan], reserved: Config
) -> None:
    block = pool_config(reserved, BLOCK_POOL)
    block["max"] = 1
    block["aws"]["capacityBlockStart"] = "2026-12-01T12:30:00+01:00"

    (schedule,) = schedules(plan_at(reserved, BEFORE_THE_BLOCK))

    assert (schedule.inputs["startTime"], schedule.inputs["desiredCapacity"]) == (
        "2026-12-01T11:30:00Z",
        1,
    )


@pytest.mark.parametrize(
    "now",
    [BLOCK_START + timedelta(hours=1), BLOCK_START, BLOCK_START - timedelta(minutes=10)],
    ids=["started", "starting", "starting before the action could be created"],
)
def test_no_scale_up_is_scheduled_once_the_block_has_started_or_is_about_to(
    plan_at: Callable[[Config, datetime], Plan], reserved: Config, now: datetime
) -> None:
    # EC2 Auto Scaling refuses an action that starts in the past (PutScheduledUpdateGroupAction);
    # the autoscaler grows the pool for pending pods instead.
    plan = plan_at(reserved, now)

    assert schedules(plan) == []
    assert planned_node_group(plan, BLOCK_POOL).inputs["capacityType"] == "CAPACITY_BLOCK"


def test_only_a_block_pool_with_a_start_gets_a_scheduled_action(
    plan_at: Callable[[Config, datetime], Plan], reserved: Config
) -> None:
    del pool_config(reserved, BLOCK_POOL)["aws"]["capacityBlockStart"]

    plan = plan_at(reserved, BEFORE_THE_BLOCK)

    assert plan.of_type(SCHEDULE) == []


def test_the_scale_down_before_the_block_ends_is_left_to_eks(reserved_plan: Plan) -> None:
    # EKS schedules "Amazon EKS Node Group Capacity Scaledown Before Reservation End" itself,
    # 40 minutes before the end, and asks that it be left alone (capacity-blocks-mng).
    assert [r.inputs["scheduledActionName"] for r in reserved_plan.of_type(SCHEDULE)] == [
        f"gpu-platform scale-up at start of Capacity Block {BLOCK}"
    ]


def test_a_block_per_zone_node_group_grows_to_the_pools_max(
    plan_at: Callable[[Config, datetime], Plan], reserved: Config
) -> None:
    pool_config(reserved, BLOCK_POOL)["aws"]["nodeGroupPerZone"] = True

    (schedule,) = schedules(plan_at(reserved, BEFORE_THE_BLOCK))

    assert schedule.name == f"{BLOCK_POOL}-us-east-1a-capacity-block-start"
    assert schedule.inputs["desiredCapacity"] == 2


# --- Requests the APIs accept ----------------------------------------------------------------


VARIANTS: dict[str, Callable[[Config], Config]] = {
    "one reservation": lambda c: c,
    "resource group": on_group,
    "resource group, on-demand fallback": lambda c: on_group(c, onDemandFallback=True),
}


def reserved_resources(plan: Plan) -> Iterator[PlannedResource]:
    for pool in (ODCR_POOL, BLOCK_POOL):
        yield from plan.children_of(plan.named(pool, COMPONENT))


@pytest.mark.parametrize("variant", VARIANTS)
def test_reserved_launch_templates_and_node_groups_are_requests_the_apis_accept(
    plan_at: Callable[[Config, datetime], Plan], reserved: Config, variant: str
) -> None:
    plan = plan_at(VARIANTS[variant](reserved), BEFORE_THE_BLOCK)
    requests = {
        LAUNCH_TEMPLATE: ("ec2", "CreateLaunchTemplate", create_launch_template_request),
        NODE_GROUP: ("eks", "CreateNodegroup", create_nodegroup_request),
    }

    checked = 0
    for resource in reserved_resources(plan):
        if resource.type in requests:
            service, operation, translate = requests[resource.type]
            request = translate(resource.name, resource.inputs)
            assert request_problems(service, operation, request) == [], resource.name
            checked += 1

    assert checked == 4


def put_scheduled_update_group_action_request(inputs: dict[str, Any]) -> dict[str, Any]:
    """PutScheduledUpdateGroupAction as the AWS provider sends it: each size but -1, the start
    time parsed from its `YYYY-MM-DDThh:mm:ssZ` (resourceSchedulePut,
    internal/service/autoscaling/schedule.go)."""
    request: dict[str, Any] = {
        "AutoScalingGroupName": inputs["autoscalingGroupName"],
        "ScheduledActionName": inputs["scheduledActionName"],
        "StartTime": datetime.strptime(inputs["startTime"], "%Y-%m-%dT%H:%M:%SZ").replace(
            tzinfo=UTC
        ),
    }
    for key, member in (
        ("minSize", "MinSize"),
        ("maxSize", "MaxSize"),
        ("desiredCapacity", "DesiredCapacity"),
    ):
        if int(inputs[key]) != -1:
            request[member] = int(inputs[key])
    return request


def test_the_scheduled_action_is_a_request_ec2_auto_scaling_accepts(reserved_plan: Plan) -> None:
    (schedule,) = schedules(reserved_plan)

    request = put_scheduled_update_group_action_request(schedule.inputs)

    assert request_problems("autoscaling", "PutScheduledUpdateGroupAction", request) == []
    # Only the desired capacity changes.
    assert set(request) == {
        "AutoScalingGroupName",
        "ScheduledActionName",
        "StartTime",
        "DesiredCapacity",
    }
