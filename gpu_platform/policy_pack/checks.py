"""Running a policy's checks: what a check reports is a violation; a check that meets a value
not known yet (during preview) is skipped with a note, never reported as a violation.

The pack has no connection to the engine's log, so a note written to its log reaches only the
plugin's output. Each note is also kept in `DEFERRED`, and the advisory stack policy
`checks-deferred-at-preview` (preview.py) reports them once the engine analyzes the
stack, each against its resource: the preview's Policies section shows which rule could not
check which field. At `pulumi up` the engine analyzes each resource again with its inputs
resolved, and the skipped checks run.
"""

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from types import TracebackType
from typing import Any, TypeVar, cast

import pulumi
from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceRemediation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
)
from pulumi_policy.proxy import UnknownValueError
from settings import Setting, config_schema

T = TypeVar("T")


@dataclass(frozen=True)
class Deferred:
    """A check a policy could not make yet: which policy, on which resource (None: the stack),
    and what it needed."""

    policy: str
    urn: str | None
    note: str


DEFERRED: list[Deferred] = []
"""The checks skipped since the stack was last analyzed; one pack process serves one update."""


class Skipped(UnknownValueError):
    """The parts of a check that values not known yet kept it from judging, each named."""

    def __init__(self, notes: Sequence[str]) -> None:
        # Not UnknownValueError's own constructor, which describes one unknown value.
        Exception.__init__(self)
        self.unknown_type_sentinel = ""
        self.props: list[str] = []
        self.message = "; ".join(notes)


def each(
    items: Iterable[T], problems: Callable[[T], Iterable[str]], label: Callable[[T], str]
) -> Iterator[str]:
    """The problems of every item (a pod template, a container, a volume), each judged on its
    own: a value not known yet in one item skips only that item, whose `label` the note names,
    and the others' problems are still reported. The skipped items are raised last, together."""
    skipped: list[str] = []
    for item in items:
        try:
            # The problems found before an unknown value stay reported, as in Findings.check.
            yield from problems(item)
        except UnknownValueError as unknown:
            skipped.append(f"{label(item)}: {unknown.message}")
    if skipped:
        raise Skipped(skipped)


def parts(*labelled: tuple[str, Callable[[], Iterable[str]]]) -> Iterator[str]:
    """The parts of one check (a pod's own setting, its containers'), each judged on its own
    (`each`) and named by its label in a note."""
    return each(labelled, lambda part: part[1](), lambda part: part[0])


Problems = Callable[[ResourceValidationArgs], Iterable[str]]
Applies = Callable[[ResourceValidationArgs], bool]
Remediation = Callable[[ResourceValidationArgs], Mapping[str, Any] | None]


class Findings:
    """What one policy finds on one resource, or on a stack: its violations, and notes on the
    checks it skipped. The notes are logged on leaving the `with` block."""

    def __init__(
        self, policy: str, subject: str, report_violation: ReportViolation | None = None
    ) -> None:
        self.policy = policy
        self.subject = subject
        self._report = report_violation
        self._notes: list[str] = []
        self._deferred: list[Deferred] = []

    def __enter__(self) -> "Findings":
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        DEFERRED.extend(self._deferred)
        if self._notes:
            pulumi.log.info(
                f'policy "{self.policy}" skipped checks on {self.subject} until values are '
                f"known: {'; '.join(self._notes)}"
            )

    def check(
        self, what: str, problems: Callable[[], Iterable[str]], urn: str | None = None
    ) -> None:
        """Report each problem `problems()` yields, against `urn` in a stack policy. A value not
        known yet stops the check with a note, against `urn` too; the problems found before it
        stay reported."""
        assert self._report is not None, "a check needs somewhere to report violations"
        try:
            for problem in problems():
                self._report(problem, urn)
        except UnknownValueError as unknown:
            self._note(f"{what}: {unknown.message}", urn)

    def known(self, what: str, compute: Callable[[], T], urn: str | None = None) -> T | None:
        """`compute()`, or None with a note (against `urn` in a stack policy) when it needs a
        value not known yet."""
        try:
            return compute()
        except UnknownValueError as unknown:
            self._note(f"{what}: {unknown.message}", urn)
            return None

    def _note(self, note: str, urn: str | None) -> None:
        """A skipped check: logged, and reported by `checks-deferred-at-preview` against its
        resource (a stack policy's note without one concerns no resource in particular)."""
        self._notes.append(note)
        if urn is None and self.subject.startswith("urn:"):
            urn = self.subject
        self._deferred.append(Deferred(self.policy, urn, note))


def _validate(
    name: str,
    resource_types: tuple[str, ...] | None,
    applies: Applies | None,
    problems: Sequence[Problems],
    args: ResourceValidationArgs,
    report_violation: ReportViolation,
) -> None:
    if resource_types is not None and args.resource_type not in resource_types:
        return
    with Findings(name, args.urn, report_violation) as findings:
        if applies is not None and not findings.known(name, partial(applies, args)):
            return
        for check in problems:
            findings.check(name, partial(check, args))


def resource_policy(
    name: str,
    description: str,
    problems: Problems | Sequence[Problems],
    *settings: Setting,
    resource_types: tuple[str, ...] | None = None,
    applies: Applies | None = None,
    enforcement_level: EnforcementLevel = EnforcementLevel.MANDATORY,
    remediate: Remediation | None = None,
) -> ResourceValidationPolicy:
    """A policy reporting what `problems(args)` yields for each resource of `resource_types`
    (every resource when None) for which `applies(args)`, configured by `settings`.

    `problems` may be several checks that read different fields: each runs on its own, so a
    value not known yet in one field skips only the checks that read it.
    """
    checks = [problems] if callable(problems) else list(problems)
    return ResourceValidationPolicy(
        name=name,
        description=description,
        validate=partial(_validate, name, resource_types, applies, checks),
        enforcement_level=enforcement_level,
        config_schema=config_schema(*settings) if settings else None,
        # The SDK types a remediation as returning an awaitable, but takes plain properties too.
        remediate=cast(ResourceRemediation | None, remediate),
    )
