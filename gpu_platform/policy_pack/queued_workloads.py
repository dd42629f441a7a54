"""GPU workloads in a queued tenant namespace go through its queue.

Where the stack turns Kueue on (`queues.enabled`), the platform labels each tenant namespace
`gpu-platform.io/queue` with the name of its LocalQueue, `default`, and Kueue admits the
namespace's jobs within the tenant's GPU quota, each whole (gpu_platform/kubernetes/kueue.py).
Kueue gives an object of a kind it manages that names no queue (no `kueue.x-k8s.io/queue-name`)
the namespace's `default` LocalQueue (`kueue_integrations`), so such a workload needs no label;
one that names another queue waits for a LocalQueue the namespace does not have.

A GPU workload of a kind Kueue does not manage (an Argo Workflow, a Volcano Job, a KServe
InferenceService, a DaemonSet, and the plain Pods, Deployments, StatefulSets and
LeaderWorkerSets whose integrations the platform leaves off: `kueue_integrations`) is never
queued whatever its labels: it starts at once beside the admitted jobs and takes GPUs Kueue
counted as free, so Kueue admits jobs whose pods the namespace's ResourceQuota refuses, and a
job starts with part of its pods. The rule refuses it and names the kinds Kueue queues, or a
namespace without a queue, where a GPU service belongs. Templates (PodTemplates, Trainer's
runtimes, KServe's serving runtimes, Argo's WorkflowTemplates) run nothing of their own and are
not held to it.
"""

from collections.abc import Iterator
from functools import partial

from checks import Findings
from gpu_workloads import is_gpu_pod
from kueue_integrations import TEMPLATES, THROUGH_JOBS, managed, supported_kinds
from pod_security import NAMESPACE_TYPE, namespace_resource
from pods import pods_of
from props import field_path, shown, text, value_at
from pulumi_policy import (
    EnforcementLevel,
    PolicyResource,
    ReportViolation,
    StackValidationArgs,
    StackValidationPolicy,
)
from type_tokens import kubernetes_type

NAME = "gpu-workloads-name-their-queue"
QUEUED_NAMESPACE_LABEL = "gpu-platform.io/queue"
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"


def group_and_kind(resource: PolicyResource) -> tuple[str, str]:
    """`("apps", "Deployment")` for a Deployment or its `...Patch`; ("", "") for another
    provider's type."""
    found = kubernetes_type(resource.resource_type)
    return ("", "") if found is None else (found.group, found.patched_kind)


def label_path(resource: PolicyResource) -> tuple[str, ...]:
    """Where the workload's queue label goes: a CronJob's on its Jobs, every other's its own."""
    labels = THROUGH_JOBS.get(group_and_kind(resource), ("metadata", "labels"))
    return (*labels, QUEUE_NAME_LABEL)


def queue_problems(resource: PolicyResource, namespace: str, queue: str) -> Iterator[str]:
    group, kind = group_and_kind(resource)
    if not managed(group, kind):
        yield (
            f'the GPU workload runs in namespace "{namespace}", whose jobs Kueue admits through'
            f' its queue "{queue}" ({QUEUED_NAMESPACE_LABEL}), and Kueue does not manage a'
            f" {group}/{kind}: it starts unqueued beside the admitted jobs and takes GPUs they"
            f" were counted. Fix: run it as one of the kinds Kueue queues, {supported_kinds()},"
            " or in a namespace without a queue (docs/queues.md)."
        )
        return
    path = label_path(resource)
    value = value_at(resource.props, *path)
    if value is None or value == queue:
        return
    yield (
        f'the GPU workload runs in namespace "{namespace}", whose only queue is "{queue}"'
        f" ({QUEUED_NAMESPACE_LABEL}), and {field_path(*path)} is {shown(value)}: Kueue"
        " holds it until a LocalQueue of that name exists, which the platform never creates."
        f' Fix: remove {field_path(*path)} (Kueue then gives it "{queue}") or set it to'
        f' "{queue}" (docs/queues.md).'
    )


def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    namespaces = [r for r in args.resources if r.resource_type == NAMESPACE_TYPE]
    with Findings(NAME, "the stack", report_violation) as findings:
        for resource in args.resources:
            pods = pods_of(resource.resource_type, resource.props)
            if not pods or group_and_kind(resource) in TEMPLATES:
                continue
            if not any(
                findings.known(f"the pods of {resource.urn}", partial(is_gpu_pod, p)) for p in pods
            ):
                continue
            found = findings.known(
                f"the namespace of {resource.urn}",
                partial(namespace_resource, resource, namespaces),
                resource.urn,
            )
            if found is None or found[1] is None:
                continue
            name, namespace = found
            queue = findings.known(
                f"the queue of namespace {name}",
                partial(text, namespace.props, "metadata", "labels", QUEUED_NAMESPACE_LABEL),
            )
            if queue is None:
                continue
            findings.check(
                f"the queue label of {resource.urn}",
                partial(queue_problems, resource, name, queue),
                resource.urn,
            )


POLICIES = [
    StackValidationPolicy(
        name=NAME,
        description="GPU workloads in a tenant namespace with a Kueue queue are of a kind Kueue "
        f"queues and name no other queue ({QUEUE_NAME_LABEL}).",
        validate=validate,
        enforcement_level=EnforcementLevel.MANDATORY,
    )
]
