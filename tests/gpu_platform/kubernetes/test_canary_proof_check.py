"""The canary gate's proof: it passes only on a canary node the node validator labelled `passed`
with the canary's new driver (and node version where the canary pins one), and fails the gate
naming the check when the validator fails the node. The Nodes and Events it reads are the ones
the validator's own reporter (node_validation/report.py) leaves, run against the fake API server
of its tests; the decisions on them, the script's exits, and what the program renders for it.
"""

import copy
from pathlib import Path
from typing import Any

import pytest

from gpu_platform.kubernetes import canary_proof_check
from gpu_platform.kubernetes.canary_proof_check import FAILED, PENDING, PROVEN, verdict
from gpu_platform.kubernetes.node_validation import names, report
from gpu_platform.offline.program import Plan, run_program
from tests.gpu_platform.kubernetes.node_validation.test_report import (
    CFG,
    ENV,
    NODE,
    PASSED,
    FakeApi,
)
from tests.gpu_platform.kubernetes.node_validation.test_report import (
    FAILED as FAILED_ECC,
)
from tests.gpu_platform.kubernetes.restricted_pod_security import restricted_violations
from tests.gpu_platform.kubernetes.test_canary_gate_order import gate, gate_spec, ubuntu_config
from tests.repository import PROJECT

NEW_DRIVER = CFG.driver  # 580.95.05
GKE_RELEASE = "v1.33.5-gke.1080000"


def validated(results: list[Any], replaces: bool = False, **node_info: str) -> FakeApi:
    """The Node and Events the validator's reporter leaves after `results`."""
    node = copy.deepcopy(NODE)
    if node_info:
        node["status"] = {"nodeInfo": node_info}
    return validated_node(node, results, replaces)


def validated_node(node: Any, results: list[Any], replaces: bool = False) -> FakeApi:
    """The Node and Events the validator's reporter leaves on `node` after `results`."""
    api = FakeApi(node, replaces=replaces)
    report.report(api, {**ENV, "REPLACEMENTS_PER_HOUR": "2" if replaces else "0"}, CFG, results)
    return api


def test_the_script_reads_the_labels_the_validator_sets() -> None:
    assert (
        validated(PASSED).events[0]["reason"],
        validated(FAILED_ECC).events[0]["reason"],
    ) == (canary_proof_check.PASSED_EVENT_REASON, canary_proof_check.FAILED_EVENT_REASON)
    assert names.VALIDATION_LABELS[:4] == (
        canary_proof_check.RESULT_LABEL,
        canary_proof_check.FAILED_CHECK_LABEL,
        canary_proof_check.VALIDATED_DRIVER_LABEL,
        canary_proof_check.VALIDATED_RELEASE_LABEL,
    )


def test_a_node_that_passed_with_the_new_driver_is_proof() -> None:
    api = validated(PASSED)

    assert verdict(api.node, api.events, NEW_DRIVER)[0] == PROVEN


def test_a_node_that_passed_on_the_pinned_gke_version_is_proof() -> None:
    api = validated(PASSED, kubeletVersion=GKE_RELEASE)

    assert verdict(api.node, api.events, NEW_DRIVER, GKE_RELEASE)[0] == PROVEN


def test_a_proof_of_an_earlier_driver_is_not_proof() -> None:
    # GKE Ubuntu: the GPU Operator upgrades a passed node's driver in place; until the node is
    # validated again its label names the driver it passed with before.
    api = validated(PASSED)

    word, reason = verdict(api.node, api.events, "595.120.02")

    assert word == PENDING
    assert "580.95.05" in reason


def test_a_proof_of_an_earlier_node_version_is_not_proof() -> None:
    api = validated(PASSED, kubeletVersion="v1.33.4-gke.1000000")

    assert verdict(api.node, api.events, NEW_DRIVER, GKE_RELEASE)[0] == PENDING


def test_a_node_still_validating_is_waited_for() -> None:
    assert verdict(NODE, [], NEW_DRIVER)[0] is None


def test_an_exempt_node_is_no_proof() -> None:
    node = copy.deepcopy(NODE)
    node["metadata"]["labels"][names.RESULT_LABEL] = names.EXEMPT

    assert verdict(node, [], NEW_DRIVER)[0] == PENDING


def test_a_failed_node_fails_the_gate_naming_the_check() -> None:
    api = validated(FAILED_ECC)

    word, reason = verdict(api.node, api.events, NEW_DRIVER)

    assert word == FAILED
    assert reason.startswith(f"canary node {NODE['metadata']['name']} failed validation check ecc")
    assert "GPU 3 ECC Disabled" in reason


def test_a_failed_node_deleted_for_replacement_still_names_the_check() -> None:
    # Replaced, the node is deleted before its label is set (report.py), and may be gone before
    # it is: only the Event, posted first, says what failed, on the node as it joined.
    api = validated(FAILED_ECC, replaces=True)
    assert ("DELETE", f"/api/v1/nodes/{NODE['metadata']['name']}") in api.calls

    word, reason = verdict(NODE, api.events, NEW_DRIVER)

    assert word == FAILED
    assert "failed validation check ecc" in reason


def test_a_failure_before_the_node_passed_again_is_not_its_result() -> None:
    # Validated again (its label removed, docs/node-validation.md), the node passed; the Event of
    # its earlier failure lasts the API server's event TTL (1 h, kube-apiserver --event-ttl).
    api = validated(FAILED_ECC)
    api.events[0].update(
        firstTimestamp="2026-01-01T00:00:00Z", lastTimestamp="2026-01-01T00:00:00Z"
    )
    del api.node["metadata"]["labels"][names.RESULT_LABEL]

    report.report(api, ENV, CFG, PASSED)

    assert [e["reason"] for e in api.events] == ["NodeValidationFailed", "NodeValidationPassed"]
    assert verdict(api.node, api.events, NEW_DRIVER)[0] == PROVEN


def test_a_failure_of_an_earlier_node_of_the_same_name_is_not_its_result() -> None:
    # A node deleted for replacement, and a new one given its name (an EKS node is named after
    # its private IP) within the API server's event TTL.
    earlier = copy.deepcopy(NODE)
    earlier["metadata"]["uid"] = "6f1c2e9a-0000-4000-8000-000000000001"
    events = validated_node(earlier, FAILED_ECC, replaces=True).events
    node = copy.deepcopy(NODE)
    node["metadata"]["uid"] = "6f1c2e9a-0000-4000-8000-000000000002"

    assert verdict(node, events, NEW_DRIVER)[0] is None
    assert verdict(earlier, events, NEW_DRIVER)[0] == FAILED


class FakeApi2:
    """The gate's reads: the Node, then its Events."""

    def __init__(self, node: Any, events: list[Any]) -> None:
        self.node, self.events = node, events
        self.paths: list[str] = []

    def get(self, path: str) -> Any:
        self.paths.append(path)
        if path.startswith("/api/v1/nodes/"):
            return self.node
        return {"items": self.events}


@pytest.fixture
def run_proof(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    for name, value in {
        "NODE_NAME": NODE["metadata"]["name"],
        "POD_NAMESPACE": "gpu-operator",
        "EXPECTED_DRIVER": NEW_DRIVER,
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(canary_proof_check, "PROOF_DIR", tmp_path)
    monkeypatch.setattr(canary_proof_check, "TERMINATION_LOG", tmp_path / "termination-log")
    monkeypatch.setattr(canary_proof_check.time, "sleep", lambda _: None)
    monkeypatch.setattr(canary_proof_check.signal, "signal", lambda *_: None)

    def run(api: FakeApi2) -> tuple[int, list[str]]:
        monkeypatch.setattr(canary_proof_check, "Api", lambda: api)
        code = canary_proof_check.main()
        return code, sorted(p.name for p in tmp_path.iterdir())

    return run


def test_the_proof_lets_the_check_run(run_proof: Any) -> None:
    api = validated(PASSED)

    assert run_proof(FakeApi2(api.node, api.events)) == (0, ["proven"])


def test_a_failure_ends_the_gate_with_the_check_in_the_termination_message(
    run_proof: Any, tmp_path: Path
) -> None:
    api = validated(FAILED_ECC)

    assert run_proof(FakeApi2(api.node, api.events)) == (3, ["failed", "termination-log"])
    assert "failed validation check ecc" in (tmp_path / "termination-log").read_text()


def test_a_stale_proof_leaves_the_node(run_proof: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EXPECTED_DRIVER", "595.120.02")
    api = validated(PASSED)

    assert run_proof(FakeApi2(api.node, api.events)) == (75, ["pending"])


# --- What the program renders ---------------------------------------------------------------


@pytest.fixture(scope="module")
def ubuntu_plan() -> Plan:
    return run_program("dev", config=ubuntu_config(), project=PROJECT)


def proof_container(plan: Plan) -> dict[str, Any]:
    (container,) = [
        c for c in gate_spec(plan)["template"]["spec"]["containers"] if c["name"] != "nvidia-smi"
    ]
    return dict(container)


def test_the_gate_waits_for_the_proof_of_the_canarys_new_driver(ubuntu_plan: Plan) -> None:
    container = proof_container(ubuntu_plan)
    env = {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}

    assert container["command"] == ["python3", "/opt/gpu-platform/canary_proof_check.py"]
    # The canary's `gcp.driverVersion` in ubuntu_config; the dev stack pins no GKE version.
    assert env["EXPECTED_DRIVER"] == "595.120.02"
    assert "EXPECTED_RELEASE" not in env


def test_the_gate_pod_may_wait_on_a_node_being_validated(ubuntu_plan: Plan) -> None:
    # Without it the pod could never be on a node that fails, nor see it fail.
    tolerations = gate_spec(ubuntu_plan)["template"]["spec"]["tolerations"]

    assert {
        "key": "startup-taint.cluster-autoscaler.kubernetes.io/gpu-validation",
        "operator": "Equal",
        "value": "pending",
        "effect": "NoSchedule",
    } in tolerations


def test_the_check_touches_the_gpu_only_after_the_proof(ubuntu_plan: Plan) -> None:
    smoke_test = gate_spec(ubuntu_plan)["template"]["spec"]["containers"][0]

    assert smoke_test["command"][2].startswith("until [ -e /proof/proven ]; do\n")


def test_the_gates_account_may_read_nodes_and_nothing_else_cluster_wide(
    ubuntu_plan: Plan,
) -> None:
    role = ubuntu_plan.named(
        "canary-canary-gate", "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole"
    )
    binding = ubuntu_plan.named(
        "canary-canary-gate", "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding"
    )

    assert role.inputs["rules"] == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]
    assert binding.urn in gate(ubuntu_plan).dependencies


def test_the_gate_pod_with_its_proof_passes_restricted(ubuntu_plan: Plan) -> None:
    assert restricted_violations(gate_spec(ubuntu_plan)["template"]["spec"]) == []


def test_ubuntu_nodes_are_validated_again_while_their_driver_is_upgraded(ubuntu_plan: Plan) -> None:
    # The upgrade states from the node's cordon to its uncordon (k8s-operator-libs
    # pkg/upgrade/consts.go, vendored in gpu-operator v26.7.0); `upgrade-required` is left out:
    # a node may wait there for its turn for hours, uncordoned, at work.
    daemon_set = ubuntu_plan.named("node-validation-canary", "kubernetes:apps/v1:DaemonSet")
    terms = daemon_set.inputs["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]

    assert terms[1] == {
        "matchExpressions": [
            {"key": "gpu-platform.io/pool", "operator": "In", "values": ["canary"]},
            {"key": "gpu-platform.io/validation", "operator": "In", "values": ["passed", "exempt"]},
            {
                "key": "nvidia.com/gpu-driver-upgrade-state",
                "operator": "In",
                "values": [
                    "cordon-required",
                    "drain-required",
                    "pod-deletion-required",
                    "pod-restart-required",
                    "uncordon-required",
                    "validation-required",
                    "wait-for-jobs-required",
                ],
            },
        ]
    }
