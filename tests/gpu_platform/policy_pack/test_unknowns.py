"""A value not known yet at preview hides nothing else: each pod template, container, init
container and ephemeral container is judged on its own, and an unknown value skips only the
checks that read it, there, with a note naming the field (checks.each).

Each case is one the pack used to get wrong: a check stopped at the first unknown value, and
all of a resource's pods shared one check."""

from collections.abc import Callable
from typing import Any

from tests.gpu_platform.policy_pack.builders import (
    UNKNOWN,
    Analyze,
    gpu_pod_spec,
    messages,
    namespace,
    resource,
    restricted_pod_spec,
    workload,
)

Notes = Callable[[], list[str]]
PSS = "pod-security-standards"
PINNED = "gpu-pods-pinned-images"
FROM_TEAM_A = '[Pod Security restricted v1.35, from namespace "team-a"]'


def second_container(spec: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """`spec` with a second container, `sidecar`, a copy of the first with `changes`."""
    sidecar = {**spec["containers"][0], "name": "sidecar", **changes}
    spec["containers"].append(sidecar)
    return spec


def test_an_unknown_image_hides_no_other_containers_latest_tag(analyze: Analyze) -> None:
    spec = second_container(gpu_pod_spec(), image="registry.example.com/tools:latest")
    spec["containers"][0]["image"] = UNKNOWN

    verdicts = analyze(namespace(), workload("Deployment", spec))

    assert messages(verdicts, PINNED) == [
        'container "sidecar" image "registry.example.com/tools:latest" '
        "(spec.template.spec.containers[1].image) uses the latest tag. Fix: pin a version tag "
        "or a digest (image@sha256:...), so every node runs the same image."
    ]


def test_an_unknown_security_context_hides_no_other_privileged_container(
    analyze: Analyze,
) -> None:
    spec = restricted_pod_spec()
    spec = second_container(spec, securityContext={**spec["containers"][0]["securityContext"]})
    spec["containers"][1]["securityContext"]["privileged"] = True
    spec["containers"][0]["securityContext"] = UNKNOWN

    verdicts = analyze(namespace(), workload("Deployment", spec))

    assert messages(verdicts, PSS) == [
        'privileged: container "sidecar" sets '
        "spec.template.spec.containers[1].securityContext.privileged=true. Fix: remove "
        f"privileged or set it to false. {FROM_TEAM_A}"
    ]


def test_an_unknown_pod_run_as_user_hides_no_container_running_as_root(
    analyze: Analyze, new_notes: Notes
) -> None:
    spec = restricted_pod_spec()
    spec["securityContext"]["runAsUser"] = UNKNOWN
    spec["containers"][0]["securityContext"]["runAsUser"] = 0
    deployment = workload("Deployment", spec)

    verdicts = analyze(namespace(), deployment)

    assert messages(verdicts, PSS) == [
        'runAsUser=0: container "app" sets '
        "spec.template.spec.containers[0].securityContext.runAsUser=0. Fix: remove runAsUser or "
        f"set a non-zero user ID. {FROM_TEAM_A}"
    ]
    (note,) = [n for n in new_notes() if PSS in n]
    assert note == (
        f'policy "{PSS}" skipped checks on {deployment.urn} until values are known: runAsUser: '
        "spec.template.spec.securityContext: string value at "
        ".spec.template.spec.securityContext.runAsUser can't be known during preview"
    )


def test_an_unknown_container_hides_no_init_or_ephemeral_container(analyze: Analyze) -> None:
    spec = restricted_pod_spec()
    spec["containers"].insert(0, UNKNOWN)
    spec["initContainers"] = [
        {"name": "setup", "image": "registry.example.com/setup:1", "securityContext": {}}
    ]
    spec["ephemeralContainers"] = [
        {
            "name": "debug",
            "image": "registry.example.com/debug:1",
            "securityContext": {
                "allowPrivilegeEscalation": False,
                "capabilities": {"drop": ["ALL"], "add": ["SYS_PTRACE"]},
            },
        }
    ]

    verdicts = analyze(namespace(), workload("Deployment", spec))

    # At restricted, capabilities_restricted takes over from capabilities_baseline.
    assert messages(verdicts, PSS) == [
        'allowPrivilegeEscalation != false: init container "setup" does not set '
        "spec.template.spec.initContainers[0].securityContext.allowPrivilegeEscalation=false. "
        "Fix: set securityContext.allowPrivilegeEscalation: false on the container. "
        f"{FROM_TEAM_A}",
        'unrestricted capabilities: init container "setup" does not drop ALL in '
        "spec.template.spec.initContainers[0].securityContext.capabilities.drop. Fix: set "
        f'securityContext.capabilities.drop: ["ALL"]. {FROM_TEAM_A}',
        'unrestricted capabilities: ephemeral container "debug" adds "SYS_PTRACE" in '
        "spec.template.spec.ephemeralContainers[0].securityContext.capabilities.add. Fix: add at "
        f"most NET_BIND_SERVICE. {FROM_TEAM_A}",
    ]


def ray_cluster(head: dict[str, Any], worker: dict[str, Any]) -> Any:
    # ray-project/kuberay v1.7.0 ray-operator/apis/ray/v1/raycluster_types.go:
    # spec.headGroupSpec.template and spec.workerGroupSpecs[].template, PodTemplateSpecs.
    return resource(
        "kubernetes:ray.io/v1:RayCluster",
        "ray",
        {
            "metadata": {"name": "ray", "namespace": "team-a"},
            "spec": {
                "headGroupSpec": {"template": {"metadata": {}, "spec": head}},
                "workerGroupSpecs": [
                    {"groupName": "gpu", "template": {"metadata": {}, "spec": worker}}
                ],
            },
        },
    )


def test_an_unknown_ray_head_image_hides_no_worker_latest_tag(
    analyze: Analyze, new_notes: Notes
) -> None:
    head = gpu_pod_spec()
    head["containers"][0]["image"] = UNKNOWN
    worker = gpu_pod_spec()
    worker["containers"][0]["image"] = "rayproject/ray-ml:latest"
    cluster = ray_cluster(head, worker)

    verdicts = analyze(namespace(), cluster)

    assert messages(verdicts, PINNED) == [
        'container "app" image "rayproject/ray-ml:latest" '
        "(spec.workerGroupSpecs[0].template.spec.containers[0].image) uses the latest tag. Fix: "
        "pin a version tag or a digest (image@sha256:...), so every node runs the same image."
    ]
    (note,) = [n for n in new_notes() if PINNED in n]
    assert "spec.headGroupSpec.template: spec.headGroupSpec.template.spec.containers[0]" in note


def test_an_unknown_worker_group_hides_nothing_of_the_other_groups(analyze: Analyze) -> None:
    worker = restricted_pod_spec()
    worker["hostNetwork"] = True
    cluster = ray_cluster(restricted_pod_spec(), worker)
    groups = cluster.inputs["spec"]["workerGroupSpecs"]
    cluster.inputs["spec"]["workerGroupSpecs"] = [UNKNOWN, *groups]

    verdicts = analyze(namespace(), cluster)

    assert messages(verdicts, PSS) == [
        "host namespaces: pod sets spec.workerGroupSpecs[1].template.spec.hostNetwork=true. Fix: "
        f"remove hostNetwork or set it to false. {FROM_TEAM_A}"
    ]


def test_an_unknown_volume_hides_no_host_path_volume(analyze: Analyze) -> None:
    spec = restricted_pod_spec()
    spec["volumes"] = [UNKNOWN, {"name": "node", "hostPath": {"path": "/var/run"}}]

    verdicts = analyze(namespace(), workload("Deployment", spec))

    assert messages(verdicts, PSS) == [
        'restricted volume types: volume "node" uses hostPath '
        "(spec.template.spec.volumes[1].hostPath). Fix: use only configMap, csi, downwardAPI, "
        "emptyDir, ephemeral, image, persistentVolumeClaim, projected, secret volumes. "
        f"{FROM_TEAM_A}"
    ]
