"""The Helm releases the platform's components declare, as the project pins them: a release is
the platform's only when its name, namespace, chart and version are one of these.

A program may give its resources any parent types it likes (pulumi
sdk/go/common/resource/urn.go: a URN's type path is whatever types its parents were registered
with), so a URN says nothing of who declared a release; this table, part of the pack, does.
Every entry mirrors `gpu_platform/versions.py` and the component that installs it, which
tests/gpu_platform/policy_pack/test_helm.py checks, with the releases of a plan of every
committed stack. A stack that moves one of these releases (another chart version, a mirror,
another namespace) has it judged as the stack's own.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class PlatformRelease:
    name: str
    """The Helm release's name."""
    namespace: str
    chart: str
    """The chart as `reviewedCharts` names one: `<https repository>/<chart>`, or the `oci://`
    chart itself."""
    version: str


PLATFORM_RELEASES = (
    # gpu_platform/kubernetes/gpu_operator.py, in operator.namespace's default.
    PlatformRelease(
        "gpu-operator", "gpu-operator", "https://helm.ngc.nvidia.com/nvidia/gpu-operator", "v26.7.0"
    ),
    # gpu_platform/eks/efa_device_plugin.py, beside the GPU Operator.
    PlatformRelease(
        "aws-efa-k8s-device-plugin",
        "gpu-operator",
        "https://aws.github.io/eks-charts/aws-efa-k8s-device-plugin",
        "v0.5.30",
    ),
    # gpu_platform/kubernetes/monitoring.py, in monitoring.namespace's default.
    PlatformRelease(
        "kube-prometheus-stack",
        "monitoring",
        "https://prometheus-community.github.io/helm-charts/kube-prometheus-stack",
        "93.4.1",
    ),
    # gpu_platform/eks/cluster_autoscaler.py, in autoscaler.namespace's default.
    PlatformRelease(
        "cluster-autoscaler",
        "gpu-platform-system",
        "https://kubernetes.github.io/autoscaler/cluster-autoscaler",
        "9.59.0",
    ),
    # gpu_platform/eks/karpenter/controller.py, in karpenter.namespace's default.
    PlatformRelease(
        "karpenter-crd", "kube-system", "oci://public.ecr.aws/karpenter/karpenter-crd", "1.14.1"
    ),
    PlatformRelease(
        "karpenter", "kube-system", "oci://public.ecr.aws/karpenter/karpenter", "1.14.1"
    ),
)
