"""A reserved Karpenter pool's on-demand fallback never outranks a cheaper pool of its GPU model:
sizes compared by GPUs, vCPUs and memory from EC2's instance type data (as moto ships it), pools
by the GPU model that data gives."""

import copy
from collections.abc import Callable, Sequence
from typing import Any

from gpu_platform.config import ConfigError, StackConfig, load_stack_config
from gpu_platform.eks.instance_types import InstanceType, pool_instance_type_names
from gpu_platform.eks.karpenter.fallback_order import fallback_order_problems
from gpu_platform.stack_files import stack_config
from tests.conftest import Config
from tests.repository import PROJECT

from .test_instance_types import described

FALLBACK = "gpu-platform:pools[1].aws.onDemandFallback"


def karpenter_dev(**pools: Any) -> Config:
    """karpenter-dev, whose pools[1] is l4-reserved (fallback on), pools[2] t4-spot and pools[3]
    l4-on-demand, with `pools` ("1": fields) changed."""
    values = copy.deepcopy(dict(stack_config("karpenter-dev", PROJECT)))
    for index, fields in pools.items():
        values["gpu-platform:pools"][int(index)].update(fields)
    return values


def loaded(values: Config) -> StackConfig:
    return load_stack_config(
        {k.removeprefix("gpu-platform:"): v for k, v in values.items() if k.startswith("gpu-")}
    )


def sizes(config: StackConfig) -> dict[str, Sequence[InstanceType]]:
    """Each pool's sizes as the placement finds them: a pool of families or categories takes
    those of its GPU model."""
    return {
        pool.name: [
            t
            for t in map(described, pool_instance_type_names(pool))
            if t.accelerator == pool.accelerator
        ]
        for pool in config.pools
    }


def problems(values: Config, change: Callable[[StackConfig], Any] = lambda c: None) -> dict:
    config = loaded(values)
    change(config)
    return {p.path: p.expected for p in fallback_order_problems(config, sizes(config))}


def test_a_fallback_of_more_gpus_than_a_larger_named_on_demand_size_is_refused() -> None:
    # With the reservation full, Karpenter finds no compatible reserved offering and raises no
    # ReservedOfferingError (`offeringsToReserve`, kubernetes-sigs/karpenter
    # pkg/controllers/provisioning/scheduling/nodeclaim.go at v1.14.1), so `addToNewNodeClaim`
    # (scheduler.go) keeps the first NodePool by weight that fits: l4-reserved's 30 before
    # l4-on-demand's 20. EC2: g6.16xlarge has 1 L4, 64 vCPUs; g6.12xlarge 4 L4s, 48 vCPUs.
    values = karpenter_dev(
        **{"1": {"instanceTypes": ["g6.12xlarge"]}, "3": {"instanceTypes": ["g6.16xlarge"]}}
    )

    assert problems(values) == {
        FALLBACK: "false or no value beside on-demand pool l4-on-demand"
        " (gpu-platform:pools[3].instanceTypes: g6.16xlarge, of which g6.16xlarge cost less than"
        " this pool's g6.12xlarge, 4 GPU(s)) under provisioner karpenter: with the reservation"
        " full, Karpenter keeps this pool, which outranks it, and launches its sizes on demand"
        " for pods g6.16xlarge fit (scheduler.go addToNewNodeClaim, kubernetes-sigs/karpenter"
        " v1.14.1). Without the fallback Karpenter moves on to l4-on-demand; or add g6.16xlarge"
        " to gpu-platform:pools[1].instanceTypes, so that the fallback launches the cheapest"
        " size that fits"
    }


def test_a_fallback_of_fewer_gpus_than_a_smaller_named_on_demand_size_is_accepted() -> None:
    # A g6.16xlarge (1 L4) is no dearer for a pod than a g6.12xlarge (4 L4s) is.
    values = karpenter_dev(
        **{"1": {"instanceTypes": ["g6.16xlarge"]}, "3": {"instanceTypes": ["g6.12xlarge"]}}
    )

    assert problems(values) == {}


def test_karpenter_dev_and_a_pool_without_the_fallback_are_accepted() -> None:
    # karpenter-dev lists l4-on-demand's sizes in l4-reserved: its fallback launches the
    # cheapest that fits (EC2 Fleet's lowest-price, aws/karpenter-provider-aws
    # pkg/providers/instance/types.go at v1.14.1). Without the fallback a full reservation
    # leaves the pool no offering, and Karpenter moves on to l4-on-demand.
    assert problems(karpenter_dev()) == {}
    values = karpenter_dev(**{"1": {"instanceTypes": ["g6.12xlarge"]}})
    values["gpu-platform:pools"][1]["aws"].pop("onDemandFallback")
    assert problems(values) == {}


def test_the_same_gpu_in_another_family_is_compared() -> None:
    # EC2: gr6.4xlarge has 1 L4, as g6 does.
    values = karpenter_dev(
        **{"1": {"instanceTypes": ["g6.12xlarge"]}, "3": {"instanceTypes": ["gr6.4xlarge"]}}
    )

    assert "gr6.4xlarge cost less" in problems(values)[FALLBACK]


def test_another_gpu_model_is_not_compared() -> None:
    values = karpenter_dev(
        **{
            "1": {"instanceTypes": ["g6.12xlarge"]},
            "3": {"instanceTypes": ["g6e.xlarge"], "accelerator": "l40s"},
        }
    )

    assert problems(values) == {}


def test_a_spot_pool_of_the_gpu_model_is_compared() -> None:
    # Spot's weight (10) is below reserved's (30) too.
    values = karpenter_dev(
        **{
            "1": {"instanceTypes": ["g6.12xlarge"]},
            "2": {"instanceTypes": ["g6.xlarge"], "accelerator": "l4"},
            "3": {"instanceTypes": ["g6e.xlarge"], "accelerator": "l40s"},
        }
    )

    assert problems(values)[FALLBACK].startswith(
        "false or no value beside spot pool t4-spot (gpu-platform:pools[2].instanceTypes:"
        " g6.xlarge, of which g6.xlarge have no more GPUs"
    )


def test_a_spot_size_the_reserved_pool_also_lists_is_refused_with_the_spot_pools_fallback() -> None:
    # With the reservation full, l4-reserved (30) still outranks the spot pool (10) and launches
    # g6.xlarge on demand (`addToNewNodeClaim`, kubernetes-sigs/karpenter scheduler.go at
    # v1.14.1). A NodePool that takes spot and on-demand launches spot first (Karpenter's
    # docs at v1.14, concepts/nodepools.md, "Capacity Type"), so the spot pool's own
    # fallback is the way out. A larger spot size is a pod's dearer choice, and not compared.
    values = karpenter_dev(
        **{
            "1": {"instanceTypes": ["g6.xlarge", "g6.12xlarge"]},
            "2": {"instanceTypes": ["g6.xlarge", "g6.24xlarge"], "accelerator": "l4"},
            "3": {"instanceTypes": ["g6e.xlarge"], "accelerator": "l40s"},
        }
    )

    assert problems(values) == {
        FALLBACK: "false or no value beside spot pool t4-spot (gpu-platform:pools[2].instanceTypes:"
        " g6.xlarge, g6.24xlarge, of which g6.xlarge have no more GPUs, vCPUs or memory than this"
        " pool's g6.12xlarge, 4 GPU(s)) under provisioner karpenter: with the reservation full,"
        " Karpenter keeps this pool, which outranks it, and launches its sizes on demand for pods"
        " g6.xlarge fit (scheduler.go addToNewNodeClaim, kubernetes-sigs/karpenter v1.14.1)."
        " Without the fallback Karpenter moves on to t4-spot and starts them as spot nodes. The"
        " fallback outranks spot pools of the same sizes too, so listing them here would launch"
        " them on demand while spot has room; for on-demand once spot has none, set"
        " gpu-platform:pools[2].aws.onDemandFallback: true instead (a NodePool launches spot"
        " before on-demand)"
    }
    values["gpu-platform:pools"][1]["instanceTypes"] = ["g6.xlarge"]
    values["gpu-platform:pools"][2]["instanceTypes"] = ["g6.24xlarge"]
    assert problems(values) == {}


def test_a_spot_size_of_no_more_than_the_reserved_pools_only_size_is_refused() -> None:
    # The same shape on both sides: the fallback starts it on demand while spot has room.
    values = karpenter_dev(
        **{
            "1": {"instanceTypes": ["g6.xlarge"]},
            "2": {"instanceTypes": ["g6.xlarge"], "accelerator": "l4"},
            "3": {"instanceTypes": ["g6e.xlarge"], "accelerator": "l40s"},
        }
    )

    assert problems(values)[FALLBACK].startswith(
        "false or no value beside spot pool t4-spot (gpu-platform:pools[2].instanceTypes:"
        " g6.xlarge, of which g6.xlarge have no more GPUs"
    )


def test_a_spot_size_an_outranking_on_demand_pool_offers_too_is_not_held_against_it() -> None:
    # Without the fallback Karpenter moves on to l4-on-demand (weight 20) before t4-spot (10)
    # (`CAPACITY_PREFERENCE`; `addToNewNodeClaim`, scheduler.go at v1.14.1) and starts the same
    # g6.xlarge on demand: the fallback starts nothing dearer.
    values = karpenter_dev(
        **{
            "1": {"instanceTypes": ["g6.xlarge", "g6.12xlarge"]},
            "2": {"instanceTypes": ["g6.xlarge"], "accelerator": "l4"},
            "3": {"instanceTypes": ["g6.xlarge"]},
        }
    )

    assert problems(values) == {}


def test_an_on_demand_pool_of_a_family_is_compared_by_its_sizes() -> None:
    # EC2 offers g6.xlarge (1 L4) among g6's sizes.
    values = karpenter_dev(**{"1": {"instanceTypes": ["g6.12xlarge"]}})
    values["gpu-platform:pools"][3].pop("instanceTypes")
    values["gpu-platform:pools"][3]["aws"]["instanceFamilies"] = ["g6"]

    found = problems(values)[FALLBACK]

    assert "(gpu-platform:pools[3].aws.instanceFamilies: g6, of which g6.16xlarge" in found
    assert "g6.xlarge" in found


def test_a_reserved_pool_of_a_family_names_the_family_to_add() -> None:
    values = karpenter_dev(**{"3": {"instanceTypes": ["gr6.4xlarge"]}})
    values["gpu-platform:pools"][1].pop("instanceTypes")
    values["gpu-platform:pools"][1]["aws"]["instanceFamilies"] = ["g6"]

    assert "or add gr6 to gpu-platform:pools[1].aws.instanceFamilies" in problems(values)[FALLBACK]
    # Its own family's sizes are all its own.
    values["gpu-platform:pools"][3]["instanceTypes"] = ["g6.xlarge", "g6.16xlarge"]
    assert problems(values) == {}


def test_a_canary_pool_is_not_compared() -> None:
    # A canary ranks below every other pool (`CANARY_PREFERENCE`) and takes only the pods that
    # tolerate its taint.
    values = karpenter_dev(**{"1": {"instanceTypes": ["g6.12xlarge"]}})

    def canary(config: StackConfig) -> None:
        config.pools[3] = config.pools[3].model_copy(update={"canary_of": "l4-reserved"})

    assert problems(values, canary) == {}


def test_the_plan_refuses_the_fallback_before_registering_anything(failed_plan_for) -> None:
    plan = failed_plan_for(karpenter_dev(**{"1": {"instanceTypes": ["g6.12xlarge"]}}))

    assert isinstance(plan.error, ConfigError)
    assert [p.path for p in plan.error.problems] == [FALLBACK]
    assert plan.resources == []
