"""`efa_problems` holds on the project's stacks, and finds what the platform once did wrong:
an EFA pool of mixed sizes sized by its smallest, and EFA pools of two zones in one `gpuModels`
placement."""

import copy
from typing import Any

import pytest

from gpu_platform.eks import placement
from gpu_platform.kubernetes import gpu_pod
from gpu_platform.offline.program import run_program
from gpu_platform.stack_files import stack_config
from tests.repository import PROJECT

from .efa_invariants import FAMILY, INSTANCE_TYPE, NODE_POOL, efa_problems
from .test_efa import efa_pool, on_demand_h100

Config = dict[str, Any]


@pytest.mark.parametrize("stack", ["dev", "prod", "karpenter-dev", "gke-dev", "gke-new", "eks-new"])
def test_the_project_stacks_hold_both_invariants(stack: str) -> None:
    config = stack_config(stack, PROJECT)

    assert efa_problems(run_program(stack, config, project=PROJECT), config) == []


def test_a_node_group_efa_pool_holds_both_invariants(dev_config: Config) -> None:
    config = efa_pool(dev_config)

    assert efa_problems(run_program("dev", config, project=PROJECT), config) == []


def two_zones_of_h100s() -> Config:
    """karpenter-dev with a second EFA pool of H100s, on demand in another zone."""
    config = stack_config("karpenter-dev", PROJECT)
    block = config["gpu-platform:pools"][0]
    other = copy.deepcopy(block)
    other.update(name="h100-b", capacity="on-demand", zones=["us-east-1b"])
    del other["aws"]["capacityReservationId"]
    config["gpu-platform:pools"].append(other)
    return config


def test_efa_pools_of_two_zones_plan_a_placement_per_zone() -> None:
    config = two_zones_of_h100s()

    plan = run_program("karpenter-dev", config, project=PROJECT)

    assert {name: p["pools"] for name, p in plan.outputs["gpuModels"].items()} == {
        "h100-80gb-efa-us-east-1a": ["h100-block"],
        "h100-80gb-efa-us-east-1b": ["h100-b"],
        "l4": ["l4-reserved", "l4-on-demand"],
        "t4": ["t4-spot"],
    }
    assert efa_problems(plan, config) == []


def test_a_placement_over_efa_pools_of_two_zones_is_found(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # What `gpuModels` was: keyed by model and `-efa` alone.
    monkeypatch.setattr(gpu_pod, "_efa_zone", lambda pool: None)
    config = two_zones_of_h100s()

    plan = run_program("karpenter-dev", config, project=PROJECT)

    assert efa_problems(plan, config) == [
        "gpuModels h100-80gb-efa: EFA pools in 2 zones (us-east-1a, us-east-1b)"
    ]


def test_a_karpenter_pool_sized_by_its_smallest_size_is_found(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # What the platform did before it refused such pools: every node got the fewest EFAs of
    # the pool's sizes, 1 of a p5.48xlarge's 32 (EC2's MaximumEfaInterfaces).
    monkeypatch.setattr(placement, "different_efa_counts", lambda counts: None)
    config = on_demand_h100(instanceTypes=["p5.4xlarge", "p5.48xlarge"])

    plan = run_program("karpenter-dev", config, project=PROJECT)

    assert efa_problems(plan, config) == [
        "NodePool h100-block: a p5.48xlarge node gets 1 EFA interface(s), but p5.48xlarge takes 32"
    ]


def test_a_node_group_sized_for_another_instance_type_is_found(
    monkeypatch: pytest.MonkeyPatch, dev_config: Config
) -> None:
    # p5e.48xlarge takes 32 EFAs, p5en.48xlarge 16 (EC2's MaximumEfaInterfaces): one launch
    # template for both gives one of them the other's.
    monkeypatch.setattr(placement, "different_efa_counts", lambda counts: None)
    config = efa_pool(
        dev_config, instanceTypes=["p5e.48xlarge", "p5en.48xlarge"], zones=["us-east-2a"]
    )
    config["gpu-platform:cluster"]["region"] = "us-east-2"

    plan = run_program("dev", config, project=PROJECT)

    assert efa_problems(plan, config) == [
        "node group t4-shared-nodes: a p5en.48xlarge node gets 32 EFA interface(s), but"
        " p5en.48xlarge takes 16"
    ]


def test_an_efa_node_pool_admitting_no_size_is_found() -> None:
    # A NodePool whose requirements match no instance type would pass any EFA count unchecked.
    config = stack_config("karpenter-dev", PROJECT)
    plan = copy.deepcopy(run_program("karpenter-dev", config, project=PROJECT))
    node_pool = next(
        n for n in plan.of_type(NODE_POOL) if n.inputs["metadata"]["name"] == "h100-block"
    )
    spec = node_pool.inputs["spec"]["template"]["spec"]
    spec["requirements"] = [
        *(r for r in spec["requirements"] if r["key"] != INSTANCE_TYPE),
        {"key": FAMILY, "operator": "In", "values": ["p9"]},
    ]

    assert efa_problems(plan, config) == [
        "NodePool h100-block: admits no instance type EC2 offers in its zones"
    ]
