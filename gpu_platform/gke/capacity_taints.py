"""The taints GKE puts on a node pool's nodes itself, by how the pool gets its capacity.

The platform declares its own taints on a pool (`node_identity`); these come on top, unasked.
Every DaemonSet the platform runs on GPU nodes, and every workload meant for the pool, must
tolerate them, or the nodes never become useful: DaemonSets tolerate only `node.kubernetes.io/*`
taints by themselves.

- Queued provisioning: GKE adds `cloud.google.com/gke-queued=true:NoSchedule` "to the node pool"
  (GKE's "Deploy GPUs for batch and AI workloads with Dynamic Workload Scheduler" page,
  provisioningrequest, which tells pods to tolerate it).
- Flex-start, Spot VMs and reservations: GKE labels such nodes (`cloud.google.com/gke-flex-start`,
  `cloud.google.com/gke-spot`) and taints them only where node auto-provisioning creates the pool
  (GKE's Spot VMs page), which the platform's pools are not.
"""

from gpu_platform.config import GpuPoolSpec
from gpu_platform.node_identity import Taint

GKE_QUEUED_TAINT = Taint("cloud.google.com/gke-queued", "true", "NoSchedule")
"""On every node of a queued-provisioning pool, so that only pods that tolerate it run there."""


def gke_added_taints(pool: GpuPoolSpec) -> tuple[Taint, ...]:
    """The taints GKE itself puts on the pool's nodes."""
    return (GKE_QUEUED_TAINT,) if pool.gcp.queued_provisioning else ()
