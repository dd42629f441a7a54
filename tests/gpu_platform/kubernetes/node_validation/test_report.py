"""How the validation pod records a result: against a fake API server that holds every call to
the validator's ClusterRole and Role (as the program declares them) and every Node update to the
admission policy's CEL, and applies the JSON patches (RFC 6902) as the API server does."""

import copy
import signal
import urllib.parse
from typing import Any

import pytest

from gpu_platform.kubernetes.node_validation import names, report, validate
from gpu_platform.kubernetes.node_validation.validate import Config
from gpu_platform.kubernetes.node_validation.workload import LEDGER, cluster_role_rules, role_rules
from tests.gpu_platform.kubernetes.node_validation.test_admission_policy import NODE, admitted

NAMESPACE = "gpu-operator"
NAME = NODE["metadata"]["name"]
CFG = Config(
    gpus=8,
    driver="580.95.05",
    nvlinks=18,
    diag_level="1",
    busbw_gbps=0,
    busbw_share=0.8,
    efa_devices=32,
    skip=frozenset(),
)
PASSED = [{"check": "gpu-count", "passed": True, "reason": "8 GPUs", "seconds": 0.2}]
FAILED = [
    *PASSED,
    {"check": "ecc", "passed": False, "reason": "GPU 3 ECC Disabled", "seconds": 0.0},
]
ENV = {
    "NODE_NAME": NAME,
    "POD_NAMESPACE": NAMESPACE,
    "POOL": "h100",
    "REPLACEMENT_LEDGER": LEDGER,
    "VALIDATION_TAINT_KEY": "startup-taint.cluster-autoscaler.kubernetes.io/gpu-validation",
}


def _pointer(path: str) -> list[str]:
    return [p.replace("~1", "/").replace("~0", "~") for p in path.split("/")[1:]]


def apply(obj: Any, patch: list[dict[str, Any]]) -> Any:
    """RFC 6902's add (`-` appending to an array), remove and test, as much as the validator
    uses."""
    result = copy.deepcopy(obj)
    for op in patch:
        *parents, last = _pointer(op["path"])
        target = result
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target[part]
        key: Any = int(last) if isinstance(target, list) and last != "-" else last
        if key == "-":  # the end of an array
            assert op["op"] == "add" and isinstance(target, list), op
            target.append(op["value"])
        elif op["op"] == "test":
            assert target[key] == op["value"], op
        elif op["op"] == "remove":
            del target[key]
        else:
            assert op["op"] == "add"
            target[key] = op["value"]
    return result


def allowed(method: str, path: str, replaces: bool) -> bool:
    """Whether the validator's rules allow the call: the verb of a request to a named object
    (k8s.io/apiserver pkg/endpoints/request/requestinfo.go, NewRequestInfo), on nodes by the
    ClusterRole, in the namespace by the Role."""
    parts = urllib.parse.urlsplit(path).path.strip("/").split("/")[2:]
    verb = {"GET": "get", "PATCH": "patch", "PUT": "update", "DELETE": "delete", "POST": "create"}
    if parts[0] == "nodes":
        rules, resource, name = cluster_role_rules(replaces), "nodes", parts[1]
    elif parts[:2] == ["namespaces", NAMESPACE]:
        rules, resource = role_rules(replaces), parts[2]
        name = parts[3] if len(parts) > 3 else ""
    else:
        return False
    return any(
        resource in r["resources"]
        and verb[method] in r["verbs"]
        and (not r.get("resourceNames") or name in r["resourceNames"])
        for r in rules
    )


class FakeApi(report.Api):
    def __init__(self, node: Any, ledger: str = "", replaces: bool = True) -> None:
        self.node = copy.deepcopy(node)
        self.ledger = {"metadata": {"name": LEDGER, "resourceVersion": "1"}, "data": {}}
        if ledger:
            self.ledger["data"] = {"h100": ledger}
        self.replaces = replaces
        self.calls: list[tuple[str, str]] = []
        self.events: list[Any] = []

    def call(self, method: str, path: str, body: Any = None, content: str = "") -> Any:
        assert allowed(method, path, self.replaces), (method, path)
        self.calls.append((method, path))
        if path == f"/api/v1/nodes/{NAME}":
            if method == "PATCH":
                assert content == "application/json-patch+json"
                updated = apply(self.node, body)
                assert admitted(self.node, updated) == []
                self.node = updated
            if method == "DELETE":
                assert admitted(self.node, None) == []
                return {}
            return self.node
        if path.endswith("/events"):
            self.events.append(body)
            return body
        assert path == f"/api/v1/namespaces/{NAMESPACE}/configmaps/{LEDGER}"
        if method == "PUT":
            assert body["metadata"]["resourceVersion"] == self.ledger["metadata"]["resourceVersion"]
            self.ledger = body
        return self.ledger


def labels(api: FakeApi) -> dict[str, str]:
    return {k: v for k, v in api.node["metadata"]["labels"].items() if k.startswith("gpu-platform")}


def test_a_passing_node_loses_the_taint_and_is_labelled_with_what_it_proved() -> None:
    node = copy.deepcopy(NODE)
    node["metadata"]["labels"]["eks.amazonaws.com/nodegroup-image"] = "ami-0abc1234def567890"
    api = FakeApi(node)

    report.report(api, ENV, CFG, PASSED)

    assert [t["key"] for t in api.node["spec"]["taints"]] == ["nvidia.com/gpu"]
    assert labels(api) == {
        names.RESULT_LABEL: "passed",
        names.VALIDATED_DRIVER_LABEL: "580.95.05",
        names.VALIDATED_RELEASE_LABEL: "ami-0abc1234def567890",
        "gpu-platform.io/validation-check.gpu-count": "passed",
    }
    assert (api.events[0]["reason"], api.events[0]["type"]) == ("NodeValidationPassed", "Normal")


def test_a_node_without_an_ami_label_proves_its_kubelet_version() -> None:
    node = copy.deepcopy(NODE)
    node["status"] = {"nodeInfo": {"kubeletVersion": "v1.33.5-gke.1080000"}}
    api = FakeApi(node)

    report.report(api, ENV, CFG, PASSED)

    assert labels(api)[names.VALIDATED_RELEASE_LABEL] == "v1.33.5-gke.1080000"


def test_a_failing_node_keeps_the_taint_and_names_the_check() -> None:
    api = FakeApi(NODE, replaces=False)

    said = report.report(api, ENV, CFG, FAILED)

    assert api.node["spec"]["taints"][:2] == NODE["spec"]["taints"]
    assert labels(api) == {
        names.RESULT_LABEL: "failed",
        names.FAILED_CHECK_LABEL: "ecc",
        "gpu-platform.io/validation-check.gpu-count": "passed",
        "gpu-platform.io/validation-check.ecc": "failed",
    }
    event = api.events[0]
    assert (event["reason"], event["type"], event["involvedObject"]["kind"]) == (
        "NodeValidationFailed",
        "Warning",
        "Node",
    )
    assert "ecc FAILED (0s): GPU 3 ECC Disabled" in event["message"]
    assert said.endswith("node kept tainted")
    assert ("DELETE", f"/api/v1/nodes/{NAME}") not in api.calls


NODE_PATH = f"/api/v1/nodes/{NAME}"
LEDGER_PATH = f"/api/v1/namespaces/{NAMESPACE}/configmaps/{LEDGER}"


def test_a_failing_node_is_replaced_within_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(report.time, "time", lambda: 10_000.0)
    # One replacement 10 minutes ago, one over an hour ago: one counts against a cap of 2.
    api = FakeApi(NODE, ledger="5400 9400")

    report.report(api, {**ENV, "REPLACEMENTS_PER_HOUR": "2"}, CFG, FAILED)

    # The label ends the pod (the DaemonSet controller deletes it once the node no longer
    # matches its affinity): it comes after the ledger's update and the deletion.
    writes = [call for call in api.calls if call[0] != "GET"]
    assert writes == [
        ("POST", f"/api/v1/namespaces/{NAMESPACE}/events"),
        ("PUT", LEDGER_PATH),
        ("DELETE", NODE_PATH),
        ("PATCH", NODE_PATH),
    ]
    assert api.ledger["data"]["h100"] == "9400 10000"
    assert labels(api)[names.RESULT_LABEL] == "failed"
    # Replaced, it gets no lasting taint: Karpenter drains and terminates it.
    assert api.node["spec"]["taints"] == NODE["spec"]["taints"]


def test_a_sigterm_while_replacing_waits_for_the_deletion(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(report.time, "time", lambda: 10_000.0)

    class KilledOnLedgerUpdate(FakeApi):
        def call(self, method: str, path: str, body: Any = None, content: str = "") -> Any:
            answer = super().call(method, path, body, content)
            if method == "PUT":
                signal.raise_signal(signal.SIGTERM)
            return answer

    class Killed(Exception):
        pass

    def killed(*_: object) -> None:
        raise Killed

    api = KilledOnLedgerUpdate(NODE)
    previous = signal.signal(signal.SIGTERM, killed)
    try:
        with pytest.raises(SystemExit):
            report.report(api, {**ENV, "REPLACEMENTS_PER_HOUR": "2"}, CFG, FAILED)
        assert signal.getsignal(signal.SIGTERM) is killed
    finally:
        signal.signal(signal.SIGTERM, previous)

    assert api.calls[-3:] == [("DELETE", NODE_PATH), ("GET", NODE_PATH), ("PATCH", NODE_PATH)]


def test_a_node_gone_before_its_label_is_a_replacement_done(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(report.time, "time", lambda: 10_000.0)

    class GoneOnDelete(FakeApi):
        def call(self, method: str, path: str, body: Any = None, content: str = "") -> Any:
            if path == NODE_PATH and ("DELETE", NODE_PATH) in self.calls:
                raise report.ApiError(404, "not found")
            return super().call(method, path, body, content)

    said = report.report(GoneOnDelete(NODE), {**ENV, "REPLACEMENTS_PER_HOUR": "2"}, CFG, FAILED)

    assert said.endswith("node deleted for replacement")


def test_a_pool_at_its_cap_keeps_the_failed_node(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(report.time, "time", lambda: 10_000.0)
    api = FakeApi(NODE, ledger="9000 9400")

    said = report.report(api, {**ENV, "REPLACEMENTS_PER_HOUR": "2"}, CFG, FAILED)

    assert ("DELETE", f"/api/v1/nodes/{NAME}") not in api.calls
    assert labels(api)[names.RESULT_LABEL] == "failed"
    assert "replaced 2 nodes this hour" in said
    # Not replaced, a failed node gets a taint Karpenter holds against pending pods (only its
    # startup taints it leaves out before the node is initialized: StateNode.Taints,
    # pkg/controllers/state/statenode.go, kubernetes-sigs/karpenter v1.14.1), so it starts
    # another node for them.
    assert api.node["spec"]["taints"][-1] == {
        "key": "gpu-platform.io/validation-failed",
        "value": "ecc",
        "effect": "NoSchedule",
    }
    assert api.calls[-1] == ("PATCH", NODE_PATH)


def test_a_node_that_fails_again_keeps_one_failure_taint() -> None:
    api = FakeApi(NODE, replaces=False)
    report.report(api, ENV, CFG, FAILED)

    report.report(api, ENV, CFG, [*PASSED, {**FAILED[1], "check": "memory"}])

    failure = [t for t in api.node["spec"]["taints"] if t["key"] == names.FAILED_TAINT_KEY]
    assert failure == [
        {"key": "gpu-platform.io/validation-failed", "value": "memory", "effect": "NoSchedule"}
    ]


def test_an_untainted_node_is_exempt_and_nothing_is_checked() -> None:
    # A node that joined before its pool was validated, or whose label was removed, may run
    # tenants' work: DCGM's diagnostic would contend with it.
    untainted = copy.deepcopy(NODE)
    untainted["spec"]["taints"] = untainted["spec"]["taints"][:1]
    api = FakeApi(untainted, replaces=False)

    said = report.exempt_untainted(api, ENV)

    assert labels(api) == {names.RESULT_LABEL: "exempt"}
    assert said is not None and said.endswith("labelled exempt")
    assert api.node["spec"]["taints"] == untainted["spec"]["taints"]


def test_a_tainted_node_is_validated() -> None:
    api = FakeApi(NODE, replaces=False)

    assert report.exempt_untainted(api, ENV) is None
    assert labels(api) == {}


def test_a_node_that_passes_after_failing_drops_the_failed_check() -> None:
    api = FakeApi(NODE, replaces=False)
    report.report(api, ENV, CFG, FAILED)

    report.report(api, ENV, CFG, PASSED)

    assert names.FAILED_CHECK_LABEL not in labels(api)
    assert [t["key"] for t in api.node["spec"]["taints"]] == ["nvidia.com/gpu"]


def test_a_node_of_a_smaller_size_takes_its_types_expectations() -> None:
    node = copy.deepcopy(NODE)
    node["metadata"]["labels"]["node.kubernetes.io/instance-type"] = "g6.xlarge"
    by_type = '{"g6.xlarge": {"EXPECTED_GPUS": "1", "EXPECTED_NVLINKS": "0"}}'

    found = report.node_env({"EXPECTED_GPUS": "4", "BY_INSTANCE_TYPE": by_type}, node)

    assert (found["EXPECTED_GPUS"], found["EXPECTED_NVLINKS"]) == ("1", "0")


def test_a_check_that_no_longer_runs_keeps_no_result_of_an_earlier_run() -> None:
    node = copy.deepcopy(NODE)
    # An earlier validation ran the NCCL test, which the pool has stopped running since.
    node["metadata"]["labels"]["gpu-platform.io/validation-check.nccl-bandwidth"] = "failed"
    api = FakeApi(node)

    report.report(api, ENV, CFG, PASSED)

    assert "gpu-platform.io/validation-check.nccl-bandwidth" not in labels(api)


def test_the_script_names_what_names_py_names() -> None:
    # The pod cannot import names.py; the script keeps the labels literally.
    assert names.VALIDATION_LABELS[:4] == (
        report.RESULT_LABEL,
        report.FAILED_CHECK_LABEL,
        report.VALIDATED_DRIVER_LABEL,
        report.VALIDATED_RELEASE_LABEL,
    )
    assert (
        tuple(f"{report.CHECK_LABEL_PREFIX}{check}" for check in validate.CHECKS)
        == names.CHECK_LABELS
    )
    assert (names.FAILED_TAINT_KEY, names.EXEMPT) == (report.FAILED_TAINT_KEY, report.EXEMPT)
    assert names.VALIDATION_LABELS == report.VALIDATION_LABELS


def upgrading(state: str) -> Any:
    """A node that passed, in the GPU Operator's in-place driver upgrade at `state`."""
    api = FakeApi(NODE, replaces=False)
    report.report(api, ENV, CFG, PASSED)
    api.node["metadata"]["labels"]["nvidia.com/gpu-driver-upgrade-state"] = state
    return api


def test_a_passed_node_whose_driver_is_upgraded_in_place_is_validated_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # k8s-operator-libs pkg/upgrade/consts.go (vendored in gpu-operator v26.7.0): cordoned at
    # `cordon-required`; the new driver pod Ready and the operator's validator with it at
    # `uncordon-required`, then `upgrade-done`.
    api = upgrading("pod-restart-required")
    states = iter(["validation-required", "uncordon-required"])
    waited: list[float] = []

    def sleep(seconds: float) -> None:
        waited.append(seconds)
        api.node["metadata"]["labels"]["nvidia.com/gpu-driver-upgrade-state"] = next(states)

    monkeypatch.setattr(report.time, "sleep", sleep)

    assert report.exempt_untainted(api, ENV) is None
    # Tainted again, through the admission policy (FakeApi), its proof of the old driver gone,
    # and marked as validated again.
    assert api.node["spec"]["taints"] == NODE["spec"]["taints"]
    assert labels(api) == {"gpu-platform.io/revalidating": "true"}
    # Its checks wait for the new driver.
    assert waited == [30, 30]


def test_a_node_the_upgrade_uncordons_is_tainted_before_it_takes_gpu_pods(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api = upgrading("uncordon-required")
    monkeypatch.setattr(report.time, "sleep", lambda _: pytest.fail("waited"))

    assert report.exempt_untainted(api, ENV) is None
    assert api.node["spec"]["taints"] == NODE["spec"]["taints"]


def revalidated(fails_open: str) -> tuple[FakeApi, dict[str, str]]:
    """A passed node validated again after its driver was upgraded in place (its taint put back
    by the first init container), its validator configured with `REVALIDATION_FAILS_OPEN`."""
    env = {**ENV, "REVALIDATION_FAILS_OPEN": fails_open}
    api = upgrading("uncordon-required")
    assert report.exempt_untainted(api, env) is None
    return api, env


def test_a_pool_no_canary_guards_keeps_serving_on_a_node_that_fails_after_an_in_place_upgrade() -> (
    None
):
    # The operator moves to the next node once this one is uncordoned (k8s-operator-libs
    # pkg/upgrade/common_manager.go GetCurrentUnavailableNodes, gpu-operator v26.7.0): held
    # closed, a bad driver would take every node of the pool out, one after another.
    api, env = revalidated("1")

    said = report.report(api, env, CFG, FAILED)

    untouched = [t for t in NODE["spec"]["taints"] if t["key"] != env["VALIDATION_TAINT_KEY"]]
    assert api.node["spec"]["taints"] == untouched
    assert labels(api)[names.RESULT_LABEL] == "failed"
    assert api.events[-1]["reason"] == "NodeValidationFailed"
    assert "keeps serving" in said


def test_a_canary_guarded_pool_keeps_a_node_that_fails_after_an_in_place_upgrade_tainted() -> None:
    api, env = revalidated("0")

    report.report(api, env, CFG, FAILED)

    assert api.node["spec"]["taints"][:2] == NODE["spec"]["taints"]
    assert any(t["key"] == names.FAILED_TAINT_KEY for t in api.node["spec"]["taints"])


@pytest.mark.parametrize("state", [None, "drain-required"])
def test_a_new_node_of_a_pool_no_canary_guards_fails_closed(
    state: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A new node can be in the upgrade's states too: one whose driver pod is out of sync with
    # its DaemonSet goes to `upgrade-required` and on (k8s-operator-libs
    # pkg/upgrade/common_manager.go, ProcessDoneOrUnknownNodes, gpu-operator v26.7.0's
    # vendor/). It never passed: it is not waited for, and fails closed.
    env = {**ENV, "REVALIDATION_FAILS_OPEN": "1"}
    api = FakeApi(NODE, replaces=False)
    if state is not None:
        api.node["metadata"]["labels"]["nvidia.com/gpu-driver-upgrade-state"] = state
    monkeypatch.setattr(report.time, "sleep", lambda _: pytest.fail("waited"))
    assert report.exempt_untainted(api, env) is None

    report.report(api, env, CFG, FAILED)

    assert api.node["spec"]["taints"][:2] == NODE["spec"]["taints"]


def test_a_restart_during_the_wait_for_the_new_driver_waits_again_and_keeps_the_mark(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The first container's API calls fail for good during its wait (exit 1, `main`); the
    # kubelet restarts it, and it finds the node already tainted.
    api = upgrading("drain-required")
    env = {**ENV, "REVALIDATION_FAILS_OPEN": "1"}

    def unreachable(_: float) -> None:
        raise report.ApiError(503, "GET /api/v1/nodes: 503 Service Unavailable")

    monkeypatch.setattr(report.time, "sleep", unreachable)
    with pytest.raises(report.ApiError):
        report.exempt_untainted(api, env)

    waited: list[float] = []

    def sleep(seconds: float) -> None:
        waited.append(seconds)
        api.node["metadata"]["labels"]["nvidia.com/gpu-driver-upgrade-state"] = "uncordon-required"

    monkeypatch.setattr(report.time, "sleep", sleep)
    assert report.exempt_untainted(api, env) is None
    assert waited == [30]
    assert labels(api) == {"gpu-platform.io/revalidating": "true"}

    report.report(api, env, CFG, FAILED)

    untouched = [t for t in NODE["spec"]["taints"] if t["key"] != env["VALIDATION_TAINT_KEY"]]
    assert api.node["spec"]["taints"] == untouched
    assert labels(api)[names.RESULT_LABEL] == "failed"


@pytest.mark.parametrize(("state", "waits"), [("pod-restart-required", 1), ("upgrade-done", 0)])
def test_a_pod_recreated_while_its_node_is_validated_again_still_knows_it(
    state: str, waits: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A reboot or a new pod template recreates the pod: a new one starts on the tainted node,
    # before or after the upgrade is done, with nothing of the old one's.
    api, env = revalidated("1")
    api.node["metadata"]["labels"]["nvidia.com/gpu-driver-upgrade-state"] = state
    waited: list[float] = []

    def sleep(seconds: float) -> None:
        waited.append(seconds)
        api.node["metadata"]["labels"]["nvidia.com/gpu-driver-upgrade-state"] = "upgrade-done"

    monkeypatch.setattr(report.time, "sleep", sleep)
    assert report.exempt_untainted(api, env) is None
    assert len(waited) == waits

    said = report.report(api, env, CFG, FAILED)

    assert "keeps serving" in said


def test_a_result_takes_the_revalidation_mark_off() -> None:
    api, env = revalidated("0")

    report.report(api, env, CFG, PASSED)

    assert "gpu-platform.io/revalidating" not in labels(api)


def test_a_passed_node_whose_upgrade_ended_before_it_was_read_keeps_its_proof() -> None:
    # Brought by the upgrade's states (workload.node_affinity), read at `upgrade-done`
    # (k8s-operator-libs pkg/upgrade/consts.go, gpu-operator v26.7.0): not relabelled exempt.
    api = upgrading("upgrade-done")
    before = labels(api)

    assert report.exempt_untainted(api, ENV) is not None
    assert labels(api) == before
    assert before[names.RESULT_LABEL] == "passed"
