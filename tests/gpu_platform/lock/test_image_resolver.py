"""`gpu-platform lock` reads the digest of every image the stacks deploy from its registry, a
real one on loopback here (tests/oci_registry.py), into the lock's `images` section."""

from pathlib import Path

import pytest
import typer

from gpu_platform.cli import lock
from gpu_platform.lock import image_resolver
from gpu_platform.lock.lockfile import IMAGES, load
from gpu_platform.platform_images import PlatformImage
from tests.oci_registry import Registry, sha256


@pytest.fixture
def lock_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "gpu-platform.lock"
    monkeypatch.setenv("GPU_PLATFORM_LOCK", str(path))
    return path


def stack_images(monkeypatch: pytest.MonkeyPatch, registry: Registry, *images: str) -> None:
    """The stacks deploy `images` (`name:tag`) of the loopback registry, and one whose digest
    its upstream release records, which the lock leaves out."""
    deployed = [
        PlatformImage(f"{registry.host}/{name}", tag, "a test")
        for name, tag in (image.split(":") for image in images)
    ]
    recorded = PlatformImage(f"{registry.host}/recorded", "1.0", "a test", "sha256:" + "ab" * 32)
    monkeypatch.setattr(image_resolver, "platform_images", lambda config: [*deployed, recorded])
    monkeypatch.setattr(image_resolver, "PLAIN_HTTP_REGISTRIES", {registry.host})
    monkeypatch.setattr(image_resolver, "chart_images_to_lock", lambda *read: {})


def test_the_lock_holds_each_images_digest_and_where_it_was_read(
    registry: Registry, lock_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manifest = registry.push_image("lock/reaper", "3.13.9", b"reaper")
    index = registry.push_index("lock/autoscaler", "v1.35.2")
    stack_images(monkeypatch, registry, "lock/reaper:3.13.9", "lock/autoscaler:v1.35.2")

    lock.run(["dev"], check=False, timeout_seconds=20, resolvers=[image_resolver.RESOLVER])

    written = load(lock_file).section(IMAGES)
    host = registry.host
    assert {key: (e.value, e.source) for key, e in written.items()} == {
        f"{host}/lock/reaper:3.13.9": (
            sha256(manifest),
            f"http://{host}/v2/lock/reaper/manifests/3.13.9",
        ),
        f"{host}/lock/autoscaler:v1.35.2": (
            sha256(index),
            f"http://{host}/v2/lock/autoscaler/manifests/v1.35.2",
        ),
    }


def test_a_missing_tag_fails_the_command_naming_the_entry_and_keeps_the_rest(
    registry: Registry,
    lock_file: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    registry.push_image("lock/gate", "12.2.2", b"gate")
    stack_images(monkeypatch, registry, "lock/gate:12.2.2", "lock/gate:0.0.0")

    with pytest.raises(typer.Exit) as exited:
        lock.run(["dev"], check=False, timeout_seconds=20, resolvers=[image_resolver.RESOLVER])

    assert exited.value.exit_code == lock.EXIT_UNRESOLVED
    error = " ".join(capsys.readouterr().err.split())
    assert f'could not read images["{registry.host}/lock/gate:0.0.0"]:' in error
    assert "answered 404: no such tag or repository (a test)" in error
    assert list(load(lock_file).section(IMAGES)) == [f"{registry.host}/lock/gate:12.2.2"]
