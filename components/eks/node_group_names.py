"""How a pool's node group is named: from the pool's name, by the AWS provider.

The node group takes `nodeGroupNamePrefix: <pool>-`, and the provider adds Terraform's
`PrefixedUniqueId` suffix (18 digits of the time and an 8-hex-digit counter), so a running
group is found again by the pattern alone.
"""

import re

NODE_GROUP_SUFFIX = r"[0-9]{18}[0-9a-f]{8}"


def node_group_name_prefix(pool_name: str) -> str:
    return f"{pool_name}-"


def is_node_group_of(pool_name: str, node_group: str) -> bool:
    """Whether `node_group` is a name the provider gives the pool's node group."""
    pattern = re.escape(node_group_name_prefix(pool_name)) + NODE_GROUP_SUFFIX
    return re.fullmatch(pattern, node_group) is not None
