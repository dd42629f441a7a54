"""How a pool's node groups are named and sized: from the pool's name (and zone), by the AWS
provider.

A node group takes `nodeGroupNamePrefix: <pool>-`, or `<pool>-<zone>-` where the pool has one
node group per zone, and the provider adds Terraform's `PrefixedUniqueId` suffix (18 digits of
the time and an 8-hex-digit counter), so a running group is found again by the pattern alone.
"""

import re

NODE_GROUP_SUFFIX = r"[0-9]{18}[0-9a-f]{8}"
NODE_GROUP_SUFFIX_LENGTH = 26
# An availability zone's name (`us-east-1a`, `ap-southeast-2b`) or a Local Zone's
# (`us-west-2-lax-1a`).
ZONE = r"[a-z]{2}(?:-[a-z]+)+-[0-9]+(?:[a-z]|-[a-z]+-[0-9]+[a-z])"
# EKS node group names are at most 63 characters.
NODE_GROUP_NAME_LIMIT = 63


def node_group_name_prefix(pool_name: str, zone: str | None = None) -> str:
    return f"{pool_name}-" if zone is None else f"{pool_name}-{zone}-"


def node_group_pattern(pool_name: str) -> str:
    """A regular expression of the names the pool's node groups get, zonal or not."""
    return f"{re.escape(pool_name)}-(?:(?P<zone>{ZONE})-)?{NODE_GROUP_SUFFIX}"


def is_node_group_of(pool_name: str, node_group: str) -> bool:
    """Whether `node_group` is a name the provider gives one of the pool's node groups."""
    return re.fullmatch(node_group_pattern(pool_name), node_group) is not None


def names_a_zone_of(pool_name: str, name: str) -> bool:
    """Whether `name` is `<pool>-<zone>`: the prefix of the pool's node group in that zone."""
    return re.fullmatch(f"{re.escape(pool_name)}-{ZONE}", name) is not None


def zone_of(pool_name: str, node_group: str) -> str | None:
    """The zone of one of the pool's per-zone node groups; None for its only group."""
    found = re.fullmatch(node_group_pattern(pool_name), node_group)
    return found["zone"] if found else None


def zone_share(total: int, zones: int, index: int) -> int:
    """A per-zone node group's share of the pool's `min` or `max`: equal shares, the first zones
    (in zone order) one more where they do not divide."""
    return total // zones + (1 if index < total % zones else 0)
