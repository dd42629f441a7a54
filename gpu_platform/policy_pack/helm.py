"""Helm charts are pinned and fetched securely; the GPU Operator is installed where and how it
works; a Helm release rolls a failed install or upgrade back by itself.

A policy sees a `helm.v3.Release` as one resource with its inputs (chart, version, repository,
namespace, values), not the objects the chart installs; a `helm.v4.Chart` also registers the
rendered objects, which the other policies then check one by one.
"""

import posixpath
import re
from collections.abc import Iterator, Mapping
from functools import partial
from itertools import takewhile
from typing import Any

import pod_security
from argo import EXPRESSION
from checks import resource_policy
from platform_releases import PLATFORM_OBJECT_PREFIX, PLATFORM_RELEASES, RAW_MANIFEST_KEYS
from platform_values import PLATFORM_VALUES, ChartValues, KeyPath
from pods import namespace_or_default
from props import (
    Step,
    field_path,
    flag,
    is_list,
    mapping,
    number,
    shown,
    text,
    value_at,
)
from pulumi_policy import EnforcementLevel, ResourceValidationArgs
from pulumi_policy.proxy import UnknownValueError
from settings import EXEMPT_NAMESPACES, Setting

RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"
CHART_TYPE = "kubernetes:helm.sh/v4:Chart"
HELM_TYPES = (RELEASE_TYPE, CHART_TYPE)
GPU_OPERATOR_CHART = "gpu-operator"
PLATFORM_ROLLBACK = "platform-release-rollback"

# One exact SemVer release, with Helm's optional leading v: no ranges, wildcards or `latest`.
EXACT_VERSION = re.compile(
    r"v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?"
)
SECURE_REPOSITORY_SCHEMES = ("https://", "oci://")


def chart_name(chart: str) -> str:
    """`gpu-operator` from `gpu-operator`, `nvidia/gpu-operator` or `oci://host/gpu-operator`."""
    return chart.removeprefix("oci://").rstrip("/").rsplit("/", 1)[-1]


def is_gpu_operator(props: Mapping[str, Any]) -> bool:
    return chart_name(text(props, "chart") or "") == GPU_OPERATOR_CHART


LOCAL_CHART_PREFIXES = ("./", "../", "/", "~")
CHART_ARCHIVE_SUFFIXES = (".tgz", ".tar.gz")
# Absolute and home paths: the deploying machine's files, not the repository's.
OUTSIDE_REPOSITORY_PREFIXES = ("/", "~")


def is_local_chart(chart: str) -> bool:
    """A chart directory or archive on the deploying machine, as Helm reads a path."""
    return chart.startswith(LOCAL_CHART_PREFIXES) or (
        "://" not in chart and chart.endswith(CHART_ARCHIVE_SUFFIXES)
    )


REPOSITORY_ROOT = Setting(
    "repositoryRoot",
    {
        "type": "string",
        "pattern": r"^(\.|\.\.(/\.\.)*)$",
        "default": ".",
        "description": "Where the repository's root is from the program's directory (the one "
        'holding Pulumi.yaml): "." when the program is at the root, ".." for a program in a '
        'directory of the repository (infra/), "../.." two levels down. A chart path that '
        "leaves this root is outside what a review of the repository covers.",
    },
)


def _levels_up(path: str) -> int:
    """How many directories above the program's `path` starts, once normalized: 0 for
    `./charts/app`, 1 for `../charts/app` or `./a/../../charts`."""
    return len(list(takewhile("..".__eq__, posixpath.normpath(path).split("/"))))


def local_chart_problems(chart: str, config: Mapping[str, Any]) -> Iterator[str]:
    """A relative path is read from the program's directory, so the repository fixes what it
    holds, as long as the path stays within the repository (`repositoryRoot`); an absolute or
    home path is whatever the deploying machine (a CI runner) has."""
    if chart.startswith(OUTSIDE_REPOSITORY_PREFIXES):
        yield (
            f"chart {shown(chart)} is read from the deploying machine's own files, outside the "
            "repository, so what it installs is whatever that machine holds. Fix: keep the "
            'chart in the repository and name it by a relative path ("./charts/app"), or '
            "install a released version from an https or oci repository."
        )
        return
    root = REPOSITORY_ROOT.read(config)
    root_levels = _levels_up(root) if re.fullmatch(REPOSITORY_ROOT.schema["pattern"], root) else 0
    if _levels_up(chart) > root_levels:
        yield (
            f"chart {shown(chart)} leaves the repository, whose root is {shown(root)} from the "
            f"program's directory ({REPOSITORY_ROOT.key}), so what it installs is whatever sits "
            "beside the checkout on the deploying machine, which no review of the repository "
            "covers. Fix: keep the chart in the repository, or set "
            f"{REPOSITORY_ROOT.key} to where the repository's root is if the program is in a "
            "directory of it."
        )


def archive_url_problems(chart: str) -> Iterator[str]:
    """A chart archive fetched by URL is pinned by its name (`app-1.2.3.tgz`), not `version`."""
    if not chart.startswith("https://"):
        yield (
            f"chart {shown(chart)} is fetched over plain http, so it can be altered on the way. "
            "Fix: fetch it over https."
        )
    archive = chart.rsplit("/", 1)[-1]
    stem = next(
        (archive.removesuffix(s) for s in CHART_ARCHIVE_SUFFIXES if archive.endswith(s)), ""
    )
    if not any(EXACT_VERSION.fullmatch(part) for part in _version_candidates(stem)):
        yield (
            f"chart {shown(chart)} is not a versioned chart archive (name-1.2.3.tgz), so the same "
            "address may serve a different chart tomorrow. Fix: point it at one release's archive."
        )


def _version_candidates(stem: str) -> Iterator[str]:
    # `ingress-nginx-4.11.3` -> `4.11.3`, `nginx-4.11.3`, ...: chart names contain dashes too.
    parts = stem.split("-")
    for i in range(1, len(parts)):
        yield "-".join(parts[i:])


def pinning_problems(args: ResourceValidationArgs) -> Iterator[str]:
    chart = value_at(args.props, "chart")
    if isinstance(chart, str) and is_local_chart(chart):
        yield from local_chart_problems(chart, args.get_config())
        return
    if isinstance(chart, str) and chart.startswith(("https://", "http://")):
        yield from archive_url_problems(chart)
        return
    version = value_at(args.props, "version")
    if not (isinstance(version, str) and EXACT_VERSION.fullmatch(version)):
        yield (
            f"chart {shown(chart)} has version {shown(version)}, not one exact release, so each "
            "deployment may install a different chart. Fix: set version to an exact release such "
            'as "1.2.3".'
        )
    if isinstance(chart, str) and chart.startswith("oci://"):
        return
    repository = value_at(args.props, "repositoryOpts", "repo")
    if not isinstance(repository, str) or not repository:
        yield (
            f"chart {shown(chart)} names no repository (repositoryOpts.repo), so it comes from "
            "whatever Helm repositories the deploying machine has configured. Fix: set "
            "repositoryOpts.repo to the chart's https repository, or name the chart by its "
            "oci:// reference."
        )
    elif not repository.startswith(SECURE_REPOSITORY_SCHEMES):
        yield (
            f"chart {shown(chart)} comes from {shown(repository)}, neither an https nor an oci "
            "repository, so it can be altered on the way. Fix: use the repository's https or "
            "oci:// address."
        )


def gpu_operator_problems(args: ResourceValidationArgs) -> Iterator[str]:
    if not is_gpu_operator(args.props):
        return
    namespace = namespace_or_default(text(args.props, "namespace"), args.provider)
    if namespace in ("default", "kube-system"):
        yield (
            f'the GPU Operator is installed in namespace "{namespace}", which it would share '
            "with other workloads while it needs Pod Security privileged. Fix: install it in "
            'its own namespace, e.g. "gpu-operator", labelled privileged.'
        )
    if flag(args.props, "values", "dcgmExporter", "enabled") is False:
        yield (
            "the GPU Operator's DCGM exporter is off (values.dcgmExporter.enabled=false), so "
            "there are no GPU metrics to watch or alert on. Fix: remove the value or set it to "
            "true."
        )
    if args.resource_type == CHART_TYPE:
        yield (
            "the GPU Operator is installed with helm.v4.Chart, which creates a chart's hook "
            "resources as ordinary resources and does not run them as Helm hooks, so the "
            "operator's CRD upgrade Job (operator.upgradeCRD), a pre-upgrade hook, is not run "
            "before the upgrade it is for. Fix: install it with helm.v3.Release."
        )


_PLATFORM_CHARTS = "|".join(sorted({re.escape(r.name) for r in PLATFORM_RELEASES}))
DECLARED_RELEASES = Setting(
    "platformReleases",
    {
        "type": "array",
        # The repository, one of the platform's charts and one exact version: a mirror or a
        # trial of the platform's own release, never another chart, nor every version of one.
        "items": {
            "type": "string",
            "pattern": rf"^(https|oci)://[^\s@]+/({_PLATFORM_CHARTS})@{EXACT_VERSION.pattern}$",
        },
        "default": [],
        "description": "Releases of the platform's own charts that the stack installs off the "
        "pins, each as `<repository>/<chart>@<version>`: a mirror (operator.repository), a "
        "trial version (operator.chartVersion, autoscaler.chartVersion, "
        "karpenter.chartVersion). Each one is the platform's release, as the pinned ones are. "
        "The other Helm policies read it here too.",
    },
)

DECLARED: set[tuple[str, str]] = set()
"""(chart, version) of each release the stack's policy config declares (`platformReleases`)."""


def configure(config: Mapping[str, Any]) -> None:
    """Take `PLATFORM_ROLLBACK`'s config as the pack is configured: every policy that
    tells the platform's releases from the stack's reads it, while the engine gives each
    policy only its own (`pack_config.watch_pack_config`)."""
    DECLARED.clear()
    for entry in DECLARED_RELEASES.read(config):
        chart, _, version = entry.rpartition("@")
        DECLARED.add((chart, version))


PINNED = frozenset((r.chart, r.version) for r in PLATFORM_RELEASES)


def is_platform_chart(args: ResourceValidationArgs) -> bool:
    """A release of one of the platform's charts at the version it pins
    (`platform_releases.PLATFORM_RELEASES`), or one the stack's policy config declares
    (`platformReleases`), whatever its values."""
    if args.resource_type != RELEASE_TYPE:
        return False
    installed = (chart_reference(args.props) or "", text(args.props, "version") or "")
    return installed in PINNED or installed in DECLARED


def is_platform_release(args: ResourceValidationArgs) -> bool:
    """A release of the platform's chart at its version (`is_platform_chart`) that runs only
    what the chart's own templates do (`foreign_settings`). Its settings and workloads are the
    platform's, reviewed and tested with it (Karpenter 1.14.1's controller, say, runs as 65532,
    non-root, without privilege escalation or capabilities, on a read-only root filesystem
    with the RuntimeDefault seccomp profile: charts/karpenter/templates/deployment.yaml).
    Neither its place in the program (its parents' types) nor its name or namespace makes it
    the platform's, as a program chooses them all; name and namespace only narrow what its
    values may hold (`_named_as_the_platforms`, node-exporter's namespace)."""
    return is_platform_chart(args) and not foreign_settings(args.props)


# The inputs of pulumi-kubernetes 4.34.2's helm.v3.Release the platform's releases set
# (gpu_platform/kubernetes/gpu_operator.py, monitoring.py, eks/): what it installs, from where,
# how it rolls back and waits. `compat` is the SDK's own ("true", always sent) and `skipCrds`
# only leaves objects out. `createNamespace` and `disableOpenapiValidation` are judged by
# value in `foreign_settings`. Any other input set to more than its default (false, empty,
# absent) changes what Helm installs or adopts (`takeOwnership`, Helm's pkg/action/validate.go
# requireAdoption; `reuseValues`; a `postrender` command; `valueYamlFiles`), so it is foreign.
PLATFORM_INPUTS = frozenset(
    {
        "chart",
        "version",
        "repositoryOpts",
        "name",
        "namespace",
        "values",
        "atomic",
        "cleanupOnFail",
        "timeout",
        "maxHistory",
        "skipAwait",
        "waitForJobs",
        "compat",
        "skipCrds",
        "createNamespace",
        "disableOpenapiValidation",
    }
)


def _set(props: Mapping[str, Any], key: str) -> bool:
    """Whether an input holds more than its default; one not known yet (at preview) may."""
    try:
        value = value_at(props, key)
    except UnknownValueError:
        return True
    if isinstance(value, Mapping) or is_list(value):
        return len(value) > 0
    return value not in (None, False, "")


def foreign_settings(props: Mapping[str, Any]) -> list[str]:
    """The settings of a release that make its chart run what the platform's own release does
    not: each input the platform never sets (`PLATFORM_INPUTS`) set all the same, no values at
    all, `createNamespace`; each value at a key
    path the platform's release of the chart does not set, or that holds what the platform never
    sets there (`platform_values.PLATFORM_VALUES`); and each object in a value the chart
    renders as given (`platform_releases.RAW_MANIFEST_KEYS`) but the platform's own
    (`PLATFORM_OBJECT_PREFIX`) where the platform gives the chart one."""
    found = [key for key in props if key not in PLATFORM_INPUTS and _set(props, key)]
    # A release that sends no values gets the last revision's stored ones: Helm's upgrade
    # (pkg/action/upgrade.go, reuseValues) reuses them whole when the new values are empty,
    # and no policy sees them. The platform always sends values.
    if not mapping(props, "values"):
        found.append("values (none sent)")
    # Helm creates the namespace with no Pod Security labels, which then admits privileged
    # pods; the platform's releases go into namespaces it declares (create_namespace=False).
    if value_at(props, "createNamespace") is True:
        found.append("createNamespace")
    table = PLATFORM_VALUES.get(chart_name(text(props, "chart") or ""), ChartValues({}))
    platforms_operator = bool(table.components) and _named_as_the_platforms(props, table)
    # Without the OpenAPI check Helm applies what a value's text makes of a manifest unchecked
    # (a key given twice, a field of another kind); the platform turns it off for its GPU
    # Operator release alone (gpu_platform/kubernetes/gpu_operator.py).
    if value_at(props, "disableOpenapiValidation") is True and not platforms_operator:
        found.append("disableOpenapiValidation")
    if table.components and not platforms_operator:
        table = table.without_components()
    values = value_at(props, "values")
    try:
        namespace: str | None = text(props, "namespace") or ""
    except UnknownValueError:
        namespace = None
    foreign = list(_foreign_keys(values, (), table, namespace))
    found += [
        field_path("values", *path)
        + (
            f" (the platform's release sets {table.allowed(path).means})"
            if table.sets(path)
            else ""
        )
        for path in foreign
    ]
    return found + [
        field_path("values", *path)
        for path, item in _raw_manifests(values, ())
        if not any(path[: len(f)] == f for f in foreign)
        and not (_raw_path(path) in table.paths and _platform_object(item))
    ]


def _named_as_the_platforms(props: Mapping[str, Any], table: ChartValues) -> bool:
    """Whether a release has the name the platform gives its release of the chart and runs in
    a namespace the stack's policy config exempts (`exemptNamespaces`, which
    pod-security-standards is given): the GPU Operator's, whose privileged pods need one."""
    exempt = EXEMPT_NAMESPACES.read(pod_security.CONFIGURED)
    return text(props, "name") == table.release and text(props, "namespace") in exempt


def _foreign_keys(
    values: Any, path: KeyPath, table: ChartValues, namespace: str | None
) -> Iterator[KeyPath]:
    """Each key path in `values` the platform's release of the chart does not set, outermost
    first, or sets to what it never does (`ChartValues.allowed`: a chart writes most values into
    its YAML unescaped, so the value decides what it runs as much as the key); the values the
    chart renders as manifests are `_raw_manifests`' to judge. A value not known yet (at
    preview) is judged by its key alone, until the update that knows it."""
    if not isinstance(values, Mapping):
        return
    for key in values:
        here = (*path, str(key))
        if key in RAW_MANIFEST_KEYS:
            continue
        if table.sets(here):
            try:
                if not table.allowed(here).holds(values[key], namespace):
                    yield here
            except UnknownValueError:
                continue
        elif table.leads_to(here) and isinstance(values[key], Mapping):
            yield from _foreign_keys(values[key], here, table, namespace)
        else:
            yield here


def _raw_path(path: tuple[Step, ...]) -> KeyPath:
    """The key path of the raw-manifest value an entry's path (`extraObjects[0]`) is in."""
    keys = tuple(str(step) for step in path)
    return keys[: max(i for i, key in enumerate(keys) if key in RAW_MANIFEST_KEYS) + 1]


def _raw_manifests(values: Any, path: tuple[Step, ...]) -> Iterator[tuple[tuple[Step, ...], Any]]:
    """(path, entry) of each entry of a `RAW_MANIFEST_KEYS` value in `values`, at any depth; a
    value not known yet (at preview) is passed over unless it is one of those."""
    steps: list[Step] = []
    if isinstance(values, Mapping):
        steps = [key for key in values if isinstance(key, str)]
    elif is_list(values):
        steps = list(range(len(values)))
    for step in steps:
        try:
            value = values[step]
        except UnknownValueError:
            if step in RAW_MANIFEST_KEYS:
                raise
            continue
        if step not in RAW_MANIFEST_KEYS:
            yield from _raw_manifests(value, (*path, step))
        elif is_list(value):
            yield from (((*path, step, i), value[i]) for i in range(len(value)))
        elif value:
            yield (*path, step), value


def _platform_object(item: Any) -> bool:
    """The exporter metric set's ConfigMap as the platform writes it, and nothing else: no
    other field, and no `{{` that a chart rendering it through `tpl` would expand."""
    if not isinstance(item, Mapping) or set(item) - {"apiVersion", "kind", "metadata", "data"}:
        return False
    metadata, data = value_at(item, "metadata"), value_at(item, "data")
    if not isinstance(metadata, Mapping) or set(metadata) - {"name", "namespace"}:
        return False
    if not isinstance(data, Mapping) or set(data) - {"metrics"}:
        return False
    strings = [text(item, *path) for path in (("metadata", "namespace"), ("data", "metrics"))]
    name = text(item, "metadata", "name") or ""
    return (
        text(item, "apiVersion") == "v1"
        and text(item, "kind") == "ConfigMap"
        and name.startswith(PLATFORM_OBJECT_PREFIX)
        and not any(EXPRESSION in found for found in [name, *strings] if found)
    )


def settings_moving(chart: str, version: str) -> tuple[str, ...]:
    """The stack settings that install the platform's release of `chart`'s name as `chart` at
    `version` (from a mirror, at a trial version); none where no setting of the stack does."""
    for release in PLATFORM_RELEASES:
        if release.name != chart_name(chart):
            continue
        needed = (
            release.repository_setting if chart != release.chart else "",
            release.version_setting if version != release.version else "",
        )
        if None not in needed:
            return tuple(filter(None, needed))
    return ()


REVIEWED_RELEASES = Setting(
    "reviewedCharts",
    {
        "type": "array",
        # The repository and the chart: a name alone would let any repository's chart of that
        # name (oci://anyone/karpenter) pass as the reviewed one.
        "items": {"type": "string", "pattern": r"^(https|oci)://[^\s]+/[^/\s]+$"},
        "default": [],
        "description": "Charts installed as helm.v3.Release by the stack's own program whose "
        "workloads are reviewed elsewhere, each as its repository and chart: "
        '"<https repository>/<chart>" or "oci://<registry>/<path>/<chart>". The platform\'s '
        "own releases are reviewed with it.",
    },
)


def chart_reference(props: Mapping[str, Any]) -> str | None:
    """The chart a release installs as `<repository>/<chart>`, as `reviewedCharts` names it:
    an oci:// chart as it is, a chart name with the https repository it comes from; None for a
    chart with no repository of its own (a path, or a name from the machine's Helm repos)."""
    chart = text(props, "chart") or ""
    if chart.startswith("oci://"):
        return chart.rstrip("/")
    repository = text(props, "repositoryOpts", "repo")
    if not repository or is_local_chart(chart) or "/" in chart:
        return None
    return f"{repository.rstrip('/')}/{chart}"


def opaque_release_problems(args: ResourceValidationArgs) -> Iterator[str]:
    chart = text(args.props, "chart") or ""
    reference = chart_reference(args.props)
    platform_chart = is_platform_chart(args)
    found = foreign_settings(args.props) if platform_chart else []
    # `is_platform_release`, with what the settings found kept for the message.
    if (platform_chart and not found) or (
        reference is not None and reference in REVIEWED_RELEASES.read(args.get_config())
    ):
        return
    named = shown(reference) if reference else "its repository and chart"
    version = text(args.props, "version") or ""
    settings = settings_moving(reference, version) if reference else ()
    declare = ""
    if settings:
        declare = (
            f"; where a setting of the stack ({', '.join(settings)}) installs the platform's own "
            f"release so, off its pin, declare it in the stack's policy config: add "
            f"{shown(f'{reference}@{version}')} to {PLATFORM_ROLLBACK}'s {DECLARED_RELEASES.key}"
        )
    foreign = ""
    if platform_chart:
        settings_found = ", ".join(found)
        foreign = (
            f" It installs the platform's chart at its version, but {settings_found} make it run "
            "what the platform's own release does not, so it is not the platform's; without "
            "them it would be."
        )
    yield (
        f"chart {shown(chart)} is installed as a helm.v3.Release, whose workloads the policies "
        "never see: Helm creates them, not Pulumi, so no Pod Security or GPU rule checks "
        f"them.{foreign} "
        "Fix: install it with helm.v4.Chart, which registers every object it renders as a "
        f"resource the policies check, or add {named} to {REVIEWED_RELEASES.key} once its "
        f"workloads are reviewed another way{declare}."
    )


# What a release needs to undo a failed install or upgrade by itself (pulumi-kubernetes'
# helm_release.go on Helm v3's pkg/action): `atomic` uninstalls a failed install and rolls a
# failed upgrade back to the last deployed revision, waiting for the release's workloads up to
# `timeout` (300 s where unset); `cleanupOnFail` deletes what the failed upgrade created;
# `maxHistory` unset or 0 keeps every revision, a Secret each. A `failed` release does not block
# the next upgrade (upgrade.go, prepareUpgrade, upgrades over it); only a `pending-*` one does.


def _switch_problems(field: str, without: str, args: ResourceValidationArgs) -> Iterator[str]:
    if flag(args.props, field) is not True:
        yield (
            f"chart {shown(text(args.props, 'chart'))} is released without {field}, so "
            f"{without}. Fix: set {field}: true."
        )


atomic_problems = partial(
    _switch_problems,
    "atomic",
    "a failed upgrade leaves the release on the half-applied new revision, not on the last one "
    "that worked, and a failed install stays installed",
)
cleanup_problems = partial(
    _switch_problems,
    "cleanupOnFail",
    "what a failed upgrade created stays in the cluster beside the rolled-back release",
)


def timeout_problems(args: ResourceValidationArgs) -> Iterator[str]:
    timeout = value_at(args.props, "timeout")
    seconds = number(args.props, "timeout")
    if seconds is not None and seconds > 0:
        return
    chart = shown(text(args.props, "chart"))
    if timeout is None:
        yield (
            f"chart {chart} is released without a timeout, so Helm gives its workloads the "
            "provider's default 300 s to become ready, whatever they install, before it fails "
            "and rolls back the release. Fix: set timeout to the seconds they need."
        )
    else:
        yield (
            f"chart {chart} has timeout {shown(timeout)}, not a number of seconds above 0. Fix: "
            "set timeout to the seconds its workloads need to become ready."
        )


def history_problems(args: ResourceValidationArgs) -> Iterator[str]:
    kept = number(args.props, "maxHistory")
    if kept is not None and kept > 0:
        return
    history = value_at(args.props, "maxHistory")
    setting = "no maxHistory" if history is None else f"maxHistory {shown(history)}"
    yield (
        f"chart {shown(text(args.props, 'chart'))} keeps every revision of its release "
        f"({setting}), each a Secret in its namespace, piling up with every upgrade. Fix: set "
        "maxHistory, such as 10."
    )


ROLLBACK_CHECKS = (atomic_problems, cleanup_problems, timeout_problems, history_problems)

POLICIES = [
    resource_policy(
        "helm-chart-pinned",
        "Helm charts are pinned: an exact version from an https or oci repository, a versioned "
        "https archive, or a chart in the repository itself.",
        pinning_problems,
        REPOSITORY_ROOT,
        resource_types=HELM_TYPES,
    ),
    resource_policy(
        "gpu-operator-release",
        "The GPU Operator is a helm.v3.Release in its own namespace, with the DCGM exporter on.",
        gpu_operator_problems,
        resource_types=HELM_TYPES,
    ),
    resource_policy(
        PLATFORM_ROLLBACK,
        "The platform's own Helm releases undo a failed install or upgrade by themselves: atomic, "
        "cleanupOnFail, a timeout and a bounded maxHistory.",
        ROLLBACK_CHECKS,
        DECLARED_RELEASES,
        resource_types=(RELEASE_TYPE,),
        applies=is_platform_release,
    ),
    resource_policy(
        "helm-release-rollback",
        "Other Helm releases undo a failed install or upgrade by themselves: atomic, "
        "cleanupOnFail, a timeout and a bounded maxHistory.",
        ROLLBACK_CHECKS,
        resource_types=(RELEASE_TYPE,),
        applies=lambda args: not is_platform_release(args),
        enforcement_level=EnforcementLevel.ADVISORY,
    ),
    resource_policy(
        "helm-release-workloads-visible",
        "A helm.v3.Release, whose workloads no policy sees, is one of the reviewed charts.",
        opaque_release_problems,
        REVIEWED_RELEASES,
        resource_types=(RELEASE_TYPE,),
        enforcement_level=EnforcementLevel.ADVISORY,
    ),
]
