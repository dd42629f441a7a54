"""The config reference, generated from the config model so that it cannot drift from it.

`gpu-platform config-reference` prints it as Markdown; `--update PAGE` rewrites its section of a
page (the docs site's configuration reference, docs/reference/config.md), which a test compares
with a fresh rendering.
"""

import json
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import BaseModel

from gpu_platform import config as config_model
from gpu_platform.cli.generated_section import table_cell
from gpu_platform.config import CONFIG_NAMESPACE, StackConfig

COMMAND = "config-reference"


def render_reference() -> str:
    schema = StackConfig.model_json_schema(by_alias=True)
    definitions = schema.get("$defs", {})
    lines = [
        f"Keys of `Pulumi.<stack>.yaml`, each under `{CONFIG_NAMESPACE}:`. "
        "A key without a default is required.",
        "",
    ]
    lines += _table(StackConfig, schema, definitions, prefix=f"{CONFIG_NAMESPACE}:")
    for name in _objects_in_order(schema, definitions):
        definition = definitions[name]
        lines += ["", f"#### {name}", ""]
        if definition.get("description"):
            lines += [table_cell(definition["description"]), ""]
        lines += _table(getattr(config_model, name), definition, definitions, prefix="")
    return "\n".join(lines)


def _table(
    model: type[BaseModel],
    schema: Mapping[str, Any],
    definitions: Mapping[str, Any],
    prefix: str,
) -> list[str]:
    defaults = {
        info.alias: info.get_default(call_default_factory=True)
        for info in model.model_fields.values()
        if not info.is_required()
    }
    descriptions = {info.alias: info.description or "" for info in model.model_fields.values()}
    rows = ["| key | type | default | description |", "| --- | --- | --- | --- |"]
    for key, field in schema.get("properties", {}).items():
        default = _default(defaults[key]) if key in defaults else "required"
        rows.append(
            f"| `{prefix}{key}` | {_type(field, definitions)} | {default} | "
            f"{table_cell(descriptions[key])}{_constraints(field)} |"
        )
    return rows


def _objects_in_order(schema: Mapping[str, Any], definitions: Mapping[str, Any]) -> list[str]:
    """Object definitions in the order a reader meets them, depth first."""
    seen: list[str] = []

    def visit(node: Any) -> None:
        if isinstance(node, Mapping):
            ref = node.get("$ref")
            if isinstance(ref, str):
                name = ref.rsplit("/", 1)[-1]
                if name not in seen and definitions[name].get("type") == "object":
                    seen.append(name)
                    visit(definitions[name])
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    visit(schema.get("properties", {}))
    return seen


def _type(field: Mapping[str, Any], definitions: Mapping[str, Any]) -> str:
    if "$ref" in field:
        name = field["$ref"].rsplit("/", 1)[-1]
        definition = definitions[name]
        if "enum" in definition:
            return _enum(definition["enum"])
        return f"[{name}](#{name.lower()})"
    if "enum" in field:
        return _enum(field["enum"])
    if "const" in field:
        return f"`{field['const']}`"
    for union in ("anyOf", "oneOf"):
        if union in field:
            kinds = [_type(f, definitions) for f in field[union] if f.get("type") != "null"]
            return " or ".join(kinds)
    kind = field.get("type", "any")
    if kind == "array":
        return f"list of {_type(field.get('items', {}), definitions)}"
    if kind == "object":
        values = field.get("additionalProperties") or next(
            iter(field.get("patternProperties", {}).values()), None
        )
        if not isinstance(values, Mapping):
            return kind
        keys = field.get("propertyNames", {}).get("enum")
        by = f" by {_enum(keys)}" if keys else ""
        return f"map of {_type(values, definitions)}{by}"
    return kind


def _enum(values: list[Any]) -> str:
    return " \\| ".join(f"`{v}`" for v in values)


def _default(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, BaseModel):
        return "see below" if value.model_dump() else "none"
    return f"`{json.dumps(value)}`"


def _constraints(field: Mapping[str, Any]) -> str:
    bounds = list(_bounds(field))
    for union in field.get("anyOf", []):
        bounds += _bounds(union)
    return f" ({', '.join(bounds)})" if bounds else ""


_BOUNDS = {
    "minimum": "at least {}",
    "maximum": "at most {}",
    "minItems": "at least {} item(s)",
    "maxLength": "at most {} characters",
}


def _bounds(field: Mapping[str, Any]) -> Iterator[str]:
    for key, template in _BOUNDS.items():
        if key in field:
            yield template.format(field[key])
