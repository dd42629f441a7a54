"""A reserved Karpenter pool's on-demand fallback never outranks a smaller on-demand pool."""

import copy
from collections.abc import Callable
from typing import Any

import pytest

from gpu_platform.cli.stack_files import stack_config
from gpu_platform.config import ConfigError, StackConfig, load_stack_config
from tests.conftest import Config
from tests.repository import PROJECT

FALLBACK = "gpu-platform:pools[1].aws.onDemandFallback"


def karpenter_dev() -> Config:
    """karpenter-dev, whose pools[1] is l4-reserved (fallback on) and pools[3] l4-on-demand
    ([g6.xlarge, g6.12xlarge])."""
    return copy.deepcopy(dict(stack_config("karpenter-dev", PROJECT)))


def loaded(values: Config) -> StackConfig:
    return load_stack_config(
        {k.removeprefix("gpu-platform:"): v for k, v in values.items() if k.startswith("gpu-")}
    )


def test_a_fallback_of_a_larger_size_than_an_on_demand_pools_is_refused() -> None:
    # With the reservation full, Karpenter finds no compatible reserved offering and raises no
    # ReservedOfferingError (`offeringsToReserve`, kubernetes-sigs/karpenter
    # pkg/controllers/provisioning/scheduling/nodeclaim.go at v1.14.1), so `addToNewNodeClaim`
    # (scheduler.go) keeps the first NodePool by weight that fits: l4-reserved's 30 before
    # l4-on-demand's 20, and a 1-GPU pod would start an on-demand g6.12xlarge (4 L4s).
    values = karpenter_dev()
    values["gpu-platform:pools"][1]["instanceTypes"] = ["g6.12xlarge"]

    with pytest.raises(ConfigError) as raised:
        loaded(values)

    assert {p.path: p.expected for p in raised.value.problems} == {
        FALLBACK: "false or no value beside on-demand pool l4-on-demand"
        " (gpu-platform:pools[3].instanceTypes: g6.xlarge) under provisioner karpenter: with the"
        " reservation full, Karpenter keeps this pool, which outranks it, and launches this"
        " pool's g6.12xlarge on demand for pods l4-on-demand's smaller sizes fit (scheduler.go"
        " addToNewNodeClaim, kubernetes-sigs/karpenter v1.14.1). Without the fallback Karpenter"
        " moves on to l4-on-demand; or add g6.xlarge to gpu-platform:pools[1].instanceTypes, so"
        " that the fallback launches the cheapest size that fits"
    }


def no_fallback(pools: list[dict[str, Any]]) -> None:
    # A full reservation leaves the pool no offering, and Karpenter moves on to l4-on-demand.
    pools[1]["aws"].pop("onDemandFallback")
    pools[1]["instanceTypes"] = ["g6.12xlarge"]


def on_demand_of_another_family(pools: list[dict[str, Any]]) -> None:
    # g6e (L40S) has no size of g6, smaller or not.
    pools[1]["instanceTypes"] = ["g6.12xlarge"]
    pools[3].update(instanceTypes=["g6e.xlarge"], accelerator="l40s")


@pytest.mark.parametrize("change", [no_fallback, on_demand_of_another_family])
def test_a_fallback_without_a_smaller_on_demand_pool_beside_it_is_accepted(
    change: Callable[[list[dict[str, Any]]], None],
) -> None:
    # karpenter-dev itself lists g6.xlarge in l4-reserved: its fallback launches the cheapest
    # size that fits (EC2 Fleet's lowest-price, aws/karpenter-provider-aws
    # pkg/providers/instance/types.go at v1.14.1); the stack's plans load it.
    values = karpenter_dev()
    change(values["gpu-platform:pools"])

    loaded(values)
