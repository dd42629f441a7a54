"""Preflight compares the lock's image digests with a real registry on loopback
(tests/oci_registry.py): a tag pushed again since the lock was written is a warning."""

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gpu_platform.cli import preflight_images
from gpu_platform.cli.deadline import Deadline
from gpu_platform.cli.findings import Finding
from gpu_platform.config import Cloud
from gpu_platform.lock.lockfile import IMAGES, Lock, entry
from gpu_platform.platform_images import PlatformImage
from tests.oci_registry import Registry, sha256, silent_server

OLD = "sha256:" + "0d" * 32


def findings(
    monkeypatch: pytest.MonkeyPatch,
    host: str,
    locked: dict[str, str],
    tmp_path: Path,
    seconds: float = 10,
) -> list[Finding]:
    """Preflight's image findings for a stack that deploys `<host>/<key>` for each key of
    `locked` and a lock holding, for each, the digest given (none where it is empty)."""
    images = [
        PlatformImage(f"{host}/{key.split(':')[0]}", key.split(":")[1], "a test") for key in locked
    ]
    monkeypatch.setattr(preflight_images, "platform_images", lambda config: images)
    entries = {f"{host}/{k}": entry(v, "https://registry.example") for k, v in locked.items() if v}
    lock = Lock(path=tmp_path / "lock").with_entries(IMAGES, entries)
    config: Any = SimpleNamespace(cloud=Cloud.GCP)
    return preflight_images.image_findings("dev", config, Deadline(seconds), lock, {host})


def test_a_tag_pushed_again_since_the_lock_was_written_is_a_warning(
    registry: Registry, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    now = registry.push_image("drift/gate", "12.2.2", b"pushed again")

    (finding,) = findings(monkeypatch, registry.host, {"drift/gate:12.2.2": OLD}, tmp_path)

    assert finding.severity == "warning"
    assert f"{registry.host}/drift/gate:12.2.2 names {sha256(now)} now, the lock {OLD}" in (
        finding.message
    )
    assert finding.action == (
        "Review the new images, then run `gpu-platform lock dev` to move to them."
    )


def test_tags_that_still_name_their_locked_digest_are_fine(
    registry: Registry, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    same = registry.push_image("drift/reaper", "3.13.9", b"same")

    (finding,) = findings(
        monkeypatch, registry.host, {"drift/reaper:3.13.9": sha256(same)}, tmp_path
    )

    assert (finding.severity, finding.message) == (
        "ok",
        "The 1 locked tags name their digests still.",
    )


def test_an_image_the_lock_has_no_digest_for_is_named_as_running_by_tag(
    registry: Registry, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (finding,) = findings(monkeypatch, registry.host, {"drift/new:1.0": ""}, tmp_path)

    assert finding.message == (
        f"The lock has no digest for {registry.host}/drift/new:1.0: they run by tag."
    )
    assert finding.action == "Run `gpu-platform lock dev` to pin them."


def test_a_registry_that_never_answers_leaves_the_digests_uncompared(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with silent_server() as host:
        (finding,) = findings(monkeypatch, host, {"drift/gate:1.0": OLD}, tmp_path, seconds=1)

    assert finding.severity == "warning"
    assert finding.message.startswith(f"Not compared with the registries: http://{host} did not")
