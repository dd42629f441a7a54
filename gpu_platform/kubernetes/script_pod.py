"""The pod that runs one of the platform's own standard-library Python scripts (the idle GPU
reaper, the MIG startup taint remover): the script shipped in a ConfigMap and mounted read-only,
run by the pinned official Python image as `nobody`, under Pod Security `restricted` with a
read-only root filesystem, with the service account token the script calls the API server with.
"""

import hashlib
from pathlib import Path
from typing import Any

from gpu_platform.lock.images import locked
from gpu_platform.versions import ContainerImage

SCRIPT_DIR = "/opt/gpu-platform"
# `nobody` in Debian's images: no account the image's files belong to.
USER_ID = 65534
# Python would try to write bytecode beside its modules, on a read-only filesystem.
NO_BYTECODE = {"name": "PYTHONDONTWRITEBYTECODE", "value": "1"}


def content_named(prefix: str, *scripts: str) -> str:
    """A ConfigMap's name for `scripts`, after their content: new scripts are a new ConfigMap,
    which pulumi-kubernetes replaces (create, then delete) rather than updates, and the workload
    mounting it rolls to it; a fixed name would collide with itself on replacement."""
    return f"{prefix}-{hashlib.sha256(''.join(scripts).encode()).hexdigest()[:10]}"


def script_pod_spec(
    *,
    name: str,
    container: str,
    image: ContainerImage,
    script: Path,
    config_map: str,
    env: list[dict[str, Any]],
    cpu_request: str,
    memory: str,
    memory_request: str | None = None,
) -> dict[str, Any]:
    """The pod spec running `script` (a file of the ConfigMap `config_map`) in the container
    `container`, as the service account `name`; `memory` is the container's limit, and its
    request unless `memory_request` says less."""
    return {
        "serviceAccountName": name,
        # These scripts call the API server; the platform's other pods get no token.
        "automountServiceAccountToken": True,
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": USER_ID,
            "runAsGroup": USER_ID,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [
            {
                "name": container,
                "image": locked(image).reference,
                "command": ["python3", f"{SCRIPT_DIR}/{script.name}"],
                "env": env,
                "resources": {
                    "requests": {"cpu": cpu_request, "memory": memory_request or memory},
                    "limits": {"memory": memory},
                },
                "securityContext": {
                    "allowPrivilegeEscalation": False,
                    "capabilities": {"drop": ["ALL"]},
                    "readOnlyRootFilesystem": True,
                },
                "volumeMounts": [{"name": "script", "mountPath": SCRIPT_DIR, "readOnly": True}],
            }
        ],
        "volumes": [{"name": "script", "configMap": {"name": config_map}}],
    }
