"""Validate the GPU node this pod runs on (`validate.py`, shipped beside it) and record the
result on the Node: the validation pod's main container, standard library only.

- Passed: one JSON patch (RFC 6902) removes the validation taint (`VALIDATION_TAINT_KEY`) and
  any `FAILED_TAINT_KEY` of an earlier failure, after a `test` that each is still at its index (a
  concurrent change of the node's taints fails the patch instead of removing another taint),
  and sets `gpu-platform.io/validation=passed`, the driver and the release the node proved. The
  release is what the Node shows of its image: the AMI id of an EKS managed node group's node
  (its `eks.amazonaws.com/nodegroup-image` label), else the kubelet's version in
  `status.nodeInfo` (a GKE node's version, `v1.33.5-gke.1080000`; on a Karpenter node the EKS
  build of Kubernetes its AMI carries, since the Node names no AMI).
- Failed: on a pool whose nodes are replaced (`REPLACEMENTS_PER_HOUR` above 0, Karpenter's
  pools), the Node is deleted, which Karpenter answers by terminating its
  instance, unless the pool has already had that many replacements in the past hour. The
  replacements are counted in a ConfigMap (`REPLACEMENT_LEDGER`, one key per pool, the times of
  its replacements), updated with its `resourceVersion`, so two nodes failing at once cannot
  both take the last place. Last, the node keeps the validation taint and is labelled `failed`
  with the first failed check; one that is not replaced also gets the lasting taint
  `FAILED_TAINT_KEY` (names.py says why). The label comes last because it ends this pod (below):
  labelled first, the pod could be killed between the ledger's update and the deletion, a
  replacement counted and none made. SIGTERM is held off from the ledger's update to the label.
- Either way each check that ran is labelled with its result,
  `gpu-platform.io/validation-check.<check>=passed|failed` (kube-state-metrics exports them),
  and an Event on the Node (created in this pod's namespace: `kubectl describe node`
  lists a node's events from every namespace), posted before anything else, gives every check's
  result and seconds, and the label comes last, with SIGTERM held off until it is set.
- With `--exempt-untainted` (the pod's first init container, before any tool runs): a node
  without the validation taint is labelled `exempt` and nothing is checked. Such a node joined
  before its pool was validated, or had its label removed; it may carry tenants' work, which
  DCGM's diagnostic would contend with.

Once labelled, the node no longer matches the DaemonSet's node affinity and the DaemonSet
controller deletes this pod; until then it sleeps, since a DaemonSet's pods restart on exit.
An API call is tried again `RETRIES` times; one that still fails exits 1, and the restarted
container validates the node again.
"""

import json
import os
import re
import signal
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

if __package__:
    from gpu_platform.kubernetes.mig_startup_taint_remover import Nodes
    from gpu_platform.kubernetes.node_validation import validate
else:  # run as a script, beside validate.py and the remover in the pod's ConfigMap
    import validate  # type: ignore[no-redef]
    from mig_startup_taint_remover import Nodes  # type: ignore[no-redef]

# gpu_platform/kubernetes/node_validation/names.py, which this script cannot import (the pod
# has none of the platform's modules); a test holds the two to each other. The taint's key comes
# from the pod's `VALIDATION_TAINT_KEY`, which the DaemonSet sets from names.py.
RESULT_LABEL = "gpu-platform.io/validation"
EXEMPT = "exempt"
FAILED_TAINT_KEY = "gpu-platform.io/validation-failed"
FAILED_CHECK_LABEL = "gpu-platform.io/validation-failed-check"
VALIDATED_DRIVER_LABEL = "gpu-platform.io/validated-driver"
VALIDATED_RELEASE_LABEL = "gpu-platform.io/validated-release"
CHECK_LABEL_PREFIX = "gpu-platform.io/validation-check."
REVALIDATING_LABEL = "gpu-platform.io/revalidating"
VALIDATION_LABELS = (
    RESULT_LABEL,
    FAILED_CHECK_LABEL,
    VALIDATED_DRIVER_LABEL,
    VALIDATED_RELEASE_LABEL,
    *(f"{CHECK_LABEL_PREFIX}{check}" for check in validate.CHECKS),
    REVALIDATING_LABEL,
)
# The GPU Operator's driver upgrade states (k8s-operator-libs pkg/upgrade/consts.go, vendored in
# gpu-operator v26.7.0) in which a node is cordoned for its driver's upgrade, and of those the
# one reached once the new driver is loaded and the operator's own validator is Ready.
UPGRADE_STATE_LABEL = "nvidia.com/gpu-driver-upgrade-state"
DRIVER_UPGRADING = frozenset(
    {
        "cordon-required",
        "wait-for-jobs-required",
        "pod-deletion-required",
        "drain-required",
        "pod-restart-required",
        "validation-required",
        "uncordon-required",
    }
)
UPGRADE_LOADED = frozenset({"uncordon-required"})
UPGRADE_POLL_SECONDS = 30
# Set by EKS on a managed node group's nodes: the AMI id they run.
NODEGROUP_IMAGE_LABEL = "eks.amazonaws.com/nodegroup-image"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
COMPONENT = "gpu-node-validator"
RETRIES = 5
RETRY_SECONDS = 2
HOUR_SECONDS = 3600
Object = Mapping[str, Any]
# A label value: 63 characters at most, alphanumeric at both ends, `-`, `_` and `.` inside.
_LABEL_VALUE_OTHER = re.compile(r"[^A-Za-z0-9_.-]")


class ApiError(Exception):
    """An API call that failed for good, with its status (0 where none came back)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def label_value(text: str) -> str:
    value = _LABEL_VALUE_OTHER.sub("_", text)[:63]
    return value.strip("-_.")


def _escaped(key: str) -> str:
    """A key as a JSON pointer's reference token (RFC 6901)."""
    return key.replace("~", "~0").replace("/", "~1")


def release_of(node: Object) -> str:
    labels = (node.get("metadata") or {}).get("labels") or {}
    found = labels.get(NODEGROUP_IMAGE_LABEL) or (
        ((node.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion") or "unknown"
    )
    return label_value(str(found))


def failed_check(results: Sequence[Object]) -> str | None:
    return next((str(r["check"]) for r in results if not r["passed"]), None)


def _taint_removals(node: Object, keys: Sequence[str]) -> list[dict[str, Any]]:
    """JSON patch operations that remove the node's taints of `keys`, each after a `test` that
    it is still there; the last first, so that no removal moves another's index."""
    taints = list(enumerate((node.get("spec") or {}).get("taints") or []))
    patch: list[dict[str, Any]] = []
    for index, taint in reversed(taints):
        if taint.get("key") in keys:
            path = f"/spec/taints/{index}"
            patch += [
                {"op": "test", "path": f"{path}/key", "value": taint["key"]},
                {"op": "remove", "path": path},
            ]
    return patch


def has_taint(node: Object, key: str) -> bool:
    return any(t.get("key") == key for t in (node.get("spec") or {}).get("taints") or [])


def result_patch(
    node: Object,
    results: Sequence[Object],
    driver: str,
    taint_key: str,
    replaced: bool = False,
    serving: bool = False,
) -> list[dict[str, Any]]:
    """The JSON patch that records `results` on `node`: on a pass, the removal of the taint
    `taint_key` (and of an earlier failure's) too; on a failure of a node not `replaced`, the
    lasting failure taint, unless the node keeps `serving` (`fails_open`): then the removal."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    failed = failed_check(results)
    patch: list[dict[str, Any]] = []
    checked = {
        f"{CHECK_LABEL_PREFIX}{r['check']}": "passed" if r["passed"] else "failed" for r in results
    }
    # A check that did not run this time (skipped since) keeps no result of an earlier run.
    unchecked = [f"{CHECK_LABEL_PREFIX}{c}" for c in validate.CHECKS]
    unchecked = [label for label in unchecked if label not in checked]
    if failed is None:
        patch += _taint_removals(node, [taint_key, FAILED_TAINT_KEY])
        values = {
            RESULT_LABEL: "passed",
            VALIDATED_DRIVER_LABEL: label_value(driver),
            VALIDATED_RELEASE_LABEL: release_of(node),
        }
        stale = [FAILED_CHECK_LABEL, REVALIDATING_LABEL]
    else:
        if serving:
            patch += _taint_removals(node, [taint_key, FAILED_TAINT_KEY])
        elif not replaced:
            taint = {"key": FAILED_TAINT_KEY, "value": failed, "effect": "NoSchedule"}
            patch += _taint_removals(node, [FAILED_TAINT_KEY])
            patch.append({"op": "add", "path": "/spec/taints/-", "value": taint})
        values = {RESULT_LABEL: "failed", FAILED_CHECK_LABEL: failed}
        stale = [VALIDATED_DRIVER_LABEL, VALIDATED_RELEASE_LABEL, REVALIDATING_LABEL]
    return patch + label_patch(labels, {**values, **checked}, [*stale, *unchecked])


def label_patch(
    labels: Object, values: Mapping[str, str], stale: Sequence[str]
) -> list[dict[str, Any]]:
    """Set `values`, remove the `stale` labels the node has."""
    patch: list[dict[str, Any]] = [
        {"op": "add", "path": f"/metadata/labels/{_escaped(k)}", "value": v}
        for k, v in values.items()
    ]
    return patch + [
        {"op": "remove", "path": f"/metadata/labels/{_escaped(k)}"} for k in stale if k in labels
    ]


def summary(results: Sequence[Object]) -> str:
    return "; ".join(
        f"{r['check']} {'passed' if r['passed'] else 'FAILED'} ({r['seconds']:g}s): {r['reason']}"
        for r in results
    )


def event(node: Object, namespace: str, results: Sequence[Object], now: datetime) -> Object:
    meta = node.get("metadata") or {}
    failed = failed_check(results)
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{meta.get('name')}.", "namespace": namespace},
        "involvedObject": {
            "apiVersion": "v1",
            "kind": "Node",
            "name": meta.get("name"),
            "uid": meta.get("uid"),
        },
        "reason": "NodeValidationPassed" if failed is None else "NodeValidationFailed",
        "type": "Normal" if failed is None else "Warning",
        # Kubernetes holds an Event's note to 1 KiB (NoteLengthLimit, pkg/apis/core/validation/
        # events.go).
        "message": summary(results)[:1024],
        "source": {"component": COMPONENT, "host": meta.get("name")},
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }


def recent(entry: str, now: float) -> list[float]:
    """The replacement times of a ledger entry within the past hour."""
    times = [float(t) for t in entry.split() if t.replace(".", "", 1).isdigit()]
    return [t for t in times if now - t < HOUR_SECONDS]


class Api(Nodes):
    """The calls to the API server, connected as the MIG startup taint remover connects (its
    service's address, the account's token and CA, no proxy), each tried again on a connection
    error, a 429 or a 5xx."""

    def call(self, method: str, path: str, body: Any = None, content: str = "") -> Any:
        for attempt in range(RETRIES + 1):
            request = urllib.request.Request(self.server + path, method=method)
            request.add_header("Authorization", f"Bearer {self.token}")
            request.add_header("Accept", "application/json")
            if body is not None:
                request.data = json.dumps(body).encode()
                request.add_header("Content-Type", content or "application/json")
            try:
                with self.opener.open(request, timeout=30) as response:
                    return json.load(response)
            except urllib.error.HTTPError as error:
                if (error.code != 429 and error.code < 500) or attempt == RETRIES:
                    message = f"{method} {path}: {error.code} {error.reason}"
                    raise ApiError(error.code, message) from None
            except OSError as error:
                if attempt == RETRIES:
                    raise ApiError(0, f"{method} {path}: {error}") from None
            time.sleep(RETRY_SECONDS * (attempt + 1))
        raise AssertionError("unreachable")


def _node_path(name: str) -> str:
    return f"/api/v1/nodes/{urllib.parse.quote(name)}"


def record(
    api: Api,
    name: str,
    results: Sequence[Object],
    driver: str,
    taint_key: str,
    replaced: bool = False,
    serving: bool = False,
) -> Object:
    """Patch the node with the result, reading it again when the patch's `test` or `remove`
    finds it changed meanwhile (422, 409); the node as it was read."""
    return patch_node(
        api, name, lambda node: result_patch(node, results, driver, taint_key, replaced, serving)
    )


def patch_node(api: Api, name: str, patch: Callable[[Object], list[dict[str, Any]]]) -> Object:
    """Apply the JSON patch `patch` makes of the node as read, reading it again when the patch's
    `test` or `remove` finds it changed meanwhile (422, 409); the node as it was read."""
    for attempt in range(RETRIES + 1):
        node: Object = api.call("GET", _node_path(name))
        try:
            api.call("PATCH", _node_path(name), patch(node), "application/json-patch+json")
            return node
        except ApiError as error:
            if error.status not in (409, 422) or attempt == RETRIES:
                raise
    raise AssertionError("unreachable")


def take_replacement(api: Api, namespace: str, ledger: str, pool: str, cap: int) -> bool:
    """Whether the pool may replace one more node this hour, counting it if so."""
    path = f"/api/v1/namespaces/{namespace}/configmaps/{urllib.parse.quote(ledger)}"
    for attempt in range(RETRIES + 1):
        found = dict(api.call("GET", path))
        now = time.time()
        times = recent((found.get("data") or {}).get(pool, ""), now)
        if len(times) >= cap:
            return False
        found["data"] = {
            **(found.get("data") or {}),
            pool: " ".join(f"{t:.0f}" for t in [*times, now]),
        }
        try:
            api.call("PUT", path, found)
            return True
        except ApiError as error:
            if error.status != 409 or attempt == RETRIES:
                raise
    raise AssertionError("unreachable")


@contextmanager
def sigterm_held_off() -> Iterator[None]:
    """Run the block to its end even if SIGTERM comes meanwhile, and exit after it if one did:
    the kubelet sends it when the DaemonSet controller deletes the pod, and gives the pod its
    termination grace period to end before killing it."""
    received: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, _: received.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
    if received:
        raise SystemExit(0)


def fails_open(env: Mapping[str, str], node: Object) -> bool:
    """Whether a failure here takes the taint off all the same: the node passed before, is
    validated again after the GPU Operator upgraded its driver in place (`REVALIDATING_LABEL`,
    which `retaint_upgrading` sets), and its pool is neither a canary nor led by one
    (`REVALIDATION_FAILS_OPEN`).

    The operator counts a node as unavailable only while it is cordoned or NotReady
    (k8s-operator-libs pkg/upgrade/common_manager.go, GetCurrentUnavailableNodes, vendored in
    gpu-operator v26.7.0), so it upgrades the next node while this one is still validated: a bad
    driver would fail every node of the pool, one after another, and a GKE node pool's failed
    node is never replaced. Only a canary's gate stops a bad driver before it reaches a pool;
    without one, the node keeps serving as it did before it was validated again, labelled
    `failed` with its check, and the Event and the alert fire."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    return env.get("REVALIDATION_FAILS_OPEN") == "1" and labels.get(REVALIDATING_LABEL) == "true"


def report(
    api: Api, env: Mapping[str, str], cfg: validate.Config, results: Sequence[Object]
) -> str:
    """Record `results` for the node `NODE_NAME`; what was done, in words."""
    name, namespace = env["NODE_NAME"], env["POD_NAMESPACE"]
    taint_key = env["VALIDATION_TAINT_KEY"]
    failed = failed_check(results)
    node = api.call("GET", _node_path(name))
    api.call(
        "POST",
        f"/api/v1/namespaces/{namespace}/events",
        event(node, namespace, results, datetime.now(UTC)),
    )
    cap, pool = int(env.get("REPLACEMENTS_PER_HOUR") or 0), env.get("POOL", "")
    serving = failed is not None and fails_open(env, node)
    with sigterm_held_off():
        replaced = failed is not None and bool(cap) and not serving
        replaced = replaced and take_replacement(
            api, namespace, env["REPLACEMENT_LEDGER"], pool, cap
        )
        if replaced:
            api.call("DELETE", _node_path(name))
        try:
            record(api, name, results, cfg.driver, taint_key, replaced, serving)
        except ApiError as error:
            # Deleted, the Node may be gone already (Karpenter's finalizer ended).
            if not replaced or error.status != 404:
                raise
    if failed is None:
        return f"{name}: validation passed, taint removed"
    if serving:
        return (
            f"{name}: validation failed ({failed}) after an in-place driver upgrade; taint"
            " removed, the node keeps serving (its pool has no canary to stop the driver)"
        )
    if replaced:
        return f"{name}: validation failed ({failed}), node deleted for replacement"
    if cap:
        return f"{name}: validation failed ({failed}); pool {pool} replaced {cap} nodes this hour"
    return f"{name}: validation failed ({failed}), node kept tainted"


def exempt_untainted(api: Api, env: Mapping[str, str]) -> str | None:
    """Label the node `exempt` if it has no validation taint, saying so; None if it is to be
    validated: it has the taint, or has it again (`retaint_upgrading`). A node marked
    `REVALIDATING_LABEL` whose upgrade has not loaded the new driver yet is waited for here
    again: this container restarted, or the pod was recreated, during `retaint_upgrading`'s
    wait."""
    name = env["NODE_NAME"]
    node: Object = api.call("GET", _node_path(name))
    labels = (node.get("metadata") or {}).get("labels") or {}
    if has_taint(node, env["VALIDATION_TAINT_KEY"]):
        if labels.get(REVALIDATING_LABEL) == "true":
            wait_for_new_driver(api, name)
        return None
    if labels.get(UPGRADE_STATE_LABEL) in DRIVER_UPGRADING:
        retaint_upgrading(api, name, env["VALIDATION_TAINT_KEY"])
        return None
    if labels.get(RESULT_LABEL) == "passed":
        # Brought here by the operator's upgrade (workload.node_affinity), which ended before
        # this read it: the pod goes as the node leaves the affinity, and the proof stays.
        return f"{name}: passed, its driver upgrade over before it was read; left as it is"
    patch = label_patch(labels, {RESULT_LABEL: EXEMPT}, [FAILED_CHECK_LABEL])
    api.call("PATCH", _node_path(name), patch, "application/json-patch+json")
    return f"{name}: no validation taint, nothing checked, labelled {EXEMPT}"


def retaint_upgrading(api: Api, name: str, taint_key: str) -> None:
    """Validate again a node whose driver the GPU Operator upgrades in place: put the validation
    taint back, take its result off and mark it `REVALIDATING_LABEL`, at once, then wait until
    the new driver is loaded (`wait_for_new_driver`).

    The DaemonSet's node affinity brings this pod to a passed or exempt node only while it is in
    the operator's upgrade, from `cordon-required` to `uncordon-required` (k8s-operator-libs
    pkg/upgrade/consts.go, vendored in gpu-operator v26.7.0; upgrade_inplace.go and
    common_manager.go move it on): cordoned, its GPU pods deleted, its driver pod restarted, the
    operator's validator Ready, and only then uncordoned. Tainted while still cordoned, the node
    takes no GPU pod until it has passed again; `validated-driver` no longer names a driver it
    has stopped running. Its checks wait for `UPGRADE_LOADED`: until then the old driver may
    still be loaded, or being unloaded."""

    def retaint(node: Object) -> list[dict[str, Any]]:
        labels = (node.get("metadata") or {}).get("labels") or {}
        taint = {"key": taint_key, "value": "pending", "effect": "NoSchedule"}
        patch: list[dict[str, Any]] = [{"op": "add", "path": "/spec/taints/-", "value": taint}]
        if not (node.get("spec") or {}).get("taints"):
            patch = [{"op": "add", "path": "/spec/taints", "value": [taint]}]
        results = [label for label in VALIDATION_LABELS if label != REVALIDATING_LABEL]
        return patch + label_patch(labels, {REVALIDATING_LABEL: "true"}, results)

    patch_node(api, name, retaint)
    print(f"{name}: driver upgraded in place, to be validated again", flush=True)
    wait_for_new_driver(api, name)


def wait_for_new_driver(api: Api, name: str) -> None:
    """Return once the node's upgrade has loaded the new driver (`UPGRADE_LOADED`) or left the
    upgrading states."""
    while True:
        node = api.call("GET", _node_path(name))
        labels = (node.get("metadata") or {}).get("labels") or {}
        if labels.get(UPGRADE_STATE_LABEL) not in DRIVER_UPGRADING - UPGRADE_LOADED:
            return
        time.sleep(UPGRADE_POLL_SECONDS)


def node_env(env: Mapping[str, str], node: Object) -> dict[str, str]:
    """`env` with the expectations `BY_INSTANCE_TYPE` (JSON) holds for the node's instance type
    (its `node.kubernetes.io/instance-type` label), where it holds any."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    by_type = json.loads(env.get("BY_INSTANCE_TYPE") or "{}")
    return {**env, **by_type.get(labels.get(INSTANCE_TYPE_LABEL, ""), {})}


def main() -> int:
    if sys.argv[1:] == ["--exempt-untainted"]:
        try:
            said = exempt_untainted(Api.from_pod(), os.environ)
        except ApiError as error:
            print(f"could not read or label the node: {error}", file=sys.stderr, flush=True)
            return 1
        if said is None:
            return 0
        print(said, flush=True)
        while True:
            time.sleep(HOUR_SECONDS)
    try:
        api = Api.from_pod()
        env = node_env(os.environ, api.call("GET", _node_path(os.environ["NODE_NAME"])))
        cfg = validate.config(env)
    except ApiError as error:
        print(f"could not read the node: {error}", file=sys.stderr, flush=True)
        return 1
    except ValueError as error:
        print(json.dumps({"passed": False, "error": str(error)}), flush=True)
        return 2
    results = validate.validate(cfg)
    print(json.dumps({"passed": failed_check(results) is None, "checks": results}), flush=True)
    try:
        print(report(api, env, cfg, results), flush=True)
    except ApiError as error:
        print(f"could not record the result: {error}", file=sys.stderr, flush=True)
        return 1
    while True:
        time.sleep(HOUR_SECONDS)


if __name__ == "__main__":
    sys.exit(main())
