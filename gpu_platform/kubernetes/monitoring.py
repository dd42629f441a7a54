"""GPU alerts and dashboards on the Prometheus Operator, and optionally the Prometheus stack.

The DCGM exporter that the GPU Operator runs on every GPU node is what everything here reads.
The operator's own ServiceMonitor gets it scraped; this component adds:

- the alert rules (`alerts/gpu-alerts.yaml`) as a PrometheusRule: a GPU a pod holds but does not
  use, GPU memory nearly full, the exporter down, missing or without the health metrics, and GPU
  health: XIDs by the action NVIDIA's XID catalog gives them (`alerts/xid-classes.json`),
  uncorrectable ECC errors, memory awaiting repair or out of spare rows, NVLink errors, PCIe
  replays above DCGM's limit, GPUs the device plugin took out of service and throttling while
  busy, each with its section of the runbook, docs/gpu-health.md;
- the Grafana dashboard (`dashboards/gpus.json`) as a ConfigMap that Grafana's dashboard sidecar
  loads;
- with `installPrometheusStack`, a pinned kube-prometheus-stack (Prometheus Operator, Prometheus,
  Alertmanager, Grafana) in a namespace of its own, which must exist before anything uses the
  Prometheus Operator's resource types;
- with `googleManagedPrometheus` (GKE), a ClusterPodMonitoring so that Google Cloud Managed
  Service for Prometheus scrapes the exporter too, under the same `job`, and the rules' recording
  rules as ClusterRules, which Managed Prometheus evaluates itself.

Both content files hold `@{name}` placeholders, filled from the stack's monitoring settings by
`gpu_alert_rules` and `gpu_dashboard`; the alert rules' promtool tests use the same rendering.
"""

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from string import Template
from typing import Any, cast

import pulumi
from pulumi_kubernetes import apiextensions, core, helm, meta, networking

from gpu_platform import yaml_documents
from gpu_platform.config import MonitoringSpec, Platform
from gpu_platform.kubernetes import helm_release
from gpu_platform.kubernetes.alerts import ALERTED_CLASSES, xid_classes
from gpu_platform.kubernetes.chart_images.prometheus_stack import with_digests
from gpu_platform.kubernetes.gpu_hours import (
    GPU_HOURS_GROUP,
    PoolGpuShare,
    pool_gpu_shares,
    pool_share_rules,
)
from gpu_platform.kubernetes.idle_gpu_pods import REAPER_NAMESPACE
from gpu_platform.kubernetes.node_validation.duration import until_validated_seconds
from gpu_platform.kubernetes.node_validation.names import (
    CHECK_LABEL_PREFIX,
    CHECK_LABELS,
    FAILED_CHECK_LABEL,
    RESULT_LABEL,
    VALIDATION_LABELS,
    VALIDATION_TAINT,
)
from gpu_platform.kubernetes.node_validation.report import DRIVER_UPGRADING, UPGRADE_STATE_LABEL
from gpu_platform.kubernetes.operator_values import extra_taints, taint_toleration
from gpu_platform.kubernetes.pod_security import pod_security_labels
from gpu_platform.node_identity import POOL_LABEL, ResolvedPool
from gpu_platform.secrets import secret_if
from gpu_platform.versions import KUBE_PROMETHEUS_STACK_CHART

ALERT_RULES_FILE = Path(__file__).parent / "alerts" / "gpu-alerts.yaml"
DASHBOARD_FILE = Path(__file__).parent / "dashboards" / "gpus.json"
RUNBOOKS = "docs/gpu-health.md"
"""Where the alerts' `runbook_url` points, with a section per alert (`#<alert name in lower
case>`): the runbook's path in this repository, since the platform does not know where its users
publish it. Alertmanager and Grafana show it as it is."""
PER_GPU_LABELS = ("hostname", "gpu", "UUID", "modelName", "pci_bus_id")
"""The exporter's labels that name one GPU: the node, its index there, its UUID, model and PCI
address. The node is `hostname` from exporter 4.6.0-4.8.3 (the GPU Operator v26.7.0's) and
`Hostname` before (dcgm-exporter#655): the rules copy the old name into the new one with
`HOSTNAME_FROM_OLD_LABEL` before they aggregate over these, so that one GPU's series from both
exporters, which overlap while an upgrade replaces the exporter, make one alert."""
HOSTNAME_FROM_OLD_LABEL = '"hostname", "$1", "Hostname", "(.+)"'
"""The arguments of `label_replace` after the vector: `hostname` set to `Hostname` where a
series has that label (`.+` does not match a missing one, which leaves the series as it is)."""
KUBE_STATE_GPU_RESOURCES = "nvidia_com_gpu|nvidia_com_gpu_shared|nvidia_com_mig_.+"
"""The GPU resources a node advertises (`nvidia.com/gpu`, `nvidia.com/gpu.shared` on shared
pools, `nvidia.com/mig-<slice>` on MIG pools) as kube-state-metrics names them in its `resource`
label: every character but letters, digits and `_` as `_` (internal/store/node.go,
sanitizeLabelName)."""

DCGM_EXPORTER = "nvidia-dcgm-exporter"
"""The name the GPU Operator gives the exporter's DaemonSet, Service and ServiceMonitor, the
`app` label of its pods, and so (the ServiceMonitor's job label is `app`) its scrape job."""
GKE_DCGM_EXPORTER = "nvidia-dcgm-exporter-gke"
"""The DaemonSet, Service and pods' `app` of the exporter on the nodes whose GPUs GKE's device
plugin serves (gke_dcgm_exporter.py); its Service carries `app: nvidia-dcgm-exporter`, so its
series have the same job."""
DCGM_EXPORTER_PORT = 9400
DASHBOARD_SIDECAR_LABEL = ("grafana_dashboard", "1")
"""The label kube-prometheus-stack's Grafana sidecar loads dashboard ConfigMaps by, from every
namespace (the chart's default, set explicitly when the stack is installed here)."""
PROMETHEUS_RULE_NAME = "gpu-platform-gpus"
MANAGED_RECORDING_RULES_NAME = "gpu-platform-gpus-recorded"
DASHBOARD_CONFIG_MAP_NAME = "gpu-platform-gpu-dashboard"
GMP_SCRAPE_INTERVAL = "30s"
"""The exporter refreshes its readings every 30 seconds; Managed Service for Prometheus bills by
sample, so scraping more often would cost more for repeated values."""


@dataclass
class GpuMonitoringArgs:
    monitoring: MonitoringSpec
    platform: Platform
    operator_namespace: str
    """The GPU Operator's namespace, where the DCGM exporter runs: the stack's
    `gpu-platform:operator.namespace`."""
    gpu_nodes: int = 0
    """The most GPU nodes the cluster can have (`helm_release.most_nodes` of the pools), which
    the Prometheus stack's wait grows with: its node-exporter runs on every node."""
    pools: Sequence[ResolvedPool] = field(default_factory=list)
    """The GPU pools, whose nodes' taints the Prometheus stack's node-exporter tolerates."""
    secret_labels: bool = False
    """`serviceMonitorLabels` came from a config key set as a secret: keep them secret."""
    protect: bool = False
    """Protect the Prometheus stack's namespace and release, where this installs them: deleting
    them loses the metrics Prometheus holds and the Prometheus Operator's CRDs, and with the
    CRDs every rule and monitor of the cluster."""


class GpuMonitoring(pulumi.ComponentResource):
    """The GPU alert rules and dashboard, and the Prometheus stack when asked to install it."""

    prometheus_operator: list[pulumi.Resource]
    """What must exist before anything uses the Prometheus Operator's resource types: the
    kube-prometheus-stack release when it is installed here, else nothing (the cluster has them)."""
    rule_names: pulumi.Output[list[str]]
    """The names of the alerts the PrometheusRule defines."""

    def __init__(
        self, name: str, args: GpuMonitoringArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__("gpu-platform:kubernetes:GpuMonitoring", name, None, opts)
        monitoring = args.monitoring
        self.prometheus_operator = []
        namespace: pulumi.Input[str] = monitoring.namespace
        if monitoring.install_prometheus_stack:
            namespace = self._stack_namespace(
                f"{name}-namespace", monitoring.namespace, "baseline", args.protect
            )
            node_exporter_namespace = self._stack_namespace(
                f"{name}-node-exporter-namespace",
                monitoring.node_exporter_namespace,
                "privileged",
                args.protect,
            )
            rollout = helm_release.Rollout.with_daemonset(
                helm_release.KUBE_PROMETHEUS_STACK_BASE_SECONDS, args.gpu_nodes
            )
            self.prometheus_operator = [
                self._prometheus_stack(
                    name,
                    namespace,
                    node_exporter_namespace,
                    rollout,
                    args.protect,
                    args.pools,
                    monitoring.team_label,
                )
            ]
            self._prometheus_ingress(name, monitoring.namespace, namespace)

        rules = gpu_alert_rules(
            monitoring,
            args.operator_namespace,
            pool_gpu_shares(args.pools),
            until_validated_seconds(pool.spec for pool in args.pools),
        )
        apiextensions.CustomResource(
            f"{name}-alerts",
            api_version="monitoring.coreos.com/v1",
            kind="PrometheusRule",
            metadata=meta.v1.ObjectMetaArgs(
                name=PROMETHEUS_RULE_NAME,
                namespace=namespace,
                labels=secret_if(args.secret_labels, dict(monitoring.service_monitor_labels)),
            ),
            spec=rules,
            opts=pulumi.ResourceOptions(parent=self, depends_on=self.prometheus_operator),
        )
        dashboard = gpu_dashboard(monitoring, args.operator_namespace)
        core.v1.ConfigMap(
            f"{name}-dashboard",
            metadata=meta.v1.ObjectMetaArgs(
                name=DASHBOARD_CONFIG_MAP_NAME,
                namespace=namespace,
                labels=dict([DASHBOARD_SIDECAR_LABEL]),
            ),
            data={f"{DASHBOARD_CONFIG_MAP_NAME}.json": dashboard},
            opts=pulumi.ResourceOptions(parent=self),
        )
        if monitoring.google_managed_prometheus:
            self._managed_prometheus_scrape(name)
            self._managed_prometheus_recording_rules(name, rules)

        self.rule_names = pulumi.Output.from_input(alert_names(rules))
        self.register_outputs({"rule_names": self.rule_names})

    def _stack_namespace(
        self, name: str, namespace_name: str, level: str, protect: bool
    ) -> pulumi.Output[str]:
        namespace = core.v1.Namespace(
            name,
            metadata=meta.v1.ObjectMetaArgs(name=namespace_name, labels=pod_security_labels(level)),
            opts=pulumi.ResourceOptions(parent=self, protect=protect),
        )
        # Taking the name from the Namespace makes what goes into it wait for it.
        return namespace.metadata.apply(lambda _: namespace_name)

    def _prometheus_stack(
        self,
        name: str,
        namespace: pulumi.Input[str],
        node_exporter_namespace: pulumi.Input[str],
        rollout: helm_release.Rollout,
        protect: bool,
        pools: Sequence[ResolvedPool],
        team_label: str,
    ) -> pulumi.Resource:
        chart = KUBE_PROMETHEUS_STACK_CHART
        return helm.v3.Release(
            f"{name}-prometheus-stack",
            helm.v3.ReleaseArgs(
                # The stack's Prometheus selects ServiceMonitors and PrometheusRules labelled
                # `release: <release name>`, which the config requires of serviceMonitorLabels.
                name=chart.name,
                chart=chart.name,
                version=chart.version,
                repository_opts=helm.v3.RepositoryOptsArgs(repo=chart.repository),
                namespace=namespace,
                create_namespace=False,
                values=prometheus_stack_values(node_exporter_namespace, pools, team_label),
                **rollout.release_args(),
            ),
            opts=pulumi.ResourceOptions(parent=self, protect=protect),
        )

    def _prometheus_ingress(
        self, name: str, namespace_name: str, namespace: pulumi.Input[str]
    ) -> None:
        """Who may reach the installed Prometheus: its own namespace (Grafana, Prometheus
        itself) on any port, and the idle GPU pod reaper's on the query port. Prometheus serves
        every tenant's series to anyone who asks, without authentication; Alertmanager, whose
        API takes silences without authentication, only its own namespace (Prometheus, Grafana
        and its replicas' cluster port)."""
        for component, spec in (
            ("prometheus", prometheus_ingress_spec(namespace_name)),
            ("alertmanager", alertmanager_ingress_spec(namespace_name)),
        ):
            networking.v1.NetworkPolicy(
                f"{name}-{component}-ingress",
                metadata=meta.v1.ObjectMetaArgs(name=f"{component}-ingress", namespace=namespace),
                spec=cast(Any, spec),
                opts=pulumi.ResourceOptions(parent=self),
            )

    def _managed_prometheus_scrape(self, name: str) -> None:
        # Cluster-scoped so that it does not wait for the operator's namespace, which the GPU
        # Operator component creates after this one.
        apiextensions.CustomResource(
            f"{name}-dcgm-exporter-scrape",
            api_version="monitoring.googleapis.com/v1",
            kind="ClusterPodMonitoring",
            # Managed Prometheus sets the series' `job` to the ClusterPodMonitoring's name
            # (prometheus-engine pkg/operator/apis/monitoring/v1/pod_config.go,
            # endpointScrapeConfig): named as the operator names the exporter's ServiceMonitor,
            # its series match the rules' `job="nvidia-dcgm-exporter"` as Prometheus's do.
            metadata=meta.v1.ObjectMetaArgs(name=DCGM_EXPORTER),
            spec={
                # The operator's exporter and, on GKE-shared nodes, the platform's.
                "selector": {
                    "matchExpressions": [
                        {
                            "key": "app",
                            "operator": "In",
                            "values": [DCGM_EXPORTER, GKE_DCGM_EXPORTER],
                        }
                    ]
                },
                "endpoints": [{"port": DCGM_EXPORTER_PORT, "interval": GMP_SCRAPE_INTERVAL}],
                # The exporter labels a GPU's series with the `pod`, `namespace` and `container`
                # of the workload holding it. By default the scrape sets those labels to the
                # exporter's own pod, and Prometheus renames the workload's to `exported_pod`
                # and so on; Managed Prometheus has no honorLabels. An empty list attaches none
                # of the scrape's pod labels (prometheus-engine pod_config.go,
                # ClusterPodMonitoring.endpointScrapeConfig; left out, the CRD's default lists
                # them all), so the alerts and dashboards read `pod` and `namespace` as they do
                # on the Prometheus stack.
                "targetLabels": {"metadata": []},
            },
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _managed_prometheus_recording_rules(self, name: str, rules: Mapping[str, Any]) -> None:
        # The recorded series exist only where something evaluates the rules: the
        # PrometheusRule reaches an in-cluster Prometheus, never Managed Service for
        # Prometheus, whose own rule evaluator reads ClusterRules (prometheus-engine
        # pkg/operator/apis/monitoring/v1/rules_types.go, the same groups of `record` and
        # `expr`). With them, a query frontend of Managed Prometheus as `prometheusUrl` answers
        # the idle pod enforcer's query on `gpu_platform:allocated_gpu_activity:percent`. Only
        # the recording rules: the alerts stay with the Prometheus Operator's Alertmanager.
        apiextensions.CustomResource(
            f"{name}-managed-recording-rules",
            api_version="monitoring.googleapis.com/v1",
            kind="ClusterRules",
            metadata=meta.v1.ObjectMetaArgs(name=MANAGED_RECORDING_RULES_NAME),
            spec=recording_rules(rules),
            opts=pulumi.ResourceOptions(parent=self),
        )


def recording_rules(rules: Mapping[str, Any]) -> dict[str, Any]:
    """The rules file's groups with their recording rules only; groups without one left out."""
    groups = [
        {**group, "rules": [rule for rule in group["rules"] if "record" in rule]}
        for group in rules["groups"]
    ]
    return {"groups": [group for group in groups if group["rules"]]}


# node-exporter's default tolerations (prometheus-node-exporter 4.56.1 values.yaml) let it onto
# every node tainted NoSchedule, but not NoExecute: a pool's NoExecute taints are added, each
# exactly. Helm replaces a list whole, so the default is restated.
_NODE_EXPORTER_TOLERATION = {"effect": "NoSchedule", "operator": "Exists"}


def prometheus_stack_values(
    node_exporter_namespace: pulumi.Input[str], pools: Sequence[ResolvedPool], team_label: str
) -> dict[str, Any]:
    """kube-prometheus-stack values: the chart's defaults but for Grafana's admin password, the
    dashboard sidecar's label (stated so that the dashboard ConfigMap keeps matching it),
    node-exporter's namespace, rolling update and tolerations of the GPU pools' taints, the
    labels kube-state-metrics exports (the namespaces' `team_label` among them), and the
    digest of each of the chart's images the lock holds one for (docs/lock.md)."""
    no_execute = [taint_toleration(t) for t in extra_taints(pools) if t.effect == "NoExecute"]
    label, value = DASHBOARD_SIDECAR_LABEL
    settings = {
        # node-exporter runs with the host's network and PID namespaces and mounts its root
        # filesystem to read the node's metrics: only `privileged` admits it. Every other pod of
        # the stack (operator, Prometheus, Alertmanager, Grafana, kube-state-metrics) needs no
        # host access, and stays under `baseline` in the stack's own namespace. The subchart's
        # `namespaceOverride` (kube-prometheus-stack's values.yaml) moves only the DaemonSet.
        # Its `updateStrategy` (maxUnavailable 1 in the prometheus-node-exporter chart) rolls a
        # quarter of the nodes at a time instead (helm_release.DAEMONSET_MAX_UNAVAILABLE).
        "prometheus-node-exporter": {
            "namespaceOverride": node_exporter_namespace,
            "updateStrategy": helm_release.daemonset_update_strategy(),
            "tolerations": [_NODE_EXPORTER_TOLERATION, *no_execute],
        },
        # kube-state-metrics exports no label it is not allowed (the chart's
        # `metricLabelsAllowlist`, empty by default, which it passes as
        # `--metric-labels-allowlist`): on `kube_node_labels` the validation labels, the pool's
        # and the GPU Operator's upgrade state (`NODE_LABELS`), which the node validation alerts
        # and the GPU-hour rules read; on `kube_namespace_labels` the team label, which the
        # GPU-hour rules read.
        "kube-state-metrics": {
            "metricLabelsAllowlist": [
                f"nodes=[{','.join(NODE_LABELS)}]",
                f"namespaces=[{team_label}]",
            ]
        },
        "grafana": {
            # The chart's default password is published in its values file; left empty, the
            # Grafana chart generates one into its Secret (`kube-prometheus-stack-grafana`).
            "adminPassword": "",
            "sidecar": {"dashboards": {"enabled": True, "label": label, "labelValue": value}},
        },
    }
    return with_digests(settings)


def gpu_alert_rules(
    monitoring: MonitoringSpec,
    operator_namespace: str,
    shares: Sequence[PoolGpuShare] = (),
    until_validated: int = 0,
) -> dict[str, Any]:
    """The alert rules file (`groups:`) with the stack's thresholds filled in, and the GPU-hour
    rules opened by what a unit of each pool's GPU resource is worth (`gpu_hours.py`);
    `until_validated`: the longest a new node of the stack's pools may take to be validated
    (`duration.until_validated_seconds`), which `GpuNodeNotValidated` waits for."""
    placeholders = _placeholders(monitoring, operator_namespace)
    # Whole minutes, rounded up; a stack that validates no node has no tainted node to wait on.
    placeholders["not_validated_minutes"] = str(max(-(-until_validated // 60), 1))
    rules = _fill(yaml_documents.load(ALERT_RULES_FILE.read_text()), placeholders)
    for group in rules["groups"]:
        if group["name"] == GPU_HOURS_GROUP:
            group["rules"] = [*pool_share_rules(shares), *group["rules"]]
    return cast(dict[str, Any], rules)


def gpu_dashboard(monitoring: MonitoringSpec, operator_namespace: str) -> str:
    """The Grafana dashboard JSON with the stack's thresholds filled in."""
    dashboard = json.loads(DASHBOARD_FILE.read_text())
    return json.dumps(_fill(dashboard, _placeholders(monitoring, operator_namespace)), indent=2)


def alert_names(rules: Mapping[str, Any]) -> list[str]:
    return [
        rule["alert"] for group in rules["groups"] for rule in group["rules"] if "alert" in rule
    ]


class _Placeholder(Template):
    delimiter = "@"


def _placeholders(monitoring: MonitoringSpec, operator_namespace: str) -> dict[str, str]:
    return {
        "exporter": DCGM_EXPORTER,
        "gke_exporter": GKE_DCGM_EXPORTER,
        "operator_namespace": operator_namespace,
        # A GPU a workload pod holds: see the header of alerts/gpu-alerts.yaml.
        "allocated": f'job="{DCGM_EXPORTER}", pod!="", namespace!="{operator_namespace}"',
        "idle_gpu_minutes": str(monitoring.idle_gpu_minutes),
        "idle_gpu_utilization_percent": str(monitoring.idle_gpu_utilization_percent),
        "framebuffer_full_percent": str(monitoring.framebuffer_full_percent),
        "per_gpu": ", ".join(PER_GPU_LABELS),
        "as_hostname": HOSTNAME_FROM_OLD_LABEL,
        "gpu_resources": KUBE_STATE_GPU_RESOURCES,
        "runbooks": RUNBOOKS,
        "validation_taint": VALIDATION_TAINT.key,
        "result_label": kube_state_label(RESULT_LABEL),
        "failed_check_label": kube_state_label(FAILED_CHECK_LABEL),
        "pool_label": kube_state_label(POOL_LABEL),
        "upgrade_state_label": kube_state_label(UPGRADE_STATE_LABEL),
        "driver_upgrading": "|".join(sorted(DRIVER_UPGRADING)),
        "check_results": check_results(),
        "team_label": kube_state_label(monitoring.team_label),
        "team_idle_gpu_percent": str(monitoring.team_idle_gpu_percent),
        **_xid_placeholders(),
    }


# The node labels the node validation alerts read on `kube_node_labels`: the validation's, the
# pool's (to judge a check per pool), and the GPU Operator's upgrade state (a node re-tainted
# for its in-place driver upgrade waits there on its Jobs, for up to a day by default).
NODE_LABELS = (*VALIDATION_LABELS, POOL_LABEL, UPGRADE_STATE_LABEL)


def kube_state_label(key: str) -> str:
    """A Kubernetes label's name on `kube_node_labels` and `kube_namespace_labels`: `label_` and
    the key with every character but letters, digits and `_` as `_`, then in snake case, an
    upper-case letter after a lower-case one or a digit cut off by `_`, all in lower case
    (kube-state-metrics v2.20.0 internal/store/utils.go, `labelName`, `SanitizeLabelName`,
    `toSnakeCase`)."""
    sanitized = re.sub(r"[^a-zA-Z0-9_]", "_", key)
    return "label_" + re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", sanitized).lower()


def check_results() -> str:
    """Each node's result of each validation check, 1 failed and 0 passed, labelled `check`:
    the PromQL of `gpu_platform:node_validation_check:failed`. kube-state-metrics exports each
    check's label as a label of its own on `kube_node_labels`; this makes them one series per
    node and check. Each node's latest value of the last 5 minutes, as the other node validation
    rules read them, and with the node's pool label, by which the checks are judged per pool."""
    terms = [
        f"label_replace({scale}max by (node, {kube_state_label(POOL_LABEL)})"
        " (last_over_time(kube_node_labels"
        f'{{{kube_state_label(label)}="{value}"}}[5m])),'
        f' "check", "{label.removeprefix(CHECK_LABEL_PREFIX)}", "", "")'
        for label in CHECK_LABELS
        for value, scale in (("failed", ""), ("passed", "0 * "))
    ]
    return "\nor\n".join(terms)


def _xid_placeholders() -> dict[str, str]:
    """`xid_<class>`: a regex of the codes of each alerted class, and `xid_classified`: of every
    code with a class (`ignore` too) and 0, which is no XID."""
    classes = xid_classes()
    placeholders = {f"xid_{name}": _alternatives(classes[name]) for name in ALERTED_CLASSES}
    classified = [0, *(code for codes in classes.values() for code in codes)]
    placeholders["xid_classified"] = _alternatives(sorted(classified))
    return placeholders


def _alternatives(codes: list[int]) -> str:
    return "|".join(map(str, codes))


def _fill(document: Any, values: Mapping[str, str]) -> Any:
    """`document` with the placeholders in every string replaced; an unknown one raises."""
    if isinstance(document, str):
        return _Placeholder(document).substitute(values)
    if isinstance(document, Mapping):
        return {key: _fill(value, values) for key, value in document.items()}
    if isinstance(document, list):
        return [_fill(item, values) for item in document]
    return document


PROMETHEUS_POD_LABELS = {"app.kubernetes.io/name": "prometheus"}
"""What the Prometheus Operator labels every Prometheus pod with (prometheus-operator,
pkg/prometheus/statefulset.go)."""
PROMETHEUS_PORT = 9090


ALERTMANAGER_POD_LABELS = {"app.kubernetes.io/name": "alertmanager"}
"""What the Prometheus Operator labels every Alertmanager pod with (prometheus-operator,
pkg/alertmanager/statefulset.go)."""


def _namespace_named(name: str) -> dict[str, Any]:
    return {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": name}}}


def alertmanager_ingress_spec(namespace: str) -> dict[str, Any]:
    """The NetworkPolicy of the installed Alertmanager: from its own namespace only."""
    return {
        "podSelector": {"matchLabels": ALERTMANAGER_POD_LABELS},
        "policyTypes": ["Ingress"],
        "ingress": [{"from": [_namespace_named(namespace)]}],
    }


def prometheus_ingress_spec(namespace: str) -> dict[str, Any]:
    """The NetworkPolicy of the installed Prometheus: from its namespace, and from the reaper's
    namespace to the query port. Enforced where the cluster's network plugin enforces
    NetworkPolicy (the VPC CNI's network policy agent on EKS, Dataplane V2 on GKE)."""
    return {
        "podSelector": {"matchLabels": PROMETHEUS_POD_LABELS},
        "policyTypes": ["Ingress"],
        "ingress": [
            {"from": [_namespace_named(namespace)]},
            {
                "from": [_namespace_named(REAPER_NAMESPACE)],
                "ports": [{"protocol": "TCP", "port": PROMETHEUS_PORT}],
            },
        ],
    }
