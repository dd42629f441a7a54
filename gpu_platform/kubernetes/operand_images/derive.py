"""Write the digests of the GPU Operator's operand images to `gpu-operator-<version>.json`.

    git show v26.7.0:bundle/manifests/gpu-operator-certified.clusterserviceversion.yaml > csv.yaml
    git show v26.7.0:deployments/gpu-operator/values.yaml > values.yaml
    uv run python -m gpu_platform.kubernetes.operand_images.derive csv.yaml values.yaml \
        --version v26.7.0

(in a clone of NVIDIA/gpu-operator). Run it whenever GPU_OPERATOR_CHART's version changes,
commit the file it writes and delete the previous version's. It fails when the bundle has no
image of exactly the repository and tag the chart names for an operand.
"""

import json
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from gpu_platform.kubernetes.chart_files import ChartVersion, write_derived
from gpu_platform.kubernetes.operand_images import OPERANDS, digests_file
from gpu_platform.versions import GPU_OPERATOR_CHART


def derive(csv: dict[str, Any], values: dict[str, Any]) -> dict[str, str]:
    """Operand -> the bundle's `repository/image:tag@sha256:...` for the chart's tag."""
    related = [entry["image"] for entry in csv["spec"]["relatedImages"]]
    found: dict[str, str] = {}
    for operand in OPERANDS:
        spec = values[operand]
        wanted = f"{spec['repository']}/{spec['image']}:{spec['version']}@sha256:"
        matches = sorted({image for image in related if image.startswith(wanted)})
        if len(matches) != 1:
            raise SystemExit(f"{operand}: the bundle has {len(matches)} images {wanted}...")
        found[operand] = matches[0]
    return found


def main(
    csv: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="The bundle's CSV")],
    values: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="values.yaml")],
    version: ChartVersion = GPU_OPERATOR_CHART.version,
) -> None:
    """Write the operand images with their digests beside this script."""
    images = derive(yaml.safe_load(csv.read_text()), yaml.safe_load(values.read_text()))
    text = json.dumps(images, indent=2, sort_keys=True) + "\n"
    write_derived(digests_file(version), text, f"{len(images)} operand images")


if __name__ == "__main__":
    typer.run(main)
