"""GPU workloads that arrive as custom resources (KubeRay, Kubeflow, JobSet, LeaderWorkerSet)
are checked pod template by pod template, as the built-in kinds are."""

from typing import Any

import pytest

from tests.policies.builders import (
    Analyze,
    gpu_pod_spec,
    messages,
    namespace,
    resource,
    restricted_pod_spec,
)


def privileged_spec() -> dict[str, Any]:
    spec = restricted_pod_spec()
    spec["containers"][0]["securityContext"]["privileged"] = True
    return spec


def template(spec: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {}, "spec": spec}


def ray_cluster(worker: dict[str, Any]) -> dict[str, Any]:
    return {
        "headGroupSpec": {"template": template(restricted_pod_spec())},
        "workerGroupSpecs": [
            {"groupName": "cpu", "template": template(restricted_pod_spec())},
            {"groupName": "gpu", "template": template(worker)},
        ],
    }


# (type token, spec holding the privileged pod, where that pod's spec is in the resource)
CARRIERS = {
    "RayCluster": (
        "kubernetes:ray.io/v1:RayCluster",
        lambda pod: ray_cluster(pod),
        "spec.workerGroupSpecs[1].template.spec",
    ),
    "RayJob": (
        "kubernetes:ray.io/v1:RayJob",
        lambda pod: {"entrypoint": "python train.py", "rayClusterSpec": ray_cluster(pod)},
        "spec.rayClusterSpec.workerGroupSpecs[1].template.spec",
    ),
    "RayService": (
        "kubernetes:ray.io/v1:RayService",
        lambda pod: {"rayClusterConfig": ray_cluster(pod)},
        "spec.rayClusterConfig.workerGroupSpecs[1].template.spec",
    ),
    "PyTorchJob": (
        "kubernetes:kubeflow.org/v1:PyTorchJob",
        lambda pod: {
            "pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "template": template(restricted_pod_spec())},
                "Worker": {"replicas": 3, "template": template(pod)},
            }
        },
        "spec.pytorchReplicaSpecs.Worker.template.spec",
    ),
    "JobSet": (
        "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet",
        lambda pod: {
            "replicatedJobs": [
                {"name": "workers", "template": {"spec": {"template": template(pod)}}}
            ]
        },
        "spec.replicatedJobs[0].template.spec.template.spec",
    ),
    "LeaderWorkerSet": (
        "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet",
        lambda pod: {
            "leaderWorkerTemplate": {
                "leaderTemplate": template(restricted_pod_spec()),
                "workerTemplate": template(pod),
            }
        },
        "spec.leaderWorkerTemplate.workerTemplate.spec",
    ),
}


def carrier(kind: str, pod: dict[str, Any]) -> Any:
    type_, spec_for, _ = CARRIERS[kind]
    inputs = {"metadata": {"name": "train", "namespace": "team-a"}, "spec": spec_for(pod)}
    return resource(type_, "train", inputs)


@pytest.mark.parametrize("kind", CARRIERS)
def test_a_privileged_pod_in_a_gpu_workload_crd_is_refused(analyze: Analyze, kind: str) -> None:
    verdicts = analyze(namespace(), carrier(kind, privileged_spec()))

    (message,) = messages(verdicts, "pod-security-standards")
    where = CARRIERS[kind][2]
    assert message.startswith(
        f'privileged: container "app" sets {where}.containers[0].securityContext.privileged=true.'
    )


@pytest.mark.parametrize("kind", CARRIERS)
def test_a_gpu_pod_in_a_gpu_workload_crd_meets_the_gpu_rules(analyze: Analyze, kind: str) -> None:
    spec = gpu_pod_spec()
    spec["containers"][0]["image"] = "registry.example.com/train:latest"

    verdicts = analyze(namespace(), carrier(kind, spec))

    (message,) = messages(verdicts, "gpu-pods-pinned-images")
    assert f"({CARRIERS[kind][2]}.containers[0].image)" in message


def test_a_kind_of_the_same_name_in_another_group_is_not_read_as_one(analyze: Analyze) -> None:
    lookalike = resource(
        "kubernetes:example.com/v1:RayCluster",
        "train",
        {"metadata": {"namespace": "team-a"}, "spec": ray_cluster(privileged_spec())},
    )

    assert messages(analyze(namespace(), lookalike), "pod-security-standards") == []
