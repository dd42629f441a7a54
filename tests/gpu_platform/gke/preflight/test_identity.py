"""`gpu-platform preflight` of a GKE stack's project: every cluster of a project shares the
Workload Identity pool `<project>.svc.id.goog` (container.v1 `WorkloadIdentityConfig.
workloadPool`, "The workload pool to attach all Kubernetes service accounts to"), so another
cluster blocks, and every role the project or one of its service accounts grants to the pool's
identities is a warning. Members as IAM writes them: `serviceAccount:<pool>[<namespace>/<ksa>]`
(GKE how-to/workload-identity, "Link Kubernetes ServiceAccounts to IAM") and Workload Identity
Federation for GKE's `principal://iam.googleapis.com/projects/<number>/locations/global/
workloadIdentityPools/<pool>/subject/ns/<namespace>/sa/<ksa>` (IAM principal identifiers). The
answers are checked against the `iam.v1`, `cloudresourcemanager.v1` and `container.v1`
discovery documents' `Policy` and `ListClustersResponse`."""

import threading
import time
from collections.abc import Mapping

import pytest

from gpu_platform.gke.preflight.checks import POLICY_READERS, GoogleApis
from gpu_platform.gke.preflight.google_api_error import GoogleApiError
from gpu_platform.preflight.findings import Finding
from tests.gpu_platform.gke.preflight import test_checks as test_preflight_gke
from tests.gpu_platform.gke.preflight.test_checks import (
    NO_POOL_GRANTS,
    PROJECT,
    FakeGoogle,
    Json,
    findings,
    not_found,
)

google = test_preflight_gke.google
"""The gke-dev stack's running cluster and reservations, and a project of its own."""

POOL = f"{PROJECT}.svc.id.goog"
SUBJECT = f"project {PROJECT}"
PAYMENTS = f"payments@{PROJECT}.iam.gserviceaccount.com"
TRUSTED_KSA = f"serviceAccount:{POOL}[payments/api]"
PRINCIPAL = (
    "principal://iam.googleapis.com/projects/123456789012/locations/global/workloadIdentityPools/"
    f"{POOL}/subject/ns/batch/sa/loader"
)
UNSEEN = (
    "Grants on the project's other resources (buckets, secrets, keys) and in other projects"
    " were not read."
)
ADVICE = (
    "Nothing, if they are the stack's cluster's own workloads' and the project is the"
    " platform's alone; otherwise move them, or the platform, to another project"
    ' (docs/create-cluster-gke.md, "A project of its own").'
)


def of_project(found: list[Finding]) -> list[Finding]:
    return [f for f in found if f.subject == SUBJECT]


OTHERS = (
    "The project has other GKE clusters (ml-dev in us-east4, web in europe-west1): every"
    f" cluster of a project shares the Workload Identity pool {POOL}, so the deploy"
    " identity, which can create any namespace and Kubernetes service account in this"
    " stack's cluster, can act as every Google service account their workloads use, and its"
    " roles/container.admin reaches those clusters themselves."
)


def test_another_cluster_of_an_attached_clusters_project_is_a_warning(google: FakeGoogle) -> None:
    # Attaching joins a cluster where it is, often in a project shared with others
    # (docs/create-cluster-gke.md): the project's other clusters are named, and block nothing.
    # The stack's own name in another location is another cluster.
    google.identities(
        clusters=[("ml-dev", "us-central1"), ("web", "europe-west1"), ("ml-dev", "us-east4")]
    )

    other, _ = of_project(findings(google))

    assert other == Finding(
        "warning",
        SUBJECT,
        OTHERS,
        "Nothing, if the deploy identity may reach them (an attached cluster shares its"
        " project); otherwise move the platform's cluster to a project of its own"
        ' (docs/create-cluster-gke.md, "A project of its own").',
    )


def test_zones_that_did_not_answer_are_named_as_unchecked(google: FakeGoogle) -> None:
    # container.v1 `ListClustersResponse.missingZones`: "If any zones are listed here, the list
    # of clusters returned may be missing those zones."
    google.identities(missing_zones=["us-west4-b"])

    _, missing, _ = of_project(findings(google))

    assert missing == Finding(
        "warning",
        SUBJECT,
        "GKE did not answer for zones us-west4-b: clusters there are unchecked.",
        f"Run the check again later, or list them by hand (gcloud container clusters list"
        f" --project {PROJECT}).",
    )


def test_a_fleets_pool_is_the_one_checked_and_its_other_clusters_unseen(
    google: FakeGoogle,
) -> None:
    # A cluster registered to a fleet of another host project takes that project's pool
    # (container.v1 `WorkloadIdentityConfig.workloadPool`): grants to it are the ones named.
    fleet_pool = "acme-fleet.svc.id.goog"
    google.cluster(
        status="RUNNING",
        currentMasterVersion=test_preflight_gke.VERSION,
        workloadIdentityConfig={"workloadPool": fleet_pool},
    )
    fleet_ksa = f"serviceAccount:{fleet_pool}[payments/api]"

    google.identities(
        clusters=[("ml-dev", "us-central1"), ("web", "europe-west1")],
        accounts={PAYMENTS: [{"role": "roles/iam.workloadIdentityUser", "members": [fleet_ksa]}]},
    )

    other, fleet, trust = of_project(findings(google))

    # The pool the project's other clusters share with this one is the one it uses.
    assert f"shares the Workload Identity pool {fleet_pool}, so" in other.message
    assert fleet.severity == "warning"
    assert fleet.message.startswith(
        f"The cluster's Workload Identity pool is {fleet_pool}, its fleet host project's:"
    )
    assert f"roles/iam.workloadIdentityUser to {fleet_ksa}" in trust.message


def test_every_page_of_service_accounts_is_read(google: FakeGoogle) -> None:
    # iam.v1 `ListServiceAccountsResponse.nextPageToken`: the last page's account trusts the pool.
    bindings = [{"role": "roles/iam.workloadIdentityUser", "members": [TRUSTED_KSA]}]
    accounts: dict[str, list[Json]] = {
        f"a{i}@{PROJECT}.iam.gserviceaccount.com": [] for i in range(4)
    }
    google.identities(accounts={**accounts, PAYMENTS: bindings}, page=2)

    _, trust = of_project(findings(google))

    assert google.calls.count("iam.projects.serviceAccounts.list") == 3
    assert google.calls.count("iam.projects.serviceAccounts.getIamPolicy") == 5
    assert trust.message.startswith(
        f"Grants to the cluster's Workload Identity pool (service account {PAYMENTS}:"
    )


def refused(permission: str) -> tuple[int, dict[str, object]]:
    """Google's 403 to a caller without the permission (the APIs' error shape)."""
    return 403, {
        "error": {
            "code": 403,
            "message": f"Permission '{permission}' denied on resource",
            "status": "PERMISSION_DENIED",
        }
    }


def test_a_read_the_caller_may_not_make_is_a_warning_naming_its_permission(
    google: FakeGoogle,
) -> None:
    # A pipeline's preflight runs with roles/container.clusterViewer and roles/compute.viewer
    # (docs/ci.md), which grant no IAM policy reads: the rest of the check goes on.
    status, body = refused("iam.serviceAccounts.list")
    google.answer(
        "iam.projects.serviceAccounts.list",
        body,
        status,
        name=f"projects/{PROJECT}",
        pageSize="100",
    )

    found = findings(google)

    _, unread, trust = of_project(found)
    assert unread == Finding(
        "warning",
        SUBJECT,
        "Could not check which service accounts trust the pool: iam.serviceAccounts.list"
        f" refused on projects/{PROJECT}/serviceAccounts (403 PERMISSION_DENIED: Permission"
        " 'iam.serviceAccounts.list' denied on resource).",
        "Grant the check iam.serviceAccounts.list (roles/iam.securityReviewer grants it), or"
        ' check it by hand (docs/create-cluster-gke.md, "A project of its own").',
    )
    assert trust == Finding(
        "warning",
        SUBJECT,
        f"No role granted to {POOL} in the policies that could be read. {UNSEEN}",
        "See the findings above for what was not read.",
    )
    assert [f.subject for f in found][-1] != SUBJECT  # the pools' and quotas' findings follow


def test_each_identity_read_refused_is_a_warning(google: FakeGoogle) -> None:
    google.answer(
        "container.projects.locations.clusters.list",
        refused("container.clusters.list")[1],
        403,
        parent=f"projects/{PROJECT}/locations/-",
    )
    google.answer(
        "cloudresourcemanager.projects.getIamPolicy",
        refused("resourcemanager.projects.getIamPolicy")[1],
        403,
        resource=PROJECT,
    )

    found = of_project(findings(google))

    assert [f.message.split(":")[0] for f in found] == [
        "Could not check whether another GKE cluster shares the project",
        "Could not check which project roles the pool holds",
        f"No role granted to {POOL} in the policies that could be read. Grants on the project's"
        " other resources (buckets, secrets, keys) and in other projects were not read.",
    ]


def test_a_service_account_deleted_after_the_list_is_skipped(google: FakeGoogle) -> None:
    # `iam.projects.serviceAccounts.getIamPolicy` answers 404 NOT_FOUND for an account deleted
    # since `serviceAccounts.list` (iam.v1): it trusts no one any more, and the others are read.
    google.identities(
        accounts={
            PAYMENTS: [],
            f"nodes@{PROJECT}.iam.gserviceaccount.com": [
                {"role": "roles/iam.workloadIdentityUser", "members": [TRUSTED_KSA]}
            ],
        }
    )
    google.answer(
        "iam.projects.serviceAccounts.getIamPolicy",
        not_found("x"),
        404,
        resource=f"projects/{PROJECT}/serviceAccounts/{PAYMENTS}",
        **{"options.requestedPolicyVersion": "3"},
    )

    _, trust = of_project(findings(google))

    assert trust.severity == "warning"
    assert f"nodes@{PROJECT}.iam.gserviceaccount.com" in trust.message
    assert PAYMENTS not in trust.message


def test_a_failed_read_of_a_service_accounts_policy_ends_the_check(google: FakeGoogle) -> None:
    # Only a 403 leaves a part unchecked and a 404 skips the account; any other failure still
    # ends the check (exit 4).
    google.identities(accounts={PAYMENTS: []})
    google.answer(
        "iam.projects.serviceAccounts.getIamPolicy",
        {"error": {"code": 500, "message": "backend error", "status": "INTERNAL"}},
        500,
        resource=f"projects/{PROJECT}/serviceAccounts/{PAYMENTS}",
        **{"options.requestedPolicyVersion": "3"},
    )

    with pytest.raises(GoogleApiError):
        findings(google)


def test_a_service_account_that_trusts_a_kubernetes_service_account_of_the_pool_is_named(
    google: FakeGoogle,
) -> None:
    google.identities(
        accounts={
            PAYMENTS: [
                {"role": "roles/iam.workloadIdentityUser", "members": [TRUSTED_KSA]},
                {"role": "roles/iam.serviceAccountUser", "members": ["group:ops@example.com"]},
            ],
            f"nodes@{PROJECT}.iam.gserviceaccount.com": [],
        }
    )

    _, trust = of_project(findings(google))

    assert trust == Finding(
        "warning",
        SUBJECT,
        f"Grants to the cluster's Workload Identity pool (service account {PAYMENTS}:"
        f" roles/iam.workloadIdentityUser to {TRUSTED_KSA}): the deploy identity can create"
        f" those namespaces and Kubernetes service accounts and act with these roles. {UNSEEN}",
        ADVICE,
    )


def test_a_project_role_granted_to_the_pools_identities_is_named_with_its_condition(
    google: FakeGoogle,
) -> None:
    # A project-wide roles/iam.workloadIdentityUser lets the pool's service account act as every
    # service account of the project; a role to a `principal://` of the pool reaches the
    # project's resources directly.
    google.identities(
        project_bindings=[
            {
                "role": "roles/storage.objectViewer",
                "members": [PRINCIPAL, "user:ana@example.com"],
                "condition": {"title": "reports", "expression": "resource.name.startsWith('x')"},
            },
            {"role": "roles/iam.workloadIdentityUser", "members": [TRUSTED_KSA]},
        ]
    )

    _, trust = of_project(findings(google))

    assert trust.severity == "warning"
    assert trust.message.startswith(
        f"Grants to the cluster's Workload Identity pool (project {PROJECT}:"
        f" roles/storage.objectViewer to {PRINCIPAL} (with a condition); project {PROJECT}:"
        f" roles/iam.workloadIdentityUser to {TRUSTED_KSA}):"
    )


def test_another_projects_pool_and_people_are_not_the_pools(google: FakeGoogle) -> None:
    google.identities(
        accounts={
            PAYMENTS: [
                {
                    "role": "roles/iam.workloadIdentityUser",
                    "members": [
                        "serviceAccount:acme-web.svc.id.goog[payments/api]",
                        f"serviceAccount:{PROJECT}.svc.id.goog.example.com[a/b]",
                        "user:ana@example.com",
                    ],
                }
            ]
        },
        project_bindings=[
            {
                "role": "roles/viewer",
                "members": [PRINCIPAL.replace(POOL, "acme-web.svc.id.goog")],
            }
        ],
    )

    assert of_project(findings(google))[1] == NO_POOL_GRANTS


def test_each_service_accounts_policy_is_asked_with_its_conditions(google: FakeGoogle) -> None:
    # IAM returns conditional bindings only to requestedPolicyVersion 3: the fake answers the
    # policy only for that version.
    google.identities(
        accounts={PAYMENTS: [{"role": "roles/iam.workloadIdentityUser", "members": [TRUSTED_KSA]}]}
    )

    found = findings(google)

    assert google.calls.count("iam.projects.serviceAccounts.getIamPolicy") == 1
    assert of_project(found)[1].severity == "warning"


class Overlapping(FakeGoogle):
    """The fake project, each service account's policy answered after a pause, counting how
    many of those calls are under way at once."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()
        self.under_way = 0
        self.most = 0

    def respond(
        self, method: str, url: str, headers: Mapping[str, str | bytes]
    ) -> tuple[int, Json]:
        if ":getIamPolicy" not in url or "/serviceAccounts/" not in url:
            return super().respond(method, url, headers)
        with self.lock:
            self.under_way += 1
            self.most = max(self.most, self.under_way)
        time.sleep(0.05)
        with self.lock:
            self.under_way -= 1
        return super().respond(method, url, headers)


def test_service_accounts_policies_are_read_several_at_a_time() -> None:
    # One call after another, a project of a few hundred accounts outlasts the check's 30 s
    # deadline; a few at a time it does not.
    google = Overlapping()
    google.cluster(status="RUNNING", currentMasterVersion=test_preflight_gke.VERSION)
    google.identities(accounts={f"a{i}@{PROJECT}.iam.gserviceaccount.com": [] for i in range(16)})
    apis = GoogleApis(google.session(), PROJECT)

    policies = apis.service_account_policies(
        [f"a{i}@{PROJECT}.iam.gserviceaccount.com" for i in range(16)]
    )

    assert len(policies) == 16
    assert 1 < google.most <= POLICY_READERS
