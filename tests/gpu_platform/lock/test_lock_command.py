"""`gpu-platform lock` against a loopback server that publishes COS's driver facts in their
formats (tests/cos_sources.py): what it writes, what it refuses, and how it fails."""

import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner, Result

from gpu_platform.cli.app import app
from gpu_platform.lock import image_resolver
from gpu_platform.lock.lockfile import LOCK_PATH_VARIABLE
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
    loopback)."""
    monkeypatch.setattr(image_resolver, "platform_images", lambda config: [])
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
    assert keys == ["format: 1", "cos_drivers:", "gke_cos_images:"]


def test_check_reports_a_moved_default_without_writing(files: Files, project: Path) -> None:
    lock(project)
    before = (project / "gpu-platform.lock").read_text()
    files[driver_list_path("19216.104.25")] = files[driver_list_path("19216.104.25")].replace(
        b'label: "DEFAULT"\n    version: "580.95.05"',
        b'label: "DEFAULT"\n    version: "580.105.08"',
    )

    result = lock(project, "--check")

    assert result.exit_code == 1
    assert '~ cos_drivers["cos-125-19216-104-25/l4"]: 580.95.05 -> 580.105.08' in result.output
    assert (project / "gpu-platform.lock").read_text() == before


def test_a_build_without_a_published_list_is_named_and_the_rest_written(
    files: Files, project: Path
) -> None:
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
    del files[driver_list_path("19216.220.44")]

    assert lock(project).exit_code == 4
    assert values(written(project), "cos_drivers") == L4_DEFAULTS


def test_a_build_that_lists_no_driver_for_the_gpu_is_locked_as_such(
    files: Files, project: Path
) -> None:
    files[driver_list_path("19216.220.44")] = (
        DATA / "19216.220.44-without-l4.textproto"
    ).read_bytes()

    result = lock(project)

    assert result.exit_code == 0, result.output
    assert values(written(project), "cos_drivers")["cos-125-19216-220-44/l4"] is None


def test_a_pinned_gke_version_the_map_does_not_list_is_named(files: Files, project: Path) -> None:
    stack = project / "Pulumi.gke-dev.yaml"
    config = yaml.safe_load(stack.read_text())
    config["config"]["gpu-platform:pools"][0]["gcp"] = {"nodeVersion": "1.35.9-gke.1234000"}
    stack.write_text(yaml.safe_dump(config))

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
    assert not (project / "gpu-platform.lock").exists()


def test_a_driver_list_in_another_format_is_refused(files: Files, project: Path) -> None:
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


def test_locking_every_stack_drops_what_none_needs_and_one_stack_keeps_the_rest(
    files: Files, project: Path
) -> None:
    lock(project)
    stack = project / "Pulumi.gke-dev.yaml"
    config = yaml.safe_load(stack.read_text())
    config["config"]["gpu-platform:pools"][0]["gcp"] = {"cosDriverBranch": 580}
    stack.write_text(yaml.safe_dump(config))

    assert lock(project, "dev").exit_code == 0
    assert values(written(project), "cos_drivers") == L4_DEFAULTS
    assert lock(project).exit_code == 0
    assert not (project / "gpu-platform.lock").read_text().count("cos_drivers")
