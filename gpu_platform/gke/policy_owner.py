"""Whose the project's Binary Authorization policy is: the platform's carries its description.

Kept apart from the cluster component, as locations.py is, so that `preflight` reads it without
importing the provider SDK.
"""

from collections.abc import Mapping
from typing import Any

POLICY_DESCRIPTION = (
    "Written by gpu-platform: the platform's images, and those allowed by"
    " cluster.create.gcp.binaryAuthorizationAllowedImages."
)
"""The description the platform writes into the policy (binaryauthorization.v1
`Policy.description`), by which an earlier `up`'s policy is told from another's."""
_RULES = (
    "clusterAdmissionRules",
    "kubernetesNamespaceAdmissionRules",
    "kubernetesServiceAccountAdmissionRules",
    "istioServiceIdentityAdmissionRules",
)
"""binaryauthorization.v1 `Policy`'s rules besides the default one."""


def policy_owner(policy: Mapping[str, Any]) -> str:
    """`platform` (an earlier `up` wrote it), `default` (no one did: its default rule admits
    every image, no other rule and no description), or `other`."""
    if policy.get("description") == POLICY_DESCRIPTION:
        return "platform"
    default_rule = policy.get("defaultAdmissionRule", {})
    untouched = not policy.get("description") and not any(policy.get(r) for r in _RULES)
    if untouched and default_rule.get("evaluationMode") == "ALWAYS_ALLOW":
        return "default"
    return "other"
