"""The images the Prometheus stack's charts run, as `registry/repository`, one per line.

kube-prometheus-stack and its subcharts (kube-state-metrics, prometheus-node-exporter, Grafana)
name each image as a map of `registry` and `repository` in their values.yaml, from which their
templates join `registry/repository:tag`. `derive.py` reads those values files and writes every
such image to `kube-prometheus-stack.txt` beside this file, the charts and versions it read on
its first line; Binary Authorization's policy admits exactly these repositories
(gpu_platform/gke/new_cluster/binary_authorization.py), so an image a new chart release moves to
another registry (the admission webhook's certificate job went from registry.k8s.io to ghcr.io)
is admitted once the list is derived again.
"""

from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any, TypeGuard

PROMETHEUS_STACK_IMAGES_FILE = Path(__file__).parent / "kube-prometheus-stack.txt"


def is_image_map(values: Any) -> TypeGuard[Mapping[str, Any]]:
    """Whether `values` is an image map: a `registry` and a `repository`, neither empty."""
    if not isinstance(values, Mapping):
        return False
    registry, repository = values.get("registry"), values.get("repository")
    named = isinstance(registry, str) and isinstance(repository, str)
    return named and bool(registry and repository)


def image_repositories(values: Any) -> Iterator[str]:
    """`registry/repository` of every image map (`registry` and `repository` keys) in values."""
    if is_image_map(values):
        yield f"{values['registry']}/{values['repository']}"
    if isinstance(values, Mapping):
        for value in values.values():
            yield from image_repositories(value)
    elif isinstance(values, list):
        for value in values:
            yield from image_repositories(value)


@cache
def prometheus_stack_images() -> tuple[str, ...]:
    """The committed list, without its header line."""
    lines = PROMETHEUS_STACK_IMAGES_FILE.read_text().splitlines()
    return tuple(line for line in lines if line and not line.startswith("#"))
