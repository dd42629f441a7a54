"""A stack's own GPU workload kinds: custom resources whose pod templates the policies judge.

The pack knows where the common GPU workload CRDs keep their pod templates
(`pods.GPU_WORKLOAD_CRDS`); a platform that runs another operator names its kinds in the config
of `gpu-workload-kinds`, pod templates, inline pod specs and container templates apart, and
every policy that judges pods reads them there too:

    "gpu-workload-kinds": {
      "podTemplates": {"example.com/TrainingRun": ["spec.workers.*.template"]},
      "podSpecs": {"serving.example.com/ModelServer": ["spec.server"]},
      "containerTemplates": {
        "example.com/Pipeline": {"spec.steps.*": ["container", "sidecars.*"]}
      }
    }

A container template is a step of a workflow engine that runs one container of its own fields
(Argo's `container` or `script`) beside the pod's other fields (`securityContext`, `volumes`,
`initContainers`): its entry names the templates, each with the paths from there to the
containers it runs.

A resource of a configured kind in which no configured path finds a pod is reported, not
passed over in silence.

The policies each read only their own config, so the pack takes this one when it is configured
(`pack_config.watch_pack_config`), before any resource is analyzed.
"""

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pods import CUSTOM_KINDS, PodPath, custom_kinds_from, found_pods
from pulumi_policy import (
    EnforcementLevel,
    PolicyResource,
    ReportViolation,
    StackValidationArgs,
    StackValidationPolicy,
)
from settings import Setting, config_schema
from type_tokens import api_group_and_kind

NAME = "gpu-workload-kinds"


_PATHS = {"type": "array", "items": {"type": "string"}}


def _kinds_setting(key: str, leads_to: str, paths: Mapping[str, Any] = _PATHS) -> Setting:
    return Setting(
        key,
        {
            "type": "object",
            "additionalProperties": paths,
            "default": {},
            "description": 'Custom resource kinds as "<API group>/<kind>", each with the dotted '
            f"paths of {leads_to} (`*` for every element of a list or value of a map), judged "
            "like the built-in GPU workload kinds; an entry for one of those replaces it.",
        },
    )


POD_TEMPLATES = _kinds_setting("podTemplates", "its pod templates")
POD_SPECS = _kinds_setting(
    "podSpecs",
    "the pod specs it holds inline, without a template's metadata (as KServe's predictor: "
    "spec.predictor)",
)
CONTAINER_TEMPLATES = _kinds_setting(
    "containerTemplates",
    "its templates that run containers of their own fields rather than a pod spec's list (as "
    "Argo Workflows' spec.templates.*, whose `container` or `script` is the one it runs), each "
    "with the dotted paths, from the template, of those containers; the template holds the "
    "pod's other fields (securityContext, volumes, initContainers, ...). A template in which no "
    "container path finds one is no pod",
    {"type": "object", "additionalProperties": _PATHS},
)


SETTINGS = (POD_TEMPLATES, POD_SPECS, CONTAINER_TEMPLATES)


def _kinds(
    config: Mapping[str, Any],
) -> tuple[dict[tuple[str, str], tuple[PodPath, ...]], list[str]]:
    return custom_kinds_from({s.key: s.read(config) for s in SETTINGS})


def configure(config: Mapping[str, Any]) -> None:
    """Take the kinds of the pack's new configuration."""
    kinds, _ = _kinds(config)
    CUSTOM_KINDS.clear()
    CUSTOM_KINDS.update(kinds)


def unmatched_problems(
    resources: Sequence[PolicyResource], kinds: Mapping[tuple[str, str], tuple[PodPath, ...]]
) -> Iterator[tuple[str, str]]:
    """Each resource of a configured kind in which no configured path finds a pod: nothing of
    it would be judged.

    A path that finds nothing while another finds a pod is not reported: a part the resource
    leaves out (a router it runs without) reads the same as a misspelt path, and refusing it would
    push the config to drop the part, which would then go unjudged the day a resource has it."""
    for resource in resources:
        key = api_group_and_kind(resource.resource_type)
        if key is None or key not in kinds:
            continue
        if not any(found_pods(resource.props, where) for where in kinds[key]):
            names = ", ".join(".".join(where.steps) for where in kinds[key])
            yield (
                f"no path configured for {key[0]}/{key[1]} ({names}) finds a pod in this "
                "resource, so no policy judges its pods. Fix: correct the paths in "
                f"{NAME}'s config (podTemplates for templates of metadata and spec, podSpecs "
                "for pod specs held inline, containerTemplates for templates that run "
                "containers of their own fields).",
                resource.urn,
            )


def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    kinds, problems = _kinds(args.get_config())
    for problem in problems:
        report_violation(f"{problem}. Until it is fixed, no policy reads that kind's pods.", None)
    # A path on the way to which a value is not known yet counts as found (pods.expand).
    for message, urn in unmatched_problems(args.resources, kinds):
        report_violation(message, urn)


POLICY = StackValidationPolicy(
    name=NAME,
    description="The stack's own GPU workload kinds, whose pod templates every pod policy judges.",
    validate=validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    config_schema=config_schema(*SETTINGS),
)
