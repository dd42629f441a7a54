"""GPU pods need a CUDA release the driver of each pool they may land on runs, as NVIDIA says.

A CUDA application built for a newer CUDA release than the node's driver runs is scheduled and
starts; whether it then runs is NVIDIA's CUDA compatibility rules
(docs.nvidia.com/deploy/cuda-compatibility/):

- a driver runs every CUDA release up to its own natively ("CUDA Version" in nvidia-smi), and
  every older major release (backward compatibility);
- minor version compatibility: an application of a CUDA major release family runs, "with
  limited feature-set", on any driver of at least that family's minimum (CUDA 11.x: R450,
  12.x: R525, 13.x: R580; minor-version-compatibility.html, Table 1), so a CUDA 12.9 image runs
  on an R535 driver (native 12.2). What it loses: PTX newer than the driver's is not
  JIT-compiled, and calls that need a newer driver fail with cudaErrorCallRequiresNewerDriver.
  NVIDIA's own images say so: `nvidia/cuda:12.9.1-*` declares `NVIDIA_REQUIRE_CUDA=cuda>=12.9
  brand=tesla,driver>=535,driver<536 ...`, which the container toolkit accepts on R535;
- a newer major release than the driver's (13.x on R535) runs only with NVIDIA's forward
  compatibility package (cuda-compat) in the container, on data-center GPUs: the data-center
  driver matrix lists the "Maximum CUDA Major Version Supported Without Forward Compatibility
  Package" of each branch (R535: 12, R580: 13). The pack cannot see an image's files.

So the mandatory `gpu-pods-cuda-within-driver` refuses a container whose CUDA major release is
above its pool's driver's, or whose driver is below the minor-compatibility minimum of that
release family; the advisory `gpu-pods-cuda-minor-compatibility` reports one that needs a newer
minor release than the driver runs natively, which runs with minor version compatibility's
limits (or in full with the forward compatibility package).

The pools are the stack's own, whose labels carry their driver (`gpu-platform.io/nvidia-driver`,
`580.95.05`) and its native ceiling (`gpu-platform.io/cuda`, `13.0`, from gpu_platform/drivers.py),
and, for a tenant's own stack that declares none, the pools its policy config lists under
`gpuPools`: the platform stack's `gpuPools` output, copied as it is. A pod that selects pools by
their `gpu-platform.io/pool` label is held to each it may land on, and so is one that selects
them by other labels the platform sets on the pool (`gpu-platform.io/accelerator`), or not at
all: a GPU pod without a node selector or required node affinity may land on every pool, and is
held to each. A configured pool is known by its name alone, so a pod in a tenant's stack that
selects by other labels is held to none of them. A container is judged where it asks for GPUs:
by an `nvidia.com/` limit, or by naming in `resources.claims` a claim of the pod's that takes
GPUs through DRA, as `gpu-pods-max-claimed-gpus` knows claims (the stack's claims and claim
templates of GPUs, the platform's `gpu-<model>` templates). A pod's CUDA release is read,
per container, from the first of:

1. the pod's `gpu-platform.io/cuda-version` annotation (`12.4`), which the docs ask authors of
   other images to set;
2. the container's `NVIDIA_REQUIRE_CUDA` (`cuda>=12.4 brand=tesla,...`) or `CUDA_VERSION`
   (`12.4.1`) env, as NVIDIA's CUDA images set them (the pod helper sets the first);
3. a CUDA release in the image tag: NVIDIA's CUDA images (`nvidia/cuda:12.4.1-runtime-...`,
   `nvcr.io/nvidia/cuda:...`), `cuda12.4` (`pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime`) or
   PyTorch's wheel tags `cu124`.

The image's own environment is not visible to the API server, so a pod whose CUDA release none of
these gives is reported by the advisory `gpu-pods-cuda-known`, not refused. So is, once, a stack
with GPU pods but no pool, declared or configured, whose CUDA release is known: without a pool no
pod can be judged, and a tenant's stack whose `gpuPools` was never set, or was copied from a
platform stack whose pools' drivers are unknown, would otherwise pass every CUDA policy without a
word. The platform's own smoke test is not counted there: it runs only `nvidia-smi`, from the
node's driver, with the toolkit's CUDA check off, so it needs no CUDA release (on EKS Auto Mode,
whose driver AWS does not publish, a stack's pools have none known).
"""

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from checks import Findings, each
from gpu_claims import StackClaims, uses_claims
from gpu_sharing import POOL_LABEL, POOL_LABELS_PATH, check_pods_on_pools
from gpu_workloads import RESOURCE_CONTAINERS, gpu_limits, image_repository, quantity
from platform_scope import platform_object
from pods import Container, Pod, pods_of
from props import elements, mapping, text, value_at
from pulumi_policy import (
    EnforcementLevel,
    PolicyResource,
    ReportViolation,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import UnknownValueError
from settings import Setting, config_schema

NAME = "gpu-pods-cuda-within-driver"
MINOR_COMPATIBILITY_NAME = "gpu-pods-cuda-minor-compatibility"
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
_DRIVER_VERSION = re.compile(r"\d+(?:\.\d+)*")

MINOR_COMPATIBILITY_FLOOR = {11: "450.80.02", 12: "525", 13: "580"}
"""CUDA major release -> the oldest driver its applications run on through minor version
compatibility (NVIDIA, CUDA Compatibility, minor-version-compatibility.html, Table 1 "CUDA
Toolkit 11.x, 12.x, and 13.x Driver Version Ranges": 13.x >= 580, 12.x >= 525, 11.x >= 450, and
its note: 11.x only from 450.80.02, the first R450 driver with it)."""

GPU_POOLS = Setting(
    "gpuPools",
    {
        "type": "object",
        "default": {},
        "additionalProperties": {
            "type": "object",
            "properties": {
                "nvidiaDriver": {"type": ["string", "null"]},
                "cuda": {"type": ["string", "null"]},
            },
        },
        "description": "GPU pools the stack's pods may run on but the stack does not declare (a "
        "tenant's own stack, on the platform stack's pools): the platform stack's `gpuPools` "
        "output as it is, pool name -> {nvidiaDriver, cuda, ...}. A pool the stack declares "
        "wins over an entry of the same name. Give the three CUDA policies the same value.",
    },
)


@dataclass(frozen=True)
class PoolDriver:
    name: str
    driver: str
    cuda: tuple[int, int]
    labels: Mapping[str, str] = field(default_factory=dict, compare=False)
    """The labels the pool's nodes carry, as far as the stack knows them."""

    def below(self, floor: str) -> bool:
        """Whether the driver is older than the driver version `floor`, as far as its label
        says: a branch alone (`450`) is below only a floor of a newer branch."""
        if _DRIVER_VERSION.fullmatch(self.driver) is None:
            return False
        version, oldest = _numbers(self.driver), _numbers(floor)
        return version < oldest[: len(version)]


@dataclass(frozen=True)
class CudaNeed:
    """The CUDA release a container needs, and where it was read."""

    version: tuple[int, int]
    source: str


def pool_driver(resource: PolicyResource) -> PoolDriver | None:
    labels = mapping(resource.props, *POOL_LABELS_PATH[resource.resource_type]) or {}
    known = {key: value for key, value in labels.items() if isinstance(value, str)}
    return _pool(
        text(labels, POOL_LABEL), text(labels, DRIVER_LABEL), text(labels, CUDA_LABEL), known
    )


def configured_pools(config: Mapping[str, Any]) -> dict[str, PoolDriver]:
    """The `gpuPools` setting's pools whose driver and CUDA ceiling are known."""
    pools = {}
    for name, entry in GPU_POOLS.read(config).items():
        if isinstance(entry, Mapping):
            pool = _pool(name, text(entry, "nvidiaDriver"), text(entry, "cuda"))
            if pool is not None:
                pools[name] = pool
    return pools


def _pool(
    name: str | None,
    driver: str | None,
    cuda: str | None,
    labels: Mapping[str, str] | None = None,
) -> PoolDriver | None:
    """A pool whose CUDA ceiling is known; a configured pool's only known label is its name."""
    if name is None or cuda is None or (found := _CUDA_VERSION.fullmatch(cuda)) is None:
        return None
    return PoolDriver(name, driver or "?", _release(found), labels or {POOL_LABEL: name})


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


def _numbers(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def _release(found: re.Match[str]) -> tuple[int, int]:
    return int(found[1]), int(found[2])


def _shown(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


def asks_for_gpus(container: Container, claims: frozenset[str] = frozenset()) -> bool:
    """Whether the container asks for GPUs: by a limit, or by naming one of the pod's claims
    of GPUs, `claims`."""
    return any(quantity(limit) for limit in gpu_limits(container).values()) or uses_claims(
        container, claims
    )


def each_gpu_container(
    pod: Pod, judge: Callable[[Container], Iterable[str]], claims: frozenset[str] = frozenset()
) -> Iterator[str]:
    """`judge(container)` for each container of the pod that asks for GPUs (`claims`: the
    names of the pod's claims of GPUs), each on its own (checks.each): one not known yet (at
    preview) skips that container alone."""

    def judged(container: Container) -> Iterable[str]:
        return judge(container) if asks_for_gpus(container, claims) else ()

    return each(pod.containers(RESOURCE_CONTAINERS), judged, pod.container_field)


def _driver_words(pool: PoolDriver) -> str:
    return (
        f'pool "{pool.name}" runs NVIDIA driver {pool.driver}, which runs CUDA {_shown(pool.cuda)}'
    )


def cuda_problems(pod: Pod, pool: PoolDriver, claims: frozenset[str]) -> Iterator[str]:
    """Containers that cannot run on the pool's driver: a newer CUDA major release than the
    driver's, or a driver below the release family's minor-compatibility minimum."""
    return each_gpu_container(pod, partial(_cuda_problems, pod, pool), claims)


def _cuda_problems(pod: Pod, pool: PoolDriver, container: Container) -> Iterator[str]:
    need = cuda_need(pod, container)
    if need is None:
        return
    major = need.version[0]
    floor = MINOR_COMPATIBILITY_FLOOR.get(major)
    if major > pool.cuda[0]:
        why = (
            f"and CUDA {pool.cuda[0]}.x at most without NVIDIA's forward compatibility"
            f" package: a CUDA {major} application fails at its first CUDA call"
        )
    elif floor is not None and pool.below(floor):
        why = (
            f"but CUDA {major}.x needs driver {floor} or newer even with"
            " minor version compatibility: it fails at its first CUDA call"
        )
    else:
        return
    yield (
        f"{container.label} needs CUDA {_shown(need.version)} ({need.source}), but"
        f" {_driver_words(pool)} natively {why}. Fix: use an image built for CUDA"
        f" {pool.cuda[0]}.x, or a pool with a newer driver."
    )


def minor_compatibility(pod: Pod, pool: PoolDriver, claims: frozenset[str]) -> Iterator[str]:
    """Containers of the driver's CUDA major release but a newer minor one than it runs
    natively: they run through minor version compatibility, with its limits."""
    return each_gpu_container(pod, partial(_minor_compatibility, pod, pool), claims)


def _minor_compatibility(pod: Pod, pool: PoolDriver, container: Container) -> Iterator[str]:
    need = cuda_need(pod, container)
    if need is not None and need.version[0] == pool.cuda[0] and need.version > pool.cuda:
        yield (
            f"{container.label} needs CUDA {_shown(need.version)} ({need.source}), and"
            f" {_driver_words(pool)} natively: it runs through CUDA minor version"
            " compatibility, with a limited feature set (PTX newer than the driver's is not"
            " JIT-compiled; calls that need a newer driver fail with"
            " cudaErrorCallRequiresNewerDriver), or in full with NVIDIA's forward"
            " compatibility package in the image. Fix: nothing, if the application ships"
            " compiled code for the pool's GPUs and uses no newer driver feature; else an"
            f" image built for CUDA {_shown(pool.cuda)} or older, or a pool with a newer"
            " driver."
        )


def unknown_cuda(pod: Pod, pool: PoolDriver, claims: frozenset[str]) -> Iterator[str]:
    return each_gpu_container(pod, partial(_unknown_cuda, pod, pool), claims)


def _unknown_cuda(pod: Pod, pool: PoolDriver, container: Container) -> Iterator[str]:
    if cuda_need(pod, container) is None:
        yield (
            f'{container.label} runs on pool "{pool.name}" (CUDA {_shown(pool.cuda)} and'
            " older), but its CUDA release is unknown: neither its image tag nor its env"
            f" says it. Fix: set the pod annotation {CUDA_ANNOTATION} to the CUDA release"
            " the image was built for (such as 12.4)."
        )


def unjudged_gpu_pods(
    args: StackValidationArgs, judged: Mapping[str, PoolDriver], claims: StackClaims
) -> Iterator[str]:
    """One problem for the stack when it has GPU pods but `judged`, the pools the CUDA checks
    held its pods to, is empty: no pool it declares (node group, GKE node pool or Karpenter
    NodePool) or `gpuPools` lists has a known CUDA release. It names the pools whose release is
    unknown."""
    if judged:
        return
    workloads = [
        resource.urn
        for resource in args.resources
        if any(
            _asks_for_gpus(pod, claims.gpu_claims(pod))
            for pod in pods_of(resource.resource_type, resource.props)
            if not pod.partial
        )
        and not _needs_no_cuda(resource)
    ]
    if not workloads:
        return
    declared = [
        text(mapping(resource.props, *POOL_LABELS_PATH[resource.resource_type]), POOL_LABEL)
        or resource.name
        for resource in args.resources
        if resource.resource_type in POOL_LABELS_PATH
    ]
    configured = list(GPU_POOLS.read(args.get_config()))
    policies = ", ".join((NAME, MINOR_COMPATIBILITY_NAME, KNOWN_NAME))
    unknown = []
    if declared:
        unknown.append(
            f"the stack's node pool(s) {', '.join(declared)} carry no {CUDA_LABEL} label"
        )
    if configured:
        unknown.append(f"`{GPU_POOLS.key}` gives no cuda for {', '.join(configured)}")
    if unknown:
        why = f"no pool has a known CUDA release ({'; '.join(unknown)})"
        fix = (
            "a platform stack knows a pool's CUDA release only where it knows the driver of"
            " the pool's node image (`gpu-platform plan` shows each pool's): pin the GPU pools to"
            f" a node image whose driver it knows, then set `{GPU_POOLS.key}` of each of"
            f" {policies} to the platform stack's gpuPools output again. A pool without GPUs"
            " needs nothing."
        )
    else:
        why = (
            f"the stack declares no node pool, and the `{GPU_POOLS.key}` parameter of the CUDA"
            " policies lists no pool"
        )
        fix = (
            f"set `{GPU_POOLS.key}` of each of {policies} in the policy pack's config to the"
            " platform stack's gpuPools output (pulumi stack output gpuPools --stack <platform"
            " stack>)."
        )
    yield (
        f"{len(workloads)} GPU workload(s) ({_first(workloads)}) were not held to any pool's"
        f" driver: {why}, so {NAME} could not judge whether their CUDA release runs there."
        f" Fix: {fix}"
    )


_NAMED_WORKLOADS = 5
"""How many workloads the stack's one advisory names: a tenant's stack may have hundreds."""


def _first(urns: Sequence[str]) -> str:
    rest = len(urns) - _NAMED_WORKLOADS
    return ", ".join(urns[:_NAMED_WORKLOADS]) + (f" and {rest} more" if rest > 0 else "")


def _needs_no_cuda(resource: PolicyResource) -> bool:
    """The platform's own workload that needs no CUDA release (`PlatformObject.needs_no_cuda`),
    known by kind and name as the platform's objects are, while each of its GPU containers runs
    only `nvidia-smi`, from one of its images, with the toolkit's CUDA check off: a look-alike
    that runs anything else, or turns the check on, is judged as any other."""
    try:
        found = platform_object(resource)
    except UnknownValueError:
        return False
    if found is None or not found.needs_no_cuda:
        return False
    return all(
        _runs_only_nvidia_smi(container, found.repositories)
        for pod in pods_of(resource.resource_type, resource.props)
        for container in pod.containers(RESOURCE_CONTAINERS)
        if any(quantity(limit) for limit in gpu_limits(container).values())
    )


# What the smoke test runs where its pool's driver is unknown, as on every pool of a stack no
# CUDA release is known for (gpu_platform/kubernetes/tenant_namespace.py, `smoke_test_job_spec`):
# `nvidia-smi` comes from the node's driver, whatever the image holds.
_NVIDIA_SMI = ["nvidia-smi"]


def _runs_only_nvidia_smi(container: Container, repositories: Sequence[str]) -> bool:
    image = value_at(container.props, "image")
    return (
        isinstance(image, str)
        and image_repository(image) in repositories
        and elements(container.props, "command") == _NVIDIA_SMI
        and not elements(container.props, "args")
        and any(
            text(entry, "name") == "NVIDIA_DISABLE_REQUIRE" and text(entry, "value") == "true"
            for entry in elements(container.props, "env")
        )
    )


def _asks_for_gpus(pod: Pod, claims: frozenset[str]) -> bool:
    return any(asks_for_gpus(c, claims) for c in pod.containers(RESOURCE_CONTAINERS))


CudaCheck = Callable[[Pod, PoolDriver, frozenset[str]], Iterator[str]]


def _validate(
    name: str,
    check: CudaCheck,
    args: StackValidationArgs,
    report_violation: ReportViolation,
    *,
    report_unjudged: bool = False,
) -> None:
    with Findings(name, "the stack", report_violation) as findings:
        configured = configured_pools(args.get_config())
        claims = findings.known("the stack's claims", partial(StackClaims.of, args.resources))
        known = claims or StackClaims({})

        def judge(pod: Pod, pool: PoolDriver) -> Iterator[str]:
            return check(pod, pool, known.gpu_claims(pod))

        judged = check_pods_on_pools(
            args, findings, pool_driver, judge, configured, labels_of=lambda pool: pool.labels
        )
        if report_unjudged:
            findings.check("the stack's GPU pods", partial(unjudged_gpu_pods, args, judged, known))


def _policy(
    name: str,
    description: str,
    check: CudaCheck,
    level: EnforcementLevel,
    *,
    report_unjudged: bool = False,
) -> StackValidationPolicy:
    return StackValidationPolicy(
        name=name,
        description=description,
        validate=partial(_validate, name, check, report_unjudged=report_unjudged),
        enforcement_level=level,
        config_schema=config_schema(GPU_POOLS),
    )


POLICIES: list[StackValidationPolicy] = [
    _policy(
        NAME,
        "GPU pods need a CUDA release the driver of each pool they may land on can run: no newer "
        "major release, and a driver at the release family's minor-compatibility minimum.",
        cuda_problems,
        EnforcementLevel.MANDATORY,
    ),
    _policy(
        MINOR_COMPATIBILITY_NAME,
        "GPU pods that need a newer CUDA minor release than their pool's driver runs natively "
        "run with minor version compatibility's limits.",
        minor_compatibility,
        EnforcementLevel.ADVISORY,
    ),
    # The stack-wide advisory is reported by this advisory policy alone: once per stack, and
    # never failing a plan.
    _policy(
        KNOWN_NAME,
        "GPU pods on the stack's pools say which CUDA release they need, and a stack with GPU "
        "pods has pools (its own, or `gpuPools`) to hold them to.",
        unknown_cuda,
        EnforcementLevel.ADVISORY,
        report_unjudged=True,
    ),
]
