"""What the commands share: running the program for a stack and stopping with a clear message."""

from typing import TYPE_CHECKING, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from gpu_platform.cli.project import Project
from gpu_platform.cli.stack_files import StackFileError
from gpu_platform.config import ConfigError

if TYPE_CHECKING:
    from gpu_platform.cli.offline import Plan


def plain_console(stderr: bool = False) -> Console:
    """A console for the commands' output. Text from stack files, pod files and clouds is shown
    as written: markup in it is escaped where it is printed, and `:name:` is never an emoji
    (`gpu-platform:cloud:` would otherwise end in a cloud)."""
    return Console(stderr=stderr, emoji=False)


errors = plain_console(stderr=True)


def fail(message: str, exit_code: int) -> NoReturn:
    """Print `message` to stderr, as written (no markup), and exit with `exit_code`."""
    errors.print(f"[red]{escape(message)}[/red]", highlight=False, soft_wrap=True)
    raise typer.Exit(exit_code)


def plan_or_fail(
    stack: str, config_error_exit: int, program_error_exit: int, project: Project | None = None
) -> "Plan":
    """The stack's plan; a missing project or stack file, a config error or a failing program
    ends the command."""
    # Imported here: the commands that run no program (`preflight`, `config-reference`) share
    # this module without loading the Pulumi SDK.
    from gpu_platform.cli.offline import run_program

    try:
        plan = run_program(stack, project=project, raise_errors=False)
    except (FileNotFoundError, StackFileError) as unreadable:
        fail(str(unreadable), config_error_exit)
    if isinstance(plan.error, ConfigError):
        fail(plan.error.report(), config_error_exit)
    if plan.error is not None:
        fail(f"The program failed: {plan.error}", program_error_exit)
    return plan
