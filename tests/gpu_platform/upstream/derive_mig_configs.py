"""Write the uniform MIG configurations of the GPU Operator's MIG manager as the tests read them.

The operator installs a default mig-parted config (`assets/state-mig-manager/0400_configmap.yaml`,
ConfigMap `default-mig-parted-config`); a node labelled `nvidia.com/mig.config=all-<profile>` is
partitioned by its `all-<profile>` entry, and where no entry exists, or none for the node's GPU,
the MIG manager fails there. This keeps, for each uniform profile, how many instances of it an
entry puts on one GPU (one count per entry: `all-1g.10gb` has 7 for the 80 GB GPUs and 4 for the
A100 40 GB). Re-run it when the pinned chart version moves:

    git show v26.7.0:assets/state-mig-manager/0400_configmap.yaml > configmap.yaml
    python derive_mig_configs.py configmap.yaml NVIDIA/gpu-operator@v26.7.0 > mig_configs.json
"""

import json
import sys
from pathlib import Path
from typing import Any

import yaml


def uniform_profiles(configmap: dict[str, Any]) -> dict[str, list[int]]:
    """Each `all-<profile>` config's profile, with the instance counts of its entries."""
    configs = yaml.safe_load(configmap["data"]["config.yaml"])["mig-configs"]
    found: dict[str, list[int]] = {}
    for name, entries in configs.items():
        profile = name.removeprefix("all-")
        for entry in entries:
            devices = entry.get("mig-devices") or {}
            if list(devices) == [profile]:
                found.setdefault(profile, []).append(devices[profile])
    return dict(sorted(found.items()))


def render(source: str, instances: dict[str, list[int]]) -> str:
    """One profile a line, so that a newer chart's config reads as a diff."""
    lines = ",\n".join(f"  {json.dumps(p)}: {json.dumps(n)}" for p, n in instances.items())
    return f'{{\n "source": {json.dumps(source)},\n "instances": {{\n{lines}\n }}\n}}'


if __name__ == "__main__":
    configmap_file, source = sys.argv[1:]
    print(render(source, uniform_profiles(yaml.safe_load(Path(configmap_file).read_text()))))
