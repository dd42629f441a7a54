"""The stack's config with its invalid keys set aside, for the rules across fields to run over
what is valid: each key that was refused (or is not known) is left out of the model it belongs
to, at the innermost model, and a rule that reads it gets `SetAsideKeyRead` rather than a
default standing in for it."""

import functools
import json
import typing
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from gpu_platform.config.fields import Model, SetAsideKeyRead
from gpu_platform.config.key_paths import unwrapped
from gpu_platform.config.problems import ConfigProblem

Loc = tuple[str | int, ...]
"""A key's place in the stack's config: `("pools", 1, "max")`."""
M = TypeVar("M", bound=BaseModel)


def set_aside(model: type[M], raw: Mapping[str, Any], invalid: Collection[Loc]) -> M:
    """`model` of `raw`, every field leading to one of the `invalid` places left out of the
    innermost model that holds it; a value that does not validate on its own left out too."""
    fields = {info.alias or name: name for name, info in model.model_fields.items()}
    values: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in fields or (key,) in invalid:
            continue
        within = [loc[1:] for loc in invalid if loc[:1] == (key,)]
        built = _field(model, fields[key], value, within)
        if built is not _LEFT_OUT:
            values[fields[key]] = built
    given = {fields[key] for key in raw if key in fields}
    built_model = model.model_construct(_fields_set=given, **values)
    # model_construct fills in the default of a field it was not given; where the stack gave
    # the field (or left out a required one), that default is not the stack's value.
    missing = {fields[loc[0]] for loc in invalid if len(loc) == 1 and loc[0] in fields}
    for name in (given | missing) - values.keys():
        built_model.__dict__.pop(name, None)
    return built_model


_LEFT_OUT = object()


def _field(model: type[BaseModel], name: str, value: Any, invalid: Sequence[Loc]) -> Any:
    """The field `name` of `model` from `value`, with what is `invalid` within it set aside
    where the field holds models (one, or a list of them); else left out as a whole."""
    annotation = unwrapped(model.model_fields[name].annotation, None)
    if not invalid:
        try:
            return _adapter(model, name).validate_json(json.dumps(value, default=str), strict=True)
        except ValidationError:
            return _LEFT_OUT
    if _is_model(annotation) and isinstance(value, Mapping):
        return set_aside(annotation, value, invalid)
    item = _list_item(annotation)
    if (
        item is not None
        and isinstance(value, list)
        and all(
            isinstance(element, Mapping) and (i,) not in invalid for i, element in enumerate(value)
        )
    ):
        return [
            set_aside(item, element, [loc[1:] for loc in invalid if loc[:1] == (i,)])
            for i, element in enumerate(value)
        ]
    return _LEFT_OUT


@functools.cache
def _adapter(model: type[BaseModel], name: str) -> TypeAdapter[Any]:
    info = model.model_fields[name]
    annotated: Any = Annotated[
        info.annotation, *info.metadata, Field(discriminator=info.discriminator)
    ]
    return TypeAdapter(annotated)


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, Model)


def _list_item(annotation: Any) -> Any:
    """The model a `list[...]` of models holds; None for anything else."""
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is list and len(args) == 1 and _is_model(args[0]):
        return args[0]
    return None


E = TypeVar("E")


def per_element(
    elements: Sequence[E], problems_of: Callable[[int, E], Iterator[ConfigProblem]]
) -> Iterator[ConfigProblem]:
    """`problems_of` each element (a pool, a namespace) with its index. An element whose rule
    reads one of its keys set aside says nothing more, as a rule does (`cross_field_problems`);
    the elements after it are still judged, so that each pool's problems come in one report."""
    for i, element in enumerate(elements):
        try:
            yield from problems_of(i, element)
        except SetAsideKeyRead:
            continue
