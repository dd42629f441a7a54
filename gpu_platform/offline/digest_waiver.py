"""Where a policy config's `requireDigests` leaves the platform's images to an advisory rule.

The policy pack's `gpu-pods-pinned-images` holds the platform's own images in its own objects
to a tag alone under `requireDigests`: their digests are `platform-images-by-digest`'s to
require. That hand-off keeps them held to a digest only where that rule is mandatory, and its
default level is advisory. A policy cannot see another's level (the engine gives each policy
its own config alone), so the pack cannot tell; the offline plan reads the config and names the
keys where they disagree.
"""

from collections.abc import Mapping
from typing import Any

from gpu_platform.offline.analyzer import PolicyInfo, reconcile_config

PINNED = "gpu-pods-pinned-images"
BY_DIGEST = "platform-images-by-digest"
SETTING = "requireDigests"
# The two policies as the pack declares them (gpu_platform/policy_pack/gpu_workloads.py and
# platform_images.py), as far as their levels and this setting go.
_POLICIES = [
    PolicyInfo(PINNED, "", "mandatory", {SETTING: {"default": False}}, stack_policy=False),
    PolicyInfo(BY_DIGEST, "", "advisory", {}, stack_policy=False),
]


def digest_waiver_gaps(policy_config: Mapping[str, Any] | None, where: str) -> list[str]:
    """A warning when `policy_config` (read from `where`) turns on `requireDigests` in a
    `gpu-pods-pinned-images` that it does not disable, and leaves `platform-images-by-digest`
    below mandatory: levels as the engine reconciles them, `all` included."""
    given = {k: v for k, v in (policy_config or {}).items() if k in ("all", PINNED, BY_DIGEST)}
    reconciled = reconcile_config(_POLICIES, given, strict=False)
    pinned_level, settings = reconciled[PINNED]
    by_digest_level = reconciled[BY_DIGEST][0]
    if pinned_level == "disabled" or settings[SETTING] is not True:
        return []
    if by_digest_level == "mandatory":
        return []
    return [
        f"{where} turns on {PINNED}' {SETTING} but leaves {BY_DIGEST} {by_digest_level}: the "
        f"platform's images in its own objects (smoke tests, canary gates) are held to a digest "
        f"by {BY_DIGEST} alone, so they may run by tag. Set "
        f'"{BY_DIGEST}": {{"enforcementLevel": "mandatory"}} (or "all": "mandatory").'
    ]
