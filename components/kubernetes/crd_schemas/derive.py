"""Write the schemas of a chart's CRDs beside this script, one JSON file per CRD.

    helm pull nvidia/gpu-operator --version v26.7.0 --untar
    uv run python -m components.kubernetes.crd_schemas.derive \
        gpu-operator/crds/nvidia.com_nvidiadrivers.yaml --chart gpu-operator --version v26.7.0

Run it on the CRDs of each custom resource the platform creates whenever the chart's pin in
components/versions.py changes, commit the files it writes, and delete the previous version's.
"""

import json
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from components.kubernetes.crd_schemas import schema_file, without_descriptions
from components.versions import GPU_OPERATOR_CHART


def derive(crd_yaml: str) -> list[dict[str, Any]]:
    """Each CRD of a file: its name, group, kind, scope and the schema of each served version."""
    return [
        {
            "name": crd["metadata"]["name"],
            "group": crd["spec"]["group"],
            "kind": crd["spec"]["names"]["kind"],
            "scope": crd["spec"]["scope"],
            "versions": {
                version["name"]: without_descriptions(version["schema"]["openAPIV3Schema"])
                for version in crd["spec"]["versions"]
                if version.get("served", True)
            },
        }
        for crd in yaml.safe_load_all(crd_yaml)
        if crd and crd.get("kind") == "CustomResourceDefinition"
    ]


def main(
    crds: Annotated[list[Path], typer.Argument(exists=True, dir_okay=False, help="CRD files")],
    chart: Annotated[
        str, typer.Option(help="The chart the CRDs belong to")
    ] = GPU_OPERATOR_CHART.name,
    version: Annotated[
        str, typer.Option(help="The chart version the CRDs belong to")
    ] = GPU_OPERATOR_CHART.version,
) -> None:
    """Write each CRD's schemas beside this script."""
    for path in crds:
        for crd in derive(path.read_text()):
            target = schema_file(chart, version, crd["name"])
            target.write_text(json.dumps(crd, indent=1, sort_keys=True) + "\n")
            typer.echo(f"wrote {crd['kind']} ({', '.join(crd['versions'])}) to {target}")


if __name__ == "__main__":
    typer.run(main)
