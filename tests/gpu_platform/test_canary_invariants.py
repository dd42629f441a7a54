"""`canary_capacity_problems` and `canary_rank_problems` find a canary that never starts its node
or that outranks a pool, and nothing on a stack whose canary does neither."""

import copy
from typing import Any

import pytest

from gpu_platform.eks import autoscaler_settings
from gpu_platform.offline.program import Plan, run_program
from gpu_platform.stack_files import stack_config
from tests.conftest import Config
from tests.gpu_platform.config.test_canary_rules import canary_of
from tests.repository import PROJECT

from .canary_invariants import (
    KARPENTER_NODE_POOL,
    canary_capacity_problems,
    canary_rank_problems,
)

RESERVATION = "cr-0123456789abcdef0"


def eks_pair(led: dict[str, Any], canary: dict[str, Any]) -> Config:
    return {
        "gpu-platform:cloud": "aws",
        "gpu-platform:pools": [
            {"name": "h100", **led},
            {"name": "h100-canary", "canaryOf": "h100", **canary},
        ],
    }


RESERVED: Config = {"capacity": "reserved", "aws": {"capacityReservationId": RESERVATION}}


@pytest.mark.parametrize(
    ("led", "canary", "expected"),
    [
        (
            {"capacity": "capacity-block"},
            {"capacity": "capacity-block"},
            ["canary h100-canary: capacity-block starts no node for a plain pod"],
        ),
        (
            RESERVED,
            RESERVED,
            [
                "canary h100-canary: only the reservation of h100 (aws.capacityReservationId"
                f" {RESERVATION})"
            ],
        ),
        (
            RESERVED,
            {"capacity": "reserved", "aws": {**RESERVED["aws"], "onDemandFallback": True}},
            [],
        ),
        (RESERVED, {"capacity": "reserved", "aws": {"capacityReservationId": "cr-1"}}, []),
        (RESERVED, {"capacity": "on-demand"}, []),
        (
            {"gcp": {"flexStart": True, "queuedProvisioning": True}},
            {"gcp": {"flexStart": True, "queuedProvisioning": True}},
            ["canary h100-canary: gcp.queuedProvisioning starts no node for a plain pod"],
        ),
        (
            {"gcp": {"reservation": "specific", "reservationName": "h100-ml"}},
            {"gcp": {"reservation": "specific", "reservationName": "h100-ml"}},
            ["canary h100-canary: only the reservation of h100 (gcp.reservationName h100-ml)"],
        ),
        ({"gcp": {"reservation": "specific", "reservationName": "h100-ml"}}, {}, []),
    ],
)
def test_a_canary_on_capacity_that_never_starts_its_node_is_found(
    led: dict[str, Any], canary: dict[str, Any], expected: list[str]
) -> None:
    assert canary_capacity_problems(Plan("dev"), eks_pair(led, canary)) == expected


def test_a_canary_below_its_pool_by_the_priority_expander_holds(dev_config: Config) -> None:
    canary_of(dev_config)

    plan = run_program("dev", config=dev_config, project=PROJECT)

    assert canary_rank_problems(plan, dev_config) == []


def test_a_canary_tied_with_its_pool_by_the_priority_expander_is_found(
    dev_config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every pool at spot's priority (10), the canary as well.
    monkeypatch.setattr(autoscaler_settings, "pool_preference", lambda pool: 10)
    canary_of(dev_config)

    plan = run_program("dev", config=dev_config, project=PROJECT)

    assert canary_rank_problems(plan, dev_config) == [
        "priority expander: canary canary ranks 10, not below pool t4-shared's 10"
    ]


def test_a_canary_weighed_above_a_pool_is_found() -> None:
    config = copy.deepcopy(dict(stack_config("karpenter-dev", PROJECT)))
    config["gpu-platform:pools"] = [
        p for p in config["gpu-platform:pools"] if p["name"] == "l4-on-demand"
    ]
    canary_of(config)
    plan = run_program("karpenter-dev", config=config, project=PROJECT)
    assert canary_rank_problems(plan, config) == []
    (node_pool,) = [
        n for n in plan.of_type(KARPENTER_NODE_POOL) if n.inputs["metadata"]["name"] == "canary"
    ]
    node_pool.inputs["spec"]["weight"] = 100

    # An on-demand pool weighs 20 (CAPACITY_PREFERENCE's on-demand level).
    assert canary_rank_problems(plan, config) == [
        "NodePool weight: canary canary ranks 100, not below pool l4-on-demand's 20"
    ]
