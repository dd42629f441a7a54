"""Does every GPU pool whose nodes prove themselves carry the validation taint, in the form its
provisioner reads, and no other pool?

`validation_taint_problems(plan, config)` reads each pool's planned node group (`taints`), GKE
node pool (`nodeConfig.taints`) or Karpenter NodePool (`startupTaints`, never `taints`: Karpenter
holds a NodePool's `taints` against every pod it starts a node for, kubernetes-sigs/karpenter
v1.14.1 pkg/controllers/provisioning/scheduling/nodeclaim.go `CanAdd`, and no pod tolerates this
one). The DaemonSets that must reach such a node are the toleration invariant's
(`daemonset_tolerations`), which reads the same taints.
"""

from collections.abc import Iterator, Mapping
from typing import Any

from gpu_platform.offline.program import Plan

KEY = "startup-taint.cluster-autoscaler.kubernetes.io/gpu-validation"
POOL_LABEL = "gpu-platform.io/pool"


def _keys(taints: Any) -> list[str]:
    return [t["key"] for t in taints or []]


def carried_taints(plan: Plan) -> Iterator[tuple[str, str, bool]]:
    """(pool, provisioner form, whether it carries the taint there, rightly placed)."""
    for r in plan.resources:
        if r.type == "aws:eks/nodeGroup:NodeGroup":
            pool = (r.inputs.get("labels") or {}).get(POOL_LABEL)
            if pool:
                yield pool, "node group taints", KEY in _keys(r.inputs.get("taints"))
        elif r.type == "gcp:container/nodePool:NodePool":
            node_config = r.inputs.get("nodeConfig") or {}
            pool = (node_config.get("labels") or {}).get(POOL_LABEL)
            if pool:
                yield pool, "node pool taints", KEY in _keys(node_config.get("taints"))
        elif r.type == "kubernetes:karpenter.sh/v1:NodePool":
            template = r.inputs["spec"]["template"]
            pool = ((template.get("metadata") or {}).get("labels") or {}).get(POOL_LABEL)
            if pool:
                spec = template["spec"]
                if KEY in _keys(spec.get("taints")):
                    yield pool, "NodePool taints (held against every pod)", False
                yield pool, "NodePool startupTaints", KEY in _keys(spec.get("startupTaints"))


def validation_taint_problems(plan: Plan, config: Mapping[str, Any]) -> list[str]:
    enabled = {
        pool["name"]: (pool.get("validation") or {}).get("enabled", True)
        for pool in config.get("gpu-platform:pools", [])
    }
    problems = []
    for pool, form, carried in carried_taints(plan):
        if form.startswith("NodePool taints"):
            problems.append(f"pool {pool}: the validation taint in its {form}")
        elif carried is not enabled.get(pool, carried):
            missing = "lacks" if enabled[pool] else "carries, with validation off,"
            problems.append(f"pool {pool}: its {form} {missing} the validation taint")
    return problems
