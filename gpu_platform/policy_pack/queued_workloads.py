"""GPU workloads in a queued tenant namespace name its queue.

Where the stack turns Kueue on (`queues.enabled`), the platform labels each tenant namespace
`gpu-platform.io/queue` with the name of its LocalQueue, and Kueue admits the namespace's jobs
within the tenant's GPU quota, each whole, once they name that queue with the label
`kueue.x-k8s.io/queue-name` (gpu_platform/kubernetes/kueue.py). A GPU workload that names none is
left alone by Kueue (its `manageJobsWithoutQueueName` is off), starts at once beside the
admitted ones and takes GPUs Kueue counted as free: Kueue then admits jobs whose pods the
namespace's ResourceQuota refuses, and a job starts with part of its pods.

Kueue reads the label on the object it manages: a Job, a Pod, a Deployment or StatefulSet
(its pod integrations), a JobSet, RayJob or PyTorchJob; for a CronJob, on the Jobs it creates
(`spec.jobTemplate.metadata.labels`). DaemonSets, ReplicaSets and bare pod templates are not
Kueue's and are not held to it.
"""

from collections.abc import Iterator
from functools import partial

from checks import Findings
from gpu_workloads import is_gpu_pod
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

NAME = "gpu-workloads-name-their-queue"
QUEUED_NAMESPACE_LABEL = "gpu-platform.io/queue"
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
NOT_KUEUES = ("DaemonSet", "ReplicaSet", "ReplicationController", "PodTemplate")


def label_path(resource: PolicyResource) -> tuple[str, ...]:
    """Where the workload's queue label goes: the CronJob's Jobs', every other's own."""
    kind = resource.resource_type.rpartition(":")[2].removesuffix("Patch")
    if kind == "CronJob":
        return ("spec", "jobTemplate", "metadata", "labels", QUEUE_NAME_LABEL)
    return ("metadata", "labels", QUEUE_NAME_LABEL)


def queue_problems(resource: PolicyResource, namespace: str, queue: str) -> Iterator[str]:
    path = label_path(resource)
    value = value_at(resource.props, *path)
    if value == queue:
        return
    found = "is missing" if value is None else f"is {shown(value)}"
    yield (
        f'the GPU workload runs in namespace "{namespace}", whose jobs Kueue admits through'
        f' its queue "{queue}" ({QUEUED_NAMESPACE_LABEL}), and {field_path(*path)} {found}:'
        " Kueue leaves it alone, it starts beside the admitted jobs and takes GPUs they were"
        f' counted. Fix: set {field_path(*path)} to "{queue}" (docs/queues.md).'
    )


def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    namespaces = [r for r in args.resources if r.resource_type == NAMESPACE_TYPE]
    with Findings(NAME, "the stack", report_violation) as findings:
        for resource in args.resources:
            pods = pods_of(resource.resource_type, resource.props)
            if not pods or pods[0].kind in NOT_KUEUES:
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
        description="GPU workloads in a tenant namespace with a Kueue queue name it "
        f"({QUEUE_NAME_LABEL}).",
        validate=validate,
        enforcement_level=EnforcementLevel.MANDATORY,
    )
]
