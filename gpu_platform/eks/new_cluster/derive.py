"""Rewrite addon_versions.json from what EKS lists, one file of `describe-addon-versions`
output per Kubernetes minor:

    for v in 1.33 1.34 1.35 1.36; do
      aws eks describe-addon-versions --kubernetes-version $v \
        --addon-name vpc-cni --addon-name coredns --addon-name kube-proxy \
        --addon-name eks-pod-identity-agent --addon-name aws-ebs-csi-driver > $v.json
    done
    uv run python -m gpu_platform.eks.new_cluster.derive 1.33.json 1.34.json 1.35.json 1.36.json

Each add-on's newest version whose compatibilities name the minor is kept. Run it when the
platform moves its pins, review the diff, and commit it; `gpu-platform preflight` checks the
pins against the stack's region before `pulumi up`.
"""

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from gpu_platform.eks.new_cluster.addon_pins import ADDON_VERSIONS_FILE, CORE_ADDONS
from gpu_platform.kubernetes.chart_files import write_derived
from gpu_platform.version_order import version_key


def newest_versions(response: dict[str, Any], minor: str) -> dict[str, str]:
    """Each core add-on's newest version compatible with `minor` in a DescribeAddonVersions
    response."""
    found: dict[str, str] = {}
    for addon in response["addons"]:
        if addon["addonName"] not in CORE_ADDONS:
            continue
        versions = [
            v["addonVersion"]
            for v in addon["addonVersions"]
            if any(c.get("clusterVersion") == minor for c in v.get("compatibilities", []))
        ]
        if versions:
            found[addon["addonName"]] = max(versions, key=version_key)
    return dict(sorted(found.items()))


def main(
    responses: Annotated[list[Path], typer.Argument(exists=True, dir_okay=False)],
) -> None:
    """Each file is named for its minor (`1.35.json`)."""
    versions = {
        path.stem: newest_versions(json.loads(path.read_text()), path.stem)
        for path in sorted(responses)
    }
    document = {
        "source": json.loads(ADDON_VERSIONS_FILE.read_text())["source"],
        "versions": versions,
    }
    write_derived(ADDON_VERSIONS_FILE, json.dumps(document, indent=1) + "\n", "EKS add-on versions")


if __name__ == "__main__":
    typer.run(main)
