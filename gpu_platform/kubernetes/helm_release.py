"""How every Helm release the platform installs is rolled out, in one place: each rolls a failed
install or upgrade back by itself, after a wait sized for what it installs, and keeps a bounded
history.

What the settings do (pulumi-kubernetes v4.34, provider/pkg/provider/helm_release.go, on Helm
v3's pkg/action):
- `atomic`: a failed install is uninstalled, and a failed upgrade rolled back to the last
  revision that was deployed, so that the cluster runs what worked rather than a half-applied
  upgrade. It implies waiting (Helm's upgrade.go: `u.Wait = u.Wait || u.Atomic`; the SDK:
  "`skipAwait` will be disabled automatically if atomic is used"). Without it a failed release
  does not block the next `pulumi up`: Helm upgrades over a `failed` last revision (upgrade.go,
  prepareUpgrade). What blocks is a `pending-install`, `pending-upgrade` or `pending-rollback`
  one ("another operation (install/upgrade/rollback) is in progress"), which an update killed
  outright in the middle of an upgrade leaves; `helm history` shows it and the last `deployed`
  revision, and `helm rollback <release> <revision>` clears it. An update cancelled gracefully
  cancels the provider's context, which fails the upgrade and runs the atomic rollback
  (pulumi-kubernetes helm_release.go: `RunWithContext` on the provider's cancel context;
  upgrade.go, handleContext).
- `cleanupOnFail`: what the failed upgrade created is deleted, not left beside the rolled-back
  release.
- `timeout`: how long Helm waits for the release's own objects to be ready before it calls the
  release failed: every Deployment's pods, every DaemonSet's pods on the nodes it selects, CRDs
  established, hook Jobs done (each hook may take as long again). A rollback waits as long
  again, with the same readiness test (upgrade.go, failRelease: `rollin.Wait = true`,
  `rollin.Timeout = u.Timeout`). The provider's default is 300 s.
- `maxHistory`: the revisions kept, each a Secret in the release's namespace. Unset, the
  provider passes 0, no limit (`helmUpdate`), where the helm CLI keeps 10 (`--history-max`).

Objects an operator creates (the GPU Operator's driver and device plugin DaemonSets, the
Prometheus Operator's Prometheus) are not the release's own: Helm does not wait for them.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from gpu_platform.config import GpuPoolSpec

RELEASE_HISTORY = 10
"""Revisions kept for `helm rollback`: the helm CLI's own default (`--history-max`)."""

DAEMONSET_MAX_UNAVAILABLE = "25%"
"""How many of a node agent DaemonSet's nodes (the EFA device plugin, node-exporter,
node-feature-discovery's worker, the DRA driver's kubelet plugin) are updated at once, and how many
may be unready when Helm calls it ready. Helm v3's pkg/kube/ready.go (`daemonSetReady`) wants the
new pod scheduled on every node (`UpdatedNumberScheduled == DesiredNumberScheduled`) and ready on
all but `maxUnavailable` of them, scaled from a percentage rounding up. At the charts' and
Kubernetes' default of 1, one node that is NotReady, or slow to pull the image, holds the release
until the timeout, the atomic rollback after it too, and a large pool rolls one node after another;
at 25 % a rollout takes about four waves whatever the number of nodes, and a quarter of them may
lag. The agents hold no state a restart loses: node-exporter's series resume, node labels stay, and
a device plugin re-registers its devices with the kubelet, running pods keeping theirs."""

MAX_TIMEOUT_SECONDS = 3600
"""The longest wait given to any release: a broken one is only rolled back once it has passed,
and the rollback may wait as long again."""
SECONDS_PER_NODE = 5
"""What each node a release's DaemonSet can run on adds to its wait: waves of a quarter of the
nodes still grow with them, in image pulls from one registry at once, pods the DaemonSet
controller creates a batch at a time, and the slowest node of each wave to wait for."""


def daemonset_update_strategy() -> dict[str, Any]:
    """A node agent DaemonSet's `updateStrategy` values, merged over its chart's: a rolling
    update (the charts' type, and Kubernetes' default) of `DAEMONSET_MAX_UNAVAILABLE` of its
    nodes at a time."""
    return {"rollingUpdate": {"maxUnavailable": DAEMONSET_MAX_UNAVAILABLE}}


def most_nodes(pools: Iterable[GpuPoolSpec]) -> int:
    """The most nodes the pools can have together: each at its `max`."""
    return sum(pool.max for pool in pools)


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

    @classmethod
    def with_daemonset(cls, base_seconds: int, nodes: int) -> "Rollout":
        """A release with a DaemonSet on up to `nodes` nodes: `base_seconds` for the rest of
        it and four waves of the DaemonSet, `SECONDS_PER_NODE` more for each node, at most
        `MAX_TIMEOUT_SECONDS`."""
        return cls(min(MAX_TIMEOUT_SECONDS, base_seconds + SECONDS_PER_NODE * nodes))


CLUSTER_AUTOSCALER = Rollout(300)
"""One Deployment of one replica on the cluster's own nodes: an image pull and a start, with
room for the old autoscaler, still running, to add a node for it."""

EFA_DEVICE_PLUGIN_BASE_SECONDS = 300
"""The EFA device plugin's DaemonSet, on the EFA pools' nodes only (nothing to wait for while
they are at zero), before what each node adds: four waves of a small image's pull and start."""

DRA_DRIVER_BASE_SECONDS = 300
"""NVIDIA's DRA driver: its DeviceClasses and its kubelet plugin's DaemonSet on the DRA pools'
nodes only, before what each node adds: four waves of one image's pull and start."""

KARPENTER_CRD = Rollout(120)
"""CRDs only (NodePool, NodeClaim, EC2NodeClass): the API server establishes them in seconds."""

KARPENTER = Rollout(300)
"""The controller's Deployment of two replicas (the chart's `replicas`), rolled one at a time
(`strategy.rollingUpdate.maxUnavailable: 1`) on the cluster's own nodes."""

KUEUE = Rollout(300)
"""Kueue's CRDs and its manager's Deployment of one replica (the chart's `replicas`), ready
once its webhook server serves with its own certificates."""

KUBE_PROMETHEUS_STACK_BASE_SECONDS = 900
"""kube-prometheus-stack before what each GPU node adds: the Prometheus Operator after its
admission webhook's certificate hook Jobs, Grafana, kube-state-metrics, and node-exporter's
DaemonSet in four waves over every node of the cluster. The GPU pools' nodes are counted; the
cluster's others are not known to the stack, and this base allows for them."""

GPU_OPERATOR_BASE_SECONDS = 900
"""The GPU Operator where `operator.timeoutSeconds` is unset, before what each GPU node adds:
its CRD upgrade hook Job, the operator's and node-feature-discovery's Deployments, and
node-feature-discovery's worker DaemonSet in four waves over every node of the cluster, GPU or
not (the GPU pools' nodes are counted, the others allowed for here). The operator's own
DaemonSets (driver, toolkit, device plugin) are not the release's: Helm does not wait for
them."""
