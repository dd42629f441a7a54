"""Which GPU pools a pod fits, judged the way the cluster autoscaler judges a pool at zero.

With no node of a pool running, the autoscaler plans with a node template: the labels, taints
and allocatable resources it expects a new node to have. A pod that fits no template stays
Pending and no pool scales up for it. `NodeTemplate` is that template, cloud-neutral; each cloud
derives its own (`eks_node_template` from the hints on an EKS node group's Auto Scaling group,
`gke_node_template` from a GKE node pool's own configuration).
`fits` checks a pod spec against templates with the scheduler's rules that decide it: node
selector, required node affinity, untolerated `NoSchedule`/`NoExecute` taints and resources.
"""

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from components.accelerators import ACCELERATORS, mig_instances_per_gpu
from components.eks.autoscaler_tags import (
    LABEL_TAG_PREFIX,
    RESOURCE_TAG_PREFIX,
    TAINT_TAG_PREFIX,
)
from components.eks.instance_types import InstanceType
from components.gke.cluster import zone_region
from components.node_identity import CLOUD_TAINT_EFFECTS, GPU_RESOURCE, POOL_LABEL, Taint

PodSpec = Mapping[str, Any]

# Effects that keep a pod off a node; `PreferNoSchedule` only makes the scheduler reluctant.
_REPELLING_EFFECTS = ("NoSchedule", "NoExecute")
# Resources a GKE template is not told offline (the machine type's allocatable); a pod's request
# for them is not held against a template that says it does not know them.
_BASE_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pods")
# Kubernetes' architecture names for EC2's.
_KUBERNETES_ARCH = {"x86_64": "amd64", "arm64": "arm64"}


@dataclass(frozen=True)
class NodeTemplate:
    """A node of a pool as the autoscaler imagines it before one exists."""

    pool: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    resources: Mapping[str, Decimal] = field(default_factory=dict)
    """Allocatable quantities by resource name."""
    secret_labels: bool = False
    """The pool's labels came from config set as a secret: reasons name them, not their values."""
    complete: bool = True
    """Holds every resource the autoscaler's template would: one it lacks counts as none, as
    the autoscaler counts it. False where CPU, memory, ephemeral storage and pods are not
    known offline."""


@dataclass(frozen=True)
class Fit:
    """Whether a pod fits a pool, and if not, every reason why."""

    pool: str
    reasons: tuple[str, ...]

    @property
    def fits(self) -> bool:
        return not self.reasons


def fits(pod_spec: PodSpec, templates: Iterable[NodeTemplate]) -> list[Fit]:
    """The pod against each pool's template, in the templates' order."""
    return [Fit(t.pool, tuple(_why_not(pod_spec, t))) for t in templates]


def fitting_pools(pod_spec: PodSpec, templates: Iterable[NodeTemplate]) -> list[str]:
    return [f.pool for f in fits(pod_spec, templates) if f.fits]


def pod_spec_of(document: Mapping[str, Any]) -> PodSpec:
    """The pod spec inside a Pod, or the pod template of a workload (Deployment, Job, ...)."""
    kind = document.get("kind")
    spec = document.get("spec") or {}
    if kind == "Pod":
        return spec
    if kind == "CronJob":
        return spec["jobTemplate"]["spec"]["template"]["spec"]
    if kind in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"):
        return spec["template"]["spec"]
    raise ValueError(f"{kind!r} has no pod spec: expected a Pod, Deployment, Job or the like")


def eks_node_template(
    asg_tags: Mapping[str, str], instance_type: InstanceType, region: str
) -> NodeTemplate:
    """The template the autoscaler builds for an EKS node group at zero: labels, taints and
    extended resources from its Auto Scaling group's hints; CPU, memory, `nvidia.com/gpu` and
    the well-known node labels from its instance type (the first of the group's, as the
    autoscaler takes it).

    As in the autoscaler's `buildNodeFromTemplate` (`cloudprovider/aws/aws_manager.go`, 1.35.2
    lines 285-297), the instance type's physical GPU count comes first and a resource hint
    overrides it: a MIG pool's `nvidia.com/gpu: 0` hint is what keeps whole-GPU pods off it.
    """
    labels = {
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": instance_type.name,
        "topology.kubernetes.io/region": region,
    }
    if instance_type.architecture is not None:
        labels["kubernetes.io/arch"] = _KUBERNETES_ARCH[instance_type.architecture]
    taints = []
    resources = {
        "cpu": Decimal(instance_type.vcpus),
        "memory": Decimal(instance_type.memory_mib) * 2**20,
        GPU_RESOURCE: Decimal(instance_type.gpu_count),
        # The autoscaler's fixed guess at a node's pods (aws_manager.go, "TODO: get a real value").
        "pods": Decimal(110),
    }
    for key, value in asg_tags.items():
        if key.startswith(LABEL_TAG_PREFIX):
            labels[key.removeprefix(LABEL_TAG_PREFIX)] = value
        elif key.startswith(TAINT_TAG_PREFIX):
            taint_value, _, effect = value.rpartition(":")
            taints.append(Taint(key.removeprefix(TAINT_TAG_PREFIX), taint_value, effect))
        elif key.startswith(RESOURCE_TAG_PREFIX):
            resources[key.removeprefix(RESOURCE_TAG_PREFIX)] = quantity(value)
    return NodeTemplate(labels.get(POOL_LABEL, "?"), labels, tuple(taints), resources)


def gke_node_template(node_pool: Mapping[str, Any]) -> NodeTemplate:
    """The template GKE's cluster autoscaler builds for a node pool at zero, from the pool's own
    configuration (a `gcp:container/nodePool:NodePool`'s inputs): its labels and taints, the
    labels GKE gives every node, and the `nvidia.com/gpu` that GKE's device plugin advertises.

    GKE's autoscaler is not open source; the count is what GKE's device plugin advertises for the
    accelerator's settings (container-engine-accelerators `pkg/gpu/nvidia/manager.go`): one per
    GPU, one per MIG partition with `gpuPartitionSize`, times `maxSharedClientsPerGpu` with
    `gpuSharingConfig`, which GKE's GPU-sharing page says its autoscaler scales pools by. The
    operator's own replicas and MIG slices are invisible to it, which is why the platform lets
    GKE share GPUs. CPU and memory are left out (the machine type's allocatable is not known
    offline), so requests for them are not judged.
    """
    config = node_pool["nodeConfig"]
    (accelerator,) = config["guestAccelerators"]
    location = node_pool["location"]
    labels = {
        "kubernetes.io/os": "linux",
        # Every machine type that takes NVIDIA GPUs on GKE the platform knows is x86.
        "kubernetes.io/arch": "amd64",
        "node.kubernetes.io/instance-type": config["machineType"],
        "topology.kubernetes.io/region": zone_region(location) or location,
        "cloud.google.com/gke-accelerator": accelerator["type"],
        **({"cloud.google.com/gke-spot": "true"} if config.get("spot") else {}),
        **_gke_gpu_sharing_labels(accelerator),
        **(config.get("labels") or {}),
    }
    kubernetes_effects = {gke: kubernetes for kubernetes, gke in CLOUD_TAINT_EFFECTS.items()}
    taints = tuple(
        Taint(t["key"], t.get("value", ""), kubernetes_effects[t["effect"]])
        for t in config.get("taints") or []
    )
    gpus = {GPU_RESOURCE: Decimal(_gke_gpus_advertised(accelerator))}
    return NodeTemplate(labels.get(POOL_LABEL, "?"), labels, taints, gpus, complete=False)


def _gke_gpus_advertised(accelerator: Mapping[str, Any]) -> int:
    devices = int(accelerator["count"])
    partition = accelerator.get("gpuPartitionSize")
    if partition:
        (model,) = (a for a in ACCELERATORS.values() if a.gke_type == accelerator["type"])
        devices *= mig_instances_per_gpu(model.name, partition)
    clients = (accelerator.get("gpuSharingConfig") or {}).get("maxSharedClientsPerGpu")
    return devices * int(clients or 1)


def _gke_gpu_sharing_labels(accelerator: Mapping[str, Any]) -> dict[str, str]:
    # The node labels GKE sets for its GPU sharing (GKE's "About GPU sharing strategies" page).
    labels = {}
    if accelerator.get("gpuPartitionSize"):
        labels["cloud.google.com/gke-gpu-partition-size"] = accelerator["gpuPartitionSize"]
    sharing = accelerator.get("gpuSharingConfig")
    if sharing:
        strategy = {"TIME_SHARING": "time-sharing", "MPS": "mps"}[sharing["gpuSharingStrategy"]]
        labels["cloud.google.com/gke-gpu-sharing-strategy"] = strategy
        clients = str(int(sharing["maxSharedClientsPerGpu"]))
        labels["cloud.google.com/gke-max-shared-clients-per-gpu"] = clients
    return labels


# --- The scheduler's rules -------------------------------------------------------------------


def _why_not(pod: PodSpec, template: NodeTemplate) -> Iterable[str]:
    for key, value in (pod.get("nodeSelector") or {}).items():
        if template.labels.get(key) != value:
            yield f"nodeSelector {key}={value}: its nodes have {_label(template, key)}"
    terms = (
        ((pod.get("affinity") or {}).get("nodeAffinity") or {})
        .get("requiredDuringSchedulingIgnoredDuringExecution", {})
        .get("nodeSelectorTerms")
    )
    if terms and not any(_term_matches(term, template.labels) for term in terms):
        yield "required node affinity: no term matches its nodes' labels"
    tolerations = pod.get("tolerations") or []
    for taint in template.taints:
        if taint.effect in _REPELLING_EFFECTS and not any(
            _tolerates(t, taint) for t in tolerations
        ):
            yield f"taint {taint.key}={taint.value}:{taint.effect} is not tolerated"
    for name, wanted in pod_requests(pod).items():
        available = template.resources.get(name)
        if available is None:
            unknown = not template.complete and (
                name in _BASE_RESOURCES or name.startswith("hugepages-")
            )
            if not unknown and wanted > 0:
                yield f"asks for {wanted} {name}; its nodes advertise none"
        elif wanted > available:
            yield f"asks for {wanted} {name}; a node has {available}"


def _label(template: NodeTemplate, key: str) -> str:
    value = template.labels.get(key)
    if value is None:
        return "no such label"
    return f"{key}=[secret]" if template.secret_labels else f"{key}={value}"


def _term_matches(term: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    expressions = term.get("matchExpressions") or []
    return bool(expressions) and all(_expression_matches(e, labels) for e in expressions)


def _expression_matches(expression: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, operator = expression["key"], expression["operator"]
    values = expression.get("values") or []
    value = labels.get(key)
    match operator:
        case "In":
            return value in values
        case "NotIn":
            return value not in values
        case "Exists":
            return value is not None
        case "DoesNotExist":
            return value is None
        case "Gt" | "Lt":
            if value is None or not value.lstrip("-").isdigit():
                return False
            bound = int(values[0])
            return int(value) > bound if operator == "Gt" else int(value) < bound
    raise ValueError(f"unknown node selector operator {operator!r}")


def _tolerates(toleration: Mapping[str, Any], taint: Taint) -> bool:
    if toleration.get("effect") and toleration["effect"] != taint.effect:
        return False
    key = toleration.get("key", "")
    if toleration.get("operator", "Equal") == "Exists":
        return key in ("", taint.key)
    return key == taint.key and toleration.get("value", "") == taint.value


def pod_requests(pod: PodSpec) -> dict[str, Decimal]:
    """What the scheduler reserves for the pod: the containers' requests summed, or the largest
    init container's where that is more. A limit without a request counts as the request."""
    total: dict[str, Decimal] = {}
    for container in pod.get("containers") or []:
        for name, amount in _container_requests(container).items():
            total[name] = total.get(name, Decimal(0)) + amount
    for container in pod.get("initContainers") or []:
        for name, amount in _container_requests(container).items():
            total[name] = max(total.get(name, Decimal(0)), amount)
    return total


def _container_requests(container: Mapping[str, Any]) -> dict[str, Decimal]:
    resources = container.get("resources") or {}
    merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    return {name: quantity(value) for name, value in merged.items()}


_QUANTITY = re.compile(r"^([+-]?[0-9.]+)([eE][+-]?[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$")
_MULTIPLIERS: Mapping[str, Decimal] = {
    **{s: Decimal(2) ** (10 * (i + 1)) for i, s in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"))},
    **{s: Decimal(10) ** (3 * (i + 1)) for i, s in enumerate(("k", "M", "G", "T", "P", "E"))},
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
}


def quantity(value: str | int | float) -> Decimal:
    """A Kubernetes resource quantity (`500m`, `16Gi`, `4`) as a number."""
    match = _QUANTITY.match(str(value).strip())
    if match is None:
        raise ValueError(f"{value!r} is not a Kubernetes quantity")
    number, exponent, suffix = match.groups()
    return Decimal(number + (exponent or "")) * _MULTIPLIERS[suffix or ""]
