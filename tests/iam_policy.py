"""A small evaluator of AWS IAM policy documents, for the tests of the documents the project
ships and the policies its stacks create.

It answers one question, the one an escalation path turns on: would this request be allowed by
these identity policies within this permissions boundary? It follows the IAM User Guide:

- "Policy evaluation logic": an explicit Deny wins, then an Allow, else the request is denied;
  with a permissions boundary, both the identity policies and the boundary must allow it
  ("Permissions boundaries for IAM entities").
- "IAM JSON policy elements: Action, NotAction, Resource, NotResource": case-insensitive actions
  with `*` and `?`; each of an ARN's first five colon-separated parts matched on its own.
- "Condition operators": String*, Arn*, Bool and Null, the `...IfExists` suffix, the
  `ForAllValues:`/`ForAnyValue:` set operators; a condition key missing from the request fails
  every operator but `Null`, `...IfExists`, `ForAllValues:` and the negated ones.
- "IAM policy elements: Variables and tags": `${key}` in a resource or a condition value is the
  request's value of that key; a variable the request has no value for matches nothing.

A resource-based policy's `Principal` is matched against the request's principal, literally.
Numeric and date operators and `NotPrincipal` are not needed by any document here and are
refused rather than guessed at.
"""

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

Policy = Mapping[str, Any]
Statement = Mapping[str, Any]
ContextValue = str | Sequence[str]

_VARIABLE = re.compile(r"\$\{([^}]+)\}")
_STRING_OPERATORS = {
    "StringEquals": lambda value, pattern: value == pattern,
    "StringNotEquals": lambda value, pattern: value == pattern,
    "StringEqualsIgnoreCase": lambda value, pattern: value.lower() == pattern.lower(),
    "StringLike": lambda value, pattern: fnmatchcase(value, pattern),
    "StringNotLike": lambda value, pattern: fnmatchcase(value, pattern),
    "ArnEquals": lambda value, pattern: value == pattern,
    "ArnNotEquals": lambda value, pattern: value == pattern,
    "ArnLike": lambda value, pattern: arn_matches(pattern, value),
    "ArnNotLike": lambda value, pattern: arn_matches(pattern, value),
    "Bool": lambda value, pattern: value.lower() == pattern.lower(),
}
_NEGATED = {"StringNotEquals", "StringNotLike", "ArnNotEquals", "ArnNotLike"}


@dataclass(frozen=True)
class Request:
    """One authorization request: an action on one resource, with its condition keys."""

    action: str
    resource: str
    context: Mapping[str, ContextValue] = field(default_factory=dict)
    principal: str | None = None
    """Who asks, for resource-based policies: an AWS service (`events.amazonaws.com`) or an
    ARN. None where only identity policies are evaluated."""

    def value(self, key: str) -> ContextValue | None:
        """The request's value of a condition key; keys are case-insensitive."""
        wanted = key.lower()
        return next((v for k, v in self.context.items() if k.lower() == wanted), None)


def allowed(request: Request, policies: Iterable[Policy], boundary: Policy | None = None) -> bool:
    """Whether `policies` (a principal's identity policies) allow the request, within
    `boundary` when the principal has one."""
    if not _allows(request, policies):
        return False
    return boundary is None or _allows(request, [boundary])


def _allows(request: Request, policies: Iterable[Policy]) -> bool:
    effects = {
        statement["Effect"]
        for policy in policies
        for statement in statements(policy)
        if applies(statement, request)
    }
    return "Allow" in effects and "Deny" not in effects


def statements(policy: Policy) -> list[Statement]:
    found = policy["Statement"]
    return [found] if isinstance(found, Mapping) else list(found)


def as_list(value: str | Sequence[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def applies(statement: Statement, request: Request) -> bool:
    """Whether the statement covers the request: its action, resource and conditions."""
    if "NotPrincipal" in statement:
        raise NotImplementedError("NotPrincipal")
    if request.principal is not None and not _principal_matches(statement, request.principal):
        return False
    if "Action" in statement:
        actions, listed = as_list(statement["Action"]), True
    else:
        actions, listed = as_list(statement["NotAction"]), False
    if any(_action_matches(a, request.action) for a in actions) != listed:
        return False
    if "Resource" in statement:
        resources, listed = as_list(statement["Resource"]), True
    else:
        resources, listed = as_list(statement.get("NotResource", [])), False
    if any(_resource_matches(r, request) for r in resources) != listed:
        return False
    return all(
        _condition_holds(operator, key, as_list(values), request)
        for operator, block in statement.get("Condition", {}).items()
        for key, values in block.items()
    )


def _principal_matches(statement: Statement, principal: str) -> bool:
    """`"*"`, or the principal among the statement's services and ARNs."""
    listed = statement.get("Principal", "*")
    if listed == "*":
        return True
    return any(principal in as_list(values) for values in listed.values())


def _action_matches(pattern: str, action: str) -> bool:
    return fnmatchcase(action.lower(), pattern.lower())


def _resource_matches(pattern: str, request: Request) -> bool:
    resolved = resolve(pattern, request)
    return resolved is not None and arn_matches(resolved, request.resource)


def resolve(text: str, request: Request) -> str | None:
    """`text` with its policy variables replaced by the request's values; None where the
    request has no single value for one of them."""
    missing = False

    def value(match: re.Match[str]) -> str:
        nonlocal missing
        found = request.value(match.group(1))
        if not isinstance(found, str):
            missing = True
            return ""
        return found

    resolved = _VARIABLE.sub(value, text)
    return None if missing else resolved


def arn_matches(pattern: str, arn: str) -> bool:
    """An ARN pattern with `*` and `?` against an ARN: `*` alone matches anything; otherwise
    partition, service, region and account each match on their own, then the rest."""
    if pattern == "*":
        return True
    pattern_parts = pattern.split(":", 5)
    arn_parts = arn.split(":", 5)
    if len(pattern_parts) != 6 or len(arn_parts) != 6:
        return fnmatchcase(arn, pattern)
    return all(fnmatchcase(a, p) for p, a in zip(pattern_parts, arn_parts, strict=True))


def _condition_holds(operator: str, key: str, values: Sequence[str], request: Request) -> bool:
    quantifier, _, name = operator.rpartition(":")
    if_exists = name.endswith("IfExists")
    name = name.removesuffix("IfExists")
    present = request.value(key)
    if name == "Null":
        (wanted,) = values
        return (present is None) == (wanted.lower() == "true")
    if name not in _STRING_OPERATORS:
        raise NotImplementedError(operator)
    patterns = [resolve(v, request) for v in values]
    matches = _STRING_OPERATORS[name]

    def one(value: str) -> bool:
        hit = any(p is not None and matches(value, p) for p in patterns)
        return not hit if name in _NEGATED else hit

    if quantifier == "ForAllValues":
        return present is None or all(one(v) for v in as_list(present))
    if quantifier == "ForAnyValue":
        return present is not None and any(one(v) for v in as_list(present))
    if quantifier:
        raise NotImplementedError(operator)
    if present is None:
        return if_exists or name in _NEGATED
    if not isinstance(present, str):
        raise ValueError(f"{key} has several values: {operator} needs ForAllValues/ForAnyValue")
    return one(present)
