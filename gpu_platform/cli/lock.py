"""`gpu-platform lock`: read the facts the stacks' plans need from their sources into the
project's lock file (gpu_platform/lock/, docs/lock.md).

What it reads and keeps is `gpu_platform.lock.relock.relock`'s; this prints it and writes the
file.

Exit codes: 0 the lock is written (or, with --check, up to date); 1 with --check, the lock would
change; 2 a bad project, stack or lock file; 4 a fact could not be read (no answer, a 404, a
format the command does not read), each named, or the deadline passed; the lock is then
written with what could be read, the entries of the others kept as they were (past the
deadline, those of each kind of fact whose reading had not finished). A fact no stack needs yet,
and an image whose registry takes AWS credentials the run was not given, are warnings, not
failures (docs/lock.md), but for --check: it exits 4 then, as preflight does when it cannot
check, since a fact it did not read may have moved. A warning about a fact that was read (an image
of a chart the platform does not know) fails neither.
"""

from collections.abc import Sequence

import typer

from gpu_platform.cli.cli import errors, fail, plain_console
from gpu_platform.config import ConfigError
from gpu_platform.lock.lockfile import Lock, LockError
from gpu_platform.lock.relock import StackNotLockable, relock
from gpu_platform.lock.resolve import Resolver, changes
from gpu_platform.lock.resolvers import RESOLVERS
from gpu_platform.stack_files import StackFileError

EXIT_CHANGED = 1
EXIT_BAD_INPUT = 2
EXIT_UNRESOLVED = 4


def run(
    stacks: Sequence[str],
    check: bool,
    timeout_seconds: float,
    resolvers: Sequence[Resolver] = RESOLVERS,
) -> None:
    """Relock (`gpu_platform.lock.relock.relock`), print what changed and what was not read,
    and write the lock unless `check`."""
    try:
        relocked = relock(stacks, timeout_seconds, resolvers=resolvers)
    except (FileNotFoundError, StackFileError, LockError, StackNotLockable) as error:
        fail(str(error), EXIT_BAD_INPUT)  # ProjectNotFound is a FileNotFoundError
    except ConfigError as error:
        fail(error.report(), EXIT_BAD_INPUT)
    for fact in relocked.unread:
        prefix = "could not read" if fact.blocking else "warning: left as it was,"
        errors.print(f"{prefix} {fact.describe()}", markup=False, highlight=False, soft_wrap=True)
    for warning in relocked.warnings:
        errors.print(f"warning: {warning}", markup=False, highlight=False, soft_wrap=True)
    if relocked.late is not None:
        errors.print(relocked.late, markup=False, highlight=False, soft_wrap=True)
    before, after = relocked.before, relocked.after
    _write_or_report(before, after, check, complete=relocked.complete, left=len(relocked.unread))
    # --check cannot say the lock is up to date while facts it did not read may have moved.
    if not relocked.complete or (check and relocked.unread):
        raise typer.Exit(EXIT_UNRESOLVED)
    if check and after != before:
        raise typer.Exit(EXIT_CHANGED)


def _write_or_report(before: Lock, after: Lock, check: bool, complete: bool, left: int) -> None:
    """Print what changed; write the new lock unless `check`. `complete`: every fact a stack
    needs was read; `left`: how many others were left as they were (the warnings printed), so
    that an unchanged lock is up to date but for those."""
    console = plain_console()
    lines = changes(before, after)
    name = after.path.name
    for line in lines:
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    if not lines:
        if complete:
            facts = f"{left} fact" if left == 1 else f"{left} facts"
            but = f" except {facts} not read (the warnings above)" if left else ""
            console.print(
                f"{name} is up to date{but}", markup=False, highlight=False, soft_wrap=True
            )
    elif check:
        console.print(f"{name} would change: run `gpu-platform lock`", markup=False)
    else:
        after.save()
        console.print(f"wrote {after.path}", markup=False, highlight=False, soft_wrap=True)
