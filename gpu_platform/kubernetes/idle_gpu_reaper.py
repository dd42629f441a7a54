"""End the GPU pods of one namespace that have held idle GPUs for longer than they may.

The platform ships this file as it is, in a ConfigMap of its own namespace, and for each tenant
namespace that opts in (`gpuIdleMinutes`, the namespace given as `NAMESPACE`) a CronJob there,
named after that namespace, runs it every 10 minutes with the standard library alone
(`idle_gpu_pods.py` beside it declares those objects). Each run:

1. lists the namespace's pods that hold or wait for GPUs: those that ask for them
   (`nvidia.com/gpu`, `nvidia.com/gpu.shared`, `nvidia.com/mig-*` in limits or requests), and
   those whose ResourceClaims NVIDIA's DRA driver allocated a GPU or MIG device (a result of
   driver `gpu.nvidia.com`). A pod whose claims are all allocated other drivers' devices is
   none of them. One whose claims cannot be told yet (not generated, not allocated, not read) is
   not judged, but counts as a GPU pod that is not idle, so its owner is not scaled to zero;
2. gives each running one it judges its limit: the annotation
   `gpu-platform.io/max-idle-minutes` when it is a whole number of minutes from 15 to the
   namespace's limit, else the namespace's limit;
3. asks Prometheus which of them held only GPUs below the idle threshold throughout that many
   minutes (the platform's recording rule `gpu_platform:allocated_gpu_activity:percent`), with
   readings at both ends of the window and at least 90 % of the readings the rule's evaluation
   interval gives the window, for each of the pod's GPUs: a gap in the metrics never counts as
   idle, wherever it falls;
4. in the namespace's `warn` mode (the default), only marks each such pod older than its limit
   with the annotation `gpu-platform.io/idle-gpu` and a Warning Event; in `end` mode, ends it.
   A bare pod is deleted. A pod of a Deployment, a StatefulSet or a bare ReplicaSet would only
   be replaced, so that owner is scaled to zero instead, once every one of its GPU pods is idle
   and every GPU pod's owner could be read. A Job's pod is left to end with its Job, and a pod
   whose owner is run by something else (an operator's custom resource) is left to it: that
   one would start it again. A pod on its way out (being deleted) is not judged.

Before all that, it checks that Prometheus evaluates the recording rule: without it no pod would
ever look idle, so a missing rule fails the run, with a Warning Event on the CronJob, instead of
passing for "nothing idle".

Every decision is one line on stdout (the Job's log) and an Event on the object acted on. A pod
that fails does not stop the others; the run exits 1 when anything failed, so that its Job
shows as failed.
"""

import json
import math
import os
import re
import ssl
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

MAX_IDLE_ANNOTATION = "gpu-platform.io/max-idle-minutes"
IDLE_ANNOTATION = "gpu-platform.io/idle-gpu"
"""Set on a pod found idle past its limit in `warn` mode: since when, and how idle."""
ACTIVITY_SERIES = "gpu_platform:allocated_gpu_activity:percent"
MIN_IDLE_MINUTES = 15
EDGE_MINUTES = 10
"""How much of each end of the window must hold readings of the pod's GPUs."""
MIN_COVERAGE = 0.9
"""The share of the window's readings each of the pod's GPUs must have."""
ACTIONS = ("warn", "end")
"""`warn`: annotate idle pods and record Events only; `end`: end them."""
GPU_RESOURCES = ("nvidia.com/gpu", "nvidia.com/gpu.shared")
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"
GPU_DRIVER = "gpu.nvidia.com"
"""The DRA driver whose allocated devices are GPUs and MIG instances (the exporter labels only
a claimed whole GPU's series with its pod, as far as its main branch reads: a pod holding a MIG
instance has no readings and is never idle): NVIDIA's GPU kubelet
plugin's name (k8s-dra-driver-gpu v25.12.0, the platform's pin: cmd/gpu-kubelet-plugin/main.go
`DriverName`), and the only driver whose claimed devices DCGM's exporter labels with their pod,
namespace and container (dcgm-exporter 4.6.0-4.8.3, GPU Operator v26.7.0's: commit 7ad58324,
internal/pkg/transformation/kubernetes.go `toDeviceToPodsDRA`, const.go `DRAGPUDriverName`)."""
SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
EVENT_REASON = "IdleGpu"
NO_RULE_REASON = "IdleGpuRuleMissing"
COMPONENT = "gpu-idle-reaper"
# The workload kinds whose `scale` subresource the reaper may set, by their ownerReference.
SCALABLE = {
    ("apps/v1", "Deployment"): "deployments",
    ("apps/v1", "StatefulSet"): "statefulsets",
    ("apps/v1", "ReplicaSet"): "replicasets",
}
Object = Mapping[str, Any]


@dataclass(frozen=True)
class Settings:
    namespace: str
    prometheus_url: str
    idle_minutes: int
    """The namespace's limit, and the most a pod may ask for."""
    idle_percent: float
    action: str = "warn"
    """One of `ACTIONS`."""
    cron_job_name: str = COMPONENT
    """The CronJob that runs this, in the platform's namespace, named after the namespace it
    judges: what a run that cannot judge records its Warning Event on."""
    cron_job_namespace: str = COMPONENT

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> "Settings":
        action = env.get("IDLE_GPU_ACTION", "warn")
        if action not in ACTIONS:
            raise ValueError(f"IDLE_GPU_ACTION={action!r} is not one of {ACTIONS}")
        return cls(
            namespace=env["NAMESPACE"],
            prometheus_url=env["PROMETHEUS_URL"],
            idle_minutes=int(env["GPU_IDLE_MINUTES"]),
            idle_percent=float(env["IDLE_GPU_UTILIZATION_PERCENT"]),
            action=action,
            cron_job_name=env["CRON_JOB_NAME"],
            cron_job_namespace=env["CRON_JOB_NAMESPACE"],
        )


class Api:
    """JSON over HTTP to one server."""

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        context: ssl.SSLContext | None = None,
        timeout: float = 30,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout
        # In-cluster addresses only: a proxy from the environment must not see the token.
        self._opener = urllib.request.build_opener(
            urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=context)
        )

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
    ) -> Any:
        headers = {"Accept": "application/json"}
        if self.token is not None:
            headers["Authorization"] = f"Bearer {self.token}"
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = content_type
        request = urllib.request.Request(
            self.base_url + path, data=data, method=method, headers=headers
        )
        with self._opener.open(request, timeout=self.timeout) as response:
            return json.loads(response.read() or b"null")


class Kubernetes:
    """The few calls the reaper makes, in its own namespace."""

    def __init__(self, api: Api, namespace: str) -> None:
        self.api = api
        self.namespace = namespace

    @classmethod
    def in_cluster(cls, namespace: str) -> "Kubernetes":
        """The API server as a pod reaches it, with its service account's token and CA."""
        host = os.environ["KUBERNETES_SERVICE_HOST"]
        port = os.environ["KUBERNETES_SERVICE_PORT"]
        if ":" in host:
            host = f"[{host}]"
        token = (SERVICE_ACCOUNT_DIR / "token").read_text().strip()
        context = ssl.create_default_context(cafile=str(SERVICE_ACCOUNT_DIR / "ca.crt"))
        return cls(Api(f"https://{host}:{port}", token, context), namespace)

    def _path(self, group_version: str, resource: str, name: str = "") -> str:
        prefix = "/api/v1" if group_version == "v1" else f"/apis/{group_version}"
        path = f"{prefix}/namespaces/{self.namespace}/{resource}"
        return f"{path}/{urllib.parse.quote(name)}" if name else path

    def pods(self) -> list[Object]:
        return self._list("v1", "pods")

    def resource_claims(self) -> dict[str, Object]:
        """The namespace's ResourceClaims, by name: as `resource.k8s.io/v1`, or where the
        cluster serves no v1 (Kubernetes 1.33), as v1beta1, whose allocation results carry the
        same `driver` and `adminAccess`."""
        try:
            claims = self._list("resource.k8s.io/v1", "resourceclaims")
        except urllib.error.HTTPError as error:
            if error.code != 404:
                raise
            claims = self._list("resource.k8s.io/v1beta1", "resourceclaims")
        return {claim["metadata"]["name"]: claim for claim in claims}

    def _list(self, group_version: str, resource: str) -> list[Object]:
        found: list[Object] = []
        query: dict[str, str] = {"limit": "250"}
        while True:
            page = self.api.call(
                "GET", f"{self._path(group_version, resource)}?{urllib.parse.urlencode(query)}"
            )
            found += page.get("items") or []
            next_page = (page.get("metadata") or {}).get("continue")
            if not next_page:
                return found
            query["continue"] = next_page

    def get(self, resource: str, name: str) -> Object:
        result: Object = self.api.call("GET", self._path("apps/v1", resource, name))
        return result

    def delete_pod(self, name: str, uid: str) -> None:
        # The precondition keeps a pod of the same name, started since, from being deleted.
        options = {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": uid}}
        self.api.call("DELETE", self._path("v1", "pods", name), options)

    def annotate_pod(self, name: str, uid: str, annotations: Mapping[str, str]) -> None:
        # The uid in the patch fails it (409) when a pod of the same name has started since.
        patch = {"metadata": {"uid": uid, "annotations": dict(annotations)}}
        self.api.call(
            "PATCH",
            self._path("v1", "pods", name),
            patch,
            content_type="application/merge-patch+json",
        )

    def scale_to_zero(self, resource: str, name: str) -> None:
        self.api.call(
            "PATCH",
            self._path("apps/v1", resource, name) + "/scale",
            {"spec": {"replicas": 0}},
            content_type="application/merge-patch+json",
        )

    def record_event(
        self,
        target: "Target",
        message: str,
        now: datetime,
        reason: str = EVENT_REASON,
        type_: str = "Normal",
        namespace: str | None = None,
    ) -> None:
        """An Event on `target`, of `namespace` (by default the namespace judged): Kubernetes
        keeps an Event in its object's namespace (core validation, ValidateEventCreate)."""
        namespace = namespace or self.namespace
        stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
        involved = {
            "apiVersion": target.api_version,
            "kind": target.kind,
            "name": target.name,
            "namespace": namespace,
        }
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{target.name}.", "namespace": namespace},
            "involvedObject": {**involved, "uid": target.uid} if target.uid else involved,
            "reason": reason,
            "message": message,
            "type": type_,
            "source": {"component": COMPONENT},
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        self.api.call("POST", f"/api/v1/namespaces/{namespace}/events", event)


# --- Which pods -----------------------------------------------------------------------------


def is_gpu_resource(name: str) -> bool:
    return name in GPU_RESOURCES or name.startswith(MIG_RESOURCE_PREFIX)


def asks_for_gpus(pod: Object) -> bool:
    spec = pod.get("spec") or {}
    for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        resources = container.get("resources") or {}
        for section in ("limits", "requests"):
            for name, value in (resources.get(section) or {}).items():
                if is_gpu_resource(name) and str(value).strip() not in ("0", ""):
                    return True
    return False


def claimed_names(pod: Object) -> list[str | None]:
    """The ResourceClaim each of the pod's claims names: its own, or the one generated from its
    template, which the pod's `status.resourceClaimStatuses` names (None while it does not). A
    status entry without a name means no claim was needed: that one is left out (Kubernetes
    API, PodResourceClaimStatus.resourceClaimName)."""
    generated = {
        entry["name"]: entry.get("resourceClaimName")
        for entry in (pod.get("status") or {}).get("resourceClaimStatuses") or []
    }
    names: list[str | None] = []
    for ref in (pod.get("spec") or {}).get("resourceClaims") or []:
        if ref.get("resourceClaimName"):
            names.append(ref["resourceClaimName"])
        elif ref["name"] not in generated:
            names.append(None)
        elif generated[ref["name"]]:
            names.append(generated[ref["name"]])
    return names


def allocated_gpu(claim: Object | None) -> bool | None:
    """Whether the claim was allocated a device of `GPU_DRIVER`; None when it was not
    allocated yet, or not read. A result with admin access reaches a device without holding it
    (Kubernetes API, DeviceRequestAllocationResult.adminAccess): it is not the pod's GPU."""
    allocation = ((claim or {}).get("status") or {}).get("allocation")
    if allocation is None:
        return None
    return any(
        result.get("driver") == GPU_DRIVER and not result.get("adminAccess")
        for result in (allocation.get("devices") or {}).get("results") or []
    )


def holds_gpus(pod: Object, claims: Mapping[str, Object] | None) -> bool | None:
    """Whether the pod asks for GPUs or holds them through a claim (`claims`, the namespace's
    ResourceClaims by name; None when they could not be read); None when its claims cannot be
    told yet."""
    if asks_for_gpus(pod):
        return True
    told: list[bool | None] = [
        None if name is None or claims is None else allocated_gpu(claims.get(name))
        for name in claimed_names(pod)
    ]
    if any(told):
        return True
    return None if None in told else False


def has_claims(pod: Object) -> bool:
    return bool((pod.get("spec") or {}).get("resourceClaims"))


def is_live(pod: Object) -> bool:
    """Neither finished nor on its way out."""
    live = (pod.get("status") or {}).get("phase") in ("Pending", "Running")
    return live and not pod["metadata"].get("deletionTimestamp")


def is_running(pod: Object) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running"


def max_idle_minutes(pod: Object, settings: Settings) -> tuple[int, str | None]:
    """The pod's limit, and why its annotation was not taken (None when it was, or is unset)."""
    value = (pod["metadata"].get("annotations") or {}).get(MAX_IDLE_ANNOTATION)
    if value is None:
        return settings.idle_minutes, None
    if re.fullmatch(r"[0-9]+", value.strip()) and (
        MIN_IDLE_MINUTES <= int(value) <= settings.idle_minutes
    ):
        return int(value), None
    return settings.idle_minutes, (
        f"{MAX_IDLE_ANNOTATION}={value!r} is not a whole number of minutes from"
        f" {MIN_IDLE_MINUTES} to {settings.idle_minutes}: the namespace's"
        f" {settings.idle_minutes} minutes apply"
    )


def started_at(pod: Object) -> datetime:
    stamp = (pod.get("status") or {}).get("startTime") or pod["metadata"]["creationTimestamp"]
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def min_readings(minutes: int, interval_seconds: float) -> int:
    """The fewest readings a GPU's series may have in a window of `minutes`: `MIN_COVERAGE` of
    what a rule evaluated every `interval_seconds` writes in it."""
    return math.ceil(MIN_COVERAGE * minutes * 60 / interval_seconds)


def idle_query(namespace: str, minutes: int, percent: float, interval_seconds: float) -> str:
    """The pods whose GPUs were all below `percent` busy throughout the last `minutes`, with
    readings in the first and the last `EDGE_MINUTES` of that window, and each GPU's series
    holding at least `min_readings` of them. A GPU whose series changed identity within the
    window (an exporter restarted at a new address) has fewer in each: the pod waits a window."""
    series = f'{ACTIVITY_SERIES}{{namespace="{namespace}"}}'
    return (
        f"max by (pod) (max_over_time({series}[{minutes}m])) < {percent:g}"
        " and on (pod) max by (pod) ("
        f"present_over_time({series}[{EDGE_MINUTES}m] offset {minutes - EDGE_MINUTES}m))"
        f" and on (pod) max by (pod) (present_over_time({series}[{EDGE_MINUTES}m]))"
        f" and on (pod) min by (pod) (count_over_time({series}[{minutes}m]))"
        f" >= {min_readings(minutes, interval_seconds)}"
    )


def recording_rule_interval(prometheus: Api) -> float | None:
    """How often Prometheus evaluates the platform's recording rule, in seconds (the shortest,
    if several groups hold it); None when it has no such rule (Prometheus HTTP API,
    /api/v1/rules: each group's `interval` in seconds, its rules' `name`)."""
    answer = prometheus.call("GET", "/api/v1/rules?type=record")
    if answer.get("status") != "success":
        raise RuntimeError(f"Prometheus answered {answer.get('status')}: {answer.get('error')}")
    intervals = [
        float(group["interval"])
        for group in answer["data"]["groups"]
        if any(rule.get("name") == ACTIVITY_SERIES for rule in group.get("rules") or [])
    ]
    return min(intervals, default=None)


def idle_pods(
    prometheus: Api, namespace: str, minutes: int, percent: float, interval_seconds: float
) -> set[str]:
    query = urllib.parse.urlencode(
        {"query": idle_query(namespace, minutes, percent, interval_seconds)}
    )
    answer = prometheus.call("GET", f"/api/v1/query?{query}")
    if answer.get("status") != "success":
        raise RuntimeError(f"Prometheus answered {answer.get('status')}: {answer.get('error')}")
    return {item["metric"]["pod"] for item in answer["data"]["result"]}


# --- What ends them ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """What a pod's end is asked of: the pod itself, or the owner to scale to zero."""

    api_version: str
    kind: str
    name: str
    uid: str
    resource: str | None = None
    """The owner's resource, to scale to zero; None for the pod itself."""
    left_alone: str | None = None
    """Why nothing is done, when nothing is."""

    @property
    def label(self) -> str:
        return f"{self.kind} {self.name}"


def controller_of(obj: Object) -> Object | None:
    refs = obj["metadata"].get("ownerReferences") or []
    return next((ref for ref in refs if ref.get("controller")), None)


@dataclass
class Owners:
    """Each pod's target, reading each owner once per run."""

    kubernetes: Kubernetes
    _read: dict[tuple[str, str], Object] = field(default_factory=dict)

    def target_of(self, pod: Object) -> Target:
        ref = controller_of(pod)
        if ref is None:
            metadata = pod["metadata"]
            return Target("v1", "Pod", metadata["name"], metadata["uid"])
        return self._owner_target(ref)

    def _owner_target(self, ref: Object) -> Target:
        api_version, kind, name, uid = ref["apiVersion"], ref["kind"], ref["name"], ref["uid"]
        if (api_version, kind) == ("batch/v1", "Job"):
            return Target(api_version, kind, name, uid, left_alone=f"Job {name} ends it when done")
        resource = SCALABLE.get((api_version, kind))
        if resource is None:
            return Target(
                api_version,
                kind,
                name,
                uid,
                left_alone=f"{kind} {name} would start it again: stop that instead",
            )
        owner = self._get(resource, name)
        parent = controller_of(owner)
        if parent is None:
            return Target(api_version, kind, name, uid, resource=resource)
        if kind == "ReplicaSet" and (parent["apiVersion"], parent["kind"]) == (
            "apps/v1",
            "Deployment",
        ):
            return self._owner_target(parent)
        return Target(
            api_version,
            kind,
            name,
            uid,
            left_alone=f"{kind} {name} is run by {parent['kind']} {parent['name']}, which would"
            " scale it back up: stop that instead",
        )

    def _get(self, resource: str, name: str) -> Object:
        key = (resource, name)
        if key not in self._read:
            self._read[key] = self.kubernetes.get(resource, name)
        return self._read[key]


# --- A run -------------------------------------------------------------------------------------


def log(message: str) -> None:
    print(message, flush=True)


def judge_idle(
    settings: Settings,
    prometheus: Api,
    pods: Iterable[Object],
    now: datetime,
    interval_seconds: float,
) -> tuple[dict[str, int], int]:
    """The running pods idle past their limit, by name with their limit, and how many
    Prometheus queries failed."""
    limits: dict[str, int] = {}
    for pod in pods:
        if not is_running(pod):
            continue
        name = pod["metadata"]["name"]
        limits[name], ignored = max_idle_minutes(pod, settings)
        if ignored:
            log(f"{settings.namespace}/{name}: {ignored}")
        if now - started_at(pod) < timedelta(minutes=limits[name]):
            del limits[name]
    idle: dict[str, int] = {}
    failures = 0
    for minutes in sorted(set(limits.values())):
        try:
            found = idle_pods(
                prometheus, settings.namespace, minutes, settings.idle_percent, interval_seconds
            )
        except (OSError, ValueError, KeyError, RuntimeError) as error:
            failures += 1
            log(f"{settings.namespace}: could not ask Prometheus about {minutes} minutes: {error}")
            continue
        idle |= {name: m for name, m in limits.items() if m == minutes and name in found}
    return idle, failures


def run(settings: Settings, kubernetes: Kubernetes, prometheus: Api, now: datetime) -> int:
    """One pass over the namespace; the number of things that failed."""
    namespace = settings.namespace
    interval = rule_interval_or_none(settings, kubernetes, prometheus, now)
    if interval is None:
        return 1
    listed = [pod for pod in kubernetes.pods() if is_live(pod)]
    claims, failures = resource_claims(settings, kubernetes, listed)
    held = {pod["metadata"]["name"]: holds_gpus(pod, claims) for pod in listed}
    # Pods whose claims cannot be told are not judged, yet kept among the GPU pods: as siblings
    # that are not idle, they keep their owner from being scaled to zero.
    pods = [pod for pod in listed if held[pod["metadata"]["name"]] is not False]
    for pod in pods:
        name = pod["metadata"]["name"]
        if held[name] is None and is_running(pod):
            log(f"{namespace}/{name}: could not tell whether its ResourceClaims hold GPUs")
    judgeable = [pod for pod in pods if held[pod["metadata"]["name"]]]
    idle, judge_failures = judge_idle(settings, prometheus, judgeable, now, interval)
    failures += judge_failures
    log(
        f"{namespace}: {len(pods)} GPU pod(s), {len(idle)} idle past their limit (below"
        f" {settings.idle_percent:g}% busy)"
    )
    if not idle:
        return failures
    if settings.action == "warn":
        return failures + warn(settings, kubernetes, pods, idle, now)
    owners = Owners(kubernetes)
    targets: dict[str, Target] = {}
    unresolved: list[str] = []
    for pod in pods:
        name = pod["metadata"]["name"]
        try:
            targets[name] = owners.target_of(pod)
        except Exception as error:
            unresolved.append(name)
            if name in idle:
                failures += 1
                log(f"{namespace}/{name}: could not read what runs it: {error}")
    ended: set[str] = set()
    for name, minutes in idle.items():
        target = targets.get(name)
        if target is None or target.uid in ended:
            continue
        judged = Judged(name, minutes, target)
        siblings = [p for p, t in targets.items() if t.uid == target.uid and p != name]
        try:
            if end(settings, kubernetes, judged, siblings, idle, unresolved, now):
                ended.add(target.uid)
        except Exception as error:
            failures += 1
            log(f"{judged.what(namespace)}; could not end it: {error}")
    return failures


def resource_claims(
    settings: Settings, kubernetes: Kubernetes, pods: Iterable[Object]
) -> tuple[dict[str, Object] | None, int]:
    """The namespace's ResourceClaims by name, read only when a pod has claims (none when no
    pod has), and how many reads failed; None, after saying why, when they could not be read."""
    if not any(has_claims(pod) for pod in pods):
        return {}, 0
    try:
        return kubernetes.resource_claims(), 0
    except (OSError, ValueError, KeyError) as error:
        log(
            f"{settings.namespace}: could not list its ResourceClaims: {error}; judging no pod"
            " by its claims"
        )
        return None, 1


def rule_interval_or_none(
    settings: Settings, kubernetes: Kubernetes, prometheus: Api, now: datetime
) -> float | None:
    """The recording rule's evaluation interval; None, after saying why on the log and in a
    Warning Event on the reaper's CronJob, when Prometheus has no such rule or cannot say."""
    try:
        interval = recording_rule_interval(prometheus)
        why = f"has no recording rule {ACTIVITY_SERIES}"
    except (OSError, ValueError, KeyError, RuntimeError) as error:
        interval, why = None, f"could not list its recording rules: {error}"
    if interval is not None:
        return interval
    message = (
        f"Prometheus at {settings.prometheus_url} {why}; ending nothing: without it no GPU"
        " would ever look idle (docs/idle-gpu-pods.md)"
    )
    log(f"{settings.namespace}: {message}")
    try:
        cron_job = Target("batch/v1", "CronJob", settings.cron_job_name, "")
        kubernetes.record_event(
            cron_job, message, now, NO_RULE_REASON, "Warning", settings.cron_job_namespace
        )
    except Exception as error:
        log(f"{settings.namespace}: could not record an Event: {error}")
    return None


def warn(
    settings: Settings,
    kubernetes: Kubernetes,
    pods: Iterable[Object],
    idle: Mapping[str, int],
    now: datetime,
) -> int:
    """Mark each idle pod with `IDLE_ANNOTATION` and a Warning Event, and end nothing; the
    number of pods that could not be marked."""
    failures = 0
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    for pod in pods:
        metadata = pod["metadata"]
        minutes = idle.get(metadata["name"])
        if minutes is None:
            continue
        what = f"{settings.namespace}/{metadata['name']}: GPUs idle for {minutes} minutes"
        note = f"below {settings.idle_percent:g}% busy for {minutes} minutes as of {stamp}"
        message = (
            f"Pod {metadata['name']} held GPUs {note}, its limit ({MAX_IDLE_ANNOTATION});"
            " the namespace only warns (gpuIdleAction: warn), so it keeps running."
        )
        try:
            kubernetes.annotate_pod(metadata["name"], metadata["uid"], {IDLE_ANNOTATION: note})
        except urllib.error.HTTPError as error:
            if error.code in (404, 409):
                log(f"{what}; gone or replaced since it was listed")
                continue
            failures += 1
            log(f"{what}; could not annotate it: {error}")
            continue
        except Exception as error:
            failures += 1
            log(f"{what}; could not annotate it: {error}")
            continue
        log(f"{what}; warned (annotated {IDLE_ANNOTATION})")
        try:
            pod_target = Target("v1", "Pod", metadata["name"], metadata["uid"])
            kubernetes.record_event(pod_target, message, now, type_="Warning")
        except Exception as error:
            log(f"{what}; could not record an Event: {error}")
    return failures


@dataclass(frozen=True)
class Judged:
    """A pod found idle past its limit."""

    name: str
    minutes: int
    target: Target

    def what(self, namespace: str) -> str:
        return f"{namespace}/{self.name}: GPUs idle for {self.minutes} minutes"


def end(
    settings: Settings,
    kubernetes: Kubernetes,
    pod: Judged,
    siblings: list[str],
    idle: Mapping[str, int],
    unresolved: list[str],
    now: datetime,
) -> bool:
    """End the pod through its target, logging what was done; whether it was. Raises when
    the API refuses."""
    target = pod.target
    what = pod.what(settings.namespace)
    if target.left_alone is not None:
        log(f"{what}; left alone: {target.left_alone}")
        return False
    if target.resource is not None:
        busy = [sibling for sibling in siblings if sibling not in idle]
        if busy:
            log(f"{what}; {target.label} left alone: {', '.join(busy)} not idle")
            return False
        if unresolved:
            log(
                f"{what}; {target.label} left alone: could not tell whether"
                f" {', '.join(unresolved)} belong to it"
            )
            return False
    try:
        if target.resource is None:
            kubernetes.delete_pod(target.name, target.uid)
            action = "deleted the pod"
        else:
            kubernetes.scale_to_zero(target.resource, target.name)
            action = f"scaled {target.label} to 0 replicas"
    except urllib.error.HTTPError as error:
        # Gone, or (the delete's uid precondition) replaced by a new pod since it was listed.
        if error.code in (404, 409):
            log(f"{what}; gone or replaced since it was listed")
            return False
        raise
    log(f"{what}; {action}")
    message = (
        f"Pod {pod.name} held GPUs below {settings.idle_percent:g}% busy for {pod.minutes}"
        f" minutes, its limit ({MAX_IDLE_ANNOTATION}); {action}."
    )
    try:
        kubernetes.record_event(target, message, now)
    except Exception as error:
        log(f"{what}; could not record an Event: {error}")
    return True


def main() -> int:
    settings = Settings.from_env(os.environ)
    kubernetes = Kubernetes.in_cluster(settings.namespace)
    prometheus = Api(settings.prometheus_url)
    try:
        failures = run(settings, kubernetes, prometheus, datetime.now(UTC))
    except (OSError, ValueError) as error:
        log(f"{settings.namespace}: could not list its pods: {error}")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
