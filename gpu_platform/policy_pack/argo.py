"""What the Argo Workflows controller puts in a template's pod beyond the template's own fields:
the workflow's `templateDefaults`, merged under each template, and the `podSpecPatch` strings
(the workflow's and the template's) patched onto the pod it builds.

argoproj/argo-workflows v4.1.2:
- workflow/controller/operator.go, mergedTemplateDefaultsInto: the defaults are a Template,
  strategic-merge-patched by the template itself (the template's values win), after the
  defaults of another template type (`container` for a `script` template, ...) are dropped;
- workflow/controller/workflowpod.go, processPodSpecPatch and build: the workflow's
  podSpecPatch, then the template's, each a JSON or YAML PodSpec applied as a strategic merge
  patch (workflow/util/util.go, ApplyPodSpecPatch) after the controller has built the pod.
  Each may hold `{{...}}` expressions, which Argo substitutes when it builds the pod, into the
  template's JSON, escaping a value once for the JSON string the patch is
  (workflow/common/util.go SubstituteParams; util/template/simple_template.go, strconv.Quote),
  so that a parameter's quotes end up unescaped in the patch: an expression even in a value
  of the patch can set any field of the pod, and a patch holding one is not read (`EXPRESSION`).

The values are plain dicts and lists after a merge or a parse; a value not known yet (at
preview) is kept as the engine's unknown sentinel, which raises when a check reads it
(`props`).
"""

import json
from collections.abc import Mapping
from typing import Any

import yaml
from props import is_list
from pulumi_policy.proxy import UnknownValueError

TEMPLATE_TYPES = (
    "container",
    "containerSet",
    "steps",
    "dag",
    "script",
    "resource",
    "data",
    "suspend",
    "http",
    "plugin",
)
"""The fields that make a template of one type, in the order Template.GetType tries them
(pkg/apis/workflow/v1alpha1/workflow_types.go)."""

# The `patchMergeKey` of the lists a strategic merge merges item by item rather than replaces
# (workflow_types.go's Template, k8s.io/api core/v1 PodSpec and Container); others are replaced.
MERGE_KEYS: Mapping[str, str] = {
    "volumes": "name",
    "initContainers": "name",
    "sidecars": "name",
    "containers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumeMounts": "mountPath",
    "tolerations": "key",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
}


def read(container: Any, key: Any) -> Any:
    """`container[key]`, or the engine's unknown sentinel for a value not known yet."""
    try:
        return container[key]
    except UnknownValueError as unknown:
        return unknown.unknown_type_sentinel


def merged(base: Any, patch: Any, field: str | None = None) -> Any:
    """`patch` over `base` as a strategic merge patch applies it: maps key by key, the lists of
    `MERGE_KEYS` item by item, anything else replaced."""
    if isinstance(base, Mapping) and isinstance(patch, Mapping):
        out = {key: read(base, key) for key in base}
        for key in patch:
            value = read(patch, key)
            out[key] = merged(out[key], value, key) if key in out else value
        return out
    key = MERGE_KEYS.get(field or "")
    if key is None or not is_list(base) or not is_list(patch):
        return patch
    items = [read(base, index) for index in range(len(base))]
    for index in range(len(patch)):
        item = read(patch, index)
        same = [
            i
            for i, found in enumerate(items)
            if isinstance(found, Mapping)
            and isinstance(item, Mapping)
            and key in item
            and read(found, key) == read(item, key)
        ]
        if same:
            items[same[0]] = merged(items[same[0]], item)
        else:
            items.append(item)
    return items


def template_type(template: Mapping[str, Any]) -> str | None:
    return next((field for field in TEMPLATE_TYPES if field in template), None)


def with_defaults(defaults: Mapping[str, Any], template: Any) -> Any:
    """`template` as the controller runs it under the workflow's `templateDefaults`."""
    if not isinstance(template, Mapping):
        return template
    own = template_type(template)
    applicable = {
        key: read(defaults, key) for key in defaults if key not in TEMPLATE_TYPES or key == own
    }
    return merged(applicable, template)


EXPRESSION = "{{"
"""What opens an Argo expression (util/template: `{{` to `}}`)."""


def parsed_patch(patch: str) -> Mapping[str, Any] | None:
    """A podSpecPatch's PodSpec fields, read as Argo reads them (JSON, else YAML), or None
    where it is neither a JSON nor a YAML mapping."""
    try:
        found = json.loads(patch)
    except ValueError:
        try:
            found = yaml.safe_load(patch)
        except yaml.YAMLError:
            return None
    return found if isinstance(found, dict) else None


def placed(props: Any, path: tuple[Any, ...], value: Any) -> Any:
    """`props` with `value` at `path` in place of what is there, sharing nothing it changes."""
    if not path:
        return value
    step, rest = path[0], path[1:]
    if isinstance(step, str):
        base = props if isinstance(props, Mapping) else {}
        copy = {key: read(base, key) for key in base}
        copy[step] = placed(copy.get(step), rest, value)
        return copy
    items = [read(props, i) for i in range(len(props))] if is_list(props) else []
    items += [None] * (step + 1 - len(items))
    items[step] = placed(items[step], rest, value)
    return items
