"""Loading: the stack's `gpu-platform:` keys read from Pulumi (and refused where they were meant
for the platform but set elsewhere), validated into a `StackConfig`, every problem reported at
once in one `ConfigError` without a secret's value."""

import copy
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from gpu_platform.config.fields import Cloud, expectation
from gpu_platform.config.key_paths import code_path
from gpu_platform.config.near_misses import misdirected_key_problems, unknown_key_expectation
from gpu_platform.config.pools import SHARING_MODES
from gpu_platform.config.problems import (
    CONFIG_NAMESPACE,
    MISSING,
    PLAIN_VALUES,
    SECRET,
    ConfigError,
    ConfigProblem,
    key_of,
    key_path,
    not_plain_problems,
)
from gpu_platform.config.rules import cross_field_problems
from gpu_platform.config.set_aside import Loc, set_aside
from gpu_platform.config.stack import StackConfig


class ReadSettings(dict[str, Any]):
    """The stack's `gpu-platform:` keys as read, with the problems the reading found (keys meant
    for the platform set where it does not read them), which `load_stack_config` reports with
    every other problem."""

    def __init__(self, values: Mapping[str, Any], problems: Iterable[ConfigProblem] = ()):
        super().__init__(values)
        self.problems = list(problems)


def read_pulumi_config() -> ReadSettings:
    """The stack's `gpu-platform:` keys, without the namespace, values parsed from JSON.

    Every key is read, not only the known ones, so that a misspelt key is reported rather than
    silently ignored.
    """
    import pulumi
    import pulumi.runtime.config as runtime_config

    prefix = CONFIG_NAMESPACE + ":"
    keys = _stack_config_keys()

    def value(key: str) -> Any:
        text = runtime_config.get_config(key)
        try:
            return json.loads(text) if text is not None else None
        except ValueError:
            return text

    return ReadSettings(
        {key.removeprefix(prefix): value(key) for key in keys if key.startswith(prefix)},
        misdirected_key_problems(
            keys,
            pulumi.get_project(),
            lambda key: SECRET if runtime_config.is_config_secret(key) else value(key),
        ),
    )


def secret_config_keys() -> frozenset[str]:
    """The stack's `gpu-platform:` keys (without the namespace) that Pulumi holds as secrets."""
    import pulumi.runtime.config as runtime_config

    prefix = CONFIG_NAMESPACE + ":"
    return frozenset(
        key.removeprefix(prefix)
        for key in _stack_config_keys()
        if key.startswith(prefix) and runtime_config.is_config_secret(key)
    )


def _stack_config_keys() -> set[str]:
    """Every config key of the stack, of every namespace, as the Pulumi CLI hands them over."""
    import pulumi.runtime.config as runtime_config

    return {*(runtime_config.get_config_env() or {}), *runtime_config.CONFIG.get()}


def load_stack_config(
    raw: Mapping[str, Any], secret_keys: frozenset[str] = frozenset()
) -> StackConfig:
    """Validate the stack's `gpu-platform:` keys (given without the namespace); `secret_keys`
    are those set as secrets, whose values no error shows and the components keep secret.

    Every problem the settings alone show comes in one report: what the reading found (a key
    set in another namespace, `ReadSettings`), values that are not plain data, each field's own,
    and the rules across fields. Those run over the fields that are valid: a rule that reads a
    key found invalid, or not known (a value that is not plain, a key set elsewhere), says
    nothing from there on rather than judge by a default standing in for it.
    """
    problems = [*(raw.problems if isinstance(raw, ReadSettings) else ()), *not_plain_problems(raw)]
    unknown: list[Loc] = [(key,) for key in _set_elsewhere(problems, raw)]
    given, config = _validated(_plain_part(raw, (), unknown))
    errors: list[ErrorDetails] = []
    if isinstance(config, ValidationError):
        errors = config.errors(include_url=False)
        problems += [
            p
            for p in _problems_from(errors, given=raw.keys())
            if not any(_within(p.path, key_path(*loc)) for loc in unknown)
        ]
    if isinstance(config, StackConfig) and not problems:
        problems = list(cross_field_problems(config))
    else:
        reported = [p.path for p in problems]
        problems += [
            p
            for p in cross_field_problems(_set_aside(given, errors, unknown))
            if not any(_within(p.path, path) for path in reported)
        ]
    if problems or not isinstance(config, StackConfig):
        raise ConfigError(problems).hiding_secrets(secret_keys, raw)
    config._secret_keys = secret_keys
    return config


def check_stack_config(config: StackConfig) -> None:
    """The rules across fields over a config built in code (`StackConfig(...)`), which field
    rules alone have validated: a `ConfigError` for every problem, each key named as a field's
    own problem names it in code (`StackConfig.namespaces[0].gpu_quota`)."""
    problems = list(cross_field_problems(config))
    if problems:
        raw = config.model_dump(mode="json", by_alias=True, exclude_unset=True)
        shown = ConfigError(problems).hiding_secrets(config.secret_keys, raw).problems
        raise ConfigError(p._replace(path=code_path(p.path)) for p in shown)


def _validated(raw: Mapping[str, Any]) -> tuple[dict[str, Any], StackConfig | ValidationError]:
    """`raw` with the numbers it gives as text read as numbers, and its config, or what is
    wrong with it."""
    # Strictly, as JSON, which is what Pulumi hands a program its config as: `max: true` is a
    # boolean, not the 1 pydantic's lax mode would read it as; `"two"` is not a number.
    given = dict(raw)
    while True:
        try:
            return given, StackConfig.model_validate_json(
                json.dumps(given, default=str), strict=True
            )
        except ValidationError as error:
            numbers = list(_numbers_given_as_text(error))
            if not numbers:
                return given, error
            given = copy.deepcopy(given)
            if not all(_replace(given, loc, number) for loc, number in numbers):
                return given, error


# Where a number is expected, a string that is exactly a JSON number is read as that number:
# Pulumi's config storage types only booleans and integers set with `pulumi config set --path`
# and holds every other value as a string (`adjustObjectValue` in pulumi's
# package sdk/go/common/resource/config), so `--path ...flowLogSampling 0.25` arrives as
# "0.25", and a nested `--secret` number decrypts to a string.
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_NUMBER_EXPECTED = frozenset({"int_type", "float_type"})


def _numbers_given_as_text(error: ValidationError) -> Iterator[tuple[list[str | int], Any]]:
    """The locations where `error` expected a number and found the text of one, with it."""
    for e in error.errors(include_url=False):
        text = e.get("input")
        if e["type"] in _NUMBER_EXPECTED and isinstance(text, str) and _JSON_NUMBER.fullmatch(text):
            yield _key_loc(e["loc"]), json.loads(text)


def _replace(raw: dict[str, Any], loc: Sequence[str | int], value: Any) -> bool:
    """Set the value at `loc` in `raw`; whether it held one there to replace."""
    parent: Any = raw
    try:
        for part in loc[:-1]:
            parent = parent[part]
        parent[loc[-1]]
    except (KeyError, IndexError, TypeError):
        return False
    parent[loc[-1]] = value
    return True


def _set_elsewhere(problems: Iterable[ConfigProblem], raw: Mapping[str, Any]) -> list[str]:
    """The platform's keys that `problems` find set in another namespace, and `raw` lacks."""
    keys = {key_of(StackConfig, field) for field in StackConfig.model_fields}
    names = (p.path.partition(":")[2] for p in problems if not p.path.startswith(key_path()))
    return sorted({name for name in names if name in keys and name not in raw})


def _plain_part(value: Any, loc: Loc, not_plain: list[Loc]) -> Any:
    """`value` with each part that is not plain data (`not_plain_problems`) taken out (None in
    its place), its place added to `not_plain`."""
    if isinstance(value, Mapping):
        return {key: _plain_part(item, (*loc, str(key)), not_plain) for key, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_plain_part(item, (*loc, i), not_plain) for i, item in enumerate(value)]
    if isinstance(value, (*PLAIN_VALUES, BaseModel)):
        return value
    not_plain.append(loc)
    return None


def _set_aside(
    given: Mapping[str, Any], errors: Iterable[ErrorDetails], unknown: Iterable[Loc]
) -> StackConfig:
    """The config of `given` with every key that `errors` found invalid or missing, or whose
    value is not known, set aside (`set_aside`)."""
    invalid = {tuple(_key_loc(e["loc"])) for e in errors}
    return set_aside(StackConfig, given, invalid | set(unknown))


def _within(path: str, other: str) -> bool:
    """Whether the key path `path` is `other` or a key within it."""
    return path == other or path.startswith((other + ".", other + "["))


def _key_loc(loc: Sequence[str | int]) -> list[str | int]:
    """pydantic's error location as the stack file's keys: a discriminated union puts the chosen
    tag in the location, and a mapping's key that fails its own type `[key]` after the key."""
    return [
        part
        for i, part in enumerate(loc)
        if not (i > 0 and loc[i - 1] == "sharing" and part in SHARING_MODES) and part != "[key]"
    ]


def _problems_from(errors: Iterable[ErrorDetails], given: Iterable[str]) -> Iterator[ConfigProblem]:
    """The problems pydantic found; `given` are the stack's keys (without the namespace)."""
    for e in errors:
        loc = _key_loc(e["loc"])
        if e["type"] == "union_tag_not_found" and loc[-1] == "sharing":
            # `sharing: {replicas: 4}`: the key missing is the mode, which decides what the
            # others mean; pydantic would only say it found no tag in the whole object.
            modes = ", ".join(f"'{mode}'" for mode in SHARING_MODES)
            yield ConfigProblem(key_path(*loc, "mode"), MISSING, f"one of {modes}")
            continue
        if e["type"] == "extra_forbidden":
            expected = unknown_key_expectation(e["loc"], loc)
        elif e["type"] == "missing" and loc == ["cloud"]:
            expected = _cloud_expectation(given)
        else:
            expected = expectation(e["type"], e["msg"], e.get("ctx", {}))
        yield ConfigProblem(
            key_path(*loc), MISSING if e["type"] == "missing" else e["input"], expected
        )


def _cloud_expectation(given: Iterable[str]) -> str:
    """What to say when `cloud` is missing: with what the stack does set, which is often a sign
    of keys set elsewhere."""
    found = ", ".join(key_path(key) for key in sorted(given))
    clouds = " or ".join(cloud.value for cloud in Cloud)
    if not found:
        return f"{clouds} (the stack sets no key in the {CONFIG_NAMESPACE} namespace)"
    return f"{clouds} (the stack sets {found}, but not {key_path('cloud')})"
