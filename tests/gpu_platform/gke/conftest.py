"""Fixtures for the GKE side: the program's plan for the shared `gke_config`."""

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gpu_platform.cli.app import app
from gpu_platform.lock import image_resolver
from gpu_platform.lock.lockfile import LOCK_PATH_VARIABLE
from gpu_platform.offline.program import Plan
from gpu_platform.offline.stand_ins import gcp as stand_in
from tests.cos_sources import published_files, serving
from tests.repository import ROOT

from .plans import GET_CLUSTER

Config = dict[str, Any]
Files = dict[str, bytes]
LOCKED_L4_LABELS = {
    "1.34": ("570.195.03", "12.8"),
    "1.35": ("580.95.05", "13.0"),
    "1.36": ("580.126.09", "13.0"),
}
"""Per minor, the driver and CUDA labels of an L4 pool on the test data's one version of it, as
`locked` has it: the DEFAULT for NVIDIA_L4 in the list of the build that version runs
(tests/gpu_platform/lock/data/); CUDA_BY_DRIVER_BRANCH: R570 runs CUDA 12.8, R580 13.0."""


@pytest.fixture
def gke_plan(gke_config: Config, shared_plan_for: Callable[[Config], Plan]) -> Plan:
    return shared_plan_for(gke_config)


@pytest.fixture
def cluster_answer(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """Changes to make to the stand-in cluster lookup's answer."""
    changes: dict[str, Any] = {}
    answer = stand_in.INVOKES[GET_CLUSTER]
    monkeypatch.setitem(stand_in.INVOKES, GET_CLUSTER, lambda args: answer(args) | changes)
    yield changes


def lock_gke_dev(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run `gpu-platform lock gke-dev` against the sources `serving` points it at. Its images'
    digests are not read: their registries are not on loopback here (tests/gpu_platform/lock/
    test_image_resolver.py reads them from one that is, test_chart_archive.py the Prometheus
    stack's from its chart), and the plan runs an image the lock has no digest for by its tag."""
    monkeypatch.setattr(image_resolver, "platform_images", lambda config: [])
    monkeypatch.setattr(image_resolver, "chart_images_to_lock", lambda *read: {})
    result = CliRunner().invoke(app, ["--cwd", str(ROOT), "lock", "gke-dev"])
    assert result.exit_code == 0, result.output


@pytest.fixture
def locked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, bytes]:
    """The lock `gpu-platform lock gke-dev` writes from the test data's sources (the GKE
    versions of LATEST_PATCH, tests/gpu_platform/lock/data/); the sources, to change."""
    monkeypatch.setenv(LOCK_PATH_VARIABLE, str(tmp_path / "gpu-platform.lock"))
    files = published_files()
    with serving(files, monkeypatch):
        lock_gke_dev(monkeypatch)
        return files
