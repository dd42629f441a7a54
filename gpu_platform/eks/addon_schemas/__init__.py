"""The configuration schemas of the EKS add-ons the platform configures, derived from their
upstream sources by `derive.py` here: EKS checks an add-on's `configurationValues` against the
same schema (`aws eks describe-addon-configuration`), so a key the schema lacks fails the update
half-way through `pulumi up`."""

import json
from importlib import resources
from typing import Any

_FILES = resources.files(__name__)


def schema_file_name(addon: str, version: str) -> str:
    return f"{addon}-{version}.json"


def addon_schema(addon: str, version: str) -> dict[str, Any]:
    """The add-on's configuration schema at `version` (its upstream tag, `v1.7.0`)."""
    return json.loads(_FILES.joinpath(schema_file_name(addon, version)).read_text())
