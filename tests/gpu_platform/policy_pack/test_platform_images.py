"""`platform-images-by-digest`: the platform's own pods and Helm values name their images by
digest; a stack's own workloads are not its to judge."""

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from gpu_platform.kubernetes.canary_gate import GATE_NAME_PREFIX
from gpu_platform.kubernetes.idle_gpu_pods import REAPER_NAMESPACE
from gpu_platform.kubernetes.mig_startup_taint import NAME as MIG_REMOVER
from gpu_platform.kubernetes.monitoring import GKE_DCGM_EXPORTER
from gpu_platform.kubernetes.node_validation.workload import NAME as NODE_VALIDATOR
from gpu_platform.kubernetes.operand_images import operand_images
from gpu_platform.kubernetes.tenant_namespace import SMOKE_TEST_NAME
from gpu_platform.platform_images import GPU_OPERATOR_IMAGE_REPOSITORY
from gpu_platform.policy_pack.platform_objects import PLATFORM_OBJECTS
from gpu_platform.versions import (
    CANARY_GATE_CHECK_IMAGE,
    GPU_OPERATOR_CHART,
    GPU_SMOKE_TEST_IMAGE,
    IDLE_GPU_REAPER_IMAGE,
    MIG_STARTUP_TAINT_REMOVER_IMAGE,
    NODE_VALIDATOR_DCGM_IMAGE,
    NODE_VALIDATOR_IMAGE,
    NODE_VALIDATOR_NCCL_TESTS_IMAGE,
)
from tests.gpu_platform.policy_pack.builders import (
    KIND_TYPES,
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
from tests.repository import STACKS
from tests.shared_plans import shared_plan

POLICY = "platform-images-by-digest"
DIGEST = "sha256:" + "3c" * 32
PYTHON = "docker.io/library/python:3.13.9-slim-trixie"


def platform_workload(image: str, init_image: str | None = None) -> Any:
    """The MIG startup taint remover's Deployment, by the name the platform gives it
    (gpu_platform/kubernetes/mig_startup_taint.py), declared under no component of the
    platform: the name, not the parents, makes it the platform's."""
    spec = restricted_pod_spec()
    spec["containers"][0]["image"] = image
    if init_image is not None:
        spec["initContainers"] = [{**spec["containers"][0], "name": "init", "image": init_image}]
    return workload("Deployment", spec, name=MIG_REMOVER, namespace="gpu-operator")


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


def test_a_stacks_own_image_in_a_platform_object_is_not_called_the_platforms(
    analyze: Analyze,
) -> None:
    # No lock run reads its digest, and awaitingDigests is the platform's reviewed list: the
    # message names neither, even where the list holds it.
    image = "registry.example.com/ml/train:1.0"
    config = {POLICY: {"awaitingDigests": [image]}}

    (message,) = messages(analyze(platform_workload(image), config=config), POLICY)

    assert message == (
        'container "app" (spec.template.spec.containers[0].image): image'
        f' "{image}" has no digest, in an object of a name the platform gives its own, which'
        " runs images by digest. Fix: pin its digest (image:tag@sha256:...)."
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


def test_a_stacks_own_workload_is_not_judged_whatever_parent_types_it_claims(
    analyze: Analyze,
) -> None:
    spec = restricted_pod_spec()
    spec["containers"][0]["image"] = PYTHON
    own = workload("Deployment", spec)
    # A program registers whatever parent types it likes (pulumi sdk/go/common/resource/urn.go).
    forged = replace(own, urn=urn(own.type, own.name, (PLATFORM, "gpu-platform:mine:Anything")))

    assert messages(analyze(own), POLICY) == []
    assert messages(analyze(forged), POLICY) == []


def test_the_table_names_the_platforms_objects_and_images_as_its_code_names_them() -> None:
    smoke, check = GPU_SMOKE_TEST_IMAGE.repository, CANARY_GATE_CHECK_IMAGE.repository
    validator = (NODE_VALIDATOR_IMAGE, NODE_VALIDATOR_DCGM_IMAGE, NODE_VALIDATOR_NCCL_TESTS_IMAGE)
    exporter = operand_images(GPU_OPERATOR_CHART.version)["dcgmExporter"].partition(":")[0]
    assert {
        (o.kind, o.name, o.namespace, o.prefix, frozenset(o.repositories)) for o in PLATFORM_OBJECTS
    } == {
        ("Job", SMOKE_TEST_NAME, None, False, frozenset({smoke})),
        ("Job", GATE_NAME_PREFIX, None, True, frozenset({smoke, check})),
        (
            "DaemonSet",
            GKE_DCGM_EXPORTER,
            None,
            False,
            frozenset({exporter, GPU_OPERATOR_IMAGE_REPOSITORY}),
        ),
        (
            "Deployment",
            MIG_REMOVER,
            None,
            False,
            frozenset({MIG_STARTUP_TAINT_REMOVER_IMAGE.repository}),
        ),
        ("DaemonSet", f"{NODE_VALIDATOR}-", None, True, frozenset(i.repository for i in validator)),
        ("CronJob", None, REAPER_NAMESPACE, False, frozenset({IDLE_GPU_REAPER_IMAGE.repository})),
        # GoogleCloudPlatform/container-engine-accelerators
        # nvidia-driver-installer/cos/daemonset-preloaded.yaml at the commit
        # gpu_platform/versions.py pins: metadata.name and metadata.namespace, and the
        # repositories of its images (lines 78-79, 124 and 142).
        (
            "DaemonSet",
            "nvidia-driver-installer",
            "kube-system",
            False,
            frozenset(
                {
                    "cos-nvidia-installer",
                    "gcr.io/gke-release/nvidia-partition-gpu",
                    "gke.gcr.io/pause",
                }
            ),
        ),
    }


def test_every_image_a_plan_runs_in_a_platform_object_is_of_its_entrys_repositories() -> None:
    def images(value: Any) -> Iterator[str]:
        if isinstance(value, dict):
            for key, item in value.items():
                if key in ("containers", "initContainers"):
                    yield from (container["image"] for container in item)
                else:
                    yield from images(item)
        elif isinstance(value, list):
            for item in value:
                yield from images(item)

    def repository(image: str) -> str:
        return image.partition("@")[0].rpartition(":")[0]

    seen: dict[tuple[str, str | None], set[str]] = {}
    for stack in STACKS:
        for found in shared_plan(stack).resources:
            if found.type not in KIND_TYPES.values():
                continue
            kind, metadata = found.type.rsplit(":", 1)[1], found.inputs.get("metadata", {})
            for entry in PLATFORM_OBJECTS:
                if entry.names(kind, metadata.get("name")) and entry.namespace in (
                    None,
                    metadata.get("namespace"),
                ):
                    repositories = {repository(image) for image in images(found.inputs)}
                    seen.setdefault((entry.kind, entry.name), set()).update(repositories)
                    assert repositories <= set(entry.repositories), (stack, found.name)

    # The committed stacks run a canary gate and node validation among them.
    assert set(seen) >= {("Job", GATE_NAME_PREFIX), ("DaemonSet", f"{NODE_VALIDATOR}-")}


@pytest.mark.parametrize("stack", STACKS)
def test_the_table_holds_every_pod_carrier_the_platform_declares_and_no_other(stack: str) -> None:
    # The plan's parent types, which the pack never reads, tell the test what the platform's
    # components declared.
    resources = shared_plan(stack).resources
    types = {r.urn: r.type for r in resources}
    parents = {r.urn: r.parent for r in resources}

    def declared_by_the_platform(urn: str | None) -> bool:
        while urn is not None:
            if types.get(urn, "").startswith("gpu-platform:"):
                return True
            urn = parents.get(urn)
        return False

    carriers = [r for r in resources if r.type in KIND_TYPES.values()]
    ours = {(r.type, r.name) for r in carriers if declared_by_the_platform(r.parent)}
    assert ours

    def in_table(found: Any) -> bool:
        kind = found.type.rsplit(":", 1)[1]
        metadata = found.inputs.get("metadata", {})
        return any(
            entry.names(kind, metadata.get("name"))
            and entry.namespace in (None, metadata.get("namespace"))
            for entry in PLATFORM_OBJECTS
        )

    assert {(r.type, r.name) for r in carriers if in_table(r)} == ours


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


def test_a_digest_after_what_is_no_image_reference_pins_nothing(analyze: Analyze) -> None:
    # A platform object's image holding a quote and line breaks before a valid
    # `@sha256:<digest>`: what comes before the `@` is no reference a runtime parses
    # (distribution/reference regexp.go). (In a platform release's values such a string already
    # makes the release the stack's own: platform_values.unsafe_scalars.)
    image = f'{PYTHON}"\n    privileged: true\n    x: "y@{DIGEST}'

    (message,) = messages(analyze(platform_workload(image)), POLICY)

    assert "is not an image reference ([registry/]name[:tag][@sha256:<64 hex>])" in message


def test_the_rule_is_advisory_unless_a_stacks_config_makes_it_mandatory(analyze: Analyze) -> None:
    (advisory,) = [v for v in analyze(platform_workload(PYTHON)) if v.policy_name == POLICY]
    config = {"all": "mandatory"}
    (mandatory,) = [
        v for v in analyze(platform_workload(PYTHON), config=config) if v.policy_name == POLICY
    ]

    assert (advisory.enforcement_level, mandatory.enforcement_level) == ("advisory", "mandatory")
