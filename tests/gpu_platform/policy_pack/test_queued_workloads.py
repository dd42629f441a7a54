"""The stack policy that has GPU workloads in a namespace whose jobs Kueue queues go through its
queue; through the analyzer."""

from typing import Any

import pytest

from gpu_platform.config import QueuesSpec
from gpu_platform.kubernetes.kueue import manager_config
from tests.gpu_platform.policy_pack.builders import (
    Analyze,
    gpu_pod_spec,
    messages,
    namespace,
    resource,
    restricted_pod_spec,
    workload,
)

POLICY = "gpu-workloads-name-their-queue"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
# The built-in kinds Kueue queues under the integrations the platform enables: `batch/job`, and a
# CronJob's Jobs through it.
BUILT_IN = ["Job", "CronJob"]
# Kueue's integrations at v0.19.2 (`FrameworkName` in pkg/controller/jobs/*/*_controller.go and
# pkg/controller/jobs/kubeflow/jobs/*/*_controller.go), their objects' resource types and where
# their pods are, for the custom kinds the platform enables.
CUSTOM = {
    "kubeflow.org/mpijob": ("kubeflow.org/v2beta1:MPIJob", "mpiReplicaSpecs"),
    "kubeflow.org/pytorchjob": ("kubeflow.org/v1:PyTorchJob", "pytorchReplicaSpecs"),
    "kubeflow.org/tfjob": ("kubeflow.org/v1:TFJob", "tfReplicaSpecs"),
    "kubeflow.org/xgboostjob": ("kubeflow.org/v1:XGBoostJob", "xgbReplicaSpecs"),
    "kubeflow.org/jaxjob": ("kubeflow.org/v1:JAXJob", "jaxReplicaSpecs"),
    "kubeflow.org/paddlejob": ("kubeflow.org/v1:PaddleJob", "paddleReplicaSpecs"),
}


def queued(name: str = "team-a") -> Any:
    ns = namespace(name)
    ns.inputs["metadata"]["labels"]["gpu-platform.io/queue"] = "default"
    return ns


def labelled(resource: Any, queue: str) -> Any:
    if resource.type.endswith(":CronJob"):
        job = resource.inputs["spec"]["jobTemplate"]
        job.setdefault("metadata", {}).setdefault("labels", {})[QUEUE_LABEL] = queue
    else:
        resource.inputs["metadata"].setdefault("labels", {})[QUEUE_LABEL] = queue
    return resource


def replicated(type_: str, field: str, name: str = "train") -> Any:
    template = {"spec": gpu_pod_spec()}
    return resource(
        f"kubernetes:{type_}",
        name,
        {
            "metadata": {"name": name, "namespace": "team-a"},
            "spec": {field: {"Worker": {"replicas": 2, "template": template}}},
        },
    )


@pytest.mark.parametrize("kind", BUILT_IN)
@pytest.mark.parametrize("queue", [None, "default"])
def test_a_gpu_workload_kueue_queues_passes_unlabelled_or_naming_default(
    analyze: Analyze, kind: str, queue: str | None
) -> None:
    # Kueue labels an unlabelled object of a kind it manages with the namespace's `default`
    # LocalQueue (pkg/controller/jobframework/defaults.go at v0.19.2).
    resource = workload(kind, gpu_pod_spec())

    verdicts = analyze(queued(), resource if queue is None else labelled(resource, queue))

    assert messages(verdicts, POLICY) == []


@pytest.mark.parametrize("framework", sorted(CUSTOM))
def test_every_kubeflow_kind_kueue_manages_passes(analyze: Analyze, framework: str) -> None:
    # The rule's kinds and the manager's integrations are one list: each kind here passes
    # because its framework is on.
    assert framework in manager_config(QueuesSpec(enabled=True), [])["integrations"]["frameworks"]

    verdicts = analyze(queued(), replicated(*CUSTOM[framework]))

    assert messages(verdicts, POLICY) == []


def test_another_queue_is_refused_naming_the_field_and_the_fix(analyze: Analyze) -> None:
    verdicts = analyze(queued(), labelled(workload("Job", gpu_pod_spec()), "gpu"))

    assert messages(verdicts, POLICY) == [
        'the GPU workload runs in namespace "team-a", whose only queue is "default"'
        ' (gpu-platform.io/queue), and metadata.labels["kueue.x-k8s.io/queue-name"] is "gpu":'
        " Kueue holds it until a LocalQueue of that name exists, which the platform never"
        ' creates. Fix: remove metadata.labels["kueue.x-k8s.io/queue-name"] (Kueue then gives'
        ' it "default") or set it to "default" (docs/queues.md).'
    ]


def test_a_cronjob_names_the_queue_of_the_jobs_it_creates(analyze: Analyze) -> None:
    resource = workload("CronJob", gpu_pod_spec())
    resource.inputs["metadata"]["labels"] = {QUEUE_LABEL: "default"}
    resource.inputs["spec"]["jobTemplate"]["metadata"] = {"labels": {QUEUE_LABEL: "gpu"}}

    verdicts = analyze(queued(), resource)

    assert (
        'spec.jobTemplate.metadata.labels["kueue.x-k8s.io/queue-name"] is "gpu"'
        in messages(verdicts, POLICY)[0]
    )


def leader_worker_set() -> Any:
    template = {"spec": gpu_pod_spec()}
    return resource(
        "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet",
        "serve",
        {
            "metadata": {"name": "serve", "namespace": "team-a"},
            "spec": {"leaderWorkerTemplate": {"size": 2, "workerTemplate": template}},
        },
    )


@pytest.mark.parametrize(
    "unmanaged",
    [
        lambda: workload("DaemonSet", gpu_pod_spec(), name="agent"),
        lambda: workload("ReplicaSet", gpu_pod_spec(), name="rs"),
        lambda: replicated("batch.volcano.sh/v1alpha1:Job", "tasks"),
        # Kueue's pod-based integrations, which the platform leaves off: with them, every pod
        # of a queued namespace, CPU-only ones too, would be queued
        # (pkg/controller/jobs/pod/pod_webhook.go at v0.19.2).
        lambda: workload("Pod", gpu_pod_spec(), name="notebook"),
        lambda: workload("Deployment", gpu_pod_spec(), name="serve"),
        lambda: workload("StatefulSet", gpu_pod_spec(), name="serve"),
        leader_worker_set,
    ],
    ids=[
        "DaemonSet",
        "ReplicaSet",
        "Volcano Job",
        "Pod",
        "Deployment",
        "StatefulSet",
        "LeaderWorkerSet",
    ],
)
def test_a_gpu_kind_kueue_does_not_manage_is_refused(analyze: Analyze, unmanaged: Any) -> None:
    verdicts = analyze(queued(), labelled(unmanaged(), "default"))

    (message,) = messages(verdicts, POLICY)
    assert "Kueue does not manage a" in message
    assert message.endswith(
        "Fix: run it as one of the kinds Kueue queues, Job, MPIJob, PyTorchJob, TFJob,"
        " XGBoostJob, JAXJob, PaddleJob, RayJob, RayService, RayCluster, JobSet, AppWrapper,"
        " TrainJob, CronJob, or in a namespace without a queue (docs/queues.md)."
    )


def test_a_namespace_without_a_queue_holds_nothing(analyze: Analyze) -> None:
    verdicts = analyze(
        namespace("team-a"),
        labelled(workload("Job", gpu_pod_spec()), "gpu"),
        workload("DaemonSet", gpu_pod_spec(), name="agent"),
    )

    assert messages(verdicts, POLICY) == []


def test_workloads_without_gpus_and_templates_are_not_held(analyze: Analyze) -> None:
    verdicts = analyze(
        queued(),
        workload("Job", restricted_pod_spec(), name="cpu"),
        workload("DaemonSet", restricted_pod_spec(), name="agent"),
        workload("PodTemplate", gpu_pod_spec(), name="template"),
    )

    assert messages(verdicts, POLICY) == []
