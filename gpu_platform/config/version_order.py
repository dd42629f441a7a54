"""How versions and releases in the stack file compare: by their numbers, not as text."""

import re
from typing import Any


def release_key(release: str) -> tuple[Any, ...]:
    """`1.35.6-20260714` and `1.34.1-gke.1829001` ordered by version, then build."""
    version, _, build = release.partition("-")
    numbers = tuple(int(part) for part in version.split("."))
    return numbers, tuple(int(p) if p.isdigit() else p for p in re.split(r"[.-]", build))


def version_key(version: str) -> tuple[int, ...]:
    """`595.91.07` or `v26.7.0` as numbers, so that 595.100.01 comes after 595.91.07."""
    return tuple(int(part) for part in version.removeprefix("v").split("."))
