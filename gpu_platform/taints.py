"""A Kubernetes taint as the platform declares it, and the cluster autoscaler's name for the taints
a node joins with and loses once it is ready.

Apart from the node identity (`gpu_platform.node_identity`), which decides each pool's taints, so
that the names of a taint the platform removes from its nodes itself (node validation's) can be
declared beside what removes it.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# The cluster autoscaler leaves a taint of this prefix out of every template node it plans a
# scale-up with (`SanitizeTaints`), and holds a node carrying one as not ready yet, a node still
# starting, rather than as a node the pods it was added for cannot use
# (`FilterOutNodesWithStartupTaints`): kubernetes/autoscaler cluster-autoscaler-1.35.2,
# cluster-autoscaler/utils/taints/taints.go, `StartupTaintPrefix`.
STARTUP_TAINT_PREFIX = "startup-taint.cluster-autoscaler.kubernetes.io/"


@dataclass(frozen=True)
class Taint:
    """A Kubernetes taint, spelled as Kubernetes spells it (`NoSchedule`)."""

    key: str
    value: str
    effect: str


# Kubernetes spells taint effects `NoSchedule`; the EKS and GKE APIs both spell them `NO_SCHEDULE`.
CLOUD_TAINT_EFFECTS: Mapping[str, str] = {
    "NoSchedule": "NO_SCHEDULE",
    "PreferNoSchedule": "PREFER_NO_SCHEDULE",
    "NoExecute": "NO_EXECUTE",
}


def tolerates(toleration: Mapping[str, Any], taint: Taint) -> bool:
    """Whether `toleration` tolerates `taint`, as k8s.io/api core/v1 toleration.go
    (`ToleratesTaint`) decides: an empty effect matches every effect, an empty key with `Exists`
    every taint."""
    if toleration.get("effect") and toleration["effect"] != taint.effect:
        return False
    key = toleration.get("key", "")
    if toleration.get("operator", "Equal") == "Exists":
        return key in ("", taint.key)
    return key == taint.key and toleration.get("value", "") == taint.value
