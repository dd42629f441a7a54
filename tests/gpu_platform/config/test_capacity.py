"""How the pools rank for a pod that fits several: `pool_preference`, which the cluster
autoscaler's priority expander and Karpenter's NodePool weights both take."""

import pytest

from gpu_platform.config import GpuPoolSpec, pool_preference


def pool(**fields: object) -> GpuPoolSpec:
    return GpuPoolSpec.model_validate(
        {"name": "p", "instanceTypes": ["g6.xlarge"], "max": 2, **fields}
    )


@pytest.mark.parametrize(
    ("capacity", "rank"),
    [("capacity-block", 40), ("reserved", 30), ("on-demand", 20), ("spot", 10)],
)
def test_a_pool_ranks_by_its_capacity(capacity: str, rank: int) -> None:
    assert pool_preference(pool(capacity=capacity)) == rank


@pytest.mark.parametrize("capacity", ["reserved", "on-demand", "spot"])
def test_a_canary_ranks_below_every_pool_whatever_its_capacity(capacity: str) -> None:
    # A canary of a reserved pool ranked from its pool (29) would outrank an on-demand pool of
    # the same GPUs (20), and a pod that selects no canary would start on the release not proven
    # yet while that pool could grow.
    canary = pool(capacity=capacity, canaryOf="l4")

    assert pool_preference(canary) == 5
    assert pool_preference(canary) < min(
        pool_preference(pool(capacity=c)) for c in ("reserved", "on-demand", "spot")
    )
