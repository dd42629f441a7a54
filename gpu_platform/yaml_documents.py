"""YAML read with PyYAML's C parser (libyaml) where the installed PyYAML has it.

The plan reads the alert rules, the stack file and the project file on every run: PyYAML's
pure-Python parser takes tens of milliseconds over them, the C one a few. Both build the same safe
Python types (`SafeConstructor`); only the parser differs.
"""

from collections.abc import Iterator
from typing import Any

import yaml

SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load(text: str | bytes) -> Any:
    """The one YAML document in `text`, as `yaml.safe_load` reads it."""
    return yaml.load(text, Loader=SAFE_LOADER)


def load_all(text: str | bytes) -> Iterator[Any]:
    """Each YAML document in `text`, as `yaml.safe_load_all` reads them."""
    return yaml.load_all(text, Loader=SAFE_LOADER)
