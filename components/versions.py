"""Every pinned upstream version the platform deploys, in one place.

Code reads these constants; `tests/components/test_versions.py` checks that each is an exact
pin (no ranges, no `latest`, manifests at a commit) so that an upgrade is always a reviewed
change to this file.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class HelmChart:
    """A chart pinned to an exact version in a Helm repository."""

    name: str
    version: str
    repository: str


# NVIDIA GPU Operator. Its values file has no schema, so every key path the code sets is
# checked against the pinned chart's key list (components/kubernetes/chart_keys/, derived from
# the chart's values.yaml by derive.py there): re-derive it with every change of version.
GPU_OPERATOR_CHART = HelmChart(
    name="gpu-operator",
    version="v26.7.0",
    repository="https://helm.ngc.nvidia.com/nvidia",
)

# kube-prometheus-stack (Prometheus Operator, Prometheus, Alertmanager, Grafana, node-exporter,
# kube-state-metrics), installed only when `gpu-platform:monitoring.installPrometheusStack` is on.
# Versions carry no leading `v`. Helm installs the chart's CRDs on first install only: when this
# pin moves to a release with a newer Prometheus Operator, apply that release's CRDs first (the
# chart README's "Upgrading chart" section lists them).
KUBE_PROMETHEUS_STACK_CHART = HelmChart(
    name="kube-prometheus-stack",
    version="93.4.1",
    repository="https://prometheus-community.github.io/helm-charts",
)

# AWS's EFA device plugin, which advertises a node's Elastic Fabric Adapters as
# `vpc.amazonaws.com/efa`; installed in kube-system once a pool asks for EFA (`aws.efa`). The
# DRA driver EKS recommends from Kubernetes 1.34 needs DRA-aware workloads and does not work
# with Karpenter; the device plugin works on every supported version.
EFA_DEVICE_PLUGIN_CHART = HelmChart(
    name="aws-efa-k8s-device-plugin",
    version="v0.5.30",
    repository="https://aws.github.io/eks-charts",
)

# Pod Security Standards version stamped on every namespace's `<mode>-version` label, so a
# cluster upgrade never tightens or loosens a namespace's policy without a reviewed change.
POD_SECURITY_VERSION = "v1.35"

# The Kubernetes minor versions the platform supports: those NVIDIA supports GPU Operator v26.7.0
# on, on both EKS and GKE (the cloud providers table of its platform-support page; EKS 1.32 is
# not listed). The autoscaler images below, preflight's version check and the tests that validate
# every object the program creates against each minor's OpenAPI schema all follow it.
SUPPORTED_KUBERNETES_VERSIONS = ("1.33", "1.34", "1.35", "1.36")

# The tenant namespaces' smoke test runs `nvidia-smi`, which the NVIDIA Container Toolkit mounts
# from the node's driver: the image only supplies a filesystem, so the smallest CUDA image will
# do. Moving it to a newer CUDA release changes nothing the test checks.
GPU_SMOKE_TEST_IMAGE = "nvcr.io/nvidia/cuda:12.8.1-base-ubuntu24.04"

# Google's NVIDIA driver installer DaemonSet for Container-Optimized OS nodes, the `preloaded`
# variant (GKE ships the installer image on the node, matched to its COS release). GKE COS pools
# use it instead of the GPU Operator's driver. Pinned to a commit of
# GoogleCloudPlatform/container-engine-accelerators: the branch changes under the same URL.
# f2cf4197 (2025-07-02) is the newest commit to touch the file. Since the previous pin
# (068b15a9, 2023-01) it skips installing when a driver is already loaded, fails the pod when
# the install fails, stays off confidential nodes, updates the `partition-gpus` init container
# (H100 and H200 partitions) and moves the pause image to gke.gcr.io/pause:3.8 by digest.
GKE_COS_DRIVER_INSTALLER_MANIFEST = (
    "https://raw.githubusercontent.com/GoogleCloudPlatform/container-engine-accelerators/"
    "f2cf4197a5c3f0f20133be15d5fad8b7453beed5/nvidia-driver-installer/cos/daemonset-preloaded.yaml"
)

# Kubernetes cluster autoscaler (EKS). The chart's default image follows the chart's release,
# not the cluster, so the image is chosen separately: the autoscaler simulates the scheduler of
# its own minor version and must match the cluster's.
CLUSTER_AUTOSCALER_CHART = HelmChart(
    name="cluster-autoscaler",
    version="9.59.0",
    repository="https://kubernetes.github.io/autoscaler",
)
CLUSTER_AUTOSCALER_IMAGES = {
    "1.33": "registry.k8s.io/autoscaling/cluster-autoscaler:v1.33.6",
    "1.34": "registry.k8s.io/autoscaling/cluster-autoscaler:v1.34.5",
    "1.35": "registry.k8s.io/autoscaling/cluster-autoscaler:v1.35.2",
    "1.36": "registry.k8s.io/autoscaling/cluster-autoscaler:v1.36.1",
}
"""Kubernetes minor -> the autoscaler release for it, for every supported minor."""
