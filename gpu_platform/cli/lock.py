"""`gpu-platform lock`: read the facts the stacks' plans need from their sources into the
project's lock file (gpu_platform/lock/, docs/lock.md).

The stacks named, or every stack of the project: then each section holds only what some stack
needs, and what none needs any longer is dropped. A fact whose source gives the value it gave
before keeps its entry, so that the file changes only where a fact moved. Everything within one
deadline, with preflight's retries (gpu_platform/deadline.py).

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
from gpu_platform.config import ConfigError, StackConfig, load_stack_config
from gpu_platform.deadline import Deadline, DeadlinePassed
from gpu_platform.lock.lockfile import Lock, LockError, load, lock_path
from gpu_platform.lock.resolve import LockContext, Resolution, Resolver, changes, updated
from gpu_platform.lock.resolvers import RESOLVERS
from gpu_platform.lock.sources import Sources
from gpu_platform.project import Project, ProjectNotFound
from gpu_platform.stack_files import StackFileError, gpu_platform_config, stack_config

EXIT_CHANGED = 1
EXIT_BAD_INPUT = 2
EXIT_UNRESOLVED = 4


def run(
    stacks: Sequence[str],
    check: bool,
    timeout_seconds: float,
    resolvers: Sequence[Resolver] = RESOLVERS,
) -> None:
    try:
        project = Project.find()
    except ProjectNotFound as error:
        fail(str(error), EXIT_BAD_INPUT)
    configs = {name: _stack(name, project) for name in (stacks or project.stacks())}
    path = lock_path(project.directory)
    try:
        before = load(path)
    except LockError as error:
        fail(str(error), EXIT_BAD_INPUT)
    sources = Sources(Deadline(timeout_seconds))
    done: list[tuple[Resolver, Resolution]] = []
    reading: list[tuple[Resolver, Resolution]] = []

    def resolve_all() -> None:
        for resolver in resolvers:
            context = LockContext(configs, sources, before)
            reading[:] = [(resolver, context.results)]
            done.append((resolver, resolver.resolve(context)))
            reading.clear()

    late = None
    try:
        sources.deadline.run(resolve_all, sources.calls)
    except DeadlinePassed as passed:
        late = f"gpu-platform lock: {passed.explain('the source')}"
    except ConfigError as error:
        fail(error.report(), EXIT_BAD_INPUT)
    # What each resolver that finished read is written, even past the deadline: the others'
    # entries stay as they were.
    finished = list(done)
    after = before
    for resolver, resolution in finished:
        after = updated(after, resolver, resolution, prune=not stacks)
    # The resolver's thread may still run past the deadline and clear `reading`: read it once.
    stopped = list(reading)
    if late is not None and stopped:
        # The one the deadline stopped: what it had read is merged in, nothing dropped. Its
        # thread may still be adding entries: each section is copied at once.
        resolver, partial = stopped[0]
        read = Resolution({s: dict(e) for s, e in list(partial.entries.items())})
        after = updated(after, resolver, read, prune=False)
    resolutions = [resolution for _, resolution in finished]
    unread = [u for resolution in resolutions for u in resolution.unresolved]
    unresolved = [u for u in unread if u.blocking]
    for fact in unread:
        prefix = "could not read" if fact.blocking else "warning: left as it was,"
        errors.print(f"{prefix} {fact.describe()}", markup=False, highlight=False, soft_wrap=True)
    for warning in (w for resolution in resolutions for w in resolution.warnings):
        errors.print(f"warning: {warning}", markup=False, highlight=False, soft_wrap=True)
    if late is not None:
        errors.print(late, markup=False, highlight=False, soft_wrap=True)
    complete = not unresolved and late is None
    _write_or_report(before, after, check, complete=complete, left=len(unread))
    # --check cannot say the lock is up to date while facts it did not read may have moved.
    if not complete or (check and unread):
        raise typer.Exit(EXIT_UNRESOLVED)
    if check and after != before:
        raise typer.Exit(EXIT_CHANGED)


def _stack(name: str, project: Project) -> StackConfig:
    try:
        return load_stack_config(*gpu_platform_config(stack_config(name, project)))
    except (FileNotFoundError, StackFileError) as unreadable:
        fail(str(unreadable), EXIT_BAD_INPUT)
    except ConfigError as error:
        fail(f"{name}: {error.report()}", EXIT_BAD_INPUT)


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
