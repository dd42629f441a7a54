"""`platform-images-by-digest`: the platform's own pods and Helm values name their images by
digest; a stack's own workloads are not its to judge."""

from dataclasses import replace
from typing import Any

from tests.gpu_platform.policy_pack.builders import (
    OPERATOR_PARENTS,
    PLATFORM,
    RELEASE,
    Analyze,
    gpu_operator_release,
    messages,
    resource,
    restricted_pod_spec,
    urn,
    workload,
)

POLICY = "platform-images-by-digest"
DIGEST = "sha256:" + "3c" * 32
PYTHON = "docker.io/library/python:3.13.9-slim-trixie"
REMOVER_PARENTS = (*OPERATOR_PARENTS, "gpu-platform:kubernetes:MigStartupTaintRemover")


def platform_workload(image: str, init_image: str | None = None) -> Any:
    """The MIG startup taint remover's Deployment, as the operator's component declares it."""
    spec = restricted_pod_spec()
    spec["containers"][0]["image"] = image
    if init_image is not None:
        spec["initContainers"] = [{**spec["containers"][0], "name": "init", "image": init_image}]
    found = workload("Deployment", spec, name="remover", namespace="gpu-operator")
    return replace(found, urn=urn(found.type, found.name, REMOVER_PARENTS))


def autoscaler(tag: str) -> Any:
    values = {"image": {"repository": "registry.k8s.io/autoscaling/cluster-autoscaler", "tag": tag}}
    return resource(
        RELEASE,
        "cluster-autoscaler",
        {
            "name": "cluster-autoscaler",
            "namespace": "gpu-platform-system",
            "chart": "cluster-autoscaler",
            "version": "9.59.0",
            "repositoryOpts": {"repo": "https://kubernetes.github.io/autoscaler"},
            "values": values,
        },
        parents=(PLATFORM, "gpu-platform:eks:ClusterAutoscaler"),
    )


def operator(toolkit: str, version: str = f"v26.7.0@{DIGEST}") -> Any:
    values = {
        "toolkit": {"repository": "", "image": toolkit, "version": ""},
        "operator": {"repository": "nvcr.io/nvidia", "image": "gpu-operator", "version": version},
    }
    release = gpu_operator_release()
    release.inputs["values"] = values
    return release


def test_a_platform_pods_image_by_tag_alone_is_reported_with_the_command(
    analyze: Analyze,
) -> None:
    (message,) = messages(analyze(platform_workload(PYTHON)), POLICY)

    assert message == (
        'container "app" (spec.template.spec.containers[0].image): the platform\'s image'
        f' "{PYTHON}" has no digest. Fix: run `gpu-platform lock` to read its digest into the'
        f' lock, or list "{PYTHON}" in awaitingDigests while its registry cannot be read.'
    )


def test_init_containers_are_judged_too(analyze: Analyze) -> None:
    verdicts = analyze(platform_workload(f"{PYTHON}@{DIGEST}", init_image=PYTHON))

    assert [m.split(": ")[0] for m in messages(verdicts, POLICY)] == [
        'init container "init" (spec.template.spec.initContainers[0].image)'
    ]


def test_a_platform_image_by_digest_passes(analyze: Analyze) -> None:
    assert messages(analyze(platform_workload(f"{PYTHON}@{DIGEST}")), POLICY) == []


def test_an_image_awaiting_its_digest_passes_by_tag(analyze: Analyze) -> None:
    config = {POLICY: {"awaitingDigests": [PYTHON]}}

    assert messages(analyze(platform_workload(PYTHON), config=config), POLICY) == []


def cos_driver_installer(installer: dict[str, Any]) -> Any:
    """The DaemonSet of Google's COS driver installer manifest, as the platform's component
    declares it: GoogleCloudPlatform/container-engine-accelerators
    nvidia-driver-installer/cos/daemonset-preloaded.yaml at f2cf4197a5c3f0f20133be15d5fad8b7453beed5
    (gpu_platform/versions.py), its images (lines 78-79, 124 and 142)."""
    partition = "gcr.io/gke-release/nvidia-partition-gpu@sha256:" + (
        "de12f85ebfb4fb6c1893cd30c23aab662a72fa0448f97ef74fccb82d7522ef17"
    )
    pause = "gke.gcr.io/pause:3.8@sha256:" + (
        "880e63f94b145e46f1b1082bb71b85e21f16b99b180b9996407d61240ceb9830"
    )
    spec = {
        "initContainers": [installer, {"name": "partition-gpus", "image": partition}],
        "containers": [{"name": "pause", "image": pause}],
    }
    found = workload("DaemonSet", spec, name="nvidia-driver-installer", namespace="kube-system")
    parents = (PLATFORM, "gpu-platform:gke:CosDriverInstaller", "kubernetes:yaml/v2:ConfigFile")
    return replace(found, urn=urn(found.type, found.name, parents))


def test_the_cos_installers_preloaded_image_never_pulled_needs_no_digest(
    analyze: Analyze,
) -> None:
    installer = {
        "image": "cos-nvidia-installer:fixed",
        "imagePullPolicy": "Never",
        "name": "nvidia-driver-installer",
    }

    assert messages(analyze(cos_driver_installer(installer)), POLICY) == []
    # Pulled, it is judged as any other.
    (pulled,) = messages(
        analyze(cos_driver_installer({**installer, "imagePullPolicy": "Always"})), POLICY
    )
    assert pulled.startswith('init container "nvidia-driver-installer"')


def test_a_stacks_own_workload_is_not_judged(analyze: Analyze) -> None:
    spec = restricted_pod_spec()
    spec["containers"][0]["image"] = PYTHON

    assert messages(analyze(workload("Deployment", spec)), POLICY) == []


def test_helm_values_name_images_by_digest_in_an_image_map(analyze: Analyze) -> None:
    # The autoscaler chart renders `<repository>:<tag>` (templates/deployment.yaml, chart
    # 9.59.0): the digest goes after the tag.
    assert messages(analyze(autoscaler(f"v1.35.2@{DIGEST}")), POLICY) == []
    (message,) = messages(analyze(autoscaler("v1.35.2")), POLICY)
    assert message.startswith(
        "values.image: the platform's image \"registry.k8s.io/autoscaling/cluster-autoscaler:"
        'v1.35.2" has no digest.'
    )


def test_helm_values_name_images_by_digest_in_an_operands_image(analyze: Analyze) -> None:
    toolkit = "nvcr.io/nvidia/k8s/container-toolkit:v1.20.0"

    assert messages(analyze(operator(f"{toolkit}@{DIGEST}")), POLICY) == []
    (message,) = messages(analyze(operator(toolkit)), POLICY)
    assert message.startswith(f'values.toolkit.image: the platform\'s image "{toolkit}" has no')


def test_helm_values_name_images_by_digest_in_a_repository_image_version_triple(
    analyze: Analyze,
) -> None:
    # The GPU Operator chart renders `repository/image:version` (deployments/gpu-operator/
    # templates/_helpers.tpl at v26.7.0): the digest goes after the tag in `version`.
    toolkit = f"nvcr.io/nvidia/k8s/container-toolkit:v1.20.0@{DIGEST}"

    assert messages(analyze(operator(toolkit)), POLICY) == []
    (message,) = messages(analyze(operator(toolkit, version="v26.7.0")), POLICY)
    assert message.startswith(
        'values.operator.version: the platform\'s image "nvcr.io/nvidia/gpu-operator:v26.7.0"'
        " has no digest."
    )


def test_the_rule_is_advisory_unless_a_stacks_config_makes_it_mandatory(analyze: Analyze) -> None:
    (advisory,) = [v for v in analyze(platform_workload(PYTHON)) if v.policy_name == POLICY]
    config = {"all": "mandatory"}
    (mandatory,) = [
        v for v in analyze(platform_workload(PYTHON), config=config) if v.policy_name == POLICY
    ]

    assert (advisory.enforcement_level, mandatory.enforcement_level) == ("advisory", "mandatory")
