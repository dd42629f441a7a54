"""The error report: each problem by its key path as the user writes it, the value found (never
a secret's) and what is allowed, all of them in one `ConfigError`."""

import json
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

from pydantic import BaseModel

CONFIG_NAMESPACE = "gpu-platform"


class ConfigProblem(NamedTuple):
    """One thing wrong with the stack configuration."""

    path: str
    """The key path as the user writes it: `gpu-platform:pools[1].max`."""
    value: Any
    expected: str


class ConfigError(Exception):
    """The stack configuration is invalid; lists every problem found."""

    def __init__(self, problems: Iterable[ConfigProblem]):
        self.problems = list(problems)
        super().__init__(self.report())

    def hiding_secrets(self, secret_keys: Iterable[str]) -> "ConfigError":
        """The same problems, with the values of secret keys replaced by a mention of them."""
        prefixes = tuple(key_path(key) for key in secret_keys)
        return ConfigError(
            p._replace(value=SECRET)
            if p.path.startswith(prefixes) and p.value is not MISSING
            else p
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


def _render(value: Any) -> str:
    if value is MISSING:
        return "nothing (the key is required)"
    if value is SECRET:
        return "a value of a secret key (not shown)"
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
