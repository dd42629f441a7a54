"""Policy parameters: each declared once, with its JSON schema, default and description.

The engine fills in each `default` before it configures the pack and validates the values
against the schema; a policy still falls back to the default itself, so it behaves the same
under an engine that sends no configuration at all.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pulumi_policy import PolicyConfigSchema


@dataclass(frozen=True)
class Setting:
    key: str
    schema: Mapping[str, Any]
    """JSON schema of the value, with its `default` and `description`."""

    def read(self, config: Mapping[str, Any]) -> Any:
        default = self.schema["default"]
        value = config.get(self.key, default)
        match self.schema["type"]:
            case "integer":
                # Configuration arrives through a protobuf Struct, so integers are floats.
                valid = isinstance(value, int | float) and not isinstance(value, bool)
                return int(value) if valid and float(value).is_integer() else default
            case "array":
                valid = isinstance(value, list) and all(isinstance(v, str) for v in value)
                return tuple(value) if valid else tuple(default)
            case _:
                allowed = self.schema.get("enum")
                valid = isinstance(value, str) and (allowed is None or value in allowed)
                return value if valid else default


def config_schema(*settings: Setting) -> PolicyConfigSchema:
    return PolicyConfigSchema(properties={s.key: dict(s.schema) for s in settings})
