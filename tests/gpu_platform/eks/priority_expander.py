"""The cluster autoscaler's `priority` expander, as its code does it, over the ConfigMap the
chart renders from the release's values.

- The ConfigMap: `templates/priority-expander-configmap.yaml` of the cluster-autoscaler chart
  9.59.0 puts a string `expanderPriorities` under `data.priorities`, indented (`|-`), when
  `extraArgs.expander` lists `priority` (`cluster-autoscaler.priorityExpanderEnabled`).
- The expander: `expander/priority/priority.go` at cluster-autoscaler-1.35.2 (the same from
  1.33.6 to 1.36.1): `parsePrioritiesYAMLString` reads the text as `map[int][]string` and compiles
  each expression; `BestOptions` keeps, of the options whose node group id an expression matches
  (`FindStringIndex`, unanchored), those of the highest priority, drops every option no
  expression matches ("The group won't be used"), and returns every option unfiltered only when
  none matched.

Python's `re` reads the expressions the platform writes as Go's RE2 does: anchors, classes,
non-capturing and named groups, counted repetition, escaped punctuation.
"""

import re
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

import yaml


def rendered_config_map(values: Mapping[str, Any]) -> dict[str, Any] | None:
    """The `cluster-autoscaler-priority-expander` ConfigMap the chart renders, or None."""
    expanders = str(values.get("extraArgs", {}).get("expander", "")).split(",")
    priorities = values.get("expanderPriorities")
    if "priority" not in expanders or not priorities:
        return None
    assert isinstance(priorities, str), "the platform passes the priorities as YAML text"
    text = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cluster-autoscaler-priority-expander\n"
        "data:\n  priorities: |-\n" + textwrap.indent(priorities, "    ")
    )
    config_map: dict[str, Any] = yaml.safe_load(text)
    return config_map


def parsed_priorities(config_map: Mapping[str, Any]) -> dict[int, list[re.Pattern[str]]]:
    config = yaml.safe_load(config_map["data"]["priorities"])
    return {int(level): [re.compile(e) for e in found] for level, found in config.items()}


def best_options(config_map: Mapping[str, Any], node_group_ids: Sequence[str]) -> list[str]:
    """What `BestOptions` returns for expansion options of these node groups (a group appears
    once per priority it is kept at, as upstream appends it)."""
    priorities = parsed_priorities(config_map)
    max_priority = -1
    best: list[str] = []
    # A group no expression matches is never appended: upstream logs it and drops it.
    for group in node_group_ids:
        for level, expressions in priorities.items():
            if not any(e.search(group) for e in expressions):
                continue
            if level < max_priority:
                continue
            if level > max_priority:
                max_priority = level
                best = []
            best.append(group)
    return best or list(node_group_ids)
