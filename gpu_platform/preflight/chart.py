"""Whether the chart repository serves the stack's GPU Operator chart version, read from its
index as Helm reads it."""

import urllib.request

import yaml

from gpu_platform import yaml_documents
from gpu_platform.config import StackConfig, key_path
from gpu_platform.deadline import Deadline, DeadlinePassed
from gpu_platform.preflight.findings import Finding
from gpu_platform.versions import GPU_OPERATOR_CHART


def read_chart_index(repository: str, timeout: float) -> bytes:
    """The Helm repository's `index.yaml`, which Helm reads the chart's versions from; `timeout`
    bounds connecting and each read."""
    url = f"{repository.rstrip('/')}/index.yaml"
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return bytes(response.read())


def chart_findings(config: StackConfig, deadline: Deadline) -> list[Finding]:
    """Whether the repository serves the configured GPU Operator chart version: a version that
    does not exist is found by Helm only in the middle of `pulumi up`."""
    operator = config.operator
    chart = GPU_OPERATOR_CHART.name
    subject = f"chart {chart} {operator.chart_version}"
    where = f"{key_path('operator', 'chartVersion')} in {key_path('operator', 'repository')}"
    try:
        index = yaml_documents.load(
            deadline.run(lambda: read_chart_index(operator.repository, deadline.read_timeout))
        )
        entries = (index.get("entries") or {}).get(chart) or []
        versions = {str(entry.get("version")) for entry in entries}
    except (OSError, yaml.YAMLError, AttributeError, DeadlinePassed) as error:
        # URLError is an OSError, and so is a socket's timeout.
        why = (
            f"no answer within the {error.seconds:g} s deadline"
            if isinstance(error, DeadlinePassed)
            else str(error)
        )
        return [
            Finding(
                "warning",
                subject,
                f"Could not read {operator.repository}/index.yaml: {why}.",
                f"Check that {where} exists before `pulumi up`.",
            )
        ]
    if operator.chart_version in versions:
        return [Finding("ok", subject, f"{operator.repository} serves it.", "")]
    return [
        Finding(
            "blocking",
            subject,
            f"{operator.repository} serves no {chart} {operator.chart_version}"
            f" ({len(versions)} other versions).",
            f"Set {key_path('operator', 'chartVersion')} to a version it serves, such as"
            f" {GPU_OPERATOR_CHART.version}, the one the platform's values are checked against.",
        )
    ]
