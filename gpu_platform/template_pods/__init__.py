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

The autoscaler's kube-proxy pod is a mirror pod, owned by no DaemonSet, so `podsExpectedOnFresh
Node` marks no DaemonSet as running and adds the cluster's own kube-proxy DaemonSet's pod beside
it: on EKS both are counted.

`daemonset-pods.json` holds the pods of the charts and manifests the platform installs, and of
the EKS add-ons' DaemonSets, derived from their pinned versions by `derive.py`.
"""

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpu_platform.eks.new_cluster.addon_pins import addon_versions
from gpu_platform.versions import (
    EFA_DEVICE_PLUGIN_CHART,
    EKS_NODE_MONITORING_AGENT_ADDON_VERSION,
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


EKS_KUBE_PROXY = TemplatePod(
    "kube-proxy (EKS add-on)",
    {
        "containers": [{"name": "kube-proxy", "resources": {"requests": {"cpu": "100m"}}}],
        "tolerations": [{"operator": "Exists"}],
    },
)
"""The DaemonSet of EKS's kube-proxy add-on, which EKS does not publish: 100m CPU, as the add-on
renders it in a cluster, tolerating every taint."""

EKS_POD_IDENTITY_AGENT = TemplatePod(
    "eks-pod-identity-agent",
    {"containers": [{"name": "eks-pod-identity-agent"}], "tolerations": [{"operator": "Exists"}]},
)
"""The Pod Identity agent's DaemonSet: it requests nothing and tolerates every taint (aws/eks-pod-
identity-agent charts/eks-pod-identity-agent/values.yaml, `resources: {}` and `tolerations`, read
at chart 1.2.0, commit d4dc0f3; the repository tags no release of the add-on's v1.3.8). It takes
one of a node's pods."""

NODE_MONITORING_AGENT = "eks-node-monitoring-agent"
NFD_WORKER_KEY = f"node-feature-discovery-{GPU_OPERATOR_NFD_SUBCHART.version}/worker"
EFA_DEVICE_PLUGIN_KEY = f"{EFA_DEVICE_PLUGIN_CHART.name}-{EFA_DEVICE_PLUGIN_CHART.version}"
"""The keys of the pinned charts' pods in daemonset-pods.json, which derive.py writes."""
# What each EKS add-on runs on every node, by the name of its derived DaemonSet, and the section
# of the add-on's configuration values (its chart's values) that sets where that DaemonSet runs.
_ADDON_DAEMONSETS: Mapping[str, tuple[tuple[str, str | None], ...]] = {
    "vpc-cni": (("aws-node", None),),
    "aws-ebs-csi-driver": (("ebs-csi-node", "node"),),
    NODE_MONITORING_AGENT: (("agent", "nodeAgent"), ("dcgm-server", "dcgmAgent")),
}


def addon_release(version: str) -> str:
    """The upstream release of an EKS add-on version (`v1.21.1-eksbuild.8`: `v1.21.1`)."""
    return version.partition("-eksbuild")[0]


def addon_key(addon: str, release: str, daemonset: str) -> str:
    """Where `daemonset-pods.json` keeps an add-on DaemonSet's pod."""
    return f"{addon}-{release}/{daemonset}"


def pinned_addon_release(addon: str) -> str:
    """The release the platform pins an add-on to, for every Kubernetes minor it supports."""
    if addon == NODE_MONITORING_AGENT:
        return addon_release(EKS_NODE_MONITORING_AGENT_ADDON_VERSION)
    (release,) = {addon_release(pins[addon]) for pins in addon_versions().values()}
    return release


def eks_addon_pods(
    addon: str, version: str, configuration: Mapping[str, Any]
) -> list[TemplatePod] | None:
    """The pods an EKS add-on at `version` runs on every node it reaches, with the add-on's
    `configuration` values setting where they run as a chart's values would; none for an add-on
    that runs no DaemonSet (coredns); None where no pod of that release is derived."""
    if addon == "kube-proxy":
        return [EKS_KUBE_PROXY]
    if addon == "eks-pod-identity-agent":
        return [EKS_POD_IDENTITY_AGENT]
    release = addon_release(version)
    daemonsets = _ADDON_DAEMONSETS.get(addon, ())
    if any(addon_key(addon, release, name) not in _DERIVED for name, _ in daemonsets):
        return None
    return [
        _chart_pod(
            f"{name} ({addon} {release})",
            addon_key(addon, release, name),
            configuration if section is None else configuration.get(section) or {},
        )
        for name, section in daemonsets
    ]


def nfd_worker(scheduling: Mapping[str, Any]) -> TemplatePod:
    """node-feature-discovery's worker as the GPU Operator's release renders it, with the
    release's `node-feature-discovery.worker` tolerations and node selector."""
    return _chart_pod(
        "node-feature-discovery worker",
        NFD_WORKER_KEY,
        scheduling,
    )


def efa_device_plugin(scheduling: Mapping[str, Any]) -> TemplatePod:
    """The EFA device plugin as its release renders it, with the release's tolerations and
    node selector."""
    return _chart_pod(
        "EFA device plugin",
        EFA_DEVICE_PLUGIN_KEY,
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
