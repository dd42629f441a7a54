"""GPU workloads that arrive as custom resources (KubeRay, Kubeflow, JobSet, LeaderWorkerSet)
are checked pod template by pod template, as the built-in kinds are."""

from typing import Any

import pytest

from tests.gpu_platform.policy_pack.builders import (
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


def training_run(pod: dict[str, Any]) -> Any:
    inputs = {
        "metadata": {"name": "train", "namespace": "team-a"},
        "spec": {"workers": [{"replicas": 2, "template": template(pod)}]},
    }
    return resource("kubernetes:example.com/v1:TrainingRun", "train", inputs)


OWN_KIND = {
    "gpu-workload-kinds": {"podTemplates": {"example.com/TrainingRun": ["spec.workers.*.template"]}}
}


def test_a_stack_names_its_own_gpu_workload_kind_in_the_pack_config(analyze: Analyze) -> None:
    run = training_run(privileged_spec())

    assert messages(analyze(namespace(), run), "pod-security-standards") == []
    (message,) = messages(analyze(namespace(), run, config=OWN_KIND), "pod-security-standards")
    assert message.startswith(
        'privileged: container "app" sets '
        "spec.workers[0].template.spec.containers[0].securityContext.privileged=true."
    )
    assert messages(analyze(namespace(), run), "pod-security-standards") == []


def test_the_gpu_rules_read_a_stacks_own_gpu_workload_kind(analyze: Analyze) -> None:
    spec = gpu_pod_spec()
    spec["containers"][0]["image"] = "registry.example.com/train:latest"

    verdicts = analyze(namespace(), training_run(spec), config=OWN_KIND)

    (message,) = messages(verdicts, "gpu-pods-pinned-images")
    assert "(spec.workers[0].template.spec.containers[0].image)" in message


def test_a_stacks_entry_replaces_the_built_in_one_for_its_kind(analyze: Analyze) -> None:
    config = {
        "gpu-workload-kinds": {
            "podTemplates": {"ray.io/RayCluster": ["spec.headGroupSpec.template"]}
        }
    }

    verdicts = analyze(namespace(), carrier("RayCluster", privileged_spec()), config=config)

    assert messages(verdicts, "pod-security-standards") == []


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        (
            {"TrainingRun": ["spec.template"]},
            '"TrainingRun" is not an API group and kind of a custom resource, such as '
            '"example.com/TrainingRun"',
        ),
        (
            {"apps/Deployment": ["spec.template"]},
            '"apps/Deployment" is not an API group and kind of a custom resource, such as '
            '"example.com/TrainingRun"',
        ),
        (
            {"example.com/TrainingRun": ["spec..template"]},
            '"example.com/TrainingRun" needs a list of dotted paths to its pod templates, such as '
            '["spec.workers.*.template"], not ["spec..template"]',
        ),
    ],
)
def test_an_unreadable_gpu_workload_kind_is_reported(
    analyze: Analyze, entry: dict[str, Any], problem: str
) -> None:
    verdicts = analyze(config={"gpu-workload-kinds": {"podTemplates": entry}})

    assert messages(verdicts, "gpu-workload-kinds") == [
        f"podTemplates: {problem}. Until it is fixed, no policy reads that kind's pods."
    ]
