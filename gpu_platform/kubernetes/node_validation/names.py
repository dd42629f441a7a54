"""The names node validation shares: the taint a GPU node joins with until it has proven itself,
the labels its validator sets, and the service account that may set them.

The taint's key has the cluster autoscaler's startup-taint prefix (`StartupTaintPrefix`,
cluster-autoscaler utils/taints/taints.go; its FAQ "How can I scale a node group to 0?" and
"Startup taints"), so the autoscaler treats a node carrying it as one that is still starting,
not as a node that cannot take the pods it was scaled up for.
"""

from gpu_platform.kubernetes.node_validation.validate import CHECKS
from gpu_platform.taints import Taint

# 61 characters: EKS refuses a node group taint key over 63, prefix included (botocore `eks`
# 2017-11-01 service model, `taintKey`: "max": 63).
VALIDATION_TAINT = Taint(
    key="startup-taint.cluster-autoscaler.kubernetes.io/gpu-validation",
    value="pending",
    effect="NoSchedule",
)

LABEL_PREFIX = "gpu-platform.io/"
# 33 characters, within EKS's 63. Not a startup taint, nor in any NodePool's `startupTaints`:
# Karpenter leaves a node's startup taints out when it decides whether a pending pod fits a node
# that is not initialized yet (`StateNode.Taints`, pkg/controllers/state/statenode.go), and a
# failed node never is, so it would keep counting the failed node as room for the pool's pods.
# A taint it does not know of it holds against them (`ExistingNode.CanAdd`, pkg/controllers/
# provisioning/scheduling/existingnode.go; kubernetes-sigs/karpenter v1.14.1), and starts
# another node for them.
FAILED_TAINT_KEY = f"{LABEL_PREFIX}validation-failed"
"""A lasting taint, its value the failed check, on a node that failed and is not replaced."""
RESULT_LABEL = f"{LABEL_PREFIX}validation"
"""`passed`, `failed`, or `exempt` on a node that had no validation taint when its validation
pod started (a node that joined before its pool was validated): nothing was checked there, since
the checks would run beside the work it already carries."""
EXEMPT = "exempt"
FAILED_CHECK_LABEL = f"{LABEL_PREFIX}validation-failed-check"
"""The first check that failed (`gpu-count`, `ecc`, ...), on a node that failed."""
VALIDATED_DRIVER_LABEL = f"{LABEL_PREFIX}validated-driver"
"""The NVIDIA driver version the node passed with."""
VALIDATED_RELEASE_LABEL = f"{LABEL_PREFIX}validated-release"
"""The node image the node passed with: the AMI id or GKE node version."""
CHECK_LABEL_PREFIX = f"{LABEL_PREFIX}validation-check."
CHECK_LABELS = tuple(f"{CHECK_LABEL_PREFIX}{check}" for check in CHECKS)
"""`passed` or `failed`: each check's result on a node it ran on at its last validation, which
kube-state-metrics exports for the per-check alert and dashboard (a one-shot pod has no
endpoint to scrape once it is gone, and a Node's labels outlive it)."""
REVALIDATING_LABEL = f"{LABEL_PREFIX}revalidating"
"""`true` on a node that passed (or was exempt) and is validated again after the GPU Operator
upgraded its driver in place (GKE Ubuntu), from the moment its taint is put back until its result
is recorded. It is on the Node, not in the validation pod, because the pod may restart or be
recreated while it waits for the new driver (an API error, a reboot, a new pod template) and must
still know that it validates again: a new node can show the operator's upgrade states too (one
whose driver pod falls out of sync with its DaemonSet goes to `upgrade-required`,
k8s-operator-libs pkg/upgrade/common_manager.go `ProcessDoneOrUnknownNodes`, vendored in
gpu-operator v26.7.0), so the states alone do not tell. A label, not another value of the
taint: the GPU Operator's operands tolerate the taint by its value, and the driver pod the
upgrade restarts must still start on the node."""
VALIDATION_LABELS = (
    RESULT_LABEL,
    FAILED_CHECK_LABEL,
    VALIDATED_DRIVER_LABEL,
    VALIDATED_RELEASE_LABEL,
    *CHECK_LABELS,
    REVALIDATING_LABEL,
)
"""Every label the validator may set, change or remove, and no other."""

VALIDATOR_SERVICE_ACCOUNT = "gpu-node-validator"
