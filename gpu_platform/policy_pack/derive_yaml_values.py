"""Write the key paths of a chart's values that its templates render whole, as YAML of their own
(`toYaml`, or indented under a block scalar), to `<chart>-<version>.yaml-values.txt` beside this
script, one dotted path per line.

    helm pull nvidia/gpu-operator --version v26.7.0 --untar
    uv run python -m gpu_platform.policy_pack.derive_yaml_values gpu-operator --version v26.7.0

A chart writes every other value into its YAML as it is, where a line break, a quote or a
document marker adds YAML of the value's own; the policy pack and the config loader refuse those
there (`platform_values.UNSAFE_TEXT`), and leave alone what lies below these paths. A template
this script does not recognise leaves its paths out of the list, so they are judged as
scalars: the list only ever relaxes what the chart provably renders whole. Run it on the chart
directory whenever the chart's version in gpu_platform/versions.py changes, commit the list it
writes, and delete the previous version's list.
"""

import re
from pathlib import Path
from typing import Annotated

import typer

from gpu_platform.kubernetes.chart_files import ChartName, ChartVersion, write_derived
from gpu_platform.versions import GPU_OPERATOR_CHART

_ACTION = re.compile(r"\{\{-?(.*?)-?\}\}", re.DOTALL)
_PATH = re.compile(r"\.Values\.([A-Za-z0-9_.-]+)")
# An action rendering a value whole: `toYaml .Values.a.b`, `toYaml (omit .Values.a.b "key")`,
# `.Values.a.b | toYaml`.
_TO_YAML = re.compile(
    r"\s*toYaml\s+\(?(?:omit\s+)?\.Values\.([A-Za-z0-9_.-]+)|\s*\.Values\.([A-Za-z0-9_.-]+)\s*\|\s*toYaml\b"
)
_WITH = re.compile(r"\s*(?:with|range)\s+\.Values\.([A-Za-z0-9_.-]+)\s*$")
_DOT_TO_YAML = re.compile(r"\s*toYaml\s+\.\s")
# `key: |` then `{{- .Values.a.b | nindent N }}`: every line of the value indented under the
# block scalar (templates/dcgm_exporter_config.yaml).
_BLOCK = re.compile(r":\s*\|[-+]?\s*$")
_INDENTED = re.compile(r"\s*\.Values\.([A-Za-z0-9_.-]+)\s*\|\s*nindent\s+[0-9]+\s*$")
_CONDITION = re.compile(r"\s*(?:if|else\s+if)\s")


def _below(path: str, under: str) -> bool:
    return path == under or path.startswith(f"{under}.")


def rendered(template: str) -> tuple[set[str], set[str], set[str]]:
    """The value paths a template renders whole; those it writes as they are; and those whose
    entries it renders in a `with` or `range` block of its own (`.` rebound to the value)."""
    whole: set[str] = set()
    scalar: set[str] = set()
    scoped: set[str] = set()
    actions = list(_ACTION.finditer(template))
    for i, action in enumerate(actions):
        body = action.group(1)
        if _CONDITION.match(body):
            continue
        to_yaml = _TO_YAML.match(body)
        with_ = _WITH.match(body)
        indented = _INDENTED.match(body)
        before = template[actions[i - 1].end() if i else 0 : action.start()]
        if to_yaml:
            whole.add(to_yaml.group(1) or to_yaml.group(2))
        elif with_ and i + 1 < len(actions) and _DOT_TO_YAML.match(actions[i + 1].group(1)):
            whole.add(with_.group(1))
        elif with_:
            scoped.add(with_.group(1))
        elif indented and _BLOCK.search(before.rstrip(" \n")):
            whole.add(indented.group(1))
        else:
            scalar |= set(_PATH.findall(body))
    return whole, scalar, scoped


def derive(chart: Path) -> list[str]:
    """The sorted paths the chart's and its subcharts' templates (a subchart's under its name,
    as its parent's values hold them) render whole, and never write any part of as it is: a
    value one template renders whole (the GPU Operator's `daemonsets` in its GPUCluster) another
    may write a key of unescaped (`daemonsets.priorityClassName` in its ClusterPolicy)."""
    whole: set[str] = set()
    scalar: set[str] = set()
    scoped: set[str] = set()
    for template in sorted(chart.glob("**/templates/*")):
        parts = template.relative_to(chart).parts
        prefix = "".join(f"{parts[i + 1]}." for i in range(len(parts) - 2) if parts[i] == "charts")
        found = rendered(template.read_text())
        whole |= {prefix + path for path in found[0]}
        scalar |= {prefix + path for path in found[1]}
        scoped |= {prefix + path for path in found[2]}
    return sorted(
        path
        for path in whole
        if not any(_below(s, path) for s in scalar)
        and not any(_below(s, path) or _below(path, s) for s in scoped)
    )


def key_list_file(version: str, chart: str = GPU_OPERATOR_CHART.name) -> Path:
    """Where the list of `chart` at `version` is committed."""
    return Path(__file__).parent / f"{chart}-{version}.yaml-values.txt"


def main(
    chart_dir: Annotated[Path, typer.Argument(exists=True, file_okay=False, help="The chart")],
    version: ChartVersion = GPU_OPERATOR_CHART.version,
    chart: ChartName = GPU_OPERATOR_CHART.name,
) -> None:
    """Write the paths the chart renders whole, one per line, beside this script."""
    paths = derive(chart_dir)
    write_derived(key_list_file(version, chart), "\n".join(paths) + "\n", f"{len(paths)} paths")


if __name__ == "__main__":
    typer.run(main)
