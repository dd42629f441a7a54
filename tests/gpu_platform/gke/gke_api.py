"""The GKE API's own description of a node pool, and the program's node pools in its terms.

The `container.v1` discovery document ships inside google-api-python-client; it names every
field of the API's `NodePool`, its type and its allowed values. `to_api_node_pool` turns the
inputs of a `gcp:container/nodePool:NodePool` into the request body GKE receives, and
`api_problems` checks a body against the document, so that a misspelt field or enum fails a
test instead of `pulumi up`.
"""

import json
from collections.abc import Iterator, Mapping
from functools import cache
from importlib import resources
from typing import Any

Schema = Mapping[str, Any]
_INT32 = range(-(2**31), 2**31)

# Provider inputs that say where the pool goes or how the provider behaves: the API takes them
# from the request's URL (`projects/*/locations/*/clusters/*`) or never sees them.
_PROVIDER_ONLY = frozenset(
    {"project", "location", "cluster", "ignoreNodeCountChanges", "deletionPolicy", "namePrefix"}
)
# Provider input name -> the API's, where they differ.
_NODE_POOL_RENAMES = {"nodeLocations": "locations", "nodeConfig": "config"}
_ACCELERATOR_RENAMES = {"type": "acceleratorType", "count": "acceleratorCount"}


@cache
def discovery_document(api: str = "container.v1") -> Mapping[str, Any]:
    """`container.v1` (GKE) or `compute.v1` (Compute Engine), as google-api-python-client ships
    them."""
    document = resources.files("googleapiclient").joinpath(f"discovery_cache/documents/{api}.json")
    return json.loads(document.read_text())


def to_api_node_pool(name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The `NodePool` body GKE receives for these provider inputs; keys the translation does not
    know are passed on unchanged, for the schema to judge."""
    body: dict[str, Any] = {"name": inputs.get("name", name)}
    for key, value in inputs.items():
        if key in _PROVIDER_ONLY or key == "name":
            continue
        body[_NODE_POOL_RENAMES.get(key, key)] = value
    if "autoscaling" in body:
        # The provider turns autoscaling on whenever the block is present.
        body["autoscaling"] = {"enabled": True, **body["autoscaling"]}
    if "maintenancePolicies" in body:
        # Blocks of at most one in the provider, one object each in the API.
        (policy,) = body.pop("maintenancePolicies")
        (exclusion,) = policy["exclusionUntilEndOfSupports"]
        body["maintenancePolicy"] = {"exclusionUntilEndOfSupport": exclusion}
    config = body.get("config")
    if config and "guestAccelerators" in config:
        config = dict(config)
        config["accelerators"] = [
            {_ACCELERATOR_RENAMES.get(k, k): v for k, v in accelerator.items()}
            for accelerator in config.pop("guestAccelerators")
        ]
        body["config"] = config
    return body


def api_problems(
    value: Any,
    schema_name: str = "NodePool",
    api: str = "container.v1",
    deprecated_sent: frozenset[str] = frozenset(),
) -> list[str]:
    """Where `value` does not fit the discovery document's schema: unknown fields, fields the
    API sets itself or has deprecated (but those at `deprecated_sent`, which the provider itself
    still sends), wrong types and values outside an enum."""
    return list(
        _Validator(api, deprecated_sent).problems(value, {"$ref": schema_name}, schema_name)
    )


class _Validator:
    def __init__(self, api: str, deprecated_sent: frozenset[str]):
        self.schemas = discovery_document(api)["schemas"]
        self.deprecated_sent = deprecated_sent

    def problems(self, value: Any, schema: Schema, path: str) -> Iterator[str]:
        if "$ref" in schema:
            schema = self.schemas[schema["$ref"]]
        kind = schema.get("type")
        if kind == "object":
            yield from self.object_problems(value, schema, path)
        elif kind == "array":
            if not isinstance(value, list):
                yield f"{path}: {value!r} is not an array"
                return
            for i, item in enumerate(value):
                yield from self.problems(item, schema["items"], f"{path}[{i}]")
        else:
            yield from _scalar_problems(value, schema, path)

    def object_problems(self, value: Any, schema: Schema, path: str) -> Iterator[str]:
        if not isinstance(value, Mapping):
            yield f"{path}: {value!r} is not an object"
            return
        fields = schema.get("properties", {})
        for key, item in value.items():
            field = fields.get(key)
            where = f"{path}.{key}"
            if field is None and "additionalProperties" in schema:
                yield from self.problems(item, schema["additionalProperties"], where)
            elif field is None:
                yield f"{where}: no such field in {schema.get('id', 'the object')}"
            elif field.get("readOnly"):
                yield f"{where}: output only, set by the API"
            elif field.get("deprecated") and where not in self.deprecated_sent:
                yield f"{where}: deprecated by the API"
            else:
                yield from self.problems(item, field, where)


def _scalar_problems(value: Any, schema: Schema, path: str) -> Iterator[str]:
    kind = schema.get("type")
    if kind == "string":
        yield from _string_problems(value, schema, path)
    elif kind == "integer":
        if not (_is_integral(value) and int(value) in _INT32):
            yield f"{path}: {value!r} is not a 32-bit integer"
    elif kind == "boolean":
        if not isinstance(value, bool):
            yield f"{path}: {value!r} is not a boolean"
    elif kind == "number":
        if isinstance(value, bool) or not isinstance(value, int | float):
            yield f"{path}: {value!r} is not a number"
    else:
        raise AssertionError(f"{path}: schema type {kind!r} is not handled")


def _string_problems(value: Any, schema: Schema, path: str) -> Iterator[str]:
    if schema.get("format") == "int64":
        # 64-bit integers travel as JSON strings; the client library also sends numbers.
        if not (_is_integral(value) or (isinstance(value, str) and value.lstrip("-").isdigit())):
            yield f"{path}: {value!r} is not a 64-bit integer"
        return
    if not isinstance(value, str):
        yield f"{path}: {value!r} is not a string"
    elif "enum" in schema and value not in schema["enum"]:
        yield f"{path}: {value!r} is not one of {schema['enum']}"


def _is_integral(value: Any) -> bool:
    # Resource inputs cross the engine's wire as doubles: 3 arrives as 3.0.
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
