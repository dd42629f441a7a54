"""GPU workloads ask for GPUs the way the scheduler, the autoscaler and the nodes expect.

A GPU is an extended resource: Kubernetes takes its request from the limit, never overcommits
it and counts it in whole devices. GPU nodes carry the `nvidia.com/gpu=present:NoSchedule`
taint, so a GPU pod must tolerate it; and it must select GPU nodes by a label the node pool
declares, because that is all the cluster autoscaler knows of a pool scaled to zero. The
operator's node labels (`nvidia.com/gpu.product`, ...) appear only once a node runs, so they
cannot bring a pool up from zero.
"""

import math
import re
from collections.abc import Callable, Iterator, Mapping
from decimal import Decimal
from functools import partial
from typing import Any

from checks import each, resource_policy
from platform_scope import platform_object
from pods import Container, Pod, pods_of, trainer_overrides
from props import any_of, elements, keys, shown, text, value_at
from pulumi_policy import ResourceValidationArgs, ResourceValidationPolicy
from pulumi_policy.proxy import UnknownValueError
from settings import Setting

GPU_TAINT = "nvidia.com/gpu=present:NoSchedule"
GPU_NODE_LABELS = (
    "gpu-platform.io/accelerator",
    "gpu-platform.io/pool",
    "nvidia.com/gpu.present",
    "k8s.amazonaws.com/accelerator",
    "cloud.google.com/gke-accelerator",
)
# Ephemeral containers cannot ask for resources.
RESOURCE_CONTAINERS = ("initContainers", "containers")


def is_gpu_resource(name: str) -> bool:
    return name in ("nvidia.com/gpu", "nvidia.com/gpu.shared") or name.startswith("nvidia.com/mig-")


_QUANTITY = re.compile(r"([+-]?(?:\d+(?:\.\d*)?|\.\d+))([eE][+-]?\d+|[KMGTPE]i|[numkMGTPE])?")
_SUFFIXES = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
    **{f"{prefix}i": Decimal(1024**power) for power, prefix in enumerate("KMGTPE", start=1)},
}


def quantity(value: Any) -> Decimal | None:
    """A Kubernetes resource quantity (`2`, `"2"`, `"500m"`, `"1Ki"`, `"1e3"`), or None."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return Decimal(str(value)) if math.isfinite(value) else None
    if not isinstance(value, str):
        return None
    match = _QUANTITY.fullmatch(value)
    if match is None:
        return None
    number, suffix = match[1], match[2] or ""
    try:
        if suffix[:1] in ("e", "E"):
            return Decimal(number) * Decimal(10) ** int(suffix[1:])
        return Decimal(number) * _SUFFIXES.get(suffix, Decimal(1))
    except ArithmeticError:  # an exponent too large for a Decimal
        return None


def _gpu_entries(container: Container, section: str) -> dict[str, Any]:
    # Only the GPU entries are read: a memory limit not known yet during preview must not hide
    # what the GPU rules find.
    path = (container.resources_key, section)
    names = [name for name in keys(container.props, *path) if is_gpu_resource(name)]
    return {name: value_at(container.props, *path, name) for name in names}


def gpu_limits(container: Container) -> dict[str, Any]:
    """The GPU resources the container gets, by name: its limits, which its requests equal."""
    return _gpu_entries(container, "limits")


def _gpu_asks(pod: Pod) -> Iterator[tuple[str, Decimal | None]]:
    """Each GPU resource entry of the pod's containers, by name, read one at a time."""
    for container in pod.containers(RESOURCE_CONTAINERS):
        for section in ("limits", "requests"):
            for name, value in _gpu_entries(container, section).items():
                yield name, quantity(value)


def asks_for_gpus(container: Container) -> bool:
    return any(
        quantity(value) != 0
        for section in ("limits", "requests")
        for value in _gpu_entries(container, section).values()
    )


def gpu_resources(pod: Pod) -> frozenset[str]:
    """The GPU resources the pod's containers ask for, by name: any but a quantity of 0 (a
    value not known yet is counted)."""
    return frozenset(name for name, value in _gpu_asks(pod) if value != 0)


def is_gpu_pod(pod: Pod) -> bool:
    """Whether any container asks for a GPU: one that does is enough, whatever the others'
    values not known yet."""
    return any_of(pod.containers(RESOURCE_CONTAINERS), asks_for_gpus)


def gpus_of(container: Container) -> Decimal:
    asked = _gpu_entries(container, "requests") | _gpu_entries(container, "limits")
    return sum((quantity(value) or Decimal(0) for value in asked.values()), Decimal(0))


def pod_gpus(pod: Pod) -> Decimal:
    """The GPUs the scheduler reserves for the pod: the larger of the init phase's peak and the
    app containers plus sidecars (init containers with `restartPolicy: Always`, KEP-753)."""
    peak = sidecars = Decimal(0)
    for container in pod.containers(("initContainers",)):
        if text(container.props, "restartPolicy") == "Always":
            sidecars += gpus_of(container)
            peak = max(peak, sidecars)
        else:
            peak = max(peak, sidecars + gpus_of(container))
    app = sum((gpus_of(c) for c in pod.containers(("containers",))), Decimal(0))
    return max(peak, sidecars + app)


def limit_problems(pod: Pod, config: Mapping[str, Any]) -> Iterator[str]:
    return each(
        pod.containers(RESOURCE_CONTAINERS), partial(_limit_problems, pod), pod.container_field
    )


def _limit_problems(pod: Pod, container: Container) -> Iterator[str]:
    limits = _gpu_entries(container, "limits")
    for name, asked in _gpu_entries(container, "requests").items():
        field = pod.container_field(container, "resources", "requests", name)
        if name not in limits:
            if pod.partial:
                # The object a patch changes may hold the limit.
                continue
            yield (
                f"{container.label} asks for {name} in {field} but sets no limit for it. "
                f'Fix: set resources.limits["{name}"] to {shown(asked)}; Kubernetes takes '
                "a GPU request from its limit."
            )
        elif quantity(limits[name]) != quantity(asked):
            yield (
                f"{container.label} sets {field}={shown(asked)} but "
                f'resources.limits["{name}"]={shown(limits[name])}. Fix: set only the limit, '
                "or make the request equal to it: GPUs cannot be overcommitted."
            )
    for name, limit in limits.items():
        count = quantity(limit)
        if count is None or count < 0 or count != count.to_integral_value():
            field = pod.container_field(container, "resources", "limits", name)
            yield (
                f"{container.label} sets {field}={shown(limit)}, not a whole number of "
                "devices. Fix: ask for a whole number of GPUs (or GPU slices)."
            )


def tolerates(toleration: Any, taint_key: str, taint_value: str) -> bool:
    """Whether the toleration tolerates the `NoSchedule` taint `taint_key=taint_value` (k8s.io/api
    core/v1 toleration.go, `ToleratesTaint`)."""
    key = value_at(toleration, "key")
    operator = value_at(toleration, "operator") or "Equal"
    if value_at(toleration, "effect") not in (None, "", "NoSchedule"):
        return False
    if key in (None, ""):
        # An empty key with Exists tolerates every taint.
        return operator == "Exists"
    return key == taint_key and (
        operator == "Exists"
        or (operator == "Equal" and value_at(toleration, "value") == taint_value)
    )


def _tolerates_gpu_taint(toleration: Any) -> bool:
    return tolerates(toleration, "nvidia.com/gpu", "present")


def _asks_for_whole_gpus(pod: Pod) -> bool:
    return any(name == "nvidia.com/gpu" and count != 0 for name, count in _gpu_asks(pod))


def toleration_problems(pod: Pod, config: Mapping[str, Any]) -> Iterator[str]:
    # EKS (every platform version) and GKE run the ExtendedResourceToleration admission plugin,
    # which gives a pod that requests an extended resource the toleration `<resource>:Exists:
    # NoSchedule` (kubernetes plugin/pkg/admission/extendedresourcetoleration). A pod asking for
    # nvidia.com/gpu so tolerates the GPU taint; one asking only for a MIG slice or a renamed
    # shared resource gets a toleration for that name, not for nvidia.com/gpu.
    if not is_gpu_pod(pod) or _asks_for_whole_gpus(pod):
        return
    if not any(_tolerates_gpu_taint(t) for t in elements(pod.spec, "tolerations")):
        yield (
            f"the GPU pod does not tolerate the GPU nodes' taint {GPU_TAINT} "
            f"({pod.spec_field('tolerations')}), and asks only for GPU slices, for whose names "
            "the ExtendedResourceToleration admission plugin adds tolerations instead, so it "
            'cannot be scheduled on them. Fix: add the toleration {key: "nvidia.com/gpu", '
            'operator: "Exists", effect: "NoSchedule"}.'
        )


def _term_selects_gpu_nodes(term: Any) -> bool:
    return any(
        value_at(expression, "key") in GPU_NODE_LABELS
        and value_at(expression, "operator") in ("In", "Exists")
        for expression in elements(term, "matchExpressions")
    )


def selects_gpu_nodes(spec: Mapping[str, Any]) -> bool:
    # Keys only: a selector value computed during preview still selects by that label.
    if any(key in GPU_NODE_LABELS for key in keys(spec, "nodeSelector")):
        return True
    affinity = ("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
    terms = elements(spec, *affinity, "nodeSelectorTerms")
    # Terms are alternatives: each of them must lead to GPU nodes.
    return bool(terms) and all(_term_selects_gpu_nodes(term) for term in terms)


def node_selection_problems(pod: Pod, config: Mapping[str, Any]) -> Iterator[str]:
    if is_gpu_pod(pod) and not selects_gpu_nodes(pod.spec):
        yield (
            f"the GPU pod selects no GPU nodes: neither {pod.spec_field('nodeSelector')} nor a "
            f"required node affinity names one of the labels {', '.join(GPU_NODE_LABELS)}. "
            'Fix: select its pool, e.g. nodeSelector: {"gpu-platform.io/accelerator": "l4"}, '
            "so the autoscaler knows which pool to scale up from zero."
        )


MAX_GPUS_PER_POD = Setting(
    "maxGpusPerPod",
    {
        "type": "integer",
        "minimum": 1,
        "default": 8,
        "description": "The most GPUs (devices, shared replicas or MIG slices) one pod may ask "
        "for: more than any node has leaves the pod pending and the autoscaler idle.",
    },
)


def gpu_count_problems(pod: Pod, config: Mapping[str, Any]) -> Iterator[str]:
    allowed = MAX_GPUS_PER_POD.read(config)
    asked = pod_gpus(pod)
    if asked > allowed:
        yield (
            f"the pod ({pod.spec_field()}) asks for {shown(float(asked))} GPUs, more than the "
            f"{allowed} allowed per pod ({MAX_GPUS_PER_POD.key}). Fix: ask for at most "
            f"{allowed}, or raise {MAX_GPUS_PER_POD.key} if a node really has that many."
        )


REQUIRE_DIGESTS = Setting(
    "requireDigests",
    {
        "type": "boolean",
        "default": False,
        "description": "Require every GPU pod's image to be pinned by digest "
        "(name:tag@sha256:...), not by tag alone: a tag can be pushed again, a digest names one "
        "image. On in production stacks. The platform's own images in its own objects are left "
        "to platform-images-by-digest: make that policy mandatory with this on.",
    },
)
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
# An image reference's name and tag as the container runtimes parse one (distribution/reference
# regexp.go: `[domain[:port]/]path-component[/path-component...][:tag]`, lowercase path
# components, a tag of up to 128 word characters, dots and dashes). What comes before the `@`
# must be one: a tag value that ends in `@sha256:<digest>` but holds a line break or a quote
# (YAML of its own in a chart that writes it unescaped) is no pinned reference.
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_NAME_AND_TAG = re.compile(
    rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*(?::[0-9]+)?/)?"
    rf"{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*(?::[\w][\w.-]{{0,127}})?"
)


def image_problem(image: str, require_digest: bool = False) -> str | None:
    """What keeps an image reference from being pinned, or None when it is pinned."""
    name, _, digest = image.partition("@")
    if not _NAME_AND_TAG.fullmatch(name):
        return "is not an image reference ([registry/]name[:tag][@sha256:<64 hex>])"
    if digest:
        return None if _DIGEST.fullmatch(digest) else "has a digest that is not sha256:<64 hex>"
    if require_digest:
        return "has no digest"
    last_part = name.rsplit("/", 1)[-1]
    tag = last_part.partition(":")[2]
    if not tag:
        return "has no tag, so it means latest"
    return "uses the latest tag" if tag == "latest" else None


def image_problems(
    pod: Pod, config: Mapping[str, Any], waived: frozenset[str] = frozenset()
) -> Iterator[str]:
    """`waived`: the image repositories whose images `requireDigests` leaves to
    `platform-images-by-digest` in this object (`platform_repositories`)."""
    # A patch that sets no GPU count may change a GPU pod's image or another pod's: which, the
    # object it patches says, and the pack does not see that object.
    if not is_gpu_pod(pod):
        return iter(())
    judge = partial(_image_problems, pod, REQUIRE_DIGESTS.read(config), waived)
    return each(pod.containers(), judge, pod.container_field)


def platform_repositories(args: ResourceValidationArgs) -> frozenset[str]:
    """The image repositories the platform runs in the resource, when it is one of the
    platform's own objects (`platform_scope.platform_object`): `platform-images-by-digest`
    requires their images' digests but for the reviewed exceptions its `awaitingDigests`
    names, so here they are held to a tag alone. Any other image in it, and every image of an
    object whose name is not known yet, is held to the config as it is."""
    try:
        found = platform_object(args)
    except UnknownValueError:
        return frozenset()
    return frozenset(found.repositories) if found else frozenset()


def image_repository(image: str) -> str:
    """An image reference's repository: its name without tag or digest."""
    head, slash, last = image.partition("@")[0].rpartition("/")
    return head + slash + last.partition(":")[0]


def _image_problems(
    pod: Pod, require_digest: bool, waived: frozenset[str], container: Container
) -> Iterator[str]:
    image = value_at(container.props, "image")
    if not isinstance(image, str):
        return
    require_digest = require_digest and image_repository(image) not in waived
    problem = image_problem(image, require_digest)
    if problem:
        pin = (
            "pin its digest (image:tag@sha256:...; " + REQUIRE_DIGESTS.key + " is on)"
            if require_digest
            else "pin a version tag or a digest (image@sha256:...)"
        )
        yield (
            f"{container.label} image {shown(image)} "
            f"({pod.container_field(container, 'image')}) {problem}. Fix: {pin}, so every "
            "node runs the same image."
        )


def pod_policy(
    name: str,
    description: str,
    problems: Callable[[Pod, Mapping[str, Any]], Iterator[str]],
    *settings: Setting,
    trainers: bool = False,
    patches: bool = False,
    problems_of: Callable[
        [ResourceValidationArgs], Callable[[Pod, Mapping[str, Any]], Iterator[str]]
    ]
    | None = None,
) -> ResourceValidationPolicy:
    """A policy checking every pod of every kind that carries one, with `trainers` the
    training container a TrainJob's trainer overrides (its GPU count and image), and with
    `patches` the values a patch's pod sets (`Pod.partial`: a `DeploymentPatch`, a runtime
    patch), for the rules that judge only values a patch may set on its own (GPU counts and
    images). `problems_of`: what judges a resource's pods, where it depends on the resource
    (`problems` as the resource makes it)."""

    def pod_problems(args: ResourceValidationArgs) -> Iterator[str]:
        # A patch's pod lacks what the object it patches already has: its tolerations and node
        # selection may be the object's.
        pods = [p for p in pods_of(args.resource_type, args.props) if patches or not p.partial]
        if trainers:
            pods += trainer_overrides(args.resource_type, args.props)
        config = args.get_config()
        judge = problems if problems_of is None else problems_of(args)
        # Each pod template on its own: one not known yet hides nothing of the others.
        return each(pods, lambda pod: judge(pod, config), lambda pod: pod.label)

    return resource_policy(name, description, pod_problems, *settings)


POLICIES = [
    pod_policy(
        "gpu-resources-in-limits",
        "Containers ask for GPUs in whole numbers in resources.limits, with any request equal.",
        limit_problems,
        patches=True,
    ),
    pod_policy(
        "gpu-pods-tolerate-gpu-taint",
        f"GPU pods that ask only for GPU slices tolerate the GPU nodes' taint {GPU_TAINT}.",
        toleration_problems,
    ),
    pod_policy(
        "gpu-pods-select-gpu-nodes",
        "GPU pods select GPU nodes by a label their node pool declares.",
        node_selection_problems,
    ),
    pod_policy(
        "gpu-pods-max-gpus",
        "A pod asks for no more GPUs than configured.",
        gpu_count_problems,
        MAX_GPUS_PER_POD,
        trainers=True,
        patches=True,
    ),
    pod_policy(
        "gpu-pods-pinned-images",
        "GPU pods run images pinned to a version tag or a digest (a digest with requireDigests).",
        image_problems,
        REQUIRE_DIGESTS,
        trainers=True,
        patches=True,
        problems_of=lambda args: partial(image_problems, waived=platform_repositories(args)),
    ),
]
