"""The driver and CUDA labels of a GKE pool's nodes, from the nodes' own GKE version and GPU
(mocked program, with the stand-in control plane at each supported version)."""

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gpu_platform.cli.app import app
from gpu_platform.cli.offline import Plan
from gpu_platform.lock.lockfile import LOCK_PATH_VARIABLE, MissingLockEntry
from gpu_platform.versions import SUPPORTED_KUBERNETES_VERSIONS
from tests.cos_sources import DATA, driver_list_path, published_files, serving
from tests.repository import ROOT

from .plans import node_pool, problems_of, with_cluster, with_pool

Config = dict[str, Any]
Files = dict[str, bytes]
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


@pytest.fixture
def locked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, bytes]:
    """The lock `gpu-platform lock gke-dev` writes from the test data's sources (the GKE
    versions of LATEST_PATCH, tests/gpu_platform/lock/data/); the sources, to change."""
    monkeypatch.setenv(LOCK_PATH_VARIABLE, str(tmp_path / "gpu-platform.lock"))
    files = published_files()
    with serving(files, monkeypatch):
        result = CliRunner().invoke(app, ["--cwd", str(ROOT), "lock", "gke-dev"])
        assert result.exit_code == 0, result.output
        return files


@pytest.mark.parametrize(
    ("minor", "labels"),
    [
        # The DEFAULT driver of NVIDIA_L4 in the test data's list of the build each version
        # runs; CUDA_BY_DRIVER_BRANCH: R570 runs CUDA 12.8, R580 13.0.
        ("1.34", ("570.195.03", "12.8")),
        ("1.35", ("580.95.05", "13.0")),
        ("1.36", ("580.126.09", "13.0")),
    ],
)
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
        " for l4. Run `gpu-platform lock gke-dev` to read it from its source (docs/lock.md)"
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


def test_a_build_that_lists_no_driver_for_the_gpu_refuses_the_pool(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    gke_config: Config,
    failed_plan_for: PlanFor,
    cluster_answer: Config,
) -> None:
    monkeypatch.setenv(LOCK_PATH_VARIABLE, str(tmp_path / "gpu-platform.lock"))
    files = published_files()
    files[driver_list_path("19216.220.44")] = (
        DATA / "19216.220.44-without-l4.textproto"
    ).read_bytes()
    with serving(files, monkeypatch) as base:
        CliRunner().invoke(app, ["--cwd", str(ROOT), "lock", "gke-dev"])
    cluster_answer["masterVersion"] = LATEST_PATCH["1.36"]

    assert problems_of(failed_plan_for(gke_config))[BRANCH_KEY] == (
        "the NVIDIA driver branch that COS loads for l4 on GKE 1.36.2-gke.1045000 (the cluster's"
        " version, at which GKE creates it): cos-125-19216-220-44, the COS image of GKE"
        f" 1.36.2-gke.1045000, lists no driver for NVIDIA_L4 ({base}/cos-tools/19216.220.44/"
        "lakitu/gpu_driver_versions.textproto). `nvidia-smi` on such a node shows it, and the"
        " smoke test checks it"
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
        " Run `gpu-platform lock gke-dev` to read it from its source (docs/lock.md)"
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
    assert plan.error.what.endswith("COS's default NVIDIA driver for b200")


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
