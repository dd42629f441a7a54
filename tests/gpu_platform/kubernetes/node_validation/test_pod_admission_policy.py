"""The admission policy that keeps other pods off unvalidated GPU nodes: its CEL evaluated with
cel-python (as test_admission_policy.py evaluates the validator's) against pods it must admit
and refuse, its namespace selector as the API server applies one, and the platform's own pods
in every stack admitted by the policy the stack deploys."""

import copy
from typing import Any

import pytest

from gpu_platform.config import Cloud, StackConfig
from gpu_platform.kubernetes.node_validation.pod_admission_policy import (
    exempt_namespaces,
    pod_admission_policy,
)
from gpu_platform.versions import SUPPORTED_KUBERNETES_VERSIONS
from tests.gpu_platform.kubernetes.node_validation import pod_policy_invariants as invariants
from tests.kubernetes_schemas import validate
from tests.repository import STACKS
from tests.shared_plans import shared_plan

POLICY, BINDING = pod_admission_policy(["gpu-operator", "kube-system"])
KEY = "startup-taint.cluster-autoscaler.kubernetes.io/gpu-validation"
FAILED_KEY = "gpu-platform.io/validation-failed"
TOLERATION = (
    f"this namespace's pods may not tolerate the node validation taint {KEY}, the failure taint"
    f" {FAILED_KEY} or every taint: the pod could start on a GPU node that has not passed"
    " validation, or failed it. Tolerate the taints the pod needs by their keys."
)
NODE_NAME = (
    "this namespace's pods that ask for an NVIDIA device may not set spec.nodeName: the pod would"
    " skip the scheduler and the node validation taint, and could start on a GPU node that has"
    " not passed validation. Select the node with nodeSelector or affinity instead."
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


def gpu_in(field: str, resource: str) -> Pod:
    pod = on_node()
    pod["spec"]["containers"][0]["resources"] = {}
    pod["spec"][field] = [
        {"name": "c", "image": "busybox:1.37", "resources": {"requests": {resource: "1"}}}
    ]
    return pod


def test_a_gpu_pod_that_names_its_node_is_refused() -> None:
    # The kubelet holds only NoExecute taints against a pod (k8s.io/kubernetes
    # pkg/kubelet/lifecycle/predicate.go, generalFilter): a pod given its node skips the taint.
    assert denied(on_node()) == [NODE_NAME]
    assert denied(gpu_in("initContainers", "nvidia.com/gpu")) == [NODE_NAME]
    assert denied(gpu_in("containers", "nvidia.com/mig-1g.10gb")) == [NODE_NAME]


def test_a_pod_that_names_its_node_without_a_gpu_passes() -> None:
    pod = on_node()
    pod["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "1"}}
    assert denied(pod) == []
    assert denied(gpu_in("containers", "example.com/fpga")) == []


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
        return StackConfig.model_construct(**fields)

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


def test_the_binding_denies_pod_creations_and_updates() -> None:
    assert BINDING["spec"] == {
        "policyName": POLICY["metadata"]["name"],
        "validationActions": ["Deny"],
    }
    (rule,) = POLICY["spec"]["matchConstraints"]["resourceRules"]
    assert (rule["resources"], rule["operations"]) == (["pods"], ["CREATE", "UPDATE"])


@pytest.mark.parametrize("minor", SUPPORTED_KUBERNETES_VERSIONS)
def test_the_manifests_are_valid_kubernetes_objects(minor: str) -> None:
    for manifest in (POLICY, BINDING):
        validate(copy.deepcopy(manifest), minor)


@pytest.mark.parametrize("stack", STACKS)
def test_the_platforms_own_pods_are_admitted(stack: str) -> None:
    assert invariants.pod_policy_problems(shared_plan(stack), {}) == []


def test_a_refused_platform_pod_is_a_problem() -> None:
    plan = copy.deepcopy(shared_plan("dev"))
    (smoke_test,) = plan.of_type("kubernetes:batch/v1:Job")
    smoke_test.inputs["spec"]["template"]["spec"]["tolerations"].append({"operator": "Exists"})
    assert invariants.pod_policy_problems(plan, {}) == [
        f"Job {smoke_test.inputs['metadata']['namespace']}/{smoke_test.inputs['metadata']['name']}:"
        f" {TOLERATION}"
    ]
