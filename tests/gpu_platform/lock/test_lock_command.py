"""`gpu-platform lock` against a loopback server that publishes COS's driver facts in their
formats (tests/cos_sources.py): what it writes, what it refuses, and how it fails."""

import json
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
import yaml
from typer.testing import CliRunner, Result

from gpu_platform.cli import lock as lock_command
from gpu_platform.cli.app import app
from gpu_platform.lock import image_resolver
from gpu_platform.lock.lockfile import CHART_IMAGES, COS_DRIVERS, IMAGES, LOCK_PATH_VARIABLE, entry
from gpu_platform.lock.resolve import LockContext, Resolution, Resolver
from tests.cos_sources import (
    DATA,
    MAP_PATH,
    driver_list_path,
    never_answering,
    published_files,
    serving,
)
from tests.repository import ROOT

Files = dict[str, bytes]
# The test data's GKE versions past the hand table's (gpu_platform/driver_tables/cos.py gives
# COS's default on 1.33 from GKE's own table) and the images the map gives them.
LOCKED_IMAGES = {
    "1.34.1-gke.1829001": "cos-121-18867-199-28",
    "1.35.6-gke.1163000": "cos-125-19216-104-25",
    "1.36.2-gke.1045000": "cos-125-19216-220-44",
}
# The DEFAULT driver of NVIDIA_L4 in each image's build's list (tests/gpu_platform/lock/data/).
L4_DEFAULTS = {
    "cos-121-18867-199-28/l4": "570.195.03",
    "cos-125-19216-104-25/l4": "580.95.05",
    "cos-125-19216-220-44/l4": "580.126.09",
}


@pytest.fixture
def files(monkeypatch: pytest.MonkeyPatch) -> Iterator[Files]:
    published = published_files()
    with serving(published, monkeypatch):
        yield published


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project with the repository's gke-dev stack (L4 on COS) and its EKS dev stack, whose
    images the command does not read here (test_image_resolver.py reads them from a registry on
    loopback, test_chart_archive.py the Prometheus stack's from its chart)."""
    monkeypatch.setattr(image_resolver, "platform_images", lambda config: [])
    monkeypatch.setattr(image_resolver, "chart_images_to_lock", lambda *read: {})
    (tmp_path / "Pulumi.yaml").write_text("name: gpu-platform\nruntime: python\n")
    (tmp_path / "__main__.py").write_text("")
    for stack in ("gke-dev", "dev"):
        shutil.copy(ROOT / f"Pulumi.{stack}.yaml", tmp_path)
    monkeypatch.setenv(LOCK_PATH_VARIABLE, str(tmp_path / "gpu-platform.lock"))
    return tmp_path


def lock(project: Path, *args: str) -> Result:
    return CliRunner().invoke(app, ["--cwd", str(project), "lock", *args])


def written(project: Path) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load((project / "gpu-platform.lock").read_text())
    return document


def values(document: dict[str, Any], section: str) -> dict[str, Any]:
    return {key: found["value"] for key, found in document.get(section, {}).items()}


def test_lock_writes_each_gke_versions_image_and_its_cos_default_for_the_stacks_gpu(
    files: Files, project: Path
) -> None:
    result = lock(project)

    assert result.exit_code == 0, result.output
    document = written(project)
    # 1.33 is the hand table's; the arm64 image of 1.35 is not the GPU nodes'.
    assert values(document, "gke_cos_images") == LOCKED_IMAGES
    assert values(document, "cos_drivers") == L4_DEFAULTS
    entry = document["cos_drivers"]["cos-125-19216-104-25/l4"]
    assert entry["source"].endswith(driver_list_path("19216.104.25"))
    assert entry["read_at"].endswith("Z")


def test_the_file_is_sorted_and_a_second_run_changes_nothing(files: Files, project: Path) -> None:
    lock(project)
    first = (project / "gpu-platform.lock").read_text()
    time.sleep(1.1)

    result = lock(project)

    assert result.exit_code == 0
    assert "gpu-platform.lock is up to date" in result.output
    # The same facts keep the time they were first read: a refresh changes only what moved.
    assert (project / "gpu-platform.lock").read_text() == first
    keys = [line for line in first.splitlines() if not line.startswith((" ", "#"))]
    assert keys == ["format: 1", "cos_drivers:", "gke_cos_images:", "gke_listed_versions:"]


def test_check_reports_a_new_version_without_writing(files: Files, project: Path) -> None:
    lock(project)
    before = (project / "gpu-platform.lock").read_text()
    files[MAP_PATH] = files[MAP_PATH].replace(
        b"  ]",
        b'  ,{"gke_version": "1.35.10-gke.1000", "image": "cos-125-19216-104-25"}\n  ]',
    )

    result = lock(project, "--check")

    assert result.exit_code == 1
    assert '+ gke_cos_images["1.35.10-gke.1000"]: cos-125-19216-104-25' in result.output
    assert (
        '~ gke_listed_versions["1.35"]: 1.35.6-gke.1163000 -> 1.35.6-gke.1163000 1.35.10-gke.1000'
        in result.output
    )
    assert (project / "gpu-platform.lock").read_text() == before


def test_a_build_without_a_published_list_is_named_and_the_rest_written(
    files: Files, project: Path
) -> None:
    pin(project, {"nodeVersion": "1.36.2-gke.1045000"})
    del files[driver_list_path("19216.220.44")]

    result = lock(project)

    assert result.exit_code == 4
    assert (
        'could not read cos_drivers["cos-125-19216-220-44/l4"]: http://127.0.0.1:' in result.output
    )
    assert "gpu_driver_versions.textproto answered 404" in result.output
    assert values(written(project), "cos_drivers") == {
        key: value for key, value in L4_DEFAULTS.items() if "19216-220-44" not in key
    }


def test_a_failed_read_keeps_the_entry_the_lock_had(files: Files, project: Path) -> None:
    lock(project)
    before = written(project)
    del files[MAP_PATH]

    assert lock(project).exit_code == 4
    assert written(project) == before


def test_a_version_no_stack_needs_yet_is_reported_without_failing(
    files: Files, project: Path
) -> None:
    # A version GKE lists whose build's list is not published yet, which no pool pins and no
    # cluster is created at: every daily refresh would fail for a cluster that may never run it.
    del files[driver_list_path("19216.220.44")]

    result = lock(project)

    assert result.exit_code == 0, result.output
    assert 'warning: left as it was, cos_drivers["cos-125-19216-220-44/l4"]:' in result.output
    assert "(no stack needs it yet)" in result.output
    assert "cos-125-19216-220-44/l4" not in values(written(project), "cos_drivers")


def test_a_build_the_lock_has_the_drivers_of_is_not_read_again(
    files: Files, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A published build's list never changes: re-reading every build ever locked each day
    # would outgrow the deadline as the lock grows.
    lock(project)
    requested: list[str] = []

    with serving(files, monkeypatch, requested):
        result = lock(project)

    assert result.exit_code == 0, result.output
    assert requested == [MAP_PATH]


def test_a_list_without_the_gpus_type_is_unresolved_naming_the_types_it_has(
    files: Files, project: Path
) -> None:
    # The platform's name for a GPU may not be the build's (gpu_platform/lock/cos.py): a list
    # that lacks it is no proof the build offers no driver, so nothing is locked for it.
    pin(project, {"nodeVersion": "1.36.2-gke.1045000"})
    files[driver_list_path("19216.220.44")] = (
        DATA / "19216.220.44-without-l4.textproto"
    ).read_bytes()

    result = lock(project)

    assert result.exit_code == 4
    assert (
        "/cos-tools/19216.220.44/lakitu/gpu_driver_versions.textproto lists no NVIDIA_L4; it"
        " lists NVIDIA_H100_80GB" in result.output
    )
    assert "cos-125-19216-220-44/l4" not in values(written(project), "cos_drivers")


def test_a_default_that_is_not_a_driver_version_is_unresolved(files: Files, project: Path) -> None:
    pin(project, {"nodeVersion": "1.35.6-gke.1163000"})
    files[driver_list_path("19216.104.25")] = files[driver_list_path("19216.104.25")].replace(
        b'label: "DEFAULT"\n    version: "580.95.05"', b'label: "DEFAULT"\n    version: "R580"'
    )

    result = lock(project)

    assert result.exit_code == 4
    assert "labels NVIDIA_L4's 'R580' DEFAULT, not an NVIDIA driver version" in result.output
    assert "cos-125-19216-104-25/l4" not in values(written(project), "cos_drivers")


def test_a_version_the_map_gives_only_an_arm64_image_is_unresolved(
    files: Files, project: Path
) -> None:
    # An arm64 image's build publishes its list under another board than lakitu/, the x86 one.
    pin(project, {"nodeVersion": "1.36.2-gke.1045000"})
    files[MAP_PATH] = files[MAP_PATH].replace(
        b'"image": "cos-125-19216-220-44"', b'"image": "cos-arm64-125-19216-220-44"'
    )

    result = lock(project)

    assert result.exit_code == 4
    assert 'could not read gke_cos_images["1.36.2-gke.1045000"]: http://127.0.0.1:' in result.output
    assert "gives it only arm64 images (cos-arm64-125-19216-220-44)" in result.output
    assert "1.36.2-gke.1045000" not in values(written(project), "gke_cos_images")


def test_versions_are_written_in_version_order(files: Files, project: Path) -> None:
    files[MAP_PATH] = files[MAP_PATH].replace(
        b"  ]",
        b'  ,{"gke_version": "1.35.10-gke.1000", "image": "cos-125-19216-104-25"}\n  ]',
    )

    assert lock(project).exit_code == 0
    assert list(written(project)["gke_cos_images"]) == [
        "1.34.1-gke.1829001",
        "1.35.6-gke.1163000",
        "1.35.10-gke.1000",
        "1.36.2-gke.1045000",
    ]


def test_refreshing_every_stack_keeps_a_version_the_map_stopped_listing_and_its_driver(
    files: Files, project: Path
) -> None:
    # A released GKE version's image and a COS build's list never change, and a cluster or a
    # pool that pins it may still run it.
    lock(project)
    pin(project, {"nodeVersion": "1.36.2-gke.1045000"})
    published = json.loads(files[MAP_PATH])
    published["entries"] = [
        e for e in published["entries"] if e["gke_version"] != "1.36.2-gke.1045000"
    ]
    files[MAP_PATH] = json.dumps(published).encode()

    result = lock(project)

    assert result.exit_code == 0, result.output
    assert values(written(project), "gke_cos_images") == LOCKED_IMAGES
    assert values(written(project), "cos_drivers") == L4_DEFAULTS


def pin(project: Path, gcp: dict[str, Any]) -> None:
    """Set the gke-dev stack's pool's `gcp` settings."""
    stack = project / "Pulumi.gke-dev.yaml"
    config = yaml.safe_load(stack.read_text())
    config["config"]["gpu-platform:pools"][0]["gcp"] = gcp
    stack.write_text(yaml.safe_dump(config))


def test_a_pinned_gke_version_the_map_does_not_list_is_named(files: Files, project: Path) -> None:
    pin(project, {"nodeVersion": "1.35.9-gke.1234000"})

    result = lock(project)

    assert result.exit_code == 4
    assert 'could not read gke_cos_images["1.35.9-gke.1234000"]: http://127.0.0.1:' in result.output
    assert (
        "does not list GKE 1.35.9-gke.1234000 (gke-dev: gpu-platform:pools[0].gcp.nodeVersion)"
        in result.output
    )
    assert "1.35.9-gke.1234000" not in values(written(project), "gke_cos_images")


def test_a_map_in_another_format_is_refused(files: Files, project: Path) -> None:
    files[MAP_PATH] = b'{"versions": {"1.35.6-gke.1163000": "cos-125-19216-104-25"}}'

    result = lock(project)

    assert result.exit_code == 4
    assert "could not read gke_cos_images (every entry):" in result.output
    assert "KeyError: 'entries'" in result.output
    assert "up to date" not in result.output
    assert not (project / "gpu-platform.lock").exists()


def test_a_driver_list_in_another_format_is_refused(files: Files, project: Path) -> None:
    pin(project, {"nodeVersion": "1.35.6-gke.1163000"})
    files[driver_list_path("19216.104.25")] = b"<html>Not Found</html>"

    result = lock(project)

    assert result.exit_code == 4
    assert 'could not read cos_drivers["cos-125-19216-104-25/l4"]:' in result.output
    assert "is not a GPUDriverVersionInfoList" in result.output


def test_a_source_that_never_answers_ends_at_the_deadline(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with never_answering(monkeypatch) as base:
        started = time.monotonic()
        result = lock(project, "--timeout", "1")

    assert time.monotonic() - started < 5
    assert result.exit_code == 4
    assert f"{base} did not answer gke-to-cos.json within the 1 s deadline" in result.output


def test_a_pool_that_states_its_branch_is_locked_too(files: Files, project: Path) -> None:
    # The plan refuses a stated branch that contradicts COS's default, which it reads here.
    pin(project, {"cosDriverBranch": 580})

    assert lock(project).exit_code == 0
    assert values(written(project), "cos_drivers") == L4_DEFAULTS


def test_locking_every_stack_drops_what_none_needs_and_one_stack_keeps_the_rest(
    files: Files, project: Path
) -> None:
    lock(project)
    (project / "Pulumi.gke-dev.yaml").unlink()

    assert lock(project, "dev").exit_code == 0
    assert values(written(project), "cos_drivers") == L4_DEFAULTS
    result = lock(project)
    assert result.exit_code == 0, result.output
    assert not (project / "gpu-platform.lock").read_text().count("cos_drivers")


def new_cluster_at(project: Path, minor: str) -> None:
    """gke-dev as a cluster the platform creates at `minor`, no patch pinned."""
    shutil.copy(ROOT / "Pulumi.gke-new.yaml", project / "Pulumi.gke-dev.yaml")
    stack = project / "Pulumi.gke-dev.yaml"
    config = yaml.safe_load(stack.read_text())
    config["config"]["gpu-platform:cluster"]["create"]["kubernetesVersion"] = minor
    stack.write_text(yaml.safe_dump(config))


def test_a_new_clusters_minor_the_map_lists_no_version_of_is_named(
    files: Files, project: Path
) -> None:
    # Else `lock` would exit 0 and the plan ask for the lock again, forever.
    new_cluster_at(project, "1.36")
    published = json.loads(files[MAP_PATH])
    published["entries"] = [e for e in published["entries"] if "1.36." not in e["gke_version"]]
    files[MAP_PATH] = json.dumps(published).encode()

    result = lock(project, "gke-dev")

    assert result.exit_code == 4
    assert 'could not read gke_listed_versions["1.36"]: http://127.0.0.1:' in result.output
    assert (
        "lists no GKE 1.36 version (gke-dev: gpu-platform:cluster.create.kubernetesVersion), the"
        " minor the cluster is created at" in result.output
    )


def test_past_the_deadline_what_was_read_is_written(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def read(context: LockContext) -> Resolution:
        result = Resolution()
        result.add(IMAGES, "registry.example/app:v1", entry("sha256:" + "0" * 64, "test"))
        return result

    # Held until the deadline has passed, then let go: the work the deadline gave up on ends
    # with the test (tests/abandoned_work.py).
    released = threading.Event()

    def hang(context: LockContext) -> Resolution:
        released.wait(3)
        return Resolution()

    monkeypatch.chdir(project)
    with pytest.raises(typer.Exit) as exited:
        lock_command.run(
            [],
            check=False,
            timeout_seconds=0.5,
            resolvers=[Resolver([IMAGES], read), Resolver([COS_DRIVERS], hang)],
        )
    released.set()

    assert exited.value.exit_code == 4
    assert values(written(project), "images") == {"registry.example/app:v1": "sha256:" + "0" * 64}


def test_past_the_deadline_the_cos_drivers_read_are_written(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The newest build's list never answers: the map and the two lists read before it are kept.
    with serving(published_files(), monkeypatch, hanging={driver_list_path("19216.220.44")}):
        result = lock(project, "--timeout", "1.5")

    assert result.exit_code == 4
    assert "did not answer gpu_driver_versions.textproto within the 1.5 s deadline" in (
        result.output
    )
    assert values(written(project), "gke_cos_images") == LOCKED_IMAGES
    assert values(written(project), "cos_drivers") == {
        key: value for key, value in L4_DEFAULTS.items() if "19216-220-44" not in key
    }


def test_a_new_cluster_at_a_minor_the_hand_table_gives_needs_no_listed_versions(
    files: Files, project: Path
) -> None:
    # gpu_platform/driver_tables/cos.py cites GKE's own table for 1.33: the map's 1.33 versions
    # are not the lock's to hold, yet the minor is listed.
    new_cluster_at(project, "1.33")

    result = lock(project, "gke-dev")

    assert result.exit_code == 0, result.output
    assert "1.33" not in values(written(project), "gke_listed_versions")


def test_check_with_only_an_image_the_platform_does_not_know_says_up_to_date(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The warning is of the code, not of the lock: the entry is written as read, and --check,
    # which fails only for a lock that would change (as `uv lock --check` does), passes.
    key = "kube-prometheus-stack@1.0.0/newExporter.image"

    def read(context: LockContext) -> Resolution:
        result = Resolution()
        result.add(CHART_IMAGES, key, entry("registry.example/new-exporter:v1", "test"))
        result.warn(CHART_IMAGES, key, "an image the platform does not know")
        return result

    monkeypatch.chdir(project)
    resolvers = [Resolver([CHART_IMAGES], read)]
    lock_command.run([], check=False, timeout_seconds=5, resolvers=resolvers)
    lock_command.run([], check=True, timeout_seconds=5, resolvers=resolvers)

    out, err = capsys.readouterr()
    assert values(written(project), "chart_images") == {key: "registry.example/new-exporter:v1"}
    assert out.splitlines()[-1] == "gpu-platform.lock is up to date"
    assert err.count(f'warning: chart_images["{key}"]: an image the platform does not know') == 2
