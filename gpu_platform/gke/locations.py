"""Google Cloud location names: a zone is its region's name and a letter (`us-central1-a`).

Kept apart from the cluster component so that what reads names alone (`fit`, `preflight`, the
offline plan's stand-ins) does not import the provider SDK.
"""

import re

_ZONE = re.compile(r"^(?P<region>[a-z]+-[a-z]+\d+)-[a-z]$")


def zone_region(name: str) -> str | None:
    """The region of a zone (`us-central1` for `us-central1-a`); None for a region's name."""
    zone = _ZONE.match(name)
    return zone.group("region") if zone else None
