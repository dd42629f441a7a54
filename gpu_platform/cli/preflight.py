"""`gpu-platform preflight`: prints what `gpu_platform.preflight.check.check_stack` finds.

Each finding says what to do. Exits 1 if any finding blocks the deployment, 2 for a bad stack,
4 when it cannot check (no credentials, no way to the cloud, a permission missing, an API that
kept throttling), within one deadline for the whole command (`gpu_platform.deadline`): past
it, exit 4 names the endpoint that did not answer.
"""

from collections.abc import Sequence

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from gpu_platform.cli.cli import fail, plain_console
from gpu_platform.cli.preflight_exit_codes import EXIT_BAD_STACK, EXIT_BLOCKED, EXIT_CANNOT_CHECK
from gpu_platform.config import ConfigError
from gpu_platform.preflight.cannot_check import CannotCheck
from gpu_platform.preflight.check import check_stack
from gpu_platform.preflight.findings import Finding
from gpu_platform.stack_files import StackFileError


def run(stack: str, timeout_seconds: float) -> None:
    """Check a stack against its cloud, print the findings and exit as the module says."""
    console = plain_console()
    try:
        report = check_stack(stack, timeout_seconds)
    except (FileNotFoundError, StackFileError) as unreadable:
        fail(str(unreadable), EXIT_BAD_STACK)
    except ConfigError as error:
        fail(error.report(), EXIT_BAD_STACK)
    except CannotCheck as error:
        fail(str(error), EXIT_CANNOT_CHECK)
    print_findings(report.findings, console)
    if report.blocking:
        raise typer.Exit(EXIT_BLOCKED)


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
