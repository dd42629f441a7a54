"""Writes `gpu_platform/package/inputs.py`, the component package's inputs, from the config model.

The Python SDK's component provider host infers a package's schema from the annotations of the
component's `args` class and the docstrings under its fields, and knows only plain classes,
`TypedDict`s, lists, string-keyed dicts, enums and resources: a pydantic model, `Literal`,
`Annotated` and any union but `Optional` are refused (pulumi v3.272.0
`sdk/python/lib/pulumi/provider/experimental/analyzer.py`, `analyze_property`). So each model
of `StackConfig` becomes a `TypedDict` of the same fields, each with its field's description:

- constrained strings (`Annotated[str, ...]`), `Literal` strings and string enums: `str`, the
  description saying what is allowed, the loader refusing anything else by key;
- a discriminated union of models (a pool's `sharing`): one type with every variant's fields,
  all optional, the loader checking them against the variant `mode` names;
- any other union of plain values (`idleMinutes`, a number or `never`): `Any`.

`python -m gpu_platform.package.inputs_generator` rewrites the module; a test checks that it is
up to date.
"""

import ast
import dataclasses
import inspect
import textwrap
import types
import typing
from collections.abc import Awaitable, Iterator, Mapping
from dataclasses import dataclass
from datetime import date, datetime
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import AwareDatetime, BaseModel
from pydantic.alias_generators import to_pascal
from pydantic.fields import FieldInfo

from gpu_platform.cluster_facts import EksClusterFacts, GkeClusterFacts
from gpu_platform.config import StackConfig
from gpu_platform.package.component import is_model
from gpu_platform.platform import GpuPlatformArgs

INPUTS_MODULE = Path(__file__).with_name("inputs.py")
TOP_LEVEL = "GpuPlatformInputs"
# What the component takes beyond the stack's settings: the `GpuPlatformArgs` fields that make
# sense for a program that is not this repository's own (`moved_from_stack_root` is only for
# stacks that ran its program before `GpuPlatform` existed).
EXTRA_ARGS = ("part_names_under_it",)
# The facts of a cluster the program creates (`GpuPlatformArgs.cluster_facts`), one input per
# cloud, as the host takes no union: their Inputs stay Inputs in the schema.
FACTS_ARGS = {"eks_cluster_facts": EksClusterFacts, "gke_cluster_facts": GkeClusterFacts}


@dataclass
class _Field:
    name: str
    annotation: str
    required: bool
    description: str | None


@dataclass
class _Class:
    name: str
    description: str | None
    fields: list[_Field]


class _Generator:
    def __init__(self) -> None:
        self.classes: dict[str, _Class] = {}
        self.done: list[str] = []
        """The classes' names, each after those it names, as Python needs them defined."""

    def model(self, model: type[BaseModel], name: str | None = None) -> str:
        name = name or f"{model.__name__}Args"
        if name not in self.classes:
            self.classes[name] = _Class(name, inspect.getdoc(model), [])
            self.classes[name].fields = [
                self.field(model, field_name, info)
                for field_name, info in model.model_fields.items()
            ]
            self.done.append(name)
        return name

    def field(self, model: type[BaseModel], name: str, info: FieldInfo) -> _Field:
        annotation = self.annotation(info.annotation, f"{model.__name__}{to_pascal(name)}")
        return _Field(name, annotation, info.is_required(), info.description)

    def annotation(self, annotation: Any, name_if_merged: str) -> str:
        origin = get_origin(annotation)
        if origin is Annotated:
            return self.annotation(get_args(annotation)[0], name_if_merged)
        if origin in (Union, types.UnionType):
            members = [a for a in get_args(annotation) if a is not type(None)]
            if len(members) == 1:
                return self.annotation(members[0], name_if_merged)
            if all(is_model(m) for m in members):
                return self.merged(members, f"{name_if_merged}Args")
            return "Any"
        if origin is Literal:
            return _plain_type(get_args(annotation))
        if origin is list:
            return f"list[{self.annotation(get_args(annotation)[0], name_if_merged)}]"
        if origin is dict:
            return f"dict[str, {self.annotation(get_args(annotation)[1], name_if_merged)}]"
        if is_model(annotation):
            return self.model(annotation)
        if isinstance(annotation, type) and issubclass(annotation, Enum):
            return _plain_type([member.value for member in annotation])
        if annotation is Any:
            return "Any"
        if annotation in (AwareDatetime, datetime, date):
            # Given in a stack file as an RFC 3339 string (`2026-11-26T00:00:00Z`).
            return "str"
        if annotation in (str, int, float, bool):
            return str(annotation.__name__)
        raise TypeError(f"no schema type for {annotation!r} ({name_if_merged})")

    def merged(self, models: list[type[BaseModel]], name: str) -> str:
        """One type with the fields of every variant of a discriminated union, all optional,
        each described for the variants that have it (by their first field, the union's
        discriminator: `mode`)."""
        if name in self.classes:
            return name
        fields: dict[str, _Field] = {}
        described: dict[str, list[tuple[str, str | None]]] = {}
        variants = []
        for model in models:
            variant = self.classes[self.model(model)]
            tag = variant.fields[0].name
            value = get_args(model.model_fields[tag].annotation)[0]
            variants.append(f"`{value}`" + "".join(f", `{f.name}`" for f in variant.fields[1:]))
            for field in variant.fields[1:]:
                seen = fields.setdefault(
                    field.name, _Field(field.name, field.annotation, False, None)
                )
                if seen.annotation != field.annotation:
                    raise TypeError(f"{name}.{field.name}: {seen.annotation}, {field.annotation}")
                described.setdefault(field.name, []).append((value, field.description))
            del self.classes[variant.name]
            self.done.remove(variant.name)
        for field_name, field in fields.items():
            field.description = _merged_description(described[field_name])
        values = ", ".join(f"`{v}`" for v in (variant.split("`")[1] for variant in variants))
        tag_field = _Field(tag, "str", True, f"One of {values}.")
        description = textwrap.fill(f"One of: {'; '.join(variants)}.", 96)
        self.classes[name] = _Class(name, description, [tag_field, *fields.values()])
        self.done.append(name)
        return name


def _merged_description(found: list[tuple[str, str | None]]) -> str | None:
    """A field's description in each variant that has it, the variant named where they differ."""
    descriptions = {description for _, description in found if description}
    if len(descriptions) <= 1:
        return next(iter(descriptions), None)
    return "\n".join(
        textwrap.fill(f"`{value}`: " + " ".join(description.split()), 96)
        for value, description in found
        if description
    )


def _plain_type(values: typing.Iterable[Any]) -> str:
    kinds = {type(v) for v in values}
    if len(kinds) != 1:
        raise TypeError(f"mixed literal values {values!r}")
    return kinds.pop().__name__


def _extra_fields() -> Iterator[_Field]:
    docstrings = _attribute_docstrings(GpuPlatformArgs)
    hints = typing.get_type_hints(GpuPlatformArgs)
    for name in EXTRA_ARGS:
        yield _Field(name, hints[name].__name__, False, docstrings[name])


def _facts_fields(generator: _Generator) -> Iterator[_Field]:
    for name, facts in FACTS_ARGS.items():
        summary = (inspect.getdoc(facts) or "").split("\n\n")[0]
        description = textwrap.fill(
            f"{' '.join(summary.split())} For a cluster the program creates: at most one of"
            " `eksClusterFacts` and `gkeClusterFacts`, the settings' cloud's (docs/library.md,"
            " Composing it with resources of your program).",
            92,
        )
        generator.classes[f"{facts.__name__}Args"] = _Class(
            f"{facts.__name__}Args",
            summary,
            [
                _Field(
                    field.name,
                    _facts_annotation(field.type),
                    field.default is dataclasses.MISSING,
                    _attribute_docstrings(facts)[field.name],
                )
                for field in dataclasses.fields(facts)
            ],
        )
        # Before the top level's class, which names it.
        generator.done.insert(generator.done.index(TOP_LEVEL), f"{facts.__name__}Args")
        yield _Field(name, f"{facts.__name__}Args", False, description)


def _facts_annotation(annotation: Any) -> str:
    """A fact's type as the host reads it: `pulumi.Input[str]` (a union of the value, an
    `Awaitable` and an `Output`, the last a forward reference), a plain `str` (or None), a map
    of strings."""
    if any(get_origin(member) is Awaitable for member in get_args(annotation)):
        return "pulumi.Input[str]"
    if get_origin(annotation) is Mapping:
        return "dict[str, str]"
    return "str"


def _attribute_docstrings(cls: type) -> dict[str, str]:
    """The docstrings under a class's annotated attributes, as the provider host reads them."""
    (node,) = ast.parse(inspect.getsource(cls)).body
    assert isinstance(node, ast.ClassDef)
    found: dict[str, str] = {}
    for statement, following in zip(node.body, node.body[1:], strict=False):
        if (
            isinstance(statement, ast.AnnAssign)
            and isinstance(statement.target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            found[statement.target.id] = inspect.cleandoc(following.value.value)
    return found


def generated_source() -> str:
    generator = _Generator()
    generator.model(StackConfig, TOP_LEVEL)
    top = generator.classes[TOP_LEVEL]
    top.description = textwrap.fill(
        "The platform's settings, each key as in a stack file without the `gpu-platform:`"
        " namespace (docs/reference/config.md), validated in full before any resource is"
        " registered.",
        96,
    )
    top.fields += [*_extra_fields(), *_facts_fields(generator)]
    return _HEADER + "".join(_class_source(generator.classes[name]) for name in generator.done)


_HEADER = '''"""The component package's inputs: the config model's fields as the schema shows them.

Generated from `gpu_platform.config` by `python -m gpu_platform.package.inputs_generator`; do not
edit (`gpu_platform/package/inputs_generator.py` says why the types are plain).
"""

from typing import Any, Required, TypedDict

import pulumi
'''


def _class_source(cls: _Class) -> str:
    lines = ["", "", f"class {cls.name}(TypedDict, total=False):"]
    if cls.description:
        # Python 3.11 keeps a class docstring's indentation in `__doc__` as the formatter
        # writes it; a type's description in the schema has it too.
        lines += [*_docstring(cls.description, "    "), ""]
    for field in cls.fields:
        annotation = f"Required[{field.annotation}]" if field.required else field.annotation
        lines.append(f"    {field.name}: {annotation}")
        lines += _docstring(field.description)
    return "\n".join(lines) + "\n"


def _docstring(text: str | None, indent: str = "") -> list[str]:
    """`text` as a string statement the provider host reads as it is: a field's lines flush
    left, as the schema's description is the string's exact value (the host does not dedent)."""
    if not text:
        return []
    if '"""' in text or "\\" in text or text.endswith('"'):
        return [f"    {text!r}"]
    first, *rest = text.split("\n")
    if not rest:
        return [f'    """{first}"""']
    return [
        f'    """{first}',
        *[f"{indent}{line}" if line else "" for line in rest[:-1]],
        f'{indent}{rest[-1]}"""',
    ]


if __name__ == "__main__":
    INPUTS_MODULE.write_text(generated_source())
