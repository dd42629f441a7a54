"""The stack policies that hold GPU pods to their pool's CUDA ceiling, through the analyzer."""

from typing import Any

import pytest

from tests.gpu_platform.policy_pack.builders import (
    Analyze,
    eks_node_group,
    gke_node_pool,
    gpu_pod_spec,
    messages,
    workload,
)

POLICY = "gpu-pods-cuda-within-driver"
KNOWN = "gpu-pods-cuda-known"
# A pool on an R570 driver: CUDA 12.8 and older.
R570 = {"gpu-platform.io/nvidia-driver": "570.195.03", "gpu-platform.io/cuda": "12.8"}


def pool(labels: dict[str, str] = R570, *, gke: bool = False) -> Any:
    found = gke_node_pool() if gke else eks_node_group()
    target = found.inputs["nodeConfig"]["labels"] if gke else found.inputs["labels"]
    target.update({"gpu-platform.io/pool": "l4", **labels})
    return found


def pod(
    image: str = "registry.example.com/app:1.4.2",
    env: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    gpus: str = "1",
) -> Any:
    spec = gpu_pod_spec(gpus)
    spec["nodeSelector"] = {"gpu-platform.io/pool": "l4"}
    spec["containers"][0]["image"] = image
    if env:
        spec["containers"][0]["env"] = [{"name": k, "value": v} for k, v in env.items()]
    return workload("Deployment", spec, pod_metadata={"annotations": annotations or {}})


@pytest.mark.parametrize(
    "image",
    [
        "nvcr.io/nvidia/cuda:13.0.1-runtime-ubuntu24.04",
        "nvidia/cuda:12.9.1-base-ubuntu22.04",
        "docker.io/pytorch/pytorch:2.9.0-cuda13.0-cudnn9-runtime",
        "registry.example.com/vllm:0.11.0-cu129",
    ],
)
def test_an_image_built_for_a_newer_cuda_than_the_pool_runs_is_refused(
    analyze: Analyze, image: str
) -> None:
    deployment = pod(image)

    verdicts = analyze(pool(), deployment)

    (verdict,) = [v for v in verdicts if v.policy_name == POLICY]
    assert (verdict.enforcement_level, verdict.urn) == ("mandatory", deployment.urn)
    assert f'(image {image}), but pool "l4" runs NVIDIA driver 570.195.03' in verdict.message


@pytest.mark.parametrize(
    "image",
    [
        "nvcr.io/nvidia/cuda:12.8.1-runtime-ubuntu24.04",
        "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime",
        "registry.example.com/train:3-cu118",
    ],
)
def test_an_image_at_or_below_the_pools_cuda_passes(analyze: Analyze, image: str) -> None:
    verdicts = analyze(pool(), pod(image))

    assert messages(verdicts, POLICY) == []
    assert messages(verdicts, KNOWN) == []


def test_the_message_names_both_releases_and_the_fix(analyze: Analyze) -> None:
    verdicts = analyze(pool(), pod("nvidia/cuda:13.0.0-base-ubuntu24.04"))

    assert messages(verdicts, POLICY) == [
        'container "app" needs CUDA 13.0 (image nvidia/cuda:13.0.0-base-ubuntu24.04), but pool'
        ' "l4" runs NVIDIA driver 570.195.03, which runs CUDA 12.8 and older: it would start'
        " and fail at its first CUDA call. Fix: use an image built for an older CUDA, or a pool"
        " with a newer driver."
    ]


def test_nvidia_require_cuda_is_read_from_the_env(analyze: Analyze) -> None:
    env = {"NVIDIA_REQUIRE_CUDA": "cuda>=12.9 brand=tesla,driver>=535,driver<536"}

    verdicts = analyze(pool(), pod(env=env))

    assert len(messages(verdicts, POLICY)) == 1


def test_cuda_version_is_read_from_the_env(analyze: Analyze) -> None:
    verdicts = analyze(pool(), pod(env={"CUDA_VERSION": "13.0.1"}))

    assert len(messages(verdicts, POLICY)) == 1


def test_the_annotation_comes_before_the_image_tag(analyze: Analyze) -> None:
    deployment = pod(
        "nvidia/cuda:13.0.0-base-ubuntu24.04",
        annotations={"gpu-platform.io/cuda-version": "12.4"},
    )

    verdicts = analyze(pool(), deployment)

    assert messages(verdicts, POLICY) == []


def test_a_gke_pool_is_read_from_its_node_config(analyze: Analyze) -> None:
    verdicts = analyze(pool(gke=True), pod("nvidia/cuda:13.0.0-base-ubuntu24.04"))

    assert len(messages(verdicts, POLICY)) == 1


def test_an_unknown_cuda_release_is_advisory(analyze: Analyze) -> None:
    deployment = pod("registry.example.com/notebook:2026.11")

    verdicts = analyze(pool(), deployment)

    assert messages(verdicts, POLICY) == []
    (verdict,) = [v for v in verdicts if v.policy_name == KNOWN]
    assert (verdict.enforcement_level, verdict.urn) == ("advisory", deployment.urn)
    assert "set the pod annotation gpu-platform.io/cuda-version" in verdict.message


def test_a_pod_without_gpus_is_not_held_to_the_ceiling(analyze: Analyze) -> None:
    verdicts = analyze(pool(), pod("nvidia/cuda:13.0.0-base-ubuntu24.04", gpus="0"))

    assert messages(verdicts, POLICY) == []
    assert messages(verdicts, KNOWN) == []


def test_a_pool_without_a_cuda_label_holds_no_pod(analyze: Analyze) -> None:
    verdicts = analyze(pool({}), pod("nvidia/cuda:13.0.0-base-ubuntu24.04"))

    assert messages(verdicts, POLICY) == []
    assert messages(verdicts, KNOWN) == []
