"""How every Helm release the platform installs is rolled out, in one place: each rolls a failed
install or upgrade back by itself, after a wait sized for what it installs, and keeps a bounded
history.

What the settings do (pulumi-kubernetes v4.34, provider/pkg/provider/helm_release.go, on Helm
v3's pkg/action):
- `atomic`: a failed install is uninstalled and a failed upgrade rolled back to the last good
  revision, rather than left `failed`, which the next `pulumi up` could not upgrade until someone
  ran `helm rollback`. It implies waiting (Helm's upgrade.go: `u.Wait = u.Wait || u.Atomic`; the
  SDK: "`skipAwait` will be disabled automatically if atomic is used").
- `cleanupOnFail`: what the failed upgrade created is deleted, not left beside the rolled-back
  release.
- `timeout`: how long Helm waits for the release's own objects to be ready before it calls the
  release failed: every Deployment's pods, every DaemonSet's pod on every node it selects (one
  node after another under a rolling update: pkg/kube/ready.go, `daemonSetReady`), CRDs
  established, hook Jobs done. A rollback waits as long again. The provider's default is 300 s.
- `maxHistory`: the revisions kept, each a Secret in the release's namespace. Unset, the
  provider passes 0, no limit (`helmUpdate`), where the helm CLI keeps 10 (`--history-max`).

Objects an operator creates (the GPU Operator's driver and device plugin DaemonSets, the
Prometheus Operator's Prometheus) are not the release's own: Helm does not wait for them.
"""

from dataclasses import dataclass
from typing import Any

RELEASE_HISTORY = 10
"""Revisions kept for `helm rollback`: the helm CLI's own default (`--history-max`)."""


@dataclass(frozen=True)
class Rollout:
    """How long Helm may take to install or upgrade a release before rolling it back."""

    timeout_seconds: int

    def release_args(self) -> dict[str, Any]:
        """The `helm.v3.Release` arguments that make a failed install or upgrade undo itself."""
        return {
            "atomic": True,
            "cleanup_on_fail": True,
            "timeout": self.timeout_seconds,
            "max_history": RELEASE_HISTORY,
        }


# The GPU Operator's wait is the stack's `operator.timeoutSeconds` (900 s by default): its
# node-feature-discovery worker DaemonSet rolls over every node of the cluster, GPU or not, and
# its CRD upgrade hook Job runs first.

CLUSTER_AUTOSCALER = Rollout(300)
"""One Deployment of one replica on the cluster's own nodes: an image pull and a start, with
room for the old autoscaler, still running, to add a node for it."""

EFA_DEVICE_PLUGIN = Rollout(600)
"""A DaemonSet on the EFA pools' nodes only: nothing to wait for while they are scaled to zero,
and a rolling update one node at a time, some 15 s each (a small image), once they run: room for
about 40 EFA nodes."""

KARPENTER_CRD = Rollout(120)
"""CRDs only (NodePool, NodeClaim, EC2NodeClass): the API server establishes them in seconds."""

KARPENTER = Rollout(300)
"""The controller's Deployment of two replicas (the chart's `replicas`), rolled one at a time
(`strategy.rollingUpdate.maxUnavailable: 1`) on the cluster's own nodes."""

KUBE_PROMETHEUS_STACK = Rollout(900)
"""The Prometheus Operator (after its admission webhook's certificate hook Jobs), Grafana,
kube-state-metrics, and node-exporter's DaemonSet, which rolls over every node of the cluster
one at a time: the largest wait the platform has, as it grows with the cluster."""
