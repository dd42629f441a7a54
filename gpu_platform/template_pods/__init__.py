"""The pods the node provisioner counts on a node it has not started yet.

The cluster autoscaler's template node holds, before a pod is tried on it, the pods a new node
would run at once (`SanitizedTemplateNodeInfoFromNodeGroup`, simulator/node_info_utils.go,
cluster-autoscaler-1.35.2):

- the pods its cloud provider's `TemplateNodeInfo` puts there. The AWS provider adds a
  kube-proxy pod of 100m CPU (aws_cloud_provider.go, `BuildKubeProxy` in cloudprovider/utils.go),
  a mirror pod, which `podsExpectedOnFreshNode` keeps; so does the GCE provider
  (gce_cloud_provider.go), and most others;
- a pod of every DaemonSet that would run on the node (`podsExpectedOnFreshNode`,
  utils/daemonset `GetDaemonSetPodsForNode`: the DaemonSet controller's
  `NodeShouldRunDaemonPod`, its node selector, node affinity and tolerations against the
  template's labels and sanitized taints).

Karpenter counts the DaemonSets' pods much the same way (kubernetes-sigs/karpenter v1.14.1,
scheduling/scheduler.go `isDaemonPodCompatible`: the NodePool's taints and requirements;
scheduling/nodeclaim.go `daemonOverheadGroups`, requests by `resources.RequestsForPods`) and adds
no kube-proxy of its own.

`daemonset-pods.json` holds the pods of the charts and manifests the platform installs, derived
from their pinned versions by `derive.py`.
"""

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpu_platform.versions import (
    EFA_DEVICE_PLUGIN_CHART,
    GKE_COS_DRIVER_INSTALLER_MANIFEST,
    GPU_OPERATOR_NFD_SUBCHART,
)

_DERIVED: dict[str, dict[str, Any]] = json.loads(
    Path(__file__).with_name("daemonset-pods.json").read_text()
)


@dataclass(frozen=True)
class TemplatePod:
    """A pod the provisioner places on a template node before judging another."""

    name: str
    spec: dict[str, Any]


KUBE_PROXY = TemplatePod(
    "kube-proxy (the autoscaler's own)",
    {"containers": [{"name": "kube-proxy", "resources": {"requests": {"cpu": "100m"}}}]},
)
"""`BuildKubeProxy`'s pod (cloudprovider/utils.go, cluster-autoscaler-1.35.2): one container
requesting `KubeProxyCpuRequestMillis`, 100m CPU, and nothing else."""


def nfd_worker(scheduling: Mapping[str, Any]) -> TemplatePod:
    """node-feature-discovery's worker as the GPU Operator's release renders it, with the
    release's `node-feature-discovery.worker` tolerations and node selector."""
    return _chart_pod(
        "node-feature-discovery worker",
        f"node-feature-discovery-{GPU_OPERATOR_NFD_SUBCHART.version}/worker",
        scheduling,
    )


def efa_device_plugin(scheduling: Mapping[str, Any]) -> TemplatePod:
    """The EFA device plugin as its release renders it, with the release's tolerations and
    node selector."""
    return _chart_pod(
        "EFA device plugin",
        f"{EFA_DEVICE_PLUGIN_CHART.name}-{EFA_DEVICE_PLUGIN_CHART.version}",
        scheduling,
    )


def cos_driver_installer() -> TemplatePod:
    """Google's COS driver installer, as its pinned manifest has it: two init containers of
    150m CPU each, run one after the other, so 150m (`PodRequests`)."""
    return TemplatePod("COS driver installer", _DERIVED[GKE_COS_DRIVER_INSTALLER_MANIFEST])


def _chart_pod(name: str, key: str, scheduling: Mapping[str, Any]) -> TemplatePod:
    # A release's values replace the chart's own for the keys they set (Helm's values merge).
    chosen: dict[str, Any] = {
        k: scheduling[k] for k in ("tolerations", "nodeSelector", "affinity") if k in scheduling
    }
    return TemplatePod(name, {**_DERIVED[key], **chosen})
