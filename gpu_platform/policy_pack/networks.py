"""What counts as the whole internet in a control plane's allowed networks."""

import ipaddress
from typing import Any

WIDEST_BLOCK = 8
"""The widest IPv4 block a control plane may answer: an /8, a sixteen-millionth of the
internet. Anything wider is the whole internet in a few pieces (0.0.0.0/1 and 128.0.0.0/1 are
all of it, as much as 0.0.0.0/0 is)."""
WIDEST_IPV6_BLOCK = 32
"""The widest IPv6 block: a /32, what a regional registry allocates to a whole provider (EKS
takes IPv6 blocks on an IPv6 cluster, and defaults them to ::/0, botocore's EKS model
`VpcConfigRequest.publicAccessCidrs`)."""


def wider_than_allowed(cidr: Any) -> bool:
    """Whether `cidr` is a block wider than `WIDEST_BLOCK` (IPv4) or `WIDEST_IPV6_BLOCK`
    (IPv6). What is not a block at all is the provider's and the cloud's to refuse."""
    try:
        network = ipaddress.ip_network(str(cidr), strict=False)
    except ValueError:
        return False
    widest = WIDEST_BLOCK if network.version == 4 else WIDEST_IPV6_BLOCK
    return network.prefixlen < widest


WIDEST = f"/{WIDEST_BLOCK} (IPv6 /{WIDEST_IPV6_BLOCK})"
"""The bounds, in words."""
