"""How a key is named: as the stack file writes it (`gpu-platform:namespaces[0].gpuQuota`) and
as the config model's classes built in code name it (`StackConfig.namespaces[0].gpu_quota`),
and the types a key's path leads through."""

import re
import types
import typing
from typing import Annotated, Any

from pydantic import BaseModel

from gpu_platform.config.problems import key_path
from gpu_platform.config.stack import StackConfig

_KEY_PART = re.compile(r"\[(\d+)\]|\.?([^.\[]+)")


def code_path(path: str) -> str:
    """A key path of the stack file as the classes built in code name it, as a field's own
    problem does: `gpu-platform:namespaces[0].gpuQuota` is `StackConfig.namespaces[0].gpu_quota`.
    Past what no model declares (a mapping's keys: `labels.team`), as written."""
    annotation: Any = StackConfig
    written = path.removeprefix(key_path())
    named = StackConfig.__name__
    while written and (part := _KEY_PART.match(written)) is not None:
        annotation = unwrapped(annotation, None)
        if part[1] is not None:
            named += part[0]
            args = typing.get_args(annotation)
            annotation = args[0] if typing.get_origin(annotation) is list and args else None
        elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
            fields = {info.alias or n: (n, info) for n, info in annotation.model_fields.items()}
            name, info = fields.get(part[2], (part[2], None))
            named += f".{name}"
            annotation = info.annotation if info is not None else None
        else:
            return named + written
        written = written[part.end() :]
    return named


def unwrapped(annotation: Any, tag: str | int | None) -> Any:
    """`annotation` without `Annotated` or `None`; of a union of models, the member whose
    `mode` is `tag` (pydantic puts a discriminated union's tag in the error location)."""
    if typing.get_origin(annotation) is Annotated:
        return unwrapped(typing.get_args(annotation)[0], tag)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(members) == 1:
            return unwrapped(members[0], tag)
        return next((m for m in members if tag in tags_of(m)), None)
    return annotation


def tags_of(model: Any) -> tuple[Any, ...]:
    """A union member's tag: its `mode` (`Literal["mig"]`), which every sharing mode has."""
    fields = getattr(model, "model_fields", {})
    return typing.get_args(fields["mode"].annotation) if "mode" in fields else ()
