"""Write the OpenAPI schemas of Karpenter's NodePool and EC2NodeClass CRDs beside this script.

    uv run python -m components.eks.karpenter.crd_schemas.derive \\
        karpenter.sh_nodepools.yaml karpenter.k8s.aws_ec2nodeclasses.yaml --version 1.14.1

The inputs are the CRDs of the Karpenter release `KARPENTER_CHART` pins: aws/karpenter-provider-aws
keeps them in `pkg/apis/crds/` (`git show v1.14.1:pkg/apis/crds/karpenter.sh_nodepools.yaml`),
and the `karpenter-crd` chart of the same version ships them (`helm pull
oci://public.ecr.aws/karpenter/karpenter-crd --version 1.14.1 --untar`, in `crds/`). Run it
whenever `KARPENTER_CHART` in components/versions.py changes, commit the files it writes
(`nodepool-v<version>.json`, `ec2nodeclass-v<version>.json`) and delete the previous version's:
the tests read only the committed files.

Each file holds the `openAPIV3Schema` of the CRD's `v1` version, the one the API server serves
and stores, as compact JSON and without its descriptions, which document fields but validate
nothing.
"""

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from components.eks.karpenter.crd_schemas import KINDS, schema_file
from components.versions import KARPENTER_CHART

VERSION = "v1"
# Keywords whose value is one schema, a list of schemas, or a map of names to schemas.
_ONE_SCHEMA = ("items", "additionalProperties", "not")
_SCHEMA_LISTS = ("anyOf", "allOf", "oneOf")
_SCHEMA_MAPS = ("properties",)


def derive(crd_yaml: str) -> tuple[str, dict[str, Any]]:
    """The CRD's kind and the schema of its served and stored `v1` version, undescribed."""
    crd = yaml.safe_load(crd_yaml)
    kind = crd["spec"]["names"]["kind"]
    if kind not in KINDS:
        raise ValueError(f"a CRD of {', '.join(KINDS)}; this one defines {kind}")
    versions = {v["name"]: v for v in crd["spec"]["versions"]}
    version = versions.get(VERSION)
    if version is None or not (version.get("served") and version.get("storage")):
        raise ValueError(
            f"{kind}: no {VERSION} version that is both served and stored (found"
            f" {', '.join(versions)})"
        )
    return kind, without_descriptions(version["schema"]["openAPIV3Schema"])


def without_descriptions(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema without `description` keywords; a property named `description` stays."""
    result: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "description":
            continue
        if key in _ONE_SCHEMA and isinstance(value, dict):
            result[key] = without_descriptions(value)
        elif key in _SCHEMA_LISTS:
            result[key] = [without_descriptions(s) for s in value]
        elif key in _SCHEMA_MAPS:
            result[key] = {name: without_descriptions(s) for name, s in value.items()}
        else:
            result[key] = value
    return result


def main(
    crds: Annotated[
        list[Path],
        typer.Argument(exists=True, dir_okay=False, help="The NodePool and EC2NodeClass CRDs"),
    ],
    version: Annotated[
        str, typer.Option(help="The Karpenter version the CRDs belong to")
    ] = KARPENTER_CHART.version,
) -> None:
    """Write each CRD's schema beside this script."""
    written = write_schemas([p.read_text() for p in crds], version)
    for path in written:
        typer.echo(f"wrote {path}")


def write_schemas(crd_yamls: Sequence[str], version: str) -> list[Path]:
    derived = dict(derive(text) for text in crd_yamls)
    missing = [kind for kind in KINDS if kind not in derived]
    if missing:
        raise ValueError(f"the CRDs of {', '.join(missing)} as well")
    written = []
    for kind, schema in derived.items():
        target = schema_file(kind, version)
        target.write_text(json.dumps(schema, separators=(",", ":"), sort_keys=True) + "\n")
        written.append(target)
    return written


if __name__ == "__main__":
    typer.run(main)
