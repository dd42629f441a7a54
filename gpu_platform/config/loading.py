"""Loading: the stack's `gpu-platform:` keys read from Pulumi (and refused where they were meant
for the platform but set elsewhere), validated into a `StackConfig`, every problem reported at
once in one `ConfigError` without a secret's value."""

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from pydantic import ValidationError

from gpu_platform.config.fields import PATTERN_MEANINGS, Cloud
from gpu_platform.config.near_misses import misdirected_key_problems, unknown_key_expectation
from gpu_platform.config.pools import SHARING_MODES
from gpu_platform.config.problems import (
    CONFIG_NAMESPACE,
    MISSING,
    SECRET,
    ConfigError,
    ConfigProblem,
    key_path,
)
from gpu_platform.config.rules import cross_field_problems
from gpu_platform.config.stack import StackConfig


def read_pulumi_config() -> dict[str, Any]:
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

    misdirected = list(
        misdirected_key_problems(
            keys,
            pulumi.get_project(),
            lambda key: SECRET if runtime_config.is_config_secret(key) else value(key),
        )
    )
    if misdirected:
        raise ConfigError(misdirected)
    return {key.removeprefix(prefix): value(key) for key in keys if key.startswith(prefix)}


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

    Field rules run first; rules across fields run once every field is valid, so each reported
    problem is about a value the user can fix as it stands.
    """
    try:
        config = StackConfig.model_validate(raw)
    except ValidationError as error:
        field_problems = _problems_from(error, given=raw.keys())
        raise ConfigError(field_problems).hiding_secrets(secret_keys, raw) from None
    problems = list(cross_field_problems(config))
    if problems:
        raise ConfigError(problems).hiding_secrets(secret_keys, raw)
    config._secret_keys = secret_keys
    return config


_EXPECTATION_PREFIXES = ("Input should be ", "Value should ", "String should ")


def _problems_from(error: ValidationError, given: Iterable[str]) -> Iterator[ConfigProblem]:
    """The problems pydantic found; `given` are the stack's keys (without the namespace)."""
    for e in error.errors(include_url=False):
        # A discriminated union puts the chosen tag in the location, and a mapping's key that
        # fails its own type `[key]` after the key: drop both.
        loc = [
            part
            for i, part in enumerate(e["loc"])
            if not (i > 0 and e["loc"][i - 1] == "sharing" and part in SHARING_MODES)
            and part != "[key]"
        ]
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
            expected = _expectation(e["type"], e["msg"], e.get("ctx", {}))
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


def _expectation(kind: str, message: str, ctx: Mapping[str, Any]) -> str:
    if kind == "missing":
        return "a value"
    if kind == "string_pattern_mismatch":
        return PATTERN_MEANINGS[ctx["pattern"]]
    if kind == "union_tag_invalid":
        return f"one of {ctx['expected_tags']}"
    for prefix in _EXPECTATION_PREFIXES:
        if message.startswith(prefix):
            return message.removeprefix(prefix)
    return message[0].lower() + message[1:]
