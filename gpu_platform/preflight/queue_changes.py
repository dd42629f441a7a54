"""Preflight on a stack whose next `up` moves tenant namespaces into or out of Kueue's queues,
read through the cluster's Kubernetes API: what `up` leaves outside the queues, or stuck.

A namespace is queued now where it carries `gpu-platform.io/queue` (the platform labels the
queued tenants' namespaces only), and is queued after `up` where `queues.enabled` and its own
`queue.enabled` are both true.

- Moving in: Kueue manages only the jobs it admits, and the admission policy judges only pods
  created later, so the GPU pods already running there keep their GPUs outside Kueue's
  accounting, while the namespace's ResourceQuota counts them: Kueue may admit a job the quota
  then refuses in part, until they end. And none is replaced: the policy refuses their
  controllers' new pods (`gpu_platform.kubernetes.queued_pod_policy`). Each such pod is listed
  (a pod without Kueue's `kueue.x-k8s.io/podset` label that asks for an `nvidia.com/`
  resource, as the admission policy tells GPU pods).
- Moving out: Kueue stops acting on the namespace at once, so a Workload not finished keeps its
  quota, and the finalizer `kueue.x-k8s.io/resource-in-use` on its ClusterQueue, whose delete
  `up` then waits on, and a job Kueue suspended stays so (docs/queues.md, Turning queues off).
  Only a Workload whose `Finished` condition is `True` leaves its ClusterQueue
  (pkg/controller/core/clusterqueue_controller.go at kueue v0.19.2, `ClusterQueueEmpty` counts
  the reserving ones); Kueue keeps finished ones where no retention is set.

Both are warnings: `up` goes on, and the team knows what to drain or what runs unaccounted.
"""

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import requests

from gpu_platform.config import StackConfig, TenantNamespaceSpec, key_path
from gpu_platform.kubernetes.queue_labels import (
    NVIDIA_RESOURCE_PREFIX,
    PODSET_LABEL,
    QUEUED_NAMESPACE_LABEL,
)
from gpu_platform.preflight.findings import Finding

KubeGet = Callable[[str], Mapping[str, Any] | None]
"""GETs a path of the cluster's Kubernetes API, as it answers; None where it answers 404."""

NAMED = 10
"""How many pods or Workloads a finding names; it counts the rest."""
WORKLOADS = "/apis/kueue.x-k8s.io/v1beta2/namespaces/{}/workloads"
"""Kueue's Workloads at the version v0.19 stores them in
(charts/kueue/templates/crd/kueue.x-k8s.io_workloads.yaml at v0.19.2)."""
# A pod that has ended holds no GPU (core/v1 PodPhase).
_ENDED = frozenset({"Succeeded", "Failed"})


class KubeUnreadable(Exception):
    """Raised by a `KubeGet` where no read can succeed for a reason of the caller's own (its
    credentials), with that reason: one warning for the namespaces not read, as for an API out
    of reach."""


def found_or_none(response: requests.Response) -> Mapping[str, Any] | None:
    """A Kubernetes API's answer to a GET: the object or list, None for a 404; an HTTPError for
    any other failure."""
    if response.status_code == 404:
        return None
    response.raise_for_status()
    found: Mapping[str, Any] = response.json()
    return found


def queue_change_findings(config: StackConfig, get: KubeGet) -> list[Finding]:
    """For each tenant namespace the next `up` moves into or out of the queues, what it leaves
    outside them; nothing for the others and for namespaces not created yet. An API that cannot
    be reached or refuses the caller is one warning, and the namespaces after it are not read:
    each read would wait as long again, within the preflight's one deadline."""
    findings: list[Finding] = []
    for i, namespace in enumerate(config.namespaces):
        try:
            finding = _namespace_finding(config, i, namespace, get)
        except KubeUnreadable as error:
            return [*findings, unread_namespaces(config.namespaces[i:], str(error))]
        except requests.RequestException as error:
            if _unreachable(error):
                return [*findings, unread_namespaces(config.namespaces[i:], _failure(error))]
            finding = _cannot_read(namespace, error)
        if finding is not None:
            findings.append(finding)
    return findings


def unread_namespaces(namespaces: Sequence[TenantNamespaceSpec], why: str) -> Finding:
    """One warning for the tenant namespaces preflight could not read, `why` saying what kept
    it from them."""
    names = ", ".join(n.name for n in namespaces)
    return Finding(
        "warning",
        "tenant namespaces",
        f"Cannot read {names} through the cluster's Kubernetes API: {why}. Whether the next up"
        " moves them into or out of the queues is not checked.",
        "Run preflight where the cluster's API is reachable, as an identity that may get the"
        " namespaces and list their pods and Workloads (docs/deploy.md), or check by hand:"
        " kubectl get pods and kubectl get workloads in each (docs/queues.md).",
    )


def _namespace_finding(
    config: StackConfig, i: int, namespace: TenantNamespaceSpec, get: KubeGet
) -> Finding | None:
    live = get(f"/api/v1/namespaces/{namespace.name}")
    if live is None:
        return None
    queued_now = QUEUED_NAMESPACE_LABEL in ((live.get("metadata") or {}).get("labels") or {})
    queued_next = config.queued(namespace)
    if queued_next and not queued_now:
        return _moving_in(namespace, _items(get(f"/api/v1/namespaces/{namespace.name}/pods")))
    if queued_now and not queued_next:
        key = key_path("namespaces", i, "queue", "enabled")
        if not config.queues.enabled:
            key = key_path("queues", "enabled")
        return _moving_out(namespace, key, get(WORKLOADS.format(namespace.name)))
    return None


def _moving_in(namespace: TenantNamespaceSpec, pods: Iterable[Mapping[str, Any]]) -> Finding:
    subject = f"namespace {namespace.name}"
    outside = sorted(_name(pod) for pod in pods if _unqueued_gpu_pod(pod))
    if not outside:
        return Finding(
            "ok",
            subject,
            "Its queue comes with this update, and no GPU pod runs there outside Kueue.",
            "Nothing.",
        )
    return Finding(
        "warning",
        subject,
        f"Its queue comes with this update, but {len(outside)} GPU pod(s) run there that Kueue"
        f" does not manage: {_listed(outside)}. They keep running, their GPUs outside Kueue's"
        " accounting but within the namespace's ResourceQuota, which may then refuse part of"
        " a job Kueue admits until they end. None of them can be replaced: once the namespace"
        " is queued, a new GPU pod without Kueue's admission is refused, so a Deployment or"
        " StatefulSet outside Kueue loses its pod for good at the next eviction, node loss or"
        " rollout, and a Job outside Kueue with pods still to run stalls.",
        "Before this up, let them end, and move GPU services (Deployments, StatefulSets,"
        " notebooks) to a tenant namespace with queue.enabled false, or keep this one"
        " unqueued (docs/queues.md).",
    )


def _moving_out(
    namespace: TenantNamespaceSpec, key: str, workloads: Mapping[str, Any] | None
) -> Finding:
    subject = f"namespace {namespace.name}"
    if workloads is None:
        return Finding(
            "ok",
            subject,
            f"{key}: false takes it out of the queues, and the cluster serves no Kueue"
            " Workloads (Kueue's CRDs are not installed): none holds a ClusterQueue.",
            "Nothing.",
        )
    unfinished = sorted(_name(w) for w in _items(workloads) if not _finished(w))
    if not unfinished:
        return Finding(
            "ok",
            subject,
            f"{key}: false takes it out of the queues, and every Workload there is finished.",
            "Nothing.",
        )
    return Finding(
        "warning",
        subject,
        f"{key}: false takes it out of the queues, but {len(unfinished)} Workload(s) there are not"
        f" finished: {_listed(unfinished)}. Kueue stops acting on the namespace at once: their"
        " ClusterQueue's delete waits while they hold its quota, and a job Kueue suspended stays"
        " suspended.",
        "Drain the queue first (docs/queues.md, Turning queues off): let the jobs finish or"
        " delete them, until kubectl get workloads -n"
        f" {namespace.name} shows True in every FINISHED.",
    )


def _unqueued_gpu_pod(pod: Mapping[str, Any]) -> bool:
    if (pod.get("status") or {}).get("phase") in _ENDED:
        return False
    if PODSET_LABEL in ((pod.get("metadata") or {}).get("labels") or {}):
        return False
    spec = pod.get("spec") or {}
    containers = [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
    return any(
        name.startswith(NVIDIA_RESOURCE_PREFIX)
        for container in containers
        for field in ("limits", "requests")
        for name in ((container.get("resources") or {}).get(field) or {})
    )


def _finished(workload: Mapping[str, Any]) -> bool:
    """Whether the Workload's `Finished` condition is `True`: the FINISHED column of `kubectl get
    workloads` (the CRD's printer column, charts/kueue/templates/crd at v0.19.2)."""
    conditions = (workload.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Finished" and c.get("status") == "True" for c in conditions)


def _items(found: Mapping[str, Any] | None) -> Sequence[Mapping[str, Any]]:
    """A list's items; none where the API has no such resource."""
    return (found or {}).get("items") or []


def _name(item: Mapping[str, Any]) -> str:
    return str((item.get("metadata") or {}).get("name"))


def _listed(names: Sequence[str]) -> str:
    rest = len(names) - NAMED
    return ", ".join(names[:NAMED]) + (f" and {rest} more" if rest > 0 else "")


def _unreachable(error: requests.RequestException) -> bool:
    """Whether the error holds for every read: the API not reached in time, or the caller not
    let in (401) or not allowed (403)."""
    response = getattr(error, "response", None)
    if response is not None:
        return response.status_code in (401, 403)
    return isinstance(error, (requests.ConnectionError, requests.Timeout))


def _failure(error: requests.RequestException) -> str:
    response = getattr(error, "response", None)
    if response is not None:
        return f"the Kubernetes API answered {response.status_code}"
    return f"the Kubernetes API failed ({error})"


def _cannot_read(namespace: TenantNamespaceSpec, error: requests.RequestException) -> Finding:
    return Finding(
        "warning",
        f"namespace {namespace.name}",
        f"Cannot read the namespace, its pods or its Workloads: {_failure(error)}.",
        "Before an update that turns its queue on or off, check by hand: kubectl get pods and"
        f" kubectl get workloads -n {namespace.name} (docs/queues.md).",
    )
