"""Safe reads of resource properties, whatever shape and state they arrive in.

The policy SDK hands properties over as read-only Mapping/Sequence proxies with the engine's
camelCase names and every number a float. During preview a value that is not known yet raises
`UnknownValueError` when it is read (in Analyze), or is the engine's unknown sentinel string (in
Remediate, whose proxies do not check). A stack we did not write can put any shape anywhere.

So every reader here returns None (or an empty list) for a value that is absent or of the wrong
type, raises `UnknownValueError` for one that is unknown, and raises nothing else.
"""

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from pulumi_policy.proxy import (
    UNKNOWN_ARCHIVE_VALUE,
    UNKNOWN_ARRAY_VALUE,
    UNKNOWN_ASSET_VALUE,
    UNKNOWN_BOOLEAN_VALUE,
    UNKNOWN_NUMBER_VALUE,
    UNKNOWN_OBJECT_VALUE,
    UNKNOWN_STRING_VALUE,
    UnknownValueError,
)

UNKNOWN_SENTINELS = frozenset(
    {
        UNKNOWN_ARCHIVE_VALUE,
        UNKNOWN_ARRAY_VALUE,
        UNKNOWN_ASSET_VALUE,
        UNKNOWN_BOOLEAN_VALUE,
        UNKNOWN_NUMBER_VALUE,
        UNKNOWN_OBJECT_VALUE,
        UNKNOWN_STRING_VALUE,
    }
)

Step = str | int
T = TypeVar("T")


def any_of(items: Iterable[T], holds: Callable[[T], bool]) -> bool:
    """Whether `holds` for any of `items`. Any one is enough, so one not known yet does not hide
    another that holds; with none holding and some not known, the `UnknownValueError` stands."""
    unknown: UnknownValueError | None = None
    for item in items:
        try:
            if holds(item):
                return True
        except UnknownValueError as error:
            unknown = error
    if unknown is not None:
        raise unknown
    return False


def any_holds(signs: Sequence[Callable[[Any], bool]], value: Any) -> bool:
    """Whether any of `signs` holds for `value` (`any_of`)."""
    return any_of(signs, lambda sign: sign(value))


def value_at(value: Any, *path: Step) -> Any:
    """The value at `path` (keys and list indexes), or None where a step is absent or the value
    on the way has the wrong shape."""
    trail: list[str] = []
    _known(value, trail)
    for step in path:
        trail.append(str(step))
        if isinstance(step, str):
            if not isinstance(value, Mapping):
                return None
            try:
                value = value[step]
            except KeyError:
                return None
        else:
            if not is_list(value) or not 0 <= step < len(value):
                return None
            value = value[step]
        _known(value, trail)
    return value


def text(value: Any, *path: Step) -> str | None:
    found = value_at(value, *path)
    return found if isinstance(found, str) else None


def flag(value: Any, *path: Step) -> bool | None:
    found = value_at(value, *path)
    return found if isinstance(found, bool) else None


def number(value: Any, *path: Step) -> float | None:
    found = value_at(value, *path)
    if isinstance(found, bool) or not isinstance(found, int | float):
        return None
    return float(found)


def mapping(value: Any, *path: Step) -> Mapping[str, Any] | None:
    found = value_at(value, *path)
    return found if isinstance(found, Mapping) else None


def elements(value: Any, *path: Step) -> list[Any]:
    """The items of the list at `path`; empty when there is no list there."""
    found = value_at(value, *path)
    if not is_list(found):
        return []
    trail = [str(step) for step in path]
    return [_known(found[index], [*trail, str(index)]) for index in range(len(found))]


def indexed(value: Any, *path: Step) -> list[tuple[int, Any]]:
    """(index, item) for each item of the list at `path`, without checking the items: an item
    not known yet comes as the engine's unknown sentinel and raises when it is read, so a check
    that judges items one at a time skips it alone."""
    found = value_at(value, *path)
    if not is_list(found):
        return []
    items = []
    for index in range(len(found)):
        try:
            items.append((index, found[index]))
        except UnknownValueError as unknown:
            items.append((index, unknown.unknown_type_sentinel))
    return items


def entries(value: Any, *path: Step) -> list[tuple[str, Any]]:
    """The (key, value) pairs of the mapping at `path`; empty when there is no mapping there."""
    found = mapping(value, *path)
    if found is None:
        return []
    trail = [str(step) for step in path]
    # Iterating a proxy yields its keys without reading (and checking) the values.
    return [(key, _known(found[key], [*trail, key])) for key in list(found)]


def keys(value: Any, *path: Step) -> list[str]:
    """The keys of the mapping at `path`, without reading its values."""
    found = mapping(value, *path)
    return [] if found is None else [key for key in found if isinstance(key, str)]


def is_list(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str | bytes)


def field_path(*steps: Step) -> str:
    """`spec.containers[0].image` from ("spec", "containers", 0, "image")."""
    rendered = ""
    for step in steps:
        if isinstance(step, int):
            rendered += f"[{step}]"
        elif "." in step or "/" in step:
            rendered += f'["{step}"]'
        else:
            rendered += f".{step}" if rendered else step
    return rendered


def shown(value: Any) -> str:
    """A property value as it reads in a message, spelled as in YAML or JSON: strings quoted,
    whole numbers without a fraction (properties arrive as floats), `true`, `null`."""
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)


def _known(value: Any, trail: list[str]) -> Any:
    if isinstance(value, str) and value in UNKNOWN_SENTINELS:
        raise UnknownValueError(value, list(trail))
    return value
