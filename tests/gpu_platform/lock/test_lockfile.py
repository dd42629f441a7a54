"""The lock file: its format, what reading it refuses, and how a missing fact is reported."""

from datetime import UTC, datetime
from pathlib import Path

import pytest

from gpu_platform.lock.lockfile import (
    COS_DRIVERS,
    GKE_COS_IMAGES,
    Lock,
    LockError,
    MissingLockEntry,
    entry,
    load,
    lock_path,
)

READ = datetime(2026, 12, 1, 8, 30, tzinfo=UTC)
SOURCE = (
    "https://storage.googleapis.com/cos-tools/19216.104.25/lakitu/gpu_driver_versions.textproto"
)


def test_the_file_is_the_format_then_each_section_and_key_sorted(tmp_path: Path) -> None:
    lock = (
        Lock(path=tmp_path / "gpu-platform.lock")
        .with_entries(COS_DRIVERS, {"cos-b/l4": entry("580.95.05", SOURCE, READ)})
        .with_entries(GKE_COS_IMAGES, {"1.35.6-gke.1163000": entry("cos-b", "https://m", READ)})
        .with_entries(COS_DRIVERS, {"cos-a/l4": entry(None, SOURCE, READ)})
    )

    assert lock.dumps().split("\n", 2)[2] == (
        "format: 1\n"
        "cos_drivers:\n"
        "  cos-a/l4:\n"
        "    value: null\n"
        f"    source: {SOURCE}\n"
        "    read_at: '2026-12-01T08:30:00Z'\n"
        "  cos-b/l4:\n"
        "    value: 580.95.05\n"
        f"    source: {SOURCE}\n"
        "    read_at: '2026-12-01T08:30:00Z'\n"
        "gke_cos_images:\n"
        "  1.35.6-gke.1163000:\n"
        "    value: cos-b\n"
        "    source: https://m\n"
        "    read_at: '2026-12-01T08:30:00Z'\n"
    )
    lock.save()
    assert load(lock.path) == lock


def test_no_file_is_an_empty_lock_whose_every_fact_is_missing(tmp_path: Path) -> None:
    lock = load(tmp_path / "gpu-platform.lock")

    with pytest.raises(MissingLockEntry) as missing:
        lock.require(GKE_COS_IMAGES, "1.35.6-gke.1163000", "the COS image GKE 1.35.6 runs")

    assert missing.value.report("gke-dev") == (
        'gpu-platform.lock has no entry gke_cos_images["1.35.6-gke.1163000"]: the COS image GKE'
        " 1.35.6 runs. Run `gpu-platform lock gke-dev` to read it from its source (docs/lock.md)"
    )


@pytest.mark.parametrize(
    ("text", "refusal"),
    [
        ("format: 2\n", "not a lock of format 1"),
        ("cos_drivers: {}\n", "not a lock of format 1"),
        ("format: 1\nquotas: {}\n", "unknown section(s) quotas"),
        ("format: 1\ncos_drivers: [1]\n", "section cos_drivers must be a mapping"),
        ("format: 1\ncos_drivers:\n  a/l4: {value: '1', source: s}\n", "read_at"),
        (
            "format: 1\ncos_drivers:\n  a/l4: {value: '1', source: s, read_at: '2026-12-01T08:30'}",
            "a time with its offset",
        ),
        ("format: 1\n  - :\n", "is not valid YAML"),
    ],
)
def test_a_file_the_command_did_not_write_is_refused(
    tmp_path: Path, text: str, refusal: str
) -> None:
    path = tmp_path / "gpu-platform.lock"
    path.write_text(text)

    with pytest.raises(LockError, match=None) as error:
        load(path)

    assert refusal in str(error.value)


def test_a_fact_read_again_unchanged_keeps_the_time_it_was_first_read() -> None:
    first = Lock().with_entries(COS_DRIVERS, {"cos-a/l4": entry("580.95.05", SOURCE, READ)})
    later = datetime(2026, 12, 8, tzinfo=UTC)

    again = first.with_entries(COS_DRIVERS, {"cos-a/l4": entry("580.95.05", SOURCE, later)})
    moved = first.with_entries(COS_DRIVERS, {"cos-a/l4": entry("580.105.08", SOURCE, later)})

    assert again.dumps() == first.dumps()
    assert moved.get(COS_DRIVERS, "cos-a/l4") == entry("580.105.08", SOURCE, later)


def test_the_lock_is_found_beside_the_projects_pulumi_yaml(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GPU_PLATFORM_LOCK")
    (tmp_path / "Pulumi.yaml").write_text("name: p\nruntime: python\n")
    (tmp_path / "program").mkdir()

    assert lock_path(tmp_path / "program") == tmp_path / "gpu-platform.lock"
