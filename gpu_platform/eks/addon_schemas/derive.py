"""Write an EKS add-on's configuration schema beside this script, without its descriptions.

    git clone --branch v1.7.0 https://github.com/aws/eks-node-monitoring-agent
    uv run python -m gpu_platform.eks.addon_schemas.derive \
        eks-node-monitoring-agent/charts/configuration.schema.json \
        --addon eks-node-monitoring-agent --version v1.7.0

Run it when the add-on version the tests check against moves, commit the file it writes, and
delete the previous version's.
"""

import json
from pathlib import Path
from typing import Annotated

import typer

from gpu_platform.eks.addon_schemas import schema_file_name
from gpu_platform.kubernetes.chart_files import write_derived
from gpu_platform.kubernetes.crd_schemas import without_descriptions


def main(
    schema: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="schema file")],
    addon: Annotated[str, typer.Option(help="The add-on's name")],
    version: Annotated[str, typer.Option(help="The upstream tag the schema is from")],
) -> None:
    """Write the schema beside this script."""
    derived = without_descriptions(json.loads(schema.read_text()))
    write_derived(
        Path(__file__).with_name(schema_file_name(addon, version)),
        json.dumps(derived, indent=1, sort_keys=True) + "\n",
        f"{addon}'s configuration schema",
    )


if __name__ == "__main__":
    typer.run(main)
