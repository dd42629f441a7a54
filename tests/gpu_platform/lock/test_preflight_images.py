"""Preflight compares the lock's image digests with a real registry on loopback
(tests/oci_registry.py): a tag pushed again since the lock was written is a warning."""

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gpu_platform.config import Cloud
from gpu_platform.deadline import Deadline
from gpu_platform.kubernetes.chart_images.prometheus_stack import lock_key
from gpu_platform.lock.lockfile import CHART_IMAGES, IMAGES, Lock, entry
from gpu_platform.platform_images import PlatformImage
from gpu_platform.preflight import images as preflight_images
from gpu_platform.preflight.findings import Finding
from gpu_platform.versions import KUBE_PROMETHEUS_STACK_CHART
from tests.oci_registry import Registry, sha256, silent_server

OLD = "sha256:" + "0d" * 32


def findings(
    monkeypatch: pytest.MonkeyPatch,
    host: str,
    locked: dict[str, str],
    tmp_path: Path,
    seconds: float = 10,
    chart_images: dict[str, str] | None = None,
    cloud: Cloud = Cloud.GCP,
) -> list[Finding]:
    """Preflight's image findings for a stack that deploys `<host>/<key>` for each key of
    `locked` and a lock holding, for each, the digest given (none where it is empty)."""
    images = [
        PlatformImage(f"{host}/{key.split(':')[0]}", key.split(":")[1], "a test")
        for key in locked
        if chart_images is None or f"{host}/{key}" not in chart_images.values()
    ]
    monkeypatch.setattr(preflight_images, "platform_images", lambda config: images)
    entries = {f"{host}/{k}": entry(v, "https://registry.example") for k, v in locked.items() if v}
    lock = Lock(path=tmp_path / "lock").with_entries(IMAGES, entries)
    if chart_images is not None:
        # The stack installs the Prometheus stack; the lock holds these of its pinned chart's
        # images (values path -> `<repository>:<tag>`), each with `locked`'s digest.
        chart = {
            lock_key(path): entry(image, "https://charts.example")
            for path, image in chart_images.items()
        }
        lock = lock.with_entries(CHART_IMAGES, chart)
    monitoring = SimpleNamespace(install_prometheus_stack=chart_images is not None)
    config: Any = SimpleNamespace(cloud=cloud, monitoring=monitoring)
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


def test_the_prometheus_stacks_pinned_images_the_lock_holds_are_compared_too(
    registry: Registry, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    now = registry.push_image("grafana/grafana", "13.2.0", b"pushed again")
    grafana = f"{registry.host}/grafana/grafana:13.2.0"

    (finding,) = findings(
        monkeypatch,
        registry.host,
        {"grafana/grafana:13.2.0": OLD},
        tmp_path,
        chart_images={"grafana.image": grafana},
    )

    assert f"{grafana} names {sha256(now)} now, the lock {OLD}" in finding.message


def test_a_stack_whose_lock_holds_none_of_the_pinned_charts_images_is_told_to_lock(
    registry: Registry, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (finding,) = findings(monkeypatch, registry.host, {}, tmp_path, chart_images={})

    assert finding.severity == "warning"
    assert finding.message.startswith(
        f"The lock holds no image of kube-prometheus-stack {KUBE_PROMETHEUS_STACK_CHART.version},"
    )
    assert finding.message.endswith(
        "its images run by tag, and Binary Authorization's allowlist is the one committed for an"
        " older release."
    )
    assert finding.action == (
        "Run `gpu-platform lock dev` to read the chart's images and their digests."
    )
    # An EKS stack has no Binary Authorization.
    (eks,) = findings(monkeypatch, registry.host, {}, tmp_path, chart_images={}, cloud=Cloud.AWS)
    assert eks.message.endswith("its images run by tag.")
