"""Every pinned upstream version the platform deploys, in one place.

Code reads these constants; `tests/gpu_platform/test_versions.py` checks that each is an exact
pin (no ranges, no `latest`, manifests at a commit) so that an upgrade is always a reviewed
change to this file.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class ContainerImage:
    """An image the platform runs, by repository and tag. Its digest, what the nodes pull,
    is the lock's (`gpu-platform lock` reads it from the registry), except where the image's
    own upstream release records it (Karpenter's chart): then it is set here, from that
    record."""

    repository: str
    tag: str
    digest: str | None = None
    """`sha256:<64 hex>` of the image index, where an upstream release records it; None for
    an image whose digest the lock holds."""

    @property
    def reference(self) -> str:
        """`repository:tag@digest`, or `repository:tag` without a digest."""
        pinned = f"{self.repository}:{self.tag}"
        return pinned if self.digest is None else f"{pinned}@{self.digest}"


@dataclass(frozen=True)
class HelmChart:
    """A chart pinned to an exact version in a Helm repository."""

    name: str
    version: str
    repository: str


# NVIDIA GPU Operator. Its values file has no schema, so every key path the code sets is
# checked against the pinned chart's key list (gpu_platform/kubernetes/chart_keys/, derived from
# the chart's values.yaml by derive.py there): re-derive it with every change of version, and
# the operands' digests (gpu_platform/kubernetes/operand_images/, from the release's bundle).
# Versions after v26.7.0 grant the DCGM exporter read access to ResourceSlices, and set its
# KUBERNETES_ENABLE_DRA, themselves with `dcgmExporter.enablePodLabels` (NVIDIA/gpu-operator#2697):
# past it, the platform's own role (gpu_platform/kubernetes/exporter_slice_access.py) and flag
# are redundant, and go with the move.
GPU_OPERATOR_CHART = HelmChart(
    name="gpu-operator",
    version="v26.7.0",
    repository="https://helm.ngc.nvidia.com/nvidia",
)


@dataclass(frozen=True)
class Subchart:
    """A chart that a pinned chart bundles, whose values the platform sets through it: its
    version is the parent's to choose, not a pin of the platform's, and names the key list its
    values are checked against (gpu_platform/kubernetes/chart_keys/)."""

    name: str
    version: str


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

# node-feature-discovery, which the GPU Operator chart bundles: deployments/gpu-operator/
# Chart.yaml's `dependencies` at v26.7.0. Move it with GPU_OPERATOR_CHART.
GPU_OPERATOR_NFD_SUBCHART = Subchart("node-feature-discovery", "0.19.0")

# prometheus-node-exporter, which kube-prometheus-stack bundles. Its key list comes from the
# newest release read, 4.56.1 (kube-prometheus-stack 88.5.3's dependency); the keys the
# platform sets there (`namespaceOverride`, `updateStrategy.rollingUpdate.maxUnavailable`)
# have been in its values since 2.0.0. When KUBE_PROMETHEUS_STACK_CHART moves, read the
# dependency's version from its Chart.yaml and re-derive the list.
KUBE_PROMETHEUS_STACK_NODE_EXPORTER_SUBCHART = Subchart("prometheus-node-exporter", "4.56.1")

# AWS's EFA device plugin, which advertises a node's Elastic Fabric Adapters as
# `vpc.amazonaws.com/efa`; installed in kube-system once a pool asks for EFA (`aws.efa`). The
# DRA driver EKS recommends from Kubernetes 1.34 needs DRA-aware workloads and does not work
# with Karpenter; the device plugin works on every supported version.
EFA_DEVICE_PLUGIN_CHART = HelmChart(
    name="aws-efa-k8s-device-plugin",
    version="v0.5.30",
    repository="https://aws.github.io/eks-charts",
)

# NVIDIA's DRA driver for GPUs (NVIDIA/k8s-dra-driver-gpu), installed once a pool has
# `allocation: dra`: it publishes those pools' GPUs as DRA devices. Its values file has no schema,
# so every key path the code sets is checked against the chart's key list
# (gpu_platform/kubernetes/chart_keys/): re-derive it with every change of version. Versions carry
# no leading `v` (deployments/helm/nvidia-dra-driver-gpu/Chart.yaml: "strict semver: no v prefix
# allowed").
DRA_DRIVER_CHART = HelmChart(
    name="nvidia-dra-driver-gpu",
    version="25.12.0",
    repository="https://helm.ngc.nvidia.com/nvidia",
)

# Pod Security Standards version stamped on every namespace's `<mode>-version` label, so a
# cluster upgrade never tightens or loosens a namespace's policy without a reviewed change.
POD_SECURITY_VERSION = "v1.35"

# The Kubernetes minor versions the platform supports: those NVIDIA supports GPU Operator v26.7.0
# on, on both EKS and GKE (the cloud providers table of its platform-support page; EKS 1.32 is
# not listed). The autoscaler images below, preflight's version check and the tests that validate
# every object the program creates against each minor's OpenAPI schema all follow it.
SUPPORTED_KUBERNETES_VERSIONS = ("1.33", "1.34", "1.35", "1.36")

# The EKS node monitoring agent add-on, installed wherever a node group repairs its nodes: it
# sets `AcceleratedHardwareReady=False` on GPU faults, which node repair acts on. An add-on
# version is the agent's release with EKS's build number (`aws eks describe-addon-versions
# --addon-name eks-node-monitoring-agent` lists them); the configuration the platform gives it is
# checked against this release's schema (gpu_platform/eks/addon_schemas/, re-derive it with the
# pin). `gpu-platform:cluster.nodeMonitoringAgentVersion` overrides it.
EKS_NODE_MONITORING_AGENT_ADDON_VERSION = "v1.7.0-eksbuild.1"

# The tenant namespaces' smoke test runs `nvidia-smi`, which the NVIDIA Container Toolkit mounts
# from the node's driver: the image only supplies a filesystem, so the smallest CUDA image will
# do. Its CUDA release stays at or below the oldest driver branch a pool may run (R535 runs CUDA
# 12.2, see CUDA_BY_DRIVER_BRANCH), so that the image itself never fails the CUDA check it is
# there to prove: CUDA images declare `NVIDIA_REQUIRE_CUDA`, which the toolkit enforces when the
# container starts.
GPU_SMOKE_TEST_IMAGE = ContainerImage("nvcr.io/nvidia/cuda", "12.2.2-base-ubuntu22.04")

# The newest CUDA release each NVIDIA driver branch runs natively: what `nvidia-smi` prints as
# "CUDA Version", and the ceiling a pool's pods are held to. From the CUDA Toolkit release notes'
# "CUDA Toolkit and Corresponding Driver Versions" table (the minimum Linux driver of every
# toolkit release): a branch runs every toolkit whose minimum driver is of that branch or older.
# R565 drivers report 12.7, a release with no toolkit of its own. CUDA's minor version
# compatibility lets a 12.x application run on any R525+ driver with a limited feature set
# (docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html): the policy pack
# refuses only a newer major release (gpu_platform/policy_pack/gpu_cuda.py) and reports a newer
# minor one; the pod helper holds pods to the native version, since the `NVIDIA_REQUIRE_CUDA`
# it sets makes the container toolkit refuse anything newer.
CUDA_BY_DRIVER_BRANCH = {
    450: "11.0",
    470: "11.4",
    525: "12.0",
    535: "12.2",
    550: "12.4",
    560: "12.6",
    565: "12.7",
    570: "12.8",
    575: "12.9",
    580: "13.0",
    590: "13.1",
    595: "13.2",
    610: "13.3",
}
"""NVIDIA driver branch -> the newest CUDA `major.minor` it runs."""

# The driver the GPU Operator builds where it owns the driver (GKE Ubuntu): the pinned chart's
# default (`driver.version` in its values.yaml), set explicitly so that a chart upgrade never
# moves every GPU node to a new driver unnoticed. Changing it rolls the new driver through the
# operator's upgrade controller (`gpu-platform:operator.driverUpgrade...` settings).
GPU_OPERATOR_DRIVER_VERSION = "595.91.07"

# The idle GPU pod enforcer of opted-in tenant namespaces runs one script of the standard
# library (gpu_platform/kubernetes/idle_gpu_reaper.py) from a ConfigMap: an official Python image,
# the slim variant (no compilers, a smaller attack surface), needs no image of the platform's own
# to build, sign and patch. Debian trixie named, so the tag cannot move to another release.
IDLE_GPU_REAPER_IMAGE = ContainerImage("docker.io/library/python", "3.13.9-slim-trixie")
# The MIG nodes' startup taint remover (gpu_platform/kubernetes/mig_startup_taint_remover.py) is
# one such script too, on the same image.
MIG_STARTUP_TAINT_REMOVER_IMAGE = IDLE_GPU_REAPER_IMAGE

# The node validation pod's main container (gpu_platform/kubernetes/node_validation/report.py
# and validate.py) is one such script too: `nvidia-smi`, which it runs, the NVIDIA Container
# Toolkit mounts from the node's driver into any image.
NODE_VALIDATOR_IMAGE = IDLE_GPU_REAPER_IMAGE
# DCGM's own image, for `dcgmi diag` and its host engine in the validation pod: the image and
# tag the pinned GPU Operator chart names for its standalone DCGM (`dcgm` in
# deployments/gpu-operator/values.yaml at v26.7.0), the DCGM release its DCGM exporter
# (4.6.0-4.8.3) is built on. Move it with GPU_OPERATOR_CHART.
NODE_VALIDATOR_DCGM_IMAGE = ContainerImage(
    "nvcr.io/nvidia/cloud-native/dcgm", "4.6.0-1-ubuntu24.04"
)
# nccl-tests' `all_reduce_perf` for node validation's NCCL check: no NVIDIA image on NGC is
# documented to carry it outside its multi-gigabyte framework images, so AWS's image, built and
# pushed to its public registry by aws-samples/awsome-distributed-training (micro-benchmarks/
# nccl-tests: nccl-tests.Dockerfile builds nccl-tests into /opt/nccl-tests/build, buildspec.yaml
# pushes `public.ecr.aws/hpc-cloud/nccl-tests:<tag>`). The tag is that Dockerfile's defaults
# (CUDA 12.8.1, EFA installer 1.43.2, aws-ofi-nccl v1.16.3, NCCL v2.27.7-1, nccl-tests v2.16.9);
# CUDA 12.8 needs a driver of branch 570 or later. Upstream records no digest: the lock holds it.
NODE_VALIDATOR_NCCL_TESTS_IMAGE = ContainerImage(
    "public.ecr.aws/hpc-cloud/nccl-tests",
    "cuda12.8.1-efa1.43.2-ofiv1.16.3-ncclv2.27.7-1-testsv2.16.9",
)

# The GKE Ubuntu canary gate's check that its node runs the canary NVIDIADriver's current driver
# pod (gpu_platform/kubernetes/canary_driver_check.py) is one such script too. The image is in
# the gate's pod, so a new pin (its digest landing included) runs every GKE Ubuntu gate once more.
CANARY_GATE_CHECK_IMAGE = IDLE_GPU_REAPER_IMAGE

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
    "1.33": ContainerImage("registry.k8s.io/autoscaling/cluster-autoscaler", "v1.33.6"),
    "1.34": ContainerImage("registry.k8s.io/autoscaling/cluster-autoscaler", "v1.34.5"),
    "1.35": ContainerImage("registry.k8s.io/autoscaling/cluster-autoscaler", "v1.35.2"),
    "1.36": ContainerImage("registry.k8s.io/autoscaling/cluster-autoscaler", "v1.36.1"),
}
"""Kubernetes minor -> the autoscaler release for it, for every supported minor."""

# Karpenter (EKS, `provisioner: karpenter`), from AWS's OCI registry; versions carry no leading
# `v`. Helm installs a chart's `crds/` on first install only, so the CRDs come from their own
# chart at the same version: an upgrade of this pin upgrades them too. 1.14.1 supports
# Kubernetes up to 1.36 (Karpenter's compatibility matrix: 1.36 needs 1.13 or newer). The
# NodePool and EC2NodeClass shapes the platform renders are checked against this version's CRDs
# (gpu_platform/kubernetes/crd_schemas/).
KARPENTER_CHART = HelmChart(
    name="karpenter",
    version="1.14.1",
    repository="oci://public.ecr.aws/karpenter",
)
# Karpenter's controller image at KARPENTER_CHART's version, by the digest Karpenter's release
# writes into the chart it publishes (aws/karpenter-provider-aws, charts/karpenter/values.yaml
# `controller.image`, commit c88abbba "Stable Release updates Release v1.14.1"; the tag's own
# values.yaml still names 1.13.0). Set explicitly, so that the chart's digest is checked here
# and a chart version without one is never run by tag alone.
KARPENTER_CONTROLLER_IMAGE = ContainerImage(
    "public.ecr.aws/karpenter/controller",
    "1.14.1",
    "sha256:445baefaaa689029cc12ac1f659b916b0b82fb14308ce536f8521fcf079116fa",
)
KARPENTER_CRD_CHART = HelmChart(
    name="karpenter-crd",
    version=KARPENTER_CHART.version,
    repository=KARPENTER_CHART.repository,
)

# Kueue (`queues.enabled`), which queues tenants' jobs and admits each whole once its quota allows,
# from the OCI chart its release publishes (charts/kueue/README.md at v0.19.2: `helm install kueue
# oci://registry.k8s.io/kueue/charts/kueue`); versions carry no leading `v`. The chart's CRDs are
# templates, so Helm upgrades them with the chart. The ResourceFlavor, ClusterQueue, LocalQueue
# and Cohort shapes the platform renders are checked against this version's CRDs
# (gpu_platform/kubernetes/crd_schemas/).
KUEUE_CHART = HelmChart(
    name="kueue",
    version="0.19.2",
    repository="oci://registry.k8s.io/kueue/charts",
)
# The manager image the published chart runs: the release's packaging sets the chart's staging
# repository and branch tag to registry.k8s.io/kueue/kueue at the release's tag
# (hack/helm-chart-package.sh at v0.19.2); the tag's own values.yaml still names the staging
# image. Set explicitly, so that the image never follows a chart default; its digest is the lock's.
KUEUE_MANAGER_IMAGE = ContainerImage("registry.k8s.io/kueue/kueue", "v0.19.2")
