"""GPU claims: ResourceClaims and ResourceClaimTemplates take GPUs through the platform's classes,
as many as a pod may ask for.

A pool with `allocation: dra` hands out its GPUs through Dynamic Resource Allocation
(`resource.k8s.io/v1`): a pod names a claim, and the claim's requests name a DeviceClass and a
count. The platform gives each GPU model of its DRA pools a class, `<model>.gpu-platform.io`,
and caps each tenant's devices of it in the namespace's ResourceQuota; NVIDIA's DRA driver's own
classes, `gpu.nvidia.com` and `mig.nvidia.com` (nvidia-dra-driver-gpu v25.12.0
templates/deviceclass-gpu.yaml, deviceclass-mig.yaml), and `vfio.gpu.nvidia.com`
(deviceclass-vfio-gpu.yaml) take a GPU of any model and are capped at 0 there. A request is
judged where it names a class of either kind:
- not through the driver's own classes, which take any model and which the tenants' quotas
  hold at nothing;
- an exact count (`allocationMode: ExactCount`, the default, with `count`, 1 by default) of at
  most `maxGpusPerClaim`, across a claim's requests, as `gpu-pods-max-gpus` counts a pod's GPUs:
  `All` takes every matching device of a node, as many as a node has (the quota counts it as
  the 32 an allocation can hold, kubernetes pkg/quota/v1/evaluator/core/resource_claims.go).
`firstAvailable` alternatives are judged each on its own, as any of them may be allocated.
Claims of `v1beta2` (as `v1`) and `v1beta1` (whose requests hold the class and count
themselves) are judged alike.
A claim of other devices (a network card's driver's) is left alone.
"""

from collections.abc import Iterator, Mapping
from typing import Any

from checks import resource_policy
from props import indexed, number, shown, text
from pulumi_policy import ResourceValidationArgs
from settings import Setting

PLATFORM_CLASS_SUFFIX = ".gpu-platform.io"
DRIVER_CLASSES = ("gpu.nvidia.com", "mig.nvidia.com", "vfio.gpu.nvidia.com")
MAX_GPUS_PER_CLAIM = Setting(
    "maxGpusPerClaim",
    {
        "type": "integer",
        "minimum": 1,
        "default": 8,
        "description": "The most GPUs one ResourceClaim (or claim template) may ask for, across "
        "its requests: more than any node has leaves its pods pending and the autoscaler idle. "
        "Give it gpu-pods-max-gpus' maxGpusPerPod.",
    },
)
# Kubernetes 1.34 to 1.36 serve the beta versions beside v1, and pulumi_kubernetes declares
# them all: a claim is judged whichever version declares it.
CLAIM_TYPES = tuple(
    f"kubernetes:resource.k8s.io/{version}:{kind}"
    for version in ("v1", "v1beta2", "v1beta1")
    for kind in ("ResourceClaim", "ResourceClaimTemplate")
)


def _claim_spec(args: ResourceValidationArgs) -> tuple[Any, str]:
    """The ResourceClaimSpec and its field path: a claim's `spec`, a template's `spec.spec`."""
    if args.resource_type.endswith(":ResourceClaimTemplate"):
        return (args.props.get("spec") or {}).get("spec") or {}, "spec.spec"
    return args.props.get("spec") or {}, "spec"


def _alternatives(request: Mapping[str, Any], at: str) -> list[tuple[str, Mapping[str, Any]]]:
    """What a request may be allocated as, each with its field path: its `exactly`, or each of
    its `firstAvailable` subrequests; in `v1beta1`, which has no `exactly`, the request itself
    (kubernetes staging/src/k8s.io/api/resource/v1beta1/types.go, `DeviceRequest`)."""
    exactly = request.get("exactly")
    if isinstance(exactly, Mapping):
        found = [(f"{at}.exactly", exactly)]
    else:
        found = [(at, request)] if "deviceClassName" in request else []
    return found + [(f"{at}.firstAvailable[{j}]", a) for j, a in indexed(request, "firstAvailable")]


def _is_gpu_class(name: str | None) -> bool:
    return name is not None and (name.endswith(PLATFORM_CLASS_SUFFIX) or name in DRIVER_CLASSES)


def _request_problems(at: str, request: Mapping[str, Any]) -> Iterator[str]:
    device_class = text(request, "deviceClassName")
    if device_class in DRIVER_CLASSES:
        yield (
            f"{at}.deviceClassName is {shown(device_class)}, NVIDIA's DRA driver's class of GPUs"
            " of any model, which the tenants' quotas hold at none. Fix: claim through the class"
            f" of the model, `<model>{PLATFORM_CLASS_SUFFIX}` (the stack's gpuModels output names"
            " it)."
        )
    mode = text(request, "allocationMode") or "ExactCount"
    if mode != "ExactCount":
        yield (
            f"{at}.allocationMode is {shown(mode)}: every matching GPU of a node, however many it"
            " has. Fix: ask for an exact count (allocationMode: ExactCount, count)."
        )


def claim_problems(args: ResourceValidationArgs) -> Iterator[str]:
    spec, where = _claim_spec(args)
    allowed = MAX_GPUS_PER_CLAIM.read(args.get_config())
    counted = 0
    for i, request in indexed(spec, "devices", "requests"):
        gpus = [
            (at, alternative)
            for at, alternative in _alternatives(request, f"{where}.devices.requests[{i}]")
            if _is_gpu_class(text(alternative, "deviceClassName"))
        ]
        for at, alternative in gpus:
            yield from _request_problems(at, alternative)
        # Of several alternatives the largest, as any of them may be allocated.
        counted += max((int(number(a, "count") or 1) for _, a in gpus), default=0)
    if counted > allowed:
        yield (
            f"the claim ({where}.devices) asks for {counted} GPUs, more than the {allowed}"
            f" allowed per claim ({MAX_GPUS_PER_CLAIM.key}). Fix: ask for at most {allowed}, or"
            f" raise {MAX_GPUS_PER_CLAIM.key} if a node really has that many."
        )


POLICIES = [
    resource_policy(
        "gpu-claims",
        "ResourceClaims and their templates claim GPUs through the class of a model, an exact"
        " count of at most maxGpusPerClaim.",
        claim_problems,
        MAX_GPUS_PER_CLAIM,
        resource_types=CLAIM_TYPES,
    )
]
