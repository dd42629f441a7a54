"""The idle GPU pod enforcer as the program declares it for tenant namespaces that opt in
(`gpuIdleMinutes`): the namespace's label, the job's least-privilege role in the tenant
namespace, and its restricted pod in the platform's own namespace, running the reaper script as
it is in the repository."""

import re
from pathlib import Path
from typing import Any

import pytest

from gpu_platform.config import MonitoringSpec, OperatorSpec
from gpu_platform.kubernetes.idle_gpu_pods import script_config_map_name
from gpu_platform.kubernetes.idle_gpu_reaper import ACTIVITY_SERIES, Settings
from gpu_platform.kubernetes.monitoring import gpu_alert_rules
from gpu_platform.lock.images import image_key
from gpu_platform.lock.lockfile import IMAGES, LOCK_PATH_VARIABLE, Lock, entry
from gpu_platform.offline.program import Plan, PlannedResource
from gpu_platform.versions import IDLE_GPU_REAPER_IMAGE, SUPPORTED_KUBERNETES_VERSIONS
from tests.gpu_platform.kubernetes.restricted_pod_security import restricted_violations
from tests.kubernetes_schemas import problems
from tests.repository import ROOT

Config = dict[str, Any]
COMPONENT = "gpu-platform:kubernetes:IdleGpuReaper"
NAMESPACE = "kubernetes:core/v1:Namespace"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
SERVICE_ACCOUNT = "kubernetes:core/v1:ServiceAccount"
ROLE = "kubernetes:rbac.authorization.k8s.io/v1:Role"
ROLE_BINDING = "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding"
CRON_JOB = "kubernetes:batch/v1:CronJob"
PER_TENANT_TYPES = (ROLE, ROLE_BINDING, CRON_JOB)
SHARED_TYPES = (NAMESPACE, CONFIG_MAP, SERVICE_ACCOUNT)
ALL_TYPES = (*SHARED_TYPES, *PER_TENANT_TYPES)
REAPER = "ml-sandbox-gpu-idle-reaper"
SHARED = "gpu-idle-reaper"
REAPER_NAMESPACE = "gpu-idle-reaper"
PROMETHEUS = "http://prometheus-operated.monitoring.svc:9090"
SCRIPT = ROOT / "gpu_platform" / "kubernetes" / "idle_gpu_reaper.py"
ALERT = "GpuIdleReaperFailing"


def opted_in(config: Config, minutes: int = 60, **monitoring: Any) -> Config:
    config["gpu-platform:namespaces"][0]["gpuIdleMinutes"] = minutes
    config["gpu-platform:monitoring"] = monitoring or {"prometheusUrl": PROMETHEUS}
    return config


@pytest.fixture
def plan(dev_config, shared_plan_for) -> Plan:
    return shared_plan_for(opted_in(dev_config))


def enforcer(plan: Plan, type_: str) -> PlannedResource:
    return plan.named(SHARED if type_ in SHARED_TYPES else REAPER, type_)


def pod(plan: Plan) -> dict[str, Any]:
    return enforcer(plan, CRON_JOB).inputs["spec"]["jobTemplate"]["spec"]["template"]["spec"]


def env(plan: Plan) -> dict[str, Any]:
    (container,) = pod(plan)["containers"]
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


# --- Opting in -----------------------------------------------------------------------------


def test_a_namespace_that_does_not_opt_in_gets_no_enforcer(dev_plan) -> None:
    assert [r.type for r in dev_plan.resources if r.name in (REAPER, SHARED)] == []


def test_a_namespace_that_does_not_opt_in_carries_no_idle_limit_label(dev_plan) -> None:
    labels = dev_plan.named("ml-sandbox", NAMESPACE).inputs["metadata"]["labels"]

    assert "gpu-platform.io/gpu-idle-minutes" not in labels


def test_the_namespace_carries_its_limit_as_a_label_for_the_policy_pack(plan) -> None:
    labels = plan.named("ml-sandbox", NAMESPACE).inputs["metadata"]["labels"]

    assert labels["gpu-platform.io/gpu-idle-minutes"] == "60"


def test_the_enforcer_is_one_component_of_the_stack(plan) -> None:
    (component,) = plan.of_type(COMPONENT)

    assert {(r.name, r.type) for r in plan.children_of(component)} == {
        *((SHARED, t) for t in (*SHARED_TYPES, ROLE, ROLE_BINDING)),
        *((REAPER, t) for t in PER_TENANT_TYPES),
    }


def test_only_the_namespace_that_opts_in_gets_an_enforcer(dev_config, plan_for) -> None:
    dev_config["gpu-platform:namespaces"].append({"name": "vision", "sharedGpuQuota": 2})

    plan = plan_for(opted_in(dev_config))

    assert [r.name for r in plan.of_type(CRON_JOB)] == [REAPER]


def test_only_the_role_and_its_binding_go_in_the_tenant_namespace(plan) -> None:
    where = {t: enforcer(plan, t).inputs["metadata"].get("namespace") for t in ALL_TYPES}

    assert where == {
        NAMESPACE: None,
        CONFIG_MAP: REAPER_NAMESPACE,
        SERVICE_ACCOUNT: REAPER_NAMESPACE,
        CRON_JOB: REAPER_NAMESPACE,
        ROLE: "ml-sandbox",
        ROLE_BINDING: "ml-sandbox",
    }


def test_the_platform_namespace_enforces_restricted(plan) -> None:
    labels = enforcer(plan, NAMESPACE).inputs["metadata"]["labels"]

    assert (
        labels["pod-security.kubernetes.io/enforce"],
        enforcer(plan, NAMESPACE).inputs["metadata"]["name"],
    ) == ("restricted", REAPER_NAMESPACE)


def test_the_enforcer_objects_validate_at_every_supported_version(plan) -> None:
    found = {minor: problems(plan, minor) for minor in SUPPORTED_KUBERNETES_VERSIONS}

    assert found == {minor: [] for minor in SUPPORTED_KUBERNETES_VERSIONS}


def test_the_enforcer_draws_no_verdict_from_the_policy_pack(
    dev_config, plan_for, analyze_plan, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Planned with a project lock that holds the reaper image's digest, as `gpu-platform lock`
    # writes it: without one the job runs the image by tag, which `platform-images-by-digest`
    # reports by design (docs/lock.md).
    lock = Lock(path=tmp_path / "gpu-platform.lock")
    digest = entry("sha256:" + "5e" * 32, "https://registry.example")
    lock.with_entries(
        IMAGES, {image_key(IDLE_GPU_REAPER_IMAGE.repository, IDLE_GPU_REAPER_IMAGE.tag): digest}
    ).save()
    monkeypatch.setenv(LOCK_PATH_VARIABLE, str(lock.path))
    plan = plan_for(opted_in(dev_config))
    ours = [r for r in plan.resources if r.name in (REAPER, SHARED, "ml-sandbox")]

    assert analyze_plan(ours) == []


# --- Permissions ---------------------------------------------------------------------------


def test_a_new_namespace_only_warns_about_idle_pods(plan) -> None:
    assert env(plan)["IDLE_GPU_ACTION"] == "warn"


def test_a_warning_role_may_annotate_pods_and_end_nothing(plan) -> None:
    assert enforcer(plan, ROLE).inputs["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"], "verbs": ["list"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["patch"]},
    ]


def test_an_ending_role_allows_exactly_the_reapers_calls(dev_config, plan_for) -> None:
    dev_config["gpu-platform:namespaces"][0]["gpuIdleAction"] = "end"

    plan = plan_for(opted_in(dev_config))

    assert env(plan)["IDLE_GPU_ACTION"] == "end"
    assert enforcer(plan, ROLE).inputs["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"], "verbs": ["list"]},
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


def test_in_its_own_namespace_the_reaper_may_only_create_events(plan) -> None:
    role = plan.named(SHARED, ROLE).inputs
    binding = plan.named(SHARED, ROLE_BINDING).inputs

    assert (role["metadata"]["namespace"], role["rules"]) == (
        REAPER_NAMESPACE,
        [{"apiGroups": [""], "resources": ["events"], "verbs": ["create"]}],
    )
    assert (binding["metadata"]["namespace"], binding["roleRef"]["name"], binding["subjects"]) == (
        REAPER_NAMESPACE,
        role["metadata"]["name"],
        [{"kind": "ServiceAccount", "name": "gpu-idle-reaper", "namespace": REAPER_NAMESPACE}],
    )


def test_the_role_binding_binds_that_role_to_the_reapers_account_only(plan) -> None:
    inputs = enforcer(plan, ROLE_BINDING).inputs

    assert (inputs["roleRef"], inputs["subjects"]) == (
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "gpu-idle-reaper"},
        [{"kind": "ServiceAccount", "name": "gpu-idle-reaper", "namespace": REAPER_NAMESPACE}],
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
        IDLE_GPU_REAPER_IMAGE.reference,
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
        "NAMESPACE": "ml-sandbox",
        "PROMETHEUS_URL": PROMETHEUS,
        "GPU_IDLE_MINUTES": "60",
        "IDLE_GPU_UTILIZATION_PERCENT": "5",
        "IDLE_GPU_ACTION": "warn",
        "CRON_JOB_NAME": "ml-sandbox",
        "CRON_JOB_NAMESPACE": {"fieldRef": {"fieldPath": "metadata.namespace"}},
    }


def test_the_script_reads_its_settings_from_the_env_the_job_sets(plan) -> None:
    values = {k: v for k, v in env(plan).items() if isinstance(v, str)}

    # The pod's namespace, which Kubernetes fills in: the CronJob's.
    settings = Settings.from_env({**values, "CRON_JOB_NAMESPACE": REAPER_NAMESPACE})

    assert settings == Settings(
        "ml-sandbox", PROMETHEUS, 60, 5.0, "warn", "ml-sandbox", REAPER_NAMESPACE
    )


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

    needed = (CONFIG_MAP, SERVICE_ACCOUNT, ROLE_BINDING)

    assert {enforcer(plan, t).urn for t in needed} <= dependencies


# --- Out of tenants' reach -------------------------------------------------------------------

# What Kubernetes' `edit` ClusterRole may change, by API group: the rules of
# `system:aggregate-to-edit` (plugin/pkg/auth/authorizer/rbac/bootstrappolicy/testdata/
# cluster-roles.yaml, kubernetes/kubernetes at 025f2834), which `edit` aggregates with
# `system:aggregate-to-view` (read only). It also impersonates, and creates tokens for, the
# service accounts of the namespace it is bound in.
EDIT_CHANGES = {
    "": {
        "pods",
        "pods/attach",
        "pods/exec",
        "pods/portforward",
        "pods/proxy",
        "pods/eviction",
        "configmaps",
        "events",
        "persistentvolumeclaims",
        "replicationcontrollers",
        "replicationcontrollers/scale",
        "secrets",
        "serviceaccounts",
        "serviceaccounts/token",
        "services",
        "services/proxy",
    },
    "apps": {
        "daemonsets",
        "deployments",
        "deployments/rollback",
        "deployments/scale",
        "replicasets",
        "replicasets/scale",
        "statefulsets",
        "statefulsets/scale",
    },
    "autoscaling": {"horizontalpodautoscalers"},
    "batch": {"cronjobs", "jobs"},
    "policy": {"poddisruptionbudgets"},
    "networking.k8s.io": {"ingresses", "networkpolicies"},
    "coordination.k8s.io": {"leases"},
}
RESOURCES = {
    NAMESPACE: ("", "namespaces"),
    CONFIG_MAP: ("", "configmaps"),
    SERVICE_ACCOUNT: ("", "serviceaccounts"),
    ROLE: ("rbac.authorization.k8s.io", "roles"),
    ROLE_BINDING: ("rbac.authorization.k8s.io", "rolebindings"),
    CRON_JOB: ("batch", "cronjobs"),
}


def tenant_edit_may_change(type_: str, namespace: str | None, tenant: str) -> bool:
    """Whether `edit`, bound in the tenant's namespace, may change an object of this type in
    this namespace."""
    group, resource = RESOURCES[type_]
    return namespace == tenant and resource in EDIT_CHANGES.get(group, set())


def test_a_tenant_with_edit_can_change_nothing_of_the_reaper(plan) -> None:
    (component,) = plan.of_type(COMPONENT)
    objects = [(o.type, o.inputs["metadata"].get("namespace")) for o in plan.children_of(component)]

    assert objects
    assert [t for t, ns in objects if tenant_edit_may_change(t, ns, "ml-sandbox")] == []


def test_the_old_layout_in_the_tenant_namespace_was_within_edits_reach() -> None:
    # The reaper's script, job and account as they were, in the tenant's namespace.
    assert all(
        tenant_edit_may_change(t, "ml-sandbox", "ml-sandbox")
        for t in (CONFIG_MAP, CRON_JOB, SERVICE_ACCOUNT)
    )


def test_no_pod_of_the_tenant_can_run_as_the_reapers_account(plan) -> None:
    # A pod names a service account of its own namespace only (`serviceAccountName`).
    account = enforcer(plan, SERVICE_ACCOUNT).inputs["metadata"]

    assert account["namespace"] == REAPER_NAMESPACE != "ml-sandbox"


def test_the_failing_run_alert_matches_the_jobs_of_the_reapers_cron_jobs(plan) -> None:
    # A CronJob names each Job `<its name>-<scheduled minute>` (Kubernetes, CronJob controller).
    rules = gpu_alert_rules(MonitoringSpec(), OperatorSpec().namespace)
    (alert,) = [r for g in rules["groups"] for r in g["rules"] if r.get("alert") == ALERT]
    cron_job = enforcer(plan, CRON_JOB).inputs["metadata"]
    job = f"{cron_job['name']}-29540520"

    selector = re.search(
        r'kube_job_status_failed\{namespace="([^"]+)", job_name=~"([^"]+)"\}', alert["expr"]
    )
    tenant = re.search(r'"namespace", "\$1", "job_name", "([^"]+)"', alert["expr"])

    assert selector is not None and tenant is not None
    assert (selector[1], bool(re.fullmatch(selector[2], job))) == (cron_job["namespace"], True)
    assert re.fullmatch(tenant[1], job)[1] == "ml-sandbox"  # type: ignore[index]


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
