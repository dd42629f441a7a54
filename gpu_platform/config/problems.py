"""The error report: each problem by its key path as the user writes it, the value found (never
a secret's) and what is allowed, all of them in one `ConfigError`."""

import datetime
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, NamedTuple

from pydantic import BaseModel

CONFIG_NAMESPACE = "gpu-platform"

# A key whose name says its value is secret: Pulumi's own pattern for warning that a plain value
# looks like a password (pulumi/pulumi pkg/cmd/pulumi/config/config.go, `keyPattern`), and names
# of key material. The report never shows such a key's value, wherever the key is.
_SECRET_LOOKING_NAME = re.compile(
    r"passwd|pass|password|pwd|secret|token|credential|(private|api|access|ssh|signing)[-_]?key",
    re.IGNORECASE,
)


class ConfigProblem(NamedTuple):
    """One thing wrong with the stack configuration."""

    path: str
    """The key path as the user writes it: `gpu-platform:pools[1].max`."""
    value: Any
    expected: str


class ConfigError(Exception):
    """The stack configuration is invalid; lists every problem found."""

    def __init__(self, problems: Iterable[ConfigProblem]):
        self.problems = [p._replace(value=_shown_part(p.path, p.value)) for p in problems]
        super().__init__(self.report())

    def hiding_secrets(
        self, secret_keys: Iterable[str], raw: Mapping[str, Any] | None = None
    ) -> "ConfigError":
        """The same problems, with the values of secret keys replaced by a mention of them, and
        any of those values that `raw` (the stack's keys, without the namespace) holds taken out
        of what each problem says is allowed: a rule across keys names other keys' values
        (`at most max (3)`, `one of the pools: [...]`)."""
        secret_keys = list(secret_keys)
        prefixes = tuple(key_path(key) for key in secret_keys)
        given = raw or {}
        hide = _secret_values_pattern(given[key] for key in secret_keys if key in given)
        return ConfigError(
            ConfigProblem(
                p.path,
                SECRET if p.path.startswith(prefixes) and p.value is not MISSING else p.value,
                hide.sub(NOT_SHOWN, p.expected) if hide is not None else p.expected,
            )
            for p in self.problems
        )

    def report(self) -> str:
        lines = [f"Invalid stack configuration ({len(self.problems)} problem(s)):"]
        lines += [
            f"  {p.path}: got {_render(p.value)}; expected {p.expected}" for p in self.problems
        ]
        return "\n".join(lines)


MISSING = object()
"""The value of a problem whose key is not set."""
SECRET = object()
"""The value of a problem whose key is a secret: shown as such, never as itself."""


SECRET_LOOKING = object()
"""The value of a problem whose key's name says it is secret (`password`, `token`...)."""
NOT_SHOWN = "(not shown)"
"""What the report shows for a value under a secret-looking key inside a problem's value."""


def _secret_values_pattern(values: Iterable[Any]) -> "re.Pattern[str] | None":
    """A pattern matching each scalar within `values` as a whole word, longest first; None for
    none. Over-matching a number or a word that the rule's own text also uses only hides more."""
    scalars: set[str] = set()

    def collect(value: Any) -> None:
        if isinstance(value, Mapping):
            for v in value.values():
                collect(v)
        elif isinstance(value, list):
            for v in value:
                collect(v)
        elif isinstance(value, str | int | float) and not isinstance(value, bool) and str(value):
            scalars.add(str(value))

    for value in values:
        collect(value)
    if not scalars:
        return None
    words = "|".join(re.escape(s) for s in sorted(scalars, key=len, reverse=True))
    return re.compile(rf"(?<![\w.-])(?:{words})(?![\w-]|\.\w)")


def looks_secret(name: str) -> bool:
    """Whether a key's name says its value is secret."""
    return _SECRET_LOOKING_NAME.search(name) is not None


def _shown_part(path: str, value: Any) -> Any:
    """`value` as the report may show it: nothing of it if the key at `path` looks secret, and
    within it, nothing under a key that does."""
    last_key = re.split(r"[:.]", re.sub(r"\[\d+\]$", "", path))[-1]
    if value is MISSING or value is SECRET or not looks_secret(last_key):
        return _without_secret_looking_values(value)
    return SECRET_LOOKING


def _without_secret_looking_values(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {
            k: NOT_SHOWN if looks_secret(str(k)) else _without_secret_looking_values(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_without_secret_looking_values(v) for v in value]
    return value


def _render(value: Any) -> str:
    if value is MISSING:
        return "nothing (the key is required)"
    if value is SECRET:
        return "a value of a secret key (not shown)"
    if value is SECRET_LOOKING:
        return "a value (not shown: the key's name says it is secret)"
    return json.dumps(value, default=str)


def key_path(*loc: str | int) -> str:
    """`("pools", 1, "max")` -> `gpu-platform:pools[1].max`."""
    path = CONFIG_NAMESPACE + ":"
    for i, part in enumerate(loc):
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += part if i == 0 else f".{part}"
    return path


PLAIN_VALUES = (str, int, float, bool, type(None), datetime.date)
"""What a stack file's YAML can give a key (a date among them)."""


def not_plain_problems(
    value: Any, loc: tuple[str | int, ...] = (), path_of: Callable[..., str] = key_path
) -> Iterator[ConfigProblem]:
    """A problem for each value in settings given in code that is not plain data: an `Output`
    (of a cluster the program creates, a `StackReference`) has no value while the program
    decides what to create."""
    if isinstance(value, BaseModel):
        return
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield from not_plain_problems(item, (*loc, str(key)), path_of)
    elif isinstance(value, list | tuple | set | frozenset):
        for i, item in enumerate(value):
            yield from not_plain_problems(item, (*loc, i), path_of)
    elif not isinstance(value, PLAIN_VALUES):
        yield ConfigProblem(
            path_of(*loc),
            f"<{type(value).__name__}>",
            "a plain value: the settings decide which resources the platform creates, and how"
            " they are named, before any exists, so a value another resource gives (an Output)"
            " cannot be one; give the value itself (the name the program creates its cluster"
            " with), and pass the cluster's endpoint and credentials through the Kubernetes"
            " provider in the component's `providers`",
        )


def key_of(model: type[BaseModel], field: str) -> str:
    """How the stack file spells a model's field: its camelCase alias."""
    return model.model_fields[field].alias or field


def set_field_problems(
    model: BaseModel, fields: Iterable[str], loc: tuple[str | int, ...], why: str
) -> Iterator[ConfigProblem]:
    """A problem, saying `why`, for each of `fields` that the stack file sets in `model` (at
    `loc`), in name order."""
    for field in sorted(model.model_fields_set & set(fields)):
        yield ConfigProblem(key_path(*loc, key_of(type(model), field)), getattr(model, field), why)
