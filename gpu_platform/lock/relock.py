"""Read the facts the stacks' plans need from their sources, from a program: `relock`.

The stacks named, or every stack of the project: then each section holds only what some stack
needs, and what none needs any longer is dropped. A fact whose source gives the value it gave
before keeps its entry, so that the file changes only where a fact moved. Everything within one
deadline, with preflight's retries (gpu_platform/deadline.py). Nothing is written:
`Relocked.after.save()` writes the new lock.
"""

from collections.abc import Sequence
from dataclasses import dataclass

from gpu_platform.config import ConfigError, StackConfig, load_stack_config
from gpu_platform.deadline import Deadline, DeadlinePassed
from gpu_platform.lock.lockfile import Lock, load, lock_path
from gpu_platform.lock.resolve import LockContext, Resolution, Resolver, Unresolved, updated
from gpu_platform.lock.resolvers import RESOLVERS
from gpu_platform.lock.sources import Sources
from gpu_platform.project import Project
from gpu_platform.stack_files import gpu_platform_config, stack_config


class StackNotLockable(Exception):
    """A stack named (or of the project) whose file cannot be read or whose configuration is
    invalid; the message names the stack."""


@dataclass(frozen=True)
class Relocked:
    """The lock before and after reading the facts, and what could not be read."""

    before: Lock
    after: Lock
    """What the lock holds now: what every resolver that finished read; past the deadline, the
    entries of the others as they were, with what the one it stopped had read merged in."""
    unread: tuple[Unresolved, ...]
    """The facts not read, each with whether that fails the run (`blocking`)."""
    warnings: tuple[str, ...]
    """About facts that were read (an image of a chart the platform does not know)."""
    late: str | None
    """Past the deadline, which source did not answer."""

    @property
    def complete(self) -> bool:
        """Every fact a stack needs was read, within the deadline."""
        return self.late is None and not any(u.blocking for u in self.unread)


def relock(
    stacks: Sequence[str],
    timeout_seconds: float,
    project: Project | None = None,
    resolvers: Sequence[Resolver] = RESOLVERS,
) -> Relocked:
    """Read the facts `stacks` (none: every stack of `project`, None: the one the current
    directory is in) need, within `timeout_seconds`. Raises `ProjectNotFound`, `LockError` for a
    lock file it cannot read, `StackNotLockable`, and `ConfigError` for a fact a stack's
    configuration makes impossible to read."""
    project = project or Project.find()
    configs = {name: _stack(name, project) for name in (stacks or project.stacks())}
    before = load(lock_path(project.directory))
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
    return Relocked(
        before,
        after,
        tuple(u for resolution in resolutions for u in resolution.unresolved),
        tuple(w for resolution in resolutions for w in resolution.warnings),
        late,
    )


def _stack(name: str, project: Project) -> StackConfig:
    try:
        return load_stack_config(*gpu_platform_config(stack_config(name, project)))
    except ConfigError as error:
        raise StackNotLockable(f"{name}: {error.report()}") from error
