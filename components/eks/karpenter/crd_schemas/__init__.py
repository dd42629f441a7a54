"""The OpenAPI schemas of the Karpenter custom resources the platform creates, per Karpenter
version.

Karpenter's CRDs are not in any Kubernetes release's OpenAPI document, so nothing else knows
their fields. `derive.py` reads the CRDs of a Karpenter release and writes the schema of each
one's `v1` version to `<kind>-v<version>.json` beside this file; the tests validate every
NodePool and EC2NodeClass the platform renders against the schemas of the pinned version.
"""

import json
from functools import cache
from pathlib import Path
from typing import Any

SCHEMAS_DIR = Path(__file__).parent
KINDS = ("NodePool", "EC2NodeClass")
"""The kinds the platform creates objects of."""


def schema_file(kind: str, version: str) -> Path:
    """Where the schema of `kind` (`NodePool`) at Karpenter `version` (`1.14.1`) is committed."""
    return SCHEMAS_DIR / f"{kind.lower()}-v{version}.json"


@cache
def crd_schema(kind: str, version: str) -> dict[str, Any]:
    """The `openAPIV3Schema` of `kind`'s `v1` version at Karpenter `version`."""
    schema: dict[str, Any] = json.loads(schema_file(kind, version).read_text())
    return schema
