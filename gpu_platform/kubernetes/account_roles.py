"""Roles granted to one service account: each a Role or ClusterRole with the binding that gives
it to the account, both under the same Pulumi name and the same object metadata.

A binding is applied after every role declared with it and after `after` (the account itself,
where the platform declares it): bound before its role exists, the account would run for a
while without it.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

import pulumi
from pulumi_kubernetes import rbac


@dataclass(frozen=True)
class Grant:
    """One role of the account's."""

    kind: Literal["Role", "ClusterRole"]
    metadata: Mapping[str, Any]
    """The role's and its binding's object metadata; a Role's names its namespace."""
    rules: Sequence[Mapping[str, Any]]


_BINDINGS = {"Role": rbac.v1.RoleBinding, "ClusterRole": rbac.v1.ClusterRoleBinding}
_ROLES = {"Role": rbac.v1.Role, "ClusterRole": rbac.v1.ClusterRole}


def declare_account_roles(
    name: str,
    account: str,
    namespace: pulumi.Input[str],
    grants: Sequence[Grant],
    opts: pulumi.ResourceOptions,
    after: Sequence[pulumi.Resource] = (),
) -> list[pulumi.Resource]:
    """Each of `grants`' roles, and its binding to the service account `account` in
    `namespace`, all named `name` in Pulumi with `opts`; the roles first. The bindings, in
    `grants`' order, each applied after every one of the roles and `after`."""
    roles = [
        _ROLES[grant.kind](
            name, metadata=cast(Any, grant.metadata), rules=cast(Any, grant.rules), opts=opts
        )
        for grant in grants
    ]
    bound = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[*after, *roles]))
    subjects = [{"kind": "ServiceAccount", "name": account, "namespace": namespace}]
    return [
        _BINDINGS[grant.kind](
            name,
            metadata=cast(Any, grant.metadata),
            role_ref=cast(
                Any,
                {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": grant.kind,
                    "name": grant.metadata["name"],
                },
            ),
            subjects=cast(Any, subjects),
            opts=bound,
        )
        for grant in grants
    ]
