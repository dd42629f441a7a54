"""Whether a resource is one of the platform's own objects, by the table of their kinds and names
(`platform_objects.PLATFORM_OBJECTS`, data alone, which the program's tests read too): the rules
that judge the platform's objects otherwise than a stack's own ask this, never the objects'
parent types, which a program chooses."""

from platform_objects import PLATFORM_OBJECTS, PlatformObject
from pods import namespace_or_default
from props import text
from pulumi_policy import PolicyResource, ResourceValidationArgs
from type_tokens import api_group_and_kind

_BUILT_IN_GROUPS = ("core", "apps", "batch")


def is_platform_object(args: ResourceValidationArgs) -> bool:
    """Whether the resource is an object of the platform's own kind and name (and namespace,
    where the entry names one); never told by its parent types, which a program chooses.
    Raises `UnknownValueError` where the name, or the namespace an entry needs, is not known
    yet."""
    return platform_object(args) is not None


def platform_object(args: ResourceValidationArgs | PolicyResource) -> PlatformObject | None:
    """The platform's object the resource is by its kind and name (and namespace, where the
    entry names one), or None. Raises `UnknownValueError` as `is_platform_object` does."""
    found = api_group_and_kind(args.resource_type)
    # Only a kind the platform declares has its name read: a name not known at preview
    # (a stack's Namespace named after another resource) must not hold up a rule elsewhere.
    if (
        found is None
        or found[0] not in _BUILT_IN_GROUPS
        or all(entry.kind != found[1] for entry in PLATFORM_OBJECTS)
    ):
        return None
    kind, name = found[1], text(args.props, "metadata", "name")
    for entry in PLATFORM_OBJECTS:
        if entry.names(kind, name) and (
            entry.namespace is None
            or entry.namespace
            == namespace_or_default(text(args.props, "metadata", "namespace"), args.provider)
        ):
            return entry
    return None
