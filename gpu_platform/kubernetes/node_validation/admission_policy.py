"""The admission policy that holds the node validator's service account to its one job on Nodes:
taking the validation taint off and setting the validation labels, nothing else.

RBAC cannot say which fields of a Node a `patch` may change; a ValidatingAdmissionPolicy
(admissionregistration.k8s.io/v1, GA in Kubernetes 1.30) can, comparing the Node after the
update (`object`) with the Node before it (`oldObject`) in CEL. The policy matches only updates
of Nodes by the validator's service account (`matchConditions` on `request.userInfo.username`)
and denies one unless:
- its taints are the old ones, or the old ones less the validation taint;
- every label other than the validation labels is as it was, none added or removed;
- its annotations, finalizers and owner references are as they were;
- the rest of its spec (every NodeSpec field but `taints`) is as it was.

The expressions use only standard CEL (`has`, `all`, `filter`, `in`, equality), none of
Kubernetes' CEL libraries, so that a CEL implementation outside Kubernetes can evaluate them.
"""

from typing import Any

from gpu_platform.kubernetes.node_validation.names import (
    VALIDATION_LABELS,
    VALIDATION_TAINT,
    VALIDATOR_SERVICE_ACCOUNT,
)

NAME = "gpu-platform-node-validator"
API_VERSION = "admissionregistration.k8s.io/v1"
# NodeSpec's fields besides `taints` (core/v1 NodeSpec, the same from Kubernetes 1.33 to 1.36).
OTHER_SPEC_FIELDS = (
    "configSource",
    "externalID",
    "podCIDR",
    "podCIDRs",
    "providerID",
    "unschedulable",
)
# ObjectMeta's fields a client can change on update besides `labels`; the others are the API
# server's or immutable.
OTHER_METADATA_FIELDS = ("annotations", "finalizers", "ownerReferences")


def _unchanged(path: str) -> str:
    """CEL: the field at `path` (under `object` and `oldObject`) is as it was, or absent from
    both."""
    new, old = f"object.{path}", f"oldObject.{path}"
    return f"has({new}) == has({old}) && (!has({new}) || {new} == {old})"


def _quoted(values: tuple[str, ...]) -> str:
    return "[" + ", ".join(f"'{v}'" for v in values) + "]"


VARIABLES = [
    {
        "name": "oldTaints",
        "expression": "has(oldObject.spec.taints) ? oldObject.spec.taints : []",
    },
    {"name": "newTaints", "expression": "has(object.spec.taints) ? object.spec.taints : []"},
    {
        "name": "oldLabels",
        "expression": "has(oldObject.metadata.labels) ? oldObject.metadata.labels : {}",
    },
    {
        "name": "newLabels",
        "expression": "has(object.metadata.labels) ? object.metadata.labels : {}",
    },
]


def validations() -> list[dict[str, str]]:
    taint, labels = f"'{VALIDATION_TAINT.key}'", _quoted(VALIDATION_LABELS)
    return [
        {
            "expression": (
                "variables.newTaints == variables.oldTaints || variables.newTaints =="
                f" variables.oldTaints.filter(t, t.key != {taint})"
            ),
            "message": f"the node validator may only remove the taint {VALIDATION_TAINT.key}",
        },
        {
            "expression": (
                f"variables.newLabels.all(k, k in {labels} || (k in variables.oldLabels &&"
                " variables.oldLabels[k] == variables.newLabels[k])) &&"
                f" variables.oldLabels.all(k, k in {labels} || k in variables.newLabels)"
            ),
            "message": (
                "the node validator may only set or remove the labels "
                + ", ".join(VALIDATION_LABELS)
            ),
        },
        {
            "expression": " && ".join(
                f"({_unchanged(f'metadata.{field}')})" for field in OTHER_METADATA_FIELDS
            ),
            "message": "the node validator may not change a node's annotations, finalizers or"
            " owners",
        },
        {
            "expression": " && ".join(
                f"({_unchanged(f'spec.{field}')})" for field in OTHER_SPEC_FIELDS
            ),
            "message": "the node validator may not change a node's spec beyond its taint",
        },
    ]


def validator_username(namespace: str) -> str:
    return f"system:serviceaccount:{namespace}:{VALIDATOR_SERVICE_ACCOUNT}"


def node_validator_admission_policy(namespace: str) -> list[dict[str, Any]]:
    """The ValidatingAdmissionPolicy and its binding (deny), for the validator's service account
    in `namespace`."""
    policy = {
        "apiVersion": API_VERSION,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": NAME},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["UPDATE"],
                        "resources": ["nodes"],
                    }
                ]
            },
            "matchConditions": [
                {
                    "name": "node-validator",
                    "expression": f"request.userInfo.username == '{validator_username(namespace)}'",
                }
            ],
            "variables": VARIABLES,
            "validations": validations(),
        },
    }
    binding = {
        "apiVersion": API_VERSION,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": NAME},
        "spec": {"policyName": NAME, "validationActions": ["Deny"]},
    }
    return [policy, binding]
