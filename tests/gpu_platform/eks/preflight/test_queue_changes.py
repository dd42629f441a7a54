"""Preflight's reading of tenant namespaces the next `up` moves into or out of Kueue's queues:
the GPU pods Kueue will not manage, the Workloads not finished."""

import copy
from collections.abc import Mapping
from typing import Any

import pytest
import requests

from gpu_platform.config import StackConfig, load_stack_config
from gpu_platform.preflight.findings import Finding
from gpu_platform.preflight.queue_changes import queue_change_findings
from gpu_platform.stack_files import stack_config

NAMESPACE = "/api/v1/namespaces/ml-sandbox"
PODS = "/api/v1/namespaces/ml-sandbox/pods"
# Kueue's Workloads, v1beta2 being the version v0.19.2 serves and stores
# (charts/kueue/templates/crd/kueue.x-k8s.io_workloads.yaml at v0.19.2).
WORKLOADS = "/apis/kueue.x-k8s.io/v1beta2/namespaces/ml-sandbox/workloads"
SUBJECT = "namespace ml-sandbox"


def dev(queues: bool = True, namespace_queue: bool = True, *more: str) -> StackConfig:
    """The dev stack (queues on, its one tenant namespace ml-sandbox, then namespaces named
    `more` like it), as asked."""
    values = copy.deepcopy(stack_config("dev"))
    values["gpu-platform:queues"]["enabled"] = queues
    values["gpu-platform:namespaces"][0]["queue"] = {"enabled": namespace_queue}
    (first,) = values["gpu-platform:namespaces"]
    values["gpu-platform:namespaces"] += [{**first, "name": name} for name in more]
    return load_stack_config(
        {k.removeprefix("gpu-platform:"): v for k, v in values.items() if k.startswith("gpu-")}
    )


def namespace(queued: bool) -> dict[str, Any]:
    labels = {"gpu-platform.io/queue": "default"} if queued else {}
    return {"metadata": {"name": "ml-sandbox", "labels": labels}}


def pod(
    name: str,
    resources: Mapping[str, Any] | None = None,
    phase: str = "Running",
    labels: Mapping[str, str] | None = None,
    init: bool = False,
) -> dict[str, Any]:
    container = {"name": "main", "resources": dict(resources or {})}
    spec = {"initContainers": [container], "containers": [{"name": "cpu"}]} if init else {}
    return {
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": spec or {"containers": [container]},
        "status": {"phase": phase},
    }


def workload(name: str, finished: str | None) -> dict[str, Any]:
    conditions = [{"type": "QuotaReserved", "status": "True"}]
    if finished is not None:
        conditions.append({"type": "Finished", "status": finished})
    return {"metadata": {"name": name}, "status": {"conditions": conditions}}


def answers(paths: Mapping[str, Any]) -> Any:
    """A Kubernetes API that answers these paths, 404 (None) for any other."""
    asked: list[str] = []

    def get(path: str) -> Any:
        asked.append(path)
        return paths.get(path)

    get.asked = asked  # type: ignore[attr-defined]
    return get


GPU = {"limits": {"nvidia.com/gpu": 1}}


def test_gpu_pods_running_outside_kueue_are_named_before_the_queue_comes() -> None:
    # What the admission policy takes for a GPU pod (an `nvidia.com/` request or limit of a
    # container or init container) and Kueue did not admit: no `kueue.x-k8s.io/podset` label
    # (pkg/constants/constants.go `PodSetLabel` at kueue v0.19.2). A pod that ended holds no
    # GPU.
    pods = [
        pod("serve-0", GPU),
        pod("notebook-0", {"requests": {"nvidia.com/mig-1g.10gb": 1}}),
        pod("prep-0", GPU, init=True),
        pod("admitted-0", GPU, labels={"kueue.x-k8s.io/podset": "main"}),
        pod("done-0", GPU, phase="Succeeded"),
        pod("crashed-0", GPU, phase="Failed"),
        pod("cpu-0", {"limits": {"cpu": "1"}}),
    ]
    get = answers({NAMESPACE: namespace(queued=False), PODS: {"items": pods}})

    (finding,) = queue_change_findings(dev(), get)

    assert finding.severity == "warning"
    assert finding.subject == SUBJECT
    assert "3 GPU pod(s) run there that Kueue does not manage: notebook-0, prep-0, serve-0." in (
        finding.message
    )


def test_moving_in_says_the_unqueued_gpu_pods_are_never_replaced() -> None:
    # Once the namespace has its queue label, the admission policy refuses every new GPU pod
    # without `kueue.x-k8s.io/podset` (gpu_platform/kubernetes/queued_pod_policy.py), so a
    # Deployment's or StatefulSet's replacement pod never starts.
    get = answers({NAMESPACE: namespace(queued=False), PODS: {"items": [pod("serve-0", GPU)]}})

    (finding,) = queue_change_findings(dev(), get)

    assert finding.message.endswith(
        "None of them can be replaced: once the namespace is queued, a new GPU pod without"
        " Kueue's admission is refused, so a Deployment or StatefulSet outside Kueue loses its"
        " pod for good at the next eviction, node loss or rollout, and a Job outside Kueue with"
        " pods still to run stalls."
    )
    assert finding.action.startswith(
        "Before this up, let them end, and move GPU services (Deployments, StatefulSets,"
        " notebooks) to a tenant namespace with queue.enabled false, or keep this one unqueued"
    )


def test_a_long_list_names_ten_and_counts_the_rest() -> None:
    pods = [pod(f"serve-{i:02}", GPU) for i in range(12)]
    get = answers({NAMESPACE: namespace(queued=False), PODS: {"items": pods}})

    (finding,) = queue_change_findings(dev(), get)

    assert "serve-08, serve-09 and 2 more." in finding.message


def test_a_namespace_moving_in_without_gpu_pods_is_ok() -> None:
    get = answers({NAMESPACE: namespace(queued=False), PODS: {"items": []}})

    assert queue_change_findings(dev(), get) == [
        Finding(
            "ok",
            SUBJECT,
            "Its queue comes with this update, and no GPU pod runs there outside Kueue.",
            "Nothing.",
        )
    ]


@pytest.mark.parametrize(
    ("config", "key"),
    [
        (dev(namespace_queue=False), "gpu-platform:namespaces[0].queue.enabled"),
        (dev(queues=False), "gpu-platform:queues.enabled"),
    ],
    ids=["namespace opts out", "queues off"],
)
def test_unfinished_workloads_are_named_before_the_queue_goes(
    config: StackConfig, key: str
) -> None:
    # Only a Workload whose Finished condition is True gives its ClusterQueue back (the
    # FINISHED printer column of the CRD; ClusterQueueEmpty in
    # pkg/controller/core/clusterqueue_controller.go at kueue v0.19.2).
    workloads = [
        workload("job-train-1", None),
        workload("job-gpu-smoke-test-a1b2c", "True"),
        workload("job-train-2", "False"),
    ]
    get = answers({NAMESPACE: namespace(queued=True), WORKLOADS: {"items": workloads}})

    (finding,) = queue_change_findings(config, get)

    assert finding.severity == "warning"
    assert finding.message.startswith(
        f"{key}: false takes it out of the queues, but 2 Workload(s) there are not finished:"
        " job-train-1, job-train-2."
    )
    assert finding.action.endswith(
        "until kubectl get workloads -n ml-sandbox shows True in every FINISHED."
    )


def test_a_namespace_moving_out_without_kueues_crds_is_ok() -> None:
    get = answers({NAMESPACE: namespace(queued=True)})

    (finding,) = queue_change_findings(dev(queues=False), get)

    # A 404 on the Workloads' list: no CRD, so no Workload, and no finalizer on a ClusterQueue.
    assert (finding.severity, finding.message) == (
        "ok",
        "gpu-platform:queues.enabled: false takes it out of the queues, and the cluster serves"
        " no Kueue Workloads (Kueue's CRDs are not installed): none holds a ClusterQueue.",
    )


@pytest.mark.parametrize(
    ("config", "queued"),
    [(dev(), True), (dev(queues=False), False), (dev(namespace_queue=False), False)],
    ids=["queued", "never queued", "opted out"],
)
def test_a_namespace_that_stays_as_it_is_reads_no_pods_and_no_workloads(
    config: StackConfig, queued: bool
) -> None:
    get = answers({NAMESPACE: namespace(queued)})

    assert queue_change_findings(config, get) == []
    assert get.asked == [NAMESPACE]


def test_a_namespace_not_created_yet_has_nothing_running() -> None:
    assert queue_change_findings(dev(), answers({})) == []


def refusing(status: int) -> Any:
    """A Kubernetes API that answers every read with `status`, counting the reads."""
    asked: list[str] = []

    def get(path: str) -> Any:
        asked.append(path)
        response = requests.Response()
        response.status_code = status
        raise requests.HTTPError(response=response)

    get.asked = asked  # type: ignore[attr-defined]
    return get


@pytest.mark.parametrize("status", [401, 403])
def test_an_api_that_refuses_the_caller_is_one_warning_and_read_once(status: int) -> None:
    get = refusing(status)

    findings = queue_change_findings(dev(True, True, "ml-research", "ml-prod"), get)

    assert findings == [
        Finding(
            "warning",
            "tenant namespaces",
            "Cannot read ml-sandbox, ml-research, ml-prod through the cluster's Kubernetes API:"
            f" the Kubernetes API answered {status}. Whether the next up moves them into or out"
            " of the queues is not checked.",
            "Run preflight where the cluster's API is reachable, as an identity that may get"
            " the namespaces and list their pods and Workloads (docs/deploy.md), or check by"
            " hand: kubectl get pods and kubectl get workloads in each (docs/queues.md).",
        )
    ]
    assert get.asked == [NAMESPACE]


@pytest.mark.parametrize(
    "error",
    [requests.ConnectTimeout("timed out"), requests.ConnectionError("refused")],
    ids=["timeout", "refused"],
)
def test_an_unreachable_api_is_read_once(error: requests.RequestException) -> None:
    asked: list[str] = []

    def unreachable(path: str) -> Any:
        asked.append(path)
        raise error

    (finding,) = queue_change_findings(dev(True, True, "ml-research"), unreachable)

    assert (finding.subject, finding.severity) == ("tenant namespaces", "warning")
    assert finding.message.startswith(
        f"Cannot read ml-sandbox, ml-research through the cluster's Kubernetes API: the"
        f" Kubernetes API failed ({error})."
    )
    assert asked == [NAMESPACE]


def test_namespaces_read_before_the_api_refused_keep_their_findings() -> None:
    # A 403 on the Workloads of the second namespace moving out: the third is not read.
    asked: list[str] = []

    def get(path: str) -> Any:
        asked.append(path)
        if path == "/apis/kueue.x-k8s.io/v1beta2/namespaces/ml-research/workloads":
            return refusing(403)(path)
        if path.endswith("/workloads"):
            return {"items": []}
        return namespace(queued=True)

    findings = queue_change_findings(dev(False, True, "ml-research", "ml-prod"), get)

    assert [(f.subject, f.severity) for f in findings] == [
        (SUBJECT, "ok"),
        ("tenant namespaces", "warning"),
    ]
    assert findings[1].message.startswith("Cannot read ml-research, ml-prod through")
    assert "/api/v1/namespaces/ml-prod" not in asked


def test_a_server_error_is_a_warning_for_its_namespace_and_the_others_are_read() -> None:
    asked: list[str] = []

    def failing(path: str) -> Any:
        asked.append(path)
        response = requests.Response()
        response.status_code = 500
        raise requests.HTTPError(response=response)

    findings = queue_change_findings(dev(True, True, "ml-research"), failing)

    assert [f.message for f in findings] == [
        "Cannot read the namespace, its pods or its Workloads: the Kubernetes API answered 500."
    ] * 2
    assert asked == [NAMESPACE, "/api/v1/namespaces/ml-research"]
