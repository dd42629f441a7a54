"""GPU pods ask a pool for what its nodes advertise in its sharing mode.

The stack's own pools say how they share their GPUs: in the node labels the GPU Operator reads,
`nvidia.com/device-plugin.config` (`time-slicing-4`, `mps-2`, `mig-mixed`, `exclusive`) and, on
MIG pools, `nvidia.com/mig.config` (`all-1g.10gb`); or, where GKE shares them, in the GKE node
pool's accelerator (`gpuSharingConfig`, `gpuPartitionSize`). A pod that selects one of them by
its `gpu-platform.io/pool` label is held to it, and one whose affinity allows several pools is
held to each:

- On a time-sliced or MPS pool, a container gets at most one `nvidia.com/gpu`. Two replicas
  may be two slices of one GPU and buy no more compute (k8s-device-plugin README, "With
  CUDA Time-Slicing"), so the platform's device plugin config refuses them
  (`failRequestsGreaterThanOne`), but only at kubelet admission, after the pod was scheduled and
  a node possibly started for it: the pod then fails with `UnexpectedAdmissionError` and has to
  be deleted by hand.
  GKE's device plugin refuses them the same way (container-engine-accelerators
  `pkg/gpu/nvidia/gpusharing/gpusharing.go`).
- On a MIG pool, a container asks for the pool's own slice, `nvidia.com/mig-<profile>`. Its
  nodes advertise no whole GPU (`nvidia.com/gpu: 0`) and no other slice, so any other GPU
  resource leaves the pod pending for good, with no pool to scale up for it. GKE advertises
  its partitions as `nvidia.com/gpu`, and nothing else.

Pods in other stacks are not seen here; the pod helper (`gpu_platform.kubernetes.gpu_pod`)
refuses the same requests when it builds a pod spec.
"""

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol, TypeVar

import karpenter_pools
from checks import Findings, each
from gpu_pools import NODE_GROUP_TYPE, NODE_POOL_TYPE
from gpu_workloads import RESOURCE_CONTAINERS, gpu_limits, quantity
from pods import Container, Pod, pods_of
from props import elements, mapping, shown, text, value_at
from pulumi_policy import (
    EnforcementLevel,
    PolicyResource,
    ReportViolation,
    StackValidationArgs,
    StackValidationPolicy,
)

NAME = "gpu-pods-match-pool-sharing"
POOL_LABEL = "gpu-platform.io/pool"
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
SHARED_CONFIG_PREFIXES = ("time-slicing-", "mps-")
POOL_LABELS_PATH = {
    NODE_GROUP_TYPE: ("labels",),
    NODE_POOL_TYPE: ("nodeConfig", "labels"),
    karpenter_pools.NODE_POOL_TYPE: karpenter_pools.TEMPLATE_LABELS,
}


@dataclass(frozen=True)
class PoolSharing:
    """How one pool of the stack shares its GPUs."""

    name: str
    config: str
    """How, in words: the device plugin config its nodes select (`time-slicing-4`,
    `mig-mixed`, ...), or GKE's setting."""
    shared: bool
    """Time-sliced or MPS: more than one per container is refused."""
    only_resource: str | None = None
    """The one GPU resource its nodes advertise, on a MIG pool."""


def pool_sharing(resource: PolicyResource) -> PoolSharing | None:
    labels = mapping(resource.props, *POOL_LABELS_PATH[resource.resource_type]) or {}
    name = text(labels, POOL_LABEL)
    if name is None:
        return None
    config = text(labels, DEVICE_PLUGIN_CONFIG_LABEL)
    if config is not None:
        profile = text(labels, MIG_CONFIG_LABEL)
        mig = f"nvidia.com/mig-{profile.removeprefix('all-')}" if profile else None
        return PoolSharing(name, config, config.startswith(SHARED_CONFIG_PREFIXES), mig)
    if resource.resource_type != NODE_POOL_TYPE:
        return None
    accelerator = value_at(resource.props, "nodeConfig", "guestAccelerators", 0)
    strategy = text(accelerator, "gpuSharingConfig", "gpuSharingStrategy")
    if strategy is not None:
        return PoolSharing(name, f"GKE {strategy}", shared=True)
    partition = text(accelerator, "gpuPartitionSize")
    if partition is not None:
        return PoolSharing(name, f"GKE partitions of {partition}", False, "nvidia.com/gpu")
    return None


def _required_node_selector_terms(pod: Pod) -> list[Any]:
    return elements(
        pod.spec,
        "affinity",
        "nodeAffinity",
        "requiredDuringSchedulingIgnoredDuringExecution",
        "nodeSelectorTerms",
    )


def selected_pools(pod: Pod) -> tuple[str, ...]:
    """The pools the pod selects by name, by node selector or required node affinity: the one
    its node selector names, else every pool its affinity terms (any of which may place it)
    name in an `In` expression. A term without one may place it on any node: it is not judged."""
    by_selector = text(pod.spec, "nodeSelector", POOL_LABEL)
    if by_selector is not None:
        return (by_selector,)
    terms = _required_node_selector_terms(pod)
    names = {
        value
        for term in terms
        for expression in elements(term, "matchExpressions")
        if value_at(expression, "key") == POOL_LABEL and value_at(expression, "operator") == "In"
        for value in elements(expression, "values")
    }
    return tuple(sorted(names))


def may_land_on(pod: Pod, labels: Mapping[str, str]) -> bool:
    """Whether a node with `labels` admits the pod, as the scheduler matches a node selector and
    required node affinity (kubernetes/component-helpers scheduling/corev1/nodeaffinity
    `NodeSelectorRequirementsAsSelector`): every `nodeSelector` pair, and any one of the
    `nodeSelectorTerms` whose expressions all match. A key the labels lack matches only `NotIn`
    and `DoesNotExist`, so a pod that selects by a label the platform does not declare on the
    pool (a cloud's own, such as the instance type) is held to no pool."""
    selector = mapping(pod.spec, "nodeSelector") or {}
    if any(labels.get(key) != value for key, value in selector.items()):
        return False
    terms = _required_node_selector_terms(pod)
    return not terms or any(
        all(_matches(expression, labels) for expression in elements(term, "matchExpressions"))
        for term in terms
    )


def _matches(expression: object, labels: Mapping[str, str]) -> bool:
    key, operator = text(expression, "key"), text(expression, "operator")
    values = [str(value) for value in elements(expression, "values")]
    value = labels.get(key) if key is not None else None
    if operator == "In":
        return value in values
    if operator == "NotIn":
        return value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    if operator in ("Gt", "Lt") and value is not None and value.isdigit() and values:
        bound = values[0]
        if bound.lstrip("-").isdigit():
            return int(value) > int(bound) if operator == "Gt" else int(value) < int(bound)
    return False


def sharing_problems(pod: Pod, pool: PoolSharing) -> Iterator[str]:
    # Each container on its own: one not known yet (at preview) hides nothing of the others.
    return each(
        pod.containers(RESOURCE_CONTAINERS),
        partial(_container_sharing_problems, pod, pool),
        pod.container_field,
    )


def _container_sharing_problems(pod: Pod, pool: PoolSharing, container: Container) -> Iterator[str]:
    for name, limit in gpu_limits(container).items():
        count = quantity(limit)
        if not count:
            continue
        field = pod.container_field(container, "resources", "limits", name)
        if pool.shared and count > 1:
            yield (
                f"{container.label} asks for {shown(limit)} {name} ({field}) on pool "
                f'"{pool.name}", whose GPUs are shared ({pool.config}): its device plugin '
                "refuses more than 1 per container at kubelet admission, after the pod is "
                "scheduled, as two replicas may be slices of one GPU. Fix: ask for 1, or "
                "use a pool with whole GPUs."
            )
        elif pool.only_resource is not None and name != pool.only_resource:
            yield (
                f'{container.label} asks for {name} ({field}) on pool "{pool.name}", whose '
                f"nodes advertise no GPU resource but {pool.only_resource} ({pool.config}), "
                f"so it would stay pending. Fix: ask for {pool.only_resource}."
            )


class NamedPool(Protocol):
    @property
    def name(self) -> str: ...


P = TypeVar("P", bound=NamedPool)


def check_pods_on_pools(
    args: StackValidationArgs,
    findings: Findings,
    read_pool: Callable[[PolicyResource], P | None],
    problems: Callable[[Pod, P], Iterator[str]],
    configured: Mapping[str, P] | None = None,
    labels_of: Callable[[P], Mapping[str, str]] | None = None,
) -> dict[str, P]:
    """Read each of the stack's pools with `read_pool`, then report `problems(pod, pool)` for
    every complete pod of the stack and every pool it selects, one by one. `configured` adds
    pools the stack does not declare (a tenant's stack, on the platform stack's pools); a pool
    the stack declares wins over a configured one of the same name. With `labels_of`, a pod is
    held to every pool whose labels its node selector and affinity admit (`may_land_on`), a pod
    that selects nothing to every pool; without it, only to the pools it names. Returns the pools
    the pods were held to."""
    pools: dict[str, P] = dict(configured or {})
    for resource in args.resources:
        if resource.resource_type in POOL_LABELS_PATH:
            found = findings.known(f"the pool of {resource.urn}", partial(read_pool, resource))
            if found is not None:
                pools[found.name] = found
    if not pools:
        return pools
    for resource in args.resources:
        complete = (p for p in pods_of(resource.resource_type, resource.props) if not p.partial)
        for pod in complete:
            names = findings.known(
                f"the pools {resource.urn} selects",
                partial(selected_pools, pod)
                if labels_of is None
                else partial(_admitting, pod, pools, labels_of),
                resource.urn,
            )
            for pool in (pools[name] for name in names or () if name in pools):
                findings.check(
                    f"{resource.urn} against pool {pool.name}",
                    partial(problems, pod, pool),
                    resource.urn,
                )
    return pools


def _admitting(
    pod: Pod, pools: Mapping[str, P], labels_of: Callable[[P], Mapping[str, str]]
) -> tuple[str, ...]:
    return tuple(name for name, pool in pools.items() if may_land_on(pod, labels_of(pool)))


def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    with Findings(NAME, "the stack", report_violation) as findings:
        check_pods_on_pools(args, findings, pool_sharing, sharing_problems)


POLICIES = [
    StackValidationPolicy(
        name=NAME,
        description="GPU pods ask a time-sliced or MPS pool for one GPU per container, and a MIG "
        "pool for its own slice.",
        validate=validate,
        enforcement_level=EnforcementLevel.MANDATORY,
    )
]
