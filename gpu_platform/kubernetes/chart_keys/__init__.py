"""The key paths of a chart's values, one dotted path per line, per chart and version: the GPU
Operator's and Karpenter's, the EFA device plugin's, and those of the subcharts the platform
sets values of through their parents (the GPU Operator's node-feature-discovery,
kube-prometheus-stack's prometheus-node-exporter).

None of them holds its values to a closed schema, so Helm takes a misspelt key without a word
and the setting silently does nothing. `derive.py` reads a chart version's values.yaml and
writes its key paths to `<chart>-<version>.txt` beside this file; the tests check every path the
platform sets against that list, and config validation checks `operator.overrides` names
against the GPU Operator's.
"""

from collections.abc import Collection, Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from gpu_platform.versions import GPU_OPERATOR_CHART

KEY_LISTS_DIR = Path(__file__).parent


def key_list_file(version: str, chart: str = GPU_OPERATOR_CHART.name) -> Path:
    """Where the key list of `chart` at `version` is committed."""
    return KEY_LISTS_DIR / f"{chart}-{version}.txt"


# Keys a chart's templates read that its values.yaml only names in a comment, so that no key
# list derived from it holds them: the GPU Operator's `operator.version` and
# `validator.version` (deployments/gpu-operator/values.yaml at v26.7.0, `#version: ""`, "If
# version is not specified, then default is to use chart.AppVersion"; templates/_helpers.tpl,
# `gpu-operator.fullimage` and `validator.fullimage`, read `version | default
# .Chart.AppVersion`).
COMMENTED_KEYS: Mapping[tuple[str, str], frozenset[str]] = {
    (GPU_OPERATOR_CHART.name, "v26.7.0"): frozenset({"operator.version", "validator.version"}),
}


@cache
def chart_key_paths(version: str, chart: str = GPU_OPERATOR_CHART.name) -> frozenset[str]:
    """Every leaf key path of `chart` `version`'s values (`dcgmExporter.serviceMonitor.enabled`),
    and those its templates read that values.yaml names only in a comment."""
    listed = frozenset(key_list_file(version, chart).read_text().split())
    return listed | COMMENTED_KEYS.get((chart, version), frozenset())


def chart_components(version: str) -> frozenset[str]:
    """The chart's top-level components (`driver`, `dcgmExporter`, ...): keys holding a map."""
    return frozenset(path.split(".", 1)[0] for path in chart_key_paths(version) if "." in path)


def key_paths(
    values: Mapping[str, Any], opaque: Collection[str] = (), prefix: str = ""
) -> Iterator[str]:
    """The dotted paths of the leaves of a values tree.

    Scalars, lists and empty maps are leaves, and so is a map at one of the `opaque` paths: a map
    whose keys are the user's names (ConfigMap data, labels) rather than the chart's.
    """
    for key, value in values.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping) and value and path not in opaque:
            yield from key_paths(value, opaque, f"{path}.")
        else:
            yield path
