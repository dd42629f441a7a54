"""The committed CRD schemas' tooling: what `derive.py` keeps of a chart's CRDs and where it writes
them, and the strictness `validation_errors` adds to a schema. Each chart's objects are checked
against its committed schemas by its own tests (test_nvidia_driver.py,
tests/gpu_platform/eks/test_karpenter_node_pool.py)."""

import json
from pathlib import Path

import pytest

from gpu_platform.kubernetes import crd_schemas
from gpu_platform.kubernetes.crd_schemas import closed, derive, without_descriptions

SAMPLE_CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    schema:
      openAPIV3Schema:
        description: A widget.
        properties:
          spec:
            description: Its spec.
            properties:
              description: {type: string, description: A field named description.}
              size:
                anyOf: [{type: integer}, {type: string, description: A quantity.}]
                x-kubernetes-int-or-string: true
            type: object
        type: object
  - name: v0
    served: false
    schema: {openAPIV3Schema: {type: object}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: not-a-crd}
"""


def test_derive_keeps_each_served_versions_schema_without_descriptions() -> None:
    assert derive.derive(SAMPLE_CRD) == [
        {
            "name": "widgets.example.com",
            "group": "example.com",
            "kind": "Widget",
            "scope": "Namespaced",
            "versions": {
                "v1": {
                    "properties": {
                        "spec": {
                            "properties": {
                                "description": {"type": "string"},
                                "size": {
                                    "anyOf": [{"type": "integer"}, {"type": "string"}],
                                    "x-kubernetes-int-or-string": True,
                                },
                            },
                            "type": "object",
                        }
                    },
                    "type": "object",
                }
            },
        }
    ]


def test_derive_writes_each_crd_under_its_chart_version_and_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    crds = tmp_path / "crds.yaml"
    crds.write_text(SAMPLE_CRD)
    monkeypatch.setattr(crd_schemas, "SCHEMAS_DIR", tmp_path)

    derive.main([crds], chart="widgets", version="v1.2.3")

    written = tmp_path / "widgets-v1.2.3-widgets.example.com.json"
    assert [json.loads(written.read_text())] == derive.derive(SAMPLE_CRD)


def test_a_schema_without_descriptions_keeps_a_property_named_description() -> None:
    schema = {"description": "x", "properties": {"description": {"description": "y"}}}

    assert without_descriptions(schema) == {"properties": {"description": {}}}


def test_closed_schemas_keep_open_maps_and_preserved_fields_open() -> None:
    schema = {
        "properties": {
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "raw": {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
                "properties": {},
            },
        }
    }

    assert closed(schema) == {
        "properties": {
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "raw": {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
                "properties": {},
            },
        },
        "additionalProperties": False,
    }
