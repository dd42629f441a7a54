"""The GPU workload policies: GPUs in limits, the GPU taint tolerated, GPU nodes selected, a
bounded number of GPUs, pinned images."""

import json
from typing import Any

import pytest

from gpu_platform.offline.analyzer import Verdict
from tests.gpu_platform.policy_pack.builders import (
    UNKNOWN,
    Analyze,
    gpu_pod_spec,
    messages,
    namespace,
    restricted_pod_spec,
    workload,
)
from tests.repository import ROOT

APP = "spec.template.spec.containers[0]"
PYTHON = "docker.io/library/python:3.13.9-slim-trixie"


def found(analyze: Analyze, policy: str, spec: dict[str, Any], **config: Any) -> list[str]:
    # maxGpusPerPod is one setting of gpu-pods-max-gpus and gpu-pods-max-claimed-gpus.
    shared = "gpu-pods-max-claimed-gpus" if policy == "gpu-pods-max-gpus" else policy
    given = {policy: config, shared: config} if config else None
    verdicts = analyze(namespace(), workload("Deployment", spec), config=given)
    return messages(verdicts, policy)


def limits(spec: dict[str, Any]) -> dict[str, Any]:
    resources: dict[str, Any] = spec["containers"][0]["resources"]
    return resources


GPU_POLICIES = (
    "gpu-resources-in-limits",
    "gpu-pods-tolerate-gpu-taint",
    "gpu-pods-select-gpu-nodes",
    "gpu-pods-max-gpus",
    "gpu-pods-pinned-images",
)


@pytest.mark.parametrize("policy", GPU_POLICIES)
def test_a_gpu_pod_done_right_passes(analyze: Analyze, policy: str) -> None:
    assert found(analyze, policy, gpu_pod_spec()) == []


@pytest.mark.parametrize("policy", GPU_POLICIES)
def test_pods_without_gpus_are_left_alone(analyze: Analyze, policy: str) -> None:
    spec = restricted_pod_spec()
    spec["containers"][0]["image"] = "busybox"

    assert found(analyze, policy, spec) == []


def test_a_gpu_request_without_a_limit_is_reported(analyze: Analyze) -> None:
    spec = gpu_pod_spec()
    spec["containers"][0]["resources"] = {"requests": {"nvidia.com/gpu.shared": 1}}

    assert found(analyze, "gpu-resources-in-limits", spec) == [
        f'container "app" asks for nvidia.com/gpu.shared in {APP}.resources.requests'
        '["nvidia.com/gpu.shared"] but sets no limit for it. Fix: set resources.limits'
        '["nvidia.com/gpu.shared"] to 1; Kubernetes takes a GPU request from its limit.'
    ]


def test_a_gpu_request_must_equal_its_limit(analyze: Analyze) -> None:
    spec = gpu_pod_spec("2")
    limits(spec)["requests"] = {"nvidia.com/gpu": "1"}

    assert found(analyze, "gpu-resources-in-limits", spec) == [
        f'container "app" sets {APP}.resources.requests["nvidia.com/gpu"]="1" but '
        'resources.limits["nvidia.com/gpu"]="2". Fix: set only the limit, or make the request '
        "equal to it: GPUs cannot be overcommitted."
    ]


def test_equal_quantities_in_other_spellings_are_equal(analyze: Analyze) -> None:
    spec = gpu_pod_spec("2")
    limits(spec)["requests"] = {"nvidia.com/gpu": 2}

    assert found(analyze, "gpu-resources-in-limits", spec) == []


def test_a_fraction_of_a_mig_slice_is_reported(analyze: Analyze) -> None:
    spec = gpu_pod_spec()
    limits(spec)["limits"] = {"nvidia.com/mig-1g.10gb": "500m"}

    assert found(analyze, "gpu-resources-in-limits", spec) == [
        f'container "app" sets {APP}.resources.limits["nvidia.com/mig-1g.10gb"]="500m", not a '
        "whole number of devices. Fix: ask for a whole number of GPUs (or GPU slices)."
    ]


def mig_pod_spec() -> dict[str, Any]:
    spec = gpu_pod_spec()
    spec["containers"][0]["resources"] = {"limits": {"nvidia.com/mig-1g.10gb": "1"}}
    return spec


def test_a_pod_asking_only_for_gpu_slices_must_tolerate_the_gpu_taint(analyze: Analyze) -> None:
    spec = mig_pod_spec()
    spec["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "true"}]

    assert found(analyze, "gpu-pods-tolerate-gpu-taint", spec) == [
        "the GPU pod does not tolerate the GPU nodes' taint nvidia.com/gpu=present:NoSchedule "
        "(spec.template.spec.tolerations), and asks only for GPU slices, for whose names the "
        "ExtendedResourceToleration admission plugin adds tolerations instead, so it cannot be "
        'scheduled on them. Fix: add the toleration {key: "nvidia.com/gpu", operator: "Exists", '
        'effect: "NoSchedule"}.'
    ]


def test_a_pod_asking_for_whole_gpus_gets_the_toleration_from_admission(analyze: Analyze) -> None:
    # EKS enables ExtendedResourceToleration on every platform version (EKS user guide,
    # "platform versions"); it adds nvidia.com/gpu:Exists:NoSchedule to a pod requesting it.
    spec = gpu_pod_spec()
    del spec["tolerations"]

    assert found(analyze, "gpu-pods-tolerate-gpu-taint", spec) == []


@pytest.mark.parametrize(
    "toleration",
    [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"},
        {"key": "nvidia.com/gpu", "value": "present"},
        {"key": "nvidia.com/gpu", "operator": "Exists"},
        {"operator": "Exists"},
    ],
    ids=["equal-present", "default-operator", "exists-any-effect", "tolerates-everything"],
)
def test_tolerations_that_match_the_taint_pass(
    analyze: Analyze, toleration: dict[str, str]
) -> None:
    spec = mig_pod_spec()
    spec["tolerations"] = [toleration]

    assert found(analyze, "gpu-pods-tolerate-gpu-taint", spec) == []


def test_a_gpu_pod_must_select_gpu_nodes(analyze: Analyze) -> None:
    spec = gpu_pod_spec()
    spec["nodeSelector"] = {"nvidia.com/gpu.product": "NVIDIA-L4"}

    assert found(analyze, "gpu-pods-select-gpu-nodes", spec) == [
        "the GPU pod selects no GPU nodes: neither spec.template.spec.nodeSelector nor a "
        "required node affinity names one of the labels gpu-platform.io/accelerator, "
        "gpu-platform.io/pool, nvidia.com/gpu.present, k8s.amazonaws.com/accelerator, "
        "cloud.google.com/gke-accelerator. Fix: select its pool, e.g. nodeSelector: "
        '{"gpu-platform.io/accelerator": "l4"}, so the autoscaler knows which pool to scale up '
        "from zero."
    ]


def _affinity(*terms: list[dict[str, Any]]) -> dict[str, Any]:
    required = {"nodeSelectorTerms": [{"matchExpressions": term} for term in terms]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}


def test_required_node_affinity_selects_gpu_nodes_when_every_term_does(analyze: Analyze) -> None:
    pool = [{"key": "gpu-platform.io/pool", "operator": "In", "values": ["l4-shared"]}]
    zone = [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]}]
    spec = gpu_pod_spec()
    del spec["nodeSelector"]

    spec["affinity"] = _affinity(pool)
    assert found(analyze, "gpu-pods-select-gpu-nodes", spec) == []
    spec["affinity"] = _affinity(pool, zone)
    assert len(found(analyze, "gpu-pods-select-gpu-nodes", spec)) == 1


def test_a_pod_asking_for_more_gpus_than_allowed_is_reported(analyze: Analyze) -> None:
    spec = gpu_pod_spec("4")
    spec["containers"].append({**spec["containers"][0], "name": "second"})

    assert found(analyze, "gpu-pods-max-gpus", spec, maxGpusPerPod=6) == [
        "the pod (spec.template.spec) asks for 8 GPUs, more than the 6 allowed per pod "
        "(maxGpusPerPod). Fix: ask for at most 6, or raise maxGpusPerPod if a node really has "
        "that many."
    ]
    assert found(analyze, "gpu-pods-max-gpus", spec) == []


def test_init_containers_run_before_the_app_so_their_gpus_do_not_add_up(analyze: Analyze) -> None:
    spec = gpu_pod_spec("2")
    spec["initContainers"] = [{**spec["containers"][0], "name": "warmup"}]

    assert found(analyze, "gpu-pods-max-gpus", spec, maxGpusPerPod=2) == []
    spec["initContainers"][0]["restartPolicy"] = "Always"  # a sidecar runs alongside
    assert len(found(analyze, "gpu-pods-max-gpus", spec, maxGpusPerPod=2)) == 1


@pytest.mark.parametrize(
    ("image", "problem"),
    [
        ("nvcr.io/nvidia/cuda", "has no tag, so it means latest"),
        ("registry.local:5000/train", "has no tag, so it means latest"),
        ("pytorch/pytorch:latest", "uses the latest tag"),
    ],
)
def test_gpu_pod_images_must_be_pinned(analyze: Analyze, image: str, problem: str) -> None:
    spec = gpu_pod_spec()
    spec["containers"][0]["image"] = image

    assert found(analyze, "gpu-pods-pinned-images", spec) == [
        f'container "app" image "{image}" ({APP}.image) {problem}. Fix: pin a version tag or a '
        "digest (image@sha256:...), so every node runs the same image."
    ]


def test_a_digest_pins_an_image(analyze: Analyze) -> None:
    spec = gpu_pod_spec()
    spec["containers"][0]["image"] = "nvcr.io/nvidia/cuda@sha256:" + "ab" * 32

    assert found(analyze, "gpu-pods-pinned-images", spec) == []


def test_with_require_digests_a_tag_alone_does_not_pin(analyze: Analyze) -> None:
    spec = gpu_pod_spec()
    spec["containers"][0]["image"] = "nvcr.io/nvidia/pytorch:25.08-py3"

    assert found(analyze, "gpu-pods-pinned-images", spec, requireDigests=True) == [
        f'container "app" image "nvcr.io/nvidia/pytorch:25.08-py3" ({APP}.image) has no digest.'
        " Fix: pin its digest (image:tag@sha256:...; requireDigests is on), so every node runs"
        " the same image."
    ]


def test_with_require_digests_a_tag_and_digest_pin(analyze: Analyze) -> None:
    spec = gpu_pod_spec()
    spec["containers"][0]["image"] = "nvcr.io/nvidia/pytorch:25.08-py3@sha256:" + "0f" * 32

    assert found(analyze, "gpu-pods-pinned-images", spec, requireDigests=True) == []


def test_a_digest_that_is_not_a_sha256_does_not_pin(analyze: Analyze) -> None:
    spec = gpu_pod_spec()
    spec["containers"][0]["image"] = "nvcr.io/nvidia/pytorch@sha256:latest"

    assert found(analyze, "gpu-pods-pinned-images", spec) == [
        f'container "app" image "nvcr.io/nvidia/pytorch@sha256:latest" ({APP}.image) has a'
        " digest that is not sha256:<64 hex>. Fix: pin a version tag or a digest"
        " (image@sha256:...), so every node runs the same image."
    ]


# gpu_platform/kubernetes/canary_gate.py: the gate's Job is named GATE_NAME_PREFIX and its
# release's id, and runs the smoke test's GPU pod.
GATE = "gpu-canary-gate-4f2a9c"
CUDA = "nvcr.io/nvidia/cuda:12.2.2-base-ubuntu22.04"
TENANT_IMAGE = "registry.example.com/ml/train:1.0"


def no_digest(image: str) -> str:
    return (
        f'container "app" image "{image}" ({APP}.image) has no digest. Fix: pin its digest '
        "(image:tag@sha256:...; requireDigests is on), so every node runs the same image."
    )


def pinned_images(analyze: Analyze, name: str, image: str, config: dict[str, Any]) -> list[Verdict]:
    """gpu-pods-pinned-images' verdicts on a GPU Job `name` running `image` in `ml-training`,
    a restricted tenant namespace."""
    spec = gpu_pod_spec()
    spec["containers"][0]["image"] = image
    job = workload("Job", spec, name=name, namespace="ml-training")
    found = analyze(namespace("ml-training"), job, config=config)
    return [v for v in found if v.policy_name == "gpu-pods-pinned-images"]


def pinned_images_verdicts(
    analyze: Analyze, name: str, image: str, config: dict[str, Any]
) -> list[str]:
    return [v.message for v in pinned_images(analyze, name, image, config)]


@pytest.mark.parametrize(
    ("name", "image", "expected"),
    [
        # The platform's own image in its own object: platform-images-by-digest's to pin.
        (GATE, CUDA, []),
        (
            GATE,
            "nvcr.io/nvidia/cuda:latest",
            [
                'container "app" image "nvcr.io/nvidia/cuda:latest" '
                f"({APP}.image) uses the latest tag. Fix: pin a version tag or a digest "
                "(image@sha256:...), so every node runs the same image."
            ],
        ),
        ("train", CUDA, [no_digest(CUDA)]),
        # A platform object's name runs no other image by tag: not a tenant's, not the
        # platform's image of another object (the gate's Python is no smoke test's).
        (GATE, TENANT_IMAGE, [no_digest(TENANT_IMAGE)]),
        ("gpu-smoke-test", TENANT_IMAGE, [no_digest(TENANT_IMAGE)]),
        ("gpu-smoke-test", PYTHON, [no_digest(PYTHON)]),
    ],
)
def test_a_platform_objects_own_images_alone_are_platform_images_by_digests_to_require(
    analyze: Analyze, name: str, image: str, expected: list[str]
) -> None:
    # platform-images-by-digest holds the platform's own objects (platform_objects.py) to
    # digests, but the reviewed exceptions of its awaitingDigests: here they keep to a tag.
    config = {"gpu-pods-pinned-images": {"requireDigests": True}}

    assert pinned_images_verdicts(analyze, name, image, config) == expected


@pytest.mark.parametrize("name", ["train", "gpu-smoke-test", "gpu-canary-gate-x"])
def test_prod_refuses_a_tenants_image_by_tag_whatever_its_jobs_name(
    analyze: Analyze, name: str
) -> None:
    config = json.loads((ROOT / "policy-config" / "prod.json").read_text())

    verdicts = pinned_images(analyze, name, TENANT_IMAGE, config)

    assert [(v.message, v.enforcement_level) for v in verdicts] == [
        (no_digest(TENANT_IMAGE), "mandatory")
    ]


def test_a_job_whose_name_is_not_known_yet_is_held_to_every_digest(analyze: Analyze) -> None:
    # A name not known at preview may yet be any tenant's: the config as it is.
    config = {"gpu-pods-pinned-images": {"requireDigests": True}}

    assert pinned_images_verdicts(analyze, UNKNOWN, CUDA, config) == [no_digest(CUDA)]


def test_prod_requires_gpu_pods_digests() -> None:
    config = json.loads((ROOT / "policy-config" / "prod.json").read_text())

    assert config["gpu-pods-pinned-images"] == {"requireDigests": True}
