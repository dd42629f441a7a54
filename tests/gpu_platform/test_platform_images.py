"""Every image a stack deploys, from its config: what `gpu-platform lock` locks."""

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpu_platform import platform_images as platform_images_module
from gpu_platform.config import StackConfig, load_stack_config
from gpu_platform.lock.lockfile import IMAGES, LOCK_PATH_VARIABLE, Lock, entry
from gpu_platform.platform_images import platform_images
from gpu_platform.stack_files import gpu_platform_config, stack_config
from gpu_platform.versions import ContainerImage
from tests.gpu_platform.kubernetes.test_canary_gate_order import cos_config, ubuntu_config
from tests.repository import PROJECT, STACKS
from tests.shared_plans import shared_plan

# The GPU Operator's operands at chart v26.7.0, by the digests NVIDIA's OLM bundle records
# (gpu_platform/kubernetes/operand_images/gpu-operator-v26.7.0.json).
OPERANDS = {
    "nvcr.io/nvidia/cloud-native/k8s-mig-manager:v0.15.0",
    "nvcr.io/nvidia/k8s-device-plugin:v0.20.0",
    "nvcr.io/nvidia/k8s/container-toolkit:v1.20.0",
    "nvcr.io/nvidia/k8s/dcgm-exporter:4.6.0-4.8.3-distroless",
}
# NVIDIA/gpu-operator values.yaml at v26.7.0 (`operator`, at the chart's version) and
# kubernetes-sigs/node-feature-discovery values.yaml at v0.19.0 (`image`, the appVersion tag).
CHART_DEFAULTS = {
    "nvcr.io/nvidia/gpu-operator:v26.7.0",
    "registry.k8s.io/nfd/node-feature-discovery:v0.19.0",
}
AUTOSCALERS = {
    "registry.k8s.io/autoscaling/cluster-autoscaler:v1.33.6",
    "registry.k8s.io/autoscaling/cluster-autoscaler:v1.34.5",
    "registry.k8s.io/autoscaling/cluster-autoscaler:v1.35.2",
    "registry.k8s.io/autoscaling/cluster-autoscaler:v1.36.1",
}
SMOKE = "nvcr.io/nvidia/cuda:12.2.2-base-ubuntu22.04"
PYTHON = "docker.io/library/python:3.13.9-slim-trixie"
# The GPU Operator chart's standalone DCGM at v26.7.0 (`dcgm` in its values.yaml), which node
# validation runs its diagnostic from.
DCGM = "nvcr.io/nvidia/cloud-native/dcgm:4.6.0-1-ubuntu24.04"
EFA = "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-efa-k8s-device-plugin:v0.5.20"


def config_of(stack: str, **changes: Any) -> StackConfig:
    raw = copy.deepcopy(stack_config(stack, PROJECT))
    raw.update({f"gpu-platform:{key}": value for key, value in changes.items()})
    return load_stack_config(*gpu_platform_config(raw))


def keys(config: StackConfig) -> set[str]:
    return {image.key for image in platform_images(config)}


def test_prod_deploys_the_operator_its_gate_mig_remover_autoscaler_and_efa_plugin() -> None:
    # An existing cluster: its version, which picks the autoscaler's release, is the deploy's
    # to read, so every pinned release is listed.
    assert keys(config_of("prod")) == (
        OPERANDS | CHART_DEFAULTS | AUTOSCALERS | {SMOKE, PYTHON, DCGM, EFA}
    )


def test_only_the_images_the_lock_holds_have_no_digest_of_their_own() -> None:
    upstream = {i.key for i in platform_images(config_of("karpenter-dev")) if i.digest}

    assert upstream == OPERANDS | {"public.ecr.aws/karpenter/controller:1.14.1"}


def test_a_cluster_the_platform_creates_runs_the_autoscaler_of_its_version() -> None:
    # Pulumi.eks-new.yaml creates its cluster at Kubernetes 1.35.
    assert keys(config_of("eks-new")) & AUTOSCALERS == {
        "registry.k8s.io/autoscaling/cluster-autoscaler:v1.35.2"
    }


def test_an_autoscaler_tag_of_the_stacks_is_the_one_listed() -> None:
    config = config_of("dev", autoscaler={"imageTag": "v1.35.9"})

    assert {i for i in keys(config) if "cluster-autoscaler" in i} == {
        "registry.k8s.io/autoscaling/cluster-autoscaler:v1.35.9"
    }


def test_the_driver_manager_runs_where_the_operator_builds_the_driver(gke_config: Any) -> None:
    manager = "nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.12.0"
    cos = load_stack_config(*gpu_platform_config(gke_config))
    gke_config["gpu-platform:cluster"]["nodeImage"] = "ubuntu"
    gke_config["gpu-platform:pools"][0]["sharing"] = {"mode": "exclusive"}
    ubuntu = load_stack_config(*gpu_platform_config(gke_config))

    assert manager in keys(ubuntu)
    assert manager not in keys(cos)


def test_a_gke_ubuntu_canary_gate_locks_its_driver_checks_image_without_a_reaper() -> None:
    # The gate's init container runs the Python image (`canary_gate.CANARY_GATE_CHECK_IMAGE`) on
    # GKE Ubuntu alone, where the operator rolls drivers in place; the reaper, which runs the
    # same image, is off here.
    config = ubuntu_config()
    for namespace in config["gpu-platform:namespaces"]:
        namespace.pop("gpuIdleMinutes", None)
    loaded = load_stack_config(*gpu_platform_config(config))

    assert not any(namespace.gpu_idle_minutes for namespace in loaded.namespaces)
    assert PYTHON in keys(loaded)


def without_validation(config: dict[str, Any]) -> dict[str, Any]:
    for pool in config["gpu-platform:pools"]:
        pool["validation"] = {"enabled": False}
    return config


def test_a_cos_canary_gate_runs_no_driver_check() -> None:
    config = without_validation(cos_config())
    for namespace in config["gpu-platform:namespaces"]:
        namespace.pop("gpuIdleMinutes", None)

    assert PYTHON not in keys(load_stack_config(*gpu_platform_config(config)))


def test_node_validation_locks_its_images_where_a_pool_validates() -> None:
    validated = load_stack_config(*gpu_platform_config(cos_config()))
    unvalidated = load_stack_config(*gpu_platform_config(without_validation(cos_config())))

    assert {PYTHON, DCGM} <= keys(validated)
    assert not {PYTHON, DCGM} & keys(unvalidated)


def test_the_nccl_test_image_is_locked_only_where_a_pool_runs_the_check() -> None:
    # aws-samples/awsome-distributed-training micro-benchmarks/nccl-tests: the Dockerfile's
    # default versions, in the tag AWS publishes them under on public.ecr.aws/hpc-cloud.
    nccl = (
        "public.ecr.aws/hpc-cloud/nccl-tests:"
        "cuda12.8.1-efa1.43.2-ofiv1.16.3-ncclv2.27.7-1-testsv2.16.9"
    )
    raw = copy.deepcopy(stack_config("karpenter-dev", PROJECT))
    h100 = next(p for p in raw["gpu-platform:pools"] if p["name"] == "h100-block")

    assert nccl not in keys(load_stack_config(*gpu_platform_config(raw)))
    h100["validation"] = {"expectedBusBandwidthGbps": 400}
    assert nccl in keys(load_stack_config(*gpu_platform_config(raw)))


def test_an_eks_canary_that_validates_locks_its_gates_proof_image_of_its_own_accord(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # prod's canary validates its nodes, so its gate runs the validation proof on the gate's
    # Python image (canary_gate.CANARY_GATE_CHECK_IMAGE): listed for the gate itself, not only
    # because node validation, the MIG remover or the reaper happen to run the same image.
    for name in (
        "NODE_VALIDATOR_IMAGE",
        "MIG_STARTUP_TAINT_REMOVER_IMAGE",
        "IDLE_GPU_REAPER_IMAGE",
    ):
        monkeypatch.setattr(platform_images_module, name, ContainerImage("example.com/x", name))

    assert PYTHON in keys(config_of("prod"))


DIGEST = "sha256:" + "7d" * 32


def pod_images(value: Any) -> Iterator[str]:
    """Every image of every container list in a resource's inputs, wherever its pods are."""
    if isinstance(value, dict):
        for key, found in value.items():
            if key in ("containers", "initContainers") and isinstance(found, list):
                yield from (c["image"] for c in found if isinstance(c, dict) and "image" in c)
            else:
                yield from pod_images(found)
    elif isinstance(value, list):
        for item in value:
            yield from pod_images(item)


@pytest.mark.parametrize("stack", ["prod", "gke-dev"])
def test_every_pod_the_program_makes_runs_by_digest_once_the_lock_holds_its_images(
    stack: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What `gpu-platform lock` locks (platform_images) is every image the program deploys in a
    # pod of its own: with a digest for each in the lock, none runs by tag.
    listed = platform_images(config_of(stack))
    path = tmp_path / "gpu-platform.lock"
    found = {i.key: entry(DIGEST, f"https://registry.example/{i.key}") for i in listed}
    Lock(path=path).with_entries(IMAGES, found).save()
    monkeypatch.setenv(LOCK_PATH_VARIABLE, str(path))

    resources = shared_plan(stack).resources
    by_tag = {
        (r.name, image)
        for r in resources
        if r.type.startswith("kubernetes:") and not r.type.endswith(":Release")
        for image in pod_images(r.inputs)
        if "@sha256:" not in image
    }

    assert by_tag == set()


@pytest.mark.parametrize("stack", STACKS)
def test_every_image_a_stacks_pods_run_by_tag_is_one_the_lock_reads(stack: str) -> None:
    # Every committed stack, MIG, Karpenter and new clusters among them: an image a pod of the
    # program runs by tag is one `gpu-platform lock` reads the digest of, and with it locked
    # the pod runs by digest (the test above, on a lock of every listed image).
    by_tag = {
        image
        for r in shared_plan(stack).resources
        if r.type.startswith("kubernetes:") and not r.type.endswith(":Release")
        for image in pod_images(r.inputs)
        if "@sha256:" not in image
    }

    assert by_tag
    assert by_tag <= keys(config_of(stack))
