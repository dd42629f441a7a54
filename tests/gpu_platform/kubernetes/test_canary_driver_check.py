"""On GKE Ubuntu the canary gate passes only on a canary node whose driver pod runs the image its
NVIDIADriver names now, of a DaemonSet whose template runs it too, and Ready: a new driver image
of the same version, which `nvidia-smi` cannot tell from the old one, included. The check's
decisions on literal objects, its exits against a fake API server, and what the program renders
for it.

The objects are the GPU Operator's driver DaemonSet and pod as gpu-operator v26.7.0 renders them
(manifests/state-driver/0500_daemonset.yaml: the `app.kubernetes.io/component: nvidia-driver`
and `nvidia.com/node.os-version` labels, the `nvidia-driver-ctr` container; internal/state/
driver.go: the DaemonSet named `nvidia-gpu-driver-<OS tag>-<hash>` and owned by its
NVIDIADriver), with the labels and annotation the Kubernetes DaemonSet controller and API
server set (pkg/controller/daemon/util/daemonset_util.go: `pod-template-generation`,
`controller-revision-hash`; pkg/registry/apps/daemonset/strategy.go: the template generation,
kept in the `deprecated.daemonset.template.generation` annotation of apps/v1).
"""

import email.message
import ssl
import urllib.error
import urllib.parse
from pathlib import Path
from typing import Any

import pytest

from gpu_platform.kubernetes import canary_driver_check, canary_proof_check
from gpu_platform.kubernetes.canary_driver_check import driver_pending, node_pending
from gpu_platform.kubernetes.canary_gate import NOT_THE_DRIVER, ROLE_RULES
from gpu_platform.offline.analyzer import PolicyPack
from gpu_platform.offline.program import Plan, PlannedResource, run_program
from tests.gpu_platform.kubernetes.restricted_pod_security import restricted_violations
from tests.gpu_platform.kubernetes.test_canary_gate_order import (
    cos_config,
    gate,
    gate_spec,
    ubuntu_config,
)
from tests.official_models import official_model_problems
from tests.repository import PROJECT
from tests.test_configuration_sweep import pack_problems

DAEMON_SET = "nvidia-gpu-driver-ubuntu22.04-7c9d8f6b5"
POD = f"{DAEMON_SET}-x8k2p"
NEW_IMAGE = "registry.example.com/nvidia/driver:595.120.02"
OLD_IMAGE = "nvcr.io/nvidia/driver:595.120.02"


def daemon_set(
    image: str = NEW_IMAGE,
    generation: str = "2",
    owner: str = "canary",
    os_tag: str = "ubuntu22.04",
) -> Any:
    return {
        "metadata": {
            "name": DAEMON_SET,
            "namespace": "gpu-operator",
            "labels": {
                "app": DAEMON_SET,
                "app.kubernetes.io/component": "nvidia-driver",
                "nvidia.com/node.os-version": os_tag,
            },
            "annotations": {"deprecated.daemonset.template.generation": generation},
            "ownerReferences": [
                {
                    "apiVersion": "nvidia.com/v1alpha1",
                    "kind": "NVIDIADriver",
                    "name": owner,
                    "controller": True,
                }
            ],
        },
        "spec": {
            "updateStrategy": {"type": "OnDelete"},
            "template": {
                "spec": {
                    "containers": [{"name": "nvidia-driver-ctr", "image": f"{image}-{os_tag}"}]
                }
            },
        },
    }


def driver_pod(
    image: str = NEW_IMAGE,
    generation: str = "2",
    ready: bool = True,
    deleting: bool = False,
    os_tag: str = "ubuntu22.04",
    revision: str = "5d4b9c7f8",
    name: str = POD,
) -> Any:
    metadata: dict[str, Any] = {
        "name": name,
        "labels": {
            "app": DAEMON_SET,
            "app.kubernetes.io/component": "nvidia-driver",
            "controller-revision-hash": revision,
            "pod-template-generation": generation,
        },
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": DAEMON_SET}],
    }
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    status = "True" if ready else "False"
    return {
        "metadata": metadata,
        "spec": {
            "nodeName": "gke-canary-1",
            "containers": [
                {"name": "k8s-driver-manager", "image": "nvcr.io/nvidia/cloud-native/x:v1"},
                {"name": "nvidia-driver-ctr", "image": f"{image}-{os_tag}"},
            ],
        },
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": status}]},
    }


# --- The decision ---------------------------------------------------------------------------


def test_a_node_whose_driver_pod_runs_the_old_image_waits() -> None:
    # Same driver version, new image: the operator has updated the DaemonSet, the node still
    # runs the old pod, whose `nvidia-smi` reports the same version.
    old = driver_pod(image=OLD_IMAGE, generation="1", revision="6f8c5d9b7")

    reason = driver_pending(old, daemon_set(), "canary", NEW_IMAGE)

    assert reason == (
        f"driver pod {POD} runs {OLD_IMAGE}-ubuntu22.04, not {NEW_IMAGE}-ubuntu22.04:"
        " the GPU Operator has not upgraded this node yet"
    )


def test_a_node_still_on_the_image_a_rollback_returned_to_passes() -> None:
    # Image A, then B, then A again: the DaemonSet controller takes A's ControllerRevision up
    # again (kubernetes v1.35 pkg/controller/daemon/update.go `constructHistory`: a history that
    # matches the template is the current one), while the template generation rises to 3. A
    # node the operator never moved to B keeps its pod of generation 1, A's revision hash; the
    # operator calls it in sync (k8s-operator-libs, vendored in gpu-operator v26.7.0,
    # pkg/upgrade/common_manager.go `podInSyncWithDS`: the revision hashes alone) and never
    # restarts it, and it runs A.
    back_to_a = daemon_set(image=OLD_IMAGE, generation="3")
    never_moved = driver_pod(image=OLD_IMAGE, generation="1", revision="6f8c5d9b7")

    assert driver_pending(never_moved, back_to_a, "canary", OLD_IMAGE) is None


def test_a_daemon_set_the_operator_has_not_updated_yet_waits() -> None:
    # `pulumi up` changed the NVIDIADriver; the operator still has to render the DaemonSet.
    old = daemon_set(image=OLD_IMAGE, generation="1")

    reason = driver_pending(driver_pod(image=OLD_IMAGE, generation="1"), old, "canary", NEW_IMAGE)

    assert reason == (
        f"DaemonSet {DAEMON_SET} runs {OLD_IMAGE}-ubuntu22.04, not"
        f" {NEW_IMAGE}-ubuntu22.04: the GPU Operator has not applied NVIDIADriver canary yet"
    )


def test_a_current_driver_pod_not_ready_yet_waits() -> None:
    reason = driver_pending(driver_pod(ready=False), daemon_set(), "canary", NEW_IMAGE)

    assert reason == f"driver pod {POD} runs {NEW_IMAGE}-ubuntu22.04 but is not ready yet"


def test_a_current_and_ready_driver_pod_passes() -> None:
    assert driver_pending(driver_pod(), daemon_set(), "canary", NEW_IMAGE) is None


def test_an_ubuntu_24_04_node_needs_the_24_04_image() -> None:
    # The OS tag is the DaemonSet's `nvidia.com/node.os-version` label (gpu-operator v26.7.0
    # manifests/state-driver/0500_daemonset.yaml), one DaemonSet per OS version.
    noble = daemon_set(os_tag="ubuntu24.04")

    assert driver_pending(driver_pod(os_tag="ubuntu24.04"), noble, "canary", NEW_IMAGE) is None
    assert driver_pending(driver_pod(), noble, "canary", NEW_IMAGE) == (
        f"driver pod {POD} runs {NEW_IMAGE}-ubuntu22.04, not {NEW_IMAGE}-ubuntu24.04:"
        " the GPU Operator has not upgraded this node yet"
    )


def test_a_driver_pod_of_another_nvidiadriver_waits() -> None:
    reason = driver_pending(driver_pod(), daemon_set(owner="l4-shared"), "canary", NEW_IMAGE)

    assert reason == (
        f"driver pod {POD} is of DaemonSet {DAEMON_SET}, which NVIDIADriver canary"
        " does not own (its NVIDIADriver: l4-shared)"
    )


def test_an_image_named_by_digest_gets_no_os_tag() -> None:
    # nvidiadriver_types.go GetImagePath: no `-<OS tag>` where the image has a digest.
    image = "nvcr.io/nvidia/driver@sha256:" + "a" * 64
    pinned, pod = daemon_set(), driver_pod()
    pinned["spec"]["template"]["spec"]["containers"][0]["image"] = image
    pod["spec"]["containers"][1]["image"] = image

    assert driver_pending(pod, pinned, "canary", image) is None


def test_a_node_without_a_driver_pod_waits() -> None:
    reason = node_pending([], lambda name: daemon_set(), "canary", NEW_IMAGE, "gke-canary-1")

    assert reason == "no NVIDIA driver pod on node gke-canary-1 yet"


def test_a_driver_pod_being_deleted_proves_nothing() -> None:
    # The operator's upgrade deletes the old pod; until the DaemonSet controller starts the new
    # one, the old one may still be listed.
    pods = [driver_pod(deleting=True)]

    reason = node_pending(pods, lambda name: daemon_set(), "canary", NEW_IMAGE, "gke-canary-1")

    assert reason == "no NVIDIA driver pod on node gke-canary-1 yet"


def test_a_node_passes_on_any_of_its_driver_pods() -> None:
    # The old pod, not deleted yet, listed before the new one.
    pods = [driver_pod(image=OLD_IMAGE, generation="1", name="old"), driver_pod(name="new")]

    assert node_pending(pods, lambda name: daemon_set(), "canary", NEW_IMAGE, "n") is None


def test_a_driver_pod_of_no_daemon_set_proves_nothing() -> None:
    orphan = driver_pod()
    orphan["metadata"]["ownerReferences"] = []

    reason = node_pending([orphan], lambda name: daemon_set(), "canary", NEW_IMAGE, "n")

    assert reason == f"driver pod {POD} has no DaemonSet"


# --- Against a fake API server --------------------------------------------------------------


def allowed_by_role(path: str) -> bool:
    """Whether `ROLE_RULES`, in the operator's namespace, allow a GET of `path`: a GET of a
    collection is `list`, of a named object `get` (k8s.io/apiserver
    pkg/endpoints/request/requestinfo.go, `RequestInfoFactory.NewRequestInfo`)."""
    parts = urllib.parse.urlsplit(path).path.strip("/").split("/")
    group, rest = ("", parts[2:]) if parts[0] == "api" else (parts[1], parts[3:])
    if rest[:2] != ["namespaces", "gpu-operator"]:
        return False
    resource, verb = rest[2], "get" if len(rest) > 3 else "list"
    return any(
        group in rule["apiGroups"] and resource in rule["resources"] and verb in rule["verbs"]
        for rule in ROLE_RULES
    )


def http_error(code: int) -> urllib.error.HTTPError:
    return urllib.error.HTTPError(
        "https://10.0.0.1/", code, "refused", email.message.Message(), None
    )


class FakeApi:
    """The API server's answers to the check's reads, every one of them held to the gate's Role;
    `failures` are raised, one per read, before it answers."""

    def __init__(self, pods: list[Any], failures: list[Exception] | None = None) -> None:
        self.pods = pods
        self.failures = list(failures or [])
        self.paths: list[str] = []

    def get(self, path: str) -> Any:
        assert allowed_by_role(path), path
        self.paths.append(path)
        if self.failures:
            raise self.failures.pop(0)
        if path.startswith("/api/v1/namespaces/gpu-operator/pods?"):
            return {"items": self.pods}
        assert path == f"/apis/apps/v1/namespaces/gpu-operator/daemonsets/{DAEMON_SET}"
        return daemon_set()


@pytest.fixture
def run_check(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Runs the check's `main` against a FakeApi (None: the real `Api`); gives its exit code
    and the sleeps it took."""
    env = {
        "NODE_NAME": "gke-canary-1",
        "POD_NAMESPACE": "gpu-operator",
        "NVIDIA_DRIVER": "canary",
        "NVIDIA_DRIVER_IMAGE": NEW_IMAGE,
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    sleeps: list[float] = []
    monkeypatch.setattr(canary_driver_check.time, "sleep", sleeps.append)

    def run(api: FakeApi | None) -> tuple[int, list[float]]:
        if api is not None:
            monkeypatch.setattr(canary_driver_check, "Api", lambda: api)
        return canary_driver_check.main(), sleeps

    return run


@pytest.mark.parametrize(
    ("pods", "exit_code"),
    [([driver_pod(image=OLD_IMAGE, generation="1")], 75), ([driver_pod()], 0)],
)
def test_the_check_exits_75_until_the_node_runs_the_current_driver(
    run_check: Any, pods: list[Any], exit_code: int
) -> None:
    api = FakeApi(pods)

    assert run_check(api)[0] == exit_code
    assert api.paths[0] == (
        "/api/v1/namespaces/gpu-operator/pods?labelSelector=app.kubernetes.io%2Fcomponent"
        "%3Dnvidia-driver&fieldSelector=spec.nodeName%3Dgke-canary-1"
    )


def test_the_role_is_held_to_what_the_check_reads() -> None:
    assert allowed_by_role("/api/v1/namespaces/gpu-operator/pods?labelSelector=a")
    assert allowed_by_role(f"/apis/apps/v1/namespaces/gpu-operator/daemonsets/{DAEMON_SET}")
    assert not allowed_by_role(f"/api/v1/namespaces/gpu-operator/pods/{POD}")
    assert not allowed_by_role("/apis/apps/v1/namespaces/gpu-operator/daemonsets")
    assert not allowed_by_role("/api/v1/namespaces/default/pods")


@pytest.mark.parametrize(
    "failure",
    [
        http_error(500),
        http_error(503),
        urllib.error.URLError(ConnectionRefusedError(111, "Connection refused")),
        ValueError("Expecting value: line 1 column 1 (char 0)"),
    ],
)
def test_an_api_server_not_answering_is_tried_again_by_a_new_pod(
    run_check: Any, failure: Exception
) -> None:
    assert run_check(FakeApi([driver_pod()], [failure])) == (75, [60])


def test_an_unknown_token_fails_the_gate_at_once(run_check: Any) -> None:
    assert run_check(FakeApi([driver_pod()], [http_error(401)])) == (1, [])


def test_a_refusal_while_the_role_binding_propagates_is_tried_again(run_check: Any) -> None:
    api = FakeApi([driver_pod()], [http_error(403), http_error(403)])

    assert run_check(api) == (0, [2, 2])


def test_a_lasting_refusal_fails_the_gate_after_five_tries_again(run_check: Any) -> None:
    api = FakeApi([driver_pod()], [http_error(403)] * 6)

    assert run_check(api) == (1, [2, 2, 2, 2, 2])
    assert len(api.paths) == 6


def test_a_certificate_the_clusters_ca_does_not_verify_fails_the_gate_at_once(
    run_check: Any,
) -> None:
    untrusted = ssl.SSLCertVerificationError(1, "certificate verify failed")

    assert run_check(FakeApi([driver_pod()], [urllib.error.URLError(untrusted)])) == (1, [])


@pytest.fixture
def service_account(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "token").write_text("a-token\n")
    (tmp_path / "ca.crt").write_text("the cluster's CA")
    monkeypatch.setattr(canary_driver_check, "TOKEN_DIR", tmp_path)
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    return tmp_path


@pytest.mark.parametrize(
    ("host", "server"),
    [("10.0.0.1", "https://10.0.0.1:443"), ("fd00:10:96::1", "https://[fd00:10:96::1]:443")],
)
def test_the_api_server_is_reached_at_its_service_address_with_the_clusters_ca(
    service_account: Path, monkeypatch: pytest.MonkeyPatch, host: str, server: str
) -> None:
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", host)
    cafiles: list[str | None] = []

    def context(cafile: str | None = None) -> ssl.SSLContext:
        cafiles.append(cafile)
        return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)

    monkeypatch.setattr(canary_driver_check.ssl, "create_default_context", context)

    api = canary_driver_check.Api()

    assert (api.server, api.token, cafiles) == (
        server,
        "a-token",
        [str(service_account / "ca.crt")],
    )


def test_a_token_or_ca_missing_fails_the_gate_at_once(
    service_account: Path, monkeypatch: pytest.MonkeyPatch, run_check: Any
) -> None:
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    (service_account / "ca.crt").unlink()

    assert run_check(None) == (1, [])


# --- What the program renders ---------------------------------------------------------------


def same_version_new_image() -> dict[str, Any]:
    config = ubuntu_config()
    config["gpu-platform:operator"] = {
        "overrides": {"driver": {"repository": "registry.example.com/nvidia"}}
    }
    return config


@pytest.fixture(scope="module")
def image_plan() -> Plan:
    return run_program("dev", config=same_version_new_image(), project=PROJECT)


def check_container(plan: Plan) -> dict[str, Any]:
    (container,) = gate_spec(plan)["template"]["spec"]["initContainers"]
    return dict(container)


def test_the_gate_checks_the_canarys_nvidiadriver_and_its_image(image_plan: Plan) -> None:
    env = {
        e["name"]: e.get("value", e.get("valueFrom")) for e in check_container(image_plan)["env"]
    }

    assert env == {
        "NODE_NAME": {"fieldRef": {"fieldPath": "spec.nodeName"}},
        "POD_NAMESPACE": {"fieldRef": {"fieldPath": "metadata.namespace"}},
        "NVIDIA_DRIVER": "canary",
        "NVIDIA_DRIVER_IMAGE": "registry.example.com/nvidia/driver:595.120.02",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def test_the_check_runs_the_shipped_script(image_plan: Plan) -> None:
    container = check_container(image_plan)
    (config_map,) = [
        r
        for r in image_plan.of_type("kubernetes:core/v1:ConfigMap")
        if r.name == "canary-canary-gate"
    ]

    assert container["command"] == ["python3", "/opt/gpu-platform/canary_driver_check.py"]
    assert config_map.inputs["data"] == {
        "canary_driver_check.py": Path(canary_driver_check.__file__).read_text(),
        "canary_proof_check.py": Path(canary_proof_check.__file__).read_text(),
    }


def test_a_pod_that_found_the_node_not_upgraded_yet_is_retried_not_counted(
    image_plan: Plan,
) -> None:
    rules = gate_spec(image_plan)["podFailurePolicy"]["rules"]

    assert {
        "action": "Ignore",
        "onExitCodes": {"containerName": "driver-rollout", "operator": "In", "values": [75]},
    } in rules


def test_only_the_checks_get_a_token(image_plan: Plan) -> None:
    pod = gate_spec(image_plan)["template"]["spec"]
    smoke_test, proof = pod["containers"]
    token = {
        "name": "driver-check-token",
        "projected": {
            "sources": [
                {"serviceAccountToken": {"path": "token", "expirationSeconds": 600}},
                {
                    "configMap": {
                        "name": "kube-root-ca.crt",
                        "items": [{"key": "ca.crt", "path": "ca.crt"}],
                    }
                },
            ]
        },
    }

    assert (pod["serviceAccountName"], pod["automountServiceAccountToken"]) == (
        "gpu-canary-gate-canary",
        False,
    )
    assert token in pod["volumes"]
    assert {
        "name": "driver-check-token",
        "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
        "readOnly": True,
    } in check_container(image_plan)["volumeMounts"]
    assert [m["name"] for m in proof["volumeMounts"]] == [
        "driver-check",
        "driver-check-token",
        "proof",
    ]
    assert [m["name"] for m in smoke_test["volumeMounts"]] == ["proof"]


def test_the_gate_pod_with_its_check_passes_restricted(image_plan: Plan) -> None:
    assert restricted_violations(gate_spec(image_plan)["template"]["spec"]) == []


def role(plan: Plan) -> PlannedResource:
    return plan.named("canary-canary-gate", "kubernetes:rbac.authorization.k8s.io/v1:Role")


def binding(plan: Plan) -> PlannedResource:
    return plan.named("canary-canary-gate", "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding")


def test_the_gates_account_may_only_read_driver_pods_and_daemon_sets_in_the_operators_namespace(
    image_plan: Plan,
) -> None:
    assert role(image_plan).inputs["metadata"]["namespace"] == "gpu-operator"
    assert role(image_plan).inputs["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
        {"apiGroups": ["apps"], "resources": ["daemonsets"], "verbs": ["get"]},
        # The validation proof's: the validator's Events on the canary's nodes.
        {"apiGroups": [""], "resources": ["events"], "verbs": ["list"]},
    ]
    assert binding(image_plan).inputs["subjects"] == [
        {"kind": "ServiceAccount", "name": "gpu-canary-gate-canary", "namespace": "gpu-operator"}
    ]
    assert binding(image_plan).inputs["roleRef"]["name"] == "gpu-canary-gate-canary"


def test_the_gate_starts_once_its_account_may_read(image_plan: Plan) -> None:
    assert binding(image_plan).urn in gate(image_plan).dependencies


def test_every_part_of_the_nvidiadriver_the_gate_names_is_in_the_image_it_checks(
    image_plan: Plan,
) -> None:
    # The check proves the image of the DaemonSet's template (repository, image, version); the
    # rest of what names the gate must leave the DaemonSet alone or be fixed for every pool. A
    # new field of the NVIDIADriver that makes the driver needs a check of its own here.
    spec = image_plan.named("gpu-operator-driver-canary").inputs["spec"]

    assert {k: v for k, v in spec.items() if k not in NOT_THE_DRIVER} == {
        "default": False,
        "driverType": "gpu",
        "repository": "registry.example.com/nvidia",
        "image": "driver",
        "version": "595.120.02",
    }


def test_the_ubuntu_gate_plans_clean(image_plan: Plan, policy_pack: PolicyPack) -> None:
    config = same_version_new_image()

    assert pack_problems(policy_pack)(image_plan, config) == []
    assert official_model_problems(image_plan, "1.35") == []


def test_gates_where_new_drivers_come_with_new_nodes_read_no_driver_pods() -> None:
    # EKS, Karpenter and GKE COS replace a node to change its driver: the gate's node is new.
    # What they read is the validation's proof alone.
    plan = run_program("dev", config=cos_config(), project=PROJECT)

    assert "initContainers" not in gate_spec(plan)["template"]["spec"]
    assert role(plan).inputs["rules"] == [
        {"apiGroups": [""], "resources": ["events"], "verbs": ["list"]}
    ]
