"""GPU pods that run until stopped say how long they may sit idle, where idle ones are ended.

A tenant namespace that opts in to ending idle GPU pods carries its limit, in minutes, as the
label `gpu-platform.io/gpu-idle-minutes` (the platform sets it from the namespace's
`gpuIdleMinutes`), and the platform's job there ends every GPU pod whose GPUs have done no work
for that long: it deletes a bare pod, and scales a Deployment, StatefulSet or ReplicaSet to
zero. A pod may ask for less with the annotation `gpu-platform.io/max-idle-minutes`, which the
job reads (gpu_platform/kubernetes/idle_gpu_reaper.py).

In such a namespace of the stack, the GPU pods that run until someone stops them (bare Pods
that always restart, as notebooks and servers do; Deployments, StatefulSets, ReplicaSets) carry
that annotation on their pod (template): whoever writes the workload says in it when it will be
stopped, rather than finding out from a stopped notebook. Jobs, CronJobs and pods that run to
completion end on their own and are not held to it.
"""

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial

from checks import Findings
from gpu_workloads import is_gpu_pod
from pod_security import NAMESPACE_TYPE, namespace_resource
from pods import Pod, pods_of
from props import field_path, shown, text, value_at
from pulumi_policy import (
    EnforcementLevel,
    PolicyResource,
    ReportViolation,
    StackValidationArgs,
    StackValidationPolicy,
)

NAME = "gpu-pods-declare-max-idle"
LIMIT_LABEL = "gpu-platform.io/gpu-idle-minutes"
MAX_IDLE_ANNOTATION = "gpu-platform.io/max-idle-minutes"
# The job's own least (MIN_IDLE_MINUTES of gpu_platform/kubernetes/idle_gpu_reaper.py, which the
# pack, run on its own, cannot import): it takes no shorter annotation.
MIN_IDLE_MINUTES = 15
RUN_UNTIL_STOPPED = ("Pod", "Deployment", "StatefulSet", "ReplicaSet")
_WHOLE_NUMBER = re.compile(r"[0-9]+")


@dataclass(frozen=True)
class Limit:
    """A namespace's limit on idle GPU pods."""

    namespace: str
    minutes: int


def minutes_in(value: object, most: int | None = None) -> int | None:
    """`value` as whole minutes from `MIN_IDLE_MINUTES` to `most`, or None."""
    if not isinstance(value, str) or not _WHOLE_NUMBER.fullmatch(value):
        return None
    minutes = int(value)
    if minutes < MIN_IDLE_MINUTES or (most is not None and minutes > most):
        return None
    return minutes


def label_problems(namespace: PolicyResource) -> Iterator[str]:
    value = value_at(namespace.props, "metadata", "labels", LIMIT_LABEL)
    if value is not None and minutes_in(value) is None:
        yield (
            f"{field_path('metadata', 'labels', LIMIT_LABEL)}={shown(value)} is not a whole "
            f"number of minutes from {MIN_IDLE_MINUTES}, so no GPU pod in the namespace can say "
            "how long it may sit idle. Fix: set it as a whole number of minutes, such as "
            '"60" (the namespace\'s gpuIdleMinutes), or remove it.'
        )


def limit_of(name: str, namespace: PolicyResource) -> Limit | None:
    minutes = minutes_in(value_at(namespace.props, "metadata", "labels", LIMIT_LABEL))
    return None if minutes is None else Limit(name, minutes)


def runs_until_stopped(pod: Pod) -> bool:
    if pod.kind != "Pod":
        return pod.kind in RUN_UNTIL_STOPPED
    return text(pod.spec, "restartPolicy") in (None, "Always")


def annotation_problems(pod: Pod, limit: Limit) -> Iterator[str]:
    if not runs_until_stopped(pod) or not is_gpu_pod(pod):
        return
    field = pod.metadata_field("annotations", MAX_IDLE_ANNOTATION)
    value = value_at(pod.metadata, "annotations", MAX_IDLE_ANNOTATION)
    allowed = f"a whole number of minutes from {MIN_IDLE_MINUTES} to {limit.minutes}"
    where = (
        f'namespace "{limit.namespace}", where GPU pods idle for {limit.minutes} minutes are '
        f"ended ({LIMIT_LABEL})"
    )
    if value is None:
        yield (
            f"the GPU pod runs until stopped in {where}, and does not say how long it may sit "
            f"idle: {field} is missing. Fix: set it to {allowed}, such as "
            f'"{limit.minutes}"; once its GPUs have done no work for that long, the platform '
            "deletes the pod, or scales its Deployment, StatefulSet or ReplicaSet to 0."
        )
    elif minutes_in(value, limit.minutes) is None:
        yield (
            f"{field}={shown(value)} is not {allowed}, the range {where} allows. Fix: set it "
            f'to a value in that range, as a string such as "{limit.minutes}".'
        )


def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    namespaces = [r for r in args.resources if r.resource_type == NAMESPACE_TYPE]
    with Findings(NAME, "the stack", report_violation) as findings:
        for namespace in namespaces:
            findings.check(
                f"the idle limit of {namespace.urn}",
                partial(label_problems, namespace),
                namespace.urn,
            )
        for resource in args.resources:
            pods = [
                pod
                for pod in pods_of(resource.resource_type, resource.props)
                if not pod.partial and pod.kind in RUN_UNTIL_STOPPED
            ]
            if not pods:
                continue
            found = findings.known(
                f"the namespace of {resource.urn}",
                partial(namespace_resource, resource, namespaces),
                resource.urn,
            )
            if found is None:
                continue
            name, namespace = found
            if namespace is None:
                continue
            limit = findings.known(
                f"the idle limit of namespace {name}", partial(limit_of, name, namespace)
            )
            if limit is None:
                continue
            for pod in pods:
                findings.check(
                    f"the idle limit of {resource.urn}",
                    partial(annotation_problems, pod, limit),
                    resource.urn,
                )


POLICIES = [
    StackValidationPolicy(
        name=NAME,
        description="GPU pods that run until stopped, in a namespace that ends idle GPU pods, "
        f"say how long they may sit idle ({MAX_IDLE_ANNOTATION}).",
        validate=validate,
        enforcement_level=EnforcementLevel.MANDATORY,
    )
]
