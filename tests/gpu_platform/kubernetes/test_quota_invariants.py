"""Every tenant namespace's quota caps the MIG slices the stack's pools advertise, and no more
`nvidia.com/gpu` than its `gpuQuota` where a pool hands out whole GPUs."""

from collections.abc import Callable

import pytest

from gpu_platform.cli.offline import Plan
from gpu_platform.cli.stack_files import stack_config
from tests.conftest import Config
from tests.repository import PROJECT

from .quota_invariants import QUOTA, quota_problems

# prod: h100-training hands out whole GPUs, a100-inference (and its canary) 1g.10gb slices.
PROD = stack_config("prod", PROJECT)


@pytest.fixture
def prod_plan(shared_plan_for: Callable[[Config], Plan]) -> Plan:
    return shared_plan_for(PROD)


def hard(plan: Plan, namespace: str) -> dict[str, str]:
    quota = next(r for r in plan.of_type(QUOTA) if r.inputs["metadata"]["namespace"] == namespace)
    hard: dict[str, str] = quota.inputs["spec"]["hard"]
    return hard


def test_prods_quotas_cap_what_its_pools_advertise(prod_plan: Plan) -> None:
    assert quota_problems(prod_plan, PROD) == []


def test_a_quota_that_leaves_an_advertised_slice_out_is_found(prod_plan: Plan) -> None:
    del hard(prod_plan, "ml-training")["requests.nvidia.com/mig-1g.10gb"]

    assert quota_problems(prod_plan, PROD) == [
        "namespace ml-training: requests.nvidia.com/mig-1g.10gb of pool a100-canary uncapped",
        "namespace ml-training: requests.nvidia.com/mig-1g.10gb of pool a100-inference uncapped",
    ]


def test_a_gpu_cap_above_gpu_quota_beside_whole_gpus_is_found(prod_plan: Plan) -> None:
    hard(prod_plan, "ml-inference")["requests.nvidia.com/gpu"] = "1"

    assert quota_problems(prod_plan, PROD) == [
        "namespace ml-inference: requests.nvidia.com/gpu 1 lets pods take more whole GPUs of"
        " h100-training than gpuQuota 0"
    ]
