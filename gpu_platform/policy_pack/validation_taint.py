"""Only the platform's pods tolerate the node validation taint, or the failure taint.

A GPU node of a validated pool joins with the taint
`startup-taint.cluster-autoscaler.kubernetes.io/gpu-validation=pending:NoSchedule`, and
keeps it until its validation passed (docs/node-validation.md); a node that failed and is not
replaced also gets `gpu-platform.io/validation-failed=<check>:NoSchedule`, for good. A tenant's
pod that tolerates either could start on a node that is still being proven, or that failed. So a
pod outside the namespaces the platform's own pods run in (`exemptNamespaces`, the setting the
Pod Security policies read) must tolerate neither: not by its key, nor with an empty key and
`operator: Exists`, which tolerates every taint. Matching follows Kubernetes (k8s.io/api core/v1
toleration.go, `ToleratesTaint`): an empty effect matches every effect, an empty operator is
`Equal`, which compares the value too. The failure taint's value is the check that failed, so a
toleration of its key with any value is refused: each tolerates the nodes that failed that check.

Nor may such a pod mount anything at a path naming `nvidia-container-devices`. A toolkit that
takes device lists from mounts, as Bottlerocket's does (EKS Auto Mode's nodes and `nodeImage:
bottlerocket`: `accept-nvidia-visible-devices-as-volume-mounts = true`,
bottlerocket-os/bottlerocket-core-kit packages/nvidia-container-toolkit/
nvidia-container-toolkit-config-k8s), hands a container the GPUs a mount of the host's /dev/null
under /var/run/nvidia-container-devices names, `all` every GPU of the node: GPUs the scheduler
gave other pods, on a node validated or not, counted by no quota. It compares the cleaned path
(NVIDIA/nvidia-container-toolkit internal/config/image/cuda_image.go: v1.17.8, the release
Bottlerocket builds, `DevicesFromMounts`; v1.20.0 `requestsFromMounts`), so the directory's name
is refused anywhere in the path. The device plugin mounts a container's allocated GPUs itself,
outside the pod's spec: only the platform's node validator mounts there.

Nor may it take GPUs past the device plugin otherwise: a container's `NVIDIA_VISIBLE_DEVICES`
naming devices (anything but empty, `void` or `none`, or a `valueFrom` the pack cannot read), which
under the NVIDIA runtime hands it those GPUs, or `all`, with no request (NVIDIA/nvidia-container-
toolkit v1.20.0, cmd/nvidia-container-runtime/README.md); or a GPU Operator runtime class, which
runs the container in that runtime, where the CUDA images' own `NVIDIA_VISIBLE_DEVICES=all`
hands it every GPU. Tenants need neither: the device plugin hands a container the GPUs it
requests, through CDI where the operator's toolkit runs (its chart's `cdi.enabled: true`) or the
node's default runtime (EKS's AMIs, GKE's device plugin).

The cluster holds the same line for pods Pulumi does not deploy
(gpu_platform/kubernetes/node_validation/pod_admission_policy.py).
"""

from collections.abc import Iterator
from functools import partial
from typing import Any

from checks import each, resource_policy
from pods import Container, Pod, namespace_or_default, pods_of
from props import elements, text, value_at
from pulumi_policy import ResourceValidationArgs
from settings import EXEMPT_NAMESPACES

NAME = "gpu-validation-taint-platform-only"
# gpu_platform/kubernetes/node_validation/names.py, VALIDATION_TAINT (a test keeps them equal).
TAINT_KEY = "startup-taint.cluster-autoscaler.kubernetes.io/gpu-validation"
TAINT_VALUE = "pending"
TAINT_EFFECT = "NoSchedule"
# gpu_platform/kubernetes/node_validation/names.py, FAILED_TAINT_KEY (a test keeps them equal).
FAILED_TAINT_KEY = "gpu-platform.io/validation-failed"
# gpu_platform/kubernetes/node_validation/pod_admission_policy.py, DEVICE_LIST_DIR (a test
# keeps them equal).
DEVICE_LIST_DIR = "nvidia-container-devices"
# pod_admission_policy.py's RUNTIME_CLASSES, VISIBLE_DEVICES and NO_DEVICES (a test keeps them
# equal): the GPU Operator's RuntimeClasses (NVIDIA/gpu-operator v26.7.0, the chart's
# `operator.runtimeClass` and assets/pre-requisites/0210_runtime_class_legacy.yaml,
# 0220_runtime_class_cdi.yaml), and the values that give a container no GPU
# (NVIDIA/nvidia-container-toolkit v1.20.0, cmd/nvidia-container-runtime/README.md).
RUNTIME_CLASSES = ("nvidia", "nvidia-cdi", "nvidia-legacy")
VISIBLE_DEVICES = "NVIDIA_VISIBLE_DEVICES"
NO_DEVICES = ("", "void", "none")


def tolerates_validation_taint(toleration: Any) -> bool:
    effect = value_at(toleration, "effect")
    if effect not in (None, "", TAINT_EFFECT):
        return False
    key = value_at(toleration, "key")
    if (value_at(toleration, "operator") or "Equal") == "Exists":
        return key in (None, "", TAINT_KEY)
    return key == TAINT_KEY and (value_at(toleration, "value") or "") == TAINT_VALUE


def tolerates_failure_taint(toleration: Any) -> bool:
    effect = value_at(toleration, "effect")
    return effect in (None, "", TAINT_EFFECT) and value_at(toleration, "key") == FAILED_TAINT_KEY


def _mount_problems(pod: Pod, container: Container) -> Iterator[str]:
    for i, mount in enumerate(elements(container.props, "volumeMounts")):
        path = text(mount, "mountPath") or ""
        if DEVICE_LIST_DIR in path:
            yield (
                f"{container.label} mounts {pod.container_field(container, 'volumeMounts', i)}"
                f" at {path}, where Bottlerocket's NVIDIA toolkit (EKS Auto Mode's nodes too)"
                " reads the GPUs a container gets: a mount of the host's /dev/null there takes"
                " the node's GPUs, whatever other pods were given, counted by no quota. Fix:"
                " remove the mount and request GPUs as nvidia.com/gpu resources; only the"
                f" platform's namespaces ({EXEMPT_NAMESPACES.key}) may mount there."
            )


def _env_problems(pod: Pod, container: Container) -> Iterator[str]:
    for i, variable in enumerate(elements(container.props, "env")):
        if text(variable, "name") != VISIBLE_DEVICES:
            continue
        value = text(variable, "value") or ""
        # A value from a ConfigMap, a Secret or a field is not known here: it may name GPUs.
        source = "from valueFrom" if value_at(variable, "valueFrom") is not None else None
        if source or value not in NO_DEVICES:
            yield (
                f"{container.label} sets {VISIBLE_DEVICES} {source or f'to {value!r}'}"
                f" ({pod.container_field(container, 'env', i)}):"
                " under the NVIDIA runtime the variable hands the container the GPUs it names,"
                " all of the node's for `all`, whatever other pods were given, counted by no quota."
                " Fix: remove it (or set it empty, void or none) and request GPUs as"
                " nvidia.com/gpu resources; only the platform's namespaces"
                f" ({EXEMPT_NAMESPACES.key}) may set it."
            )


def _container_problems(pod: Pod, container: Container) -> Iterator[str]:
    yield from _mount_problems(pod, container)
    yield from _env_problems(pod, container)


def _runtime_class_problems(pod: Pod) -> Iterator[str]:
    runtime_class = text(pod.spec, "runtimeClassName")
    if runtime_class in RUNTIME_CLASSES:
        yield (
            f"{pod.spec_field('runtimeClassName')} is {runtime_class}, a GPU Operator runtime"
            f" class: that runtime hands a container the GPUs its image's {VISIBLE_DEVICES}"
            " names, the CUDA images' `all` every GPU of the node, whatever other pods were"
            " given, counted by no quota. Fix: leave runtimeClassName unset and request GPUs as"
            " nvidia.com/gpu resources, which the device plugin hands the container; only the"
            f" platform's namespaces ({EXEMPT_NAMESPACES.key}) may run in it."
        )


def _problems(pod: Pod) -> Iterator[str]:
    # A patch's pod lacks the object's own tolerations: its patch is judged where it sets them.
    if not pod.partial:
        yield from _toleration_problems(pod)
    yield from _runtime_class_problems(pod)
    # Last: a container not known yet skips the rest of the pod's check.
    yield from each(pod.containers(), partial(_container_problems, pod), lambda c: c.label)


def _toleration_problems(pod: Pod) -> Iterator[str]:
    for i, toleration in enumerate(elements(pod.spec, "tolerations")):
        if tolerates_failure_taint(toleration):
            yield (
                f"{pod.spec_field('tolerations', i)} tolerates the node validation failure taint"
                f" {FAILED_TAINT_KEY}:{TAINT_EFFECT}, so the pod could start on a GPU node that"
                " failed validation. Fix: remove the toleration; only the platform's namespaces"
                f" ({EXEMPT_NAMESPACES.key}) may tolerate it."
            )
        elif tolerates_validation_taint(toleration):
            every = "every taint" if not value_at(toleration, "key") else "it"
            yield (
                f"{pod.spec_field('tolerations', i)} tolerates {every}, the node validation "
                f"taint {TAINT_KEY}={TAINT_VALUE}:{TAINT_EFFECT} included, so the pod could "
                "start on a GPU node that has not passed validation, or failed it. Fix: tolerate "
                "the taints the pod needs by their keys; only the platform's namespaces "
                f"({EXEMPT_NAMESPACES.key}) may tolerate this one."
            )


def validation_taint_problems(args: ResourceValidationArgs) -> Iterator[str]:
    pods = pods_of(args.resource_type, args.props)
    if not pods:
        return
    namespace = namespace_or_default(text(args.props, "metadata", "namespace"), args.provider)
    if namespace in EXEMPT_NAMESPACES.read(args.get_config()):
        return
    yield from each(pods, _problems, lambda pod: pod.label)


POLICY = resource_policy(
    NAME,
    "Pods outside the platform's namespaces do not tolerate the node validation taint or its "
    "failure taint, by their keys or by tolerating every taint, nor take GPUs past the device "
    "plugin: by a mount where a node's NVIDIA toolkit reads the GPUs a container gets, by "
    "NVIDIA_VISIBLE_DEVICES naming GPUs, or by a GPU Operator runtime class.",
    validation_taint_problems,
    EXEMPT_NAMESPACES,
)
POLICIES = [POLICY]
