"""What the lookups settle for a pool before anything is created, where the provisioner makes a
difference: a managed node group plans from one instance type, a Karpenter NodePool from each
type it allows."""

import copy
from collections.abc import Callable
from typing import Any

import pytest

from gpu_platform.config import ConfigError
from gpu_platform.offline.program import Plan
from gpu_platform.stack_files import stack_config
from tests.repository import PROJECT

Config = dict[str, Any]
PlanFor = Callable[[Config], Plan]
NODE_POOL = "kubernetes:karpenter.sh/v1:NodePool"


@pytest.fixture
def karpenter_config() -> Config:
    return copy.deepcopy(stack_config("karpenter-dev", PROJECT))


def pool_named(config: Config, name: str) -> Config:
    return next(p for p in config["gpu-platform:pools"] if p["name"] == name)


def test_a_karpenter_pool_may_offer_sizes_of_one_gpu_model(
    karpenter_config: Config, plan_for: PlanFor
) -> None:
    pool = pool_named(karpenter_config, "l4-on-demand")
    pool["instanceTypes"] = ["g6.xlarge", "g6.12xlarge", "g6.48xlarge"]

    node_pool = plan_for(karpenter_config).named("l4-on-demand", NODE_POOL)

    assert node_pool.inputs["spec"]["template"]["spec"]["requirements"][0]["values"] == [
        "g6.xlarge",
        "g6.12xlarge",
        "g6.48xlarge",
    ]


def test_a_karpenter_pools_gpu_limit_is_max_nodes_of_its_largest_size(
    karpenter_config: Config, plan_for: PlanFor
) -> None:
    pool = pool_named(karpenter_config, "l4-on-demand")
    # EC2: g6.xlarge has 1 L4, g6.48xlarge 8.
    pool["instanceTypes"] = ["g6.xlarge", "g6.48xlarge"]
    pool["max"] = 3

    node_pool = plan_for(karpenter_config).named("l4-on-demand", NODE_POOL)

    # And 3 nodes, of at most 192 vCPUs each (the g6.48xlarge's).
    assert node_pool.inputs["spec"]["limits"] == {
        "nvidia.com/gpu": "24",
        "cpu": "576",
        "nodes": "3",
    }


def test_a_karpenter_pool_of_two_gpu_models_is_refused(
    karpenter_config: Config, plan_for: PlanFor
) -> None:
    pool = pool_named(karpenter_config, "l4-on-demand")
    pool.pop("accelerator")
    pool["instanceTypes"] = ["g6.xlarge", "g5.xlarge"]

    with pytest.raises(ConfigError) as error:
        plan_for(karpenter_config)

    (problem,) = error.value.problems
    assert problem.path == "gpu-platform:pools[3].instanceTypes"
    assert problem.expected.startswith("instance types of one GPU model and CPU architecture")
    assert "g5.xlarge: 1 x NVIDIA A10G" in problem.expected


def test_gpus_per_node_on_a_karpenter_pool_of_several_sizes_is_refused(
    karpenter_config: Config, plan_for: PlanFor
) -> None:
    pool = pool_named(karpenter_config, "l4-on-demand")
    pool["gpusPerNode"] = 1

    with pytest.raises(ConfigError) as error:
        plan_for(karpenter_config)

    (problem,) = error.value.problems
    assert problem.path == "gpu-platform:pools[3].gpusPerNode"
    assert problem.expected == "4, the GPUs of g6.12xlarge (or leave it out)"


def test_a_node_group_pool_of_several_sizes_is_still_refused(plan_for: PlanFor) -> None:
    config = copy.deepcopy(stack_config("dev", PROJECT))
    config["gpu-platform:pools"][0]["instanceTypes"] = ["g4dn.xlarge", "g4dn.12xlarge"]
    config["gpu-platform:pools"][0].pop("gpusPerNode", None)

    with pytest.raises(ConfigError) as error:
        plan_for(config)

    assert any("the same GPUs, vCPUs, memory" in p.expected for p in error.value.problems)
