"""`gpu-platform preflight`: check a stack against its cloud before `pulumi up`.

Read-only calls answer what would otherwise surface half-way through a deployment or, worse, as
a GPU pool that never scales up. Each cloud has its own checks, loaded for its stacks only (an
EKS check does not load Google's auth library, a GKE check not boto3):
- `gpu_platform.eks.preflight.checks`: the EKS cluster, instance type offerings, subnets and what
  they reach, live node group sizes, reservations and EC2 quotas;
- `gpu_platform.gke.preflight.checks`: the GKE cluster and reservations.
Both are followed by one check made from the chart repository's index rather than the cloud: that
the GPU Operator chart version exists; and one of the image registries
(`gpu_platform.preflight.images`): the images the lock has no digest for, and the tags pushed
again since it was written.

Each finding says what to do. Exits 1 if any finding blocks the deployment, 2 for a bad stack,
4 when it cannot check (no credentials, no way to the cloud, a permission missing, an API that
kept throttling), within one deadline for the whole command (`gpu_platform.deadline`): past
it, exit 4 names the endpoint that did not answer.
"""

import urllib.request
from collections.abc import Sequence

import typer
import yaml
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from gpu_platform import yaml_documents
from gpu_platform.cli.cli import fail, plain_console
from gpu_platform.cli.preflight_exit_codes import EXIT_BAD_STACK, EXIT_BLOCKED
from gpu_platform.config import (
    Cloud,
    ConfigError,
    StackConfig,
    key_path,
    load_stack_config,
)
from gpu_platform.deadline import Deadline, DeadlinePassed
from gpu_platform.preflight.findings import Finding
from gpu_platform.preflight.images import image_findings
from gpu_platform.stack_files import StackFileError, gpu_platform_config, stack_config
from gpu_platform.versions import GPU_OPERATOR_CHART


def run(stack: str, timeout_seconds: float) -> None:
    """Check a stack against its cloud: an EKS stack against its AWS account, a GKE stack
    against its Google Cloud project; then the chart version against the chart repository. All
    within `timeout_seconds` from now."""
    deadline = Deadline(timeout_seconds)
    console = plain_console()
    try:
        config = load_stack_config(*gpu_platform_config(stack_config(stack)))
    except (FileNotFoundError, StackFileError) as unreadable:
        fail(str(unreadable), EXIT_BAD_STACK)
    except ConfigError as error:
        fail(error.report(), EXIT_BAD_STACK)
    findings = (
        _cloud_findings(stack, config, deadline)
        + chart_findings(config, deadline)
        + image_findings(stack, config, deadline)
    )
    print_findings(findings, console)
    if any(f.blocking for f in findings):
        raise typer.Exit(EXIT_BLOCKED)


def _cloud_findings(stack: str, config: StackConfig, deadline: Deadline) -> list[Finding]:
    # Each cloud's checks load its own client library (boto3, Google's auth) for its stacks only.
    if config.cloud is Cloud.GCP:
        from gpu_platform.gke.preflight import checks

        return checks.check(stack, config, deadline)
    from gpu_platform.eks.preflight import checks as eks_checks

    return eks_checks.check(stack, config, deadline)


def print_findings(findings: Sequence[Finding], console: Console) -> None:
    colours = {"blocking": "red", "warning": "yellow", "ok": "green"}
    table = Table(title="Pre-flight", title_justify="left")
    for column in ("", "subject", "finding", "what to do"):
        table.add_column(column)
    for f in findings:
        colour = colours[f.severity]
        table.add_row(
            f"[{colour}]{f.severity}[/{colour}]",
            escape(f.subject),
            escape(f.message),
            escape(f.action),
        )
    console.print(table)
    blocking = sum(f.blocking for f in findings)
    console.print(f"{blocking} blocking finding(s)." if blocking else "Nothing blocks `pulumi up`.")


# --- The GPU Operator chart ------------------------------------------------------------------


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
