"""How long an update of a node group or node pool may take, on literal pools.

Each expected duration is worked out by hand from the per-node durations and their sources:
- EKS (user guide, managed-node-update-behavior): a scale-up, then per batch a drain of at most
  15 minutes ("If the Pods don't leave the node within 15 minutes ... PodEvictionFailure"),
  60 seconds after the cordon, and the replacement's start;
- GKE: a drain honours disruption budgets for at most an hour; at most 20 nodes at once
  (terraform-provider-google `resource_container_node_pool.go`, `upgrade_settings`);
- a node's start: the platform's allowance of 15 minutes;
- the providers' defaults: 60 minutes (terraform-provider-aws
  `internal/service/eks/node_group.go`) and 30 (terraform-provider-google
  `resource_container_node_pool.go`), both `Timeouts.Update`.
"""

from datetime import timedelta

import pytest

from gpu_platform.rollout_timeouts import (
    batches,
    eks_rollout,
    eks_update_timeout,
    gke_blue_green_rollout,
    gke_surge_rollout,
    gke_update_timeout,
)


def minutes(value: int) -> timedelta:
    return timedelta(minutes=value)


@pytest.mark.parametrize(
    ("nodes", "batch", "zones", "expected"),
    [
        (8, 1, 1, 8),
        (10, 3, 1, 4),
        # Three zones of two nodes, two at a time: a round per zone at least.
        (6, 2, 3, 5),
        # Never more rounds than nodes.
        (3, 1, 3, 3),
        (0, 1, 1, 0),
    ],
)
def test_rounds_of_a_rollout(nodes: int, batch: int, zones: int, expected: int) -> None:
    assert batches(nodes, batch, zones) == expected


def test_an_eks_pool_of_eight_one_node_at_a_time() -> None:
    # 15 (scale-up) + 8 x (15 drain + 1 cordon wait + 15 start) = 263 minutes; x 1.25 = 328.75.
    assert eks_rollout(8, 1, None) == minutes(263)
    assert eks_update_timeout(8, 1, None).update == "329m"


def test_an_eks_pool_replacing_a_percentage_rounds_its_batch_down() -> None:
    # EKS takes the percentage of the group as it is (any size up to max) and states no rounding
    # (botocore eks 2017-11-01 `NodegroupUpdateConfig.maxUnavailablePercentage`): rounded down,
    # at least one. 25% of 10 is a batch of 2, 5 rounds; of 7, 1.75 nodes: a batch of 1, 7
    # rounds: 15 + 7 x 31 = 232 minutes.
    assert eks_rollout(10, 1, 25) == minutes(232)


@pytest.mark.parametrize(
    ("max_size", "percent", "longest", "timeout"),
    [
        # At 20 nodes 10% is 2 a round, 10 rounds (325 minutes); at 19 it is 1.9: one a round,
        # 19 rounds: 15 + 19 x 31 = 604 minutes, x 1.25 = 755.
        (20, 10, 604, "755m"),
        # At 8 nodes 25% is 2 a round, 4 rounds; at 7 it is 1.75: 7 rounds, 15 + 7 x 31 = 232
        # minutes, x 1.25 = 290.
        (8, 25, 232, "290m"),
    ],
)
def test_an_eks_percentage_rollout_is_longest_at_the_size_that_rounds_to_the_fewest(
    max_size: int, percent: int, longest: int, timeout: str
) -> None:
    assert eks_rollout(max_size, None, percent) == minutes(longest)
    assert eks_update_timeout(max_size, None, percent).update == timeout


def test_an_eks_batch_is_at_least_one_node_and_at_most_eks_quota() -> None:
    # 1% of 8 rounds to none: one node at a time.
    assert eks_rollout(8, 1, 1) == minutes(263)
    # 200 nodes at 100%: batches of 100 (EKS's quota), 2 rounds: 15 + 2 x 31.
    assert eks_rollout(200, 1, 100) == minutes(77)


def test_a_short_eks_rollout_keeps_the_providers_default() -> None:
    # One node: 15 + 31 = 46 minutes, x 1.25 = 57.5: below the provider's 60.
    assert eks_update_timeout(1, 1, None).update == "60m"


def test_a_gke_surge_pool_of_eight_one_node_at_a_time() -> None:
    # 8 rounds of (15 start + 60 drain) = 600 minutes; x 1.25 = 750.
    assert gke_surge_rollout(8, 1, 1, 0) == minutes(600)
    assert gke_update_timeout([minutes(600)]).update == "750m"


def test_a_gke_pool_waits_through_every_pool_of_its_cluster() -> None:
    # GKE runs one node pool operation at a time; terraform-provider-google retries an update
    # that meets another within that update's own timeout (resource_container_node_pool.go,
    # `RetryWhileIncompatibleOperation(timeout, ...)`): a pool of 600 minutes after one of 450
    # waits 1050, x 1.25 = 1312.5.
    assert gke_update_timeout([minutes(600), minutes(450)]).update == "1313m"


def test_a_gke_surge_upgrades_at_most_twenty_nodes_at_once() -> None:
    # 25 + 5 asked, 20 taken: 40 nodes in 2 rounds of 75 minutes.
    assert gke_surge_rollout(40, 1, 25, 5) == minutes(150)


def test_a_gke_surge_over_zones_counts_a_partial_round_per_zone() -> None:
    # 6 nodes over 3 zones, 2 at a time: 5 rounds of 75 minutes.
    assert gke_surge_rollout(6, 3, 2, 0) == minutes(375)


def test_a_gke_blue_green_pool_waits_drains_each_node_and_soaks() -> None:
    # 15 start + 24 h wait + 4 nodes x 1 h drain + 2 h soak.
    assert gke_blue_green_rollout(4, timedelta(hours=24), timedelta(hours=2)) == timedelta(
        hours=30, minutes=15
    )


def test_a_gke_blue_green_pool_without_a_soak_counts_an_hour_for_gkes() -> None:
    # Standard rollout: 15 start + 4 x 1 h drain + 1 h for GKE's unstated default soak.
    assert gke_blue_green_rollout(4, None, None) == timedelta(hours=5, minutes=15)


def test_a_pool_of_no_nodes_keeps_the_providers_default() -> None:
    assert gke_update_timeout([gke_blue_green_rollout(0, None, None)]).update == "30m"
