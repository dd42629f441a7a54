"""A stack's own GPU workload kinds: custom resources whose pod templates the policies judge.

The pack knows where the common GPU workload CRDs keep their pod templates
(`pods.GPU_WORKLOAD_CRDS`); a platform that runs another operator names its kinds in the config
of `gpu-workload-kinds`, and every policy that judges pods reads them there too:

    "gpu-workload-kinds": {"podTemplates": {"example.com/TrainingRun": ["spec.workers.*.template"]}}

The policies each read only their own config, so the pack takes this one when it is configured
(`pack_config.watch_pack_config`), before any resource is analyzed.
"""

from collections.abc import Mapping
from typing import Any

from pods import CUSTOM_KINDS, custom_kinds_from
from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    StackValidationArgs,
    StackValidationPolicy,
)
from settings import Setting, config_schema

NAME = "gpu-workload-kinds"

POD_TEMPLATES = Setting(
    "podTemplates",
    {
        "type": "object",
        "additionalProperties": {"type": "array", "items": {"type": "string"}},
        "default": {},
        "description": 'Custom resource kinds as "<API group>/<kind>", each with the dotted '
        "paths of its pod templates (`*` for every element of a list or value of a map), judged "
        "like the built-in GPU workload kinds; an entry for one of those replaces it.",
    },
)


def configure(config: Mapping[str, Any]) -> None:
    """Take the kinds of the pack's new configuration."""
    kinds, _ = custom_kinds_from(POD_TEMPLATES.read(config))
    CUSTOM_KINDS.clear()
    CUSTOM_KINDS.update(kinds)


def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    _, problems = custom_kinds_from(POD_TEMPLATES.read(args.get_config()))
    for problem in problems:
        report_violation(
            f"podTemplates: {problem}. Until it is fixed, no policy reads that kind's pods.", None
        )


POLICY = StackValidationPolicy(
    name=NAME,
    description="The stack's own GPU workload kinds, whose pod templates every pod policy judges.",
    validate=validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    config_schema=config_schema(POD_TEMPLATES),
)
