"""What the pack could not check during preview, reported where a reviewer sees it.

During `pulumi preview` many inputs are not known yet (an ID a resource gets when it is
created, a value computed from another resource's outputs). A check that needs one is skipped
(checks.py), and this advisory policy says so, once per skipped check, against the
resource it concerns, with the policy and the field: the preview's Policies section then shows
what passed because it could not be judged, not only what failed. `pulumi up` analyzes each
resource again once its inputs are resolved, and the skipped checks run then.
"""

from checks import DEFERRED
from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    StackValidationArgs,
    StackValidationPolicy,
)

NAME = "checks-deferred-at-preview"


def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    # Only this stack's resources: a pack process that analyzed resources of an earlier run
    # without analyzing its stack (a harness reusing the process) must not report them here.
    urns = {resource.urn for resource in args.resources}
    deferred = [skipped for skipped in DEFERRED if skipped.urn in urns]
    DEFERRED.clear()
    for skipped in deferred:
        report_violation(
            f'policy "{skipped.policy}" could not check this at preview ({skipped.note}); it '
            "runs when the value is known, at pulumi up.",
            skipped.urn,
        )


POLICIES = [
    StackValidationPolicy(
        name=NAME,
        description="Checks that values unknown at preview kept a policy from making, listed per "
        "resource.",
        validate=validate,
        enforcement_level=EnforcementLevel.ADVISORY,
    )
]
