"""The lock file: facts the platform reads from their sources online, kept for the offline plan.

Some facts the plan needs change every week and live only online (which NVIDIA driver COS loads
for a GKE version and GPU, which digest an image tag names). `gpu-platform lock` reads them
from their sources into one file beside the project's `Pulumi.yaml`, `gpu-platform.lock`, which
is committed and reviewed like any other pin; the plan and the program read only that file. Each
entry says where its value was read and when.

The file is YAML, written sorted by section and key (numbers in keys compared as numbers, so
versions are in version order), one entry a few lines, so that a refresh reads as a diff:

    format: 1
    cos_drivers:
      cos-121-18867-90-4/l4:
        value: 580.95.05
        source: https://storage.googleapis.com/cos-tools/18867.90.4/lakitu/gpu_driver_versions.textproto
        read_at: '2026-12-05T14:20:00Z'

A missing file is an empty lock: every fact the plan needs from it is then a `MissingLockEntry`,
which names the entry and the command that fills it.
"""

import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, field_serializer, field_validator

from gpu_platform import yaml_documents

LOCK_FILE_NAME = "gpu-platform.lock"
LOCK_PATH_VARIABLE = "GPU_PLATFORM_LOCK"
"""An environment variable naming another lock file to read and write than the project's."""
FORMAT = 1
"""The file's format, written as its `format:`; a file of another format is refused."""
LOCK_COMMAND = "gpu-platform lock"
REFRESH_BRANCH = "gpu-platform-lock/refresh"
"""The branch the scheduled refresh (.github/workflows/lock-refresh.yml) proposes the lock from."""
_PROJECT_FILES = ("Pulumi.yaml", "Pulumi.yml")
_HEADER = (
    "# Facts gpu-platform read from their sources, for the offline plan and the program.\n"
    "# Written by `gpu-platform lock` (docs/lock.md): refresh it with that command, do not edit.\n"
)


@dataclass(frozen=True)
class Section:
    """A kind of fact the lock holds: its entries are keyed by stable strings."""

    name: str
    """The section's key in the file (`cos_drivers`)."""
    key: str
    """What an entry's key is, in words, for messages and docs."""
    value: str
    """What an entry's value is, in words."""


GKE_COS_IMAGES = Section(
    "gke_cos_images", "a GKE version (`1.35.6-gke.1163000`)", "the COS image its nodes run"
)
COS_DRIVERS = Section(
    "cos_drivers",
    "`<COS image>/<accelerator>` (`cos-121-18867-90-4/l4`)",
    "the NVIDIA driver COS loads by default for the GPU (`DEFAULT` in the build's"
    " gpu_driver_versions.textproto); empty where the build lists no driver for it",
)
GKE_LISTED_VERSIONS = Section(
    "gke_listed_versions",
    "a GKE minor (`1.35`)",
    "the versions of the minor gke-to-cos.json listed when the lock was written, space-separated:"
    " those GKE may create a cluster of that minor at now, unlike versions it no longer offers,"
    " which `gke_cos_images` keeps for the clusters that still run them",
)
IMAGES = Section(
    "images",
    "`<repository>:<tag>` (`nvcr.io/nvidia/gpu-operator:v26.7.0`)",
    "the digest the tag names (an image index's for a multi-platform image)",
)
CHART_IMAGES = Section(
    "chart_images",
    "`<chart>@<version>/<values path>` of an image a chart runs by its own default"
    " (`kube-prometheus-stack@93.4.1/grafana.image`)",
    "`<repository>:<tag>` as the chart at that version renders it (its digest is under"
    " `images`), or the repository alone where its values name no tag",
)
SECTIONS: Mapping[str, Section] = {
    s.name: s for s in (GKE_COS_IMAGES, GKE_LISTED_VERSIONS, COS_DRIVERS, IMAGES, CHART_IMAGES)
}
"""Every section the file may hold, by name."""


class LockError(Exception):
    """The lock file cannot be read: not YAML, another format, or an entry that is not one."""


class LockEntry(BaseModel):
    """One fact, as its source gave it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    value: str | None
    """The fact; None where the source, read, holds none (a COS build that lists no driver for a
    GPU)."""
    source: str
    """The URL the value was read from."""
    read_at: datetime
    """When the source gave this value (UTC). A refresh that reads the same value from the same
    source keeps the entry as it was, so that it changes the file only where a fact moved."""

    @field_validator("read_at")
    @classmethod
    def _in_utc(cls, read_at: datetime) -> datetime:
        if read_at.tzinfo is None:
            raise ValueError("a time with its offset (UTC: `Z`)")
        return read_at.astimezone(UTC)

    @field_serializer("read_at")
    def _iso(self, read_at: datetime) -> str:
        return read_at.strftime("%Y-%m-%dT%H:%M:%SZ")

    def same_fact(self, other: "LockEntry") -> bool:
        """Whether `other` gives the same value from the same source, whenever it was read."""
        return (self.value, self.source) == (other.value, other.source)


def entry(value: str | None, source: str, read_at: datetime | None = None) -> LockEntry:
    """An entry read now (or at `read_at`), to the second."""
    when = (read_at or datetime.now(UTC)).replace(microsecond=0)
    return LockEntry(value=value, source=source, read_at=when)


class MissingLockEntry(Exception):
    """The plan needs a fact the lock does not hold. It is not a bug, and not the stack's
    config: the command that fills it is `gpu-platform lock <stack>`."""

    def __init__(self, section: Section, key: str, what: str, path: Path):
        self.section = section
        self.key = key
        self.what = what
        self.path = path
        super().__init__(self.report())

    @property
    def entry_name(self) -> str:
        return f'{self.section.name}["{self.key}"]'

    def report(self, stack: str | None = None) -> str:
        """What is missing and how to fill it; with the stack the command was run for."""
        command = f"{LOCK_COMMAND} {stack}" if stack else LOCK_COMMAND
        return (
            f"{self.path.name} has no entry {self.entry_name}: {self.what}. Run `{command}` to"
            " read it from its source (docs/lock.md)"
        )


class Lock:
    """The lock's entries, by section and key. Immutable: `with_entries` gives a new lock."""

    def __init__(
        self,
        sections: Mapping[str, Mapping[str, LockEntry]] | None = None,
        path: Path | None = None,
    ):
        unknown = sorted(set(sections or {}) - set(SECTIONS))
        if unknown:
            raise LockError(
                f"unknown section(s) {', '.join(unknown)}; known: {', '.join(SECTIONS)}"
            )
        self._sections = {
            name: dict(sorted(entries.items(), key=lambda item: _natural(item[0])))
            for name, entries in sorted((sections or {}).items())
        }
        self.path = path or Path(LOCK_FILE_NAME)
        """The file it was read from, or is to be written to."""

    def get(self, section: Section, key: str) -> LockEntry | None:
        return self._sections.get(section.name, {}).get(key)

    def require(self, section: Section, key: str, what: str) -> LockEntry:
        """The entry; MissingLockEntry, saying `what` the fact is, where the lock has none."""
        found = self.get(section, key)
        if found is None:
            raise MissingLockEntry(section, key, what, self.path)
        return found

    def section(self, section: Section) -> Mapping[str, LockEntry]:
        return self._sections.get(section.name, {})

    def items(self) -> Iterator[tuple[Section, str, LockEntry]]:
        """Every entry, sorted by section and key."""
        for name, entries in self._sections.items():
            for key, found in entries.items():
                yield SECTIONS[name], key, found

    def with_entries(
        self, section: Section, entries: Mapping[str, LockEntry], replace: bool = False
    ) -> "Lock":
        """A lock with `entries` added to the section (or, with `replace`, as the whole section).
        An entry that gives the same fact as the one it replaces keeps the one before."""
        before = self.section(section)
        merged = {} if replace else dict(before)
        for key, new in entries.items():
            old = before.get(key)
            merged[key] = old if old is not None and old.same_fact(new) else new
        sections = {**self._sections, section.name: merged}
        return Lock({name: found for name, found in sections.items() if found}, self.path)

    def to_document(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            **{
                name: {key: found.model_dump(mode="json") for key, found in entries.items()}
                for name, entries in self._sections.items()
            },
        }

    def dumps(self) -> str:
        # The document is built in order (`format` first, then sections and keys sorted, and
        # each entry's fields as declared), which yaml.safe_dump keeps without `sort_keys`.
        body = yaml.safe_dump(
            self.to_document(), sort_keys=False, default_flow_style=False, width=1_000
        )
        return _HEADER + body

    def save(self) -> None:
        """Write the lock to its path, whole or not at all."""
        partial = self.path.with_name(self.path.name + ".partial")
        partial.write_text(self.dumps())
        partial.replace(self.path)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Lock) and self._sections == other._sections


def _natural(key: str) -> tuple[tuple[int, int | str], ...]:
    """A key's numbers compared as numbers (`1.35.10-gke.100` after `1.35.9-gke.200`), so that a
    refresh's new versions land beside their neighbours in the diff."""
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in re.split(r"(\d+)", key) if p)


def lock_path(start: Path | None = None) -> Path:
    """The lock file: $GPU_PLATFORM_LOCK where set, else `gpu-platform.lock` beside the
    `Pulumi.yaml` of the project at `start` (default: the current directory) or above it, as
    Pulumi finds the project; beside `start` where there is none."""
    named = os.environ.get(LOCK_PATH_VARIABLE)
    if named:
        return Path(named)
    start = (start or Path.cwd()).resolve()
    for directory in (start, *start.parents):
        if any((directory / name).is_file() for name in _PROJECT_FILES):
            return directory / LOCK_FILE_NAME
    return start / LOCK_FILE_NAME


def load(path: Path | None = None) -> Lock:
    """The lock at `path` (default: `lock_path()`); an empty one where there is no file."""
    path = path or lock_path()
    try:
        text = path.read_text()
    except FileNotFoundError:
        return Lock(path=path)
    return parse(text, path)


def parse(text: str, path: Path) -> Lock:
    try:
        document = yaml_documents.load(text)
    except yaml.YAMLError as error:
        raise LockError(f"{path} is not valid YAML: {error}") from None
    document = document or {}
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise LockError(
            f"{path}: not a lock of format {FORMAT} (`format: {FORMAT}`); write it again with"
            f" `{LOCK_COMMAND}`"
        )
    sections: dict[str, dict[str, LockEntry]] = {}
    for name, entries in document.items():
        if name == "format":
            continue
        if not isinstance(entries, dict):
            raise LockError(f"{path}: section {name} must be a mapping of entries")
        try:
            sections[str(name)] = {
                str(key): LockEntry.model_validate(found) for key, found in entries.items()
            }
        except ValidationError as error:
            raise LockError(f"{path}: section {name}: {error}") from None
    try:
        return Lock(sections, path)
    except LockError as error:
        raise LockError(f"{path}: {error}") from None


_cache: dict[Path, tuple[tuple[int, int], Lock]] = {}


def project_lock() -> Lock:
    """The lock of the project the program runs in, read again only when the file changed:
    the program asks it for each pool and image."""
    path = lock_path()
    try:
        stat = path.stat()
    except FileNotFoundError:
        return Lock(path=path)
    state = (stat.st_mtime_ns, stat.st_size)
    cached = _cache.get(path)
    if cached is None or cached[0] != state:
        cached = (state, load(path))
        _cache[path] = cached
    return cached[1]
