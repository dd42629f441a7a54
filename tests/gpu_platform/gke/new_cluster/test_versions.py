"""A created cluster's versions once it exists: GKE upgrades a cluster in a release channel
itself (container.v1 `ReleaseChannel`: "Node auto-upgrade defaults to true and cannot be
disabled"), so the driver and CUDA labels of its GPU pools follow the version the nodes run,
read back as in attach mode, and not the `kubernetesVersion` the cluster was created at. Before
the cluster exists, the lookup fails as terraform-provider-google's data source does
(`datasourceContainerClusterRead`: "<id> not found") and the created version stands.

COS's default driver for L4 on GKE 1.33 is R535, CUDA 12.2 (GKE, "Run GPUs in GKE Standard node
pools"); GKE publishes no such table from 1.34 on, and the lock gives it there."""

from collections.abc import Callable
from typing import Any

import pytest

from gpu_platform.cli.offline import Plan
from gpu_platform.cli.stand_ins import gcp as stand_in
from gpu_platform.lock.lockfile import MissingLockEntry

from ..plans import GET_CLUSTER
from ..test_node_driver import LATEST_PATCH, driver_labels

Config = dict[str, Any]


@pytest.fixture
def created_answer(monkeypatch: pytest.MonkeyPatch) -> Config:
    """The lookup's answer once the cluster exists, to be changed by the test."""
    changes: Config = {}
    monkeypatch.setitem(
        stand_in.INVOKES, GET_CLUSTER, lambda args: stand_in.existing_cluster(args) | changes
    )
    return changes


def upgraded_by_gke(answer: Config, control_plane: str, nodes: str) -> None:
    answer["masterVersion"] = control_plane
    answer["nodePools"] = [
        {
            "name": "l4-shared-5f0e2a1",
            "version": nodes,
            "nodeConfigs": [{"resourceLabels": {"gpu-platform-pool": "l4-shared"}}],
        }
    ]


def test_before_the_cluster_exists_pools_follow_the_version_it_is_created_at(
    gke_new_plan: Plan,
) -> None:
    (lookup,) = [i for i in gke_new_plan.invokes if i.token == GET_CLUSTER]

    assert lookup.result == {}  # not found
    assert driver_labels(gke_new_plan) == ("535", "12.2")


def test_once_gke_upgraded_the_nodes_their_labels_follow_the_nodes_version(
    gke_new_config: Config, failed_plan_for: Callable[[Config], Plan], created_answer: Config
) -> None:
    # Created at 1.33; the stable channel has since moved control plane and nodes to 1.34,
    # whose COS driver only the lock gives: the plan asks for it rather than keep 1.33's labels.
    upgraded_by_gke(created_answer, LATEST_PATCH["1.34"], LATEST_PATCH["1.34"])

    plan = failed_plan_for(gke_new_config)

    assert isinstance(plan.error, MissingLockEntry)
    assert plan.error.entry_name == f'gke_cos_images["{LATEST_PATCH["1.34"]}"]'


def test_nodes_still_on_the_created_version_keep_its_driver(
    gke_new_config: Config, plan_for: Callable[[Config], Plan], created_answer: Config
) -> None:
    upgraded_by_gke(created_answer, LATEST_PATCH["1.34"], LATEST_PATCH["1.33"])

    assert driver_labels(plan_for(gke_new_config)) == ("535", "12.2")
