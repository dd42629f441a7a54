"""YAML read with PyYAML's C parser (libyaml) where the installed PyYAML has it.

The plan reads the alert rules, the stack file and the project file on every run: PyYAML's
pure-Python parser takes tens of milliseconds over them, the C one a few. Both build the same safe
Python types (`SafeConstructor`); only the parser differs.
"""

import json
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


class DuplicateKeyError(yaml.YAMLError):
    """A mapping that gives the same key twice."""


def load_unique_keys(text: str | bytes) -> Any:
    """The one YAML document in `text`, refused where a mapping gives a key twice, as Pulumi's
    YAML reader refuses it (gopkg.in/yaml.v3 v3.0.1 decode.go, `mapping`: "line %d: mapping key
    %#v already defined at line %d", for every such key); `yaml.safe_load` would keep the last
    value silently."""
    loader = SAFE_LOADER(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        duplicates = sorted(_duplicate_keys(node))
        if duplicates:
            raise DuplicateKeyError(
                "; ".join(
                    f"line {line}: mapping key {json.dumps(key)} already defined at line {first}"
                    for line, key, first in duplicates
                )
            )
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _duplicate_keys(root: yaml.Node) -> Iterator[tuple[int, str, int]]:
    """Each scalar key given again in its mapping: its line, itself, the line it was first on."""
    seen: set[int] = set()  # a node reached again through an alias is looked at once
    pending = [root]
    while pending:
        node = pending.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            pending += node.value
        if not isinstance(node, yaml.MappingNode):
            continue
        first_line: dict[str, int] = {}
        for key, value in node.value:
            pending += [key, value]
            if not isinstance(key, yaml.ScalarNode):
                continue
            line = key.start_mark.line + 1
            if key.value in first_line:
                yield line, key.value, first_line[key.value]
            else:
                first_line[key.value] = line
