"""The admission policy that holds the node validator's service account to its one job on Nodes:
taking the validation taint off, marking a failed node and setting the validation labels, on its
own node only, and deleting its own node only while that node has not passed.

RBAC cannot say which fields of a Node a `patch` may change, nor which Node: a
ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1, GA in Kubernetes 1.30) can, comparing
the Node after the update (`object`) with the Node before it (`oldObject`) in CEL. The policy
matches only updates and deletions of Nodes by the validator's service account (`matchConditions`
on `request.userInfo.username`) and denies one unless the Node is the one the request's token
was bound to: the pod's service account token, bound to its pod, carries the pod's node in the
user's extra `authentication.kubernetes.io/node-name` (KEP-4193, "Improved multi-node
ServiceAccount token binding": beta and on by default from Kubernetes 1.30, GA in 1.32,
`ServiceAccountTokenPodNodeInfo` in kubernetes pkg/features/kube_features.go; every version
the platform supports, `SUPPORTED_KUBERNETES_VERSIONS`, is newer). An update is denied too
unless:
- its taints are the old ones, the old ones less the validation and failure taints, the old
  ones with only failure taints (`FAILED_TAINT_KEY`, `NoSchedule`) changed, or the old ones and
  the validation taint, on a node left without a result label (validated again: its driver
  upgraded in place, `report.py`);
- every label other than the validation labels is as it was, none added or removed;
- its annotations, finalizers and owner references are as they were;
- the rest of its spec (every NodeSpec field but `taints`) is as it was.
A deletion is denied unless the Node still carries the validation taint: a node that passed is
never deleted.

The expressions use only standard CEL (`has`, `all`, `exists`, `filter`, `in`, equality), none
of Kubernetes' CEL libraries, so that a CEL implementation outside Kubernetes can evaluate them.
"""

from typing import Any

import pulumi
from pulumi_kubernetes import admissionregistration

from gpu_platform.kubernetes.node_validation.names import (
    FAILED_TAINT_KEY,
    RESULT_LABEL,
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
NODE_NAME_EXTRA = "authentication.kubernetes.io/node-name"
# ObjectMeta's fields a client can change on update besides `labels`; the others are the API
# server's or immutable.
OTHER_METADATA_FIELDS = ("annotations", "finalizers", "ownerReferences")


def _unchanged(path: str) -> str:
    """CEL: the field at `path` (under `object` and `oldObject`) is as it was, or absent from
    both."""
    new, old = f"object.{path}", f"oldObject.{path}"
    return f"has({new}) == has({old}) && (!has({new}) || {new} == {old})"


def quoted(values: tuple[str, ...]) -> str:
    return "[" + ", ".join(f"'{v}'" for v in values) + "]"


VARIABLES = [
    {"name": "deleting", "expression": "request.operation == 'DELETE'"},
    {
        "name": "oldTaints",
        "expression": "has(oldObject.spec.taints) ? oldObject.spec.taints : []",
    },
    {
        "name": "newTaints",
        "expression": (
            "variables.deleting ? [] : has(object.spec.taints) ? object.spec.taints : []"
        ),
    },
    {
        "name": "oldLabels",
        "expression": "has(oldObject.metadata.labels) ? oldObject.metadata.labels : {}",
    },
    {
        "name": "newLabels",
        "expression": (
            "variables.deleting ? {} : has(object.metadata.labels) ? object.metadata.labels : {}"
        ),
    },
]


def _on_update(expression: str) -> str:
    """CEL: `expression` holds, or the request is a deletion (which has no `object`)."""
    return f"variables.deleting || ({expression})"


def validations() -> list[dict[str, str]]:
    taint, failed = f"'{VALIDATION_TAINT.key}'", f"'{FAILED_TAINT_KEY}'"
    labels = quoted(VALIDATION_LABELS)
    return [
        {
            "expression": (
                f"'{NODE_NAME_EXTRA}' in request.userInfo.extra &&"
                f" request.userInfo.extra['{NODE_NAME_EXTRA}'] == [oldObject.metadata.name]"
            ),
            "message": "the node validator may only change or delete the node its pod runs on",
        },
        {
            "expression": f"!variables.deleting || variables.oldTaints.exists(t, t.key == {taint})",
            "message": f"the node validator may only delete a node that has the taint"
            f" {VALIDATION_TAINT.key}",
        },
        {
            "expression": _on_update(
                "variables.newTaints == variables.oldTaints || variables.newTaints =="
                f" variables.oldTaints.filter(t, t.key != {taint} && t.key != {failed}) ||"
                f" (variables.newTaints.filter(t, t.key != {failed}) =="
                f" variables.oldTaints.filter(t, t.key != {failed}) &&"
                f" variables.newTaints.all(t, t.key != {failed} || t.effect == 'NoSchedule')) ||"
                f" (variables.newTaints.filter(t, t.key != {taint}) == variables.oldTaints &&"
                f" variables.newTaints.exists_one(t, t.key == {taint} &&"
                f" t.value == '{VALIDATION_TAINT.value}' &&"
                f" t.effect == '{VALIDATION_TAINT.effect}') &&"
                f" !('{RESULT_LABEL}' in variables.newLabels))"
            ),
            "message": f"the node validator may only remove the taint {VALIDATION_TAINT.key},"
            f" set or remove the taint {FAILED_TAINT_KEY}, and put the taint"
            f" {VALIDATION_TAINT.key} back on a node whose result it removes",
        },
        {
            "expression": _on_update(
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
            "expression": _on_update(
                " && ".join(
                    f"({_unchanged(f'metadata.{field}')})" for field in OTHER_METADATA_FIELDS
                )
            ),
            "message": "the node validator may not change a node's annotations, finalizers or"
            " owners",
        },
        {
            "expression": _on_update(
                " && ".join(f"({_unchanged(f'spec.{field}')})" for field in OTHER_SPEC_FIELDS)
            ),
            "message": "the node validator may not change a node's spec beyond its taints",
        },
    ]


def validator_username(namespace: str) -> str:
    return f"system:serviceaccount:{namespace}:{VALIDATOR_SERVICE_ACCOUNT}"


def denying(name: str, spec: dict[str, Any]) -> list[dict[str, Any]]:
    """A ValidatingAdmissionPolicy `name` of `spec`, and its binding, which denies what the
    policy's validations refuse."""
    policy = {
        "apiVersion": API_VERSION,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": spec,
    }
    binding = {
        "apiVersion": API_VERSION,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {"policyName": name, "validationActions": ["Deny"]},
    }
    return [policy, binding]


def core_rules(resource: str, *operations: str) -> list[dict[str, Any]]:
    """A policy's `resourceRules` for the operations on a core/v1 resource."""
    return [
        {
            "apiGroups": [""],
            "apiVersions": ["v1"],
            "operations": list(operations),
            "resources": [resource],
        }
    ]


def node_validator_admission_policy(namespace: str) -> list[dict[str, Any]]:
    """The ValidatingAdmissionPolicy and its binding (deny), for the validator's service account
    in `namespace`."""
    return denying(
        NAME,
        {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": core_rules("nodes", "UPDATE", "DELETE")},
            "matchConditions": [
                {
                    "name": "node-validator",
                    "expression": f"request.userInfo.username == '{validator_username(namespace)}'",
                }
            ],
            "variables": VARIABLES,
            "validations": validations(),
        },
    )


def declare_policy(
    resource_name: str, manifests: list[dict[str, Any]], opts: pulumi.ResourceOptions
) -> pulumi.Resource:
    """An admission policy and its binding (`admission_policy.denying`); the binding, created
    after the policy it names."""
    policy, binding = manifests
    declared = admissionregistration.v1.ValidatingAdmissionPolicy(
        resource_name, metadata=policy["metadata"], spec=policy["spec"], opts=opts
    )
    return admissionregistration.v1.ValidatingAdmissionPolicyBinding(
        resource_name,
        metadata=binding["metadata"],
        spec=binding["spec"],
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[declared])),
    )
