"""The Helm releases the platform's components declare, as the project pins them: a release is
the platform's when it installs one of these charts (repository and name) at its version, or one
the stack's policy config declares in `platform-release-rollback`'s `platformReleases` (a
mirror, a trial version that a setting of the stack chose).

A program may give its resources any parent types it likes (pulumi
sdk/go/common/resource/urn.go: a URN's type path is whatever types its parents were registered
with), so a URN says nothing of who declared a release; this table, part of the pack, and the
policy config, which the program cannot write, do. The release's name and namespace never make
it the platform's: what the chart runs is the chart's, at its version, wherever it is
installed, and a program names a release and picks its namespace as freely as its parents; they
only narrow what its values may hold (`platform_values.ChartValues.release`). Where a chart must
run is a rule of its own (`gpu-operator-release`: the GPU Operator in a namespace of its own,
which Pod Security lets it run privileged in, as the stack's policy config lists it).

Chart and version are not all: the same chart at the same version runs whatever its values
make it run. A release with a `postrender` command or `valueYamlFiles` (values the policies never
read), with a value at a key path the platform does not set for its chart or another image
repository than it pins (`platform_values.PLATFORM_VALUES`), or with objects in a value its
chart renders as given (`RAW_MANIFEST_KEYS`) other than the platform's own
(`PLATFORM_OBJECT_PREFIX`), is not the platform's.

Every entry mirrors `gpu_platform/versions.py`, which tests/gpu_platform/policy_pack/test_helm.py
checks, with the releases of a plan of every committed stack.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class PlatformRelease:
    name: str
    """The chart's name."""
    repository: str
    """The https repository serving it, or the `oci://` path it sits under."""
    version: str
    repository_setting: str | None = None
    """The stack setting that installs it from another repository (a mirror), as users spell
    it."""
    version_setting: str | None = None
    """The stack setting that installs another version of it."""

    @property
    def chart(self) -> str:
        """The chart as `reviewedCharts` names one: `<https repository>/<chart>`, or the
        `oci://` chart itself."""
        return f"{self.repository}/{self.name}"


PLATFORM_RELEASES = (
    # gpu_platform/kubernetes/gpu_operator.py.
    PlatformRelease(
        "gpu-operator",
        "https://helm.ngc.nvidia.com/nvidia",
        "v26.7.0",
        repository_setting="operator.repository",
        version_setting="operator.chartVersion",
    ),
    # gpu_platform/eks/efa_device_plugin.py.
    PlatformRelease("aws-efa-k8s-device-plugin", "https://aws.github.io/eks-charts", "v0.5.30"),
    # gpu_platform/kubernetes/dra_driver.py.
    PlatformRelease("nvidia-dra-driver-gpu", "https://helm.ngc.nvidia.com/nvidia", "25.12.0"),
    # gpu_platform/kubernetes/monitoring.py.
    PlatformRelease(
        "kube-prometheus-stack", "https://prometheus-community.github.io/helm-charts", "93.4.1"
    ),
    # gpu_platform/eks/cluster_autoscaler.py.
    PlatformRelease(
        "cluster-autoscaler",
        "https://kubernetes.github.io/autoscaler",
        "9.59.0",
        version_setting="autoscaler.chartVersion",
    ),
    # gpu_platform/kubernetes/kueue.py.
    PlatformRelease("kueue", "oci://registry.k8s.io/kueue/charts", "0.19.2"),
    # gpu_platform/eks/karpenter/controller.py: the two move together.
    *(
        PlatformRelease(
            chart,
            "oci://public.ecr.aws/karpenter",
            "1.14.1",
            version_setting="karpenter.chartVersion",
        )
        for chart in ("karpenter-crd", "karpenter")
    ),
)


RAW_MANIFEST_KEYS = frozenset({"extraObjects", "extraManifests", "extraResources"})
"""Values whose entries the pinned charts render as given, as manifests of their own, at any
depth (a subchart's values sit under its name), as a list or a map of them: gpu-operator
v26.7.0 and cluster-autoscaler 9.59.0 (charts/cluster-autoscaler/templates/extra-manifests.yaml)
`extraObjects`; kube-prometheus-stack `extraManifests` (templates/extra-objects.yaml, each entry
through `tpl`) and, in the versions that have it, `alertmanager.extraResources`
(templates/alertmanager/extraresources.yaml), its grafana subchart's `extraObjects`, its
kube-state-metrics and prometheus-node-exporter subcharts' `extraManifests`. Karpenter 1.14.1
and aws-efa-k8s-device-plugin v0.5.30 have none."""

PLATFORM_OBJECT_PREFIX = "gpu-platform-dcgm-metrics-"
"""The name prefix of the one object the platform gives a chart in `extraObjects`: the
ConfigMap of the GPU Operator's exporter metric set (gpu_platform/kubernetes/operator_values.py,
`DCGM_METRICS_CONFIG_MAP`), a v1 ConfigMap of `metadata.name`, `metadata.namespace` and
`data.metrics` alone."""
