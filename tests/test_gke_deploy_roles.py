"""The GKE deploy identity's roles (docs/iam/gke-deploy-roles.json) give it no way to act as, or
to grant itself, a service account it was not given: project-wide `roles/iam.serviceAccountUser`
(`iam.serviceAccounts.actAs`) lets it run node pools as any account of the project, and
project-wide `roles/iam.serviceAccountAdmin` (`iam.serviceAccounts.setIamPolicy`) lets it grant
itself Token Creator on any of them (CIS Google Cloud Platform Foundations Benchmark 1.6:
"Ensure that IAM users are not assigned the Service Account User or Service Account Token
Creator roles at project level"; Google Cloud, "Roles for service account authentication").

The permissions of the predefined roles below are Google Cloud's ("IAM roles and permissions
index"), limited to those that decide a takeover.
"""

import json
from fnmatch import fnmatchcase
from typing import Any

import pytest

from tests.repository import ROOT

TAKEOVER = {
    "iam.serviceAccounts.actAs",
    "iam.serviceAccounts.setIamPolicy",
    "iam.serviceAccounts.getAccessToken",
    "iam.serviceAccounts.getOpenIdToken",
    "iam.serviceAccounts.implicitDelegation",
    "iam.serviceAccounts.signBlob",
    "iam.serviceAccounts.signJwt",
    "iam.serviceAccountKeys.create",
    "resourcemanager.projects.setIamPolicy",
}
"""What lets an identity act as another, or grant itself more."""
PREDEFINED: dict[str, set[str]] = {
    "roles/container.admin": {"container.*"},
    "roles/compute.viewer": {"compute.*.get", "compute.*.list"},
    "roles/compute.networkAdmin": {
        "compute.networks.*",
        "compute.subnetworks.*",
        "compute.routers.*",
        "compute.addresses.*",
        "compute.firewalls.get",
        "compute.firewalls.list",
    },
    "roles/resourcemanager.projectIamAdmin": {
        "resourcemanager.projects.get",
        "resourcemanager.projects.getIamPolicy",
        "resourcemanager.projects.setIamPolicy",
    },
    "roles/iam.serviceAccountAdmin": {
        "iam.serviceAccounts.create",
        "iam.serviceAccounts.delete",
        "iam.serviceAccounts.get",
        "iam.serviceAccounts.getIamPolicy",
        "iam.serviceAccounts.setIamPolicy",
        "iam.serviceAccounts.update",
    },
    "roles/iam.serviceAccountUser": {
        "iam.serviceAccounts.actAs",
        "iam.serviceAccounts.get",
        "iam.serviceAccounts.list",
    },
    "roles/container.clusterViewer": {"container.clusters.get", "container.clusters.list"},
    # Binary Authorization roles and permissions (cloud.google.com/iam/docs/roles-permissions/
    # binaryauthorization): the project's policy, read and written; nothing on its IAM policy.
    "roles/binaryauthorization.policyEditor": {
        "binaryauthorization.policy.get",
        "binaryauthorization.policy.update",
        "resourcemanager.projects.get",
        "resourcemanager.projects.list",
    },
    "roles/container.defaultNodeServiceAccount": {
        "autoscaling.sites.writeMetrics",
        "logging.logEntries.create",
        "logging.logEntries.route",
        "monitoring.metricDescriptors.create",
        "monitoring.metricDescriptors.list",
        "monitoring.timeSeries.create",
        "monitoring.timeSeries.list",
    },
}
NODE_SERVICE_ACCOUNT_ROLE = "roles/container.defaultNodeServiceAccount"
CLUSTER_VIEWER_ROLE = "roles/container.clusterViewer"


DOCUMENTS = ("gke-deploy-roles.json", "gke-deploy-create-roles.json")
"""The deploy roles of every GKE stack, and those a stack creating its cluster adds."""


def deploy_roles(document: str = "gke-deploy-roles.json") -> dict[str, Any]:
    roles: dict[str, Any] = json.loads((ROOT / "docs" / "iam" / document).read_text())
    return roles


def permissions(role: str, roles: dict[str, Any]) -> set[str]:
    custom = role.rpartition("/roles/")[2] if role.startswith("projects/") else None
    if custom is not None:
        return set(roles["customRoles"][custom]["includedPermissions"])
    return PREDEFINED[role]


def takeover_permissions(granted: set[str]) -> set[str]:
    return {t for t in TAKEOVER if any(fnmatchcase(t, g) for g in granted)}


@pytest.mark.parametrize("document", DOCUMENTS)
def test_no_project_role_lets_the_deploy_identity_act_as_or_grant_a_service_account(
    document: str,
) -> None:
    roles = deploy_roles(document)
    unconditioned = [r for r in roles["projectRoles"] if r not in roles["conditions"]]

    assert takeover_permissions(set().union(*(permissions(r, roles) for r in unconditioned))) == (
        set()
    )


def test_project_wide_service_account_roles_would_be_a_takeover() -> None:
    # What docs/iam/gke-deploy-roles.json granted before.
    old = {"roles/iam.serviceAccountAdmin", "roles/iam.serviceAccountUser"}

    assert takeover_permissions(set().union(*(PREDEFINED[r] for r in old))) == {
        "iam.serviceAccounts.actAs",
        "iam.serviceAccounts.setIamPolicy",
    }


@pytest.mark.parametrize("document", DOCUMENTS)
def test_actas_is_granted_only_on_each_node_service_account(document: str) -> None:
    roles = deploy_roles(document)

    assert "roles/iam.serviceAccountUser" not in roles["projectRoles"]
    assert list(roles["serviceAccountRoles"]) == ["roles/iam.serviceAccountUser"]


def test_the_secrets_key_role_never_encrypts_or_decrypts() -> None:
    (custom,) = deploy_roles("gke-deploy-create-roles.json")["customRoles"].values()

    # Cloud KMS's use of a key: cloudkms.cryptoKeyVersions.useToEncrypt, useToDecrypt, ...
    assert [p for p in custom["includedPermissions"] if ".useTo" in p] == []


def test_the_custom_role_only_creates_and_updates_service_accounts() -> None:
    (custom,) = deploy_roles()["customRoles"].values()

    assert sorted(custom["includedPermissions"]) == [
        "iam.serviceAccounts.create",
        "iam.serviceAccounts.delete",
        "iam.serviceAccounts.get",
        "iam.serviceAccounts.update",
    ]


def test_the_project_iam_grant_is_limited_to_a_role_without_takeover_permissions() -> None:
    condition = deploy_roles()["conditions"]["roles/resourcemanager.projectIamAdmin"]

    assert f"hasOnly(['{NODE_SERVICE_ACCOUNT_ROLE}'])" in condition["expression"]
    assert takeover_permissions(PREDEFINED[NODE_SERVICE_ACCOUNT_ROLE]) == set()


def test_a_creating_stacks_project_iam_grant_adds_only_a_role_without_takeover_permissions() -> (
    None
):
    condition = deploy_roles("gke-deploy-create-roles.json")["conditions"][
        "roles/resourcemanager.projectIamAdmin"
    ]

    assert (
        f"hasOnly(['{CLUSTER_VIEWER_ROLE}', '{NODE_SERVICE_ACCOUNT_ROLE}'])"
        in condition["expression"]
    )
    assert takeover_permissions(PREDEFINED[CLUSTER_VIEWER_ROLE]) == set()
