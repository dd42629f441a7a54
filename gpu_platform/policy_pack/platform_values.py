"""The chart values the platform's own releases set, per pinned chart: a release of one of the
platform's charts (`platform_releases.PLATFORM_RELEASES`) is the platform's only when every
value it sets is at one of its chart's key paths here, and holds what the platform sets there
(`Allowed`): the constant where it always sets one, a strict pattern elsewhere. The charts
write most values into their YAML unescaped (`UNSAFE_TEXT`), so a value decides what a release
runs as much as its key does.

A chart at its version runs whatever its values make it run: cluster-autoscaler 9.59.0 renders
`initContainers`, `hostNetwork`, `extraVolumes` and `image.repository` into its Deployment
(charts/cluster-autoscaler/values.yaml, templates/deployment.yaml), and kube-prometheus-stack's
`namespaceOverride` keys move a subchart's objects to any namespace (prometheus-node-exporter
templates/_helpers.tpl, `prometheus-node-exporter.namespace`): its node-exporter DaemonSet runs
on the host's network and PID namespace wherever that is. So the keys the platform does not set
are the stack's, whoever sets them.

A key path is a tuple of map keys from the top of the values. Where the platform sets a list
(tolerations, relabelings, node selector terms), the path names the list, and what its entries
hold is not judged (the charts write them with `toYaml`, which quotes what it must), but for
`extraObjects`, whose entries the chart renders as manifests of their own
(`platform_releases.RAW_MANIFEST_KEYS`), and the dropped capabilities, which are `[ALL]`.

The GPU Operator's values are the platform's and the stack's `operator.overrides`, which the
program merges over them (gpu_platform/kubernetes/operator_values.py) under any top-level
component of the chart: so its table takes every key under those components, but
`namespaceOverride` and the raw-manifest keys at any depth, and a string holding `UNSAFE_TEXT`
anywhere but below the key paths the chart renders with `toYaml` (`ChartValues.whole`, derived
from the chart's templates by derive_yaml_values.py), which the config loader refuses in
`operator.overrides` too (gpu_platform/config/operator_rules.py). That holds for the release
the platform declares alone: of the name it gives it, in a namespace the stack's policy config
exempts (`exemptNamespaces`, where the operator's privileged pods run); another release of the
chart is judged by its table's key paths alone, like any other chart's. The chart's
ClusterRole is named `gpu-operator` whatever the release (gpu-operator v26.7.0
deployments/gpu-operator/templates/clusterrole.yaml), and Helm refuses an object another
release owns, so whichever release installs first holds the cluster: name and namespace only
narrow what is taken wholesale.

tests/gpu_platform/policy_pack/test_platform_values.py derives every key path and value the
program sets, for the committed stacks and for configs that turn every optional release on,
and holds this table to them both ways: every path it sets is here, every path here is set, and
every value it sets is one its path allows.

This module imports nothing of the pack's or the platform's: the pack runs it as its own
process, and the config loader reads `FOREIGN_ANYWHERE`, `IMAGE_TAG` and the GPU Operator's
table from it.
"""

import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

KeyPath = tuple[str, ...]
Place = tuple[str | int, ...]
"""Where a value sits in a chart's values: map keys, and list indices where it is in a list."""

FOREIGN_ANYWHERE = frozenset({"namespaceOverride"})
"""Keys that move a chart's (or its subchart's) objects out of the release's namespace, into
any other: kube-prometheus-stack 93.4.1 and its subcharts, and the GPU Operator's
node-feature-discovery 0.19.0 subchart, take one. Foreign at any depth but where a chart's table
lists it (kube-prometheus-stack's `prometheus-node-exporter.namespaceOverride`, the namespace
the platform gives node-exporter: gpu_platform/kubernetes/monitoring.py)."""

# The charts write scalars into their YAML as they are, unquoted or inside a quoted scalar:
# cluster-autoscaler 9.59.0 templates/deployment.yaml `image: "{{ .Values.image.repository
# }}:{{ .Values.image.tag }}"` (line 63), `- --{{ $key }}={{ $value }}` for `extraArgs` (line
# 138), `tpl` on `awsRegion` and `autoDiscovery.clusterName`; Karpenter 1.14.1's controller
# image (tag and digest, unquoted) and `settings.*` through `tpl`; prometheus-node-exporter's
# `namespace:` from `namespaceOverride`, unquoted. A line break or a quote closes the scalar and
# what follows is YAML of the value's own (another container, privileged); `{{` is a template
# wherever the chart runs `tpl`; `---` on a line of its own starts another object. YAML breaks
# lines at NEL, LS and PS as well as at CR and LF (go-yaml's `is_break`, the libyaml port Helm
# and Kubernetes parse with; YAML 1.1's b-char), so all five count.
# A backslash before the closing quote of a double-quoted scalar (gpu-operator v26.7.0
# templates/operator.yaml writes the validator's and driver manager's images so) escapes it.
LINE_BREAKS = "\n\r\x85\u2028\u2029"
UNSAFE_TEXT = re.compile(rf'[{LINE_BREAKS}"\\]|\{{\{{|---')


@dataclass(frozen=True)
class Allowed:
    """What a value at one key path of the platform's may hold."""

    holds: Callable[[Any, str | None], bool]
    """Whether a value is allowed, given the release's namespace, which some values follow
    (None while it is not known, at preview)."""
    means: str
    """What is allowed, as a message says it."""


def _same(value: Any, constant: Any) -> bool:
    """`value` is `constant`, as the engine sends properties: numbers as floats, a bool never
    the number 0 or 1."""
    if isinstance(constant, bool) or isinstance(value, bool):
        return value is constant
    if isinstance(constant, int | float):
        return isinstance(value, int | float) and value == constant
    if isinstance(constant, tuple):
        return (
            isinstance(value, Sequence)
            and not isinstance(value, str)
            and len(value) == len(constant)
            and all(_same(value[i], c) for i, c in enumerate(constant))
        )
    return isinstance(value, str) and value == constant


def equal(constant: Any) -> Allowed:
    """The one value the platform sets there (a list as a tuple)."""
    shown = json.dumps(list(constant) if isinstance(constant, tuple) else constant)
    return Allowed(lambda value, _: _same(value, constant), f"only {shown}")


def matching(pattern: str, what: str) -> Allowed:
    """A string matching `pattern` whole, and none a chart's template would read as YAML of its
    own (`UNSAFE_TEXT`)."""
    compiled = re.compile(pattern)

    def holds(value: Any, _: str | None) -> bool:
        return (
            isinstance(value, str)
            and compiled.fullmatch(value) is not None
            and not UNSAFE_TEXT.search(value)
        )

    return Allowed(holds, what)


def one_of(*choices: str) -> Allowed:
    return Allowed(lambda value, _: value in choices, f"one of {', '.join(choices)}")


ANY_BOOL = Allowed(lambda value, _: isinstance(value, bool), "true or false")
LIST = Allowed(
    lambda value, _: isinstance(value, Sequence) and not isinstance(value, str),
    "a list (the chart writes it with toYaml, which quotes what it must)",
)
# Helm's `indent` indents after each "\n" alone, so any other line break YAML knows ends the
# block scalar.
BLOCK_TEXT = Allowed(
    lambda value, _: (
        isinstance(value, str)
        and "{{" not in value
        and not re.search(f"[{LINE_BREAKS.removeprefix(chr(10))}]", value)
    ),
    "a string the chart indents as a block scalar of its own, its lines broken by \\n alone",
)
IMAGE_TAG = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
r"""An image tag as an image reference spells it (distribution/reference regexp.go, `tag`:
`[\w][\w.-]{0,127}`, Go's `\w` being ASCII): no `+`, so a SemVer build (`v1.35.2+build.1`)
is no tag. The config loader holds the tags a stack sets to it too."""
# With the digest the platform adds after the tag where the chart renders `<repository>:<tag>`
# alone.
TAG = matching(rf"{IMAGE_TAG}(@sha256:[0-9a-f]{{64}})?", "an image tag, @sha256:<digest> after it")
DIGEST = matching(r"(sha256:)?[0-9a-f]{64}", "a sha256 digest")
GO_DURATION = matching(r"[0-9]{1,4}m[0-9]{1,2}s", "a duration in minutes and seconds (47m0s)")
QUANTITY = matching(r"[0-9]+(\.[0-9]+)?(m|[KMGTPE]i?)?", "a resource quantity (100m, 1Gi)")
PERCENT = matching(r"[0-9]{1,3}%", "a percentage (25%)")
# EKS CreateCluster's `name` (EKS API reference): what an EKS cluster may be named.
EKS_CLUSTER = matching(r"[0-9A-Za-z][A-Za-z0-9_-]{0,99}", "an EKS cluster's name")
AWS_REGION = matching(r"[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-[0-9]", "an AWS region (us-east-1)")
# SQS CreateQueue `QueueName`: up to 80 letters, digits, hyphens and underscores.
SQS_QUEUE = matching(r"[A-Za-z0-9_-]{1,80}", "an SQS queue's name")
STACK_MARK = matching(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", "<project>/<stack>")
NODE_EXPORTER_NAMESPACE = Allowed(
    lambda value, namespace: (
        isinstance(value, str) and (namespace is None or value == f"{namespace}-node-exporter")
    ),
    "the namespace the platform gives node-exporter: the release's own namespace followed by "
    "-node-exporter",
)
ANY = Allowed(lambda value, _: True, "any value")
# The labels kube-state-metrics exports (gpu_platform/kubernetes/monitoring.py): the node
# validation labels (gpu_platform/kubernetes/node_validation/names.py, `VALIDATION_LABELS`) and
# the pool label on `kube_node_labels`, and the stack's `monitoring.teamLabel` on
# `kube_namespace_labels`. The kube-state-metrics chart joins the list unquoted into an argument
# (templates/deployment.yaml, `--metric-labels-allowlist={{ .Values.metricLabelsAllowlist |
# join "," }}`), so its entries are judged as well: the node entry the platform sets, and a
# namespace entry of one label key (Kubernetes' qualified name: no `,`, `]` or space, which
# would end the entry).
_NODE_LABELS_ENTRY = (
    "nodes=[gpu-platform.io/validation,gpu-platform.io/validation-failed-check,"
    "gpu-platform.io/validated-driver,gpu-platform.io/validated-release,"
    "gpu-platform.io/validation-check.gpu-count,"
    "gpu-platform.io/validation-check.driver,"
    "gpu-platform.io/validation-check.ecc,"
    "gpu-platform.io/validation-check.memory,"
    "gpu-platform.io/validation-check.pcie,"
    "gpu-platform.io/validation-check.nvlink,"
    "gpu-platform.io/validation-check.dcgm-diag,"
    "gpu-platform.io/validation-check.nccl-bandwidth,"
    "gpu-platform.io/validation-check.efa,gpu-platform.io/revalidating,gpu-platform.io/pool,"
    "nvidia.com/gpu-driver-upgrade-state]"
)
_NAMESPACE_LABEL_ENTRY = re.compile(
    r"namespaces=\[([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?\]"
)
_KUBE_STATE_METRICS_LABELS = Allowed(
    lambda value, _: (
        isinstance(value, Sequence)
        and not isinstance(value, str)
        and len(value) == 2
        and value[0] == _NODE_LABELS_ENTRY
        and isinstance(value[1], str)
        and _NAMESPACE_LABEL_ENTRY.fullmatch(value[1]) is not None
    ),
    f'[{json.dumps(_NODE_LABELS_ENTRY)}, "namespaces=[<one label key>]"]',
)


def unsafe_scalars(values: Any, place: Place, whole: frozenset[KeyPath]) -> Iterator[Place]:
    """Each place in `values` (which sits at `place`) whose string, or key, a chart writing it
    as it is would read as YAML of its own (`UNSAFE_TEXT`), but for what lies below the key
    paths in `whole`, which the chart renders whole (`toYaml`, which quotes what it must)."""
    keys = tuple(step for step in place if isinstance(step, str))
    if any(keys[: len(path)] == path for path in whole):
        return
    if isinstance(values, str):
        if UNSAFE_TEXT.search(values):
            yield place
    elif isinstance(values, Mapping):
        for key, value in values.items():
            if UNSAFE_TEXT.search(str(key)):
                yield (*place, str(key))
            else:
                yield from unsafe_scalars(value, (*place, str(key)), whole)
    elif isinstance(values, Sequence):
        for i, value in enumerate(values):
            yield from unsafe_scalars(value, (*place, i), whole)


SCALAR_TEXT = (
    "no line break, '\"', '\\', '{{' or '---' where the chart writes the value into its YAML as"
    " it is (any key but those it renders with toYaml)"
)


def _rendered_whole(chart: str, version: str) -> frozenset[KeyPath]:
    """The key paths of `chart` at `version` whose values its templates render whole, as
    derive_yaml_values.py writes them beside this module."""
    listed = (Path(__file__).parent / f"{chart}-{version}.yaml-values.txt").read_text()
    return frozenset(tuple(line.split(".")) for line in listed.split())


def _paths(*entries: tuple[str | KeyPath, Allowed]) -> Mapping[KeyPath, Allowed]:
    """Key paths written `a.b.c`, or as a tuple where a key holds a dot, each with its values."""
    return {(p if isinstance(p, tuple) else tuple(p.split("."))): a for p, a in entries}


@dataclass(frozen=True)
class ChartValues:
    paths: Mapping[KeyPath, Allowed]
    """The key paths the platform sets, each with the values it may hold there."""
    components: frozenset[str] = field(default_factory=frozenset)
    """Top-level components of the chart under which every key path is the stack's setting the
    platform merges in (the GPU Operator's `operator.overrides`), in the release `release`
    names alone."""
    release: str | None = None
    """The name the platform gives its release of the chart, where it has `components`: only
    a release of that name, in a namespace the stack's policy config exempts, has its
    components taken wholesale."""
    whole: frozenset[KeyPath] = frozenset()
    """Key paths under `components` whose values the chart renders whole (`toYaml`): every
    other string under them, written as it is, may hold no `UNSAFE_TEXT`."""

    def without_components(self) -> "ChartValues":
        """This table for a release that is not the one the platform names."""
        return ChartValues(self.paths)

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

    def allowed(self, path: KeyPath) -> Allowed:
        """What a value at `path`, one the platform sets, may hold."""
        if path not in self.paths and path[0] in self.components:
            return Allowed(
                lambda value, _: next(unsafe_scalars(value, path, self.whole), None) is None,
                SCALAR_TEXT,
            )
        return self.paths.get(path, ANY)


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
# gpu_platform/kubernetes/helm_release.py, `DAEMONSET_MAX_UNAVAILABLE`.
_ROLLOUT = PERCENT

PLATFORM_VALUES: Mapping[str, ChartValues] = {
    # gpu_platform/kubernetes/gpu_operator.py and operator_values.py.
    "gpu-operator": ChartValues(
        _paths(("extraObjects", LIST)),
        # gpu_platform/kubernetes/gpu_operator.py, `RELEASE_NAME`.
        release="gpu-operator",
        # The chart's templates at the version gpu_platform/versions.py pins: clusterpolicy.yaml
        # writes `driver.repository`, `image`, `version` and the like unquoted, and renders
        # `driver.env`, `devicePlugin.config.data` (in plugin_config.yaml) and the like with
        # toYaml.
        whole=_rendered_whole("gpu-operator", "v26.7.0"),
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
            (
                "image.repository",
                equal("602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-efa-k8s-device-plugin"),
            ),
            ("image.tag", TAG),
            (("nodeSelector", "gpu-platform.io/efa"), equal("true")),
            ("tolerations", LIST),
            ("updateStrategy.rollingUpdate.maxUnavailable", _ROLLOUT),
        )
    ),
    # gpu_platform/kubernetes/dra_driver.py.
    "nvidia-dra-driver-gpu": ChartValues(
        _paths(
            ("gpuResourcesEnabledOverride", equal(True)),
            ("image.repository", equal("nvcr.io/nvidia/k8s-dra-driver-gpu")),
            ("image.tag", TAG),
            (
                "kubeletPlugin.affinity.nodeAffinity"
                ".requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms",
                LIST,
            ),
            ("kubeletPlugin.tolerations", LIST),
            ("kubeletPlugin.updateStrategy.rollingUpdate.maxUnavailable", _ROLLOUT),
            ("resourceApiVersion", equal("resource.k8s.io/v1")),
            ("resources.computeDomains.enabled", equal(False)),
            ("resources.gpus.enabled", equal(True)),
        )
    ),
    # gpu_platform/kubernetes/monitoring.py.
    "kube-prometheus-stack": ChartValues(
        _paths(
            ("grafana.adminPassword", equal("")),
            ("grafana.sidecar.dashboards.enabled", equal(True)),
            ("grafana.sidecar.dashboards.label", equal("grafana_dashboard")),
            ("grafana.sidecar.dashboards.labelValue", equal("1")),
            ("kube-state-metrics.metricLabelsAllowlist", _KUBE_STATE_METRICS_LABELS),
            ("prometheus-node-exporter.namespaceOverride", NODE_EXPORTER_NAMESPACE),
            ("prometheus-node-exporter.tolerations", LIST),
            ("prometheus-node-exporter.updateStrategy.rollingUpdate.maxUnavailable", _ROLLOUT),
            *((path, DIGEST) for path in _PROMETHEUS_STACK_DIGESTS),
        )
    ),
    # gpu_platform/eks/cluster_autoscaler.py and autoscaler_settings.py.
    "cluster-autoscaler": ChartValues(
        _paths(
            ("autoDiscovery.clusterName", EKS_CLUSTER),
            ("awsRegion", AWS_REGION),
            ("cloudProvider", equal("aws")),
            ("containerSecurityContext.allowPrivilegeEscalation", equal(False)),
            ("containerSecurityContext.capabilities.drop", equal(("ALL",))),
            ("containerSecurityContext.readOnlyRootFilesystem", equal(True)),
            # templates/priority-expander-configmap.yaml: under `priorities: |-`, every line
            # indented by `indent 4`, so no line of it leaves the block scalar.
            ("expanderPriorities", BLOCK_TEXT),
            ("extraArgs.balance-similar-node-groups", ANY_BOOL),
            ("extraArgs.balancing-ignore-label", equal("nodegroup-name")),
            # Pools that scale up atomically (`aws.atomicScaleUp`).
            ("extraArgs.enable-provisioning-requests", equal(True)),
            # Pools whose GPUs are DRA devices (`allocation: dra`).
            ("extraArgs.enable-dynamic-resource-allocation", equal(True)),
            # The stack's `autoscaler.expander` (gpu_platform/config/capacity.py).
            (
                "extraArgs.expander",
                one_of("priority,least-waste", "least-waste", "most-pods", "random"),
            ),
            # A validated node's start, as the platform stretches it: a Go duration as
            # gpu_platform/kubernetes/node_validation/duration.py writes one (`47m0s`).
            ("extraArgs.max-node-provision-time", GO_DURATION),
            ("extraArgs.max-node-startup-time", GO_DURATION),
            # The cooldown after a scale-up, never longer than the GPU nodes' unneeded time
            # (gpu_platform/idle_billing.py): `1m0s` to `10m0s`.
            ("extraArgs.scale-down-delay-after-add", GO_DURATION),
            ("image.repository", equal("registry.k8s.io/autoscaling/cluster-autoscaler")),
            ("image.tag", TAG),
            (
                ("podAnnotations", "cluster-autoscaler.kubernetes.io/safe-to-evict"),
                equal("false"),
            ),
            ("rbac.serviceAccount.create", equal(True)),
            ("rbac.serviceAccount.name", equal("cluster-autoscaler")),
            ("resources.limits.memory", QUANTITY),
            ("resources.requests.cpu", QUANTITY),
            ("resources.requests.memory", QUANTITY),
            ("securityContext.fsGroup", equal(65534)),
            ("securityContext.runAsGroup", equal(65534)),
            ("securityContext.runAsNonRoot", equal(True)),
            ("securityContext.runAsUser", equal(65534)),
            ("securityContext.seccompProfile.type", equal("RuntimeDefault")),
        )
    ),
    # gpu_platform/eks/karpenter/controller.py.
    "karpenter-crd": ChartValues(
        _paths((("additionalAnnotations", "gpu-platform.io/stack"), STACK_MARK))
    ),
    # gpu_platform/kubernetes/kueue.py. The chart parses the configuration with `fromYaml`
    # and writes it back with `toYaml` (charts/kueue/templates/manager/manager-config.yaml at
    # 0.19.2).
    "kueue": ChartValues(
        _paths(
            ("controllerManager.manager.image.pullPolicy", equal("IfNotPresent")),
            ("controllerManager.manager.image.repository", equal("registry.k8s.io/kueue/kueue")),
            ("controllerManager.manager.image.tag", TAG),
            # Whether the stack's pools scale up through ProvisioningRequests, so that the
            # manager restarts where that changes (templates/manager/manager.yaml, `toYaml`).
            (
                (
                    "controllerManager",
                    "manager",
                    "podAnnotations",
                    "gpu-platform.io/provisioning-requests",
                ),
                one_of("enabled", "disabled"),
            ),
            ("controllerManager.podDisruptionBudget.enabled", equal(True)),
            ("controllerManager.podDisruptionBudget.minAvailable", equal(1)),
            ("controllerManager.replicas", equal(2)),
            ("controllerManager.topologySpreadConstraints", LIST),
            ("managerConfig.controllerManagerConfigYaml", BLOCK_TEXT),
        )
    ),
    "karpenter": ChartValues(
        _paths(
            (
                "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
                ".nodeSelectorTerms",
                LIST,
            ),
            ("controller.image.digest", DIGEST),
            ("controller.image.repository", equal("public.ecr.aws/karpenter/controller")),
            ("controller.image.tag", TAG),
            ("controller.resources.limits.cpu", QUANTITY),
            ("controller.resources.limits.memory", QUANTITY),
            ("controller.resources.requests.cpu", QUANTITY),
            ("controller.resources.requests.memory", QUANTITY),
            ("serviceAccount.name", equal("karpenter")),
            ("settings.clusterName", EKS_CLUSTER),
            ("settings.enableZonalShift", equal(False)),
            ("settings.interruptionQueue", SQS_QUEUE),
        )
    ),
}
"""Each pinned chart's table, by the chart's name."""
