"""All-or-nothing scale-up through Kueue: a job queued for an atomic pool is admitted only once
a ProvisioningRequest has brought up the nodes of all its pods together.

A pool scales up atomically where its nodes come from a ProvisioningRequest: on GKE a
`gcp.queuedProvisioning` pool (GKE's class `queued-provisioning.gke.io`, which alone starts its
nodes), on EKS an `aws.atomicScaleUp` pool under the cluster autoscaler (its class
`best-effort-atomic-scale-up.autoscaling.x-k8s.io`, served with `--enable-provisioning-requests`).
For each class the stack has pools of, Kueue gets a ProvisioningRequestConfig and an
AdmissionCheck of its provisioning controller (`kueue.x-k8s.io/provisioning-request`,
`ProvisioningRequestControllerName`, apis/kueue/v1beta2/provisioningrequestconfig_types.go at
v0.19.2), and each tenant's ClusterQueue holds that check on the flavors of those pools alone
(`admissionChecksStrategy.admissionChecks[].onFlavors`): a job admitted on another pool starts as
its pods are scheduled, as before.

Kueue sets its provisioning controller up only where the API server serves
`autoscaling.x-k8s.io/v1` ProvisioningRequests when the manager starts
(`ServerSupportsProvisioningRequest`, pkg/controller/admissionchecks/provisioning/indexer.go, and
cmd/kueue/main.go at v0.19.2, which otherwise logs "Skipping provisioning controller setup"):
GKE serves it; on EKS the platform installs the cluster autoscaler's CRD before Kueue
(`gpu_platform.kubernetes.provisioning_requests`), and the manager's pods carry an annotation
that changes with whether any pool scales up atomically, so that the `up` adding the first such
pool to a running Kueue restarts it (`kueue.provisioning_request_annotation`). Kueue v0.19.2
has no feature gate for the controller (pkg/features/kube_features.go at v0.19.2 names none).
"""

from collections.abc import Callable, Sequence
from typing import Any

from gpu_platform.kubernetes.gpu_pod import gpu_resource
from gpu_platform.node_identity import ResolvedPool

GKE_QUEUED_PROVISIONING = "queued-provisioning.gke.io"
"""GKE's class for a queued-provisioning pool (GKE's "Deploy GPUs for batch and AI workloads
with ProvisioningRequest")."""
BEST_EFFORT_ATOMIC = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
"""The cluster autoscaler's class that scales up all of a request's nodes or none
(`ProvisioningClassBestEffortAtomicScaleUp`, in cluster-autoscaler/apis/provisioningrequest/
autoscaling.x-k8s.io/v1/types.go at cluster-autoscaler-1.33.6 to 1.36.1)."""
PROVISIONING_CONTROLLER = "kueue.x-k8s.io/provisioning-request"
"""The AdmissionCheck controller of Kueue's ProvisioningRequests."""
KUEUE_API = "kueue.x-k8s.io/v1beta2"

_CHECK_NAMES = {GKE_QUEUED_PROVISIONING: "gke-queued", BEST_EFFORT_ATOMIC: "atomic-scale-up"}


def provisioning_class(pool: ResolvedPool) -> str | None:
    """The ProvisioningRequest class that brings up the pool's nodes, or None where pending pods
    do (no ProvisioningRequest)."""
    # Each cloud's settings are refused on the other's stacks (`gcp`, `aws`).
    if pool.spec.gcp.queued_provisioning:
        return GKE_QUEUED_PROVISIONING
    if pool.spec.aws.atomic_scale_up:
        return BEST_EFFORT_ATOMIC
    return None


def check_name(provisioning_class_name: str) -> str:
    """The AdmissionCheck, and its ProvisioningRequestConfig, of a class."""
    return _CHECK_NAMES[provisioning_class_name]


def provisioning_request_config(
    provisioning_class_name: str, pools: Sequence[ResolvedPool]
) -> dict[str, Any]:
    """The ProvisioningRequestConfig by which Kueue asks, in one request of
    `provisioning_class_name`, for the nodes of a workload's pod sets that ask for the GPU
    resources of the class's pools (`managedResources`: unset, every pod set would be in the
    request, a CPU launcher's too, which no GPU pool's nodes are for;
    apis/kueue/v1beta2/provisioningrequestconfig_types.go at v0.19.2)."""
    resources = sorted(
        {gpu_resource(p) for p in pools if provisioning_class(p) == provisioning_class_name}
    )
    return {
        "apiVersion": KUEUE_API,
        "kind": "ProvisioningRequestConfig",
        "metadata": {"name": check_name(provisioning_class_name)},
        "spec": {"provisioningClassName": provisioning_class_name, "managedResources": resources},
    }


def admission_check(provisioning_class_name: str) -> dict[str, Any]:
    """The AdmissionCheck of Kueue's provisioning controller, with the class's config."""
    name = check_name(provisioning_class_name)
    return {
        "apiVersion": KUEUE_API,
        "kind": "AdmissionCheck",
        "metadata": {"name": name},
        "spec": {
            "controllerName": PROVISIONING_CONTROLLER,
            "parameters": {
                "apiGroup": "kueue.x-k8s.io",
                "kind": "ProvisioningRequestConfig",
                "name": name,
            },
        },
    }


def atomic_classes(pools: Sequence[ResolvedPool]) -> list[str]:
    """The classes the stack's pools scale up by, each once, in the pools' order."""
    return list(dict.fromkeys(c for pool in pools if (c := provisioning_class(pool))))


def admission_checks_strategy(
    pools: Sequence[ResolvedPool], flavor_name: Callable[[ResolvedPool], str]
) -> dict[str, Any] | None:
    """A ClusterQueue's `admissionChecksStrategy`: each class's check on the flavors (named by
    `flavor_name`) of its pools only; None where no pool scales up atomically."""
    checks = [
        {
            "name": check_name(cls),
            "onFlavors": [flavor_name(p) for p in pools if provisioning_class(p) == cls],
        }
        for cls in atomic_classes(pools)
    ]
    return {"admissionChecks": checks} if checks else None
