"""Stack files read as Pulumi reads them: the `config:` block of `Pulumi.<stack>.yaml`, refused
where Pulumi would refuse it, and its `secure:` values, which need the stack's secrets provider,
replaced by a stand-in that stays marked secret.

Apart from running the program (`gpu_platform.offline.program`), so that the commands that only
read stack files (`preflight`) do not import the Pulumi SDK.
"""

import codecs
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from gpu_platform import yaml_documents
from gpu_platform.config.loading import ReadSettings, load_stack_config
from gpu_platform.config.near_misses import misdirected_key_problems
from gpu_platform.config.problems import CONFIG_NAMESPACE, SECRET, ConfigError
from gpu_platform.project import Project

# `secure:` values in a stack file are encrypted for the stack's secrets provider, which the
# offline plan does not have; they are replaced by this, and still marked secret.
SECRET_STAND_IN = "offline-plan-secret"
# The top-level keys of a stack file; Pulumi decodes it into its `ProjectStack` and drops any
# other key without a word (pulumi/pulumi sdk/go/common/workspace/project.go, `ProjectStack`;
# loaders.go, `LoadProjectStackBytes`), so a config key written above `config:` would be lost.
_STACK_FILE_KEYS = ("config", "environment", "secretsprovider", "encryptedkey", "encryptionsalt")
# `<namespace>:<name>`, or the older `<namespace>:config:<name>` (Pulumi's config.ParseKey).
_NAMESPACED_KEY = re.compile(r"^[^:]+:(config:)?[^:]+$")


def stack_config(stack: str, project: Project | None = None) -> dict[str, Any]:
    """The `config:` block of `Pulumi.<stack>.yaml` of `project` (default: the one the current
    directory is in)."""
    project = project or Project.find()
    path = project.stack_file(stack)
    if not path.exists():
        raise FileNotFoundError(
            f"no stack file {path.name} in {path.parent}; the stacks there:"
            f" {', '.join(project.stacks()) or 'none'}"
        )
    data = path.read_bytes()
    _refuse_other_than_utf8(path, data)
    try:
        document = yaml_documents.load_unique_keys(data)
    except yaml_documents.DuplicateKeyError as error:
        raise StackFileError(
            f"{path}: {error}: Pulumi refuses a key given twice in one mapping; keep one"
        ) from None
    except yaml.YAMLError as error:
        raise StackFileError(f"{path} is not valid YAML: {error}") from None
    if document is None:
        return {}
    if not isinstance(document, dict):
        raise StackFileError(f"{path} must be a YAML mapping (with a `config:` block)")
    refused: list[str] = []
    stray = [key for key in document if key not in _STACK_FILE_KEYS]
    if stray:
        refused.append(
            f"{path}: {', '.join(map(repr, stray))}: not a key of a stack file, which Pulumi"
            f" would ignore (it reads {', '.join(_STACK_FILE_KEYS)}); a configuration key"
            " belongs under `config:`"
        )
    config = document.get("config") or {}
    if not isinstance(config, dict):
        raise StackFileError(f"{path}: `config:` must be a mapping of `<namespace>:<name>` keys")
    # Pulumi puts a key written without a namespace in the project's (`monitoring` is
    # `<project>:monitoring`: pulumi/pulumi sdk/go/common/workspace/loaders.go,
    # `stackConfigNamespacedWithProject`), and its config key parser refuses the stack file over
    # any other key.
    config = {key if ":" in str(key) else f"{project.name}:{key}": v for key, v in config.items()}
    malformed = [key for key in config if not _NAMESPACED_KEY.match(str(key))]
    if malformed:
        refused.append(
            f"{path}: {', '.join(map(repr, malformed))}: could not parse as a configuration key"
            " (configuration keys should be of the form `<namespace>:<name>`, as in"
            " `gpu-platform:pools`)"
        )
    if refused:
        # With every problem of the keys it could read, so that one round shows them all.
        readable = {key: v for key, v in config.items() if key not in malformed}
        raise StackFileError("\n".join([*refused, *_config_problems(readable, project.name)]))
    return config


def _config_problems(config: Mapping[str, Any], project: str) -> list[str]:
    """The report of what is wrong with the platform's keys of `config` (none: nothing)."""
    values, secret_keys = gpu_platform_config(config)
    misdirected = misdirected_key_problems(
        config,
        project,
        lambda key: SECRET if _without_secure_values(config[key])[1] else config[key],
    )
    try:
        load_stack_config(ReadSettings(values, misdirected), secret_keys)
    except ConfigError as error:
        return [error.report()]
    return []


def _refuse_other_than_utf8(path: Path, data: bytes) -> None:
    """Pulumi reads a stack file as UTF-8, or as UTF-16 where it starts with that byte order
    mark (gopkg.in/yaml.v3 v3.0.1 readerc.go, `yaml_parser_determine_encoding`), as the YAML
    reader here does given the file's bytes."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        # The byte alone, not the text around it: a secret may be written there.
        line = data.count(b"\n", 0, error.start) + 1
        raise StackFileError(
            f"{path}: line {line}: byte 0x{data[error.start]:02x} is not UTF-8; Pulumi reads a"
            " stack file as UTF-8 text: save it as UTF-8"
        ) from None


class StackFileError(ValueError):
    """A stack file Pulumi would refuse to read."""


def plain_config(values: Mapping[str, Any]) -> tuple[dict[str, Any], frozenset[str]]:
    """Stack config with every `secure:` value replaced by the stand-in, and the keys that had
    one (Pulumi holds such a key as a secret as a whole)."""
    plain: dict[str, Any] = {}
    secret_keys: set[str] = set()
    for key, value in values.items():
        plain[key], secret = _without_secure_values(value)
        if secret:
            secret_keys.add(key)
    return plain, frozenset(secret_keys)


def _without_secure_values(value: Any) -> tuple[Any, bool]:
    """`value` with each `{secure: ...}` in it replaced by the stand-in, and whether it had one.
    `pulumi config set --secret --path` writes them at any depth of a structured value."""
    if isinstance(value, Mapping) and set(value) == {"secure"}:
        return SECRET_STAND_IN, True
    if isinstance(value, Mapping):
        items = {k: _without_secure_values(v) for k, v in value.items()}
        return {k: v for k, (v, _) in items.items()}, any(s for _, s in items.values())
    if isinstance(value, list):
        elements = [_without_secure_values(v) for v in value]
        return [v for v, _ in elements], any(s for _, s in elements)
    return value, False


def gpu_platform_config(values: Mapping[str, Any]) -> tuple[dict[str, Any], frozenset[str]]:
    """The stack file's `gpu-platform:` keys without the prefix, secure values replaced, and
    those of them set as secrets."""
    plain, secret_keys = plain_config(values)
    prefix = CONFIG_NAMESPACE + ":"
    return (
        {k.removeprefix(prefix): v for k, v in plain.items() if k.startswith(prefix)},
        frozenset(k.removeprefix(prefix) for k in secret_keys if k.startswith(prefix)),
    )
