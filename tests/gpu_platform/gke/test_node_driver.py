"""The driver and CUDA labels of a GKE pool's nodes, from the nodes' own GKE version and GPU
(mocked program, with the stand-in control plane at each supported version)."""

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pulumi
import pytest
from typer.testing import CliRunner

from gpu_platform.cli.app import app
from gpu_platform.lock.lockfile import LOCK_PATH_VARIABLE, MissingLockEntry
from gpu_platform.offline.program import Plan
from gpu_platform.offline.stand_ins import gcp as stand_in
from gpu_platform.versions import SUPPORTED_KUBERNETES_VERSIONS
from tests.gpu_platform.test_cluster_facts import GKE_PROGRAM, previewed
from tests.repository import ROOT

from .conftest import LOCKED_L4_LABELS, Files
from .plans import GET_CLUSTER, node_pool, problems_of, with_cluster, with_pool

Config = dict[str, Any]
PlanFor = Callable[[Config], Plan]
BRANCH_KEY = "gpu-platform:pools[0].gcp.cosDriverBranch"
# A region without stand-in zone offerings: its three zones offer every GPU machine type.
EVERY_MACHINE_TYPE = "asia-southeast1"
LATEST_PATCH = {
    "1.33": "1.33.5-gke.1201000",
    "1.34": "1.34.1-gke.1829001",
    "1.35": "1.35.6-gke.1163000",
    "1.36": "1.36.2-gke.1045000",
}
"""A GKE version of each supported minor for the stand-in control plane."""


def driver_labels(plan: Plan) -> tuple[str, str]:
    labels = node_pool(plan).inputs["nodeConfig"]["labels"]
    return labels["gpu-platform.io/nvidia-driver"], labels["gpu-platform.io/cuda"]


def on_machine(config: Config, machine_type: str) -> Config:
    """The fixture's pool on another GPU machine type, with whole GPUs."""
    with_cluster(config, location=EVERY_MACHINE_TYPE)
    pool = config["gpu-platform:pools"][0]
    for key in ("accelerator", "gpusPerNode"):
        pool.pop(key)
    return with_pool(
        config, instanceTypes=[machine_type], capacity="on-demand", sharing={"mode": "exclusive"}
    )


def test_every_supported_gke_version_has_a_table_entry() -> None:
    # Each stand-in control plane version below is one of them.
    assert sorted(LATEST_PATCH) == sorted(SUPPORTED_KUBERNETES_VERSIONS)


def test_a_new_pool_on_a_gke_1_33_control_plane_runs_coss_r535(
    gke_config: Config, plan_for: PlanFor, cluster_answer: Config
) -> None:
    # GKE's COS driver table (how-to/gpus): R535 on 1.31 to 1.33; R535 runs CUDA 12.2.
    cluster_answer["masterVersion"] = LATEST_PATCH["1.33"]

    assert driver_labels(plan_for(gke_config)) == ("535", "12.2")


@pytest.mark.parametrize(("minor", "labels"), sorted(LOCKED_L4_LABELS.items()))
def test_a_new_pool_on_a_later_control_plane_runs_the_default_the_lock_has(
    locked: Files,
    gke_config: Config,
    plan_for: PlanFor,
    cluster_answer: Config,
    minor: str,
    labels: tuple[str, str],
) -> None:
    cluster_answer["masterVersion"] = LATEST_PATCH[minor]

    assert driver_labels(plan_for(gke_config)) == labels


@pytest.mark.parametrize("minor", ["1.34", "1.35", "1.36"])
def test_a_later_control_plane_without_a_lock_entry_names_it_and_the_command(
    gke_config: Config, failed_plan_for: PlanFor, cluster_answer: Config, minor: str
) -> None:
    cluster_answer["masterVersion"] = LATEST_PATCH[minor]

    plan = failed_plan_for(gke_config)

    assert isinstance(plan.error, MissingLockEntry)
    assert plan.error.report("gke-dev") == (
        f'gpu-platform.lock has no entry gke_cos_images["{LATEST_PATCH[minor]}"]: the COS image'
        f" GKE {LATEST_PATCH[minor]} runs, whose driver list gives COS's default NVIDIA driver"
        f" for l4. Pool l4-shared is at GKE {LATEST_PATCH[minor]} (the cluster's version, at"
        " which GKE creates it), a version GKE chose: where GKE moved the cluster there since"
        " the lock was last refreshed, the daily refresh proposes the entry in a pull request"
        " from the branch gpu-platform-lock/refresh. Run `gpu-platform lock gke-dev` to read it"
        " from its source (docs/lock.md)"
    )
    assert plan.resources == []


def test_a_lock_with_the_image_but_not_its_driver_names_the_driver_entry(
    locked: Files, gke_config: Config, failed_plan_for: PlanFor, cluster_answer: Config
) -> None:
    cluster_answer["masterVersion"] = LATEST_PATCH["1.35"]
    on_machine(gke_config, "a3-highgpu-8g")

    plan = failed_plan_for(gke_config)

    assert isinstance(plan.error, MissingLockEntry)
    assert plan.error.entry_name == 'cos_drivers["cos-125-19216-104-25/h100-80gb"]'


def test_a_missing_entry_reaches_pulumi_as_a_run_error_naming_it_and_the_command(
    gke_config: Config, failed_plan_for: PlanFor, cluster_answer: Config
) -> None:
    # What `pulumi up` prints as the message alone, without a traceback (PlatformConfigError).
    cluster_answer["masterVersion"] = LATEST_PATCH["1.35"]

    plan = failed_plan_for(gke_config)

    assert isinstance(plan.error, pulumi.RunError)
    assert str(plan.error) == (
        'gpu-platform.lock has no entry gke_cos_images["1.35.6-gke.1163000"]: the COS image GKE'
        " 1.35.6-gke.1163000 runs, whose driver list gives COS's default NVIDIA driver for l4."
        " Pool l4-shared is at GKE 1.35.6-gke.1163000 (the cluster's version, at which GKE"
        " creates it), a version GKE chose: where GKE moved the cluster there since the lock"
        " was last refreshed, the daily refresh proposes the entry in a pull request from the"
        " branch gpu-platform-lock/refresh. Run `gpu-platform lock dev` to read it from its"
        " source (docs/lock.md)"
    )


def test_an_unreadable_lock_reaches_pulumi_as_a_run_error(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    gke_config: Config,
    failed_plan_for: PlanFor,
    cluster_answer: Config,
) -> None:
    (tmp_path / "gpu-platform.lock").write_text("format: 2\n")
    monkeypatch.setenv(LOCK_PATH_VARIABLE, str(tmp_path / "gpu-platform.lock"))
    cluster_answer["masterVersion"] = LATEST_PATCH["1.35"]

    plan = failed_plan_for(gke_config)

    assert isinstance(plan.error, pulumi.RunError)
    assert "not a lock of format 1" in str(plan.error)


def test_a_stated_branch_that_agrees_with_the_locked_default_labels_its_exact_version(
    locked: Files, gke_config: Config, plan_for: PlanFor, cluster_answer: Config
) -> None:
    # The test data's DEFAULT for NVIDIA_L4 on 1.35's build: 580.95.05.
    cluster_answer["masterVersion"] = LATEST_PATCH["1.35"]
    with_pool(gke_config, gcp={"cosDriverBranch": 580})

    assert driver_labels(plan_for(gke_config)) == ("580.95.05", "13.0")


def test_a_stated_branch_that_contradicts_the_locked_default_is_refused(
    locked: Files, gke_config: Config, failed_plan_for: PlanFor, cluster_answer: Config
) -> None:
    # The test data's DEFAULT for NVIDIA_L4 on 1.35's build is 580.95.05; a 570 stated when GKE
    # published no table would label the nodes for a driver they do not run.
    cluster_answer["masterVersion"] = LATEST_PATCH["1.35"]
    with_pool(gke_config, gcp={"cosDriverBranch": 570})

    assert problems_of(failed_plan_for(gke_config))[BRANCH_KEY].startswith(
        "no value, or 580: COS loads R580 for l4 on GKE 1.35.6-gke.1163000 (the cluster's"
        " version, at which GKE creates it; COS's default on GKE 1.35.6-gke.1163000)"
    )


def test_gpu_platform_plan_exits_2_naming_the_missing_entry_and_the_command(
    cluster_answer: Config,
) -> None:
    cluster_answer["masterVersion"] = LATEST_PATCH["1.35"]

    result = CliRunner().invoke(app, ["--cwd", str(ROOT), "plan", "gke-dev"])

    assert result.exit_code == 2
    assert result.output.strip() == (
        'gpu-platform.lock has no entry gke_cos_images["1.35.6-gke.1163000"]: the COS image GKE'
        " 1.35.6-gke.1163000 runs, whose driver list gives COS's default NVIDIA driver for l4."
        " Pool l4-shared is at GKE 1.35.6-gke.1163000 (the cluster's version, at which GKE"
        " creates it), a version GKE chose: where GKE moved the cluster there since the lock"
        " was last refreshed, the daily refresh proposes the entry in a pull request from the"
        " branch gpu-platform-lock/refresh. Run `gpu-platform lock gke-dev` to read it from its"
        " source (docs/lock.md)"
    )


@pytest.mark.parametrize("minor", ["1.34", "1.35", "1.36"])
def test_a_later_control_plane_plans_with_the_branch_the_pool_states(
    gke_config: Config, plan_for: PlanFor, cluster_answer: Config, minor: str
) -> None:
    cluster_answer["masterVersion"] = LATEST_PATCH[minor]
    with_pool(gke_config, gcp={"cosDriverBranch": 580})

    assert driver_labels(plan_for(gke_config)) == ("580", "13.0")


def nodes_lag_a_1_34_control_plane(cluster_answer: Config) -> None:
    """The control plane on 1.34, the fixture's pool existing with its nodes still on 1.33, as
    the GKE API lists a cluster's node pools (the pool found by its Compute Engine label)."""
    cluster_answer["masterVersion"] = LATEST_PATCH["1.34"]
    cluster_answer["nodePools"] = [
        {
            "name": "l4-shared-5f0e2a1",
            "version": LATEST_PATCH["1.33"],
            "nodeConfigs": [{"resourceLabels": {"gpu-platform-pool": "l4-shared"}}],
        }
    ]


def test_nodes_that_lag_the_control_plane_are_labelled_for_their_own_version(
    gke_config: Config, plan_for: PlanFor, cluster_answer: Config
) -> None:
    # GKE upgrades the control plane first: the pool's nodes still run 1.33, and COS's R535.
    nodes_lag_a_1_34_control_plane(cluster_answer)

    assert driver_labels(plan_for(gke_config)) == ("535", "12.2")


def test_a_pinned_node_version_decides_the_driver_whatever_the_nodes_run(
    locked: Files, gke_config: Config, plan_for: PlanFor, cluster_answer: Config
) -> None:
    # The nodes still run 1.33 (R535), the pool pins 1.34: the test data's default there.
    nodes_lag_a_1_34_control_plane(cluster_answer)
    with_pool(gke_config, gcp={"nodeVersion": LATEST_PATCH["1.34"]})

    assert driver_labels(plan_for(gke_config)) == ("570.195.03", "12.8")


def test_a_cluster_the_program_creates_is_read_back_once_it_exists(
    locked: Files, gke_config: Config, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # docs/library.md's program gives the cluster's version as 1.33.5-gke.1201000: its first
    # run labels the pool for COS's R535 there. By the next, GKE (REGULAR channel) has moved
    # the control plane and the pool to 1.34: the labels follow the nodes, not the given version.
    first = previewed(tmp_path, GKE_PROGRAM, gke_config)
    upgraded: Config = {}
    nodes_lag_a_1_34_control_plane(upgraded)
    upgraded["nodePools"][0]["version"] = LATEST_PATCH["1.34"]
    monkeypatch.setitem(
        stand_in.INVOKES, GET_CLUSTER, lambda args: stand_in.existing_cluster(args) | upgraded
    )
    later = previewed(tmp_path, GKE_PROGRAM, gke_config)

    assert (first.error, later.error) == (None, None)
    assert driver_labels(first) == ("535", "12.2")
    assert driver_labels(later) == LOCKED_L4_LABELS["1.34"]


@pytest.mark.parametrize(
    ("machine_type", "labels"),
    [
        # A3 High, H100: GKE's COS table, R535 (CUDA 12.2).
        ("a3-highgpu-8g", ("535", "12.2")),
        # A3 Ultra, H200: COS's default is R550 (AI-Hypercomputer/xpk#322), CUDA 12.4.
        ("a3-ultragpu-8g", ("550", "12.4")),
    ],
)
def test_a3_pools_on_gke_1_33_are_labelled_with_the_driver_cos_loads_for_their_gpu(
    gke_config: Config, plan_for: PlanFor, machine_type: str, labels: tuple[str, str]
) -> None:
    on_machine(gke_config, machine_type)

    assert driver_labels(plan_for(gke_config)) == labels


def test_an_a4_pool_takes_coss_default_for_b200_from_the_lock_as_no_table_gives_it(
    gke_config: Config, failed_plan_for: PlanFor
) -> None:
    on_machine(gke_config, "a4-highgpu-8g")

    plan = failed_plan_for(gke_config)

    assert isinstance(plan.error, MissingLockEntry)
    assert plan.error.entry_name == 'gke_cos_images["1.33.5-gke.1201000"]'
    assert "COS's default NVIDIA driver for b200. Pool l4-shared is at GKE" in plan.error.what


def test_an_a4_pool_stating_a_branch_too_old_for_b200_is_refused(
    gke_config: Config, failed_plan_for: PlanFor
) -> None:
    # "HGX B200 requires a driver container version of 570.133.20 or later" (NVIDIA GPU
    # Operator platform support).
    on_machine(gke_config, "a4-highgpu-8g")
    with_pool(gke_config, gcp={"cosDriverBranch": 535})

    assert problems_of(failed_plan_for(gke_config))[BRANCH_KEY].startswith(
        "a branch of at least 570: NVIDIA driver 535 (CUDA 12.2)"
    )


def test_an_a4_pool_stating_a_branch_that_drives_b200_plans_with_it(
    gke_config: Config, plan_for: PlanFor
) -> None:
    on_machine(gke_config, "a4-highgpu-8g")
    with_pool(gke_config, gcp={"cosDriverBranch": 570})

    assert driver_labels(plan_for(gke_config)) == ("570", "12.8")


def test_a_stated_branch_that_contradicts_coss_published_default_is_refused(
    gke_config: Config, failed_plan_for: PlanFor, cluster_answer: Config
) -> None:
    # GKE's COS driver table (how-to/gpus): R535 on 1.33. Google's installer loads it whatever
    # the pool states, so a stated 580 would label the nodes with CUDA 13.0 they cannot run.
    cluster_answer["masterVersion"] = LATEST_PATCH["1.33"]
    with_pool(gke_config, gcp={"cosDriverBranch": 580})

    assert problems_of(failed_plan_for(gke_config))[BRANCH_KEY].startswith(
        "no value, or 535: COS loads R535 for l4 on GKE 1.33.5-gke.1201000"
    )


def test_a_stated_branch_that_agrees_with_coss_published_default_plans(
    gke_config: Config, plan_for: PlanFor, cluster_answer: Config
) -> None:
    cluster_answer["masterVersion"] = LATEST_PATCH["1.33"]
    with_pool(gke_config, gcp={"cosDriverBranch": 535})

    assert driver_labels(plan_for(gke_config)) == ("535", "12.2")


def test_the_nccl_check_is_refused_on_a_driver_older_than_its_images_cuda(
    gke_config: Config, failed_plan_for: PlanFor, cluster_answer: Config
) -> None:
    # GKE's COS driver table (how-to/gpus): R535 on 1.33. The NCCL test's image is CUDA 12.8.1's
    # (aws-samples/awsome-distributed-training nccl-tests.Dockerfile), which needs R570 (CUDA
    # 12.8 release notes, Table 3: 570.26).
    cluster_answer["masterVersion"] = LATEST_PATCH["1.33"]
    with_pool(gke_config, validation={"expectedBusBandwidthGbps": 40})

    assert problems_of(failed_plan_for(gke_config)) == {
        "gpu-platform:pools[0].validation.expectedBusBandwidthGbps": (
            "no value on a pool whose nodes run NVIDIA driver branch 535: the NCCL test's image"
            " is built on CUDA 12.8, which needs branch 570 or later"
        )
    }
