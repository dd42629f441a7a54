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
from pulumi_policy import ResourceValidationArgs

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


def pinning_problems(args: ResourceValidationArgs) -> Iterator[str]:
    chart = value_at(args.props, "chart")
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
            "the GPU Operator is installed with helm.v4.Chart, which skips Helm hooks, so the "
            "operator's CRD upgrade hook (operator.upgradeCRD) never runs and its CRDs go stale "
            "on upgrade. Fix: install it with helm.v3.Release."
        )


POLICIES = [
    resource_policy(
        "helm-chart-pinned",
        "Helm charts are pinned to an exact version from an https or oci repository.",
        pinning_problems,
        resource_types=HELM_TYPES,
    ),
    resource_policy(
        "gpu-operator-release",
        "The GPU Operator is a helm.v3.Release in its own namespace, with the DCGM exporter on.",
        gpu_operator_problems,
        resource_types=HELM_TYPES,
    ),
]
