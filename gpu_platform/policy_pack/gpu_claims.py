"""GPU claims: ResourceClaims and ResourceClaimTemplates take GPUs through the platform's classes,
as many as a pod may ask for.

A pool with `allocation: dra` hands out its GPUs through Dynamic Resource Allocation
(`resource.k8s.io/v1`): a pod names a claim, and the claim's requests name a DeviceClass and a
count. The platform gives each GPU model of its DRA pools a class, `<model>.gpu-platform.io`,
and caps each tenant's devices of it in the namespace's ResourceQuota; NVIDIA's DRA driver's own
classes, `gpu.nvidia.com` and `mig.nvidia.com` (nvidia-dra-driver-gpu v25.12.0
templates/deviceclass-gpu.yaml, deviceclass-mig.yaml), and `vfio.gpu.nvidia.com`
(deviceclass-vfio-gpu.yaml) take a GPU of any model and are capped at 0 there (but
`gpu.nvidia.com` from Kubernetes 1.36 on a stack without DRA pools, where its devices count as
`nvidia.com/gpu`: gpu_platform/kubernetes/dra_devices.py). A request is judged where it names a
class of either kind:
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

`gpu-pods-max-claimed-gpus` holds a pod that names claims (`spec.resourceClaims`) to
`maxGpusPerPod`, as `gpu-pods-max-gpus` holds one that counts GPUs: a stack policy, as a pod's
claims are other resources. A claim is counted where the pack knows it: a ResourceClaim or
claim template the stack declares in the pod's namespace (or, where the object or the pod leaves
its namespace to its provider, the one the stack declares of that kind and name that may be
there), its GPUs counted as `gpu-claims` counts them, or, not declared there, one of the
platform's own claim templates, `gpu-<model>` of a model the platform knows, which claims one
GPU (gpu_platform/kubernetes/dra_devices.py; every tenant namespace of a stack with DRA pools
has one per model). A claim of `All` is not counted: `gpu-claims` refuses it. A claim the pack
does not know counts nothing. The GPUs the pod counts as resources are added.

`gpu-claiming-pods-tolerate-gpu-taints` holds a pod that claims GPUs so (a claim the pack knows
to take GPUs) to tolerating the GPU nodes' taint `nvidia.com/gpu=present:NoSchedule` and the DRA
pools' own, `gpu-platform.io/allocation=dra:NoSchedule`, which every node with DRA GPUs carries
(gpu_platform/node_identity.py). The ExtendedResourceToleration admission plugin adds a
toleration only for an extended resource a container requests
(kubernetes plugin/pkg/admission/extendedresourcetoleration), never for a claim: without both,
the pod stays pending with no pool to scale up for it.
"""

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from checks import Findings, resource_policy
from gpu_workloads import GPU_TAINT, MAX_GPUS_PER_POD, pod_gpus, tolerates
from pods import Container, Pod, pods_of
from props import elements, indexed, number, shown, text
from pulumi_policy import (
    EnforcementLevel,
    PolicyResource,
    ReportViolation,
    ResourceValidationArgs,
    StackValidationArgs,
    StackValidationPolicy,
)
from settings import Setting, config_schema

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


# gpu_platform/kubernetes/dra_devices.py, `claim_template_name`, and the models it is made for,
# `PRODUCT_NAMES` (tests keep them equal): a template of another name (`gpu-direct-nic`) is not
# the platform's.
PLATFORM_TEMPLATE_PREFIX = "gpu-"
PLATFORM_TEMPLATE_MODELS = (
    "t4",
    "l4",
    "a10g",
    "l40s",
    "v100",
    "p4",
    "p100",
    "a30",
    "a100-40gb",
    "a100-80gb",
    "h100-80gb",
    "h100-mega-80gb",
    "h200-141gb",
    "b200",
)
PLATFORM_TEMPLATES = frozenset(
    PLATFORM_TEMPLATE_PREFIX + model for model in PLATFORM_TEMPLATE_MODELS
)
# A pod's claim names a ResourceClaim or a template to make one from (k8s.io/api core/v1
# types.go, `PodResourceClaim`).
POD_CLAIM_KINDS = {
    "resourceClaimName": "ResourceClaim",
    "resourceClaimTemplateName": "ResourceClaimTemplate",
}


def _claim_spec(resource_type: str, props: Mapping[str, Any]) -> tuple[Any, str]:
    """The ResourceClaimSpec and its field path: a claim's `spec`, a template's `spec.spec`."""
    if resource_type.endswith(":ResourceClaimTemplate"):
        return (props.get("spec") or {}).get("spec") or {}, "spec.spec"
    return props.get("spec") or {}, "spec"


def _gpu_alternatives(request: Any, at: str) -> list[tuple[str, Mapping[str, Any]]]:
    """The request's alternatives that name a GPU class, each with its field path."""
    return [
        (path, alternative)
        for path, alternative in _alternatives(request, at)
        if _is_gpu_class(text(alternative, "deviceClassName"))
    ]


def _count(alternatives: Sequence[tuple[str, Mapping[str, Any]]]) -> int:
    """A request's GPUs: of several alternatives the largest, as any of them may be allocated."""
    return max((int(number(a, "count") or 1) for _, a in alternatives), default=0)


def claimed_gpus(spec: Any) -> int | None:
    """The GPUs a ResourceClaimSpec takes; None where a request takes `All` of a node's."""
    counted = 0
    for _, request in indexed(spec, "devices", "requests"):
        gpus = _gpu_alternatives(request, "")
        if any((text(a, "allocationMode") or "ExactCount") != "ExactCount" for _, a in gpus):
            return None
        counted += _count(gpus)
    return counted


@dataclass(frozen=True)
class StackClaims:
    """The ResourceClaims and claim templates a stack declares, by kind, namespace (None where
    the object leaves it to its provider) and name: the GPUs each takes, None for `All`.

    An object or pod without a namespace lands in its provider's default one, which the pack
    cannot always tell (a pod's provider is not at hand where the CUDA rules judge it): where
    either leaves its namespace out, a pod's claim is the one object of that kind and name the
    stack declares that may be in the pod's namespace, and none where several may."""

    declared: Mapping[tuple[str, str | None, str], int | None]

    @classmethod
    def of(cls, resources: Sequence[PolicyResource]) -> "StackClaims":
        declared = {}
        for resource in resources:
            if resource.resource_type in CLAIM_TYPES:
                kind = resource.resource_type.rsplit(":", 1)[1]
                name = text(resource.props, "metadata", "name")
                if name is not None:
                    namespace = text(resource.props, "metadata", "namespace")
                    spec, _ = _claim_spec(resource.resource_type, resource.props)
                    declared[kind, namespace, name] = claimed_gpus(spec)
        return cls(declared)

    def gpus(self, pod: Pod, entry: Any) -> int | None:
        """The GPUs of a pod's claim (an entry of its `resourceClaims`): 0 where the pack does
        not know the claim, None where it takes `All`."""
        namespace = pod.namespace if pod.own_namespace else text(pod.props, "metadata", "namespace")
        for field, kind in POD_CLAIM_KINDS.items():
            name = text(entry, field)
            if name is None:
                continue
            if (kind, namespace, name) in self.declared:
                return self.declared[kind, namespace, name]
            unplaced = [
                gpus
                for (k, n, declared_name), gpus in self.declared.items()
                if (k, declared_name) == (kind, name) and None in (n, namespace)
            ]
            if len(unplaced) == 1:
                return unplaced[0]
            platforms = kind == "ResourceClaimTemplate" and name in PLATFORM_TEMPLATES
            return 1 if platforms else 0
        return 0

    def of_pod(self, pod: Pod) -> dict[str, int | None]:
        """The pod's claims by the name the pod gives each, with their GPUs (`gpus`)."""
        return {
            name: self.gpus(pod, entry)
            for entry in elements(pod.spec, "resourceClaims")
            if (name := text(entry, "name")) is not None
        }

    def gpu_claims(self, pod: Pod) -> frozenset[str]:
        """The names of the pod's claims that take GPUs."""
        return frozenset(name for name, gpus in self.of_pod(pod).items() if gpus != 0)


def uses_claims(container: Container, claims: frozenset[str]) -> bool:
    """Whether the container names one of the pod's claims `claims` in its resources: only
    such a container gets the claim's devices (k8s.io/api core/v1 types.go,
    `ResourceRequirements.Claims`)."""
    return any(
        text(claim, "name") in claims
        for claim in elements(container.props, container.resources_key, "claims")
    )


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
            " of any model: tenants claim GPUs only through the platform's classes, each of one"
            " model and capped at the namespace's gpuQuota. Fix: on a stack with DRA pools, claim"
            f" through the class of the model, `<model>{PLATFORM_CLASS_SUFFIX}` (the stack's"
            " gpuModels output names it); on a stack without, which has no such class, ask for"
            " nvidia.com/gpu in the containers' limits instead."
        )
    mode = text(request, "allocationMode") or "ExactCount"
    if mode != "ExactCount":
        yield (
            f"{at}.allocationMode is {shown(mode)}: every matching GPU of a node, however many it"
            " has. Fix: ask for an exact count (allocationMode: ExactCount, count)."
        )


def claim_problems(args: ResourceValidationArgs) -> Iterator[str]:
    spec, where = _claim_spec(args.resource_type, args.props)
    allowed = MAX_GPUS_PER_CLAIM.read(args.get_config())
    counted = 0
    for i, request in indexed(spec, "devices", "requests"):
        gpus = _gpu_alternatives(request, f"{where}.devices.requests[{i}]")
        for at, alternative in gpus:
            yield from _request_problems(at, alternative)
        counted += _count(gpus)
    if counted > allowed:
        yield (
            f"the claim ({where}.devices) asks for {counted} GPUs, more than the {allowed}"
            f" allowed per claim ({MAX_GPUS_PER_CLAIM.key}). Fix: ask for at most {allowed}, or"
            f" raise {MAX_GPUS_PER_CLAIM.key} if a node really has that many."
        )


MAX_CLAIMED_NAME = "gpu-pods-max-claimed-gpus"


def pod_claim_problems(pod: Pod, claims: StackClaims, config: Mapping[str, Any]) -> Iterator[str]:
    allowed = MAX_GPUS_PER_POD.read(config)
    claimed = [gpus for gpus in claims.of_pod(pod).values() if gpus]
    if not claimed:
        return
    counted = pod_gpus(pod)
    asked = sum(claimed) + counted
    if asked > allowed:
        also = f", and counts {shown(float(counted))} more as resources" if counted else ""
        yield (
            f"the pod ({pod.spec_field('resourceClaims')}) claims {sum(claimed)} GPUs through"
            f" DRA{also}: {shown(float(asked))}, more than the {allowed} allowed per pod"
            f" ({MAX_GPUS_PER_POD.key}). Fix: claim at most {allowed}, or raise"
            f" {MAX_GPUS_PER_POD.key} if a node really has that many."
        )


TOLERATIONS_NAME = "gpu-claiming-pods-tolerate-gpu-taints"
# gpu_platform/node_identity.py, DRA_TAINT (a test keeps them equal).
DRA_TAINT = ("gpu-platform.io/allocation", "dra")


def pod_toleration_problems(pod: Pod, claims: StackClaims) -> Iterator[str]:
    if not claims.gpu_claims(pod):
        return
    tolerations = elements(pod.spec, "tolerations")
    taints = [tuple(GPU_TAINT.split(":")[0].split("=")), DRA_TAINT]
    missing = [
        f"{key}={value}:NoSchedule"
        for key, value in taints
        if not any(tolerates(t, key, value) for t in tolerations)
    ]
    if missing:
        yield (
            f"the pod claims GPUs through DRA ({pod.spec_field('resourceClaims')}) but does not"
            f" tolerate {' or '.join(missing)} ({pod.spec_field('tolerations')}), which every"
            " node with DRA GPUs carries; no admission plugin adds a toleration for a claim, so"
            " it would stay pending. Fix: add the tolerations of the stack's gpuModels output"
            " for the model it claims."
        )


def _validate_claiming_pods(
    name: str,
    problems: Callable[[Pod, StackClaims, Mapping[str, Any]], Iterator[str]],
    args: StackValidationArgs,
    report_violation: ReportViolation,
) -> None:
    """`problems(pod, claims, config)` for every complete pod of the stack."""
    with Findings(name, "the stack", report_violation) as findings:
        claims = findings.known("the stack's claims", partial(StackClaims.of, args.resources))
        if claims is None:
            return
        config = args.get_config()
        for resource in args.resources:
            for pod in pods_of(resource.resource_type, resource.props):
                if not pod.partial:
                    findings.check(
                        f"the claims of {resource.urn}",
                        partial(problems, pod, claims, config),
                        resource.urn,
                    )


POLICIES = [
    resource_policy(
        "gpu-claims",
        "ResourceClaims and their templates claim GPUs through the class of a model, an exact"
        " count of at most maxGpusPerClaim.",
        claim_problems,
        MAX_GPUS_PER_CLAIM,
        resource_types=CLAIM_TYPES,
    ),
    StackValidationPolicy(
        name=MAX_CLAIMED_NAME,
        description="A pod claims no more GPUs through DRA (with those it counts) than"
        " maxGpusPerPod: the claims and claim templates of the stack it names, and the"
        " platform's gpu-<model> templates, one GPU each.",
        validate=partial(_validate_claiming_pods, MAX_CLAIMED_NAME, pod_claim_problems),
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=config_schema(MAX_GPUS_PER_POD),
    ),
    StackValidationPolicy(
        name=TOLERATIONS_NAME,
        description="A pod that claims GPUs through DRA tolerates the GPU nodes' taint and the"
        " DRA pools' taint, which no admission plugin adds for a claim.",
        validate=partial(
            _validate_claiming_pods,
            TOLERATIONS_NAME,
            lambda pod, claims, _config: pod_toleration_problems(pod, claims),
        ),
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
]
