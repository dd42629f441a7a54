"""A Helm chart's archive, as `gpu-platform lock` reads it for the images the chart runs by its
own default: fetched at its pinned version from its repository, and its image maps read from
its values and from those of the subcharts it enables, as Helm merges them.

A Helm repository lists each chart version's archive in its `index.yaml` (`entries.<chart>[]`,
`version`, `urls`, `digest`: the archive's sha256; Helm's "Chart Repository Guide"); an OCI
registry holds it as an artifact whose layer is the archive (Helm's "Use OCI-based registries":
`oci://<registry>/<path>`, the chart `<path>/<chart>:<version>`, layer media type
`application/vnd.cncf.helm.chart.content.v1.tar+gzip`). The archive holds `<chart>/Chart.yaml`,
`<chart>/values.yaml` and each dependency under `<chart>/charts/`, a directory or an archive of
its own (Helm's chartutil.Save writes directories; `helm dependency build` leaves archives).

A repository's index.yaml lists every release of every chart it holds: prometheus-community's
runs to several MB, read and parsed within the command's deadline on each run. The same charts
are published as OCI artifacts (`oci://ghcr.io/prometheus-community/charts`, the repository's
README), which are read by their one manifest and layer where versions.py names that repository.
"""

import hashlib
import io
import json
import re
import tarfile
import urllib.parse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from gpu_platform import yaml_documents
from gpu_platform.kubernetes.chart_images import is_image_map
from gpu_platform.lock.registry import ImageNotResolved, RegistryClient
from gpu_platform.lock.sources import Sources
from gpu_platform.versions import HelmChart

HELM_CHART_LAYER = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
_OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"


class ChartNotRead(Exception):
    """The chart's archive could not be had, or is not one Helm would install."""


@dataclass(frozen=True)
class ChartImage:
    """An image map of the chart's values (`registry`, `repository`, `tag`, ...), as Helm
    gives it to the template that renders it."""

    path: str
    """Its path in the chart's values, a subchart's under the subchart's key."""
    chart: str
    """The chart whose values hold it."""
    app_version: str
    """That chart's appVersion."""
    values: Mapping[str, Any]


def fetch(sources: Sources, registries: RegistryClient, chart: HelmChart) -> tuple[bytes, str]:
    """The chart's archive at its version, and the URL it was read from."""
    if chart.repository.startswith("oci://"):
        return _from_registry(registries, chart)
    index_url = f"{chart.repository.rstrip('/')}/index.yaml"
    answer = sources.get(index_url, "the chart repository's index.yaml")
    if answer.status != 200:
        raise ChartNotRead(f"{index_url} answered {answer.status}")
    try:
        index = yaml_documents.load(answer.body)
        versions = index["entries"][chart.name]
    except (ValueError, KeyError, TypeError) as error:
        raise ChartNotRead(f"{index_url} lists no chart {chart.name} ({error!r})") from error
    listed = next((v for v in versions if str(v.get("version")) == chart.version), None)
    if listed is None or not listed.get("urls"):
        raise ChartNotRead(f"{index_url} lists no {chart.name} {chart.version}")
    url = urllib.parse.urljoin(index_url, str(listed["urls"][0]))
    answer = sources.get(url, f"the {chart.name} {chart.version} archive")
    if answer.status != 200:
        raise ChartNotRead(f"{url} answered {answer.status}")
    expected = listed.get("digest")
    if expected and hashlib.sha256(answer.body).hexdigest() != expected:
        raise ChartNotRead(f"{url} is not the archive {index_url} lists (sha256 {expected})")
    return answer.body, url


def _from_registry(registries: RegistryClient, chart: HelmChart) -> tuple[bytes, str]:
    repository = f"{chart.repository.removeprefix('oci://').rstrip('/')}/{chart.name}"
    try:
        # An OCI tag cannot hold SemVer's `+`: Helm pushes `1.0.0+build` as `1.0.0_build`
        # (helm/helm pkg/registry/util.go, parseReference).
        tag = chart.version.replace("+", "_")
        manifest, _ = registries.read(repository, f"manifests/{tag}", _OCI_MANIFEST)
        layers = json.loads(manifest).get("layers") or []
        digest = next(str(d["digest"]) for d in layers if d.get("mediaType") == HELM_CHART_LAYER)
        archive, url = registries.read(repository, f"blobs/{digest}", "*/*")
    except ImageNotResolved as error:
        raise ChartNotRead(error.detail) from error
    except (ValueError, KeyError, StopIteration, AttributeError) as error:
        raise ChartNotRead(f"{repository}:{chart.version} holds no Helm chart layer") from error
    if "sha256:" + hashlib.sha256(archive).hexdigest() != digest:
        raise ChartNotRead(f"{url} is not the blob {digest}")
    return archive, url


def chart_templates(archive: bytes, name: str) -> dict[str, str]:
    """The text of the templates of the chart and of each subchart it holds, by chart name."""
    try:
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
            return _templates(_Archive(tar), name)
    except (tarfile.TarError, OSError, ValueError, KeyError, TypeError) as error:
        raise ChartNotRead(f"not a Helm chart archive of {name}: {error}") from error


def _templates(archive: "_Archive", directory: str) -> dict[str, str]:
    chart = archive.yaml(f"{directory}/Chart.yaml")
    prefix = f"{directory}/templates/"
    texts = [archive.read(f).decode() for f in sorted(archive.files) if f.startswith(prefix)]
    found = {str(chart["name"]): "\n".join(texts)}
    for dependency in chart.get("dependencies") or []:
        inner = _subchart_directory(archive, directory, dependency)
        if inner is None:
            packed = _packed(archive, directory, dependency)
            found.update(chart_templates(archive.read(packed), dependency["name"]))
        else:
            found.update(_templates(archive, inner))
    return found


def chart_images(archive: bytes, name: str) -> list[ChartImage]:
    """Every image map of the chart's values and of the subcharts its values enable."""
    try:
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
            return list(_images(_Archive(tar), name))
    except (tarfile.TarError, OSError, ValueError, KeyError, TypeError) as error:
        raise ChartNotRead(f"not a Helm chart archive of {name}: {error}") from error


class _Archive:
    def __init__(self, tar: tarfile.TarFile):
        self.files = {member.name for member in tar.getmembers() if member.isfile()}
        self.tar = tar

    def read(self, name: str) -> bytes:
        file = self.tar.extractfile(name)
        if file is None:
            raise KeyError(name)
        return file.read()

    def yaml(self, name: str) -> Any:
        return yaml_documents.load(self.read(name)) if name in self.files else {}


def _images(archive: _Archive, directory: str) -> Iterator[ChartImage]:
    chart = archive.yaml(f"{directory}/Chart.yaml")
    values = archive.yaml(f"{directory}/values.yaml") or {}
    dependencies = chart.get("dependencies") or []
    # A subchart's key in the parent's values overrides the subchart's own values for it.
    keys = {dependency.get("alias") or dependency["name"] for dependency in dependencies}
    own = {key: value for key, value in values.items() if key not in keys}
    yield from _image_maps(own, chart["name"], str(chart.get("appVersion") or ""), ())
    for dependency in dependencies:
        if not _enabled(values, dependency):
            continue
        key = dependency.get("alias") or dependency["name"]
        inner = _subchart(archive, directory, dependency)
        for image in inner.images:
            merged = _overlaid(image.values, _at(values.get(key), image.path))
            yield ChartImage(f"{key}.{image.path}", image.chart, image.app_version, merged)
        # Helm coalesces the parent's values for a subchart over the subchart's own, keeping
        # the keys only the parent has (helm/helm pkg/chartutil/coalesce.go): an image
        # map the parent alone gives is the subchart's too (kube-prometheus-stack 88.5.3's
        # `crds.upgradeJob.image`, under the `crds` subchart, which has no values.yaml).
        known = {image.path for image in inner.images}
        for image in _image_maps(values.get(key), inner.name, inner.app_version, ()):
            if image.path not in known:
                yield ChartImage(f"{key}.{image.path}", inner.name, inner.app_version, image.values)


@dataclass(frozen=True)
class _Subchart:
    name: str
    app_version: str
    images: list[ChartImage]


def _subchart(archive: _Archive, directory: str, dependency: Mapping[str, Any]) -> _Subchart:
    """The subchart's image maps, from its directory or its own archive under `charts/`."""
    inner = _subchart_directory(archive, directory, dependency)
    if inner is not None:
        chart, images = archive.yaml(f"{inner}/Chart.yaml"), list(_images(archive, inner))
    else:
        with tarfile.open(
            fileobj=io.BytesIO(archive.read(_packed(archive, directory, dependency))), mode="r:gz"
        ) as tar:
            packed = _Archive(tar)
            name = dependency["name"]
            chart, images = packed.yaml(f"{name}/Chart.yaml"), list(_images(packed, name))
    return _Subchart(str(chart["name"]), str(chart.get("appVersion") or ""), images)


def _subchart_directory(
    archive: _Archive, directory: str, dependency: Mapping[str, Any]
) -> str | None:
    inner = f"{directory}/charts/{dependency['name']}"
    return inner if f"{inner}/Chart.yaml" in archive.files else None


def _packed(archive: _Archive, directory: str, dependency: Mapping[str, Any]) -> str:
    """The subchart's own archive, `<name>-<version>.tgz` as `helm dependency build` names it:
    its version a SemVer (Helm's rule for chart versions), so that another subchart whose name
    starts with this one's and a `-` is not taken for it."""
    name = re.escape(str(dependency["name"]))
    pattern = re.compile(
        rf"{re.escape(directory)}/charts/{name}-\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.+-]*)?\.tgz"
    )
    packed = [file for file in archive.files if pattern.fullmatch(file)]
    if len(packed) != 1:
        raise KeyError(f"{directory}/charts/{dependency['name']}")
    return packed[0]


def _enabled(values: Mapping[str, Any], dependency: Mapping[str, Any]) -> bool:
    """Helm's dependency `condition`, then its `tags` (helm/helm pkg/chartutil/dependencies.go,
    processDependencyTags and processDependencyConditions): the first of the
    condition's comma-separated value paths that the values hold decides; else a tag set true
    under the values' `tags` enables it, one set false (and none true) disables it (a tag set to
    other than a bool counts as neither); else it is enabled."""
    for path in str(dependency.get("condition") or "").split(","):
        found = _at(values, path.strip())
        if isinstance(found, bool):
            return found
    tags = values.get("tags")
    given = (
        [tags.get(tag) for tag in dependency.get("tags") or []] if isinstance(tags, Mapping) else []
    )
    # Bools alone, as Helm's `tagValue.(bool)`: in Python `True in {1}` and `False in {0}`.
    set_to = {value for value in given if isinstance(value, bool)}
    return True in set_to or False not in set_to


def _at(values: Any, path: str) -> Any:
    for name in path.split(".") if path else []:
        values = values.get(name) if isinstance(values, Mapping) else None
    return values


def _overlaid(defaults: Mapping[str, Any], overrides: Any) -> Mapping[str, Any]:
    """An image map with the parent chart's values for it over the subchart's own."""
    if not isinstance(overrides, Mapping):
        return defaults
    return {**defaults, **overrides}


def _image_maps(
    values: Any, chart: str, app_version: str, path: tuple[str, ...]
) -> Iterator[ChartImage]:
    if is_image_map(values):
        yield ChartImage(".".join(path), chart, app_version, values)
    if isinstance(values, Mapping):
        for key, value in values.items():
            yield from _image_maps(value, chart, app_version, (*path, str(key)))
    elif isinstance(values, list):
        for index, value in enumerate(values):
            yield from _image_maps(value, chart, app_version, (*path, str(index)))
