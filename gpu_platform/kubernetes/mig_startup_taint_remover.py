"""Take the MIG startup taint off each node whose GPUs the MIG manager has partitioned.

A new node of a MIG pool joins with whole GPUs: the device plugin skips only GPUs whose MIG mode
is on (`buildGPUDeviceMap`, internal/rm/device_map.go, k8s-device-plugin v0.20.0), so until the
MIG manager has partitioned them the node advertises `nvidia.com/gpu`, and a pod that asks for a
whole GPU could bind there and make the reconfiguration fail. The node group therefore taints
its nodes `STARTUP_TAINT_KEY` from the start, which no workload tolerates, and which the cluster
autoscaler leaves out of its templates and counts as a node still starting (cluster-autoscaler
FAQ, "Startup taints"; `StartupTaintPrefix`, utils/taints/taints.go). The MIG manager labels the
node `nvidia.com/mig.config.state=success` once the partitions are made (its reconfigure script,
mig-parted v0.15.0 deployments/container/reconfigure-mig.sh); this script, shipped in a
ConfigMap and run by a Deployment of the platform's, then removes the taint.

Every `INTERVAL_SECONDS` it lists the nodes so labelled and removes the taint from each that has
it, with a JSON patch that first tests the taint is still at that index, so that a concurrent
change of the node's taints fails the patch instead of removing another taint. A node whose
partitioning failed (`failed`, or `pending` for good) keeps the taint: nothing can bind a whole
GPU there, and the autoscaler removes the unready node once it is unneeded. Standard library
only; one line on stdout for each node, and the loop goes on through errors.
"""

import json
import os
import ssl
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Self

STARTUP_TAINT_KEY = "startup-taint.cluster-autoscaler.kubernetes.io/mig-config"
MIG_STATE_LABEL = "nvidia.com/mig.config.state"
MIG_READY = "success"
INTERVAL_SECONDS = 15
TOKEN_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
Node = Mapping[str, Any]


def taint_removal(node: Node) -> list[dict[str, Any]] | None:
    """The JSON patch (RFC 6902) that removes the startup taint from a partitioned node; None
    where there is nothing to remove."""
    if (node.get("metadata") or {}).get("labels", {}).get(MIG_STATE_LABEL) != MIG_READY:
        return None
    for index, taint in enumerate((node.get("spec") or {}).get("taints") or []):
        if taint.get("key") == STARTUP_TAINT_KEY:
            path = f"/spec/taints/{index}"
            return [
                {"op": "test", "path": f"{path}/key", "value": STARTUP_TAINT_KEY},
                {"op": "remove", "path": path},
            ]
    return None


class Nodes:
    """The node calls, to the API server at `server` with a bearer `token`."""

    def __init__(self, server: str, token: str, context: ssl.SSLContext | None = None) -> None:
        self.server = server
        self.token = token
        # The API server only: no proxy from the environment sees the token.
        self.opener = urllib.request.build_opener(
            urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=context)
        )

    @classmethod
    def from_pod(cls) -> Self:
        """As a pod reaches the API server: its service's address, its account's token and CA."""
        env = os.environ
        host = env["KUBERNETES_SERVICE_HOST"]
        server = f"https://[{host}]" if ":" in host else f"https://{host}"
        context = ssl.create_default_context(cafile=str(TOKEN_DIR / "ca.crt"))
        token = (TOKEN_DIR / "token").read_text().strip()
        return cls(f"{server}:{env['KUBERNETES_SERVICE_PORT']}", token, context)

    def _send(self, method: str, path: str, patch: Any = None) -> Any:
        request = urllib.request.Request(self.server + path, method=method)
        request.add_header("Authorization", f"Bearer {self.token}")
        request.add_header("Accept", "application/json")
        if patch is not None:
            request.data = json.dumps(patch).encode()
            request.add_header("Content-Type", "application/json-patch+json")
        with self.opener.open(request, timeout=30) as response:
            return json.load(response)

    def partitioned(self) -> list[Node]:
        selector = urllib.parse.urlencode({"labelSelector": f"{MIG_STATE_LABEL}={MIG_READY}"})
        found: list[Node] = self._send("GET", f"/api/v1/nodes?{selector}").get("items") or []
        return found

    def patch(self, name: str, patch: list[dict[str, Any]]) -> None:
        self._send("PATCH", f"/api/v1/nodes/{urllib.parse.quote(name)}", patch)


def sweep(nodes: Nodes) -> int:
    """One pass over the partitioned nodes; how many patches failed."""
    failed = 0
    for node in nodes.partitioned():
        patch = taint_removal(node)
        if patch is None:
            continue
        name = node["metadata"]["name"]
        try:
            nodes.patch(name, patch)
            print(f"{name}: MIG partitions made, startup taint removed", flush=True)
        except OSError as error:
            failed += 1
            print(f"{name}: could not remove the startup taint: {error}", flush=True)
    return failed


def main() -> None:
    nodes = Nodes.from_pod()
    while True:
        try:
            sweep(nodes)
        except (OSError, ValueError) as error:
            print(f"could not list the nodes: {error}", file=sys.stderr, flush=True)
        time.sleep(INTERVAL_SECONDS)


if __name__ == "__main__":
    main()
