"""The Pod Security level of each Namespace a stack declares, as its policy config lists it.

`pod-security-standards` judges a workload before it is applied, when it cannot see the
Namespace, so the stack's policy config lists each namespace's enforced level
(`namespaceLevels`, `"<level>:<version>"`), and `pod-security-levels-listed` checks the list
against the Namespaces. Where a plan is given no policy config at all, the offline plan writes
that list from the plan's own Namespaces, so their workloads are judged at the levels the
stack declares.
"""

import re
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

NAMESPACE = "kubernetes:core/v1:Namespace"
POD_SECURITY = "pod-security-standards"
_LABEL = "pod-security.kubernetes.io/enforce"
_LEVELS = ("privileged", "baseline", "restricted")
_VERSION = re.compile(r"latest|v\d+\.\d+")


class Declared(Protocol):
    """What is read of a planned resource (`gpu_platform.offline.program.PlannedResource`)."""

    @property
    def type(self) -> str: ...
    @property
    def inputs(self) -> Mapping[str, Any]: ...


def namespace_levels(resources: Sequence[Declared]) -> dict[str, str]:
    """`namespaceLevels` for the Namespaces among `resources` whose name and enforce label are
    plain values: each one's level and version (none: the latest)."""
    levels = {}
    for found in resources:
        metadata = found.inputs.get("metadata") if found.type == NAMESPACE else None
        labels = metadata.get("labels") if isinstance(metadata, dict) else None
        if not isinstance(metadata, dict) or not isinstance(labels, dict):
            continue
        name, level = metadata.get("name"), labels.get(_LABEL)
        version = labels.get(f"{_LABEL}-version", "latest")
        if isinstance(name, str) and level in _LEVELS:
            plain = isinstance(version, str) and _VERSION.fullmatch(version)
            levels[name] = f"{level}:{version}" if plain else str(level)
    return levels


def with_namespace_levels(
    config: Mapping[str, Any] | None, resources: Sequence[Declared]
) -> Mapping[str, Any] | None:
    """`config` with the `namespaceLevels` of `resources`' Namespaces, unless it sets its own."""
    levels = namespace_levels(resources)
    if not levels:
        return config
    given = (config or {}).get(POD_SECURITY, {})
    entry = {"enforcementLevel": given} if isinstance(given, str) else dict(given)
    entry.setdefault("namespaceLevels", levels)
    return {**(config or {}), POD_SECURITY: entry}


def config_for_plan(
    config: Mapping[str, Any] | None, resources: Sequence[Declared]
) -> Mapping[str, Any] | None:
    """The policy config an offline plan runs with: the one given, else one listing the levels
    of the plan's own Namespaces."""
    return config if config is not None else with_namespace_levels(None, resources)
