"""The derived add-on configuration schemas: what `derive.py` keeps of an upstream schema."""

import json
from pathlib import Path

import pytest

from gpu_platform.eks.addon_schemas import addon_schema, derive


def test_derive_keeps_the_schema_without_its_descriptions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    upstream = tmp_path / "configuration.schema.json"
    upstream.write_text(
        json.dumps(
            {
                "$ref": "#/definitions/Agent",
                "definitions": {
                    "Agent": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {"tolerations": {"type": "array", "description": "d"}},
                    }
                },
            }
        )
    )
    monkeypatch.setattr(derive, "__file__", str(tmp_path / "derive.py"))

    derive.main(upstream, addon="agent", version="v1.0.0")

    assert json.loads((tmp_path / "agent-v1.0.0.json").read_text()) == {
        "$ref": "#/definitions/Agent",
        "definitions": {
            "Agent": {
                "type": "object",
                "additionalProperties": False,
                "properties": {"tolerations": {"type": "array"}},
            }
        },
    }


def test_the_node_monitoring_agents_schema_names_the_dcgm_servers_tolerations() -> None:
    schema = addon_schema("eks-node-monitoring-agent", "v1.7.0")

    assert "tolerations" in schema["definitions"]["DCGMAgent"]["properties"]
