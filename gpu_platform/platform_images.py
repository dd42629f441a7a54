"""Every image a stack's platform deploys, from its config: what `gpu-platform lock` reads the
digests of, and what preflight compares with the registries.

The images the platform names itself come from where the program takes them (versions.py, the
GPU Operator's operand digests); the images a chart runs by its own default, which the
platform's values leave to it, are recorded here from the pinned chart's values, with their
sources. Where the config alone cannot tell (the Kubernetes version of an existing EKS
cluster, which picks the autoscaler's release), every image the stack may deploy is listed: a
digest the lock holds and the stack does not run costs nothing.

Not listed, because no tag of theirs names one image: the driver the GPU Operator builds on GKE
Ubuntu (`nvcr.io/nvidia/driver:<version>-<os>`: the operator appends each node's OS to the tag,
internal/image/image.go at v26.7.0), and the images of Google's COS driver installer manifest,
pinned by commit and already by digest where they are pulled (`cos-nvidia-installer:fixed` is
preloaded on the node). Nor kube-prometheus-stack's own images (Prometheus, Alertmanager, the
operator, Grafana, kube-state-metrics, node-exporter): `gpu-platform lock` reads them from the
pinned chart's archive itself (gpu_platform/lock/image_resolver.py,
gpu_platform/kubernetes/chart_images/prometheus_stack.py).
"""

from collections.abc import Iterator
from dataclasses import dataclass

from gpu_platform.config import Cloud, MigSharing, Platform, StackConfig
from gpu_platform.kubernetes.operand_images import operand_images
from gpu_platform.versions import (
    CANARY_GATE_CHECK_IMAGE,
    CLUSTER_AUTOSCALER_IMAGES,
    GPU_OPERATOR_CHART,
    GPU_SMOKE_TEST_IMAGE,
    IDLE_GPU_REAPER_IMAGE,
    KARPENTER_CONTROLLER_IMAGE,
    KUEUE_MANAGER_IMAGE,
    MIG_STARTUP_TAINT_REMOVER_IMAGE,
    NODE_VALIDATOR_DCGM_IMAGE,
    NODE_VALIDATOR_IMAGE,
    NODE_VALIDATOR_NCCL_TESTS_IMAGE,
    ContainerImage,
)

# NVIDIA/gpu-operator deployments/gpu-operator/values.yaml at v26.7.0: `operator` and
# `validator` are `nvcr.io/nvidia/gpu-operator` at the chart's appVersion (the chart's version);
# `driver.manager` is k8s-driver-manager v0.12.0, which the operator runs beside the driver it
# builds (GKE Ubuntu).
GPU_OPERATOR_IMAGE_REPOSITORY = "nvcr.io/nvidia/gpu-operator"
GPU_OPERATOR_DRIVER_MANAGER_IMAGE = ContainerImage(
    "nvcr.io/nvidia/cloud-native/k8s-driver-manager", "v0.12.0"
)
# kubernetes-sigs/node-feature-discovery deployment/helm/node-feature-discovery/values.yaml at
# v0.19.0 (the subchart GPU_OPERATOR_NFD_SUBCHART names): `image.repository`, and `image.tag`
# empty, so the chart's appVersion, v0.19.0; the GPU Operator's values set neither.
NODE_FEATURE_DISCOVERY_IMAGE = ContainerImage(
    "registry.k8s.io/nfd/node-feature-discovery", "v0.19.0"
)
# aws/eks-charts stable/aws-efa-k8s-device-plugin/values.yaml at chart v0.5.30: `image`, in
# EKS's own ECR registry in us-west-2 (account 602401143452), which answers only requests signed
# with AWS credentials: `gpu-platform lock` cannot read it anonymously and says so.
EFA_DEVICE_PLUGIN_IMAGE = ContainerImage(
    "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-efa-k8s-device-plugin", "v0.5.20"
)

# NVIDIA/k8s-dra-driver-gpu deployments/helm/nvidia-dra-driver-gpu/values.yaml at v25.12.0:
# `image.repository`, and templates/_helpers.tpl `nvidia-dra-driver-gpu.fullimage`, whose tag is
# `v` and the chart's appVersion unless `image.tag` says otherwise.
DRA_DRIVER_IMAGE = ContainerImage("nvcr.io/nvidia/k8s-dra-driver-gpu", "v25.12.0")


@dataclass(frozen=True, order=True)
class PlatformImage:
    """An image of the platform, by repository and tag, and what deploys it."""

    repository: str
    tag: str
    deployed_by: str
    digest: str | None = None
    """The digest its upstream release records (the GPU Operator's operands, Karpenter's
    controller), which the lock does not hold; None for one the lock holds."""

    @property
    def key(self) -> str:
        """`<repository>:<tag>`, the image's key in the lock."""
        return f"{self.repository}:{self.tag}"


def platform_images(config: StackConfig) -> list[PlatformImage]:
    """The stack's images, sorted, each once (the first part of the stack that deploys it)."""
    found: dict[str, PlatformImage] = {}
    for image in _images(config):
        found.setdefault(image.key, image)
    return sorted(found.values())


def _image(image: ContainerImage, deployed_by: str) -> PlatformImage:
    return PlatformImage(image.repository, image.tag, deployed_by, image.digest)


def _images(config: StackConfig) -> Iterator[PlatformImage]:
    chart_version = config.operator.chart_version
    yield PlatformImage(GPU_OPERATOR_IMAGE_REPOSITORY, chart_version, "GPU Operator")
    for operand, reference in sorted(operand_images(chart_version).items()):
        name, _, digest = reference.partition("@")
        repository, _, tag = name.rpartition(":")
        yield PlatformImage(repository, tag, f"GPU Operator operand {operand}", digest)
    if chart_version == GPU_OPERATOR_CHART.version:
        yield _image(NODE_FEATURE_DISCOVERY_IMAGE, "GPU Operator's node-feature-discovery")
        if config.platform is Platform.GKE_UBUNTU:
            yield _image(GPU_OPERATOR_DRIVER_MANAGER_IMAGE, "GPU Operator's driver manager")
    if config.namespaces or any(pool.canary_of for pool in config.pools):
        yield _image(GPU_SMOKE_TEST_IMAGE, "smoke tests and canary gates")
    if any(namespace.gpu_idle_minutes for namespace in config.namespaces):
        yield _image(IDLE_GPU_REAPER_IMAGE, "idle GPU pod reaper")
    # The gate's script containers: its driver check where the operator rolls drivers in place
    # (GKE Ubuntu), its validation proof where the canary validates its nodes
    # (gpu_platform/kubernetes/canary_gate.py, _script_container).
    if any(
        pool.canary_of and (config.platform is Platform.GKE_UBUNTU or pool.validation.enabled)
        for pool in config.pools
    ):
        yield _image(CANARY_GATE_CHECK_IMAGE, "canary gates' driver check and validation proof")
    if any(isinstance(pool.sharing, MigSharing) for pool in config.pools):
        yield _image(MIG_STARTUP_TAINT_REMOVER_IMAGE, "MIG startup taint remover")
    if any(pool.validation.enabled for pool in config.pools):
        yield _image(NODE_VALIDATOR_IMAGE, "node validation")
        yield _image(NODE_VALIDATOR_DCGM_IMAGE, "node validation's DCGM diagnostic")
    # Before its machine is resolved a pool may not say its GPUs: counted as several, as
    # node_validation/duration.py counts them.
    if any(p.validation.runs_nccl_test(p.gpus_per_node or 2) for p in config.pools):
        yield _image(NODE_VALIDATOR_NCCL_TESTS_IMAGE, "node validation's NCCL all-reduce")
    if config.queues.enabled:
        yield _image(KUEUE_MANAGER_IMAGE, "Kueue")
    if config.cloud is Cloud.AWS:
        yield from _eks_images(config)


def _eks_images(config: StackConfig) -> Iterator[PlatformImage]:
    if config.autoscaler_installed:
        yield from (_image(i, "cluster autoscaler") for i in _autoscaler_images(config))
    if config.uses_karpenter:
        yield _image(KARPENTER_CONTROLLER_IMAGE, "Karpenter")
    if any(pool.aws.efa for pool in config.pools):
        yield _image(EFA_DEVICE_PLUGIN_IMAGE, "EFA device plugin")
    if any(pool.allocation == "dra" for pool in config.pools):
        yield _image(DRA_DRIVER_IMAGE, "NVIDIA DRA driver")


def _autoscaler_images(config: StackConfig) -> list[ContainerImage]:
    """The autoscaler's image: the configured tag, else the pinned release for the version of
    a cluster the platform creates, else, for an existing cluster whose version only the
    deploy reads, the pinned release of every supported version."""
    if config.autoscaler.image_tag is not None:
        repository = next(iter(CLUSTER_AUTOSCALER_IMAGES.values())).repository
        return [ContainerImage(repository, config.autoscaler.image_tag)]
    if config.cluster.create is not None:
        return [CLUSTER_AUTOSCALER_IMAGES[config.cluster.create.kubernetes_version]]
    return list(CLUSTER_AUTOSCALER_IMAGES.values())
