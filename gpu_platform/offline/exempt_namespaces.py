"""What a plan warns of where the policy pack and the cluster's admission policy disagree on the
namespaces whose pods may tolerate the node validation taint.

Two lists say it, each read by its own enforcer. The pack's `exemptNamespaces`, in the stack's
policy config, judges what `pulumi up` deploys; it is one setting with the Pod Security
policies', which read it as the namespaces whose pods may need host access. The in-cluster
ValidatingAdmissionPolicy `gpu-platform-pods-off-unvalidated-nodes` judges every GPU pod, and
leaves alone the namespaces the program derives from the stack config (`exempt_namespaces`) and
those labelled `gpu-platform.io/node-validation-exempt=true`. Neither can be the other's
source: the program never reads the policy config, and the pack's list grants Pod Security
exemptions that have nothing to do with the taint.

Most differences are harmless: a namespace exempt for host access whose pods do not tolerate the
taint; a platform namespace the pack still judges, where it refuses what it sees at preview.
One is not: a workload the stack deploys, into a namespace the pack exempts and the cluster
judges, whose pods tolerate the validation taint. The pack passes it, and if its pods get GPUs
the API server refuses them at `pulumi up`: a bare Pod fails the update, a controller's pods are
never created. Only a policy config that sets `exemptNamespaces` can differ so: the pack's
default lists the platform's default namespaces, which the cluster's policy leaves alone too.
"""

from collections.abc import Mapping
from typing import Any

from gpu_platform.kubernetes.node_validation.names import VALIDATION_TAINT
from gpu_platform.kubernetes.node_validation.pod_admission_policy import EXEMPT_LABEL, NAME
from gpu_platform.offline.program import Plan, PlannedResource
from gpu_platform.pod_specs import pod_spec_of
from gpu_platform.taints import tolerates

ADMISSION_POLICY = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
NAMESPACE = "kubernetes:core/v1:Namespace"
PACK_POLICY = "gpu-validation-taint-platform-only"
SETTING = "exemptNamespaces"
WORKLOAD_KINDS = ("Pod", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob")
# The label the API server gives every namespace, its name (NamespaceDefaultLabelName).
NAME_LABEL = "kubernetes.io/metadata.name"


def _pack_exempt(config: Mapping[str, Any] | None) -> list[str]:
    entry = (config or {}).get(PACK_POLICY)
    listed = entry.get(SETTING) if isinstance(entry, Mapping) else None
    return [n for n in listed if isinstance(n, str)] if isinstance(listed, list) else []


def _left_alone(policy: PlannedResource, plan: Plan) -> set[str]:
    """The namespaces the planned policy does not judge: those its selector names, and the
    Namespaces the plan labels exempt."""
    selector = policy.inputs["spec"]["matchConstraints"]["namespaceSelector"]
    named = {n for e in selector["matchExpressions"] if e["key"] == NAME_LABEL for n in e["values"]}
    for namespace in plan.of_type(NAMESPACE):
        metadata = namespace.inputs.get("metadata") or {}
        if (metadata.get("labels") or {}).get(EXEMPT_LABEL) == "true":
            named.add(metadata.get("name"))
    return named


def exemption_mismatches(plan: Plan, config: Mapping[str, Any] | None) -> list[str]:
    """A warning for each workload the plan deploys whose pods tolerate the validation taint, in
    a namespace the policy config's `exemptNamespaces` lists and the cluster's policy judges."""
    policies = [r for r in plan.of_type(ADMISSION_POLICY) if r.inputs["metadata"]["name"] == NAME]
    if not policies:
        return []
    judged = set(_pack_exempt(config)) - _left_alone(policies[0], plan)
    warnings = []
    for r in plan.resources:
        kind = r.type.rsplit(":", 1)[-1]
        metadata = r.inputs.get("metadata") or {}
        namespace = metadata.get("namespace") or "default"
        if not r.type.startswith("kubernetes:") or kind not in WORKLOAD_KINDS:
            continue
        if namespace not in judged:
            continue
        tolerations = pod_spec_of({"kind": kind, "spec": r.inputs.get("spec")}).get("tolerations")
        if any(tolerates(t, VALIDATION_TAINT) for t in tolerations or []):
            warnings.append(
                f"{kind} {namespace}/{metadata.get('name')} tolerates the node validation taint"
                f" {VALIDATION_TAINT.key}, which the policy config's {PACK_POLICY}.{SETTING}"
                f" allows in {namespace}, but the cluster's admission policy {NAME} judges"
                f" {namespace}: the API server refuses its pods if they get GPUs. Label the"
                f" Namespace {namespace} {EXEMPT_LABEL}=true, or remove {namespace} from"
                f" {SETTING} and the toleration from the workload (docs/node-validation.md)."
            )
    return warnings
