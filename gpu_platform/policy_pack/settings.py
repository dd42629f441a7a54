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
            case "object":
                return dict(value) if isinstance(value, dict) else dict(default)
            case "boolean":
                return value if isinstance(value, bool) else default
            case "array":
                valid = isinstance(value, list) and all(isinstance(v, str) for v in value)
                return tuple(value) if valid else tuple(default)
            case _:
                allowed = self.schema.get("enum")
                valid = isinstance(value, str) and (allowed is None or value in allowed)
                return value if valid else default


EXEMPT_NAMESPACES = Setting(
    "exemptNamespaces",
    {
        "type": "array",
        "items": {"type": "string"},
        "default": ["gpu-operator", "monitoring", "monitoring-node-exporter", "kube-system"],
        "description": "Namespaces whose pods may need host access (the GPU Operator's drivers "
        "and device plugin, node exporters, cluster add-ons): a Namespace the stack declares may "
        "enforce a level below restricted there, workloads in one that pod-security-"
        "standards' namespaceLevels does not list are not checked, and pods there may tolerate "
        "the node validation taint. Both Pod Security policies and "
        "gpu-validation-taint-platform-only read it: give them the same list.",
    },
)
"""One setting for both Pod Security policies (`namespace-pod-security` and
`pod-security-standards`) and `gpu-validation-taint-platform-only`. The engine configures each
policy on its own, so a stack's policy config repeats the list under each; `gpu-platform plan`
refuses a config where they differ."""


def config_schema(*settings: Setting) -> PolicyConfigSchema:
    return PolicyConfigSchema(properties={s.key: dict(s.schema) for s in settings})
