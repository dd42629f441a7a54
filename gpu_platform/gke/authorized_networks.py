"""The control plane's authorized networks of a GKE cluster the platform creates, by name.

Kept apart from the cluster component, as locations.py is, so that `preflight` reads them
without importing the provider SDK.
"""

from collections.abc import Mapping
from typing import Any

from gpu_platform.config import ClusterCreate

NODES_BLOCK_NAME = "cluster nodes"
"""The display name of the nodes' own subnet among the authorized networks."""


def authorized_after_update(create: ClusterCreate, live: Mapping[str, Any]) -> list[str]:
    """The CIDR blocks the next `up` authorizes: the nodes' subnet, as the live cluster lists it
    (container.v1 `MasterAuthorizedNetworksConfig.cidrBlocks[].displayName`), then
    `endpoint.publicCidrs` and `gcp.authorizedNetworks`."""
    nodes = [
        str(b.get("cidrBlock", ""))
        for b in live.get("cidrBlocks", [])
        if b.get("displayName") == NODES_BLOCK_NAME
    ]
    configured = [str(c) for c in create.endpoint.public_cidrs]
    configured += [str(n.cidr) for n in create.gcp.authorized_networks]
    return nodes + configured
