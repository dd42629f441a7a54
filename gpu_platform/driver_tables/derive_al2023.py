"""Derive the NVIDIA driver of every EKS AL2023 NVIDIA AMI release from amazon-eks-ami's changelog.

    python -m gpu_platform.driver_tables.derive_al2023 path/to/amazon-eks-ami/CHANGELOG.md

writes `al2023-nvidia.json` beside this file: `{"<release>": {"x86_64": "<driver>", "arm64":
"<driver>"}}` for the Kubernetes minors the platform supports, newest release first. Re-run it
when AWS publishes AMI releases the platform should accept: a release missing from the table is a
config error, because a pool's driver (and with it the newest CUDA its pods may use) must be
known before its nodes start.

The changelog gives each release (`# AMI Release v20260714`) one `<details>` block per Kubernetes
minor, holding a table with the release version (`1.35.6-20260714`: the Kubernetes patch the
AMI's kubelet is, then the release date) and a package table with one column per AMI type, in
which equal neighbouring cells are merged (`colspan`). The driver is the `kmod-nvidia-latest-dkms`
package (`580.159.03-1.amzn2023`). Releases marked `[ABANDONED]` were never published.
"""

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

from gpu_platform.versions import SUPPORTED_KUBERNETES_VERSIONS

OUTPUT = Path(__file__).with_name("al2023-nvidia.json")
DRIVER_PACKAGE = "kmod-nvidia-latest-dkms"
AMI_TYPE_COLUMNS = {"AL2023_x86_64_NVIDIA": "x86_64", "AL2023_ARM_64_NVIDIA": "arm64"}

_RELEASE_HEADING = re.compile(r"^# (\[ABANDONED\] )?AMI Release (v\d{8})\S*\s*$", re.M)
_MINOR_BLOCK = re.compile(r"<summary><b>Kubernetes (\d+\.\d+)</b></summary>(.*?)</details>", re.S)
_CELL = re.compile(r"<t([hd])([^>]*)>(.*?)</t[hd]>", re.S)
_RELEASE_VERSION = re.compile(r"<td[^>]*>(\d+\.\d+\.\d+-\d{8})</td>")


def drivers_by_release(changelog: str) -> dict[str, dict[str, str]]:
    """Every published release of a supported minor that lists an NVIDIA driver."""
    found: dict[str, dict[str, str]] = {}
    parts = _RELEASE_HEADING.split(changelog)
    for abandoned, _tag, body in zip(parts[1::3], parts[2::3], parts[3::3], strict=True):
        if abandoned:
            continue
        for minor, block in _MINOR_BLOCK.findall(body):
            if minor not in SUPPORTED_KUBERNETES_VERSIONS:
                continue
            drivers = _drivers_in(block)
            if not drivers:
                continue
            for release in dict.fromkeys(_RELEASE_VERSION.findall(block)):
                if release.startswith(f"{minor}."):
                    found[release] = drivers
    return found


def _drivers_in(block: str) -> dict[str, str]:
    for table in re.findall(r"<table>(.*?)</table>", block, re.S):
        rows = list(_rows(table))
        if not rows or rows[0][:1] != ["Package"]:
            continue
        header = rows[0]
        for cells in rows[1:]:
            if cells[:1] == [DRIVER_PACKAGE]:
                return {
                    arch: _without_package_release(cells[header.index(column)])
                    for column, arch in AMI_TYPE_COLUMNS.items()
                    if column in header and cells[header.index(column)] not in ("", "—")
                }
    return {}


def _rows(table: str) -> Iterator[list[str]]:
    for row in table.split("<tr>")[1:]:
        cells: list[str] = []
        for _kind, attributes, text in _CELL.findall(row):
            span = re.search(r'colspan="(\d+)"', attributes)
            cells += [text.strip()] * (int(span[1]) if span else 1)
        if cells:
            yield cells


def _without_package_release(version: str) -> str:
    """`580.159.03-1.amzn2023` -> `580.159.03`."""
    return version.split("-", 1)[0]


def main() -> None:
    changelog = Path(sys.argv[1]).read_text(encoding="utf-8")
    table = drivers_by_release(changelog)
    OUTPUT.write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")
    print(f"{len(table)} releases -> {OUTPUT}")


if __name__ == "__main__":
    main()
