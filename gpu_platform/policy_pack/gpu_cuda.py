"""GPU pods need no newer CUDA than the driver of the pool they select runs.

A CUDA application built for a newer CUDA release than the node's driver runs is scheduled,
starts, and fails at its first CUDA call ("CUDA driver version is insufficient for CUDA runtime
version"). The stack's pools carry their driver's ceiling on their node labels,
`gpu-platform.io/cuda` (`13.0`, from gpu_platform/drivers.py); a pod that selects a pool by its
`gpu-platform.io/pool` label is held to it. A pod's CUDA release is read, per container, from
the first of:

1. the pod's `gpu-platform.io/cuda-version` annotation (`12.4`), which the docs ask authors of
   other images to set;
2. the container's `NVIDIA_REQUIRE_CUDA` (`cuda>=12.4 brand=tesla,...`) or `CUDA_VERSION`
   (`12.4.1`) env, as NVIDIA's CUDA images set them (the pod helper sets the first);
3. a CUDA release in the image tag: NVIDIA's CUDA images (`nvidia/cuda:12.4.1-runtime-...`,
   `nvcr.io/nvidia/cuda:...`), `cuda12.4` (`pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime`) or
   PyTorch's wheel tags `cu124`.

The image's own environment is not visible to the API server, so a pod whose CUDA release none of
these gives is reported by the advisory `gpu-pods-cuda-known`, not refused.
"""

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial

from checks import Findings
from gpu_sharing import POOL_LABEL, POOL_LABELS_PATH, check_pods_on_pools
from gpu_workloads import RESOURCE_CONTAINERS, gpu_limits, quantity
from pods import Container, Pod
from props import elements, mapping, text
from pulumi_policy import (
    EnforcementLevel,
    PolicyResource,
    ReportViolation,
    StackValidationArgs,
    StackValidationPolicy,
)

NAME = "gpu-pods-cuda-within-driver"
KNOWN_NAME = "gpu-pods-cuda-known"
CUDA_LABEL = "gpu-platform.io/cuda"
DRIVER_LABEL = "gpu-platform.io/nvidia-driver"
CUDA_ANNOTATION = "gpu-platform.io/cuda-version"

_REQUIRE_CUDA = re.compile(r"cuda>=(\d+)\.(\d+)")
_CUDA_VERSION = re.compile(r"(\d+)\.(\d+)")
# In a tag: `cuda12.4`, `cuda-12.4`, or PyTorch's `cu124` between separators.
_TAG_CUDA = re.compile(r"(?:^|[-_.])cuda-?(\d+)\.(\d+)")
_TAG_CU = re.compile(r"(?:^|[-_.])cu(\d{2})(\d)(?=$|[-_.])")
_NVIDIA_CUDA_REPOSITORIES = ("nvidia/cuda", "nvcr.io/nvidia/cuda", "docker.io/nvidia/cuda")


@dataclass(frozen=True)
class PoolDriver:
    name: str
    driver: str
    cuda: tuple[int, int]


@dataclass(frozen=True)
class CudaNeed:
    """The CUDA release a container needs, and where it was read."""

    version: tuple[int, int]
    source: str


def pool_driver(resource: PolicyResource) -> PoolDriver | None:
    labels = mapping(resource.props, *POOL_LABELS_PATH[resource.resource_type]) or {}
    name, cuda = text(labels, POOL_LABEL), text(labels, CUDA_LABEL)
    if name is None or cuda is None or (found := _CUDA_VERSION.fullmatch(cuda)) is None:
        return None
    return PoolDriver(name, text(labels, DRIVER_LABEL) or "?", _release(found))


def cuda_need(pod: Pod, container: Container) -> CudaNeed | None:
    """The container's CUDA release, read as the module doc says; None when nothing says."""
    annotation = text(pod.metadata, "annotations", CUDA_ANNOTATION)
    if annotation is not None and (found := _CUDA_VERSION.fullmatch(annotation)):
        return CudaNeed(_release(found), f"annotation {CUDA_ANNOTATION}={annotation}")
    env = {text(entry, "name"): entry for entry in elements(container.props, "env")}
    for name, pattern in (("NVIDIA_REQUIRE_CUDA", _REQUIRE_CUDA), ("CUDA_VERSION", _CUDA_VERSION)):
        value = text(env.get(name), "value")
        if value is not None and (found := pattern.search(value)):
            return CudaNeed(_release(found), f"env {name}={value}")
    image = text(container.props, "image")
    return _from_image(image) if image is not None else None


def _from_image(image: str) -> CudaNeed | None:
    repository, _, tag = image.partition("@")[0].rpartition(":")
    if not repository or "/" in tag:
        return None
    if repository.endswith(_NVIDIA_CUDA_REPOSITORIES) and (found := _CUDA_VERSION.match(tag)):
        return CudaNeed(_release(found), f"image {image}")
    for pattern in (_TAG_CUDA, _TAG_CU):
        if found := pattern.search(tag):
            return CudaNeed(_release(found), f"image {image}")
    return None


def _release(found: re.Match[str]) -> tuple[int, int]:
    return int(found[1]), int(found[2])


def _shown(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


def _gpu_containers(pod: Pod) -> Iterator[Container]:
    for container in pod.containers(RESOURCE_CONTAINERS):
        if any(quantity(limit) for limit in gpu_limits(container).values()):
            yield container


def cuda_problems(pod: Pod, pool: PoolDriver) -> Iterator[str]:
    for container in _gpu_containers(pod):
        need = cuda_need(pod, container)
        if need is not None and need.version > pool.cuda:
            yield (
                f"{container.label} needs CUDA {_shown(need.version)} ({need.source}), but pool"
                f' "{pool.name}" runs NVIDIA driver {pool.driver}, which runs CUDA'
                f" {_shown(pool.cuda)} and older: it would start and fail at its first CUDA"
                " call. Fix: use an image built for an older CUDA, or a pool with a newer"
                " driver."
            )


def unknown_cuda(pod: Pod, pool: PoolDriver) -> Iterator[str]:
    for container in _gpu_containers(pod):
        if cuda_need(pod, container) is None:
            yield (
                f'{container.label} runs on pool "{pool.name}" (CUDA {_shown(pool.cuda)} and'
                " older), but its CUDA release is unknown: neither its image tag nor its env"
                f" says it. Fix: set the pod annotation {CUDA_ANNOTATION} to the CUDA release"
                " the image was built for (such as 12.4)."
            )


CudaCheck = Callable[[Pod, PoolDriver], Iterator[str]]


def _validate(
    name: str, check: CudaCheck, args: StackValidationArgs, report_violation: ReportViolation
) -> None:
    with Findings(name, "the stack", report_violation) as findings:
        check_pods_on_pools(args, findings, pool_driver, check)


POLICIES: list[StackValidationPolicy] = [
    StackValidationPolicy(
        name=NAME,
        description="GPU pods need no newer CUDA than the driver of the pool they select runs.",
        validate=partial(_validate, NAME, cuda_problems),
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    StackValidationPolicy(
        name=KNOWN_NAME,
        description="GPU pods on the stack's pools say which CUDA release they need.",
        validate=partial(_validate, KNOWN_NAME, unknown_cuda),
        enforcement_level=EnforcementLevel.ADVISORY,
    ),
]
