"""A created cluster's versions once it exists: GKE upgrades a cluster in a release channel
itself (container.v1 `ReleaseChannel`: "Node auto-upgrade defaults to true and cannot be
disabled"), so the driver and CUDA labels of its GPU pools follow the version the nodes run,
read back as in attach mode, and not the `kubernetesVersion` the cluster was created at. Before
the cluster exists, the lookup fails as terraform-provider-google's data source does
(`datasourceContainerClusterRead`: "<id> not found") and the created version stands.

COS's default driver for L4 on GKE 1.33 is R535, CUDA 12.2 (GKE, "Run GPUs in GKE Standard node
pools"); GKE publishes no such table from 1.34 on, and the lock gives it there."""

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gpu_platform.lock.lockfile import LOCK_PATH_VARIABLE, MissingLockEntry
from gpu_platform.offline.program import Plan
from gpu_platform.offline.stand_ins import gcp as stand_in
from tests.cos_sources import MAP_PATH, published_files, serving

from ..conftest import LOCKED_L4_LABELS, Files, lock_gke_dev
from ..plans import GET_CLUSTER, problems_of
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
    assert plan.error.what.endswith(
        f". Pool l4-shared is at GKE {LATEST_PATCH['1.34']} (the version its nodes run), a"
        " version GKE chose: where GKE moved the cluster there since the lock was last"
        " refreshed, the daily refresh proposes the entry in a pull request from the branch"
        " gpu-platform-lock/refresh"
    )


def test_nodes_still_on_the_created_version_keep_its_driver(
    gke_new_config: Config, plan_for: Callable[[Config], Plan], created_answer: Config
) -> None:
    upgraded_by_gke(created_answer, LATEST_PATCH["1.34"], LATEST_PATCH["1.33"])

    assert driver_labels(plan_for(gke_new_config)) == ("535", "12.2")


def at_minor(gke_new_config: Config, minor: str) -> Config:
    gke_new_config["gpu-platform:cluster"]["create"]["kubernetesVersion"] = minor
    return gke_new_config


@pytest.mark.parametrize(("minor", "labels"), sorted(LOCKED_L4_LABELS.items()))
def test_a_cluster_created_at_a_later_minor_takes_the_default_its_versions_agree_on(
    locked: Files,
    gke_new_config: Config,
    plan_for: Callable[[Config], Plan],
    minor: str,
    labels: tuple[str, str],
) -> None:
    assert driver_labels(plan_for(at_minor(gke_new_config, minor))) == labels


def lock_with_a_second_1_35_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, listed: bool = True
) -> None:
    """Lock gke-dev where the map lists 1.35.7-gke.1000 on the 1.34 build (R570) beside
    1.35.6-gke.1163000 (R580); with `listed` False, the map drops it again before a refresh."""
    monkeypatch.setenv(LOCK_PATH_VARIABLE, str(tmp_path / "gpu-platform.lock"))
    files = published_files()
    original = files[MAP_PATH]
    published = json.loads(original)
    published["entries"].append({"gke_version": "1.35.7-gke.1000", "image": "cos-121-18867-199-28"})
    files[MAP_PATH] = json.dumps(published).encode()
    with serving(files, monkeypatch):
        lock_gke_dev(monkeypatch)
        if not listed:
            files[MAP_PATH] = original
            lock_gke_dev(monkeypatch)


@pytest.fixture
def differing_1_35(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lock_with_a_second_1_35_version(tmp_path, monkeypatch)


def at_1_35_stating(gke_new_config: Config, branch: int) -> Config:
    config = at_minor(gke_new_config, "1.35")
    config["gpu-platform:pools"][0].setdefault("gcp", {})["cosDriverBranch"] = branch
    return config


def test_a_cluster_created_at_a_minor_whose_versions_differ_must_pin_one_or_state_a_branch(
    differing_1_35: None, gke_new_config: Config, failed_plan_for: Callable[[Config], Plan]
) -> None:
    # GKE creates it at its channel's default 1.35 patch: R580 on one, R570 on another. A
    # version is pinned only outside a release channel (gpu_platform/config: `gcp.version`
    # with `releaseChannel: none`).
    problems = problems_of(failed_plan_for(at_minor(gke_new_config, "1.35")))

    assert problems["gpu-platform:pools[0].gcp.cosDriverBranch"] == (
        "the NVIDIA driver branch that COS loads for l4 on GKE 1.35 (the cluster's version, at"
        " which GKE creates it): COS's default differs between the GKE 1.35 versions"
        " gke-to-cos.json lists (1.35.6-gke.1163000: 580.95.05; 1.35.7-gke.1000: 570.195.03),"
        " and GKE creates the cluster at its channel's default 1.35 version, which a plan cannot"
        " know: set `cluster.create.gcp.releaseChannel` to none and `cluster.create.gcp.version`"
        " to one of them, or state the branch in gcp.cosDriverBranch (one of 570, 580, the"
        " branches they load). `nvidia-smi` on such a node shows it, and the smoke test checks it"
    )


def test_a_stated_branch_one_of_the_minors_versions_loads_is_taken(
    differing_1_35: None, gke_new_config: Config, plan_for: Callable[[Config], Plan]
) -> None:
    # CUDA_BY_DRIVER_BRANCH: R570 runs CUDA 12.8.
    assert driver_labels(plan_for(at_1_35_stating(gke_new_config, 570))) == ("570", "12.8")


def test_a_stated_branch_none_of_the_minors_versions_loads_is_refused(
    differing_1_35: None, gke_new_config: Config, failed_plan_for: Callable[[Config], Plan]
) -> None:
    problems = problems_of(failed_plan_for(at_1_35_stating(gke_new_config, 535)))

    assert problems["gpu-platform:pools[0].gcp.cosDriverBranch"] == (
        "one of 570, 580: the branches COS loads for l4 on the GKE 1.35 versions gke-to-cos.json"
        " lists (the cluster's version, at which GKE creates it; gpu-platform.lock), at one of"
        " which GKE creates the cluster"
    )


def test_a_version_the_map_dropped_no_longer_decides_a_new_clusters_default(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    gke_new_config: Config,
    plan_for: Callable[[Config], Plan],
) -> None:
    # The lock keeps 1.35.7-gke.1000 for clusters that run it, but no channel creates a
    # cluster at it any longer: 1.35.6-gke.1163000 alone decides (R580, CUDA 13.0).
    lock_with_a_second_1_35_version(tmp_path, monkeypatch, listed=False)

    assert driver_labels(plan_for(at_minor(gke_new_config, "1.35"))) == LOCKED_L4_LABELS["1.35"]


@pytest.mark.parametrize("minor", ["1.34", "1.35", "1.36"])
def test_a_cluster_created_at_a_later_minor_without_a_lock_names_the_minors_entry(
    gke_new_config: Config, failed_plan_for: Callable[[Config], Plan], minor: str
) -> None:
    plan = failed_plan_for(at_minor(gke_new_config, minor))

    assert isinstance(plan.error, MissingLockEntry)
    assert plan.error.entry_name == f'gke_listed_versions["{minor}"]'
