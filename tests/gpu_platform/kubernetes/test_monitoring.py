"""GpuMonitoring, as the real program declares it: the alert rules, the dashboard, the optional
Prometheus stack and Managed Service for Prometheus scrape, and the config rules around them."""

import json
import re
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import pytest
import yaml

from gpu_platform.config import MonitoringSpec, OperatorSpec
from gpu_platform.kubernetes.chart_keys import chart_key_paths, key_paths
from gpu_platform.kubernetes.gpu_hours import PoolGpuShare
from gpu_platform.kubernetes.monitoring import (
    DASHBOARD_SIDECAR_LABEL,
    alert_names,
    gpu_alert_rules,
    gpu_dashboard,
    prometheus_stack_values,
)
from gpu_platform.offline.program import Plan, PlannedResource
from gpu_platform.versions import (
    KUBE_PROMETHEUS_STACK_CHART,
    KUBE_PROMETHEUS_STACK_NODE_EXPORTER_SUBCHART,
    POD_SECURITY_VERSION,
)
from tests.gpu_platform.kubernetes.test_alert_rules import metric_names, metric_set_rows, text_rows

# Its tests plan the same configs again and again, and change the program only through the
# stand-ins' answers.
pytestmark = pytest.mark.shared_plans

Config = dict[str, Any]
PlanFor = Callable[[Config], Plan]

COMPONENT = "gpu-platform:kubernetes:GpuMonitoring"
PROMETHEUS_RULE = "kubernetes:monitoring.coreos.com/v1:PrometheusRule"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
NAMESPACE = "kubernetes:core/v1:Namespace"
RELEASE = "kubernetes:helm.sh/v3:Release"
GMP_SCRAPE = "kubernetes:monitoring.googleapis.com/v1:ClusterPodMonitoring"
GMP_RULES = "kubernetes:monitoring.googleapis.com/v1:ClusterRules"


NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"


def with_monitoring(config: Config, **settings: Any) -> Config:
    config["gpu-platform:monitoring"] = settings
    return config


@pytest.fixture
def gke(gke_config: Config) -> Config:
    """The GKE stack, reached through a kubeconfig context as the deployer's own."""
    gke_config["gpu-platform:cluster"]["kubeconfigContext"] = "ml-dev"
    return gke_config


def component(plan: Plan) -> PlannedResource:
    (monitoring,) = plan.of_type(COMPONENT)
    return monitoring


def child(plan: Plan, type_: str) -> PlannedResource:
    (resource,) = [r for r in plan.children_of(component(plan)) if r.type == type_]
    return resource


def stack_release(plan: Plan) -> PlannedResource:
    return plan.named("gpu-monitoring-prometheus-stack", RELEASE)


def dashboard_json(plan: Plan) -> dict[str, Any]:
    (document,) = child(plan, CONFIG_MAP).inputs["data"].values()
    return json.loads(document)


# --- The alert rules ---------------------------------------------------------------------------


def test_the_prometheus_rule_ships_the_rendered_alert_rules(dev_plan: Plan) -> None:
    rule = child(dev_plan, PROMETHEUS_RULE)
    assert rule.inputs["apiVersion"] == "monitoring.coreos.com/v1"
    # The dev stack's one pool, t4-shared, time-slices each GPU 4 ways; validated, of one T4 at
    # level 1: its new node may take 900 s to start, 300 for the validation pod's start, 60 + 60
    # for `nvidia-smi`, 300 to pull DCGM's image and 300 for `dcgmi diag -r 1`
    # (node_validation/duration.py).
    shares = [PoolGpuShare("t4-shared", "nvidia.com/gpu", Fraction(1, 4))]
    until_validated = 900 + 300 + 60 + 60 + 300 + 300
    assert rule.inputs["spec"] == gpu_alert_rules(
        MonitoringSpec(), OperatorSpec().namespace, shares, until_validated
    )


def test_a_node_not_validated_alerts_only_after_the_stacks_longest_validation(
    dev_plan: Plan,
) -> None:
    groups = child(dev_plan, PROMETHEUS_RULE).inputs["spec"]["groups"]
    (rule,) = [r for g in groups for r in g["rules"] if r.get("alert") == "GpuNodeNotValidated"]

    # 1920 s, the dev stack's longest (above), in whole minutes.
    assert rule["for"] == "32m"


def test_the_prometheus_rule_carries_the_labels_prometheus_selects_by(dev_plan: Plan) -> None:
    metadata = child(dev_plan, PROMETHEUS_RULE).inputs["metadata"]
    assert metadata["namespace"] == "monitoring"
    assert metadata["labels"] == {"release": "kube-prometheus-stack"}


def test_the_prometheus_rule_takes_selector_labels_from_the_config(
    dev_config: Config, plan_for: PlanFor
) -> None:
    labels = {"prometheus": "platform", "team": "ml-infra"}
    plan = plan_for(with_monitoring(dev_config, serviceMonitorLabels=labels, namespace="observe"))
    metadata = child(plan, PROMETHEUS_RULE).inputs["metadata"]
    assert (metadata["namespace"], metadata["labels"]) == ("observe", labels)


def test_thresholds_from_the_config_reach_the_rules(dev_config: Config, plan_for: PlanFor) -> None:
    plan = plan_for(with_monitoring(dev_config, idleGpuMinutes=45, idleGpuUtilizationPercent=10))
    (idle,) = [
        rule
        for rule in child(plan, PROMETHEUS_RULE).inputs["spec"]["groups"][0]["rules"]
        if rule.get("alert") == "GpuAllocatedButIdle"
    ]
    assert idle["for"] == "45m"
    assert idle["expr"].strip().endswith("< 10")


def test_the_alert_names_are_exported(dev_plan: Plan) -> None:
    names = dev_plan.outputs["prometheusRuleNames"]
    assert names == alert_names(gpu_alert_rules(MonitoringSpec(), OperatorSpec().namespace))
    assert names == [
        "GpuAllocatedButIdle",
        "GpuIdleReaperFailing",
        "GpuFramebufferNearlyFull",
        "DcgmExporterDown",
        "DcgmExporterMissing",
        "DcgmExporterHealthMetricsMissing",
        "GpuXidApplicationError",
        "GpuXidNeedsReset",
        "GpuXidNeedsReplacement",
        "GpuXidUnclassified",
        "GpuDoubleBitEccError",
        "GpuMemoryRepairPending",
        "GpuRowRemapFailure",
        "GpuNvlinkErrors",
        "GpuPcieReplays",
        "GpuOutOfService",
        "GpuThrottledWhileBusy",
        "GpuNodeValidationFailed",
        "GpuNodeValidationCheckFailingWidely",
        "GpuNodeNotValidated",
        "GpuTeamAllocatedButIdle",
    ]


def test_the_operator_namespace_from_the_config_reaches_the_rules(
    dev_config: Config, plan_for: PlanFor
) -> None:
    dev_config["gpu-platform:operator"] = {"namespace": "nvidia-gpu"}
    rules = child(plan_for(dev_config), PROMETHEUS_RULE).inputs["spec"]["groups"][0]["rules"]
    assert all("gpu-operator" not in rule["expr"] for rule in rules)
    assert any('namespace!="nvidia-gpu"' in rule["expr"] for rule in rules)


# --- The dashboard -----------------------------------------------------------------------------


def test_the_dashboard_is_a_config_map_the_grafana_sidecar_loads(dev_plan: Plan) -> None:
    config_map = child(dev_plan, CONFIG_MAP)
    assert config_map.inputs["metadata"]["labels"] == dict([DASHBOARD_SIDECAR_LABEL])
    assert config_map.inputs["metadata"]["namespace"] == "monitoring"
    (key,) = config_map.inputs["data"]
    assert key.endswith(".json")


def test_the_dashboard_is_the_rendered_dashboard_json(dev_plan: Plan) -> None:
    dashboard = dashboard_json(dev_plan)
    assert dashboard == json.loads(gpu_dashboard(MonitoringSpec(), OperatorSpec().namespace))
    assert dashboard["uid"] and dashboard["panels"]
    assert "@{" not in json.dumps(dashboard)


# The node is `hostname` in the series of dcgm-exporter 4.6.0-4.8.3, the GPU Operator v26.7.0's
# exporter (NVIDIA/dcgm-exporter#655, internal/pkg/rendermetrics/render_metrics.go), and
# `Hostname` in those of 4.5.3-4.8.2 and older, which a dashboard of the pinned exporter's
# nodes would find none of.
@pytest.mark.parametrize(
    ("view", "aggregation"),
    [
        ("node", "by (hostname)"),
        ("namespace", "by (namespace)"),
        ("pod", "by (namespace, pod)"),
    ],
)
def test_the_dashboard_shows_gpu_utilisation_and_memory_per(
    view: str, aggregation: str, dev_plan: Plan
) -> None:
    queries = [
        target["expr"]
        for panel in dashboard_json(dev_plan)["panels"]
        for target in panel.get("targets", [])
    ]
    assert any(aggregation in q and "gpu_activity:percent" in q for q in queries), view
    assert any(aggregation in q and "DCGM_FI_DEV_FB_USED" in q for q in queries), view


def test_the_dashboard_lists_the_nodes_by_the_pinned_exporters_label(dev_plan: Plan) -> None:
    (node,) = [v for v in dashboard_json(dev_plan)["templating"]["list"] if v["name"] == "node"]

    assert node["query"]["query"] == (
        'label_values(DCGM_FI_DEV_FB_FREE{job="nvidia-dcgm-exporter"}, hostname)'
    )
    assert "Hostname" not in json.dumps(dashboard_json(dev_plan))


def test_the_dashboard_lists_gpus_held_by_pods_but_idle(dev_plan: Plan) -> None:
    (idle_table,) = [
        p
        for p in dashboard_json(dev_plan)["panels"]
        if p["title"] == "GPUs held by pods but idle now"
    ]
    (query,) = [target["expr"] for target in idle_table["targets"]]
    assert query.startswith("gpu_platform:allocated_gpu_activity:percent{")
    assert query.endswith(f"< {MonitoringSpec().idle_gpu_utilization_percent}")


def test_the_dashboard_shows_gpu_hours_per_team_held_used_and_idle(dev_plan: Plan) -> None:
    (per_team,) = [
        p
        for p in dashboard_json(dev_plan)["panels"]
        if (p["type"], p["title"]) == ("table", "GPU-hours per team")
    ]

    # A rule records GPUs every evaluation: a minute's steps over the range, summed, are
    # GPU-minutes, whatever the evaluation interval.
    assert [target["expr"] for target in per_team["targets"]] == [
        f"sum by (team) (sum_over_time(gpu_platform:namespace_gpus_{kind}"
        '{namespace=~"$namespace"}[$__range:1m])) / 60'
        for kind in ("allocated", "used", "idle")
    ]


def test_the_idle_share_panel_names_the_alerts_threshold(dev_plan: Plan) -> None:
    (share,) = [
        p
        for p in dashboard_json(dev_plan)["panels"]
        if p["title"] == "Idle share per team, last hour"
    ]

    assert "above 50% for an hour" in share["description"]


def test_every_rule_the_dashboard_reads_is_one_the_stack_records(dev_plan: Plan) -> None:
    recorded = {
        rule["record"]
        for group in child(dev_plan, PROMETHEUS_RULE).inputs["spec"]["groups"]
        for rule in group["rules"]
        if "record" in rule
    }
    read = set(re.findall(r"gpu_platform:[a-z_:]+", json.dumps(dashboard_json(dev_plan))))

    assert read and read <= recorded


def test_every_dcgm_metric_the_rules_and_dashboard_read_is_in_the_exporters_metric_set(
    dev_plan: Plan,
) -> None:
    # The metric set as the same program ships it to the exporter, in the GPU Operator's values.
    (metric_set,) = plan_operator_values(dev_plan)["extraObjects"]
    collected = set(text_rows(metric_set_rows(metric_set["data"]["metrics"])))
    rules = child(dev_plan, PROMETHEUS_RULE).inputs["spec"]["groups"]
    dashboard = dashboard_json(dev_plan)["panels"]
    queries = [rule["expr"] for group in rules for rule in group["rules"]] + [
        target["expr"] for panel in dashboard for target in panel.get("targets", [])
    ]
    read = {name for q in queries for name in metric_names(q) if name.startswith("DCGM_")}

    assert {"DCGM_FI_DEV_GPU_UTIL", "DCGM_EXP_XID_ERRORS_COUNT", "DCGM_FI_DEV_FB_USED"} <= read
    assert read - collected == set()


def plan_operator_values(plan: Plan) -> dict[str, Any]:
    return dict(plan.named("gpu-operator", RELEASE).inputs["values"])


# --- The Prometheus stack ----------------------------------------------------------------------


def test_without_the_stack_nothing_is_installed_and_no_namespace_created(dev_plan: Plan) -> None:
    types = {r.type for r in dev_plan.children_of(component(dev_plan))}
    assert types == {PROMETHEUS_RULE, CONFIG_MAP}
    assert child(dev_plan, PROMETHEUS_RULE).dependencies == ()


def test_the_stack_is_the_pinned_chart(dev_config: Config, plan_for: PlanFor) -> None:
    release = stack_release(plan_for(with_monitoring(dev_config, installPrometheusStack=True)))
    inputs = release.inputs
    assert (inputs["chart"], inputs["version"], inputs["repositoryOpts"]["repo"]) == (
        KUBE_PROMETHEUS_STACK_CHART.name,
        KUBE_PROMETHEUS_STACK_CHART.version,
        KUBE_PROMETHEUS_STACK_CHART.repository,
    )
    assert inputs["namespace"] == "monitoring"
    assert inputs["atomic"] is True


def test_the_stack_release_name_is_the_label_its_prometheus_selects(
    dev_config: Config, plan_for: PlanFor
) -> None:
    plan = plan_for(with_monitoring(dev_config, installPrometheusStack=True))
    labels = child(plan, PROMETHEUS_RULE).inputs["metadata"]["labels"]
    assert labels["release"] == stack_release(plan).inputs["name"]


def pod_security(level: str) -> dict[str, str]:
    return {
        f"pod-security.kubernetes.io/{mode}{suffix}": value
        for mode in ("enforce", "audit", "warn")
        for suffix, value in (("", level), ("-version", POD_SECURITY_VERSION))
    }


def stack_namespaces(plan: Plan) -> dict[str, PlannedResource]:
    return {
        r.inputs["metadata"]["name"]: r
        for r in plan.children_of(component(plan))
        if r.type == NAMESPACE
    }


def test_the_stack_namespace_is_baseline_as_none_of_its_pods_needs_the_host(
    dev_config: Config, plan_for: PlanFor
) -> None:
    plan = plan_for(with_monitoring(dev_config, installPrometheusStack=True))

    namespace = stack_namespaces(plan)["monitoring"]
    assert namespace.inputs["metadata"]["labels"] == pod_security("baseline")
    assert namespace.urn in stack_release(plan).dependencies


def test_node_exporter_alone_runs_in_a_privileged_namespace(
    dev_config: Config, plan_for: PlanFor
) -> None:
    plan = plan_for(with_monitoring(dev_config, installPrometheusStack=True))

    namespace = stack_namespaces(plan)["monitoring-node-exporter"]
    assert namespace.inputs["metadata"]["labels"] == pod_security("privileged")
    values = stack_release(plan).inputs["values"]
    assert values["prometheus-node-exporter"]["namespaceOverride"] == "monitoring-node-exporter"
    assert namespace.urn in stack_release(plan).dependencies


def test_node_exporter_rolls_a_quarter_of_the_nodes_at_a_time_with_its_charts_keys(
    dev_config: Config, plan_for: PlanFor
) -> None:
    plan = plan_for(with_monitoring(dev_config, installPrometheusStack=True))

    node_exporter = stack_release(plan).inputs["values"]["prometheus-node-exporter"]

    # prometheus-node-exporter 4.56.1 values.yaml: `updateStrategy: {type: RollingUpdate,
    # rollingUpdate: {maxUnavailable: 1}}`, which Helm merges this over.
    assert node_exporter["updateStrategy"] == {"rollingUpdate": {"maxUnavailable": "25%"}}
    subchart = KUBE_PROMETHEUS_STACK_NODE_EXPORTER_SUBCHART
    assert set(key_paths(node_exporter)) <= chart_key_paths(subchart.version, subchart.name)


def test_the_rule_waits_for_the_stack_that_defines_its_type(
    dev_config: Config, plan_for: PlanFor
) -> None:
    plan = plan_for(with_monitoring(dev_config, installPrometheusStack=True))
    assert stack_release(plan).urn in child(plan, PROMETHEUS_RULE).dependencies


def test_the_gpu_operator_waits_for_the_stack(dev_config: Config, plan_for: PlanFor) -> None:
    plan = plan_for(with_monitoring(dev_config, installPrometheusStack=True))
    (operator,) = plan.of_type("gpu-platform:kubernetes:GpuOperator")
    assert stack_release(plan).urn in operator.dependencies


def test_the_stack_grafana_loads_the_dashboard_and_has_no_published_password(
    dev_config: Config, plan_for: PlanFor
) -> None:
    plan = plan_for(with_monitoring(dev_config, installPrometheusStack=True))
    grafana = stack_release(plan).inputs["values"]["grafana"]
    sidecar = grafana["sidecar"]["dashboards"]
    assert {sidecar["label"]: sidecar["labelValue"]} == child(plan, CONFIG_MAP).inputs["metadata"][
        "labels"
    ]
    assert grafana["adminPassword"] == ""


# --- Google Cloud Managed Service for Prometheus -----------------------------------------------


def test_managed_prometheus_scrapes_the_dcgm_exporter_on_gke(
    gke: Config, plan_for: PlanFor
) -> None:
    plan = plan_for(with_monitoring(gke, googleManagedPrometheus=True))
    scrape = child(plan, GMP_SCRAPE)
    assert scrape.inputs["apiVersion"] == "monitoring.googleapis.com/v1"
    # The pods of the operator's exporter (`app: nvidia-dcgm-exporter`, gpu-operator v26.7.0
    # assets/state-dcgm-exporter/0800_daemonset.yaml) and of the platform's on GKE-shared nodes.
    assert scrape.inputs["spec"]["selector"] == {
        "matchExpressions": [
            {
                "key": "app",
                "operator": "In",
                "values": ["nvidia-dcgm-exporter", "nvidia-dcgm-exporter-gke"],
            }
        ]
    }
    assert [e["port"] for e in scrape.inputs["spec"]["endpoints"]] == [9400]


def test_managed_prometheus_keeps_the_workloads_pod_and_namespace_labels(
    gke: Config, plan_for: PlanFor
) -> None:
    # prometheus-engine (pkg/operator/apis/monitoring/v1): ClusterPodMonitoring attaches the
    # scraped pod's container, namespace and pod labels unless targetLabels.metadata is an
    # explicit empty list (pod_types.go ClusterTargetLabels; pod_config.go
    # endpointScrapeConfig), and the exporter's own labels would then become exported_*.
    plan = plan_for(with_monitoring(gke, googleManagedPrometheus=True))

    assert child(plan, GMP_SCRAPE).inputs["spec"]["targetLabels"] == {"metadata": []}


def test_managed_prometheus_is_off_by_default(gke: Config, plan_for: PlanFor) -> None:
    assert plan_for(gke).of_type(GMP_SCRAPE) == []
    assert plan_for(gke).of_type(GMP_RULES) == []


def test_managed_prometheus_series_carry_the_job_the_rules_select(
    gke: Config, plan_for: PlanFor
) -> None:
    # Managed Prometheus sets `job` to the ClusterPodMonitoring's name (prometheus-engine
    # pkg/operator/apis/monitoring/v1/pod_config.go, endpointScrapeConfig: a `replace` of
    # `job` with `c.Name`); the rules select the job the operator's ServiceMonitor gives them.
    plan = plan_for(with_monitoring(gke, googleManagedPrometheus=True))
    rules = yaml.safe_dump(child(plan, PROMETHEUS_RULE).inputs["spec"])

    assert child(plan, GMP_SCRAPE).inputs["metadata"]["name"] == "nvidia-dcgm-exporter"
    assert set(re.findall(r'job="([^"]*)"', rules)) == {"nvidia-dcgm-exporter"}


def test_managed_prometheus_evaluates_the_recording_rules_itself(
    gke: Config, plan_for: PlanFor
) -> None:
    # A PrometheusRule reaches only an in-cluster Prometheus; Managed Prometheus's rule
    # evaluator reads ClusterRules (prometheus-engine rules_types.go: groups of `record`,
    # `expr`), so the series a query frontend answers with exist there too.
    plan = plan_for(with_monitoring(gke, googleManagedPrometheus=True))
    rules = child(plan, GMP_RULES).inputs

    records = [rule.get("record") for group in rules["spec"]["groups"] for rule in group["rules"]]
    assert rules["apiVersion"] == "monitoring.googleapis.com/v1"
    assert records == [
        "gpu_platform:gpu_activity:percent",
        "gpu_platform:allocated_gpu_activity:percent",
        "gpu_platform:pcie_replay_limit:per_minute",
        "gpu_platform:node_validation_check:failed",
        # The GKE stack's one pool, then GPU-hours per namespace and team.
        "gpu_platform:pool_gpus_per_request",
        "gpu_platform:namespace_team:info",
        "gpu_platform:pod_gpus_allocated",
        "gpu_platform:pod_gpus_used",
        "gpu_platform:namespace_gpus_allocated",
        "gpu_platform:namespace_gpus_used",
        "gpu_platform:namespace_gpus_idle",
    ]


def test_managed_recording_rules_are_the_prometheus_rules_own(
    gke: Config, plan_for: PlanFor
) -> None:
    plan = plan_for(with_monitoring(gke, googleManagedPrometheus=True))
    ours = {
        rule["record"]: rule["expr"]
        for group in child(plan, PROMETHEUS_RULE).inputs["spec"]["groups"]
        for rule in group["rules"]
        if "record" in rule
    }

    managed = {
        rule["record"]: rule["expr"]
        for group in child(plan, GMP_RULES).inputs["spec"]["groups"]
        for rule in group["rules"]
    }

    assert managed == ours


# --- Bad config ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "key"),
    [
        ({"googleManagedPrometheus": True}, "gpu-platform:monitoring.googleManagedPrometheus"),
        (
            {"installPrometheusStack": True, "serviceMonitorLabels": {"prometheus": "main"}},
            "gpu-platform:monitoring.serviceMonitorLabels",
        ),
    ],
    ids=["managed-prometheus-on-aws", "stack-that-would-not-select-the-rules"],
)
def test_bad_monitoring_config_names_the_key_before_any_resource(
    settings: dict[str, Any], key: str, dev_config: Config, failed_plan_for: PlanFor
) -> None:
    plan = failed_plan_for(with_monitoring(dev_config, **settings))
    assert f"{key}: got" in str(plan.error)
    assert plan.resources == []


# --- Structure ---------------------------------------------------------------------------------


def test_every_resource_of_the_component_is_its_child(gke: Config, plan_for: PlanFor) -> None:
    plan = plan_for(with_monitoring(gke, installPrometheusStack=True, googleManagedPrometheus=True))
    monitoring = component(plan)
    children = plan.children_of(monitoring)
    assert {r.type for r in children} == {
        NAMESPACE,
        RELEASE,
        PROMETHEUS_RULE,
        CONFIG_MAP,
        GMP_SCRAPE,
        NETWORK_POLICY,
        GMP_RULES,
    }
    assert all(r.name.startswith(f"{monitoring.name}-") for r in children)
    assert [r for r in plan.resources if r.name.startswith(f"{monitoring.name}-")] == children


# --- Who reaches the installed Prometheus ---------------------------------------------------


def test_only_its_namespace_and_the_reaper_reach_the_installed_prometheus(
    dev_config: Config, plan_for: PlanFor
) -> None:
    plan = plan_for(with_monitoring(dev_config, installPrometheusStack=True))
    policy = plan.named("gpu-monitoring-prometheus-ingress", NETWORK_POLICY)

    assert policy.inputs["metadata"]["namespace"] == "monitoring"
    # The Prometheus Operator's pod labels (prometheus-operator, pkg/prometheus/server/
    # statefulset.go, podSelectorLabels); 9090 the Prometheus Service's port.
    assert policy.inputs["spec"] == {
        "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}},
        "policyTypes": ["Ingress"],
        "ingress": [
            {
                "from": [
                    {
                        "namespaceSelector": {
                            "matchLabels": {"kubernetes.io/metadata.name": "monitoring"}
                        }
                    }
                ]
            },
            {
                "from": [
                    {
                        "namespaceSelector": {
                            "matchLabels": {"kubernetes.io/metadata.name": "gpu-idle-reaper"}
                        }
                    }
                ],
                "ports": [{"protocol": "TCP", "port": 9090}],
            },
        ],
    }


def test_only_its_namespace_reaches_the_installed_alertmanager(
    dev_config: Config, plan_for: PlanFor
) -> None:
    # Alertmanager's API creates silences without authentication (prometheus/alertmanager
    # api/v2): from a tenant's pod, the GPU alerts could be silenced. The Prometheus
    # Operator's pod label (pkg/alertmanager/statefulset.go).
    plan = plan_for(with_monitoring(dev_config, installPrometheusStack=True))
    policy = plan.named("gpu-monitoring-alertmanager-ingress", NETWORK_POLICY)

    assert policy.inputs["metadata"]["namespace"] == "monitoring"
    assert policy.inputs["spec"] == {
        "podSelector": {"matchLabels": {"app.kubernetes.io/name": "alertmanager"}},
        "policyTypes": ["Ingress"],
        "ingress": [
            {
                "from": [
                    {
                        "namespaceSelector": {
                            "matchLabels": {"kubernetes.io/metadata.name": "monitoring"}
                        }
                    }
                ]
            }
        ],
    }


def test_a_prometheus_the_stack_does_not_install_gets_no_network_policy(dev_plan: Plan) -> None:
    assert dev_plan.of_type(NETWORK_POLICY) == []


def test_the_dashboard_lists_nodes_that_failed_validation_with_the_check(dev_plan: Plan) -> None:
    (failed,) = [
        p
        for p in dashboard_json(dev_plan)["panels"]
        if p["title"] == "GPU nodes that failed validation"
    ]

    # kube-state-metrics' name of the labels gpu-platform.io/validation and
    # gpu-platform.io/validation-failed-check (internal/store/utils.go, sanitizeLabelName).
    assert failed["targets"][0]["expr"] == (
        "max by (node, label_gpu_platform_io_validation_failed_check)"
        ' (kube_node_labels{label_gpu_platform_io_validation="failed", node=~"$node"})'
    )


def test_kube_state_metrics_exports_the_validation_pool_and_team_labels() -> None:
    values = prometheus_stack_values("monitoring-node-exporter", [], "example.com/cost-team")

    # kube-state-metrics v2.20.0 pkg/options/types.go, `LabelsAllowList.Set`:
    # `resource=[label,...]`, the resource in the plural.
    assert values["kube-state-metrics"]["metricLabelsAllowlist"] == [
        "nodes=[gpu-platform.io/validation,gpu-platform.io/validation-failed-check,"
        "gpu-platform.io/validated-driver,gpu-platform.io/validated-release,"
        # Each check's result (validate.py CHECKS), which the per-check rule reads.
        "gpu-platform.io/validation-check.gpu-count,gpu-platform.io/validation-check.driver,"
        "gpu-platform.io/validation-check.ecc,gpu-platform.io/validation-check.memory,"
        "gpu-platform.io/validation-check.pcie,gpu-platform.io/validation-check.nvlink,"
        "gpu-platform.io/validation-check.dcgm-diag,"
        "gpu-platform.io/validation-check.nccl-bandwidth,gpu-platform.io/validation-check.efa,"
        # A node validated again after an in-place driver upgrade.
        "gpu-platform.io/revalidating,"
        # The pool, by which the per-check alert judges and the GPU-hour rules count; the GPU
        # Operator's upgrade state, which the alert on a node not validated leaves out
        # (k8s-operator-libs pkg/upgrade/consts.go).
        "gpu-platform.io/pool,nvidia.com/gpu-driver-upgrade-state]",
        "namespaces=[example.com/cost-team]",
    ]
