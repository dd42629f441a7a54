"""Running a policy's checks: what a check reports is a violation; a check that meets a value
not known yet (during preview) is skipped with a note, never reported as a violation.

The note goes to the pack's log, which the engine shows as information.
"""

from collections.abc import Callable, Iterable, Mapping
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
Problems = Callable[[ResourceValidationArgs], Iterable[str]]
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

    def __enter__(self) -> "Findings":
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._notes:
            pulumi.log.info(
                f'policy "{self.policy}" skipped checks on {self.subject} until values are '
                f"known: {'; '.join(self._notes)}"
            )

    def check(
        self, what: str, problems: Callable[[], Iterable[str]], urn: str | None = None
    ) -> None:
        """Report each problem `problems()` yields, against `urn` in a stack policy. A value not
        known yet stops the check with a note; the problems found before it stay reported."""
        assert self._report is not None, "a check needs somewhere to report violations"
        try:
            for problem in problems():
                self._report(problem, urn)
        except UnknownValueError as unknown:
            self._notes.append(f"{what}: {unknown.message}")

    def known(self, what: str, compute: Callable[[], T]) -> T | None:
        """`compute()`, or None with a note when it needs a value not known yet."""
        try:
            return compute()
        except UnknownValueError as unknown:
            self._notes.append(f"{what}: {unknown.message}")
            return None


def _validate(
    name: str,
    resource_types: tuple[str, ...] | None,
    problems: Problems,
    args: ResourceValidationArgs,
    report_violation: ReportViolation,
) -> None:
    if resource_types is not None and args.resource_type not in resource_types:
        return
    with Findings(name, args.urn, report_violation) as findings:
        findings.check(name, partial(problems, args))


def resource_policy(
    name: str,
    description: str,
    problems: Problems,
    *settings: Setting,
    resource_types: tuple[str, ...] | None = None,
    enforcement_level: EnforcementLevel = EnforcementLevel.MANDATORY,
    remediate: Remediation | None = None,
) -> ResourceValidationPolicy:
    """A policy reporting what `problems(args)` yields for each resource of `resource_types`
    (every resource when None), configured by `settings`."""
    return ResourceValidationPolicy(
        name=name,
        description=description,
        validate=partial(_validate, name, resource_types, problems),
        enforcement_level=enforcement_level,
        config_schema=config_schema(*settings) if settings else None,
        # The SDK types a remediation as returning an awaitable, but takes plain properties too.
        remediate=cast(ResourceRemediation | None, remediate),
    )
