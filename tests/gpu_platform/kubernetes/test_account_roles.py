"""The roles the platform grants one service account, and their bindings, as the shipped stacks'
state holds them: the MIG startup taint remover's and node validation's (prod), a canary gate's
with its proof (prod), and the DCGM exporter's ResourceSlice access (dra-dev). Every other
shipped stack declares no role these two do not.

Each resource's URN, parent, inputs, dependencies, aliases and options are written down here: a
change to a URN, a parent or an alias would delete a deployed role and create another, a change
to a name in its inputs would replace it, and a lost dependency would let a binding be applied
before its role or its account."""

from typing import Any

import pytest

from gpu_platform.offline.program import PlannedResource
from tests.shared_plans import shared_plan

RBAC = "kubernetes:rbac.authorization.k8s.io/v1"
PLATFORM = "gpu-platform:index:GpuPlatform"
OPERATOR = "gpu-platform:kubernetes:GpuOperator"
VALIDATION = "gpu-platform:kubernetes:NodeValidation"
API_GROUP = "rbac.authorization.k8s.io"
NO_PARENT = {"spec": {"noParent": True}}
"""The platform's parts' alias (gpu_platform/platform.py): made at the stack's root once."""


def urn(stack: str, types: str, name: str) -> str:
    return f"urn:pulumi:{stack}::gpu-platform::{types}::{name}"


def kind_aliases(kind: str) -> list[dict[str, Any]]:
    """The aliases pulumi-kubernetes gives each RBAC object of its own accord: its kind's
    earlier API versions (pulumi_kubernetes 4.x, rbac/v1/ClusterRole.py and its siblings,
    `alias_opts`)."""
    return [
        {"spec": {"parentUrn": "", "type": f"kubernetes:{API_GROUP}/{version}:{kind}"}}
        for version in ("v1alpha1", "v1beta1")
    ]


def role(kind: str, metadata: dict[str, Any], rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": metadata,
        "rules": rules,
    }


def binding(kind: str, metadata: dict[str, Any], role_name: str, account: str) -> dict[str, Any]:
    """The inputs of a binding of the `kind` role `role_name` to `account` in gpu-operator."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": f"{kind}Binding",
        "metadata": metadata,
        "roleRef": {"apiGroup": API_GROUP, "kind": kind, "name": role_name},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": "gpu-operator"}],
    }


def kept(
    parent: str, inputs: dict[str, Any], dependencies: set[str], aliases: list[dict[str, Any]]
) -> dict[str, Any]:
    return {"parent": parent, "inputs": inputs, "dependencies": dependencies, "aliases": aliases}


def options(stack: str) -> dict[str, Any]:
    """What every one of them shares: the platform's EKS provider, and none of Pulumi's other
    options."""
    return {
        "provider": urn(stack, f"{PLATFORM}$pulumi:providers:kubernetes", "eks") + "::eks-id",
        "protect": False,
        "retain_on_delete": False,
        "delete_before_replace": False,
        "ignore_changes": (),
        "custom_timeouts": {},
    }


def mig_remover(stack: str) -> dict[str, dict[str, Any]]:
    name = "gpu-mig-startup-taint-remover"
    metadata = {
        "name": name,
        "labels": {"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "gpu-platform"},
    }
    pulumi_name = f"gpu-operator-{name}"
    parent = urn(stack, f"{PLATFORM}${OPERATOR}", "gpu-operator")
    cluster_role = urn(stack, f"{OPERATOR}${RBAC}:ClusterRole", pulumi_name)
    rules = [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["list", "patch"]}]
    return {
        cluster_role: kept(
            parent, role("ClusterRole", metadata, rules), set(), kind_aliases("ClusterRole")
        ),
        urn(stack, f"{OPERATOR}${RBAC}:ClusterRoleBinding", pulumi_name): kept(
            parent,
            binding("ClusterRole", metadata, name, name),
            {
                urn(stack, f"{OPERATOR}$kubernetes:core/v1:Namespace", "gpu-operator"),
                urn(stack, f"{OPERATOR}$kubernetes:core/v1:ServiceAccount", pulumi_name),
                cluster_role,
            },
            kind_aliases("ClusterRoleBinding"),
        ),
    }


def node_validation(stack: str) -> dict[str, dict[str, Any]]:
    name = "gpu-node-validator"
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "gpu-platform"}
    cluster_metadata = {"name": name, "labels": labels}
    metadata = {"name": name, "namespace": "gpu-operator", "labels": labels}
    parent = urn(stack, f"{PLATFORM}${VALIDATION}", "node-validation")
    namespace = urn(stack, f"{OPERATOR}$kubernetes:core/v1:Namespace", "gpu-operator")
    cluster_role = urn(stack, f"{VALIDATION}${RBAC}:ClusterRole", "node-validation")
    namespaced_role = urn(stack, f"{VALIDATION}${RBAC}:Role", "node-validation")
    # Each binding waits for both roles and the account.
    bindings_wait_for = {
        namespace,
        urn(stack, f"{VALIDATION}$kubernetes:core/v1:ServiceAccount", "node-validation"),
        cluster_role,
        namespaced_role,
    }
    return {
        cluster_role: kept(
            parent,
            role(
                "ClusterRole",
                cluster_metadata,
                [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]}],
            ),
            set(),
            kind_aliases("ClusterRole"),
        ),
        namespaced_role: kept(
            parent,
            role(
                "Role",
                metadata,
                [{"apiGroups": [""], "resources": ["events"], "verbs": ["create"]}],
            ),
            {namespace},
            kind_aliases("Role"),
        ),
        urn(stack, f"{VALIDATION}${RBAC}:ClusterRoleBinding", "node-validation"): kept(
            parent,
            binding("ClusterRole", cluster_metadata, name, name),
            bindings_wait_for,
            kind_aliases("ClusterRoleBinding"),
        ),
        urn(stack, f"{VALIDATION}${RBAC}:RoleBinding", "node-validation"): kept(
            parent,
            binding("Role", metadata, name, name),
            bindings_wait_for,
            kind_aliases("RoleBinding"),
        ),
    }


def canary_gate(stack: str, pool: str) -> dict[str, dict[str, Any]]:
    name = f"gpu-canary-gate-{pool}"
    pulumi_name = f"{pool}-canary-gate"
    labels = {"app.kubernetes.io/part-of": "gpu-platform", "gpu-platform.io/canary-pool": pool}
    cluster_metadata = {"name": name, "labels": labels}
    metadata = {"name": name, "namespace": "gpu-operator", "labels": labels}
    parent = urn(stack, f"pulumi:pulumi:Stack${PLATFORM}", "gpu-platform")
    namespace = urn(stack, f"{OPERATOR}$kubernetes:core/v1:Namespace", "gpu-operator")
    gate_account = urn(stack, f"{PLATFORM}$kubernetes:core/v1:ServiceAccount", pulumi_name)
    namespaced_role = urn(stack, f"{PLATFORM}${RBAC}:Role", pulumi_name)
    cluster_role = urn(stack, f"{PLATFORM}${RBAC}:ClusterRole", pulumi_name)
    return {
        namespaced_role: kept(
            parent,
            role(
                "Role", metadata, [{"apiGroups": [""], "resources": ["events"], "verbs": ["list"]}]
            ),
            {namespace},
            [NO_PARENT, *kind_aliases("Role")],
        ),
        # Each binding waits for its own role alone.
        urn(stack, f"{PLATFORM}${RBAC}:RoleBinding", pulumi_name): kept(
            parent,
            binding("Role", metadata, name, name),
            {namespace, gate_account, namespaced_role},
            [NO_PARENT, *kind_aliases("RoleBinding")],
        ),
        cluster_role: kept(
            parent,
            role(
                "ClusterRole",
                cluster_metadata,
                [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}],
            ),
            set(),
            [NO_PARENT, *kind_aliases("ClusterRole")],
        ),
        urn(stack, f"{PLATFORM}${RBAC}:ClusterRoleBinding", pulumi_name): kept(
            parent,
            binding("ClusterRole", cluster_metadata, name, name),
            {namespace, gate_account, cluster_role},
            [NO_PARENT, *kind_aliases("ClusterRoleBinding")],
        ),
    }


def exporter_slice_access(stack: str) -> dict[str, dict[str, Any]]:
    name = "nvidia-dcgm-exporter-resource-slices"
    pulumi_name = "gpu-operator-exporter-resource-slices"
    parent = urn(stack, f"{PLATFORM}${OPERATOR}", "gpu-operator")
    cluster_role = urn(stack, f"{OPERATOR}${RBAC}:ClusterRole", pulumi_name)
    rules = [
        {
            "apiGroups": ["resource.k8s.io"],
            "resources": ["resourceslices"],
            "verbs": ["get", "list", "watch"],
        }
    ]
    return {
        cluster_role: kept(
            parent, role("ClusterRole", {"name": name}, rules), set(), kind_aliases("ClusterRole")
        ),
        # The account is the operator's: the binding waits for its namespace and its role.
        urn(stack, f"{OPERATOR}${RBAC}:ClusterRoleBinding", pulumi_name): kept(
            parent,
            binding("ClusterRole", {"name": name}, name, "nvidia-dcgm-exporter"),
            {urn(stack, f"{OPERATOR}$kubernetes:core/v1:Namespace", "gpu-operator"), cluster_role},
            kind_aliases("ClusterRoleBinding"),
        ),
    }


EXPECTED = {
    "prod": {
        **mig_remover("prod"),
        **node_validation("prod"),
        **canary_gate("prod", "a100-canary"),
    },
    "dra-dev": {**exporter_slice_access("dra-dev"), **node_validation("dra-dev")},
}


def held(resource: PlannedResource) -> dict[str, Any]:
    """What a deployed stack's state keeps of `resource`, besides its URN."""
    return {
        "parent": resource.parent,
        "inputs": resource.inputs,
        "dependencies": set(resource.dependencies),
        "aliases": list(resource.aliases),
        "provider": resource.provider,
        "protect": resource.protect,
        "retain_on_delete": resource.retain_on_delete,
        "delete_before_replace": resource.delete_before_replace,
        "ignore_changes": resource.ignore_changes,
        "custom_timeouts": resource.custom_timeouts,
    }


@pytest.mark.parametrize("stack", sorted(EXPECTED))
def test_the_roles_granted_to_one_account_keep_what_deployed_stacks_hold(stack: str) -> None:
    declared = {
        r.urn: held(r) for r in shared_plan(stack).resources if r.type.startswith(f"{RBAC}:")
    }

    assert declared == {
        urn: {**expected, **options(stack)} for urn, expected in EXPECTED[stack].items()
    }
