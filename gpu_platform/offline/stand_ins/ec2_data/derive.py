"""Write the EC2 data the offline plan's stand-ins answer with, from moto's copy of EC2's own.

    ./uvw run --locked python -m gpu_platform.offline.stand_ins.ec2_data.derive

moto ships EC2's `DescribeInstanceTypes` answer and, per region, its
`DescribeInstanceTypeOfferings` by zone (the `moto/ec2/resources` files). This keeps of them
what the stand-ins read: every instance type's vCPUs, memory, architectures, GPUs, local
storage and EFA interfaces, and the
zones of every region that offer each instance type. Reading this small file is
what lets the offline plan start without importing moto (about a second) or needing it
installed. Run it after upgrading moto and commit what it writes; a test checks that the
committed files match the installed moto.
"""

import gzip
import json
from collections.abc import Mapping
from importlib.util import find_spec
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
INSTANCE_TYPES_FILE = HERE / "instance_types.json"
OFFERINGS_FILE = HERE / "zone_offerings.json"


def moto_resources() -> Path:
    """moto's EC2 data directory, found without importing moto (which loads its EC2 models)."""
    spec = find_spec("moto")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("moto is not installed: `./uvw sync` installs it with the dev tools")
    return Path(next(iter(spec.submodule_search_locations))) / "ec2" / "resources"


def _read_gz(path: Path) -> Any:
    return json.loads(gzip.decompress(path.read_bytes()))


def instance_types(resources: Path) -> dict[str, dict[str, Any]]:
    """Instance type -> the `DescribeInstanceTypes` fields the stand-ins read, sorted by name."""
    described: Mapping[str, Mapping[str, Any]] = _read_gz(resources / "instance_types.json.gz")
    return {
        name: {
            "VCpuInfo": {"DefaultVCpus": entry["VCpuInfo"]["DefaultVCpus"]},
            "MemoryInfo": {"SizeInMiB": entry["MemoryInfo"]["SizeInMiB"]},
            "ProcessorInfo": {
                "SupportedArchitectures": entry["ProcessorInfo"]["SupportedArchitectures"]
            },
            **({"GpuInfo": entry["GpuInfo"]} if entry.get("GpuInfo") else {}),
            **_instance_storage(entry),
            **_efa(entry),
        }
        for name, entry in sorted(described.items())
    }


def _instance_storage(entry: Mapping[str, Any]) -> dict[str, Any]:
    storage = entry.get("InstanceStorageInfo")
    if not entry.get("InstanceStorageSupported") or not storage:
        return {}
    disks = [{k: d[k] for k in ("Count", "SizeInGB", "Type")} for d in storage["Disks"]]
    return {"InstanceStorageInfo": {"TotalSizeInGB": storage["TotalSizeInGB"], "Disks": disks}}


def _efa(entry: Mapping[str, Any]) -> dict[str, Any]:
    network = entry.get("NetworkInfo") or {}
    if not network.get("EfaSupported"):
        return {}
    interfaces = network["EfaInfo"]["MaximumEfaInterfaces"]
    return {"NetworkInfo": {"EfaSupported": True, "EfaInfo": {"MaximumEfaInterfaces": interfaces}}}


def zone_offerings(resources: Path) -> dict[str, dict[str, list[str]]]:
    """Region -> the instance types offered in exactly the same zones, keyed by those zones
    (space-separated). Grouping by zone set keeps every offering at a fraction of the size."""
    by_region: dict[str, dict[str, list[str]]] = {}
    for path in sorted((resources / "instance_type_offerings" / "availability-zone").glob("*.gz")):
        zones_of: dict[str, set[str]] = {}
        for offering in _read_gz(path):
            zones_of.setdefault(offering["InstanceType"], set()).add(offering["Location"])
        groups: dict[str, list[str]] = {}
        for name, zones in zones_of.items():
            groups.setdefault(" ".join(sorted(zones)), []).append(name)
        region = path.name.removesuffix(".json.gz")
        by_region[region] = {zones: sorted(names) for zones, names in sorted(groups.items())}
    return by_region


def render(value: Mapping[str, Mapping[str, Any]]) -> str:
    """One second-level entry a line, so that a moto upgrade's changes read as a diff."""
    blocks = []
    for key, entries in value.items():
        lines = [f"  {json.dumps(k)}: {json.dumps(v, sort_keys=True)}" for k, v in entries.items()]
        blocks.append(f"{json.dumps(key)}: {{\n" + ",\n".join(lines) + "\n}")
    return "{\n" + ",\n".join(blocks) + "\n}\n"


def derived_files(resources: Path) -> dict[Path, str]:
    return {
        INSTANCE_TYPES_FILE: render({"instanceTypes": instance_types(resources)}),
        OFFERINGS_FILE: render(zone_offerings(resources)),
    }


if __name__ == "__main__":
    for path, text in derived_files(moto_resources()).items():
        path.write_text(text)
        print(f"wrote {path.name}")
