"""Stand-in answers for this cloud's lookups in the offline plan."""

from collections.abc import Callable
from typing import Any

INVOKES: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {}
OUTPUTS: dict[str, Callable[[str, dict[str, Any]], dict[str, Any]]] = {}
