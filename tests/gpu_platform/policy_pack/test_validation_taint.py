"""Only the platform's pods tolerate the node validation taint: a toleration of its key, or of
every taint, is refused outside the platform's namespaces, in every kind the pack reads pods
from."""

import ast
import json
from collections.abc import Callable
from typing import Any

import pytest

from gpu_platform.kubernetes.node_validation.names import FAILED_TAINT_KEY, VALIDATION_TAINT
from gpu_platform.kubernetes.node_validation.pod_admission_policy import (
    DEVICE_LIST_DIR,
    NO_DEVICES,
    RUNTIME_CLASSES,
    VISIBLE_DEVICES,
)
from gpu_platform.kubernetes.node_validation.workload import NAME as VALIDATOR
from gpu_platform.offline.analyzer import PACK_DIR, Verdict
from tests.gpu_platform.policy_pack.builders import (
    KIND_TYPES,
    SPEC_PATHS,
    Analyze,
    gpu_pod_spec,
    messages,
    namespace,
    restricted_pod_spec,
    workload,
)
from tests.gpu_platform.policy_pack.test_gpu_workload_crds import CARRIERS, carrier
from tests.repository import ROOT, STACKS
from tests.shared_plans import shared_plan

POLICY = "gpu-validation-taint-platform-only"
KEY = "startup-taint.cluster-autoscaler.kubernetes.io/gpu-validation"
FAILED_KEY = "gpu-platform.io/validation-failed"
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def tolerating(*tolerations: dict[str, str]) -> dict[str, Any]:
    spec = gpu_pod_spec()
    spec["tolerations"] = [GPU_TOLERATION, *tolerations]
    return spec


def refusal(path: str, every: bool = False) -> str:
    return (
        f"{path}.tolerations[1] tolerates {'every taint' if every else 'it'}, the node validation"
        f" taint {KEY}=pending:NoSchedule included, so the pod could start on a GPU node that has"
        " not passed validation, or failed it. Fix: tolerate the taints the pod needs by their"
        " keys; only the platform's namespaces (exemptNamespaces) may tolerate this one."
    )


def test_the_pack_names_the_taint_the_platform_sets() -> None:
    assert (VALIDATION_TAINT.key, VALIDATION_TAINT.value, VALIDATION_TAINT.effect) == (
        KEY,
        "pending",
        "NoSchedule",
    )
    assert FAILED_TAINT_KEY == FAILED_KEY


@pytest.mark.parametrize(
    ("toleration", "every"),
    [
        pytest.param({"key": KEY, "operator": "Exists"}, False, id="exists"),
        pytest.param({"key": KEY, "value": "pending", "effect": "NoSchedule"}, False, id="equal"),
        pytest.param({"operator": "Exists"}, True, id="every-taint"),
        pytest.param({"operator": "Exists", "effect": "NoSchedule"}, True, id="every-noschedule"),
    ],
)
def test_a_tenants_toleration_of_the_validation_taint_is_refused(
    analyze: Analyze, toleration: dict[str, str], every: bool
) -> None:
    verdicts = analyze(namespace(), workload("Deployment", tolerating(toleration)))

    assert messages(verdicts, POLICY) == [refusal("spec.template.spec", every)]


@pytest.mark.parametrize(
    "toleration",
    [
        pytest.param({"key": FAILED_KEY, "operator": "Exists"}, id="exists"),
        # Its value is the check that failed: each value tolerates the nodes failing one check.
        pytest.param({"key": FAILED_KEY, "value": "gpu-count", "effect": "NoSchedule"}, id="equal"),
    ],
)
def test_a_tenants_toleration_of_the_failure_taint_is_refused(
    analyze: Analyze, toleration: dict[str, str]
) -> None:
    verdicts = analyze(namespace(), workload("Deployment", tolerating(toleration)))

    assert messages(verdicts, POLICY) == [
        "spec.template.spec.tolerations[1] tolerates the node validation failure taint"
        f" {FAILED_KEY}:NoSchedule, so the pod could start on a GPU node that failed validation."
        " Fix: remove the toleration; only the platform's namespaces (exemptNamespaces) may"
        " tolerate it."
    ]


@pytest.mark.parametrize(
    "toleration",
    [
        pytest.param(
            {"key": FAILED_KEY, "operator": "Exists", "effect": "NoExecute"}, id="failed-noexecute"
        ),
        pytest.param({"key": KEY, "value": "passed"}, id="other-value"),
        pytest.param({"key": KEY, "operator": "Exists", "effect": "NoExecute"}, id="other-effect"),
        pytest.param({"operator": "Exists", "effect": "NoExecute"}, id="every-noexecute"),
        pytest.param({"key": "dedicated", "operator": "Exists"}, id="other-key"),
    ],
)
def test_tolerations_that_do_not_match_the_taint_pass(
    analyze: Analyze, toleration: dict[str, str]
) -> None:
    # k8s.io/api core/v1 toleration.go, ToleratesTaint: a set effect must equal the taint's, and
    # `Equal` (the default operator) compares the value.
    verdicts = analyze(namespace(), workload("Deployment", tolerating(toleration)))

    assert messages(verdicts, POLICY) == []


def test_a_dra_claiming_pods_toleration_of_the_validation_taint_is_refused(
    analyze: Analyze,
) -> None:
    # A pod on a DRA pool asks for no nvidia.com/ resource: its GPUs come from its claim
    # (docs/dra.md). The rule judges every tenant pod's tolerations, whatever it asks for.
    spec = restricted_pod_spec()
    spec["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "gpu-l4"}]
    spec["containers"][0]["resources"] = {"claims": [{"name": "gpu"}]}
    spec["tolerations"] = [GPU_TOLERATION, {"key": KEY, "operator": "Exists"}]

    verdicts = analyze(namespace(), workload("Deployment", spec))

    assert messages(verdicts, POLICY) == [refusal("spec.template.spec")]


@pytest.mark.parametrize("kind", [k for k in KIND_TYPES if k != "Deployment"])
def test_every_built_in_kind_is_judged(analyze: Analyze, kind: str) -> None:
    verdicts = analyze(namespace(), workload(kind, tolerating({"operator": "Exists"})))

    assert messages(verdicts, POLICY) == [refusal(SPEC_PATHS[kind], every=True)]


@pytest.mark.parametrize("kind", ["RayCluster", "PyTorchJob"])
def test_workload_custom_resources_are_judged(analyze: Analyze, kind: str) -> None:
    verdicts = analyze(namespace(), carrier(kind, tolerating({"key": KEY, "operator": "Exists"})))

    assert messages(verdicts, POLICY) == [refusal(CARRIERS[kind][2])]


def test_the_platforms_namespaces_may_tolerate_it(analyze: Analyze) -> None:
    spec = tolerating({"operator": "Exists"})

    default = analyze(workload("DaemonSet", spec, namespace="gpu-operator"))
    configured = analyze(
        workload("DaemonSet", spec, namespace="gpu-system"),
        # One setting with the Pod Security policies', which the config must give alike.
        config={
            name: {"exemptNamespaces": ["gpu-system"]}
            for name in (POLICY, "pod-security-standards", "namespace-pod-security")
        },
    )

    assert messages(default, POLICY) == []
    assert messages(configured, POLICY) == []


def pack_constants(*names: str) -> tuple[Any, ...]:
    """The values of the pack module's constants `names`, read from its source: the pack runs in
    a process of its own, its modules importable only from its directory."""
    source = ast.parse((PACK_DIR / "validation_taint.py").read_text())
    found = {
        target.id: node.value
        for node in source.body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    return tuple(ast.literal_eval(found[name]) for name in names)


def test_the_pack_names_the_gpu_routes_the_admission_policy_does() -> None:
    # The directory: NVIDIA/nvidia-container-toolkit v1.20.0, internal/config/image/
    # cuda_image.go, DeviceListAsVolumeMountsRoot. The variable and its values giving no GPU:
    # cmd/nvidia-container-runtime/README.md. The runtime classes: NVIDIA/gpu-operator v26.7.0,
    # the chart's operator.runtimeClass and assets/pre-requisites/0210_runtime_class_legacy.yaml,
    # 0220_runtime_class_cdi.yaml.
    expected = (
        "nvidia-container-devices",
        "NVIDIA_VISIBLE_DEVICES",
        ("", "void", "none"),
        ("nvidia", "nvidia-cdi", "nvidia-legacy"),
    )
    names = ("DEVICE_LIST_DIR", "VISIBLE_DEVICES", "NO_DEVICES", "RUNTIME_CLASSES")
    admission_policy = (DEVICE_LIST_DIR, VISIBLE_DEVICES, NO_DEVICES, RUNTIME_CLASSES)
    assert admission_policy == expected
    assert pack_constants(*names) == expected


def mounting(path: str, collection: str = "containers") -> dict[str, Any]:
    """A tenant's GPU pod that also mounts the host's /dev/null at `path` in a container of
    `collection`."""
    spec = gpu_pod_spec()
    spec["volumes"] = [{"name": "null", "hostPath": {"path": "/dev/null"}}]
    mount = {"name": "null", "mountPath": path}
    if collection == "containers":
        spec["containers"][0]["volumeMounts"] = [mount]
    else:
        spec[collection] = [{"name": "setup", "image": "busybox:1.37", "volumeMounts": [mount]}]
    return spec


def mount_refusal(container: str, field: str, path: str) -> str:
    return (
        f"{container} mounts {field} at {path}, where Bottlerocket's NVIDIA toolkit (EKS Auto"
        " Mode's nodes too) reads the GPUs a container gets: a mount of the host's /dev/null there"
        " takes the node's GPUs, whatever other pods were given, counted by no quota. Fix: remove"
        " the mount and request GPUs as nvidia.com/gpu resources; only the platform's namespaces"
        " (exemptNamespaces) may mount there."
    )


# Bottlerocket's toolkit reads device lists from mounts (bottlerocket-os/bottlerocket-core-kit
# packages/nvidia-container-toolkit/nvidia-container-toolkit-config-k8s:
# accept-nvidia-visible-devices-as-volume-mounts = true) of /dev/null under
# /var/run/nvidia-container-devices, comparing the cleaned path (NVIDIA/nvidia-container-toolkit
# v1.17.8, the release Bottlerocket builds, internal/config/image/cuda_image.go,
# DevicesFromMounts; v1.20.0 requestsFromMounts): each of these names GPUs.
@pytest.mark.parametrize(
    "path",
    [
        "/var/run/nvidia-container-devices/all",
        "/var/run/nvidia-container-devices/cdi/nvidia.com/gpu=all",
        "/tmp/../var/run/nvidia-container-devices/0",
    ],
)
@pytest.mark.parametrize(
    ("collection", "container"),
    [("containers", 'container "app"'), ("initContainers", 'init container "setup"')],
)
def test_a_tenants_mount_of_the_device_list_is_refused(
    analyze: Analyze, path: str, collection: str, container: str
) -> None:
    verdicts = analyze(namespace(), workload("Deployment", mounting(path, collection)))

    field = f"spec.template.spec.{collection}[0].volumeMounts[0]"
    assert messages(verdicts, POLICY) == [mount_refusal(container, field, path)]


def test_other_mounts_pass_and_the_platforms_namespaces_may_mount_the_device_list(
    analyze: Analyze,
) -> None:
    other = analyze(namespace(), workload("Deployment", mounting("/var/run/secrets/tokens")))
    platform = analyze(
        workload(
            "DaemonSet", mounting("/var/run/nvidia-container-devices/all"), namespace="gpu-operator"
        )
    )

    assert messages(other, POLICY) == []
    assert messages(platform, POLICY) == []


def with_env(value: str | None = None, collection: str = "containers") -> dict[str, Any]:
    """A tenant's GPU pod whose container of `collection` sets NVIDIA_VISIBLE_DEVICES to `value`,
    or from a ConfigMap where None."""
    spec = gpu_pod_spec()
    variable: dict[str, Any] = {"name": "NVIDIA_VISIBLE_DEVICES"}
    if value is None:
        variable["valueFrom"] = {"configMapKeyRef": {"name": "gpus", "key": "visible"}}
    else:
        variable["value"] = value
    if collection == "containers":
        spec["containers"][0]["env"] = [variable]
    else:
        spec[collection] = [{"name": "setup", "image": "busybox:1.37", "env": [variable]}]
    return spec


def env_refusal(container: str, field: str, value: str | None) -> str:
    source = "from valueFrom" if value is None else f"to '{value}'"
    return (
        f"{container} sets NVIDIA_VISIBLE_DEVICES {source} ({field}): under the NVIDIA runtime the"
        " variable hands the container the GPUs it names, all of the node's for `all`, whatever"
        " other pods were given, counted by no quota. Fix: remove it (or set it empty, void or"
        " none) and request GPUs as nvidia.com/gpu resources; only the platform's namespaces"
        " (exemptNamespaces) may set it."
    )


# NVIDIA/nvidia-container-toolkit v1.20.0, cmd/nvidia-container-runtime/README.md: `all`,
# indexes and UUIDs name GPUs; a value from valueFrom is not known to the pack.
@pytest.mark.parametrize("value", ["all", "0,1", None])
@pytest.mark.parametrize(
    ("collection", "container"),
    [("containers", 'container "app"'), ("initContainers", 'init container "setup"')],
)
def test_a_tenants_nvidia_visible_devices_naming_gpus_is_refused(
    analyze: Analyze, value: str | None, collection: str, container: str
) -> None:
    verdicts = analyze(namespace(), workload("Deployment", with_env(value, collection)))

    field = f"spec.template.spec.{collection}[0].env[0]"
    assert messages(verdicts, POLICY) == [env_refusal(container, field, value)]


def test_nvidia_visible_devices_naming_no_gpu_passes_and_the_platforms_namespaces_may_set_it(
    analyze: Analyze,
) -> None:
    # The README above: `void` and empty behave as runc, `none` gives no GPU.
    tenant = [
        workload("Deployment", with_env(value), name=f"app-{value or 'empty'}")
        for value in ("", "void", "none")
    ]
    platform = workload("DaemonSet", with_env("all"), namespace="gpu-operator")

    assert messages(analyze(namespace(), *tenant), POLICY) == []
    assert messages(analyze(platform), POLICY) == []


def runtime_refusal(runtime_class: str) -> str:
    return (
        f"spec.template.spec.runtimeClassName is {runtime_class}, a GPU Operator runtime class:"
        " that runtime hands a container the GPUs its image's NVIDIA_VISIBLE_DEVICES names, the"
        " CUDA images' `all` every GPU of the node, whatever other pods were given, counted by no"
        " quota. Fix: leave runtimeClassName unset and request GPUs as nvidia.com/gpu resources,"
        " which the device plugin hands the container; only the platform's namespaces"
        " (exemptNamespaces) may run in it."
    )


# The GPU Operator's RuntimeClasses: NVIDIA/gpu-operator v26.7.0, the chart's
# operator.runtimeClass (`nvidia`) and assets/pre-requisites/0210_runtime_class_legacy.yaml,
# 0220_runtime_class_cdi.yaml.
@pytest.mark.parametrize("runtime_class", ["nvidia", "nvidia-cdi", "nvidia-legacy"])
def test_a_tenants_gpu_operator_runtime_class_is_refused(
    analyze: Analyze, runtime_class: str
) -> None:
    spec = gpu_pod_spec()
    spec["runtimeClassName"] = runtime_class

    verdicts = analyze(namespace(), workload("Deployment", spec))

    assert messages(verdicts, POLICY) == [runtime_refusal(runtime_class)]


def test_other_runtime_classes_pass_and_the_platforms_namespaces_may_use_the_operators(
    analyze: Analyze,
) -> None:
    tenant, platform = gpu_pod_spec(), gpu_pod_spec()
    tenant["runtimeClassName"] = "gvisor"
    platform["runtimeClassName"] = "nvidia"

    assert messages(analyze(namespace(), workload("Deployment", tenant)), POLICY) == []
    assert (
        messages(analyze(workload("DaemonSet", platform, namespace="gpu-operator")), POLICY) == []
    )


PROD_POLICY_CONFIG = json.loads((ROOT / "policy-config" / "prod.json").read_text())


@pytest.mark.parametrize("stack", STACKS)
def test_the_platforms_own_pods_tolerate_it_under_prods_config(
    stack: str, analyze_plan: Callable[..., list[Verdict]]
) -> None:
    # The validator DaemonSets, the operator's operands and every other pod the platform runs on
    # a validated pool's nodes tolerate the taint, in the namespaces prod's policy config exempts.
    resources = shared_plan(stack).resources
    validators = [
        r
        for r in resources
        if r.type == "kubernetes:apps/v1:DaemonSet"
        and r.inputs["metadata"]["name"].startswith(f"{VALIDATOR}-")
    ]

    verdicts = analyze_plan(resources, PROD_POLICY_CONFIG)

    assert all(
        {"key": KEY, "operator": "Equal", "value": "pending", "effect": "NoSchedule"}
        in r.inputs["spec"]["template"]["spec"]["tolerations"]
        for r in validators
    )
    assert [v.message for v in verdicts if v.policy_name == POLICY] == []
