"""The pods the provisioner places on a template node first: the DaemonSets' pods derived from
the platform's pinned charts and manifests, and the script that derives them."""

import json
from decimal import Decimal
from pathlib import Path

import pytest

from gpu_platform.fit import pod_requests
from gpu_platform.template_pods import (
    KUBE_PROXY,
    TemplatePod,
    cos_driver_installer,
    derive,
    efa_device_plugin,
    nfd_worker,
)

GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


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
    ],
    ids=["kube-proxy", "nfd-worker", "efa-device-plugin", "cos-driver-installer"],
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


def test_derive_keeps_each_pods_requests_and_scheduling() -> None:
    pods = derive.derive(NFD_VALUES, EFA_VALUES, COS_MANIFEST)

    assert list(pods.values()) == [
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
    sources = {}
    for name, text in (("nfd", NFD_VALUES), ("efa", EFA_VALUES), ("cos", COS_MANIFEST)):
        sources[name] = tmp_path / f"{name}.yaml"
        sources[name].write_text(text)
    monkeypatch.setattr(derive, "OUTPUT", tmp_path / "daemonset-pods.json")

    derive.main(sources["nfd"], sources["efa"], sources["cos"])

    assert json.loads((tmp_path / "daemonset-pods.json").read_text()) == derive.derive(
        NFD_VALUES, EFA_VALUES, COS_MANIFEST
    )


def test_the_committed_file_names_the_pinned_versions() -> None:
    committed = json.loads(derive.OUTPUT.read_text())

    assert set(committed) == set(derive.derive(NFD_VALUES, EFA_VALUES, COS_MANIFEST))
