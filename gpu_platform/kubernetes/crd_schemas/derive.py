"""Write the schemas of a chart's CRDs beside this script, one JSON file per CRD.

    helm pull nvidia/gpu-operator --version v26.7.0 --untar
    uv run python -m gpu_platform.kubernetes.crd_schemas.derive \\
        gpu-operator/crds/nvidia.com_nvidiadrivers.yaml --chart gpu-operator --version v26.7.0

    helm pull oci://public.ecr.aws/karpenter/karpenter --version 1.14.1 --untar
    uv run python -m gpu_platform.kubernetes.crd_schemas.derive \\
        karpenter/crds/karpenter.sh_nodepools.yaml \\
        karpenter/crds/karpenter.k8s.aws_ec2nodeclasses.yaml --chart karpenter --version 1.14.1

    git clone --branch v0.19.2 --depth 1 https://github.com/kubernetes-sigs/kueue
    uv run python -m gpu_platform.kubernetes.crd_schemas.derive \\
        kueue/config/components/crd/bases/kueue.x-k8s.io_{resourceflavors,clusterqueues}.yaml \\
        kueue/config/components/crd/bases/kueue.x-k8s.io_{localqueues,cohorts}.yaml \\
        kueue/config/components/crd/bases/kueue.x-k8s.io_admissionchecks.yaml \\
        kueue/config/components/crd/bases/kueue.x-k8s.io_provisioningrequestconfigs.yaml \\
        kueue/config/components/crd/bases/kueue.x-k8s.io_workloadpriorityclasses.yaml \\
        --chart kueue --version 0.19.2

The `kueue` chart's CRDs are Helm templates (`charts/kueue/templates/crd/`), which
kubernetes-sigs/kueue's yaml-processor generates from `config/components/crd/bases/` at the same
tag, adding only labels and the conversion webhook's service, the schemas the same: derive from
the plain CRDs of the tag.

The `karpenter` chart's `crds/` are aws/karpenter-provider-aws's `pkg/apis/crds/` at the same
tag (`git show v1.14.1:pkg/apis/crds/karpenter.sh_nodepools.yaml`), which the `karpenter-crd`
chart the platform installs them with ships as templates.

Run it on the CRDs of each custom resource the platform creates whenever the chart's pin in
gpu_platform/versions.py changes, commit the files it writes, and delete the previous version's:
the tests read only the committed files.
"""

import json
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from gpu_platform.kubernetes.chart_files import ChartName, ChartVersion, write_derived
from gpu_platform.kubernetes.crd_schemas import schema_file, without_descriptions
from gpu_platform.versions import GPU_OPERATOR_CHART


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
    chart: ChartName = GPU_OPERATOR_CHART.name,
    version: ChartVersion = GPU_OPERATOR_CHART.version,
) -> None:
    """Write each CRD's schemas beside this script."""
    for path in crds:
        for crd in derive(path.read_text()):
            write_derived(
                schema_file(chart, version, crd["name"]),
                json.dumps(crd, indent=1, sort_keys=True) + "\n",
                f"{crd['kind']} ({', '.join(crd['versions'])})",
            )


if __name__ == "__main__":
    typer.run(main)
