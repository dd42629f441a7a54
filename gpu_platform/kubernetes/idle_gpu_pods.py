"""Ending idle GPU pods in a tenant namespace that opts in (`gpuIdleMinutes`).

The namespace carries its limit as the label `gpu-platform.io/gpu-idle-minutes`, which the
policy pack reads; each GPU pod there may ask for less with the annotation
`gpu-platform.io/max-idle-minutes`. What enforces it lives in the namespace itself: a CronJob
that runs `idle_gpu_reaper.py` (shipped in a ConfigMap) every 10 minutes, which asks Prometheus
which pods' GPUs have been idle past their limit and ends those pods (see that file).

Why a script of the platform's own rather than a controller: Kubeflow's notebook culler judges
Jupyter kernels, not GPUs, and stops only Kubeflow's Notebook resources; KEDA can scale a
Deployment or StatefulSet to zero on a Prometheus query, but only one that carries a
ScaledObject of its own, never a bare pod, and it is a cluster-wide operator with rights to
match. What the platform needs is any GPU pod judged by its GPUs, which the DCGM metrics it
already collects show. The script has no dependency, runs from a pinned official Python image,
and is tested against a fake API server and Prometheus
(tests/gpu_platform/kubernetes/test_idle_gpu_reaper.py).

The job's service account may, in its namespace only: list pods and create Events; in `warn`
mode (`gpuIdleAction`, the default) also patch pods, to annotate them, and nothing else; in `end`
mode also delete pods, read Deployments, StatefulSets and ReplicaSets (to find what runs a pod)
and set their `scale` subresource (not the objects themselves). Its pod meets Pod Security
`restricted` with a read-only root filesystem; it is the only pod the platform declares with a
service account token.
"""

import hashlib
from pathlib import Path
from typing import Any, cast

import pulumi
from pulumi_kubernetes import batch, core, rbac

from gpu_platform.versions import IDLE_GPU_REAPER_IMAGE

REAPER_NAME = "gpu-idle-reaper"
SCRIPT_FILE = Path(__file__).with_name("idle_gpu_reaper.py")
SCRIPT_DIR = "/opt/gpu-platform"
IDLE_MINUTES_LABEL = "gpu-platform.io/gpu-idle-minutes"
"""On a tenant namespace: its limit, in minutes, on how long a GPU pod may sit idle."""
SCHEDULE = "*/10 * * * *"
# Each run takes seconds; a run that has not started within 5 minutes of its time is dropped for
# the next, rather than two running back to back.
STARTING_DEADLINE_SECONDS = 300
ACTIVE_DEADLINE_SECONDS = 300
# `nobody` in Debian's images: no account the image's files belong to.
REAPER_USER_ID = 65534

_LIST_PODS_AND_TELL = [
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
    {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
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
"""What the job may do in its namespace, by its action: no more than the reaper's calls."""


def reaper_script() -> str:
    return SCRIPT_FILE.read_text()


def script_config_map_name(script: str) -> str:
    """Named after the script's content, so that a new script is a new ConfigMap, which
    pulumi-kubernetes replaces (create, then delete) rather than updates, and the CronJob moves
    to it; a fixed name would collide with itself on replacement."""
    return f"{REAPER_NAME}-{hashlib.sha256(script.encode()).hexdigest()[:10]}"


def reaper_labels() -> dict[str, str]:
    return {"app.kubernetes.io/name": REAPER_NAME, "app.kubernetes.io/part-of": "gpu-platform"}


def reaper_pod_spec(
    config_map: str,
    prometheus_url: pulumi.Input[str],
    idle_minutes: int,
    idle_percent: int,
    action: str,
) -> dict[str, Any]:
    """The reaper's pod: the script from `config_map`, under Pod Security `restricted`."""
    env: list[dict[str, Any]] = [
        {"name": "NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {"name": "PROMETHEUS_URL", "value": prometheus_url},
        {"name": "GPU_IDLE_MINUTES", "value": str(idle_minutes)},
        {"name": "IDLE_GPU_UTILIZATION_PERCENT", "value": str(idle_percent)},
        {"name": "IDLE_GPU_ACTION", "value": action},
        # Python would try to write bytecode beside its modules, on a read-only filesystem.
        {"name": "PYTHONDONTWRITEBYTECODE", "value": "1"},
        {"name": "PYTHONUNBUFFERED", "value": "1"},
    ]
    return {
        "serviceAccountName": REAPER_NAME,
        # The one platform pod that calls the API server.
        "automountServiceAccountToken": True,
        "restartPolicy": "Never",
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": REAPER_USER_ID,
            "runAsGroup": REAPER_USER_ID,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [
            {
                "name": REAPER_NAME,
                "image": IDLE_GPU_REAPER_IMAGE,
                "command": ["python3", f"{SCRIPT_DIR}/{SCRIPT_FILE.name}"],
                "env": env,
                "resources": {
                    "requests": {"cpu": "50m", "memory": "64Mi"},
                    "limits": {"memory": "64Mi"},
                },
                "securityContext": {
                    "allowPrivilegeEscalation": False,
                    "capabilities": {"drop": ["ALL"]},
                    "readOnlyRootFilesystem": True,
                },
                "volumeMounts": [{"name": "script", "mountPath": SCRIPT_DIR, "readOnly": True}],
            }
        ],
        "volumes": [{"name": "script", "configMap": {"name": config_map}}],
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


def declare_idle_gpu_reaper(
    name: str,
    namespace: pulumi.Input[str],
    idle_minutes: int,
    idle_percent: int,
    action: str,
    prometheus_url: pulumi.Input[str],
    parent: pulumi.Resource,
) -> batch.v1.CronJob:
    """The reaper's objects in `namespace`, children of `parent`; the CronJob, declared last."""
    child = pulumi.ResourceOptions(parent=parent)
    resource_name = f"{name}-{REAPER_NAME}"
    script = reaper_script()
    script_config_map = script_config_map_name(script)
    config_map = core.v1.ConfigMap(
        resource_name,
        metadata={
            "name": script_config_map,
            "namespace": namespace,
            "labels": reaper_labels(),
        },
        data={SCRIPT_FILE.name: script},
        opts=child,
    )
    account = core.v1.ServiceAccount(
        resource_name,
        metadata={"name": REAPER_NAME, "namespace": namespace, "labels": reaper_labels()},
        # Only the reaper's pod mounts its token, which asks for it itself.
        automount_service_account_token=False,
        opts=child,
    )
    role = rbac.v1.Role(
        resource_name,
        metadata={"name": REAPER_NAME, "namespace": namespace, "labels": reaper_labels()},
        rules=cast(Any, ROLE_RULES[action]),
        opts=child,
    )
    binding = rbac.v1.RoleBinding(
        resource_name,
        metadata={"name": REAPER_NAME, "namespace": namespace, "labels": reaper_labels()},
        role_ref=cast(
            Any, {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": REAPER_NAME}
        ),
        subjects=cast(
            Any, [{"kind": "ServiceAccount", "name": REAPER_NAME, "namespace": namespace}]
        ),
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[account, role]),
    )
    pod = reaper_pod_spec(script_config_map, prometheus_url, idle_minutes, idle_percent, action)
    return batch.v1.CronJob(
        resource_name,
        metadata={"name": REAPER_NAME, "namespace": namespace, "labels": reaper_labels()},
        # The provider takes Kubernetes' camelCase field names as they are; the SDK's
        # TypedDicts only know their snake_case spelling.
        spec=cast(Any, reaper_cron_job_spec(pod)),
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[config_map, binding]),
    )
