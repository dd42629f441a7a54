"""Ending idle GPU pods in a tenant namespace that opts in (`gpuIdleMinutes`).

The namespace carries its limit as the label `gpu-platform.io/gpu-idle-minutes`, which the
policy pack reads; each GPU pod there may ask for less with the annotation
`gpu-platform.io/max-idle-minutes`. What enforces it is a CronJob per opted-in namespace that
runs `idle_gpu_reaper.py` (shipped in a ConfigMap) every 10 minutes, which asks Prometheus
which pods' GPUs have been idle past their limit and ends those pods (see that file).

Why a script of the platform's own rather than a controller: Kubeflow's notebook culler judges
Jupyter kernels, not GPUs, and stops only Kubeflow's Notebook resources; KEDA can scale a
Deployment or StatefulSet to zero on a Prometheus query, but only one that carries a
ScaledObject of its own, never a bare pod, and it is a cluster-wide operator with rights to
match. What the platform needs is any GPU pod judged by its GPUs, which the DCGM metrics it
already collects show. The script has no dependency, runs from a pinned official Python image,
and is tested against a fake API server and Prometheus
(tests/gpu_platform/kubernetes/test_idle_gpu_reaper.py).

Everything but RBAC objects lives in the platform's namespace `REAPER_NAMESPACE`, out of
tenants' reach: a tenant with `edit` in its namespace could otherwise rewrite the script's
ConfigMap, delete or reschedule the CronJob, or start a pod of its own as the reaper's service
account (a pod may ask for any account of its namespace, and for its token, whatever the
account's `automountServiceAccountToken` says). In each opted-in namespace, a Role and a
RoleBinding give the reaper's account, in that namespace only: list pods and ResourceClaims
(which of a pod's claims hold GPUs) and create Events; in
`warn` mode (`gpuIdleAction`, the default) also patch pods, to annotate them, and nothing else;
in `end` mode also delete pods, read Deployments, StatefulSets and ReplicaSets (to find what
runs a pod) and set their `scale` subresource (not the objects themselves). Kubernetes' `edit`
role changes neither (`roles` and `rolebindings` are `admin`'s). In its own namespace the
account may only create Events, the Warning on its CronJob when Prometheus lacks the recording
rule. The reaper's pod meets Pod Security `restricted` with a read-only root filesystem
(`gpu_platform.kubernetes.script_pod`).
"""

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pulumi
from pulumi_kubernetes import batch, core, rbac

from gpu_platform.config import MonitoringSpec, TenantNamespaceSpec
from gpu_platform.instance import part_name
from gpu_platform.kubernetes.pod_security import pod_security_labels
from gpu_platform.kubernetes.script_pod import NO_BYTECODE, content_named, script_pod_spec
from gpu_platform.secrets import secret_if
from gpu_platform.versions import IDLE_GPU_REAPER_IMAGE

REAPER_NAME = "gpu-idle-reaper"
REAPER_NAMESPACE = "gpu-idle-reaper"
"""The platform's namespace for the reaper's CronJobs, account and script."""
CRON_JOB_NAME_LIMIT = 52
"""Kubernetes refuses CronJob names over 52 characters (its Jobs' names get 11 more)."""
SCRIPT_FILE = Path(__file__).with_name("idle_gpu_reaper.py")
IDLE_MINUTES_LABEL = "gpu-platform.io/gpu-idle-minutes"
"""On a tenant namespace: its limit, in minutes, on how long a GPU pod may sit idle."""
SCHEDULE = "*/10 * * * *"
# Each run takes seconds; a run that has not started within 5 minutes of its time is dropped for
# the next, rather than two running back to back.
STARTING_DEADLINE_SECONDS = 300
ACTIVE_DEADLINE_SECONDS = 300

_LIST_PODS_AND_TELL = [
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
    {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
    # Which of a pod's ResourceClaims NVIDIA's DRA driver allocated a GPU: one list a run.
    {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"], "verbs": ["list"]},
]
ROLE_RULES: dict[str, list[dict[str, list[str]]]] = {
    "warn": [
        *_LIST_PODS_AND_TELL,
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["patch"]},
    ],
    "end": [
        *_LIST_PODS_AND_TELL,
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
    ],
}
"""What the job may do in its tenant's namespace, by its action: no more than the reaper's
calls."""
HOME_ROLE_RULES = [{"apiGroups": [""], "resources": ["events"], "verbs": ["create"]}]
"""What the job may do in its own namespace: tell of a run that cannot judge, on its CronJob."""


def reaper_script() -> str:
    return SCRIPT_FILE.read_text()


def script_config_map_name(script: str) -> str:
    """Named after the script's content (`script_pod.content_named`), so the CronJob moves to
    a new script."""
    return content_named(REAPER_NAME, script)


def reaper_labels() -> dict[str, str]:
    return {"app.kubernetes.io/name": REAPER_NAME, "app.kubernetes.io/part-of": "gpu-platform"}


def reaper_pod_spec(
    config_map: str,
    tenant_namespace: pulumi.Input[str],
    prometheus_url: pulumi.Input[str],
    idle_minutes: int,
    idle_percent: int,
    action: str,
    cron_job: str,
) -> dict[str, Any]:
    """The reaper's pod for one tenant namespace, run by the CronJob `cron_job` of the pod's own
    namespace: the script from `config_map`, under Pod Security `restricted`."""
    env: list[dict[str, Any]] = [
        {"name": "NAMESPACE", "value": tenant_namespace},
        {"name": "CRON_JOB_NAME", "value": cron_job},
        {
            "name": "CRON_JOB_NAMESPACE",
            "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}},
        },
        {"name": "PROMETHEUS_URL", "value": prometheus_url},
        {"name": "GPU_IDLE_MINUTES", "value": str(idle_minutes)},
        {"name": "IDLE_GPU_UTILIZATION_PERCENT", "value": str(idle_percent)},
        {"name": "IDLE_GPU_ACTION", "value": action},
        NO_BYTECODE,
        {"name": "PYTHONUNBUFFERED", "value": "1"},
    ]
    return {
        **script_pod_spec(
            name=REAPER_NAME,
            container=REAPER_NAME,
            image=IDLE_GPU_REAPER_IMAGE,
            script=SCRIPT_FILE,
            config_map=config_map,
            env=env,
            cpu_request="50m",
            memory="64Mi",
        ),
        "restartPolicy": "Never",
    }


def reaper_cron_job_spec(pod: dict[str, Any]) -> dict[str, Any]:
    return {
        "schedule": SCHEDULE,
        "concurrencyPolicy": "Forbid",
        "startingDeadlineSeconds": STARTING_DEADLINE_SECONDS,
        "successfulJobsHistoryLimit": 3,
        "failedJobsHistoryLimit": 3,
        "jobTemplate": {
            "metadata": {"labels": reaper_labels()},
            "spec": {
                # The next run comes in 10 minutes; a retry sooner would find the same.
                "backoffLimit": 0,
                "activeDeadlineSeconds": ACTIVE_DEADLINE_SECONDS,
                "template": {"metadata": {"labels": reaper_labels()}, "spec": pod},
            },
        },
    }


def cron_job_name(tenant_namespace: str) -> str:
    """The tenant namespace's name, shortened with a digest of it where a CronJob's name would
    be too long."""
    if len(tenant_namespace) <= CRON_JOB_NAME_LIMIT:
        return tenant_namespace
    digest = hashlib.sha256(tenant_namespace.encode()).hexdigest()[:8]
    return f"{tenant_namespace[: CRON_JOB_NAME_LIMIT - 9]}-{digest}"


@dataclass(frozen=True)
class ReapedNamespace:
    """A tenant namespace that opts in."""

    config_name: str
    """Its name in the config, which names its resources."""
    name: pulumi.Input[str]
    """Its name, from the Namespace resource so that what goes into it waits for it."""
    idle_minutes: int
    action: str
    """`gpuIdleAction`: `warn` or `end`."""


@dataclass
class IdleGpuReaperArgs:
    namespaces: Sequence[ReapedNamespace]
    idle_percent: int
    prometheus_url: pulumi.Input[str]


class IdleGpuReaper(pulumi.ComponentResource):
    """The reaper's namespace, account and script, and for each opted-in namespace its CronJob
    and, in that namespace, its Role and RoleBinding."""

    def __init__(
        self, name: str, args: IdleGpuReaperArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__("gpu-platform:kubernetes:IdleGpuReaper", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        namespace = core.v1.Namespace(
            name,
            metadata={
                "name": REAPER_NAMESPACE,
                "labels": {**pod_security_labels("restricted"), **reaper_labels()},
            },
            opts=child,
        )
        # Taking the name from the Namespace makes what goes into it wait for it.
        home = namespace.metadata.apply(lambda _: REAPER_NAMESPACE)
        script = reaper_script()
        script_config_map = script_config_map_name(script)
        config_map = core.v1.ConfigMap(
            name,
            metadata={"name": script_config_map, "namespace": home, "labels": reaper_labels()},
            data={SCRIPT_FILE.name: script},
            opts=child,
        )
        account = core.v1.ServiceAccount(
            name,
            metadata={"name": REAPER_NAME, "namespace": home, "labels": reaper_labels()},
            # Only the reaper's pod mounts its token, which asks for it itself.
            automount_service_account_token=False,
            opts=child,
        )
        home_role = rbac.v1.Role(
            name,
            metadata={"name": REAPER_NAME, "namespace": home, "labels": reaper_labels()},
            rules=cast(Any, HOME_ROLE_RULES),
            opts=child,
        )
        home_binding = reaper_role_binding(name, home, home, [home_role, account], self)
        self.cron_jobs = [
            self._reap(tenant, home, script_config_map, [config_map, account, home_binding], args)
            for tenant in args.namespaces
        ]
        self.register_outputs({"namespace": home})

    def _reap(
        self,
        tenant: ReapedNamespace,
        home: pulumi.Input[str],
        config_map: str,
        needed: list[pulumi.Resource],
        args: IdleGpuReaperArgs,
    ) -> batch.v1.CronJob:
        resource_name = f"{tenant.config_name}-{REAPER_NAME}"
        child = pulumi.ResourceOptions(parent=self)
        in_tenant: Any = {"name": REAPER_NAME, "namespace": tenant.name, "labels": reaper_labels()}
        role = rbac.v1.Role(
            resource_name,
            metadata=in_tenant,
            rules=cast(Any, ROLE_RULES[tenant.action]),
            opts=child,
        )
        binding = reaper_role_binding(resource_name, tenant.name, home, [role, *needed], self)
        name = cron_job_name(tenant.config_name)
        pod = reaper_pod_spec(
            config_map,
            tenant.name,
            args.prometheus_url,
            tenant.idle_minutes,
            args.idle_percent,
            tenant.action,
            name,
        )
        return batch.v1.CronJob(
            resource_name,
            metadata={
                "name": name,
                "namespace": home,
                "labels": reaper_labels(),
            },
            # The provider takes Kubernetes' camelCase field names as they are; the SDK's
            # TypedDicts only know their snake_case spelling.
            spec=cast(Any, reaper_cron_job_spec(pod)),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[*needed, binding]),
        )


def reaper_role_binding(
    name: str,
    namespace: pulumi.Input[str],
    home: pulumi.Input[str],
    after: list[pulumi.Resource],
    parent: pulumi.Resource,
) -> rbac.v1.RoleBinding:
    """The Role `REAPER_NAME` of `namespace`, bound to the reaper's account in `home`."""
    return rbac.v1.RoleBinding(
        name,
        metadata={"name": REAPER_NAME, "namespace": namespace, "labels": reaper_labels()},
        role_ref=cast(
            Any, {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": REAPER_NAME}
        ),
        subjects=cast(Any, [{"kind": "ServiceAccount", "name": REAPER_NAME, "namespace": home}]),
        opts=pulumi.ResourceOptions(parent=parent, depends_on=after),
    )


def idle_gpu_reaper(
    tenants: Sequence[tuple[TenantNamespaceSpec, pulumi.Input[str]]],
    monitoring: MonitoringSpec,
    secret_url: bool,
    opts: pulumi.ResourceOptions,
) -> IdleGpuReaper | None:
    """The reaper of the tenant namespaces (spec, and name from the Namespace) that opt in;
    None where none does."""
    reaped = [
        ReapedNamespace(spec.name, name, spec.gpu_idle_minutes, spec.gpu_idle_action)
        for spec, name in tenants
        if spec.gpu_idle_minutes is not None
    ]
    if not reaped:
        return None
    url = monitoring.query_url
    # Config validation refuses gpuIdleMinutes without a Prometheus to ask.
    assert url is not None, "a namespace opts in to the reaper without a Prometheus to ask"
    args = IdleGpuReaperArgs(
        reaped, monitoring.idle_gpu_utilization_percent, secret_if(secret_url, url)
    )
    return IdleGpuReaper(part_name(REAPER_NAME), args, opts)
