"""What a plan warns of for validated GKE node pools: whether GKE's cluster autoscaler scales a
pool up from zero nodes for a pod that does not tolerate the validation taint is not confirmed.

The open-source cluster autoscaler drops every startup taint (a key beginning
`startup-taint.cluster-autoscaler.kubernetes.io/`, `StartupTaintPrefix` in
`utils/taints/taints.go`) from the template node it plans a scale-up with, for every cloud
provider: `SanitizedTemplateNodeInfoFromNodeGroup` (`simulator/node_info_utils.go`, which calls
`SanitizeTaints`) runs on whatever template a provider's node group returns, from
`core/scaleup/orchestrator/orchestrator.go` and `processors/nodeinfosprovider/
mixed_nodeinfos_processor.go`, outside `cloudprovider/` (kubernetes/autoscaler,
cluster-autoscaler-1.35.2). GKE runs Google's own build, whose source is not published, and no
page of Google's documentation we could read says that it does the same. A pool at zero is
planned from its template alone, where a taint the autoscaler kept would make every pending pod
not fit (docs/node-validation.md).
"""

from typing import Any

from gpu_platform.kubernetes.node_validation.names import VALIDATION_TAINT
from gpu_platform.offline.program import Plan

NODE_POOL = "gcp:container/nodePool:NodePool"


def _minimum(autoscaling: dict[str, Any]) -> int:
    return int(autoscaling.get("totalMinNodeCount") or autoscaling.get("minNodeCount") or 0)


def unconfirmed_gke_scale_up(plan: Plan) -> list[str]:
    """A warning for each GKE node pool the plan creates with the validation taint whose
    autoscaling may take it to zero nodes."""
    warnings = []
    for pool in plan.of_type(NODE_POOL):
        taints = (pool.inputs.get("nodeConfig") or {}).get("taints") or []
        autoscaling = pool.inputs.get("autoscaling")
        if not autoscaling or _minimum(autoscaling) > 0:
            continue
        if any(t.get("key") == VALIDATION_TAINT.key for t in taints):
            warnings.append(
                f"GKE node pool {pool.inputs.get('name') or pool.name} may scale to zero nodes"
                f" and carries the node validation taint {VALIDATION_TAINT.key}: no GKE"
                " documentation confirms that GKE's cluster autoscaler leaves such a startup"
                " taint out when it scales a pool up from zero, as the open-source one does. If"
                " it does not, the pool's pending pods never get a node. Check that the pool"
                " scales up from zero before relying on it, give it a minimum of at least 1, or"
                " set validation.enabled false on it (docs/node-validation.md)."
            )
    return warnings
