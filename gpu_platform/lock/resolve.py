"""What `gpu-platform lock` asks of each kind of fact: a resolver reads the facts of its
sections that the stacks need from their sources, and says which it could not read and why."""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from gpu_platform.config import StackConfig
from gpu_platform.lock.lockfile import Lock, LockEntry, Section
from gpu_platform.lock.sources import Sources


@dataclass(frozen=True)
class Unresolved:
    """A fact a resolver could not read, and why (no answer, 404, a format it does not read)."""

    section: Section
    key: str | None
    """None where the whole section could not be read (its one source did not answer)."""
    reason: str
    blocking: bool = True
    """Whether `lock` fails for it. False for a fact this run may leave as it was: one no
    stack's plan needs yet (a version GKE lists that no pool pins and no cluster is created at),
    or one left to a run that has what it needs (an image whose registry takes credentials this
    run was not given). Reported as a warning, and the command succeeds."""

    def describe(self) -> str:
        if self.key is None:
            return f"{self.section.name} (every entry): {self.reason}"
        return f'{self.section.name}["{self.key}"]: {self.reason}'


@dataclass
class Resolution:
    """What a resolver read: entries by section and key, and the facts it could not read."""

    entries: dict[Section, dict[str, LockEntry]] = field(default_factory=dict)
    unresolved: list[Unresolved] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    """What a fact read says the code should look at (an image of a chart the platform does not
    know): printed, while the fact is written as read; neither `lock` nor `--check` fails for
    it, as `uv lock --check` fails only for a lock that would change."""

    def add(self, section: Section, key: str, found: LockEntry) -> None:
        self.entries.setdefault(section, {})[key] = found

    def fail(self, section: Section, key: str, reason: str, blocking: bool = True) -> None:
        """A fact not read: its entry stays as it was; see `Unresolved.blocking`."""
        self.unresolved.append(Unresolved(section, key, reason, blocking))

    def warn(self, section: Section, key: str, message: str) -> None:
        self.warnings.append(f'{section.name}["{key}"]: {message}')

    def fail_section(self, section: Section, reason: str) -> None:
        """The whole section could not be read: the lock keeps it as it was."""
        self.unresolved.append(Unresolved(section, None, reason))


@dataclass(frozen=True)
class LockContext:
    """What the resolvers work from: the stacks named (their validated config, by name), the
    HTTP client that reads the sources, and the lock as it was (for facts that never change
    once read, which a source may stop listing)."""

    stacks: Mapping[str, StackConfig]
    sources: Sources
    previous: Lock = field(default_factory=Lock)
    results: Resolution = field(default_factory=Resolution)
    """Where a resolver may add what it reads as it reads it (and return it): past the deadline
    `lock` writes the entries it holds, so that what was read is kept."""


@dataclass(frozen=True)
class Resolver:
    """A kind of fact: the sections it fills, and how."""

    sections: Sequence[Section]
    resolve: Callable[[LockContext], Resolution]


def updated(lock: Lock, resolver: Resolver, resolution: Resolution, prune: bool) -> Lock:
    """`lock` with what the resolver read. With `prune` (every stack of the project was
    resolved) each of its sections holds only what the stacks need now; else the entries of
    other stacks stay. A fact that could not be read keeps the entry it had."""
    kept = {(u.section, u.key) for u in resolution.unresolved}
    for section in resolver.sections:
        if (section, None) in kept:
            continue
        entries = dict(resolution.entries.get(section, {}))
        before = lock.section(section)
        entries.update(
            {
                key: before[key]
                for s, key in kept
                if s == section and key is not None and key in before
            }
        )
        lock = lock.with_entries(section, entries, replace=prune)
    return lock


def changes(before: Lock, after: Lock) -> list[str]:
    """What a new lock changes, an entry a line: `+` added, `-` removed, `~` another value or
    source."""
    old = {(section.name, key): found for section, key, found in before.items()}
    new = {(section.name, key): found for section, key, found in after.items()}
    lines = []
    for name, key in sorted(old.keys() | new.keys()):
        was, now = old.get((name, key)), new.get((name, key))
        entry_name = f'{name}["{key}"]'
        if was is None and now is not None:
            lines.append(f"+ {entry_name}: {now.value}")
        elif now is None and was is not None:
            lines.append(f"- {entry_name}: {was.value}")
        elif was is not None and now is not None and not was.same_fact(now):
            lines.append(f"~ {entry_name}: {was.value} -> {now.value} ({now.source})")
    return lines
