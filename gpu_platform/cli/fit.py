"""`gpu-platform fit`: prints what `gpu_platform.offline.fit.fit_pods` finds.

Exits 1 if some pod fits no pool, 2 for a bad stack or pod file.
"""

from collections.abc import Sequence
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from gpu_platform.cli.cli import plain_console, planning
from gpu_platform.fit import DEPRECATED_NAMES, NodeTemplate, format_quantity, template_requests
from gpu_platform.offline.fit import fit_pods

EXIT_NO_FIT = 1
EXIT_BAD_INPUT = 2


def run(stack: str, pod_file: Path) -> None:
    """Show which GPU pools each pod in `pod_file` fits, and why not the others."""
    console = plain_console()
    with planning(stack, EXIT_BAD_INPUT, EXIT_BAD_INPUT):
        report = fit_pods(stack, pod_file)
    console.print(counted(report.templates))
    for note in report.assumptions:
        console.print(escape(note))
    for pod in report.pods:
        if pod.unanswered is not None:
            console.print(escape(f"{pod.title}: cannot say where it fits: {pod.unanswered}"))
            continue
        table = Table(title=escape(pod.title), title_justify="left")
        table.add_column("pool")
        table.add_column("fits")
        table.add_column("why not")
        for result in pod.fits:
            table.add_row(
                escape(result.pool),
                _verdict(result.fits, result.pool in pod.by_capacity),
                escape("\n".join(result.reasons)),
            )
        console.print(table)
        for why in pod.unsure:
            console.print(escape(f"{pod.title}: {why}"))
    if report.homeless:
        raise typer.Exit(EXIT_NO_FIT)


def _verdict(fits: bool, by_capacity: bool) -> str:
    if not fits:
        return "[red]no[/red]"
    return "[yellow]by capacity only[/yellow]" if by_capacity else "[green]yes[/green]"


def counted(templates: Sequence[NodeTemplate]) -> Table:
    """What each pool's template holds before a pod is tried on it: the pods placed there first
    and their requests, and the deprecated labels the provisioner adds."""
    table = Table(title="What each pool's node template counts", title_justify="left")
    table.add_column("pool")
    table.add_column("pods placed first")
    table.add_column("their requests")
    table.add_column("deprecated labels")
    shown: set[tuple[str, tuple[str, ...]]] = set()
    for template in templates:
        names = tuple(pod.name for pod in template.pods)
        if (template.pool, names) in shown:
            continue
        shown.add((template.pool, names))
        taken = template_requests(template)
        table.add_row(
            escape(template.pool),
            escape(", ".join(names) or "none"),
            escape(", ".join(f"{format_quantity(k, v)} {k}" for k, v in sorted(taken.items()))),
            escape(
                ", ".join(
                    sorted(
                        k for k in {**template.labels, **template.choices} if k in DEPRECATED_NAMES
                    )
                )
            ),
        )
    return table
