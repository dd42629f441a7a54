"""The chart values the platform's own releases set, per pinned chart: a release of one of the
platform's charts (`platform_releases.PLATFORM_RELEASES`) is the platform's only when every
value it sets is at one of its chart's key paths here, and each image repository the platform
sets is the one it pins.

A chart at its version runs whatever its values make it run: cluster-autoscaler 9.59.0 renders
`initContainers`, `hostNetwork`, `extraVolumes` and `image.repository` into its Deployment
(charts/cluster-autoscaler/values.yaml, templates/deployment.yaml), and kube-prometheus-stack's
`namespaceOverride` keys move a subchart's objects to any namespace (prometheus-node-exporter
templates/_helpers.tpl, `prometheus-node-exporter.namespace`): its node-exporter DaemonSet runs
on the host's network and PID namespace wherever that is. So the keys the platform does not set
are the stack's, whoever sets them.

A key path is a tuple of map keys from the top of the values. Where the platform sets a list
(tolerations, env, relabelings, node selector terms, dropped capabilities), the path names the
list, and what its entries hold is not judged, but for `extraObjects`, whose entries the chart
renders as manifests of their own (`platform_releases.RAW_MANIFEST_KEYS`).

The GPU Operator's values are the platform's and the stack's `operator.overrides`, which the
program merges over them (gpu_platform/kubernetes/operator_values.py) under any top-level
component of the chart: so its table takes every key under those components, but
`namespaceOverride` and the raw-manifest keys at any depth, which the config loader refuses in
`operator.overrides` too (gpu_platform/config/operator_rules.py). A second release of the
chart beside the platform's cannot be installed: the chart's ClusterRole is named
`gpu-operator` whatever the release (gpu-operator v26.7.0
deployments/gpu-operator/templates/clusterrole.yaml), and Helm refuses an object another release
owns.

tests/gpu_platform/policy_pack/test_platform_values.py derives every key path the program sets,
for the committed stacks and for configs that turn every optional release on, and holds this
table to them both ways.

This module imports nothing of the pack's or the platform's: the pack runs it as its own
process, and the config loader reads `FOREIGN_ANYWHERE` from it.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field

KeyPath = tuple[str, ...]

FOREIGN_ANYWHERE = frozenset({"namespaceOverride"})
"""Keys that move a chart's (or its subchart's) objects out of the release's namespace, into
any other: kube-prometheus-stack 93.4.1 and its subcharts, and the GPU Operator's
node-feature-discovery 0.19.0 subchart, take one. Foreign at any depth but where a chart's table
lists it (kube-prometheus-stack's `prometheus-node-exporter.namespaceOverride`, the namespace
the platform gives node-exporter: gpu_platform/kubernetes/monitoring.py)."""


def _paths(*dotted: str | KeyPath) -> frozenset[KeyPath]:
    """Key paths written `a.b.c`, or as a tuple where a key holds a dot."""
    return frozenset(p if isinstance(p, tuple) else tuple(p.split(".")) for p in dotted)


@dataclass(frozen=True)
class ChartValues:
    paths: frozenset[KeyPath]
    """The key paths the platform sets."""
    images: Mapping[KeyPath, str] = field(default_factory=dict)
    """The image repository the platform pins, by the key path it is set at: a release setting
    another there runs another image."""
    components: frozenset[str] = frozenset()
    """Top-level components of the chart under which every key path is the stack's setting the
    platform merges in (the GPU Operator's `operator.overrides`)."""

    def sets(self, path: KeyPath) -> bool:
        """Whether `path` is one the platform's release of the chart may set."""
        if path in self.paths:
            return True
        return (
            len(path) > 1 and path[0] in self.components and not FOREIGN_ANYWHERE.intersection(path)
        )

    def leads_to(self, path: KeyPath) -> bool:
        """Whether some key path the platform sets lies below `path`."""
        if path[0] in self.components:
            return True
        return any(len(e) > len(path) and e[: len(path)] == path for e in self.paths)


_AUTOSCALER_IMAGE = ("image", "repository")
_EFA_IMAGE = ("image", "repository")
_KARPENTER_IMAGE = ("controller", "image", "repository")

# kube-prometheus-stack's images the platform runs by the digest the lock holds, each by the
# key its template reads it from (gpu_platform/kubernetes/chart_images/prometheus_stack.py,
# `PINNED`): a digest names one image of the chart's own repository and tag, never another.
_PROMETHEUS_STACK_DIGESTS = (
    "alertmanager.alertmanagerSpec.image.sha",
    "prometheus.prometheusSpec.image.sha",
    "prometheusOperator.image.sha",
    "prometheusOperator.prometheusConfigReloader.image.sha",
    "prometheusOperator.thanosImage.sha",
    "prometheusOperator.admissionWebhooks.patch.image.sha",
    "prometheusOperator.admissionWebhooks.deployment.image.sha",
    "kube-state-metrics.image.sha",
    "prometheus-node-exporter.image.digest",
    "grafana.image.sha",
    "grafana.sidecar.image.sha",
)

PLATFORM_VALUES: Mapping[str, ChartValues] = {
    # gpu_platform/kubernetes/gpu_operator.py and operator_values.py.
    "gpu-operator": ChartValues(
        _paths("extraObjects"),
        # The top-level maps of deployments/gpu-operator/values.yaml at v26.7.0.
        components=frozenset(
            {
                "ccManager",
                "cdi",
                "clusterPolicy",
                "daemonsets",
                "dcgm",
                "dcgmExporter",
                "devicePlugin",
                "draDriver",
                "driver",
                "gdrcopy",
                "gds",
                "gfd",
                "gpuCluster",
                "hostPaths",
                "kataManager",
                "kataSandboxDevicePlugin",
                "mig",
                "migManager",
                "nfd",
                "node-feature-discovery",
                "nodeStatusExporter",
                "operator",
                "platform",
                "psa",
                "sandboxDevicePlugin",
                "sandboxWorkloads",
                "toolkit",
                "validator",
                "vfioManager",
                "vgpuDeviceManager",
                "vgpuManager",
            }
        ),
    ),
    # gpu_platform/eks/efa_device_plugin.py.
    "aws-efa-k8s-device-plugin": ChartValues(
        _paths(
            "image.repository",
            "image.tag",
            ("nodeSelector", "gpu-platform.io/efa"),
            "tolerations",
            "updateStrategy.rollingUpdate.maxUnavailable",
        ),
        {_EFA_IMAGE: "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-efa-k8s-device-plugin"},
    ),
    # gpu_platform/kubernetes/monitoring.py.
    "kube-prometheus-stack": ChartValues(
        _paths(
            "grafana.adminPassword",
            "grafana.sidecar.dashboards.enabled",
            "grafana.sidecar.dashboards.label",
            "grafana.sidecar.dashboards.labelValue",
            "prometheus-node-exporter.namespaceOverride",
            "prometheus-node-exporter.tolerations",
            "prometheus-node-exporter.updateStrategy.rollingUpdate.maxUnavailable",
            *_PROMETHEUS_STACK_DIGESTS,
        )
    ),
    # gpu_platform/eks/cluster_autoscaler.py.
    "cluster-autoscaler": ChartValues(
        _paths(
            "autoDiscovery.clusterName",
            "awsRegion",
            "cloudProvider",
            "containerSecurityContext.allowPrivilegeEscalation",
            "containerSecurityContext.capabilities.drop",
            "containerSecurityContext.readOnlyRootFilesystem",
            "expanderPriorities",
            "extraArgs.balance-similar-node-groups",
            "extraArgs.balancing-ignore-label",
            "extraArgs.expander",
            "image.repository",
            "image.tag",
            ("podAnnotations", "cluster-autoscaler.kubernetes.io/safe-to-evict"),
            "rbac.serviceAccount.create",
            "rbac.serviceAccount.name",
            "resources.limits.memory",
            "resources.requests.cpu",
            "resources.requests.memory",
            "securityContext.fsGroup",
            "securityContext.runAsGroup",
            "securityContext.runAsNonRoot",
            "securityContext.runAsUser",
            "securityContext.seccompProfile.type",
        ),
        {_AUTOSCALER_IMAGE: "registry.k8s.io/autoscaling/cluster-autoscaler"},
    ),
    # gpu_platform/eks/karpenter/controller.py.
    "karpenter-crd": ChartValues(_paths(("additionalAnnotations", "gpu-platform.io/stack"))),
    "karpenter": ChartValues(
        _paths(
            "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
            ".nodeSelectorTerms",
            "controller.image.digest",
            "controller.image.repository",
            "controller.image.tag",
            "controller.resources.limits.cpu",
            "controller.resources.limits.memory",
            "controller.resources.requests.cpu",
            "controller.resources.requests.memory",
            "serviceAccount.name",
            "settings.clusterName",
            "settings.enableZonalShift",
            "settings.interruptionQueue",
        ),
        {_KARPENTER_IMAGE: "public.ecr.aws/karpenter/controller"},
    ),
}
"""Each pinned chart's table, by the chart's name."""
