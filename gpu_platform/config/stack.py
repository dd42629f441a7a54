"""The whole stack's configuration: one model of every concern's settings."""

from pydantic import Field, PrivateAttr

from gpu_platform.config.capacity import ClusterAutoscalerSpec, KarpenterSpec
from gpu_platform.config.cloud_options import ClusterSpec
from gpu_platform.config.fields import (
    AUTO_MODE_NODE_IMAGE,
    NODE_IMAGES,
    Cloud,
    Model,
    Platform,
    Provisioner,
)
from gpu_platform.config.operator import MonitoringSpec, OperatorSpec
from gpu_platform.config.pools import GpuPoolSpec
from gpu_platform.config.queues import QueuesSpec
from gpu_platform.config.tenants import TenantNamespaceSpec
from gpu_platform.kubernetes.dra_names import DRA_DRIVER_NAMESPACE


class StackConfig(Model):
    """Everything one stack (environment) is configured with."""

    cloud: Cloud
    """Where the cluster runs: `aws` (EKS) or `gcp` (GKE)."""
    cluster: ClusterSpec
    """The cluster: an existing one to attach to, or one to create (`cluster.create`)."""
    pools: list[GpuPoolSpec] = Field(min_length=1)
    """The GPU node pools."""
    operator: OperatorSpec = Field(default_factory=OperatorSpec)
    """The NVIDIA GPU Operator release."""
    monitoring: MonitoringSpec = Field(default_factory=MonitoringSpec)
    """GPU metrics, alerts and dashboards."""
    namespaces: list[TenantNamespaceSpec] = Field(default_factory=list)
    """Namespaces for teams' GPU workloads."""
    protect: bool = False
    """Protect the node groups or node pools, Karpenter's two releases (uninstalling its CRDs
    would remove every NodePool and the nodes with them), Kueue's release (its CRDs with every
    queue and waiting job), the GPU Operator's namespace and
    release (and on GKE Ubuntu the pools' NVIDIADriver resources, without which their nodes
    lose the driver), and the Prometheus stack the platform installs, from deletion: `pulumi
    destroy`, or a change that would replace them, fails until they are unprotected. What
    ordinary changes replace (node roles, policy attachments, launch templates, Auto Scaling
    group tags, service accounts) stays unprotected. Turn it on where losing them means an
    outage or lost work."""
    autoscaler: ClusterAutoscalerSpec = Field(default_factory=ClusterAutoscalerSpec)
    """EKS: the cluster autoscaler."""
    provisioner: Provisioner = "cluster-autoscaler"
    """EKS: what launches GPU nodes: managed node groups scaled by the cluster autoscaler, or
    Karpenter NodePools (one per pool). With `karpenter`, every pool is `exclusive` with `min`
    0, and `autoscaler` and the node-group-only pool settings (`aws.nodeGroupPerZone`,
    `aws.nodeRoleArn`, `aws.nodeRepair`,
    `aws.capacityReservationResourceGroupArn`, `aws.capacityBlockStart`) take no value
    (docs/karpenter.md). With `eks-auto-mode`, on a cluster whose EKS Auto Mode compute is on,
    each pool is a NodePool of Auto Mode's own Karpenter, on its Bottlerocket-based nodes with
    its NVIDIA driver and device plugin: as with `karpenter`, and besides `karpenter`,
    `cluster.nodeImage` other than `bottlerocket`, `aws.amiReleaseVersion`, `aws.efa` and
    `canaryOf` take no value (docs/eks-auto-mode.md)."""
    karpenter: KarpenterSpec = Field(default_factory=KarpenterSpec)
    """EKS with `provisioner: karpenter`: the Karpenter controller; with `eks-auto-mode`, only
    the settings of the pools' NodePools (`consolidateAfterMinutes`,
    `terminationGracePeriodHours`), as Auto Mode runs its own Karpenter."""
    queues: QueuesSpec = Field(default_factory=QueuesSpec)
    """Kueue: a queue per tenant namespace, whose jobs start whole once its quota allows."""

    _secret_keys: frozenset[str] = PrivateAttr(default=frozenset())

    @property
    def helm_release_namespaces(self) -> list[str]:
        """Where the platform installs Helm releases, and so where Helm keeps their records as
        Secrets: the only namespaces in which a preview has to read Secrets."""
        found = {self.operator.namespace}
        if self.monitoring.install_prometheus_stack:
            found.add(self.monitoring.namespace)
        if self.autoscaler_installed:
            found.add(self.autoscaler.namespace)
        if self.karpenter_installed:
            found.add(self.karpenter.namespace)
        if self.queues.enabled:
            found.add(self.queues.namespace)
        if any(pool.allocation == "dra" for pool in self.pools):
            found.add(DRA_DRIVER_NAMESPACE)
        return sorted(found)

    @property
    def secret_keys(self) -> frozenset[str]:
        """The keys (`operator`, `pools`...) set as secrets."""
        return self._secret_keys

    def is_secret(self, *keys: str) -> bool:
        """Whether any of these keys (`operator`, `pools`...) was set as a secret. Pulumi marks a
        whole key secret when any part of its value is, so every value taken from it is to be
        handled as one."""
        return not self._secret_keys.isdisjoint(keys)

    @property
    def node_image(self) -> str:
        """The GPU nodes' image: `cluster.nodeImage`, else the cloud's default; under EKS Auto
        Mode, Bottlerocket, which its AMIs are built on."""
        if self.uses_auto_mode:
            return AUTO_MODE_NODE_IMAGE
        return self.cluster.node_image or NODE_IMAGES[self.cloud][0]

    @property
    def platform(self) -> Platform:
        prefix = "eks" if self.cloud is Cloud.AWS else "gke"
        return Platform(f"{prefix}-{self.node_image}")

    def queued(self, namespace: TenantNamespaceSpec) -> bool:
        """Whether a tenant namespace's jobs go through Kueue: `queues.enabled` and its own
        `queue.enabled`."""
        return self.queues.enabled and namespace.queue.enabled

    def pool(self, name: str) -> GpuPoolSpec:
        return next(p for p in self.pools if p.name == name)

    @property
    def autoscaler_installed(self) -> bool:
        """Whether the platform installs the cluster autoscaler."""
        return (
            self.cloud is Cloud.AWS
            and self.provisioner == "cluster-autoscaler"
            and self.autoscaler.install
        )

    @property
    def uses_karpenter(self) -> bool:
        """Whether Karpenter launches the GPU nodes, installed by the platform or not."""
        return self.cloud is Cloud.AWS and self.provisioner == "karpenter"

    @property
    def uses_auto_mode(self) -> bool:
        """Whether EKS Auto Mode's own Karpenter launches the GPU nodes."""
        return self.cloud is Cloud.AWS and self.provisioner == "eks-auto-mode"

    @property
    def uses_node_pools(self) -> bool:
        """Whether Karpenter NodePools launch the GPU nodes: a Karpenter's or EKS Auto Mode's."""
        return self.uses_karpenter or self.uses_auto_mode

    @property
    def karpenter_installed(self) -> bool:
        """Whether the platform installs Karpenter."""
        return self.uses_karpenter and self.karpenter.install


def known_platform(config: StackConfig) -> Platform | None:
    """The stack's platform; None while its node image is another cloud's (a rule of the cluster
    reports that), so that rules about one platform do not fail on it."""
    image = config.cluster.node_image
    return config.platform if image in (None, *NODE_IMAGES[config.cloud]) else None
