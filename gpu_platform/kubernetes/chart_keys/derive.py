"""Write the key paths of a chart's values.yaml to `<chart>-<version>.txt`.

    uv run python -m gpu_platform.kubernetes.chart_keys.derive values.yaml --version v26.7.0
    uv run python -m gpu_platform.kubernetes.chart_keys.derive values.yaml --chart karpenter \
        --version 1.14.1

Run it on the chart's own values file (`helm show values nvidia/gpu-operator --version
<version>`, `helm show values oci://public.ecr.aws/karpenter/karpenter --version <version>`; a
subchart's from its parent's `charts/` directory, `helm pull --untar`) whenever a chart or
subchart version in gpu_platform/versions.py changes, commit the list it writes, and delete the
previous version's list.
"""

from pathlib import Path
from typing import Annotated

import typer
import yaml

from gpu_platform.kubernetes.chart_files import ChartName, ChartVersion, write_derived
from gpu_platform.kubernetes.chart_keys import key_list_file, key_paths
from gpu_platform.versions import GPU_OPERATOR_CHART


def derive(values_yaml: str) -> list[str]:
    """The sorted leaf key paths of a chart's values file."""
    return sorted(key_paths(yaml.safe_load(values_yaml) or {}))


def main(
    values: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="The values.yaml")],
    version: ChartVersion = GPU_OPERATOR_CHART.version,
    chart: ChartName = GPU_OPERATOR_CHART.name,
) -> None:
    """Write the chart's key paths, one per line, beside this script."""
    paths = derive(values.read_text())
    write_derived(key_list_file(version, chart), "\n".join(paths) + "\n", f"{len(paths)} key paths")


if __name__ == "__main__":
    typer.run(main)
