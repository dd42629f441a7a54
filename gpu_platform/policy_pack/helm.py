"""Helm charts are pinned and fetched securely; the GPU Operator is installed where and how it
works.

A policy sees a `helm.v3.Release` as one resource with its inputs (chart, version, repository,
namespace, values), not the objects the chart installs; a `helm.v4.Chart` also registers the
rendered objects, which the other policies then check one by one.
"""

import re
from collections.abc import Iterator, Mapping
from typing import Any

from checks import resource_policy
from pods import namespace_or_default
from props import flag, shown, text, value_at
from pulumi_policy import EnforcementLevel, ResourceValidationArgs
from settings import Setting

RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"
CHART_TYPE = "kubernetes:helm.sh/v4:Chart"
HELM_TYPES = (RELEASE_TYPE, CHART_TYPE)
GPU_OPERATOR_CHART = "gpu-operator"

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


def local_chart_problems(chart: str) -> Iterator[str]:
    """A relative path is read from the program's directory, so the repository fixes what it
    holds; an absolute or home path is whatever the deploying machine (a CI runner) has."""
    if chart.startswith(OUTSIDE_REPOSITORY_PREFIXES):
        yield (
            f"chart {shown(chart)} is read from the deploying machine's own files, outside the "
            "repository, so what it installs is whatever that machine holds. Fix: keep the "
            'chart in the repository and name it by a relative path ("./charts/app"), or '
            "install a released version from an https or oci repository."
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
        yield from local_chart_problems(chart)
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


REVIEWED_RELEASES = Setting(
    "reviewedCharts",
    {
        "type": "array",
        # The repository and the chart: a name alone would let any repository's chart of that
        # name (oci://anyone/karpenter) pass as the reviewed one.
        "items": {"type": "string", "pattern": r"^(https|oci)://[^\s]+/[^/\s]+$"},
        "default": [
            "https://helm.ngc.nvidia.com/nvidia/gpu-operator",
            "https://prometheus-community.github.io/helm-charts/kube-prometheus-stack",
            "https://kubernetes.github.io/autoscaler/cluster-autoscaler",
            "https://aws.github.io/eks-charts/aws-efa-k8s-device-plugin",
            # Karpenter 1.14.1: the controller runs as 65532, non-root, without privilege
            # escalation or capabilities, on a read-only root filesystem with the RuntimeDefault
            # seccomp profile (charts/karpenter/templates/deployment.yaml, values.yaml
            # podSecurityContext); karpenter-crd renders CRDs only.
            "oci://public.ecr.aws/karpenter/karpenter",
            "oci://public.ecr.aws/karpenter/karpenter-crd",
        ],
        "description": "Charts installed as helm.v3.Release whose workloads are reviewed "
        "elsewhere (the platform's own), each as its repository and chart: "
        '"<https repository>/<chart>" or "oci://<registry>/<path>/<chart>".',
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
    if reference is not None and reference in REVIEWED_RELEASES.read(args.get_config()):
        return
    named = shown(reference) if reference else "its repository and chart"
    yield (
        f"chart {shown(chart)} is installed as a helm.v3.Release, whose workloads the policies "
        "never see: Helm creates them, not Pulumi, so no Pod Security or GPU rule checks them. "
        "Fix: install it with helm.v4.Chart, which registers every object it renders as a "
        f"resource the policies check, or add {named} to {REVIEWED_RELEASES.key} once its "
        "workloads are reviewed another way."
    )


POLICIES = [
    resource_policy(
        "helm-chart-pinned",
        "Helm charts are pinned: an exact version from an https or oci repository, a versioned "
        "https archive, or a chart in the repository itself.",
        pinning_problems,
        resource_types=HELM_TYPES,
    ),
    resource_policy(
        "gpu-operator-release",
        "The GPU Operator is a helm.v3.Release in its own namespace, with the DCGM exporter on.",
        gpu_operator_problems,
        resource_types=HELM_TYPES,
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
