"""Every node of a validated pool joins with the validation taint, in the form its provisioner
reads: node groups, Karpenter NodePools and GKE node pools, as the sweep checks every stack."""

import copy

import pytest

from gpu_platform.offline.program import Plan
from gpu_platform.stack_files import stack_config
from tests.repository import PROJECT
from tests.shared_plans import shared_plan

from .taint_invariants import KEY, validation_taint_problems


@pytest.mark.parametrize("stack", ["dev", "prod", "gke-dev", "karpenter-dev"])
def test_every_pool_of_the_stacks_carries_it(stack: str) -> None:
    assert validation_taint_problems(shared_plan(stack), stack_config(stack, PROJECT)) == []


def test_a_pool_with_validation_off_must_not_carry_it(dev_plan: Plan) -> None:
    config = copy.deepcopy(stack_config("dev", PROJECT))
    config["gpu-platform:pools"][0]["validation"] = {"enabled": False}

    # The dev stack's plan, with validation on: the check names the pool the config turned off.
    assert validation_taint_problems(dev_plan, config) == [
        "pool t4-shared: its node group taints carries, with validation off, the validation taint"
    ]


def test_a_karpenter_pool_must_carry_it_as_a_startup_taint() -> None:
    plan = shared_plan("karpenter-dev")
    config = stack_config("karpenter-dev", PROJECT)
    (node_pool, *_) = plan.of_type("kubernetes:karpenter.sh/v1:NodePool")
    spec = node_pool.inputs["spec"]["template"]["spec"]
    spec["taints"] = [*spec["taints"], *spec.pop("startupTaints")]
    pool = node_pool.inputs["spec"]["template"]["metadata"]["labels"]["gpu-platform.io/pool"]

    assert validation_taint_problems(plan, config) == [
        f"pool {pool}: the validation taint in its NodePool taints (held against every pod)",
        f"pool {pool}: its NodePool startupTaints lacks the validation taint",
    ]
    assert KEY in [t["key"] for t in spec["taints"]]
