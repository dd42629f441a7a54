"""The pods the provisioner places on a template node first: the DaemonSets' pods derived from
the platform's pinned charts and manifests, and the script that derives them."""

import json
from decimal import Decimal
from pathlib import Path

import pytest

from gpu_platform.eks.new_cluster.addon_pins import addon_versions
from gpu_platform.fit import pod_requests
from gpu_platform.template_pods import (
    EKS_KUBE_PROXY,
    EKS_POD_IDENTITY_AGENT,
    KUBE_PROXY,
    TemplatePod,
    cos_driver_installer,
    derive,
    efa_device_plugin,
    eks_addon_pods,
    nfd_worker,
)
from gpu_platform.versions import EKS_NODE_MONITORING_AGENT_ADDON_VERSION

GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def _addon_pod(addon: str, version: str, index: int = 0) -> TemplatePod:
    pods = eks_addon_pods(addon, version, {})
    assert pods is not None
    return pods[index]


@pytest.mark.parametrize(
    ("pod", "requests"),
    [
        # cloudprovider/utils.go BuildKubeProxy, cluster-autoscaler-1.35.2:
        # KubeProxyCpuRequestMillis.
        (KUBE_PROXY, {"cpu": Decimal("0.1")}),
        # kubernetes-sigs/node-feature-discovery v0.19.0
        # deployment/helm/node-feature-discovery/values.yaml, `worker.resources.requests`.
        (nfd_worker({}), {"cpu": Decimal("0.005"), "memory": Decimal(64 * 2**20)}),
        # aws/eks-charts stable/aws-efa-k8s-device-plugin/values.yaml at chart v0.5.30.
        (efa_device_plugin({}), {"cpu": Decimal("0.01"), "memory": Decimal(20 * 2**20)}),
        # GoogleCloudPlatform/container-engine-accelerators f2cf4197
        # nvidia-driver-installer/cos/daemonset-preloaded.yaml: init containers
        # nvidia-driver-installer and partition-gpus of 150m each, one after the other, and a
        # pause container asking for nothing.
        (cos_driver_installer(), {"cpu": Decimal("0.15")}),
        # aws/amazon-vpc-cni-k8s v1.21.1 config/master/aws-k8s-cni.yaml: aws-node and
        # aws-eks-nodeagent 25m each; the aws-vpc-cni-init container's 25m runs before them.
        (_addon_pod("vpc-cni", "v1.21.1-eksbuild.8"), {"cpu": Decimal("0.05")}),
        # kubernetes-sigs/aws-ebs-csi-driver v1.48.0 deploy/kubernetes/base/node.yaml:
        # ebs-plugin, node-driver-registrar and liveness-probe, 10m and 40Mi each.
        (
            _addon_pod("aws-ebs-csi-driver", "v1.48.0-eksbuild.2"),
            {"cpu": Decimal("0.03"), "memory": Decimal(120 * 2**20)},
        ),
        # aws/eks-node-monitoring-agent v1.7.0 charts/eks-node-monitoring-agent/values.yaml:
        # nodeAgent.resources.requests; dcgmAgent.resources is {}.
        (
            _addon_pod("eks-node-monitoring-agent", "v1.7.0-eksbuild.1"),
            {"cpu": Decimal("0.01"), "memory": Decimal(30 * 2**20)},
        ),
        (_addon_pod("eks-node-monitoring-agent", "v1.7.0-eksbuild.1", 1), {}),
        (EKS_KUBE_PROXY, {"cpu": Decimal("0.1")}),
        # aws/eks-pod-identity-agent charts/eks-pod-identity-agent/values.yaml (chart 1.2.0):
        # `resources: {}`.
        (EKS_POD_IDENTITY_AGENT, {}),
    ],
    ids=[
        "kube-proxy",
        "nfd-worker",
        "efa-device-plugin",
        "cos-driver-installer",
        "aws-node",
        "ebs-csi-node",
        "node-monitoring-agent",
        "dcgm-server",
        "eks-kube-proxy",
        "pod-identity-agent",
    ],
)
def test_each_pod_requests_what_its_pinned_source_says(
    pod: TemplatePod, requests: dict[str, Decimal]
) -> None:
    assert pod_requests(pod.spec) == requests


def test_the_cos_driver_installer_runs_where_its_manifest_says() -> None:
    spec = cos_driver_installer().spec
    (term,) = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]

    assert spec["tolerations"] == [{"operator": "Exists"}]
    assert term["matchExpressions"][0] == {
        "key": "cloud.google.com/gke-accelerator",
        "operator": "Exists",
    }


def test_a_releases_values_set_where_a_chart_pod_runs() -> None:
    pod = efa_device_plugin(
        {"tolerations": [GPU_TOLERATION], "nodeSelector": {"gpu-platform.io/efa": "true"}}
    )

    assert pod.spec["tolerations"] == [GPU_TOLERATION]
    assert pod.spec["nodeSelector"] == {"gpu-platform.io/efa": "true"}


NFD_VALUES = """
master: {resources: {requests: {cpu: 100m}}}
worker:
  tolerations: []
  resources: {limits: {memory: 512Mi}, requests: {cpu: 5m, memory: 64Mi}}
"""
EFA_VALUES = """
resources: {requests: {cpu: 10m, memory: 20Mi}}
nodeSelector: {}
tolerations: [{key: CriticalAddonsOnly, operator: Exists}]
"""
COS_MANIFEST = """
apiVersion: v1
kind: Namespace
metadata: {name: x}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: installer}
spec:
  template:
    spec:
      priorityClassName: system-node-critical
      tolerations: [{operator: Exists}]
      initContainers:
      - {name: install, image: i, resources: {requests: {cpu: 150m}}, env: []}
      containers:
      - {name: pause, image: p}
"""
VPC_CNI_MANIFEST = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: aws-node}
spec:
  template:
    spec:
      tolerations: [{operator: Exists}]
      initContainers: [{name: aws-vpc-cni-init, resources: {requests: {cpu: 25m}}}]
      containers:
      - {name: aws-node, resources: {requests: {cpu: 25m}}}
      - {name: aws-eks-nodeagent, resources: {requests: {cpu: 25m}}}
"""
EBS_CSI_MANIFEST = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: ebs-csi-node}
spec:
  template:
    spec:
      nodeSelector: {kubernetes.io/os: linux}
      containers: [{name: ebs-plugin, resources: {requests: {cpu: 10m, memory: 40Mi}}}]
"""
NODE_MONITORING_VALUES = """
nodeAgent: {resources: {requests: {cpu: 10m, memory: 30Mi}}, tolerations: [{operator: Exists}]}
dcgmAgent: {resources: {}, tolerations: []}
"""
SOURCES = (
    NFD_VALUES,
    EFA_VALUES,
    COS_MANIFEST,
    VPC_CNI_MANIFEST,
    EBS_CSI_MANIFEST,
    NODE_MONITORING_VALUES,
)


def test_derive_keeps_each_pods_requests_and_scheduling() -> None:
    pods = derive.derive(*SOURCES)

    assert pods["vpc-cni-v1.21.1/aws-node"] == {
        "initContainers": [{"name": "aws-vpc-cni-init", "resources": {"requests": {"cpu": "25m"}}}],
        "containers": [
            {"name": "aws-node", "resources": {"requests": {"cpu": "25m"}}},
            {"name": "aws-eks-nodeagent", "resources": {"requests": {"cpu": "25m"}}},
        ],
        "tolerations": [{"operator": "Exists"}],
    }
    assert pods["aws-ebs-csi-driver-v1.48.0/ebs-csi-node"] == {
        "initContainers": [],
        "containers": [
            {"name": "ebs-plugin", "resources": {"requests": {"cpu": "10m", "memory": "40Mi"}}}
        ],
        "nodeSelector": {"kubernetes.io/os": "linux"},
    }
    assert pods["eks-node-monitoring-agent-v1.7.0/agent"] == {
        "containers": [
            {"name": "agent", "resources": {"requests": {"cpu": "10m", "memory": "30Mi"}}}
        ],
        "tolerations": [{"operator": "Exists"}],
    }
    assert pods["eks-node-monitoring-agent-v1.7.0/dcgm-server"] == {
        "containers": [{"name": "dcgm-server", "resources": {}}]
    }
    assert list(pods.values())[:3] == [
        {
            "containers": [
                {
                    "name": "worker",
                    "resources": {
                        "limits": {"memory": "512Mi"},
                        "requests": {"cpu": "5m", "memory": "64Mi"},
                    },
                }
            ]
        },
        {
            "containers": [
                {
                    "name": "aws-efa-k8s-device-plugin",
                    "resources": {"requests": {"cpu": "10m", "memory": "20Mi"}},
                }
            ],
            "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}],
        },
        {
            "initContainers": [{"name": "install", "resources": {"requests": {"cpu": "150m"}}}],
            "containers": [{"name": "pause"}],
            "tolerations": [{"operator": "Exists"}],
            "priorityClassName": "system-node-critical",
        },
    ]


def test_derive_writes_the_file_the_platform_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = []
    for number, text in enumerate(SOURCES):
        files.append(tmp_path / f"{number}.yaml")
        files[-1].write_text(text)
    monkeypatch.setattr(derive, "OUTPUT", tmp_path / "daemonset-pods.json")

    derive.main(*files)

    assert json.loads((tmp_path / "daemonset-pods.json").read_text()) == derive.derive(*SOURCES)


def test_the_committed_file_names_the_pinned_versions() -> None:
    committed = json.loads(derive.OUTPUT.read_text())

    assert set(committed) == set(derive.derive(*SOURCES))


def test_every_pinned_eks_addon_has_its_pods() -> None:
    pinned = {(a, v) for pins in addon_versions().values() for a, v in pins.items()}
    pinned.add(("eks-node-monitoring-agent", EKS_NODE_MONITORING_AGENT_ADDON_VERSION))

    assert [(a, v) for a, v in sorted(pinned) if eks_addon_pods(a, v, {}) is None] == []


def test_an_addon_release_nothing_was_derived_from_is_not_guessed() -> None:
    assert eks_addon_pods("vpc-cni", "v1.99.0-eksbuild.1", {}) is None


def test_an_addons_configuration_sets_where_its_pods_run() -> None:
    # The platform's configuration of the node monitoring agent (node_monitoring_agent.py).
    dcgm = _addon_pod("eks-node-monitoring-agent", "v1.7.0-eksbuild.1", 1)
    configured = eks_addon_pods(
        "eks-node-monitoring-agent",
        "v1.7.0-eksbuild.1",
        {"dcgmAgent": {"tolerations": [{"operator": "Exists"}]}},
    )

    assert "tolerations" not in dcgm.spec
    assert configured is not None
    assert configured[1].spec["tolerations"] == [{"operator": "Exists"}]
    # aws/eks-node-monitoring-agent v1.7.0 chart values: dcgmAgent.affinity requires one of
    # the NVIDIA instance types it lists.
    assert "affinity" in configured[1].spec
