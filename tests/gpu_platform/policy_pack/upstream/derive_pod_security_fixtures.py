"""Write the Pod Security admission's own test fixtures as the pack's tests read them.

Kubernetes' pod-security-admission keeps, for every policy version from v1.0 to the newest and
for both levels, pods that the admission must allow (`pass/`) and pods it must deny (`fail/`),
one check broken per denied pod (`test/testdata/<level>/<version>/<pass|fail>/*.yaml`, generated
by its `TestFixtures`). Most pods repeat from version to version, so this keeps each distinct
pod once and, per level and version, which pods pass and which fail. Re-run it on a newer
checkout when the pack learns a newer policy version:

    python derive_pod_security_fixtures.py path/to/pod-security-admission/test/testdata \\
        kubernetes/pod-security-admission@<commit> > pod_security_fixtures.json
"""

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import yaml


def fixtures(testdata: Path, source: str) -> dict[str, Any]:
    """`pods` by id, and `verdicts` by `<level>/<version>`: the ids that pass and that fail."""
    pods: dict[str, Any] = {}
    verdicts: dict[str, dict[str, list[str]]] = {}
    for path in sorted(testdata.glob("*/v*/*/*.yaml")):
        outcome, version, level = path.parent.name, path.parent.parent.name, path.parents[2].name
        pod = yaml.safe_load(path.read_text())
        pod_id = hashlib.sha256(json.dumps(pod, sort_keys=True).encode()).hexdigest()[:12]
        pods.setdefault(pod_id, pod)
        verdicts.setdefault(f"{level}/{version}", {"pass": [], "fail": []})[outcome].append(pod_id)
    return {"source": source, "pods": pods, "verdicts": verdicts}


def render(derived: dict[str, Any]) -> str:
    """One pod, or one level and version, a line, so that a newer checkout reads as a diff."""
    blocks = [f'"source": {json.dumps(derived["source"])}']
    for key in ("pods", "verdicts"):
        lines = [
            f"  {json.dumps(k)}: {json.dumps(v, sort_keys=True)}"
            for k, v in sorted(derived[key].items())
        ]
        blocks.append(f"{json.dumps(key)}: {{\n" + ",\n".join(lines) + "\n}")
    return "{\n" + ",\n".join(blocks) + "\n}"


if __name__ == "__main__":
    print(render(fixtures(Path(sys.argv[1]), sys.argv[2])))
