"""The program runs the platform's images by the digest the lock holds for their tags."""

from pathlib import Path
from typing import Any

import pytest

from gpu_platform.config import ClusterAutoscalerSpec
from gpu_platform.eks.cluster_autoscaler import autoscaler_image
from gpu_platform.kubernetes.gke_dcgm_exporter import gke_exporter_pod_spec
from gpu_platform.kubernetes.mig_startup_taint import remover_pod_spec
from gpu_platform.lock.images import locked
from gpu_platform.lock.lockfile import IMAGES, Lock, entry
from gpu_platform.versions import (
    GPU_SMOKE_TEST_IMAGE,
    KARPENTER_CONTROLLER_IMAGE,
    MIG_STARTUP_TAINT_REMOVER_IMAGE,
    ContainerImage,
)

DIGEST = "sha256:" + "5e" * 32
PYTHON = "docker.io/library/python:3.13.9-slim-trixie"
AUTOSCALER = "registry.k8s.io/autoscaling/cluster-autoscaler:v1.35.2"
OPERATOR = "nvcr.io/nvidia/gpu-operator:v26.7.0"
CUDA = "nvcr.io/nvidia/cuda:12.2.2-base-ubuntu22.04"
DAEMONSETS: dict[str, Any] = {"tolerations": []}


def lock_of(path: Path, *images: str) -> Lock:
    entries = {image: entry(DIGEST, f"https://registry.example/{image}") for image in images}
    return Lock(path=path).with_entries(IMAGES, entries)


@pytest.fixture
def project_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The project's lock, holding a digest for the images of this file."""
    path = tmp_path / "gpu-platform.lock"
    lock_of(path, PYTHON, AUTOSCALER, OPERATOR, CUDA).save()
    monkeypatch.setenv("GPU_PLATFORM_LOCK", str(path))
    return path


def test_an_image_takes_the_digest_the_lock_holds_for_its_tag(tmp_path: Path) -> None:
    lock = lock_of(tmp_path / "lock", CUDA)

    assert locked(GPU_SMOKE_TEST_IMAGE, lock).reference == f"{CUDA}@{DIGEST}"


def test_an_image_the_lock_has_no_digest_for_runs_by_tag(tmp_path: Path) -> None:
    lock = lock_of(tmp_path / "lock")

    assert locked(GPU_SMOKE_TEST_IMAGE, lock).reference == CUDA


def test_an_upstream_releases_digest_is_kept_over_the_lock(tmp_path: Path) -> None:
    image = KARPENTER_CONTROLLER_IMAGE
    lock = lock_of(tmp_path / "lock", f"{image.repository}:{image.tag}")

    assert locked(image, lock) == image


def test_the_mig_taint_remover_runs_by_the_locks_digest(project_lock: Path) -> None:
    assert MIG_STARTUP_TAINT_REMOVER_IMAGE.reference == PYTHON
    (container,) = remover_pod_spec("remover-script")["containers"]

    assert container["image"] == f"{PYTHON}@{DIGEST}"


def test_the_autoscaler_runs_by_the_locks_digest(project_lock: Path) -> None:
    image = autoscaler_image(ClusterAutoscalerSpec(), "1.35")

    assert image == ContainerImage(
        "registry.k8s.io/autoscaling/cluster-autoscaler", "v1.35.2", DIGEST
    )


def test_the_gke_exporters_validator_runs_by_the_locks_digest(project_lock: Path) -> None:
    exporter: dict[str, Any] = {"repository": "", "image": "dcgm-exporter@" + DIGEST}
    spec = gke_exporter_pod_spec({"dcgmExporter": exporter, "daemonsets": DAEMONSETS}, "v26.7.0")

    # The operator renders `<repository>/<image>:<version>` (imagePath in
    # api/nvidia/v1/clusterpolicy_types.go at v26.7.0): the digest follows the tag.
    assert spec["initContainers"][0]["image"] == f"{OPERATOR}@{DIGEST}"


def test_a_validator_version_of_the_users_is_left_as_it_is(project_lock: Path) -> None:
    exporter: dict[str, Any] = {"repository": "", "image": "dcgm-exporter@" + DIGEST}
    values = {
        "dcgmExporter": exporter,
        "daemonsets": DAEMONSETS,
        "validator": {"version": "v26.7.1"},
    }

    spec = gke_exporter_pod_spec(values, "v26.7.0")

    assert spec["initContainers"][0]["image"] == "nvcr.io/nvidia/gpu-operator:v26.7.1"


def test_the_smoke_test_runs_by_the_locks_digest_in_the_plan(
    project_lock: Path, dev_config: Any, plan_for: Any
) -> None:
    plan = plan_for(dev_config)
    jobs = [r for r in plan.resources if r.type == "kubernetes:batch/v1:Job"]

    images = {
        c["image"] for job in jobs for c in job.inputs["spec"]["template"]["spec"]["containers"]
    }
    assert images == {f"{CUDA}@{DIGEST}"}
