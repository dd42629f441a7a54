"""The idle GPU pod reaper script, run as its CronJob runs it, against a fake Kubernetes API
server and a fake Prometheus on localhost; and its query, against the platform's real recording
rule in promtool."""

import ast
import json
import re
import sys
import threading
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_platform.kubernetes import idle_gpu_reaper
from gpu_platform.kubernetes.idle_gpu_pods import HOME_ROLE_RULES, ROLE_RULES
from gpu_platform.kubernetes.idle_gpu_reaper import Api, Kubernetes, Settings, idle_query, run
from tests.gpu_platform.kubernetes.test_alert_rules import promtool, write_default_rules
from tests.kubernetes_schemas import validate

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
NAMESPACE = "ml-sandbox"
REAPER_NAMESPACE = "gpu-idle-reaper"
SETTINGS = Settings(
    NAMESPACE,
    "unused",
    idle_minutes=60,
    idle_percent=5,
    action="end",
    cron_job_name=NAMESPACE,
    cron_job_namespace=REAPER_NAMESPACE,
)
WARN = replace(SETTINGS, action="warn")
JOB_ENV = {
    "NAMESPACE": NAMESPACE,
    "GPU_IDLE_MINUTES": "60",
    "IDLE_GPU_UTILIZATION_PERCENT": "5",
    "CRON_JOB_NAME": NAMESPACE,
    "CRON_JOB_NAMESPACE": REAPER_NAMESPACE,
}
"""What the CronJob's pod is given, but for where Prometheus is."""
Object = dict[str, Any]


# --- Fakes -----------------------------------------------------------------------------------


@dataclass
class FakeKubernetes:
    """The API server, as far as the reaper calls it, for one namespace."""

    pods: list[Object] = field(default_factory=list)
    apps: dict[tuple[str, str], Object] = field(default_factory=dict)
    """(resource, name) -> a Deployment, StatefulSet or ReplicaSet."""
    failing: dict[str, int] = field(default_factory=dict)
    """Object name -> the status its delete or scale gets."""
    page_size: int = 100
    deleted: list[tuple[str, str]] = field(default_factory=list)
    """(pod, uid precondition) for each delete."""
    scaled: list[tuple[str, str, Object]] = field(default_factory=list)
    """(resource, name, patch) for each scale."""
    events: list[Object] = field(default_factory=list)
    annotated: list[tuple[str, Object]] = field(default_factory=list)
    """(pod, merge patch) for each pod patched."""
    claims: list[Object] = field(default_factory=list)
    """The namespace's ResourceClaims."""
    claims_status: int = 200
    """What a list of them gets."""
    claims_version: str = "v1"
    """The one version of `resource.k8s.io` the server serves."""
    calls: list[tuple[str, str]] = field(default_factory=list)
    """(method, path) of each call, in order."""

    def answer(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        url = urllib.parse.urlsplit(path)
        self.calls.append((method, url.path))
        query = dict(urllib.parse.parse_qsl(url.query))
        core = f"/api/v1/namespaces/{NAMESPACE}"
        apps = f"/apis/apps/v1/namespaces/{NAMESPACE}"
        if method == "PATCH" and (match := re.fullmatch(f"{core}/pods/([^/]+)", url.path)):
            if match[1] in self.failing:
                return self.failing[match[1]], {"kind": "Status"}
            self.annotated.append((match[1], body))
            return 200, {"kind": "Pod"}
        if (method, url.path) == ("GET", f"{core}/pods"):
            return 200, self._page(self.pods, query)
        if (method, url.path) == (
            "GET",
            f"/apis/resource.k8s.io/{self.claims_version}/namespaces/{NAMESPACE}/resourceclaims",
        ):
            if self.claims_status != 200:
                return self.claims_status, {"kind": "Status"}
            return 200, self._page(self.claims, query)
        if (method, url.path) in {
            ("POST", f"{core}/events"),
            ("POST", f"/api/v1/namespaces/{REAPER_NAMESPACE}/events"),
        }:
            self.events.append(body)
            return 201, body
        if method == "DELETE" and (match := re.fullmatch(f"{core}/pods/([^/]+)", url.path)):
            name = match[1]
            if name in self.failing:
                return self.failing[name], {"kind": "Status"}
            self.deleted.append((name, body["preconditions"]["uid"]))
            return 200, {"kind": "Status"}
        if match := re.fullmatch(f"{apps}/([a-z]+)/([^/]+)(/scale)?", url.path):
            resource, name, scale = match[1], match[2], match[3]
            if method == "GET" and not scale and (resource, name) in self.apps:
                return 200, self.apps[(resource, name)]
            if method == "PATCH" and scale:
                if name in self.failing:
                    return self.failing[name], {"kind": "Status"}
                self.scaled.append((resource, name, body))
                return 200, {"kind": "Scale"}
        return 404, {"kind": "Status", "reason": "NotFound"}

    def _page(self, items: list[Object], query: dict[str, str]) -> Object:
        start = int(query.get("continue", "0"))
        end = start + min(int(query["limit"]), self.page_size)
        more = {"continue": str(end)} if end < len(items) else {}
        return {"items": items[start:end], "metadata": more}


@dataclass
class FakePrometheus:
    """Prometheus's query API: the pods its idle query finds, by the window asked about."""

    idle: dict[int, list[str]] = field(default_factory=dict)
    down: bool = False
    queries: list[str] = field(default_factory=list)
    rule_groups: list[Object] = field(
        default_factory=lambda: [
            {"name": "other", "interval": 15, "rules": [{"name": "up:sum", "type": "recording"}]},
            {
                "name": "gpu-platform.gpus",
                "interval": 60,
                "rules": [
                    {"name": "gpu_platform:gpu_activity:percent", "type": "recording"},
                    {"name": "gpu_platform:allocated_gpu_activity:percent", "type": "recording"},
                ],
            },
        ]
    )
    """What /api/v1/rules?type=record lists."""

    def answer(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        url = urllib.parse.urlsplit(path)
        if url.path == "/api/v1/rules":
            assert dict(urllib.parse.parse_qsl(url.query)) == {"type": "record"}
            if self.down:
                return 503, {"status": "error", "error": "unavailable"}
            return 200, {"status": "success", "data": {"groups": self.rule_groups}}
        query = dict(urllib.parse.parse_qsl(url.query))["query"]
        self.queries.append(query)
        if self.down:
            return 503, {"status": "error", "error": "unavailable"}
        minutes = int(re.search(r"\[(\d+)m\]", query)[1])  # type: ignore[index]
        result = [{"metric": {"pod": pod}, "value": [0, "1"]} for pod in self.idle.get(minutes, [])]
        return 200, {"status": "success", "data": {"resultType": "vector", "result": result}}


def serve(fake: FakeKubernetes | FakePrometheus) -> tuple[ThreadingHTTPServer, str]:
    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            status, answer = fake.answer(self.command, self.path, body)
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = do_DELETE = _answer

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


@pytest.fixture
def kubernetes() -> FakeKubernetes:
    return FakeKubernetes()


@pytest.fixture
def prometheus() -> FakePrometheus:
    return FakePrometheus()


@pytest.fixture
def urls(kubernetes: FakeKubernetes, prometheus: FakePrometheus) -> Iterator[tuple[str, str]]:
    """Where the fake API server and the fake Prometheus listen."""
    servers = [serve(kubernetes), serve(prometheus)]
    yield servers[0][1], servers[1][1]
    for server, _ in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture
def reap(urls: tuple[str, str]) -> Any:
    """One run of the reaper against the fakes; the number of failures it returns."""
    api_url, prometheus_url = urls

    def once(settings: Settings = SETTINGS) -> int:
        return run(settings, Kubernetes(Api(api_url), NAMESPACE), Api(prometheus_url), NOW)

    return once


# --- Builders --------------------------------------------------------------------------------


def owner(kind: str, name: str, api_version: str = "apps/v1") -> Object:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": f"uid-{name}",
        "controller": True,
    }


def gpu_pod(
    name: str,
    *,
    owned_by: Object | None = None,
    age_minutes: int = 120,
    phase: str = "Running",
    annotations: dict[str, str] | None = None,
    limits: dict[str, str] | None = None,
) -> Object:
    metadata: Object = {
        "name": name,
        "namespace": NAMESPACE,
        "uid": f"uid-{name}",
        "creationTimestamp": "2026-03-01T00:00:00Z",
        "annotations": annotations or {},
    }
    if owned_by is not None:
        metadata["ownerReferences"] = [owned_by]
    started = (NOW - timedelta(minutes=age_minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")
    container = {"name": "main", "resources": {"limits": limits or {"nvidia.com/gpu": "1"}}}
    return {
        "metadata": metadata,
        "spec": {"containers": [container]},
        "status": {"phase": phase, "startTime": started},
    }


def claiming_pod(
    name: str,
    *,
    owned_by: Object | None = None,
    phase: str = "Running",
    generated: bool = True,
) -> Object:
    """A pod that asks for no `nvidia.com/` resource and claims a device through the namespace's
    ResourceClaimTemplate `gpu-l4`, as docs/dra.md shows; `generated`: whether Kubernetes has
    named the claim it generated in the pod's status."""
    pod = gpu_pod(name, owned_by=owned_by, phase=phase, limits={"cpu": "4"})
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "gpu-l4"}]
    pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    if generated:
        pod["status"]["resourceClaimStatuses"] = [
            {"name": "gpu", "resourceClaimName": f"{name}-gpu-x7k2p"}
        ]
    return pod


def claim(pod: str, driver: str | None = "gpu.nvidia.com", **result: Any) -> Object:
    """The ResourceClaim generated for the pod's claim `gpu`, allocated one device of `driver`
    (None: not allocated yet), as resource.k8s.io/v1 gives it."""
    claimed: Object = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": f"{pod}-gpu-x7k2p", "namespace": NAMESPACE},
        "spec": {
            "devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "l4.x"}}]}
        },
    }
    if driver is not None:
        device = {"request": "gpu", "driver": driver, "pool": "ip-10-0-1-17", "device": "gpu-0"}
        claimed["status"] = {"allocation": {"devices": {"results": [{**device, **result}]}}}
    return claimed


def workload(kind: str, name: str, owned_by: Object | None = None) -> Object:
    metadata: Object = {"name": name, "namespace": NAMESPACE, "uid": f"uid-{name}"}
    if owned_by is not None:
        metadata["ownerReferences"] = [owned_by]
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": metadata}


def deployment_pods(kubernetes: FakeKubernetes, deployment: str, *pods: str) -> list[Object]:
    replica_set = f"{deployment}-7f9c"
    kubernetes.apps[("deployments", deployment)] = workload("Deployment", deployment)
    kubernetes.apps[("replicasets", replica_set)] = workload(
        "ReplicaSet", replica_set, owner("Deployment", deployment)
    )
    return [gpu_pod(pod, owned_by=owner("ReplicaSet", replica_set)) for pod in pods]


SCALE_TO_ZERO = {"spec": {"replicas": 0}}


# --- Which pods end, and how -----------------------------------------------------------------


def test_an_idle_bare_pod_is_deleted(reap, kubernetes, prometheus) -> None:
    kubernetes.pods = [gpu_pod("notebook")]
    prometheus.idle = {60: ["notebook"]}

    reap()

    assert kubernetes.deleted == [("notebook", "uid-notebook")]


def test_an_idle_pod_of_a_deployment_scales_the_deployment_to_zero(
    reap, kubernetes, prometheus
) -> None:
    kubernetes.pods = deployment_pods(kubernetes, "inference", "inference-7f9c-abcde")
    prometheus.idle = {60: ["inference-7f9c-abcde"]}

    reap()

    assert (kubernetes.scaled, kubernetes.deleted) == (
        [("deployments", "inference", SCALE_TO_ZERO)],
        [],
    )


def test_an_idle_pod_of_a_statefulset_scales_the_statefulset_to_zero(
    reap, kubernetes, prometheus
) -> None:
    kubernetes.apps[("statefulsets", "notebook")] = workload("StatefulSet", "notebook")
    kubernetes.pods = [gpu_pod("notebook-0", owned_by=owner("StatefulSet", "notebook"))]
    prometheus.idle = {60: ["notebook-0"]}

    reap()

    assert kubernetes.scaled == [("statefulsets", "notebook", SCALE_TO_ZERO)]


def test_an_idle_pod_of_a_replicaset_of_its_own_scales_the_replicaset_to_zero(
    reap, kubernetes, prometheus
) -> None:
    kubernetes.apps[("replicasets", "server")] = workload("ReplicaSet", "server")
    kubernetes.pods = [gpu_pod("server-x1", owned_by=owner("ReplicaSet", "server"))]
    prometheus.idle = {60: ["server-x1"]}

    reap()

    assert kubernetes.scaled == [("replicasets", "server", SCALE_TO_ZERO)]


def test_a_busy_pod_is_left_alone(reap, kubernetes, prometheus) -> None:
    kubernetes.pods = [gpu_pod("training")]
    prometheus.idle = {60: []}

    reap()

    assert (kubernetes.deleted, kubernetes.scaled) == ([], [])


def test_a_pod_younger_than_its_limit_is_left_alone(reap, kubernetes, prometheus) -> None:
    kubernetes.pods = [gpu_pod("notebook", age_minutes=59)]
    prometheus.idle = {60: ["notebook"]}

    reap()

    assert kubernetes.deleted == []


def test_a_jobs_pod_is_left_to_end_with_its_job(reap, kubernetes, prometheus) -> None:
    kubernetes.pods = [gpu_pod("train-x7", owned_by=owner("Job", "train", "batch/v1"))]
    prometheus.idle = {60: ["train-x7"]}

    reap()

    assert (kubernetes.deleted, kubernetes.scaled) == ([], [])


def test_a_statefulset_an_operator_runs_is_left_to_the_operator(
    reap, kubernetes, prometheus
) -> None:
    # Kubeflow's notebook controller would scale its StatefulSet back up.
    notebook = owner("Notebook", "notebook", "kubeflow.org/v1")
    kubernetes.apps[("statefulsets", "notebook")] = workload("StatefulSet", "notebook", notebook)
    kubernetes.pods = [gpu_pod("notebook-0", owned_by=owner("StatefulSet", "notebook"))]
    prometheus.idle = {60: ["notebook-0"]}

    reap()

    assert (kubernetes.deleted, kubernetes.scaled) == ([], [])


def test_a_pod_of_another_controller_is_left_to_it(reap, kubernetes, prometheus) -> None:
    kubernetes.pods = [gpu_pod("ray-head", owned_by=owner("RayCluster", "ray", "ray.io/v1"))]
    prometheus.idle = {60: ["ray-head"]}

    reap()

    assert (kubernetes.deleted, kubernetes.scaled) == ([], [])


def test_a_deployment_with_a_busy_pod_is_not_scaled(reap, kubernetes, prometheus) -> None:
    kubernetes.pods = deployment_pods(kubernetes, "inference", "inference-a", "inference-b")
    prometheus.idle = {60: ["inference-a"]}

    reap()

    assert kubernetes.scaled == []


def test_a_deployment_with_a_pod_waiting_for_a_gpu_is_not_scaled(
    reap, kubernetes, prometheus
) -> None:
    idle, pending = deployment_pods(kubernetes, "inference", "inference-a", "inference-b")
    pending["status"] = {"phase": "Pending"}
    kubernetes.pods = [idle, pending]
    prometheus.idle = {60: ["inference-a"]}

    reap()

    assert kubernetes.scaled == []


def test_a_deployment_whose_pods_are_all_idle_is_scaled_once(reap, kubernetes, prometheus) -> None:
    kubernetes.pods = deployment_pods(kubernetes, "inference", "inference-a", "inference-b")
    prometheus.idle = {60: ["inference-a", "inference-b"]}

    reap()

    assert kubernetes.scaled == [("deployments", "inference", SCALE_TO_ZERO)]


def test_a_pod_without_gpus_is_not_judged(reap, kubernetes, prometheus) -> None:
    kubernetes.pods = [gpu_pod("web", limits={"cpu": "1"})]
    prometheus.idle = {60: ["web"]}

    reap()

    assert (kubernetes.deleted, prometheus.queries) == ([], [])


def test_a_pod_holding_a_mig_slice_is_judged_like_one_holding_a_gpu(
    reap, kubernetes, prometheus
) -> None:
    kubernetes.pods = [gpu_pod("notebook", limits={"nvidia.com/mig-1g.10gb": "1"})]
    prometheus.idle = {60: ["notebook"]}

    reap()

    assert kubernetes.deleted == [("notebook", "uid-notebook")]


def test_a_pending_pod_is_not_judged(reap, kubernetes, prometheus) -> None:
    kubernetes.pods = [gpu_pod("notebook", phase="Pending")]
    prometheus.idle = {60: ["notebook"]}

    reap()

    assert (kubernetes.deleted, prometheus.queries) == ([], [])


def test_every_page_of_pods_is_judged(reap, kubernetes, prometheus) -> None:
    kubernetes.page_size = 2
    kubernetes.pods = [gpu_pod(f"notebook-{i}") for i in range(5)]
    prometheus.idle = {60: ["notebook-4"]}

    reap()

    assert kubernetes.deleted == [("notebook-4", "uid-notebook-4")]


# --- Pods that claim their GPUs (DRA) ---------------------------------------------------------

# A network device's DRA driver, beside NVIDIA's `gpu.nvidia.com`.
OTHER_DRIVER = "net.example.com"


def test_an_idle_pod_holding_a_gpu_claim_is_deleted(reap, kubernetes, prometheus) -> None:
    kubernetes.pods = [claiming_pod("notebook")]
    kubernetes.claims = [claim("notebook")]
    prometheus.idle = {60: ["notebook"]}

    reap()

    assert kubernetes.deleted == [("notebook", "uid-notebook")]


def test_a_busy_pod_holding_a_gpu_claim_is_left_alone(reap, kubernetes, prometheus) -> None:
    kubernetes.pods = [claiming_pod("training")]
    kubernetes.claims = [claim("training")]
    prometheus.idle = {60: []}

    reap()

    assert (kubernetes.deleted, len(prometheus.queries)) == ([], 1)


def test_a_pod_whose_claim_another_driver_allocated_is_not_judged(
    reap, kubernetes, prometheus
) -> None:
    kubernetes.pods = [claiming_pod("fabric")]
    kubernetes.claims = [claim("fabric", OTHER_DRIVER)]
    prometheus.idle = {60: ["fabric"]}

    reap()

    assert (kubernetes.deleted, prometheus.queries) == ([], [])


def test_a_claim_with_admin_access_to_a_gpu_is_not_the_pods_gpu(
    reap, kubernetes, prometheus
) -> None:
    kubernetes.pods = [claiming_pod("monitor")]
    kubernetes.claims = [claim("monitor", adminAccess=True)]
    prometheus.idle = {60: ["monitor"]}

    reap()

    assert (kubernetes.deleted, prometheus.queries) == ([], [])


def test_a_resource_claim_the_pod_names_itself_is_read(reap, kubernetes, prometheus) -> None:
    pod = claiming_pod("notebook", generated=False)
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "shared-l4"}]
    shared = claim("notebook")
    shared["metadata"]["name"] = "shared-l4"
    kubernetes.pods, kubernetes.claims = [pod], [shared]
    prometheus.idle = {60: ["notebook"]}

    reap()

    assert kubernetes.deleted == [("notebook", "uid-notebook")]


@pytest.mark.parametrize(
    "generated", [False, True], ids=["claim not generated yet", "claim not allocated yet"]
)
def test_a_deployment_with_a_pod_whose_claim_cannot_be_told_yet_is_not_scaled(
    reap, kubernetes, prometheus, generated: bool
) -> None:
    kubernetes.apps[("deployments", "inference")] = workload("Deployment", "inference")
    kubernetes.apps[("replicasets", "inference-7f9c")] = workload(
        "ReplicaSet", "inference-7f9c", owner("Deployment", "inference")
    )
    replica_set = owner("ReplicaSet", "inference-7f9c")
    running = claiming_pod("inference-a", owned_by=replica_set)
    waiting = claiming_pod(
        "inference-b", owned_by=replica_set, phase="Pending", generated=generated
    )
    kubernetes.pods = [running, waiting]
    kubernetes.claims = [claim("inference-a"), *([claim("inference-b", None)] if generated else [])]
    prometheus.idle = {60: ["inference-a"]}

    reap()

    assert kubernetes.scaled == []


def test_every_page_of_resource_claims_is_read(reap, kubernetes, prometheus) -> None:
    kubernetes.page_size = 2
    kubernetes.pods = [claiming_pod(f"notebook-{i}") for i in range(5)]
    kubernetes.claims = [claim(f"notebook-{i}") for i in range(5)]
    prometheus.idle = {60: ["notebook-4"]}

    reap()

    assert kubernetes.deleted == [("notebook-4", "uid-notebook-4")]


@pytest.mark.parametrize("minor", ["1.34", "1.36"])
def test_the_claims_and_pods_the_fake_serves_are_objects_kubernetes_takes(minor: str) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", **claiming_pod("notebook")}

    for obj in (pod, claim("notebook"), claim("monitor", adminAccess=True), claim("x", None)):
        validate(obj, minor)


def test_claims_are_read_as_v1beta1_where_the_cluster_serves_no_v1(
    reap, kubernetes, prometheus
) -> None:
    kubernetes.claims_version = "v1beta1"
    kubernetes.pods = [claiming_pod("notebook")]
    kubernetes.claims = [claim("notebook")]
    prometheus.idle = {60: ["notebook"]}

    reap()

    assert kubernetes.deleted == [("notebook", "uid-notebook")]


def test_claims_that_cannot_be_read_judge_no_claiming_pod_and_fail_the_run(
    reap, kubernetes, prometheus
) -> None:
    kubernetes.pods = [claiming_pod("claimed"), gpu_pod("counted")]
    kubernetes.claims = [claim("claimed")]
    kubernetes.claims_status = 403
    prometheus.idle = {60: ["claimed", "counted"]}

    failures = reap()

    assert (failures, kubernetes.deleted) == (1, [("counted", "uid-counted")])


def test_claims_are_not_read_where_no_pod_has_one(reap, kubernetes, prometheus) -> None:
    kubernetes.pods = [gpu_pod("notebook")]
    kubernetes.claims_status = 403
    prometheus.idle = {60: ["notebook"]}

    assert reap() == 0


# --- Each pod's limit ----------------------------------------------------------------------


def test_the_annotation_shortens_a_pods_limit(reap, kubernetes, prometheus) -> None:
    annotations = {"gpu-platform.io/max-idle-minutes": "30"}
    kubernetes.pods = [gpu_pod("notebook", age_minutes=45, annotations=annotations)]
    prometheus.idle = {30: ["notebook"]}

    reap()

    assert kubernetes.deleted == [("notebook", "uid-notebook")]


def test_an_annotation_above_the_namespaces_limit_is_not_taken(
    reap, kubernetes, prometheus, capsys
) -> None:
    annotations = {"gpu-platform.io/max-idle-minutes": "120"}
    kubernetes.pods = [gpu_pod("notebook", annotations=annotations)]
    prometheus.idle = {60: ["notebook"], 120: []}

    reap()

    assert kubernetes.deleted == [("notebook", "uid-notebook")]
    assert (
        "ml-sandbox/notebook: gpu-platform.io/max-idle-minutes='120' is not a whole number of"
        " minutes from 15 to 60: the namespace's 60 minutes apply"
    ) in capsys.readouterr().out


def test_an_annotation_below_fifteen_minutes_is_not_taken(reap, kubernetes, prometheus) -> None:
    annotations = {"gpu-platform.io/max-idle-minutes": "5"}
    kubernetes.pods = [gpu_pod("notebook", age_minutes=30, annotations=annotations)]
    prometheus.idle = {5: ["notebook"], 60: ["notebook"]}

    reap()

    assert kubernetes.deleted == []


def test_prometheus_is_asked_once_per_limit(reap, kubernetes, prometheus) -> None:
    short = {"gpu-platform.io/max-idle-minutes": "30"}
    kubernetes.pods = [
        gpu_pod("a", annotations=short),
        gpu_pod("b", annotations=short),
        gpu_pod("c"),
    ]

    reap()

    assert prometheus.queries == [
        idle_query(NAMESPACE, 30, 5, 60),
        idle_query(NAMESPACE, 60, 5, 60),
    ]


def test_a_terminating_pod_is_not_judged(reap, kubernetes, prometheus) -> None:
    leaving = gpu_pod("notebook")
    leaving["metadata"]["deletionTimestamp"] = "2026-03-02T08:59:00Z"
    kubernetes.pods = [leaving]
    prometheus.idle = {60: ["notebook"]}

    reap()

    assert (kubernetes.deleted, prometheus.queries) == ([], [])


def test_a_deployment_is_not_scaled_while_a_gpu_pods_owner_could_not_be_read(
    reap, kubernetes, prometheus
) -> None:
    # Mid-rollout: `web-new` (of the Deployment's new ReplicaSet) is idle; `web-old`, busy, is of
    # the old ReplicaSet, which cannot be read. It may belong to the same Deployment: scaling
    # that to zero would end its busy pod.
    kubernetes.pods = [
        *deployment_pods(kubernetes, "web", "web-new"),
        gpu_pod("web-old", owned_by=owner("ReplicaSet", "web-5d2b")),
    ]
    prometheus.idle = {60: ["web-new"]}

    failures = reap()

    assert (kubernetes.scaled, failures) == ([], 0)


# --- Warning only ------------------------------------------------------------------------------


def test_in_warn_mode_an_idle_pod_is_annotated_and_nothing_ends(
    reap, kubernetes, prometheus
) -> None:
    kubernetes.pods = [*deployment_pods(kubernetes, "web", "web-0"), gpu_pod("scratch")]
    prometheus.idle = {60: ["web-0", "scratch"]}

    failures = reap(WARN)

    assert (kubernetes.deleted, kubernetes.scaled, failures) == ([], [], 0)
    assert kubernetes.annotated == [
        (
            name,
            {
                "metadata": {
                    "uid": f"uid-{name}",
                    "annotations": {
                        "gpu-platform.io/idle-gpu": "below 5% busy for 60 minutes as of"
                        " 2026-03-02T09:00:00Z"
                    },
                }
            },
        )
        for name in ("web-0", "scratch")
    ]


def test_in_warn_mode_each_idle_pod_gets_a_warning_event(reap, kubernetes, prometheus) -> None:
    kubernetes.pods = [gpu_pod("scratch")]
    prometheus.idle = {60: ["scratch"]}

    reap(WARN)

    (event,) = kubernetes.events
    assert (event["involvedObject"], event["type"], event["reason"], event["message"]) == (
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": "scratch",
            "namespace": NAMESPACE,
            "uid": "uid-scratch",
        },
        "Warning",
        "IdleGpu",
        "Pod scratch held GPUs below 5% busy for 60 minutes as of 2026-03-02T09:00:00Z, its"
        " limit (gpu-platform.io/max-idle-minutes); the namespace only warns (gpuIdleAction:"
        " warn), so it keeps running.",
    )


def test_the_action_defaults_to_warn_and_takes_no_other_value() -> None:
    env = {**JOB_ENV, "PROMETHEUS_URL": "http://prometheus:9090"}

    assert Settings.from_env(env).action == "warn"
    with pytest.raises(ValueError, match="IDLE_GPU_ACTION='delete' is not one of"):
        Settings.from_env({**env, "IDLE_GPU_ACTION": "delete"})


# --- The recording rule ------------------------------------------------------------------------


def test_without_its_recording_rule_the_reaper_ends_nothing_and_fails(
    reap, kubernetes, prometheus
) -> None:
    kubernetes.pods = [gpu_pod("notebook")]
    prometheus.idle = {60: ["notebook"]}
    prometheus.rule_groups = prometheus.rule_groups[:1]

    failures = reap()

    assert (kubernetes.deleted, prometheus.queries, failures) == ([], [], 1)


def test_a_missing_recording_rule_is_a_warning_event_on_the_cron_job(
    reap, kubernetes, prometheus
) -> None:
    prometheus.rule_groups = []

    reap()

    (event,) = kubernetes.events
    # An Event lives in its object's namespace: the CronJob's, the platform's.
    assert (event["metadata"]["namespace"], event["involvedObject"]) == (
        REAPER_NAMESPACE,
        {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "name": NAMESPACE,
            "namespace": REAPER_NAMESPACE,
        },
    )
    assert (event["type"], event["reason"]) == ("Warning", "IdleGpuRuleMissing")
    assert "has no recording rule gpu_platform:allocated_gpu_activity:percent" in (event["message"])


def test_the_readings_asked_for_follow_the_rules_evaluation_interval(
    reap, kubernetes, prometheus
) -> None:
    # Evaluated every 30 s, a 60-minute window holds 120 readings: at least 108 of them.
    prometheus.rule_groups[1]["interval"] = 30
    kubernetes.pods = [gpu_pod("notebook")]

    reap()

    (query,) = prometheus.queries
    assert query.endswith("[60m])) >= 108")


# --- Failures ------------------------------------------------------------------------------


def test_a_failure_on_one_pod_does_not_stop_the_others(reap, kubernetes, prometheus) -> None:
    kubernetes.pods = [gpu_pod("first"), gpu_pod("second")]
    kubernetes.failing = {"first": 500}
    prometheus.idle = {60: ["first", "second"]}

    failures = reap()

    assert (kubernetes.deleted, failures) == ([("second", "uid-second")], 1)


def test_an_owner_that_cannot_be_read_does_not_stop_the_others(
    reap, kubernetes, prometheus
) -> None:
    # The ReplicaSet of `lost` is not there to read.
    kubernetes.pods = [gpu_pod("lost", owned_by=owner("ReplicaSet", "gone")), gpu_pod("bare")]
    prometheus.idle = {60: ["lost", "bare"]}

    failures = reap()

    assert (kubernetes.deleted, failures) == ([("bare", "uid-bare")], 1)


def test_a_pod_gone_before_its_delete_is_not_a_failure(reap, kubernetes, prometheus) -> None:
    kubernetes.pods = [gpu_pod("notebook")]
    kubernetes.failing = {"notebook": 404}
    prometheus.idle = {60: ["notebook"]}

    assert reap() == 0


def test_prometheus_out_of_reach_ends_nothing_and_fails_the_run(
    reap, kubernetes, prometheus
) -> None:
    kubernetes.pods = [gpu_pod("notebook")]
    prometheus.down = True

    failures = reap()

    assert (kubernetes.deleted, failures) == ([], 1)


# --- What it tells ---------------------------------------------------------------------------


def test_each_action_is_logged_with_the_namespace_pod_and_idle_minutes(
    reap, kubernetes, prometheus, capsys
) -> None:
    kubernetes.apps[("statefulsets", "notebook")] = workload("StatefulSet", "notebook")
    kubernetes.pods = [
        gpu_pod("notebook-0", owned_by=owner("StatefulSet", "notebook")),
        gpu_pod("scratch"),
    ]
    prometheus.idle = {60: ["notebook-0", "scratch"]}

    reap()

    assert capsys.readouterr().out.splitlines() == [
        "ml-sandbox: 2 GPU pod(s), 2 idle past their limit (below 5% busy)",
        "ml-sandbox/notebook-0: GPUs idle for 60 minutes; scaled StatefulSet notebook to 0"
        " replicas",
        "ml-sandbox/scratch: GPUs idle for 60 minutes; deleted the pod",
    ]


def test_a_pod_left_alone_is_logged_with_the_reason(reap, kubernetes, prometheus, capsys) -> None:
    kubernetes.pods = [gpu_pod("train-x7", owned_by=owner("Job", "train", "batch/v1"))]
    prometheus.idle = {60: ["train-x7"]}

    reap()

    assert capsys.readouterr().out.splitlines()[-1] == (
        "ml-sandbox/train-x7: GPUs idle for 60 minutes; left alone: Job train ends it when done"
    )


def test_each_action_is_recorded_as_an_event_on_what_was_acted_on(
    reap, kubernetes, prometheus
) -> None:
    kubernetes.apps[("statefulsets", "notebook")] = workload("StatefulSet", "notebook")
    kubernetes.pods = [gpu_pod("notebook-0", owned_by=owner("StatefulSet", "notebook"))]
    prometheus.idle = {60: ["notebook-0"]}

    reap()

    (event,) = kubernetes.events
    assert (event["involvedObject"], event["reason"], event["message"]) == (
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "name": "notebook",
            "namespace": "ml-sandbox",
            "uid": "uid-notebook",
        },
        "IdleGpu",
        "Pod notebook-0 held GPUs below 5% busy for 60 minutes, its limit"
        " (gpu-platform.io/max-idle-minutes); scaled StatefulSet notebook to 0 replicas.",
    )


# --- What its Role allows ----------------------------------------------------------------------

VERBS = {"POST": "create", "PATCH": "patch", "DELETE": "delete"}


def permission(method: str, path: str) -> tuple[str, str, str, str]:
    """The namespace, API group, resource (with its subresource) and verb that Kubernetes'
    authorizer checks for a call to `path`."""
    match = re.fullmatch(
        r"/(?:api/v1|apis/([^/]+)/[^/]+)/namespaces/([^/]+)/([^/]+)(/[^/]+)?(/[^/]+)?", path
    )
    assert match, path
    group, namespace, resource, name, subresource = match.groups()
    verb = VERBS.get(method) or ("get" if name else "list")
    return namespace, group or "", resource + (subresource or ""), verb


def allows(rules: list[dict[str, list[str]]], group: str, resource: str, verb: str) -> bool:
    return any(
        group in rule["apiGroups"] and resource in rule["resources"] and verb in rule["verbs"]
        for rule in rules
    )


@pytest.mark.parametrize("settings", [SETTINGS, WARN], ids=["end", "warn"])
def test_the_role_allows_every_call_a_run_makes(reap, kubernetes, prometheus, settings) -> None:
    kubernetes.pods = [
        claiming_pod("claimed"),
        gpu_pod("counted"),
        *deployment_pods(kubernetes, "inference", "inference-7f9c-abcde"),
    ]
    kubernetes.claims = [claim("claimed")]
    prometheus.idle = {60: ["claimed", "counted", "inference-7f9c-abcde"]}

    reap(settings)

    refused = [
        (method, path)
        for method, path in kubernetes.calls
        for namespace, group, resource, verb in [permission(method, path)]
        if not allows(
            ROLE_RULES[settings.action] if namespace == NAMESPACE else HOME_ROLE_RULES,
            group,
            resource,
            verb,
        )
    ]
    assert refused == []
    assert ("GET", "/apis/resource.k8s.io/v1/namespaces/ml-sandbox/resourceclaims") in (
        kubernetes.calls
    )


# --- The script as shipped -------------------------------------------------------------------


@pytest.mark.parametrize(("prometheus_down", "exit_code"), [(False, 0), (True, 1)])
def test_the_job_exits_1_only_when_something_failed(
    urls, kubernetes, prometheus, monkeypatch, prometheus_down: bool, exit_code: int
) -> None:
    api_url, prometheus_url = urls
    kubernetes.pods = [gpu_pod("notebook", age_minutes=10**7)]
    prometheus.idle = {60: ["notebook"]}
    prometheus.down = prometheus_down
    monkeypatch.setattr(
        Kubernetes, "in_cluster", classmethod(lambda cls, ns: cls(Api(api_url), ns))
    )
    for name, value in {**JOB_ENV, "PROMETHEUS_URL": prometheus_url}.items():
        monkeypatch.setenv(name, value)

    assert idle_gpu_reaper.main() == exit_code


def test_the_script_imports_only_the_standard_library() -> None:
    tree = ast.parse(Path(idle_gpu_reaper.__file__).read_text())
    imported = {
        name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for name in (
            [alias.name for alias in node.names]
            if isinstance(node, ast.Import)
            else [node.module or ""]
        )
    }

    assert imported - set(sys.stdlib_module_names) == set()


def test_the_query_reads_the_platforms_recording_rule() -> None:
    assert idle_query("ml-sandbox", 60, 5, 60) == (
        "max by (pod) (max_over_time("
        'gpu_platform:allocated_gpu_activity:percent{namespace="ml-sandbox"}[60m])) < 5'
        " and on (pod) max by (pod) (present_over_time("
        'gpu_platform:allocated_gpu_activity:percent{namespace="ml-sandbox"}[10m] offset 50m))'
        " and on (pod) max by (pod) (present_over_time("
        'gpu_platform:allocated_gpu_activity:percent{namespace="ml-sandbox"}[10m]))'
        " and on (pod) min by (pod) (count_over_time("
        'gpu_platform:allocated_gpu_activity:percent{namespace="ml-sandbox"}[60m])) >= 54'
    )


# --- The query, in promtool ------------------------------------------------------------------

# GPU utilisation series of the DCGM exporter, in percent, one sample a minute from 0m, as the
# platform's ServiceMonitor delivers them; the recording rule turns them into the series the
# query reads.
IDLE_FOR_90_MINUTES = "1x90"
BUSY_20_MINUTES_AGO = "1x70 80 1x20"
SEEN_ONLY_FOR_THE_LAST_30_MINUTES = "_x60 1x30"
NOT_SEEN_FOR_THE_LAST_20_MINUTES = "1x70 _x20"
# Readings at both ends of the window (30m to 90m), none for 40 minutes between: the GPU may
# have worked all that time.
A_40_MINUTE_GAP = "1x35 _x40 1x15"
# Five readings of the sixty missing: 55 of 60, above 90 %.
A_5_MINUTE_GAP = "1x50 _x5 1x35"
QUERY_CASES = {
    "idle throughout the window": (IDLE_FOR_90_MINUTES, True),
    "a 40-minute gap with idle readings at both ends": (A_40_MINUTE_GAP, False),
    "a 5-minute gap": (A_5_MINUTE_GAP, True),
    "busy once within the window": (BUSY_20_MINUTES_AGO, False),
    "no readings at the start of the window": (SEEN_ONLY_FOR_THE_LAST_30_MINUTES, False),
    "no readings at the end of the window": (NOT_SEEN_FOR_THE_LAST_20_MINUTES, False),
}


def query_test(tmp_path: Path, series: str, values: str, found: bool) -> Any:
    """promtool's run of a test that the reaper's query, over the platform's recording rule and
    one exporter series, finds the pod `notebook-0` at 90m (`found`) or nothing."""
    write_default_rules(tmp_path)
    unit_test = {
        "rule_files": ["gpu-alerts.yaml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [{"series": series, "values": values}],
                "promql_expr_test": [
                    {
                        "expr": idle_query("ml-sandbox", 60, 5, 60),
                        "eval_time": "90m",
                        "exp_samples": [{"labels": '{pod="notebook-0"}', "value": 1}]
                        if found
                        else [],
                    }
                ],
            }
        ],
    }
    path = tmp_path / "reaper.test.yaml"
    path.write_text(yaml.safe_dump(unit_test, sort_keys=False))
    return promtool("test", "rules", path)


@pytest.mark.parametrize(("values", "found"), QUERY_CASES.values(), ids=QUERY_CASES.keys())
def test_the_query_finds_a_pod_only_when_idle_throughout_with_readings_at_both_ends(
    tmp_path: Path, values: str, found: bool
) -> None:
    series = (
        'DCGM_FI_DEV_GPU_UTIL{job="nvidia-dcgm-exporter", gpu="0", namespace="ml-sandbox",'
        ' pod="notebook-0", container="jupyter"}'
    )

    result = query_test(tmp_path, series, values, found)

    assert result.returncode == 0, result.stdout + result.stderr


# A GPU that a pod claimed through DRA, as the exporter the GPU Operator v26.7.0 pins
# (4.6.0-4.8.3) labels it with KUBERNETES_ENABLE_DRA: the pod's `pod`, `namespace` and
# `container`, as for a counted GPU, and the claim's `dra_*` labels (dcgm-exporter 7ad58324,
# internal/pkg/transformation/kubernetes.go `Process`, const.go). Without the ResourceSlices
# that map the claimed device to its GPU, the series keeps none of them.
DRA_GPU_SERIES = (
    'DCGM_FI_DEV_GPU_UTIL{job="nvidia-dcgm-exporter", gpu="0", namespace="ml-sandbox",'
    ' pod="notebook-0", container="jupyter", dra_claim_name="notebook-0-gpu-x7k2p",'
    ' dra_claim_namespace="ml-sandbox", dra_driver_name="gpu.nvidia.com",'
    ' dra_pool_name="ip-10-0-1-17", dra_device_name="gpu-0"}'
)
UNATTRIBUTED_DRA_GPU_SERIES = 'DCGM_FI_DEV_GPU_UTIL{job="nvidia-dcgm-exporter", gpu="0"}'


def test_the_query_finds_a_pod_whose_claimed_gpu_is_idle(tmp_path: Path) -> None:
    result = query_test(tmp_path, DRA_GPU_SERIES, IDLE_FOR_90_MINUTES, found=True)

    assert result.returncode == 0, result.stdout + result.stderr


def test_the_query_finds_no_pod_where_the_exporter_did_not_attribute_its_gpu(
    tmp_path: Path,
) -> None:
    result = query_test(tmp_path, UNATTRIBUTED_DRA_GPU_SERIES, IDLE_FOR_90_MINUTES, found=False)

    assert result.returncode == 0, result.stdout + result.stderr
