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
from dataclasses import dataclass
from typing import Any

import yaml
from props import Step, is_list, shown, value_at
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


# A `resource` template runs `kubectl <action> -f <manifest> -o json` with its `flags` before
# the file (argo-workflows v4.1.2 workflow/executor/resource.go, getKubectlArguments; the
# manifest is written as given, workflow/executor/executor.go, StageFiles): every document of
# the manifest is created or changed, and the items of any list (a document with `items`), as
# kubectl reads a file, before Argo reads kubectl's answer.
CHANGING_ACTIONS = ("create", "apply", "replace", "patch")
"""The actions that create or change the manifest's objects; `get` and `delete` do neither
(pkg/apis/workflow/v1alpha1/workflow_types.go, ResourceTemplate.Action)."""
_FILE_FLAGS = ("-f", "--filename", "-k", "--kustomize")
_NAMESPACE_FLAGS = ("-n", "--namespace")


@dataclass(frozen=True)
class Manifest:
    """One object a resource template creates or changes."""

    resource_type: str
    """As Pulumi types it (`kubernetes:apps/v1:Deployment`), `...Patch` for a patch."""
    props: Mapping[str, Any]
    steps: tuple[Step, ...]
    """Where it is in the manifest: its document, then its place in a list's `items`."""
    namespace: str | None
    """The namespace it names, or its flags do; None for the workflow's own."""


def resource_manifests(resource: Mapping[str, Any]) -> list[Manifest] | str:
    """The objects a literal `resource` template creates or changes, or why they cannot be
    known before the step runs. Raises `UnknownValueError` for a field not known yet."""
    action = value_at(resource, "action")
    if action in ("get", "delete"):
        return []
    if "manifestFrom" in resource:
        return (
            "creates the objects of an artifact (`manifestFrom`), which exists only when the "
            "step runs, so no policy sees them. Fix: write them in `manifest`, literally"
        )
    listed = value_at(resource, "flags")
    flags = [value_at(listed, i) for i in range(len(listed))] if is_list(listed) else []
    manifest = value_at(resource, "manifest")
    if not isinstance(action, str) or action not in CHANGING_ACTIONS:
        return _unread(f"runs the action {shown(action)}")
    if any(isinstance(text, str) and EXPRESSION in text for text in [manifest, *flags]):
        return _unread("holds {{...}} expressions in its manifest or flags")
    if manifest is None:
        return []  # Argo refuses the workflow (workflow/validate/validate.go): nothing runs.
    found = _documents(manifest) if isinstance(manifest, str) else None
    if found is None:
        return _unread("has a manifest that is neither YAML nor JSON")
    if any(_flag_names(flag, _FILE_FLAGS) for flag in flags):
        return _unread("names files of its own in its flags (-f, -k)")
    patch = action == "patch"
    if patch and value_at(resource, "mergeStrategy") == "json":
        return _unread("is a JSON patch (`mergeStrategy: json`) of an object its flags name")
    namespace = _flag_value(flags, _NAMESPACE_FLAGS)
    manifests = []
    for steps, document in found:
        api_version, kind = document.get("apiVersion"), document.get("kind")
        if not isinstance(api_version, str) or not isinstance(kind, str):
            if patch:
                return _unread("patches an object its flags name, not one its manifest names")
            continue  # kubectl refuses an object without them: nothing is created.
        group, _, version = api_version.rpartition("/")
        own = value_at(document, "metadata", "namespace")
        manifests.append(
            Manifest(
                f"kubernetes:{group or 'core'}/{version}:{kind}{'Patch' if patch else ''}",
                document,
                steps,
                own if isinstance(own, str) else namespace,
            )
        )
    return manifests


def _unread(why: str) -> str:
    return (
        f"{why}, so what it creates (a privileged pod, a pod asking for any number of GPUs) is "
        "known only when the step runs, after every policy has run. Fix: write each object "
        "literally in `manifest`, with its apiVersion, kind and name and without expressions "
        "(a patch as a strategic or merge patch), or declare it as a resource of the stack"
    )


def _documents(manifest: str) -> list[tuple[tuple[Step, ...], dict[str, Any]]] | None:
    """The manifest's objects as kubectl reads a file: each YAML (or JSON) document, a list's
    items in its place (`_flattened`); None where it cannot be read."""
    try:
        documents = list(yaml.safe_load_all(manifest))
    except yaml.YAMLError:
        return None
    found: list[tuple[tuple[Step, ...], dict[str, Any]]] = []
    for index, document in enumerate(documents):
        if not isinstance(document, dict):
            continue
        objects = _flattened((index,), document)
        if objects is None:
            return None
        found += objects
    return found


def _flattened(
    path: tuple[Step, ...], document: dict[str, Any]
) -> list[tuple[tuple[Step, ...], dict[str, Any]]] | None:
    """A document's objects as kubectl creates them: any document with `items` is a list,
    whatever its kind (apimachinery pkg/apis/meta/v1/unstructured/unstructured.go,
    `unstructuredJSONScheme.decode` takes any object with an `items` field for an
    `UnstructuredList`, and kubectl's resource builder flattens lists, nested ones too); an item
    with neither kind nor apiVersion takes the list's kind without `List` and its apiVersion
    (`decodeToList`: a `PodList`'s items are Pods). None where the items are no list of objects,
    which the decoder refuses."""
    if "items" not in document:
        return [(path, document)]
    items = document["items"]
    if items is None:
        return []
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        return None
    kind, api_version = document.get("kind"), document.get("apiVersion")
    found: list[tuple[tuple[Step, ...], dict[str, Any]]] = []
    for i, item in enumerate(items):
        if not item.get("kind") and not item.get("apiVersion"):
            item_kind = kind.removesuffix("List") if isinstance(kind, str) else kind
            item = {**item, "kind": item_kind, "apiVersion": api_version}
        objects = _flattened((*path, "items", i), item)
        if objects is None:
            return None
        found += objects
    return found


def _flag_names(flag: Any, names: tuple[str, ...]) -> bool:
    """Whether `flag` is one of `names`, alone, with `=value` or, for a short one, `-nvalue`."""
    return isinstance(flag, str) and any(
        flag == name or flag.startswith(name + "=") or (name[1] != "-" and flag.startswith(name))
        for name in names
    )


def _flag_value(flags: list[Any], names: tuple[str, ...]) -> str | None:
    """The value of the last flag of `names` (`-n ml`, `--namespace=ml`, `-nml`)."""
    value = None
    for index, flag in enumerate(flags):
        if not _flag_names(flag, names):
            continue
        if flag in names:
            following = flags[index + 1] if index + 1 < len(flags) else None
            value = following if isinstance(following, str) else value
        else:
            value = flag.split("=", 1)[1] if "=" in flag else flag[2:]
    return value
