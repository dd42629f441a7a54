"""The admission policy that keeps GPU pods the platform does not run off GPU nodes that have not
passed validation, however they are deployed (kubectl, Helm, a GitOps controller): the pack's
`gpu-validation-taint-platform-only` judges only what `pulumi up` deploys.

The ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1, GA in Kubernetes 1.30) matches
pod creations and updates, and the adding of ephemeral containers, in every namespace but the
platform's (`exempt_namespaces`) and those an administrator labels
`gpu-platform.io/node-validation-exempt=true`, and of those only GPU pods (`matchConditions`,
evaluated before anything else; a pod they do not match is admitted whatever it tolerates, so a
cluster add-on's DaemonSet that tolerates every taint runs on every node as before). A GPU pod
is one that
- requests or limits an `nvidia.com/` resource in a container or init container: whole GPUs
  (`nvidia.com/gpu`), their shared replicas (`nvidia.com/gpu.shared`) and MIG slices
  (`nvidia.com/mig-<profile>`) alike;
- sets `NVIDIA_VISIBLE_DEVICES` in the `env` of a container, init or ephemeral container to
  anything but empty, `void` or `none`, or from a `valueFrom` the policy cannot read. Under the
  NVIDIA runtime the variable alone hands the container GPUs, no request needed: `all`, indexes or
  UUIDs select GPUs, `none` gives none, `void`, empty or unset behave as runc
  (NVIDIA/nvidia-container-toolkit v1.20.0, cmd/nvidia-container-runtime/README.md,
  "NVIDIA_VISIBLE_DEVICES"; the toolkit the GPU Operator v26.7.0 installs);
- mounts anything at a path naming `nvidia-container-devices` in a container, init or
  ephemeral container (`DEVICE_LIST_DIR`). A toolkit that takes device lists from mounts, as
  Bottlerocket's does (EKS Auto Mode's nodes; `accept-nvidia-visible-devices-as-volume-mounts =
  true`, bottlerocket-os/bottlerocket-core-kit packages/nvidia-container-toolkit/
  nvidia-container-toolkit-config-k8s), hands a container the GPUs a mount of the host's
  /dev/null under /var/run/nvidia-container-devices names, `all` every GPU of the node, whatever
  the scheduler gave other pods and uncounted by any quota. The toolkit cleans the path before
  it compares it (NVIDIA/nvidia-container-toolkit internal/config/image/cuda_image.go: v1.17.8,
  the release Bottlerocket builds, `DevicesFromMounts`; v1.20.0 `requestsFromMounts`), so
  `//var/run/...` or `/tmp/../var/run/...` land there too: the policy matches the directory's
  name anywhere in the path;
- runs in one of the runtime classes the GPU Operator creates (`RUNTIME_CLASSES`), which
  opt it into that runtime, where an image's own `NVIDIA_VISIBLE_DEVICES` (the CUDA images set
  `all`) hands it GPUs unseen by the policy;
- or names a ResourceClaim (`spec.resourceClaims`, DRA): on a DRA pool (`allocation: dra`) that
  is how every tenant pod gets its GPUs, and the DRA driver's kubelet plugin publishes a node's
  GPUs while the node is still being validated (it tolerates the validation taint), so the
  scheduler can allocate them to a claim there. CEL sees the claim's name, not the DeviceClass
  its claim or template asks for, so every claiming pod is judged, GPUs or other devices: that
  is safe, as each refusal below, which applies to it as to any GPU pod, is of something no
  tenant pod needs (the validation and failure taints, `nodeName`, and GPUs past the device
  plugin, which a claim does not use); an add-on whose pods claim other devices and tolerate
  every taint is exempted by its namespace's label. A container's `resources.claims` may only
  name the pod's own `resourceClaims` (k8s.io/kubernetes pkg/apis/core/validation/
  validation.go, `validateResourceClaimNames`), so the pod's list is the one to look at.
Of those it denies:
- a pod created with such a mount, or an ephemeral container added with one: the device plugin
  gives a container the GPUs it was allocated by a mount of its own, which the pod's spec never
  holds, so only the platform's own pods (the node validator's, in an exempt namespace) mount
  there. Volume mounts cannot change on an update (k8s.io/kubernetes
  pkg/apis/core/validation/validation.go, `ValidatePodUpdate`), so an update is judged only by
  the ephemeral containers it adds.
- a pod created with `NVIDIA_VISIBLE_DEVICES` naming devices in a container's `env`, or an
  ephemeral container added with it, judged as mounts are; and a pod created in one of
  `RUNTIME_CLASSES`, which cannot change on an update. Neither is needed for GPUs: the device
  plugin hands a container those it requests (through CDI where the GPU Operator's toolkit runs,
  its chart's default `cdi.enabled: true`; through the node's default runtime on EKS's AL2023
  and Bottlerocket AMIs and GKE's own device plugin), and only the platform's own pods, in
  exempt namespaces, set either (the node validator, the GKE DCGM exporter).
- a pod that tolerates the validation taint (its key with `Exists`, or `Equal` and its value,
  `pending`), the failure taint `gpu-platform.io/validation-failed` (its key, with any value: the
  value is the check that failed), or every taint (an empty key with `operator: Exists`), with an
  effect of `NoSchedule` or none. Matching follows Kubernetes (k8s.io/api core/v1
  toleration.go, `ToleratesTaint`). An update may only add tolerations (k8s.io/kubernetes
  pkg/apis/core/validation/validation.go, `ValidatePodUpdate`: "spec.tolerations (only additions
  to existing tolerations)"), so an update is denied only where it adds such a toleration: a pod
  admitted before the policy existed can still be updated, its finalizers removed.
- a pod created with `spec.nodeName` set. Such a pod skips the scheduler, and the kubelet holds
  only `NoExecute` taints against a pod (k8s.io/kubernetes pkg/kubelet/lifecycle/predicate.go,
  `generalFilter`), so no `NoSchedule` taint keeps it off a node. CEL sees the request, not the
  Node it names, so the policy cannot tell a validated node from another: it refuses every such
  GPU pod. A claiming pod included: the scheduler allocates its claims, and one that skips it
  waits on the kubelet for a claim something else allocated, wherever that is (Kubernetes
  documentation, "Dynamic Resource Allocation", "Pre-scheduled Pods", which asks for a node
  selector instead, as the refusal does).
What CEL cannot see it cannot judge: `NVIDIA_VISIBLE_DEVICES` from `envFrom` or from the image,
on a node whose containerd runs the NVIDIA runtime by default (EKS's AL2023 GPU AMIs: nodeadm
makes it containerd's default runtime, awslabs/amazon-eks-ami nodeadm/internal/containerd/
runtime_config.go) or whose toolkit accepts the variable from unprivileged containers (the
default of `accept-nvidia-visible-devices-envvar-when-unprivileged`, NVIDIA/nvidia-container-toolkit
v1.20.0 cmd/nvidia-ctk-installer/toolkit/toolkit.go). Only that toolkit setting closes it.

The expressions use only standard CEL (`has`, `exists`, `filter`, `in`, `size`, `startsWith`),
none of Kubernetes' CEL libraries, so that a CEL implementation outside Kubernetes can evaluate
them. Each is linear in the pod's containers, resources and variables, and guarded with `has`: a
match condition that fails to evaluate would refuse every pod under `failurePolicy: Fail`.
"""

from collections.abc import Callable, Sequence
from typing import Any

from gpu_platform.config import Cloud, StackConfig
from gpu_platform.kubernetes.dra_names import DRA_DRIVER_NAMESPACE
from gpu_platform.kubernetes.node_validation.admission_policy import core_rules, denying, quoted
from gpu_platform.kubernetes.node_validation.names import (
    FAILED_TAINT_KEY,
    LABEL_PREFIX,
    VALIDATION_TAINT,
)
from gpu_platform.kubernetes.queue_labels import NVIDIA_RESOURCE_PREFIX

NAME = "gpu-platform-pods-off-unvalidated-nodes"
EXEMPT_LABEL = f"{LABEL_PREFIX}node-validation-exempt"
"""A namespace labelled with it `true` is not judged: for a cluster add-on that must run on every
node and tolerates every taint. Labelling a Namespace takes `patch` or `update` on it, which a
Role in that same namespace can grant: the API server authorises a request on
`/api/v1/namespaces/<name>` within the namespace `<name>` (k8s.io/apiserver
pkg/endpoints/request/requestinfo.go, NewRequestInfo), so a Role there granting `namespaces`, or
every resource (`*`), lets its holders exempt their own namespace. Kubernetes' built-in `admin`,
`edit` and `view` roles only read Namespaces; nothing here refuses the label to a role that
writes them (docs/node-validation.md)."""
# GKE's Managed Service for Prometheus (on by default from GKE 1.27) runs its collector DaemonSet
# there, tolerating every `NoSchedule` taint (GoogleCloudPlatform/prometheus-engine
# manifests/operator.yaml, v0.13.0, DaemonSet `collector`).
GKE_NAMESPACES = ("gmp-system",)
VISIBLE_DEVICES = "NVIDIA_VISIBLE_DEVICES"
# The values that give a container no GPU (cmd/nvidia-container-runtime/README.md, v1.20.0).
NO_DEVICES = ("", "void", "none")
# The GPU Operator's RuntimeClasses: `nvidia` (the chart's `operator.runtimeClass`), and with CDI
# on, as the platform's chart values have it, `nvidia-cdi` and `nvidia-legacy`
# (NVIDIA/gpu-operator v26.7.0, assets/pre-requisites/0210_runtime_class_legacy.yaml and
# 0220_runtime_class_cdi.yaml).
RUNTIME_CLASSES = ("nvidia", "nvidia-cdi", "nvidia-legacy")
# The directory under /var/run a toolkit reads device lists from (NVIDIA/nvidia-container-toolkit
# v1.20.0, internal/config/image/cuda_image.go, `DeviceListAsVolumeMountsRoot`).
DEVICE_LIST_DIR = "nvidia-container-devices"


def exempt_namespaces(config: StackConfig) -> list[str]:
    """The namespaces whose pods may tolerate the validation taints: kube-system, where the
    clouds' add-ons run, and every namespace the platform runs pods in or names for them,
    Kueue's among them."""
    found = {"kube-system", config.operator.namespace, config.monitoring.namespace}
    found.add(config.monitoring.node_exporter_namespace)
    if config.cloud is Cloud.AWS and config.provisioner == "cluster-autoscaler":
        found.add(config.autoscaler.namespace)
    if config.uses_karpenter:
        found.add(config.karpenter.namespace)
    if config.queues.enabled:
        # Kueue's manager runs no GPU pod; its namespace is exempt as every platform release's is.
        found.add(config.queues.namespace)
    if any(pool.allocation == "dra" for pool in config.pools):
        # NVIDIA's DRA driver: its kubelet plugin tolerates the validation taint, as a node's
        # GPUs must be published before a claim there can start.
        found.add(DRA_DRIVER_NAMESPACE)
    if config.cloud is Cloud.GCP:
        found.update(GKE_NAMESPACES)
    return sorted(found)


def _tolerates(t: str) -> str:
    """CEL: the toleration `t` tolerates the validation taint, the failure taint or every
    taint."""
    key = f"(has({t}.key) ? {t}.key : '')"
    exists = f"(has({t}.operator) && {t}.operator == 'Exists')"
    value = f"(has({t}.value) ? {t}.value : '')"
    return (
        f"(!has({t}.effect) || {t}.effect == '' || {t}.effect == '{VALIDATION_TAINT.effect}') &&"
        f" (({key} == '' && {exists}) || {key} == '{FAILED_TAINT_KEY}' ||"
        f" ({key} == '{VALIDATION_TAINT.key}' && ({exists} ||"
        f" {value} == '{VALIDATION_TAINT.value}')))"
    )


def resource_clauses(c: str) -> list[str]:
    """CEL, one clause per field in which the container `c` asks for an `nvidia.com/` resource:
    its limits, its requests."""
    return [
        f"(has({c}.resources) && has({c}.resources.{field}) &&"
        f" {c}.resources.{field}.exists(r, r.startsWith('{NVIDIA_RESOURCE_PREFIX}')))"
        for field in ("limits", "requests")
    ]


def _device_list_mount(c: str) -> str:
    """CEL: the container `c` mounts something where a toolkit reads device lists."""
    return (
        f"(has({c}.volumeMounts) &&"
        f" {c}.volumeMounts.exists(m, m.mountPath.contains('{DEVICE_LIST_DIR}')))"
    )


def _names_devices(c: str) -> str:
    """CEL: the container `c` sets `NVIDIA_VISIBLE_DEVICES` in its `env` to name devices, or
    from a `valueFrom` the policy cannot read."""
    return (
        f"(has({c}.env) && {c}.env.exists(e, e.name == '{VISIBLE_DEVICES}' &&"
        f" (has(e.valueFrom) || (has(e.value) && !(e.value in {quoted(NO_DEVICES)})))))"
    )


def _container_clauses(c: str) -> list[str]:
    """CEL, one clause per way the container `c` gets GPUs: an `nvidia.com/` limit, an
    `nvidia.com/` request, `NVIDIA_VISIBLE_DEVICES` naming some, or a device list mount."""
    return [*resource_clauses(c), _names_devices(c), _device_list_mount(c)]


def _ephemeral_clauses(c: str) -> list[str]:
    """CEL, the ways the ephemeral container `c` gets GPUs: an ephemeral container may not set
    resources (k8s.io/kubernetes pkg/apis/core/validation/validation.go,
    `validateEphemeralContainers`), but may set `env` and `volumeMounts`."""
    return [_names_devices(c), _device_list_mount(c)]


def over_containers(clauses: Callable[[str], list[str]]) -> list[str]:
    """CEL: each of a container's `clauses` over the pod's containers, then over its init
    containers, which a pod may leave out."""
    containers = [f"object.spec.containers.exists(c, {x})" for x in clauses("c")]
    init = [
        f"(has(object.spec.initContainers) && object.spec.initContainers.exists(c, {x}))"
        for x in clauses("c")
    ]
    return [*containers, *init]


# CEL: the pod names a ResourceClaim. A pod's claims cannot change on an update
# (ValidatePodUpdate), so an update is matched where the pod it updates was.
CLAIMS = "(has(object.spec.resourceClaims) && size(object.spec.resourceClaims) > 0)"


def gpu_pod_clauses() -> list[str]:
    """CEL, one clause per way a pod gets GPUs: its runtime class, its DRA claims, then each
    container clause over its containers and over its init containers, then over its ephemeral
    containers."""
    runtime = (
        "(has(object.spec.runtimeClassName) &&"
        f" object.spec.runtimeClassName in {quoted(RUNTIME_CLASSES)})"
    )
    ephemeral = [
        f"(has(object.spec.ephemeralContainers) && object.spec.ephemeralContainers.exists(c, {x}))"
        for x in _ephemeral_clauses("c")
    ]
    return [runtime, CLAIMS, *over_containers(_container_clauses), *ephemeral]


def _count(pod: str, clause: Callable[[str], str]) -> str:
    """CEL: how many of the containers, init containers and ephemeral containers of `pod` meet
    `clause`. Summed, not concatenated: a Container and an EphemeralContainer are of different
    types, and `+` joins only lists of one."""
    counts = [f"size({pod}.spec.containers.filter(c, {clause('c')}))"]
    counts += [
        f"(has({pod}.spec.{field}) ? size({pod}.spec.{field}.filter(c, {clause('c')})) : 0)"
        for field in ("initContainers", "ephemeralContainers")
    ]
    return " + ".join(counts)


def _adds_none(clause: Callable[[str], str]) -> str:
    """CEL: the request adds no container that meets `clause`. An update cannot change a
    container's `env` or `volumeMounts` (k8s.io/kubernetes pkg/apis/core/validation/
    validation.go, `ValidatePodUpdate`) and may only add ephemeral containers, through
    `pods/ephemeralcontainers` (`ValidatePodEphemeralContainersUpdate`, which refuses changing
    or removing one): so an update adds one where more containers meet it than before, and a
    pod admitted before the policy existed can still be updated."""
    before = f"(request.operation == 'UPDATE' ? {_count('oldObject', clause)} : 0)"
    return f"{_count('object', clause)} <= {before}"


MATCH_CONDITIONS = [{"name": "gpu-pod", "expression": " || ".join(gpu_pod_clauses())}]


VARIABLES = [
    {
        "name": "tolerated",
        "expression": "has(object.spec.tolerations) ?"
        f" object.spec.tolerations.filter(t, {_tolerates('t')}) : []",
    },
    {
        "name": "toleratedBefore",
        "expression": "request.operation == 'UPDATE' && has(oldObject.spec.tolerations) ?"
        f" oldObject.spec.tolerations.filter(t, {_tolerates('t')}) : []",
    },
]

VALIDATIONS = [
    {
        "expression": "size(variables.tolerated) <= size(variables.toleratedBefore)",
        "message": f"this namespace's GPU pods may not tolerate the node validation taint"
        f" {VALIDATION_TAINT.key}, the failure taint {FAILED_TAINT_KEY} or every taint: the pod"
        " could start on a GPU node that has not passed validation, or failed it. Tolerate the"
        " taints the pod needs by their keys.",
    },
    {
        "expression": "request.operation != 'CREATE' || !has(object.spec.nodeName) ||"
        " object.spec.nodeName == ''",
        "message": "this namespace's GPU pods may not set spec.nodeName: the pod would skip the"
        " scheduler and the node validation taint, and could start on a GPU node that has not"
        " passed validation. Select the node with nodeSelector or affinity instead.",
    },
    {
        "expression": _adds_none(_device_list_mount),
        "message": f"this namespace's pods may not mount anything at a path naming"
        f" {DEVICE_LIST_DIR}: on a node whose NVIDIA toolkit reads device lists from mounts"
        " (Bottlerocket's, EKS Auto Mode's), such a mount hands the container the node's GPUs,"
        " whatever other pods were given and counted by no quota. Request GPUs as nvidia.com/gpu"
        " resources instead.",
    },
    {
        "expression": _adds_none(_names_devices),
        "message": f"this namespace's pods may not set {VISIBLE_DEVICES} in a container's env"
        " to name GPUs (any value but empty, void or none, or one from valueFrom): under the"
        " NVIDIA runtime the variable hands the container the GPUs it names, all of the node's"
        " for 'all', whatever other pods were given and counted by no quota. Request GPUs as"
        " nvidia.com/gpu resources instead.",
    },
    {
        # A pod's runtime class cannot change on an update (ValidatePodUpdate).
        "expression": "request.operation != 'CREATE' || !has(object.spec.runtimeClassName) ||"
        f" !(object.spec.runtimeClassName in {quoted(RUNTIME_CLASSES)})",
        "message": "this namespace's pods may not run in the GPU Operator's runtime classes"
        f" ({', '.join(RUNTIME_CLASSES)}): that runtime hands a container the GPUs its image's"
        f" {VISIBLE_DEVICES} names, the CUDA images' 'all' every GPU of the node, whatever other"
        " pods were given and counted by no quota. Leave runtimeClassName unset and request GPUs"
        " as nvidia.com/gpu resources: the device plugin gives the container its GPUs.",
    },
]


def namespace_selector(exempt: Sequence[str]) -> dict[str, Any]:
    return {
        "matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": list(exempt)},
            {"key": EXEMPT_LABEL, "operator": "NotIn", "values": ["true"]},
        ]
    }


def pod_admission_policy(exempt: Sequence[str]) -> list[dict[str, Any]]:
    """The ValidatingAdmissionPolicy and its binding (deny), for pods outside the namespaces
    `exempt`."""
    return denying(
        NAME,
        {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "namespaceSelector": namespace_selector(exempt),
                # An ephemeral container is added through this subresource, not by a pod's
                # update (ValidatePodEphemeralContainersUpdate).
                "resourceRules": [
                    *core_rules("pods", "CREATE", "UPDATE"),
                    *core_rules("pods/ephemeralcontainers", "UPDATE"),
                ],
            },
            "matchConditions": MATCH_CONDITIONS,
            "variables": VARIABLES,
            "validations": VALIDATIONS,
        },
    )
