"""Write `max_pods.json` beside this script from amazon-eks-ami's instance data.

    git clone https://github.com/awslabs/amazon-eks-ami
    uv run python -m gpu_platform.eks.max_pods.derive \
        amazon-eks-ami/nodeadm/internal/kubelet/instance-info.jsonl

nodeadm sets the kubelet's `maxPods` to the ENIs of the instance's default network card times
their IPv4 addresses less one, plus 2 (`calculateStandardMaxPods`,
nodeadm/internal/kubelet/eni_max_pods.go), from this file, which it embeds. Only the GPU
families (G, Gr, P) are kept. Run it again when the data moves (the file's last change read:
4d63a3bc2d, 2026-07-01) and commit what it writes.
"""

import json
import re
from pathlib import Path
from typing import Annotated

import typer

from gpu_platform.kubernetes.chart_files import write_derived

_GPU_FAMILY = re.compile(r"^(g|gr|p)\d")


def main(
    instance_info: Annotated[Path, typer.Argument(exists=True, dir_okay=False)],
) -> None:
    """Write every GPU instance type's maxPods beside this script."""
    found = {}
    for line in instance_info.read_text().splitlines():
        entry = json.loads(line)
        name = entry["instanceType"]
        if _GPU_FAMILY.match(name):
            found[name] = entry["defaultMaxENIs"] * (entry["ipv4AddressesPerInterface"] - 1) + 2
    write_derived(
        Path(__file__).with_name("max_pods.json"),
        json.dumps(found, indent=1, sort_keys=True) + "\n",
        "the kubelet's maxPods of each GPU instance type",
    )


if __name__ == "__main__":
    typer.run(main)
