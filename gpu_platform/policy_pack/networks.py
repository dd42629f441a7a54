"""What counts as the whole internet in a control plane's allowed networks."""

import ipaddress
from typing import Any

WIDEST_BLOCK = 8
"""The widest block a control plane may answer: an /8, a sixteen-millionth of the internet.
Anything wider is the whole internet in a few pieces (0.0.0.0/1 and 128.0.0.0/1 are all of it,
as much as 0.0.0.0/0 is)."""


def wider_than_allowed(cidr: Any) -> bool:
    """Whether `cidr` is an IPv4 block wider than `WIDEST_BLOCK`. What is not a block at all is
    the provider's and the cloud's to refuse."""
    try:
        return ipaddress.IPv4Network(str(cidr), strict=False).prefixlen < WIDEST_BLOCK
    except ValueError:
        return False
