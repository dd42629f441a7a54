"""A misspelt setting in a stack's policy config is reported, not silently ignored.

The engine checks a policy's config against the schema the pack declares, but that schema
cannot forbid keys it does not list (the analyzer protocol carries only properties and the
required ones), so `maxNodesPerPol: 8` passes and the policy keeps its default of 64. Every
policy of the pack is watched (`watch_config`): the keys its config holds that its schema does
not declare are kept, and the stack policy `policy-config-known` reports them, once per policy,
at the end of the preview or update.

A misspelt policy name is worse: the engine passes the entry on as it is (pulumi
`pkg/resource/analyzer/config.go`, `applyConfig`), and pulumi-policy keeps it under a name no
policy asks for, so `"gpu-pool-scalling": "disabled"` changes nothing and says nothing. The pack's
configuration is read as it arrives (`watch_pack_config`) and the names it has no policy for are
reported by the same stack policy.
"""

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from google.protobuf import json_format
from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy import policy as policy_sdk

NAME = "policy-config-known"
P = TypeVar("P", bound=ResourceValidationPolicy | StackValidationPolicy)

UNKNOWN_KEYS: dict[str, set[str]] = {}
"""Policy name -> the config keys it was given and does not take."""
UNKNOWN_POLICIES: set[str] = set()
"""The names the pack's configuration holds that are no policy of the pack."""
# `all` reaches the pack as an entry of its own too: it sets every policy's level.
_EVERY_POLICY = "all"


def watch_config(policy: P) -> P:
    """`policy`, noting the config keys it is given that its schema does not declare."""
    declared = set(policy.config_schema.properties) if policy.config_schema else set()
    validate = policy.validate

    def watched(args: Any, report_violation: ReportViolation) -> Any:
        unknown = set(args.get_config()) - declared
        if unknown:
            UNKNOWN_KEYS.setdefault(policy.name, set()).update(unknown)
        return validate(args, report_violation)

    # The SDK calls `policy.validate(args, report_violation)`; the instance attribute wins.
    policy.validate = watched  # type: ignore[method-assign]
    return policy


def watch_pack_config(
    policy_names: Iterable[str],
    listeners: Mapping[str, Callable[[Mapping[str, Any]], None]],
) -> None:
    """Note the names in each configuration the pack receives that none of its policies has,
    and give `listeners` (policy name -> callback) their policy's config as it arrives.

    pulumi-policy offers no public view of the whole configuration, only each policy's own
    part (`args.get_config()`) while it validates, so the servicer's `Configure` is wrapped; the
    tests drive it over gRPC as the engine does, and fail if the SDK stops calling it."""
    known = {*policy_names, _EVERY_POLICY}
    servicer = policy_sdk._PolicyAnalyzerServicer
    configure = servicer.Configure

    def watched(self: Any, request: Any, context: Any) -> Any:
        UNKNOWN_POLICIES.clear()
        UNKNOWN_POLICIES.update(set(request.policyConfig) - known)
        for name, listener in listeners.items():
            given = request.policyConfig.get(name)
            listener(json_format.MessageToDict(given.properties) if given is not None else {})
        return configure(self, request, context)

    servicer.Configure = watched  # type: ignore[method-assign]


def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    for name in sorted(UNKNOWN_POLICIES):
        report_violation(
            f'the policy config names "{name}", which is no policy of this pack, so what it sets '
            "applies to nothing. Fix: correct the name (the pack's README lists its policies) or "
            "remove it.",
            None,
        )
    found = dict(UNKNOWN_KEYS)
    UNKNOWN_KEYS.clear()
    for policy, keys in sorted(found.items()):
        report_violation(
            f'the policy config gives policy "{policy}" {_listed(sorted(keys))}, which it does '
            "not take, so the setting meant has its default. Fix: correct the name (the pack's "
            "README lists each policy's parameters) or remove it.",
            None,
        )


def _listed(keys: Sequence[str]) -> str:
    named = ", ".join(f'"{key}"' for key in keys)
    return f"the key {named}" if len(keys) == 1 else f"the keys {named}"


POLICY = StackValidationPolicy(
    name=NAME,
    description="The stack's policy config names only the pack's policies and sets only "
    "parameters they take.",
    validate=validate,
    enforcement_level=EnforcementLevel.MANDATORY,
)
