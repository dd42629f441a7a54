"""What the commands share: running the program for a stack and stopping with a clear message."""

import os
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from gpu_platform.cli.options import options
from gpu_platform.config import ConfigError
from gpu_platform.lock.lockfile import LockError, MissingLockEntry


def plain_console(stderr: bool = False) -> Console:
    """A console for the commands' output. Text from stack files, pod files and clouds is shown
    as written: markup in it is escaped where it is printed, and `:name:` is never an emoji
    (`gpu-platform:cloud:` would otherwise end in a cloud).

    Output to a pipe or a file is read by tools and in CI logs, not in a window: rich would cut
    it into lines of 80 columns, in the middle of keys and values, so there it is not wrapped
    (unless COLUMNS says how wide to make it)."""
    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() or "COLUMNS" in os.environ else UNWRAPPED_WIDTH
    return Console(stderr=stderr, emoji=False, width=width)


UNWRAPPED_WIDTH = 100_000
errors = plain_console(stderr=True)


def fail(message: str, exit_code: int) -> NoReturn:
    """Print `message` to stderr, as written (no markup), and exit with `exit_code`."""
    errors.print(f"[red]{escape(message)}[/red]", highlight=False, soft_wrap=True)
    raise typer.Exit(exit_code)


@contextmanager
def planning(stack: str, config_error_exit: int, program_error_exit: int) -> Iterator[None]:
    """Ends the command for what stops the stack's offline plan in the block: a missing project
    or stack file, a config error, a fact the lock lacks (or a lock it cannot read) or another
    bad input with `config_error_exit`; a failing program with `program_error_exit`."""
    # Imported here: the commands that run no program (`preflight`, `config-reference`) share
    # this module without loading the Pulumi SDK.
    from gpu_platform.offline.plan import ProgramFailed

    try:
        yield
    except ProgramFailed as failed:
        fail(program_failure(failed.error, failed.project_dir), program_error_exit)
    except Exception as error:
        fail_for_planning(error, stack, config_error_exit)


def fail_for_planning(error: Exception, stack: str, exit_code: int) -> NoReturn:
    """End the command for what stopped a stack's plan before its program ran to the end: a
    missing project or stack file, a config error, a fact the lock lacks or a lock it cannot
    read, another bad input; any other error is raised again."""
    # StackFileError and NoStackNamed are ValueErrors, and so are a bad policy config and pod file.
    if isinstance(error, (FileNotFoundError, ValueError, LockError)):
        fail(str(error), exit_code)
    if isinstance(error, OSError):
        fail(f"cannot read {error.filename}: {error.strerror}", exit_code)
    if isinstance(error, ConfigError):
        fail(error.report(), exit_code)
    if isinstance(error, MissingLockEntry):
        fail(error.report(stack), exit_code)
    raise error


def program_failure(error: BaseException, project_dir: Path) -> str:
    """What a failing program did, and where: the last line of the project's own code the
    error passed through (else the line that raised it), and with `--debug` the traceback."""
    frames = traceback.extract_tb(error.__traceback__)
    own = [f for f in frames if _is_projects_own(Path(f.filename).resolve(), project_dir)]
    where = ""
    if own or frames:
        frame = (own or frames)[-1]
        path = Path(frame.filename).resolve()
        shown = path.relative_to(project_dir) if path.is_relative_to(project_dir) else path
        where = f" at {shown}:{frame.lineno}"
    message = f"The program failed{where}: {type(error).__name__}: {error}"
    if options.debug:
        message += "\n" + "".join(traceback.format_exception(error)).rstrip()
    else:
        message += "\n(gpu-platform --debug shows the traceback)"
    return message


def _is_projects_own(path: Path, project_dir: Path) -> bool:
    """Whether `path` is the project's own code: under its directory and not an installed
    package (a project's `.venv/` is under its directory too, with `toolchain: uv`)."""
    return path.is_relative_to(project_dir) and not {"site-packages", "dist-packages"} & set(
        path.parts
    )
