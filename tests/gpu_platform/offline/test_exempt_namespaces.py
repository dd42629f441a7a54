"""The plan's warning where the policy config's `exemptNamespaces` lets a workload tolerate the
node validation taint in a namespace the cluster's pods admission policy judges."""

import copy
from typing import Any

from gpu_platform.offline.exempt_namespaces import exemption_mismatches
from gpu_platform.offline.program import Plan
from tests.shared_plans import shared_plan

WARNING = (
    "Job ml-sandbox/gpu-smoke-test tolerates the node validation taint"
    " startup-taint.cluster-autoscaler.kubernetes.io/gpu-validation, which the policy config's"
    " gpu-validation-taint-platform-only.exemptNamespaces allows in ml-sandbox, but the"
    " cluster's admission policy gpu-platform-pods-off-unvalidated-nodes judges ml-sandbox: the"
    " API server refuses its pods if they get GPUs. Label the Namespace ml-sandbox"
    " gpu-platform.io/node-validation-exempt=true, or remove ml-sandbox from exemptNamespaces"
    " and the toleration from the workload (docs/node-validation.md)."
)
EXEMPT = ["gpu-operator", "monitoring", "monitoring-node-exporter", "kube-system", "ml-sandbox"]
CONFIG: dict[str, Any] = {"gpu-validation-taint-platform-only": {"exemptNamespaces": EXEMPT}}


def dev_with(toleration: dict[str, str] | None) -> Plan:
    """The dev stack, its tenant's smoke test (a GPU Job in ml-sandbox) given `toleration`."""
    plan = copy.deepcopy(shared_plan("dev"))
    (job,) = plan.of_type("kubernetes:batch/v1:Job")
    if toleration is not None:
        job.inputs["spec"]["template"]["spec"]["tolerations"].append(toleration)
    return plan


def test_a_workload_the_pack_lets_tolerate_the_taint_and_the_cluster_refuses_is_warned() -> None:
    assert exemption_mismatches(dev_with({"operator": "Exists"}), CONFIG) == [WARNING]
    validation = {"key": "startup-taint.cluster-autoscaler.kubernetes.io/gpu-validation"}
    assert exemption_mismatches(dev_with({**validation, "operator": "Exists"}), CONFIG) == [WARNING]


def test_no_warning_where_the_lists_agree_or_nothing_tolerates_the_taint() -> None:
    tolerating = dev_with({"operator": "Exists"})
    # The default list: the platform's namespaces, which the cluster's policy leaves alone.
    assert exemption_mismatches(tolerating, None) == []
    assert exemption_mismatches(tolerating, {"gpu-validation-taint-platform-only": {}}) == []
    # The operator's namespace, listed by both; a namespace listed for Pod Security alone.
    assert exemption_mismatches(dev_with(None), CONFIG) == []


def test_a_namespace_the_stack_labels_exempt_is_not_warned() -> None:
    plan = dev_with({"operator": "Exists"})
    (namespace,) = [
        r
        for r in plan.of_type("kubernetes:core/v1:Namespace")
        if r.inputs["metadata"]["name"] == "ml-sandbox"
    ]
    namespace.inputs["metadata"]["labels"]["gpu-platform.io/node-validation-exempt"] = "true"
    assert exemption_mismatches(plan, CONFIG) == []
