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

from gpu_platform.cli.findings import Finding
from tests.gpu_platform.cli import test_preflight_gke
from tests.gpu_platform.cli.test_preflight_gke import PROJECT, FakeGoogle, findings

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
NO_GRANTS = Finding(
    "ok",
    SUBJECT,
    f"No service account of the project, nor the project, grants a role to {POOL}.",
    "Nothing.",
)
ADVICE = (
    "Nothing, if they are the stack's cluster's own workloads' and the project is the"
    " platform's alone; otherwise move them, or the platform, to another project"
    ' (docs/create-cluster-gke.md, "A project of its own").'
)


def of_project(found: list[Finding]) -> list[Finding]:
    return [f for f in found if f.subject == SUBJECT]


def test_another_cluster_of_the_project_blocks(google: FakeGoogle) -> None:
    # The stack's own name in another location is another cluster.
    google.identities(
        clusters=[("ml-dev", "us-central1"), ("web", "europe-west1"), ("ml-dev", "us-east4")]
    )

    other, _ = of_project(findings(google))

    assert other == Finding(
        "blocking",
        SUBJECT,
        "The project has other GKE clusters (ml-dev in us-east4, web in europe-west1): every"
        f" cluster of a project shares the Workload Identity pool {POOL}, so the deploy"
        " identity, which can create any namespace and Kubernetes service account in this"
        " stack's cluster, can act as every Google service account their workloads use, and its"
        " roles/container.admin reaches those clusters themselves.",
        'Give the platform a project of its own (docs/create-cluster-gke.md, "A project of its'
        ' own").',
    )


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
        " those namespaces and Kubernetes service accounts and act with these roles.",
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

    assert of_project(findings(google))[1] == NO_GRANTS


def test_each_service_accounts_policy_is_asked_with_its_conditions(google: FakeGoogle) -> None:
    # IAM returns conditional bindings only to requestedPolicyVersion 3: the fake answers the
    # policy only for that version.
    google.identities(
        accounts={PAYMENTS: [{"role": "roles/iam.workloadIdentityUser", "members": [TRUSTED_KSA]}]}
    )

    found = findings(google)

    assert google.calls.count("iam.projects.serviceAccounts.getIamPolicy") == 1
    assert of_project(found)[1].severity == "warning"
