"""The program runs the platform's images by the digest the lock holds for their tags."""

from pathlib import Path
from typing import Any

import pytest

from gpu_platform.cloud import pools_as_declared
from gpu_platform.config import ClusterAutoscalerSpec, load_stack_config
from gpu_platform.eks.cluster_autoscaler import autoscaler_image
from gpu_platform.kubernetes.canary_gate import CHECK_CONTAINER
from gpu_platform.kubernetes.gke_dcgm_exporter import gke_exporter_pod_spec
from gpu_platform.kubernetes.mig_startup_taint import remover_pod_spec
from gpu_platform.kubernetes.operator_values import operator_values_for
from gpu_platform.lock.images import locked
from gpu_platform.lock.lockfile import IMAGES, Lock, entry
from gpu_platform.versions import (
    GPU_SMOKE_TEST_IMAGE,
    KARPENTER_CONTROLLER_IMAGE,
    MIG_STARTUP_TAINT_REMOVER_IMAGE,
    ContainerImage,
)
from tests.gpu_platform.kubernetes.test_canary_gate_order import ubuntu_config
from tests.gpu_platform.kubernetes.test_chart_keys import stack

DIGEST = "sha256:" + "5e" * 32
PYTHON = "docker.io/library/python:3.13.9-slim-trixie"
AUTOSCALER = "registry.k8s.io/autoscaling/cluster-autoscaler:v1.35.2"
OPERATOR = "nvcr.io/nvidia/gpu-operator:v26.7.0"
CUDA = "nvcr.io/nvidia/cuda:12.2.2-base-ubuntu22.04"
# deployments/gpu-operator/values.yaml at v26.7.0 (`driver.manager`) and node-feature-discovery's
# deployment/helm/node-feature-discovery/Chart.yaml at v0.19.0 (appVersion).
DRIVER_MANAGER = "nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.12.0"
NFD = "registry.k8s.io/nfd/node-feature-discovery:v0.19.0"
DAEMONSETS: dict[str, Any] = {"tolerations": []}


def lock_of(path: Path, *images: str) -> Lock:
    entries = {image: entry(DIGEST, f"https://registry.example/{image}") for image in images}
    return Lock(path=path).with_entries(IMAGES, entries)


@pytest.fixture
def project_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The project's lock, holding a digest for the images of this file."""
    path = tmp_path / "gpu-platform.lock"
    lock_of(path, PYTHON, AUTOSCALER, OPERATOR, CUDA, DRIVER_MANAGER, NFD).save()
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


def test_the_operator_charts_own_images_run_by_the_locks_digest(project_lock: Path) -> None:
    config = load_stack_config(stack("gcp", "ubuntu"))

    values = operator_values_for(
        config.operator, config.platform, pools_as_declared(config), config.monitoring
    )

    # The chart renders `repository/image:version` (deployments/gpu-operator/templates/
    # _helpers.tpl at v26.7.0), the operator the driver manager's alike (internal/image/
    # image.go, ImagePath): the digest follows the tag.
    operator = {
        "repository": "nvcr.io/nvidia",
        "image": "gpu-operator",
        "version": f"v26.7.0@{DIGEST}",
    }
    assert (values["operator"] | {"upgradeCRD": True}, values["validator"]) == (
        operator | {"upgradeCRD": True},
        operator,
    )
    assert values["driver"]["manager"] == {
        "repository": "nvcr.io/nvidia/cloud-native",
        "image": "k8s-driver-manager",
        "version": f"v0.12.0@{DIGEST}",
    }
    assert values["node-feature-discovery"]["image"] == {
        "repository": "registry.k8s.io/nfd/node-feature-discovery",
        "tag": f"v0.19.0@{DIGEST}",
    }


def test_the_operator_charts_own_images_run_by_tag_without_the_locks_digest() -> None:
    config = load_stack_config(stack("aws", "al2023"))

    values = operator_values_for(
        config.operator, config.platform, pools_as_declared(config), config.monitoring
    )

    assert values["validator"] == {
        "repository": "nvcr.io/nvidia",
        "image": "gpu-operator",
        "version": "v26.7.0",
    }
    assert "manager" not in values.get("driver", {})


def test_a_gke_ubuntu_canary_gates_driver_check_runs_by_the_locks_digest(
    project_lock: Path, plan_for: Any
) -> None:
    plan = plan_for(ubuntu_config())
    jobs = [r for r in plan.resources if r.type == "kubernetes:batch/v1:Job"]

    checks = [
        container["image"]
        for job in jobs
        for container in job.inputs["spec"]["template"]["spec"].get("initContainers", [])
        if container["name"] == CHECK_CONTAINER
    ]
    assert checks and set(checks) == {f"{PYTHON}@{DIGEST}"}
