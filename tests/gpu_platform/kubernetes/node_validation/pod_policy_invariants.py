"""Does the pods' admission policy a plan deploys admit every pod the platform runs, and is it
there wherever a pool validates?

`pod_policy_problems(plan, config)` evaluates the planned policy's CEL (cel-python, as
test_admission_policy.py does) over the pod template of every workload the plan declares in a
namespace the policy judges (the tenants' smoke tests), and holds every Helm release the plan
installs (the GPU Operator with its operands and node-feature-discovery, which tolerate every
taint of the GPU nodes; kube-prometheus-stack with its node-exporter; the autoscaler; Karpenter)
to a namespace the policy does not judge: a refused platform pod is the worst a gate can do.
"""

from collections.abc import Mapping
from typing import Any

from gpu_platform.offline.program import Plan
from tests.gpu_platform.kubernetes.node_validation.taint_invariants import carried_taints
from tests.gpu_platform.kubernetes.node_validation.test_admission_policy import evaluate

NAME = "gpu-platform-pods-off-unvalidated-nodes"
POLICY = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
RELEASE = "kubernetes:helm.sh/v3:Release"
POD_SPEC_PATHS = {
    "Pod": ("spec",),
    "Deployment": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}


def denied(spec: Mapping[str, Any], pod: Any, old: Any = None) -> list[str]:
    """The messages of the validations of the policy `spec` that deny creating `pod` (updating
    `old` to it where given); [] if admitted. As the API server does, a request its match
    conditions do not all match is admitted without evaluating anything else
    (k8s.io/apiserver v0.35.0 pkg/admission/plugin/policy/validating/validator.go, `Validate`)."""
    request = {"operation": "CREATE" if old is None else "UPDATE"}
    activation: dict[str, Any] = {
        "object": pod,
        "oldObject": old,
        "request": request,
        "variables": {},
    }
    if not all(evaluate(c["expression"], activation) for c in spec.get("matchConditions", [])):
        return []
    for variable in spec.get("variables", []):
        activation["variables"][variable["name"]] = evaluate(variable["expression"], activation)
    return [v["message"] for v in spec["validations"] if not evaluate(v["expression"], activation)]


def selected(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """A label selector's matchExpressions as the API server applies them to a namespace's
    labels (k8s.io/apimachinery pkg/labels/selector.go: `NotIn` holds where the label is
    absent)."""
    for e in selector["matchExpressions"]:
        assert e["operator"] == "NotIn"
        if labels.get(e["key"]) in e["values"]:
            return False
    return True


def _judged(selector: Mapping[str, Any], namespace: str) -> bool:
    # The API server labels every namespace with its name (NamespaceDefaultLabelName).
    return selected(selector, {"kubernetes.io/metadata.name": namespace})


def pod_policy_problems(plan: Plan, config: Mapping[str, Any]) -> list[str]:
    policies = [r for r in plan.of_type(POLICY) if r.inputs["metadata"]["name"] == NAME]
    if not policies:
        validates = any(carried for _, _, carried in carried_taints(plan))
        return (
            ["a pool validates its nodes, and no policy keeps other pods off"] if validates else []
        )
    spec = policies[0].inputs["spec"]
    selector = spec["matchConstraints"]["namespaceSelector"]
    problems = []
    for r in plan.resources:
        kind = r.type.rsplit(":", 1)[-1]
        if r.type.startswith("kubernetes:") and kind in POD_SPEC_PATHS:
            namespace = r.inputs["metadata"]["namespace"]
            if not _judged(selector, namespace):
                continue
            pod_spec: Any = r.inputs
            for part in POD_SPEC_PATHS[kind]:
                pod_spec = pod_spec[part]
            for message in denied(spec, {"spec": pod_spec}):
                problems.append(f"{kind} {namespace}/{r.inputs['metadata']['name']}: {message}")
        elif r.type == RELEASE and _judged(selector, r.inputs["namespace"]):
            problems.append(f"Helm release {r.name} in {r.inputs['namespace']}, which is judged")
    return problems
