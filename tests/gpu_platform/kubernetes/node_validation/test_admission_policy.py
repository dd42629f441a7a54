"""The node validator's admission policy: its CEL evaluated for real (cel-python, a CEL
implementation of the CEL specification) against updates the validator may and may not make, and
its manifests against the Kubernetes OpenAPI schema of every supported version.

cel-python implements standard CEL, not Kubernetes' CEL libraries nor its type checking against
the Node schema; the policy's expressions use standard CEL only, and evaluate here as the API
server evaluates them: `matchConditions` first (a request that does not match is admitted),
then `variables` in order, then every validation."""

import copy
from collections.abc import Callable
from typing import Any

import celpy
import kubernetes_validate
import pytest

from gpu_platform.kubernetes.node_validation.admission_policy import (
    OTHER_SPEC_FIELDS,
    node_validator_admission_policy,
    validator_username,
)
from gpu_platform.kubernetes.node_validation.names import (
    FAILED_CHECK_LABEL,
    RESULT_LABEL,
    VALIDATED_DRIVER_LABEL,
    VALIDATED_RELEASE_LABEL,
    VALIDATION_TAINT,
)
from gpu_platform.versions import SUPPORTED_KUBERNETES_VERSIONS
from tests.kubernetes_schemas import validate

NAMESPACE = "gpu-operator"
POLICY, BINDING = node_validator_admission_policy(NAMESPACE)
CEL = celpy.Environment()
Node = dict[str, Any]

NODE: Node = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {
        "name": "ip-10-0-1-23.ec2.internal",
        "labels": {
            "kubernetes.io/hostname": "ip-10-0-1-23.ec2.internal",
            "node.kubernetes.io/instance-type": "p5.48xlarge",
            "nvidia.com/gpu.present": "true",
        },
        "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
    },
    "spec": {
        "providerID": "aws:///us-east-1a/i-0123456789abcdef0",
        "podCIDR": "10.1.0.0/24",
        "podCIDRs": ["10.1.0.0/24"],
        "taints": [
            {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
            {
                "key": VALIDATION_TAINT.key,
                "value": VALIDATION_TAINT.value,
                "effect": VALIDATION_TAINT.effect,
            },
        ],
    },
}


def evaluate(expression: str, activation: dict[str, Any]) -> Any:
    program = CEL.program(CEL.compile(expression))
    return program.evaluate({k: celpy.json_to_cel(v) for k, v in activation.items()})


def admitted(
    old: Node, new: Node | None, username: str | None = None, on: str | None = None
) -> list[str]:
    """The messages of the validations that deny updating `old` to `new` (deleting it where
    `new` is None) by a pod on the node `on` (`old`'s unless given); [] if admitted. A bound
    service account token names its pod's node in the user's extra (KEP-4193; the
    `authentication.kubernetes.io/node-name` key, k8s.io/apiserver pkg/authentication/
    serviceaccount/util.go `NodeNameKey`)."""
    node_name = on or old["metadata"]["name"]
    request = {
        "operation": "UPDATE" if new is not None else "DELETE",
        "userInfo": {
            "username": username or validator_username(NAMESPACE),
            "extra": {"authentication.kubernetes.io/node-name": [node_name]},
        },
    }
    spec = POLICY["spec"]
    if not all(evaluate(c["expression"], {"request": request}) for c in spec["matchConditions"]):
        return []
    activation: dict[str, Any] = {
        "object": new,
        "oldObject": old,
        "request": request,
        "variables": {},
    }
    for variable in spec["variables"]:
        value = evaluate(variable["expression"], activation)
        # celpy's BoolType is an int, which json_to_cel would read back as an IntType.
        is_bool = isinstance(value, celpy.celtypes.BoolType)
        activation["variables"][variable["name"]] = bool(value) if is_bool else value
    return [v["message"] for v in spec["validations"] if not evaluate(v["expression"], activation)]


def changed(change: Callable[[Node], object]) -> Node:
    node = copy.deepcopy(NODE)
    change(node)
    return node


def without_validation_taint(node: Node) -> None:
    node["spec"]["taints"] = [t for t in node["spec"]["taints"] if t["key"] != VALIDATION_TAINT.key]


def passed(node: Node) -> None:
    without_validation_taint(node)
    node["metadata"]["labels"].update(
        {
            RESULT_LABEL: "passed",
            VALIDATED_DRIVER_LABEL: "595.91.07",
            VALIDATED_RELEASE_LABEL: "ami-0123456789abcdef0",
        }
    )


def failed(node: Node) -> None:
    node["metadata"]["labels"].update({RESULT_LABEL: "failed", FAILED_CHECK_LABEL: "gpu-count"})


def failed_for_good(node: Node) -> None:
    failed(node)
    node["spec"]["taints"].append(
        {"key": "gpu-platform.io/validation-failed", "value": "gpu-count", "effect": "NoSchedule"}
    )


def exempt(node: Node) -> None:
    without_validation_taint(node)
    node["metadata"]["labels"][RESULT_LABEL] = "exempt"


ALLOWED = {
    "passed: taint off, labels on": passed,
    "failed: taint kept, labels on": failed,
    "failed, not replaced: the lasting taint added": failed_for_good,
    "only the taint off": without_validation_taint,
    "nothing changed": lambda node: None,
}


@pytest.mark.parametrize("change", ALLOWED.values(), ids=ALLOWED.keys())
def test_the_validator_may_remove_its_taint_and_set_its_labels(
    change: Callable[[Node], object],
) -> None:
    assert admitted(NODE, changed(change)) == []


def test_the_validator_may_take_a_label_of_its_own_off() -> None:
    old = changed(failed)
    new = copy.deepcopy(old)
    del new["metadata"]["labels"][FAILED_CHECK_LABEL]
    assert admitted(old, new) == []


def test_a_node_that_passes_after_failing_loses_both_taints() -> None:
    assert admitted(changed(failed_for_good), changed(passed)) == []


def test_an_untainted_node_may_be_labelled_exempt() -> None:
    untainted = changed(without_validation_taint)
    assert admitted(untainted, changed(exempt)) == []


NODE_ONLY = "the node validator may only change or delete the node its pod runs on"
DELETE_TAINTED = "the node validator may only delete a node that has the taint"


def test_a_validator_may_not_patch_another_node() -> None:
    assert admitted(NODE, changed(passed), on="ip-10-0-9-99.ec2.internal") == [NODE_ONLY]


def test_a_token_not_bound_to_a_node_patches_nothing() -> None:
    # A token requested for the service account alone (`kubectl create token`) has no node.
    request = {
        "operation": "UPDATE",
        "userInfo": {"username": validator_username(NAMESPACE), "extra": {}},
    }
    (check,) = [v for v in POLICY["spec"]["validations"] if v["message"] == NODE_ONLY]
    assert evaluate(check["expression"], {"request": request, "oldObject": NODE}) is not True


def test_a_validator_may_delete_its_own_tainted_node_only() -> None:
    assert admitted(NODE, None) == []
    assert admitted(changed(failed), None) == []
    assert admitted(NODE, None, on="ip-10-0-9-99.ec2.internal") == [NODE_ONLY]
    assert [m[: len(DELETE_TAINTED)] for m in admitted(changed(passed), None)] == [DELETE_TAINTED]


def test_the_validator_may_take_the_taint_off_a_node_with_no_other() -> None:
    old = changed(lambda node: node["spec"].update(taints=node["spec"]["taints"][1:]))
    new = changed(lambda node: node["spec"].pop("taints"))
    assert admitted(old, new) == []


def test_a_passed_node_may_be_tainted_again_with_its_result_removed() -> None:
    # Its driver upgraded in place (GKE Ubuntu), the node is validated again (report.py).
    assert admitted(changed(passed), NODE) == []


def test_the_taint_comes_back_only_with_the_result_removed() -> None:
    # A node still labelled passed would not be validated again, and would keep the taint.
    still_passed = changed(passed)
    still_passed["spec"]["taints"] = copy.deepcopy(NODE["spec"]["taints"])

    denied = admitted(changed(passed), still_passed)

    assert len(denied) == 1 and denied[0].startswith(TAINTS)


TAINTS = "the node validator may only remove the taint " + VALIDATION_TAINT.key
LABELS = "the node validator may only set or remove the labels "
METADATA = "the node validator may not change a node's annotations, finalizers or owners"
SPEC = "the node validator may not change a node's spec beyond its taints"
FORBIDDEN = {
    "another taint removed": (
        lambda node: node["spec"].update(taints=node["spec"]["taints"][1:]),
        TAINTS,
    ),
    "a taint added": (
        lambda node: node["spec"]["taints"].append(
            {"key": "example.com/other", "effect": "NoExecute"}
        ),
        TAINTS,
    ),
    "the validation taint added twice": (
        lambda node: node["spec"]["taints"].append(copy.deepcopy(node["spec"]["taints"][1])),
        TAINTS,
    ),
    "the validation taint changed, not removed": (
        lambda node: node["spec"]["taints"][1].update(effect="PreferNoSchedule"),
        TAINTS,
    ),
    "a failure taint that does not keep pods off": (
        lambda node: node["spec"]["taints"].append(
            {"key": "gpu-platform.io/validation-failed", "effect": "PreferNoSchedule"}
        ),
        TAINTS,
    ),
    "the failure taint added, the validation taint removed": (
        lambda node: node["spec"].update(
            taints=[
                node["spec"]["taints"][0],
                {"key": "gpu-platform.io/validation-failed", "effect": "NoSchedule"},
            ]
        ),
        TAINTS,
    ),
    "another label changed": (
        lambda node: node["metadata"]["labels"].update(
            {"node.kubernetes.io/instance-type": "p5.4xlarge"}
        ),
        LABELS,
    ),
    "another label added": (
        lambda node: node["metadata"]["labels"].update({"team": "ml"}),
        LABELS,
    ),
    "another label removed": (
        lambda node: node["metadata"]["labels"].pop("nvidia.com/gpu.present"),
        LABELS,
    ),
    "an annotation added": (
        lambda node: node["metadata"]["annotations"].update({"example.com/note": "x"}),
        METADATA,
    ),
    "a finalizer added": (
        lambda node: node["metadata"].update(finalizers=["example.com/keep"]),
        METADATA,
    ),
    "the node cordoned": (lambda node: node["spec"].update(unschedulable=True), SPEC),
    "its provider id changed": (
        lambda node: node["spec"].update(providerID="aws:///us-east-1a/i-0fedcba9876543210"),
        SPEC,
    ),
}


@pytest.mark.parametrize(("change", "message"), FORBIDDEN.values(), ids=FORBIDDEN.keys())
def test_the_validator_may_do_nothing_else(change: Callable[[Node], object], message: str) -> None:
    denied = admitted(NODE, changed(change))
    assert len(denied) == 1 and denied[0].startswith(message)


def test_a_forbidden_change_beside_the_allowed_one_is_denied() -> None:
    def sneaky(node: Node) -> None:
        passed(node)
        node["metadata"]["labels"]["team"] = "ml"

    assert [m[: len(LABELS)] for m in admitted(NODE, changed(sneaky))] == [LABELS]


def test_the_policy_leaves_everyone_else_to_rbac() -> None:
    cordoned = changed(lambda node: node["spec"].update(unschedulable=True))
    assert admitted(NODE, cordoned, "system:serviceaccount:kube-system:node-controller") == []
    assert (
        admitted(NODE, cordoned, f"system:serviceaccount:other:{POLICY['metadata']['name']}") == []
    )


def test_the_binding_denies_with_the_policy() -> None:
    assert BINDING["spec"] == {
        "policyName": POLICY["metadata"]["name"],
        "validationActions": ["Deny"],
    }
    assert POLICY["spec"]["matchConstraints"]["resourceRules"][0]["resources"] == ["nodes"]
    assert POLICY["spec"]["matchConstraints"]["resourceRules"][0]["operations"] == [
        "UPDATE",
        "DELETE",
    ]


@pytest.mark.parametrize("minor", SUPPORTED_KUBERNETES_VERSIONS)
def test_the_manifests_are_valid_kubernetes_objects(minor: str) -> None:
    for manifest in (POLICY, BINDING):
        validate(copy.deepcopy(manifest), minor)


@pytest.mark.parametrize("minor", SUPPORTED_KUBERNETES_VERSIONS)
def test_every_other_node_spec_field_is_held(minor: str) -> None:
    # The NodeSpec schema of each supported version, as kubernetes-validate ships it from
    # Kubernetes' OpenAPI: a field added there would escape the policy.
    schema = kubernetes_validate.utils.schema_contents(
        f"kubernetes-json-schema/v{minor}.0-local-strict/nodespec-v1.json", f"{minor}.0"
    )
    assert sorted(OTHER_SPEC_FIELDS) == sorted(set(schema["properties"]) - {"taints"})
