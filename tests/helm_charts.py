"""Helm chart archives made by the tests, in the layout Helm packages (`<chart>/Chart.yaml`,
`<chart>/values.yaml`, each dependency under `<chart>/charts/`), and the repository index that
lists them (Helm's "Chart Repository Guide": `entries.<chart>[].version`, `urls`, `digest`).
Test data: small charts shaped as kube-prometheus-stack and its subcharts are, not their
releases."""

import gzip
import hashlib
import io
import tarfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml


@dataclass(frozen=True)
class Chart:
    name: str
    version: str
    app_version: str
    values: Mapping[str, Any]
    dependencies: list[tuple["Chart", str | None]] = field(default_factory=list)
    """Each subchart and its `condition`."""
    packed: bool = False
    """As a subchart: an archive of its own under `charts/` rather than a directory."""
    templates: Mapping[str, str] = field(default_factory=dict)
    """Its files under `templates/`, by name."""
    tags: Mapping[str, list[str]] = field(default_factory=dict)
    """Each subchart's dependency `tags`, by its name."""


def _add(tar: tarfile.TarFile, name: str, content: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(content)
    tar.addfile(info, io.BytesIO(content))


def _write(tar: tarfile.TarFile, chart: Chart, directory: str) -> None:
    described: dict[str, Any] = {
        "apiVersion": "v2",
        "name": chart.name,
        "version": chart.version,
        "appVersion": chart.app_version,
    }
    if chart.dependencies:
        described["dependencies"] = [
            {
                "name": sub.name,
                "version": sub.version,
                **({"condition": c} if c else {}),
                **({"tags": chart.tags[sub.name]} if sub.name in chart.tags else {}),
            }
            for sub, c in chart.dependencies
        ]
    _add(tar, f"{directory}/Chart.yaml", yaml.safe_dump(described).encode())
    _add(tar, f"{directory}/values.yaml", yaml.safe_dump(dict(chart.values)).encode())
    for name, text in chart.templates.items():
        _add(tar, f"{directory}/templates/{name}", text.encode())
    for sub, _ in chart.dependencies:
        if sub.packed:
            _add(tar, f"{directory}/charts/{sub.name}-{sub.version}.tgz", archive(sub))
        else:
            _write(tar, sub, f"{directory}/charts/{sub.name}")


def archive(chart: Chart) -> bytes:
    """The chart as `helm package` writes it: a gzipped tar under `<chart>/`."""
    out = io.BytesIO()
    # The gzip header's time fixed, so that the same chart is the same archive (and sha256).
    with (
        gzip.GzipFile(fileobj=out, mode="wb", mtime=0) as packed,
        tarfile.open(fileobj=packed, mode="w") as tar,
    ):
        _write(tar, chart, chart.name)
    return out.getvalue()


def index(chart: Chart, url: str, content: bytes) -> bytes:
    """A repository's index.yaml listing the chart at `url`, and an older version of it."""
    entries = [
        {
            "name": chart.name,
            "version": chart.version,
            "urls": [url],
            "digest": hashlib.sha256(content).hexdigest(),
        },
        {"name": chart.name, "version": "1.0.0", "urls": ["old.tgz"], "digest": "00" * 32},
    ]
    return yaml.safe_dump({"apiVersion": "v1", "entries": {chart.name: entries}}).encode()
