"""The idle GPU pod enforcer as the program declares it, in tenant namespaces that opt in
(`gpuIdleMinutes`): the namespace's label, the job's least-privilege role and its restricted
pod, running the reaper script as it is in the repository."""

from typing import Any

import pytest

from gpu_platform.cli.analyzer import analyze_plan
from gpu_platform.cli.offline import Plan, PlannedResource
from gpu_platform.config import MonitoringSpec, OperatorSpec
from gpu_platform.kubernetes.idle_gpu_pods import REAPER_NAME, script_config_map_name
from gpu_platform.kubernetes.idle_gpu_reaper import ACTIVITY_SERIES, Settings
from gpu_platform.kubernetes.monitoring import gpu_alert_rules
from gpu_platform.versions import IDLE_GPU_REAPER_IMAGE, SUPPORTED_KUBERNETES_VERSIONS
from tests.gpu_platform.kubernetes.restricted_pod_security import restricted_violations
from tests.repository import ROOT
from tests.test_kubernetes_schemas import problems

Config = dict[str, Any]
COMPONENT = "gpu-platform:kubernetes:GpuTenantNamespace"
NAMESPACE = "kubernetes:core/v1:Namespace"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
SERVICE_ACCOUNT = "kubernetes:core/v1:ServiceAccount"
ROLE = "kubernetes:rbac.authorization.k8s.io/v1:Role"
ROLE_BINDING = "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding"
CRON_JOB = "kubernetes:batch/v1:CronJob"
ENFORCER_TYPES = (CONFIG_MAP, SERVICE_ACCOUNT, ROLE, ROLE_BINDING, CRON_JOB)
REAPER = "ml-sandbox-gpu-idle-reaper"
PROMETHEUS = "http://prometheus-operated.monitoring.svc:9090"
SCRIPT = ROOT / "gpu_platform" / "kubernetes" / "idle_gpu_reaper.py"
ALERT = "GpuIdleReaperFailing"


def opted_in(config: Config, minutes: int = 60, **monitoring: Any) -> Config:
    config["gpu-platform:namespaces"][0]["gpuIdleMinutes"] = minutes
    config["gpu-platform:monitoring"] = monitoring or {"prometheusUrl": PROMETHEUS}
    return config


@pytest.fixture
def plan(dev_config, plan_for) -> Plan:
    return plan_for(opted_in(dev_config))


def enforcer(plan: Plan, type_: str) -> PlannedResource:
    return plan.named(REAPER, type_)


def pod(plan: Plan) -> dict[str, Any]:
    return enforcer(plan, CRON_JOB).inputs["spec"]["jobTemplate"]["spec"]["template"]["spec"]


def env(plan: Plan) -> dict[str, Any]:
    (container,) = pod(plan)["containers"]
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


# --- Opting in -----------------------------------------------------------------------------


def test_a_namespace_that_does_not_opt_in_gets_no_enforcer(dev_plan) -> None:
    assert [r.type for r in dev_plan.resources if r.name == REAPER] == []


def test_a_namespace_that_does_not_opt_in_carries_no_idle_limit_label(dev_plan) -> None:
    labels = dev_plan.named("ml-sandbox", NAMESPACE).inputs["metadata"]["labels"]

    assert "gpu-platform.io/gpu-idle-minutes" not in labels


def test_the_namespace_carries_its_limit_as_a_label_for_the_policy_pack(plan) -> None:
    labels = plan.named("ml-sandbox", NAMESPACE).inputs["metadata"]["labels"]

    assert labels["gpu-platform.io/gpu-idle-minutes"] == "60"


def test_the_enforcer_belongs_to_the_tenant_component(plan) -> None:
    component = plan.named("ml-sandbox", COMPONENT)

    assert {r.type for r in plan.children_of(component) if r.name == REAPER} == set(ENFORCER_TYPES)


def test_only_the_namespace_that_opts_in_gets_an_enforcer(dev_config, plan_for) -> None:
    dev_config["gpu-platform:namespaces"].append({"name": "vision", "gpuQuota": 2})

    plan = plan_for(opted_in(dev_config))

    assert [r.name for r in plan.of_type(CRON_JOB)] == [REAPER]


def test_every_enforcer_object_goes_in_the_tenant_namespace(plan) -> None:
    assert {enforcer(plan, t).inputs["metadata"]["namespace"] for t in ENFORCER_TYPES} == {
        "ml-sandbox"
    }


def test_the_enforcer_objects_validate_at_every_supported_version(plan) -> None:
    found = {minor: problems(plan, minor) for minor in SUPPORTED_KUBERNETES_VERSIONS}

    assert found == {minor: [] for minor in SUPPORTED_KUBERNETES_VERSIONS}


def test_the_enforcer_draws_no_verdict_from_the_policy_pack(plan) -> None:
    ours = [r for r in plan.resources if r.name == REAPER or r.name == "ml-sandbox"]

    assert analyze_plan(ours) == []


# --- Permissions ---------------------------------------------------------------------------


def test_a_new_namespace_only_warns_about_idle_pods(plan) -> None:
    assert env(plan)["IDLE_GPU_ACTION"] == "warn"


def test_a_warning_role_may_annotate_pods_and_end_nothing(plan) -> None:
    assert enforcer(plan, ROLE).inputs["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["patch"]},
    ]


def test_an_ending_role_allows_exactly_the_reapers_calls(dev_config, plan_for) -> None:
    dev_config["gpu-platform:namespaces"][0]["gpuIdleAction"] = "end"

    plan = plan_for(opted_in(dev_config))

    assert env(plan)["IDLE_GPU_ACTION"] == "end"
    assert enforcer(plan, ROLE).inputs["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["delete"]},
        {
            "apiGroups": ["apps"],
            "resources": ["deployments", "statefulsets", "replicasets"],
            "verbs": ["get"],
        },
        {
            "apiGroups": ["apps"],
            "resources": ["deployments/scale", "statefulsets/scale", "replicasets/scale"],
            "verbs": ["patch"],
        },
    ]


def test_the_role_binding_binds_that_role_to_the_reapers_account_only(plan) -> None:
    inputs = enforcer(plan, ROLE_BINDING).inputs

    assert (inputs["roleRef"], inputs["subjects"]) == (
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "gpu-idle-reaper"},
        [{"kind": "ServiceAccount", "name": "gpu-idle-reaper", "namespace": "ml-sandbox"}],
    )


def test_the_job_runs_as_the_reapers_account(plan) -> None:
    assert (
        pod(plan)["serviceAccountName"]
        == (enforcer(plan, SERVICE_ACCOUNT).inputs["metadata"]["name"])
    )


def test_only_the_reapers_pod_mounts_the_accounts_token(plan) -> None:
    account = enforcer(plan, SERVICE_ACCOUNT).inputs

    assert (account["automountServiceAccountToken"], pod(plan)["automountServiceAccountToken"]) == (
        False,
        True,
    )


# --- The job -------------------------------------------------------------------------------


def test_the_job_runs_every_ten_minutes_never_two_at_once(plan) -> None:
    spec = enforcer(plan, CRON_JOB).inputs["spec"]

    assert (spec["schedule"], spec["concurrencyPolicy"], spec["startingDeadlineSeconds"]) == (
        "*/10 * * * *",
        "Forbid",
        300,
    )


def test_a_failed_run_is_not_retried_before_the_next_one(plan) -> None:
    job = enforcer(plan, CRON_JOB).inputs["spec"]["jobTemplate"]["spec"]

    assert (job["backoffLimit"], job["activeDeadlineSeconds"], pod(plan)["restartPolicy"]) == (
        0,
        300,
        "Never",
    )


def test_the_job_runs_the_script_on_the_pinned_python_image(plan) -> None:
    (container,) = pod(plan)["containers"]

    assert (container["image"], container["command"]) == (
        IDLE_GPU_REAPER_IMAGE,
        ["python3", "/opt/gpu-platform/idle_gpu_reaper.py"],
    )


def test_the_config_map_holds_the_script_as_it_is_in_the_repository(plan) -> None:
    assert enforcer(plan, CONFIG_MAP).inputs["data"] == {"idle_gpu_reaper.py": SCRIPT.read_text()}


def test_the_job_mounts_the_config_map_read_only_where_it_runs_the_script(plan) -> None:
    spec = pod(plan)
    (container,) = spec["containers"]

    assert (spec["volumes"], container["volumeMounts"]) == (
        [
            {
                "name": "script",
                "configMap": {"name": enforcer(plan, CONFIG_MAP).inputs["metadata"]["name"]},
            }
        ],
        [{"name": "script", "mountPath": "/opt/gpu-platform", "readOnly": True}],
    )


def test_a_new_script_gets_a_config_map_of_a_new_name() -> None:
    # pulumi-kubernetes replaces a ConfigMap whose data changes: under a fixed name the new one
    # would collide with the old.
    assert script_config_map_name("print(1)\n") != script_config_map_name("print(2)\n")


def test_the_job_is_told_the_limit_the_threshold_and_where_prometheus_is(plan) -> None:
    assert {k: v for k, v in env(plan).items() if not k.startswith("PYTHON")} == {
        "NAMESPACE": {"fieldRef": {"fieldPath": "metadata.namespace"}},
        "PROMETHEUS_URL": PROMETHEUS,
        "GPU_IDLE_MINUTES": "60",
        "IDLE_GPU_UTILIZATION_PERCENT": "5",
        "IDLE_GPU_ACTION": "warn",
    }


def test_the_script_reads_its_settings_from_the_env_the_job_sets(plan) -> None:
    values = {k: v for k, v in env(plan).items() if isinstance(v, str)}

    settings = Settings.from_env({**values, "NAMESPACE": "ml-sandbox"})

    assert settings == Settings("ml-sandbox", PROMETHEUS, 60, 5.0, "warn")


def test_the_installed_prometheus_stack_is_asked_by_default(dev_config, plan_for) -> None:
    plan = plan_for(opted_in(dev_config, installPrometheusStack=True))

    assert env(plan)["PROMETHEUS_URL"] == (
        "http://kube-prometheus-stack-prometheus.monitoring.svc:9090"
    )


def test_the_prometheus_url_of_a_secret_monitoring_key_stays_secret(dev_config, plan_for) -> None:
    opted_in(dev_config)
    dev_config["gpu-platform:monitoring"]["serviceMonitorLabels"] = {
        "release": "kube-prometheus-stack",
        "tenant": {"secure": "v1:ciphertext-for-this-stack"},
    }

    plan = plan_for(dev_config)

    assert "spec" in enforcer(plan, CRON_JOB).secret_inputs


def test_the_job_is_small(plan) -> None:
    (container,) = pod(plan)["containers"]

    assert container["resources"] == {
        "requests": {"cpu": "50m", "memory": "64Mi"},
        "limits": {"memory": "64Mi"},
    }


def test_the_jobs_pod_passes_restricted(plan) -> None:
    assert restricted_violations(pod(plan)) == []


def test_the_jobs_pod_runs_as_nobody_on_a_read_only_root_without_privileges(plan) -> None:
    spec = pod(plan)

    assert (spec["securityContext"], spec["containers"][0]["securityContext"]) == (
        {
            "runAsNonRoot": True,
            "runAsUser": 65534,
            "runAsGroup": 65534,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "readOnlyRootFilesystem": True,
        },
    )


def test_the_job_waits_for_its_script_and_permissions(plan) -> None:
    dependencies = set(enforcer(plan, CRON_JOB).dependencies)

    assert {enforcer(plan, CONFIG_MAP).urn, enforcer(plan, ROLE_BINDING).urn} <= dependencies


def test_the_failing_run_alert_matches_the_jobs_the_cron_job_names() -> None:
    # A CronJob names each Job `<its name>-<scheduled minute>` (Kubernetes, CronJob controller).
    rules = gpu_alert_rules(MonitoringSpec(), OperatorSpec().namespace)
    (alert,) = [r for g in rules["groups"] for r in g["rules"] if r.get("alert") == ALERT]

    assert f'job_name=~"{REAPER_NAME}-[0-9]+"' in alert["expr"]


# A query frontend of Managed Service for Prometheus: the Service `frontend`, port 9090, of
# prometheus-engine's examples/frontend.yaml, deployed in the namespace `gmp-public`.
MANAGED_FRONTEND = "http://frontend.gmp-public.svc:9090"


def test_on_managed_prometheus_the_job_queries_the_frontend_for_a_series_it_records(
    gke_config, plan_for
) -> None:
    plan = plan_for(
        opted_in(gke_config, googleManagedPrometheus=True, prometheusUrl=MANAGED_FRONTEND)
    )
    (managed_rules,) = plan.of_type("kubernetes:monitoring.googleapis.com/v1:ClusterRules")
    records = [
        rule["record"]
        for group in managed_rules.inputs["spec"]["groups"]
        for rule in group["rules"]
    ]

    assert env(plan)["PROMETHEUS_URL"] == MANAGED_FRONTEND
    assert ACTIVITY_SERIES in records
