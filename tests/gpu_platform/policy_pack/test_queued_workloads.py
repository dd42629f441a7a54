"""The stack policy that has GPU workloads in a namespace whose jobs Kueue queues name its queue;
through the analyzer."""

from typing import Any

import pytest

from tests.gpu_platform.policy_pack.builders import (
    Analyze,
    gpu_pod_spec,
    messages,
    namespace,
    restricted_pod_spec,
    workload,
)

POLICY = "gpu-workloads-name-their-queue"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


def queued(name: str = "team-a") -> Any:
    ns = namespace(name)
    ns.inputs["metadata"]["labels"]["gpu-platform.io/queue"] = "gpu"
    return ns


def labelled(resource: Any, queue: str) -> Any:
    if resource.type.endswith(":CronJob"):
        job = resource.inputs["spec"]["jobTemplate"]
        job.setdefault("metadata", {}).setdefault("labels", {})[QUEUE_LABEL] = queue
    else:
        resource.inputs["metadata"].setdefault("labels", {})[QUEUE_LABEL] = queue
    return resource


@pytest.mark.parametrize("kind", ["Job", "Pod", "Deployment", "StatefulSet", "CronJob"])
def test_a_gpu_workload_without_its_queue_is_refused(analyze: Analyze, kind: str) -> None:
    resource = workload(kind, gpu_pod_spec())

    verdicts = analyze(queued(), resource)

    (verdict,) = [v for v in verdicts if v.policy_name == POLICY]
    assert (verdict.enforcement_level, verdict.urn) == ("mandatory", resource.urn)


@pytest.mark.parametrize("kind", ["Job", "Pod", "Deployment", "StatefulSet", "CronJob"])
def test_a_gpu_workload_naming_the_namespaces_queue_passes(analyze: Analyze, kind: str) -> None:
    verdicts = analyze(queued(), labelled(workload(kind, gpu_pod_spec()), "gpu"))

    assert messages(verdicts, POLICY) == []


def test_the_message_names_the_field_the_queue_and_the_fix(analyze: Analyze) -> None:
    verdicts = analyze(queued(), workload("Job", gpu_pod_spec()))

    assert messages(verdicts, POLICY) == [
        'the GPU workload runs in namespace "team-a", whose jobs Kueue admits through its queue'
        ' "gpu" (gpu-platform.io/queue), and metadata.labels["kueue.x-k8s.io/queue-name"] is'
        " missing: Kueue leaves it alone, it starts beside the admitted jobs and takes GPUs they"
        ' were counted. Fix: set metadata.labels["kueue.x-k8s.io/queue-name"] to "gpu"'
        " (docs/queues.md)."
    ]


def test_another_queue_is_refused(analyze: Analyze) -> None:
    verdicts = analyze(queued(), labelled(workload("Job", gpu_pod_spec()), "other"))

    assert len(messages(verdicts, POLICY)) == 1


def test_a_cronjob_names_the_queue_of_the_jobs_it_creates(analyze: Analyze) -> None:
    resource = workload("CronJob", gpu_pod_spec())
    resource.inputs["metadata"]["labels"] = {QUEUE_LABEL: "gpu"}

    verdicts = analyze(queued(), resource)

    assert (
        'spec.jobTemplate.metadata.labels["kueue.x-k8s.io/queue-name"]'
        in messages(verdicts, POLICY)[0]
    )


def test_a_namespace_without_a_queue_holds_nothing(analyze: Analyze) -> None:
    verdicts = analyze(namespace("team-a"), workload("Job", gpu_pod_spec()))

    assert messages(verdicts, POLICY) == []


def test_workloads_without_gpus_and_daemonsets_are_not_held(analyze: Analyze) -> None:
    verdicts = analyze(
        queued(),
        workload("Job", restricted_pod_spec(), name="cpu"),
        workload("DaemonSet", gpu_pod_spec(), name="agent"),
    )

    assert messages(verdicts, POLICY) == []
