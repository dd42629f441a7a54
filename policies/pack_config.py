"""A misspelt setting in a stack's policy config is reported, not silently ignored.

The engine checks a policy's config against the schema the pack declares, but that schema
cannot forbid keys it does not list (the analyzer protocol carries only properties and the
required ones), so `maxNodesPerPol: 8` passes and the policy keeps its default of 64. Every
policy of the pack is watched (`watch_config`): the keys its config holds that its schema does
not declare are kept, and the stack policy `policy-config-known` reports them, once per policy,
at the end of the preview or update.
"""

from collections.abc import Sequence
from typing import Any, TypeVar

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

NAME = "policy-config-known"
P = TypeVar("P", bound=ResourceValidationPolicy | StackValidationPolicy)

UNKNOWN_KEYS: dict[str, set[str]] = {}
"""Policy name -> the config keys it was given and does not take."""


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


def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
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
    description="The stack's policy config sets only parameters the policies take.",
    validate=validate,
    enforcement_level=EnforcementLevel.MANDATORY,
)
