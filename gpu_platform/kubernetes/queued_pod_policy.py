"""The admission policy that keeps GPU pods Kueue does not manage out of the queued namespaces,
however they are deployed (kubectl, Helm, a GitOps controller): the pack's
`gpu-workloads-name-their-queue` judges only what `pulumi up` deploys.

Kueue counts the GPUs of the workloads it admits only: a GPU pod no queued job owns (a
Deployment's, a notebook's StatefulSet's, a bare Pod) takes GPUs of the namespace's
ResourceQuota that Kueue still lends to jobs, whose pods the quota then refuses in part.

The ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1) matches pod creations in the
namespaces labelled `gpu-platform.io/queue` (the queued tenants' only: the platform's own
namespaces never carry it), and of those only pods that request or limit an `nvidia.com/`
resource (`resource_clauses`, as the node validation's policy tells GPU pods). It refuses one
without the label `kueue.x-k8s.io/podset`, which Kueue writes into the pod template of every job
it admits, whatever the framework (`getPodSetsInfoFromStatus`,
pkg/controller/jobframework/reconciler.go at v0.19.2, merged into the template by each
framework's `RunWithPodSetsInfo`), so the pods of admitted jobs, the smoke tests' among them,
carry it. Anyone may write that label by hand: the policy catches accidents, not intent. Only
creations are judged: a pod that ran before the namespace was queued can still be updated and
deleted, and a Deployment's new pods are refused, which its ReplicaSet's events say.
"""

from typing import Any

from gpu_platform.kubernetes.node_validation.admission_policy import core_rules, denying
from gpu_platform.kubernetes.node_validation.pod_admission_policy import (
    over_containers,
    resource_clauses,
)
from gpu_platform.kubernetes.queue_labels import PODSET_LABEL

NAME = "gpu-platform-gpu-pods-through-kueue"

REASON = (
    " is queued: its GPU pods come from jobs Kueue admits, and Kueue does not count the GPUs"
    " of any other pod, so queued jobs would start in part. Submit a Job, JobSet, RayJob or"
    " PyTorchJob to the queue, or run GPU services and notebooks in a tenant namespace with"
    " queue.enabled false (docs/queues.md)."
)


def queued_pod_policy(namespace_label: str) -> list[dict[str, Any]]:
    """The ValidatingAdmissionPolicy and its binding (deny) for GPU pods of the namespaces
    labelled `namespace_label`."""
    return denying(
        NAME,
        {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "namespaceSelector": {
                    "matchExpressions": [{"key": namespace_label, "operator": "Exists"}]
                },
                "resourceRules": core_rules("pods", "CREATE"),
            },
            "matchConditions": [
                {
                    "name": "gpu-pod",
                    "expression": " || ".join(over_containers(resource_clauses)),
                }
            ],
            "validations": [
                {
                    "expression": "has(object.metadata.labels) &&"
                    f" '{PODSET_LABEL}' in object.metadata.labels",
                    "message": f"This namespace{REASON}",
                    "messageExpression": f"'Namespace ' + request.namespace + '{REASON}'",
                }
            ],
        },
    )
