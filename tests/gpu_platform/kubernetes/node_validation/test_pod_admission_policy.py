"""The admission policy that keeps other pods off unvalidated GPU nodes: its CEL evaluated with
cel-python (as test_admission_policy.py evaluates the validator's) against pods it must admit
and refuse, its namespace selector as the API server applies one, and the platform's own pods
in every stack admitted by the policy the stack deploys."""

import copy
from typing import Any

import pytest

from gpu_platform.config import Cloud, GpuPoolSpec, QueuesSpec, StackConfig
from gpu_platform.kubernetes.node_validation.pod_admission_policy import (
    exempt_namespaces,
    gpu_pod_clauses,
    pod_admission_policy,
)
from gpu_platform.versions import SUPPORTED_KUBERNETES_VERSIONS
from tests.gpu_platform.kubernetes.node_validation import pod_policy_invariants as invariants
from tests.gpu_platform.kubernetes.node_validation.test_admission_policy import evaluate
from tests.kubernetes_schemas import validate
from tests.repository import STACKS
from tests.shared_plans import shared_plan

POLICY, BINDING = pod_admission_policy(["gpu-operator", "kube-system"])
KEY = "startup-taint.cluster-autoscaler.kubernetes.io/gpu-validation"
FAILED_KEY = "gpu-platform.io/validation-failed"
TOLERATION = (
    f"this namespace's GPU pods may not tolerate the node validation taint {KEY}, the failure taint"
    f" {FAILED_KEY} or every taint: the pod could start on a GPU node that has not passed"
    " validation, or failed it. Tolerate the taints the pod needs by their keys."
)
NODE_NAME = (
    "this namespace's GPU pods may not set spec.nodeName: the pod would skip the scheduler and"
    " the node validation taint, and could start on a GPU node that has not passed validation."
    " Select the node with nodeSelector or affinity instead."
)
MOUNT = (
    "this namespace's pods may not mount anything at a path naming nvidia-container-devices: on a"
    " node whose NVIDIA toolkit reads device lists from mounts (Bottlerocket's, EKS Auto Mode's),"
    " such a mount hands the container the node's GPUs, whatever other pods were given and"
    " counted by no quota. Request GPUs as nvidia.com/gpu resources instead."
)
VISIBLE = (
    "this namespace's pods may not set NVIDIA_VISIBLE_DEVICES in a container's env to name GPUs"
    " (any value but empty, void or none, or one from valueFrom): under the NVIDIA runtime the"
    " variable hands the container the GPUs it names, all of the node's for 'all', whatever other"
    " pods were given and counted by no quota. Request GPUs as nvidia.com/gpu resources instead."
)
# The GPU Operator's RuntimeClasses: NVIDIA/gpu-operator v26.7.0, the chart's
# operator.runtimeClass (`nvidia`) and assets/pre-requisites/0210_runtime_class_legacy.yaml,
# 0220_runtime_class_cdi.yaml.
RUNTIME = (
    "this namespace's pods may not run in the GPU Operator's runtime classes (nvidia, nvidia-cdi,"
    " nvidia-legacy): that runtime hands a container the GPUs its image's NVIDIA_VISIBLE_DEVICES"
    " names, the CUDA images' 'all' every GPU of the node, whatever other pods were given and"
    " counted by no quota. Leave runtimeClassName unset and request GPUs as nvidia.com/gpu"
    " resources: the device plugin gives the container its GPUs."
)
Pod = dict[str, Any]

POD: Pod = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "train-0", "namespace": "ml-team"},
    "spec": {
        "containers": [
            {
                "name": "train",
                "image": "nvcr.io/nvidia/pytorch:25.01-py3",
                "resources": {"limits": {"nvidia.com/gpu": "8"}},
            }
        ],
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    },
}


def denied(pod: Pod, old: Pod | None = None) -> list[str]:
    return invariants.denied(POLICY["spec"], pod, old)


def with_tolerations(*tolerations: dict[str, str], pod: Pod = POD) -> Pod:
    changed = copy.deepcopy(pod)
    changed["spec"]["tolerations"] += list(tolerations)
    return changed


def on_node(pod: Pod = POD) -> Pod:
    changed = copy.deepcopy(pod)
    changed["spec"]["nodeName"] = "ip-10-0-1-23.ec2.internal"
    return changed


FORBIDDEN_TOLERATIONS = {
    "validation taint, Exists": {"key": KEY, "operator": "Exists"},
    "validation taint, its value": {"key": KEY, "value": "pending", "effect": "NoSchedule"},
    "failure taint, Exists": {"key": FAILED_KEY, "operator": "Exists", "effect": "NoSchedule"},
    "failure taint, one check": {"key": FAILED_KEY, "value": "gpu-count"},
    "every taint": {"operator": "Exists"},
    "every NoSchedule taint": {"operator": "Exists", "effect": "NoSchedule"},
}


@pytest.mark.parametrize(
    "toleration", FORBIDDEN_TOLERATIONS.values(), ids=FORBIDDEN_TOLERATIONS.keys()
)
def test_a_pod_tolerating_the_validation_taints_is_refused(toleration: dict[str, str]) -> None:
    assert denied(with_tolerations(toleration)) == [TOLERATION]


# k8s.io/api core/v1 toleration.go, ToleratesTaint: a set effect must equal the taint's, and
# `Equal` (the default operator) compares the value.
ALLOWED_TOLERATIONS = {
    "none beyond the GPU's": None,
    "validation taint, another value": {"key": KEY, "value": "passed"},
    "validation taint, another effect": {"key": KEY, "operator": "Exists", "effect": "NoExecute"},
    "failure taint, another effect": {
        "key": FAILED_KEY,
        "operator": "Exists",
        "effect": "NoExecute",
    },
    "every NoExecute taint": {"operator": "Exists", "effect": "NoExecute"},
    "another key": {"key": "dedicated", "operator": "Exists"},
}


@pytest.mark.parametrize("toleration", ALLOWED_TOLERATIONS.values(), ids=ALLOWED_TOLERATIONS.keys())
def test_other_tolerations_pass(toleration: dict[str, str] | None) -> None:
    assert denied(with_tolerations(toleration) if toleration else POD) == []


def test_a_pod_with_no_tolerations_passes() -> None:
    pod = copy.deepcopy(POD)
    del pod["spec"]["tolerations"]
    assert denied(pod) == []


def test_an_update_may_not_add_such_a_toleration() -> None:
    # An update may only add tolerations (k8s.io/kubernetes pkg/apis/core/validation/
    # validation.go, ValidatePodUpdate).
    assert denied(with_tolerations({"operator": "Exists"}), old=POD) == [TOLERATION]


def test_a_pod_admitted_before_the_policy_can_still_be_updated() -> None:
    # Its finalizers removed, a label changed: refusing it would leave the pod stuck.
    old = with_tolerations({"operator": "Exists"})
    new = copy.deepcopy(old)
    new["metadata"]["labels"] = {"team": "ml"}
    assert denied(new, old=old) == []


# A cluster add-on's DaemonSet pod in its own namespace, tolerating every taint as node agents
# (security, logs, metrics) commonly do so as to run on every node. It asks for no GPU, and is
# admitted whatever it tolerates.
ADD_ON: Pod = {**POD, "metadata": {"name": "log-agent-x7k2p", "namespace": "logging"}}
ADD_ON["spec"] = {
    "containers": [
        {
            "name": "log-agent",
            "image": "fluent/fluent-bit:4.0.3",
            "resources": {"limits": {"cpu": "200m", "memory": "256Mi"}},
            "env": [{"name": "CLUSTER_NAME", "value": "prod"}],
        }
    ],
    "tolerations": [{"operator": "Exists"}],
}


def test_a_pod_asking_for_no_gpu_is_admitted_whatever_it_tolerates() -> None:
    assert denied(ADD_ON) == []
    assert denied(with_tolerations({"key": KEY, "operator": "Exists"}, pod=ADD_ON)) == []
    assert denied(on_node(ADD_ON)) == []


def gpu_form(field: str, container: dict[str, Any] | None = None, **spec: Any) -> Pod:
    """The add-on's pod made a GPU pod one way: a container of `field` (`containers` or
    `initContainers`) with `container`'s fields, or the pod's `spec` fields."""
    pod = copy.deepcopy(ADD_ON)
    pod["spec"].update(spec)
    if container is not None:
        pod["spec"].setdefault(field, []).append({"name": "gpu", "image": "busybox:1.37"})
        pod["spec"][field][-1].update(container)
    return pod


def visible(value: str) -> dict[str, Any]:
    return {"env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": value}]}


# Bottlerocket's toolkit reads device lists from mounts (bottlerocket-os/bottlerocket-core-kit
# packages/nvidia-container-toolkit/nvidia-container-toolkit-config-k8s:
# accept-nvidia-visible-devices-as-volume-mounts = true): a mount of the host's /dev/null at
# /var/run/nvidia-container-devices/<device> names the device, `all` every GPU
# (NVIDIA/nvidia-container-toolkit v1.17.8, the release Bottlerocket builds,
# internal/config/image/cuda_image.go, DevicesFromMounts, which cleans the path first; v1.20.0
# requestsFromMounts).
NULL_DEVICE = {"name": "null", "hostPath": {"path": "/dev/null"}}


def mounted(path: str) -> dict[str, Any]:
    return {"volumeMounts": [{"name": "null", "mountPath": path}]}


ALL_GPUS = "/var/run/nvidia-container-devices/all"


# One form for each clause of the policy's match condition, in their order: removing a clause
# admits its form (test_each_gpu_pod_form_is_matched_by_its_own_clause).
GPU_FORMS = {
    # The GPU Operator's RuntimeClasses (NVIDIA/gpu-operator v26.7.0, assets/pre-requisites/).
    "runtime class nvidia": gpu_form("containers", runtimeClassName="nvidia"),
    # A claim from a template (docs/dra.md); CEL cannot see the template's DeviceClass.
    "claims a DRA device": gpu_form(
        "containers",
        {"resources": {"claims": [{"name": "gpu"}]}},
        resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "gpu-l4"}],
    ),
    "limits a GPU": gpu_form("containers", {"resources": {"limits": {"nvidia.com/gpu": "1"}}}),
    # Time-slicing's shared replicas, requested without a limit.
    "requests a shared GPU": gpu_form(
        "containers", {"resources": {"requests": {"nvidia.com/gpu.shared": "1"}}}
    ),
    # NVIDIA/nvidia-container-toolkit v1.20.0, cmd/nvidia-container-runtime/README.md: `all`
    # makes every GPU accessible, with no request.
    "NVIDIA_VISIBLE_DEVICES=all": gpu_form("containers", visible("all")),
    "mounts the device list": gpu_form("containers", mounted(ALL_GPUS), volumes=[NULL_DEVICE]),
    "init container limits a MIG slice": gpu_form(
        "initContainers", {"resources": {"limits": {"nvidia.com/mig-1g.10gb": "1"}}}
    ),
    "init container requests a GPU": gpu_form(
        "initContainers", {"resources": {"requests": {"nvidia.com/gpu": "1"}}}
    ),
    "init container NVIDIA_VISIBLE_DEVICES=0,1": gpu_form("initContainers", visible("0,1")),
    "init container mounts the device list": gpu_form(
        "initContainers", mounted(ALL_GPUS), volumes=[NULL_DEVICE]
    ),
    # An ephemeral container may set env and volumeMounts, not resources (k8s.io/kubernetes
    # pkg/apis/core/validation/validation.go, validateEphemeralContainers).
    "ephemeral container NVIDIA_VISIBLE_DEVICES=all": gpu_form(
        "ephemeralContainers", visible("all")
    ),
    "ephemeral container mounts the device list": gpu_form(
        "ephemeralContainers", mounted(ALL_GPUS), volumes=[NULL_DEVICE]
    ),
}
# Each form's own refusals, beside the toleration's.
OWN_REFUSALS = {
    "runtime class nvidia": [RUNTIME],
    "runtime class nvidia-cdi": [RUNTIME],
    "mounts the device list": [MOUNT],
    "init container mounts the device list": [MOUNT],
    "ephemeral container mounts the device list": [MOUNT],
    "NVIDIA_VISIBLE_DEVICES=all": [VISIBLE],
    "init container NVIDIA_VISIBLE_DEVICES=0,1": [VISIBLE],
    "ephemeral container NVIDIA_VISIBLE_DEVICES=all": [VISIBLE],
    "NVIDIA_VISIBLE_DEVICES from a ConfigMap": [VISIBLE],
}
# Also matched: a variable whose value the policy cannot read, and the CDI runtime classes.
OTHER_GPU_FORMS = {
    "NVIDIA_VISIBLE_DEVICES from a ConfigMap": gpu_form(
        "containers",
        {
            "env": [
                {
                    "name": "NVIDIA_VISIBLE_DEVICES",
                    "valueFrom": {"configMapKeyRef": {"name": "gpus", "key": "visible"}},
                }
            ]
        },
    ),
    "runtime class nvidia-cdi": gpu_form("containers", runtimeClassName="nvidia-cdi"),
}
GPU_TOLERATIONS = {
    "by key": {"key": KEY, "operator": "Exists"},
    "every taint": {"operator": "Exists"},
}


@pytest.mark.parametrize("form", {**GPU_FORMS, **OTHER_GPU_FORMS}.items(), ids=lambda f: f[0])
@pytest.mark.parametrize("toleration", GPU_TOLERATIONS.values(), ids=GPU_TOLERATIONS.keys())
def test_each_gpu_pod_form_tolerating_the_taint_is_refused(
    form: tuple[str, Pod], toleration: dict[str, str]
) -> None:
    pod = copy.deepcopy(form[1])
    pod["spec"]["tolerations"] = [toleration]
    assert denied(pod) == [TOLERATION, *OWN_REFUSALS.get(form[0], [])]


def test_each_gpu_pod_form_is_matched_by_its_own_clause() -> None:
    clauses = gpu_pod_clauses()
    matched = [
        [i for i, clause in enumerate(clauses) if evaluate(clause, {"object": pod})]
        for pod in GPU_FORMS.values()
    ]
    assert matched == [[i] for i in range(len(clauses))]


# The pod of docs/dra.md, as a tenant writes it for a DRA pool (`l4` in dra-dev): a claim of
# its own from the namespace's template, no nvidia.com/ resource, and the GPU and DRA taints
# tolerated.
DRA_POD: Pod = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "infer", "namespace": "ml-team"},
    "spec": {
        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu-l4"}],
        "containers": [
            {
                "name": "infer",
                "image": "nvcr.io/nvidia/cuda:12.8.1-base-ubuntu24.04",
                "command": ["nvidia-smi"],
                "resources": {"claims": [{"name": "gpu"}]},
            }
        ],
        "tolerations": [
            {
                "key": "nvidia.com/gpu",
                "operator": "Equal",
                "value": "present",
                "effect": "NoSchedule",
            },
            {
                "key": "gpu-platform.io/allocation",
                "operator": "Equal",
                "value": "dra",
                "effect": "NoSchedule",
            },
        ],
    },
}


def test_a_pod_claiming_a_dra_gpu_without_the_validation_taints_is_admitted() -> None:
    assert denied(DRA_POD) == []


@pytest.mark.parametrize(
    "toleration", FORBIDDEN_TOLERATIONS.values(), ids=FORBIDDEN_TOLERATIONS.keys()
)
def test_a_pod_claiming_a_dra_gpu_tolerating_the_validation_taints_is_refused(
    toleration: dict[str, str],
) -> None:
    # The DRA driver's kubelet plugin publishes a node's GPUs while it is being validated: the
    # taints alone keep a claim's pod off it.
    assert denied(with_tolerations(toleration, pod=DRA_POD)) == [TOLERATION]


def test_a_pod_with_an_empty_list_of_claims_is_no_gpu_pod() -> None:
    pod = copy.deepcopy(ADD_ON)
    pod["spec"]["resourceClaims"] = []
    assert denied(pod) == []


# cmd/nvidia-container-runtime/README.md (v1.20.0): `none` gives no GPU, `void` and empty
# behave as runc.
NOT_GPU_FORMS = {
    "NVIDIA_VISIBLE_DEVICES=void": gpu_form("containers", visible("void")),
    "NVIDIA_VISIBLE_DEVICES=none": gpu_form("initContainers", visible("none")),
    "NVIDIA_VISIBLE_DEVICES empty": gpu_form(
        "containers", {"env": [{"name": "NVIDIA_VISIBLE_DEVICES"}]}
    ),
    "another device": gpu_form("containers", {"resources": {"limits": {"example.com/fpga": "1"}}}),
    "another runtime class": gpu_form("containers", runtimeClassName="gvisor"),
    "another mount": gpu_form("containers", mounted("/var/run/secrets/tokens")),
}


@pytest.mark.parametrize("pod", NOT_GPU_FORMS.values(), ids=NOT_GPU_FORMS.keys())
def test_a_pod_that_gets_no_gpu_is_admitted(pod: Pod) -> None:
    assert denied(pod) == []


def test_a_gpu_pod_that_names_its_node_is_refused() -> None:
    # The kubelet holds only NoExecute taints against a pod (k8s.io/kubernetes
    # pkg/kubelet/lifecycle/predicate.go, generalFilter): a pod given its node skips the taint.
    assert denied(on_node()) == [NODE_NAME]
    for name, pod in GPU_FORMS.items():
        without_tolerations = copy.deepcopy(pod)
        del without_tolerations["spec"]["tolerations"]
        assert denied(on_node(without_tolerations)) == [NODE_NAME, *OWN_REFUSALS.get(name, [])]


# The toolkit compares the cleaned path (filepath.Clean), so each of these names a device.
DEVICE_LIST_PATHS = [
    ALL_GPUS,
    "/var/run/nvidia-container-devices/GPU-8f6a8a4e-6f3b-4c1a-9d2e-3b1c0e7a9f10",
    "/var/run/nvidia-container-devices/cdi/nvidia.com/gpu=all",
    "//var/run/nvidia-container-devices/all",
    "/tmp/../var/run/./nvidia-container-devices/all",
]


@pytest.mark.parametrize("path", DEVICE_LIST_PATHS)
@pytest.mark.parametrize("field", ["containers", "initContainers"])
def test_a_pod_naming_gpus_by_a_mount_is_refused_whatever_it_tolerates(
    path: str, field: str
) -> None:
    # A tenant's pod on a validated node, tolerating only the GPU taint, as any GPU pod does.
    pod = gpu_form(field, mounted(path), volumes=[NULL_DEVICE])
    pod["spec"]["tolerations"] = copy.deepcopy(POD["spec"]["tolerations"])
    assert denied(pod) == [MOUNT]


# cmd/nvidia-container-runtime/README.md (v1.20.0): `all`, indexes or UUIDs name GPUs.
VISIBLE_VALUES = ["all", "0,1", "GPU-8f6a8a4e-6f3b-4c1a-9d2e-3b1c0e7a9f10"]


@pytest.mark.parametrize("value", VISIBLE_VALUES)
@pytest.mark.parametrize("field", ["containers", "initContainers"])
def test_a_pod_naming_gpus_by_its_env_is_refused_whatever_it_tolerates(
    value: str, field: str
) -> None:
    # A tenant's pod tolerating only the GPU taint, as any GPU pod does.
    pod = gpu_form(field, visible(value))
    pod["spec"]["tolerations"] = copy.deepcopy(POD["spec"]["tolerations"])
    assert denied(pod) == [VISIBLE]


@pytest.mark.parametrize("runtime_class", ["nvidia", "nvidia-cdi", "nvidia-legacy"])
def test_a_pod_in_the_operators_runtime_classes_is_refused_whatever_it_tolerates(
    runtime_class: str,
) -> None:
    # With the CUDA image's own NVIDIA_VISIBLE_DEVICES=all, no field of the pod names a GPU.
    pod = gpu_form("containers", runtimeClassName=runtime_class)
    pod["spec"]["tolerations"] = copy.deepcopy(POD["spec"]["tolerations"])
    assert denied(pod) == [RUNTIME]


ADMITTED_BEFORE = {
    "mount": gpu_form("containers", mounted(ALL_GPUS), volumes=[NULL_DEVICE]),
    "env": gpu_form("containers", visible("all")),
    "runtime class": gpu_form("containers", runtimeClassName="nvidia"),
    "ephemeral mount": gpu_form("ephemeralContainers", mounted(ALL_GPUS), volumes=[NULL_DEVICE]),
}


@pytest.mark.parametrize("old", ADMITTED_BEFORE.values(), ids=ADMITTED_BEFORE.keys())
def test_a_pod_admitted_before_with_such_a_field_can_still_be_updated(old: Pod) -> None:
    # Volume mounts, env and the runtime class cannot change on an update (ValidatePodUpdate),
    # and ephemeral containers can only be added: an update is judged by what it adds.
    new = copy.deepcopy(old)
    new["metadata"]["labels"] = {"team": "ml"}
    assert denied(new, old=old) == []


def with_ephemeral(pod: Pod, container: dict[str, Any]) -> Pod:
    changed = copy.deepcopy(pod)
    changed["spec"].setdefault("ephemeralContainers", []).append(
        {"name": "debugger", "image": "busybox:1.37", **container}
    )
    return changed


def test_an_ephemeral_container_may_not_name_gpus() -> None:
    # A pod that holds the host's /dev/null as a volume, mounted nowhere, is no GPU pod; an
    # ephemeral container added through pods/ephemeralcontainers may then mount it
    # (ValidatePodEphemeralContainersUpdate refuses only its subPath).
    holder = gpu_form("containers", volumes=[NULL_DEVICE])
    assert denied(holder) == []
    assert denied(with_ephemeral(holder, mounted(ALL_GPUS)), old=holder) == [MOUNT]
    assert denied(with_ephemeral(POD, visible("all")), old=POD) == [VISIBLE]
    # Another debugger, next to one added before the policy existed, is admitted.
    before = ADMITTED_BEFORE["ephemeral mount"]
    assert denied(with_ephemeral(before, {}), old=before) == []


def test_a_scheduled_gpu_pod_may_be_updated() -> None:
    # The scheduler binds a pod through pods/binding, which the policy does not match; the
    # bound pod's later updates carry the node it was given.
    bound = on_node()
    assert denied(bound, old=bound) == []


def test_the_platforms_namespaces_and_labelled_ones_are_not_judged() -> None:
    selector = POLICY["spec"]["matchConstraints"]["namespaceSelector"]

    def namespace(name: str, **labels: str) -> dict[str, str]:
        # The API server sets this label on every namespace (NamespaceDefaultLabelName).
        return {"kubernetes.io/metadata.name": name, **labels}

    assert invariants.selected(selector, namespace("ml-team"))
    assert invariants.selected(selector, namespace("default"))
    assert not invariants.selected(selector, namespace("gpu-operator"))
    assert not invariants.selected(selector, namespace("kube-system"))
    labelled = namespace("amazon-guardduty", **{"gpu-platform.io/node-validation-exempt": "true"})
    assert not invariants.selected(selector, labelled)


def test_the_exempt_namespaces_are_the_platforms() -> None:
    # Each at its default: config/operator.py, config/capacity.py.
    def defaults(**fields: Any) -> StackConfig:
        # The fields the namespaces come from take their defaults; the others are not read.
        return StackConfig.model_construct(**{"pools": [], **fields})

    eks = defaults(cloud=Cloud.AWS)
    karpenter = defaults(cloud=Cloud.AWS, provisioner="karpenter")
    gke = defaults(cloud=Cloud.GCP)
    assert exempt_namespaces(eks) == [
        "gpu-operator",
        "gpu-platform-system",
        "kube-system",
        "monitoring",
        "monitoring-node-exporter",
    ]
    assert exempt_namespaces(karpenter) == [
        "gpu-operator",
        "kube-system",
        "monitoring",
        "monitoring-node-exporter",
    ]
    assert exempt_namespaces(gke) == [
        "gmp-system",
        "gpu-operator",
        "kube-system",
        "monitoring",
        "monitoring-node-exporter",
    ]
    # config/queues.py: Kueue's namespace, once it is installed.
    queued = defaults(cloud=Cloud.GCP, queues=QueuesSpec(enabled=True))
    assert exempt_namespaces(queued) == [
        "gmp-system",
        "gpu-operator",
        "kube-system",
        "kueue-system",
        "monitoring",
        "monitoring-node-exporter",
    ]
    # gpu_platform/kubernetes/dra_driver.py: NVIDIA's DRA driver, once a pool allocates through
    # DRA.
    dra = defaults(cloud=Cloud.AWS, pools=[GpuPoolSpec(name="l4", max=2, allocation="dra")])
    assert "nvidia-dra-driver-gpu" in exempt_namespaces(dra)
    assert "nvidia-dra-driver-gpu" not in exempt_namespaces(eks)


def test_the_binding_denies_pod_creations_and_updates() -> None:
    assert BINDING["spec"] == {
        "policyName": POLICY["metadata"]["name"],
        "validationActions": ["Deny"],
    }
    rules = POLICY["spec"]["matchConstraints"]["resourceRules"]
    assert [(rule["resources"], rule["operations"]) for rule in rules] == [
        (["pods"], ["CREATE", "UPDATE"]),
        # kubectl debug adds an ephemeral container by this subresource's update.
        (["pods/ephemeralcontainers"], ["UPDATE"]),
    ]


@pytest.mark.parametrize("minor", SUPPORTED_KUBERNETES_VERSIONS)
def test_the_manifests_are_valid_kubernetes_objects(minor: str) -> None:
    for manifest in (POLICY, BINDING):
        validate(copy.deepcopy(manifest), minor)


@pytest.mark.parametrize("stack", STACKS)
def test_the_platforms_own_pods_are_admitted(stack: str) -> None:
    assert invariants.pod_policy_problems(shared_plan(stack), {}) == []


def test_a_refused_platform_pod_is_a_problem() -> None:
    plan = shared_plan("dev")
    (smoke_test,) = plan.of_type("kubernetes:batch/v1:Job")
    smoke_test.inputs["spec"]["template"]["spec"]["tolerations"].append({"operator": "Exists"})
    assert invariants.pod_policy_problems(plan, {}) == [
        f"Job {smoke_test.inputs['metadata']['namespace']}/{smoke_test.inputs['metadata']['name']}:"
        f" {TOLERATION}"
    ]
