"""Keys that were meant for the platform but would reach no one: a namespace misspelt, a platform
key set in the project's own namespace, a key misspelt within the platform's (did you mean...)."""

import difflib
import typing
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from pydantic import BaseModel

from gpu_platform.config.key_paths import tags_of, unwrapped
from gpu_platform.config.problems import CONFIG_NAMESPACE, ConfigProblem, key_path
from gpu_platform.config.stack import StackConfig

_NEAR_MISS_RATIO = 0.85
_NEAR_MISS = (
    f"a key in the `{CONFIG_NAMESPACE}` namespace: this one looks misspelt, and Pulumi hands a"
    " key in a namespace no program reads to no one"
)


def misdirected_key_problems(
    keys: Iterable[str], project: str, value_of: Callable[[str], Any]
) -> Iterator[ConfigProblem]:
    """A problem for each of the stack's keys (`<namespace>:<name>`) meant for the platform that
    it never reads; `value_of` gives a key's value as the report may show it."""
    keys = set(keys)
    platform_keys = _keys_of(StackConfig)
    for key in sorted(keys):
        namespace, _, name = key.partition(":")
        # `pulumi config set monitoring ...` in a project of its own writes
        # `<project>:monitoring`: a key of the project, which the platform does not read. Where
        # the platform's namespace sets the key as well, the project's is taken to be the
        # program's own.
        if (
            namespace == project != CONFIG_NAMESPACE
            and name in platform_keys
            and f"{CONFIG_NAMESPACE}:{name}" not in keys
        ):
            yield ConfigProblem(
                key,
                value_of(key),
                f"the key {CONFIG_NAMESPACE}:{name}: the platform reads the {CONFIG_NAMESPACE}"
                f" namespace only, not the project's ({project}); set it with `pulumi config set"
                f" {CONFIG_NAMESPACE}:{name} ...`",
            )
        elif _near_miss(namespace, project):
            yield ConfigProblem(key, value_of(key), _NEAR_MISS)


def _near_miss(namespace: str, project: str) -> bool:
    """Whether `namespace` is a likely misspelling of the platform's (and not the project's own,
    which may well be named like it)."""
    return namespace not in (CONFIG_NAMESPACE, project) and (
        difflib.SequenceMatcher(None, namespace, CONFIG_NAMESPACE).ratio() >= _NEAR_MISS_RATIO
    )


def unknown_key_expectation(loc: Sequence[str | int], key_loc: Sequence[str | int]) -> str:
    """What to say of a key the model has no field for: at pydantic's error location `loc`
    (with a union's tag in it), written as `key_loc` (without)."""
    known = _keys_of(_model_at(loc[:-1]))
    guess = difflib.get_close_matches(str(loc[-1]), known, n=1)
    if guess:
        return f"no such key; did you mean {key_path(*key_loc[:-1], guess[0])}?"
    return "no such key (check its spelling against the config reference)"


def _keys_of(model: type[BaseModel] | None) -> list[str]:
    """The keys a model takes in the stack file (its fields' camelCase aliases)."""
    if model is None:
        return []
    return [info.alias or name for name, info in model.model_fields.items()]


def _model_at(loc: Sequence[str | int]) -> type[BaseModel] | None:
    """The model whose keys are given at `loc` of the stack's config, if a model's."""
    annotation: Any = StackConfig
    for part in loc:
        annotation = unwrapped(annotation, part)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            fields = {info.alias or name: info for name, info in annotation.model_fields.items()}
            if part in fields:
                annotation = fields[part].annotation
            elif part not in tags_of(annotation):
                return None
        elif typing.get_origin(annotation) in (list, dict):
            annotation = typing.get_args(annotation)[-1]
        else:
            return None
    annotation = unwrapped(annotation, None)
    return (
        annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
    )
