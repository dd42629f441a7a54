"""What `gpu-platform preflight` finds of a GKE stack's project that the deploy identity could
reach beyond the stack: the platform needs a project of its own.

Every cluster of a project shares one Workload Identity pool, `<project>.svc.id.goog`
(container.v1 `WorkloadIdentityConfig.workloadPool`: "The workload pool to attach all
Kubernetes service accounts to"; GKE takes no other pool for a cluster, and a cluster registered
to a fleet of another host project takes that project's pool, which every cluster of the fleet
shares). A Google service account that trusts
`serviceAccount:<pool>[<namespace>/<name>]` trusts that Kubernetes service account in every
cluster of the pool, and the deploy identity, which holds `roles/container.admin` on the
project, can create that namespace and service account in the stack's cluster and act as it.
So the check reads:

- the project's clusters in every location (`container.projects.locations.clusters.list` with
  location `-`): another cluster blocks a stack that creates its cluster, which the platform
  means to have a project of its own; it is a warning for a stack that attaches to a cluster of
  a shared project, which is what attaching is for. Zones that do not answer
  (`ListClustersResponse.missingZones`) are named as unchecked;
- the IAM policy of each service account of the project (`iam.projects.serviceAccounts.list`,
  `getIamPolicy`) and of the project (`cloudresourcemanager.projects.getIamPolicy`): each binding
  whose members include the pool's identities (`serviceAccount:<pool>[...]`, or the
  `principal://` and `principalSet://` identifiers of Workload Identity Federation for GKE) is a
  warning naming the role, the resource and the members: the deploy identity can act as them.

Grants on other resources (buckets, secrets, keys, other projects' service accounts) are out
of the check's sight, and its findings say so. A permission the caller lacks (403) leaves that
part unchecked, a warning naming the permission, rather than failing the whole check: the
roles a pipeline's preflight runs with often lack the IAM reads (docs/ci.md).
"""

import re
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from gpu_platform.config import StackConfig
from gpu_platform.gke.preflight.google_api_error import GoogleApiError
from gpu_platform.preflight.findings import Finding

POOL_SUFFIX = ".svc.id.goog"
DOCS = 'docs/create-cluster-gke.md, "A project of its own"'
READER_ROLE = "roles/iam.securityReviewer"
"""Grants `iam.serviceAccounts.list`, `iam.serviceAccounts.getIamPolicy` and
`resourcemanager.projects.getIamPolicy` (IAM, "Roles and permissions" reference)."""
UNSEEN = (
    "Grants on the project's other resources (buckets, secrets, keys) and in other projects"
    " were not read."
)


class IdentityApis(Protocol):
    def clusters(self) -> dict[str, Any]: ...

    def service_accounts(self) -> list[dict[str, Any]]: ...

    def service_account_policies(self, emails: list[str]) -> list[dict[str, Any]]: ...

    def project_policy(self) -> dict[str, Any]: ...


def workload_pool(project: str) -> str:
    return f"{project}{POOL_SUFFIX}"


def in_pool(member: str, pool: str) -> bool:
    """Whether an IAM member names identities of the pool: `serviceAccount:<pool>[ns/ksa]`, or
    `principal://` / `principalSet://` under `workloadIdentityPools/<pool>/` (IAM principal
    identifiers)."""
    escaped = re.escape(pool)
    principal = rf"principal(Set)?://iam\.googleapis\.com/.*/workloadIdentityPools/{escaped}/"
    return bool(re.match(rf"serviceAccount:{escaped}\[", member) or re.match(principal, member))


def identity_findings(
    config: StackConfig, apis: IdentityApis, cluster: Mapping[str, Any] | None = None
) -> list[Finding]:
    """The project's findings; `cluster`, the attached cluster as GKE describes it, gives the
    pool its Workload Identity uses (`workloadIdentityConfig.workloadPool`)."""
    spec = config.cluster
    assert spec.project is not None and spec.location is not None
    subject = f"project {spec.project}"
    own = workload_pool(spec.project)
    pool = str((cluster or {}).get("workloadIdentityConfig", {}).get("workloadPool") or own)
    findings = _reading(
        subject,
        "whether another GKE cluster shares the project",
        lambda: _clusters_findings(config, apis.clusters(), pool),
    )
    if pool != own:
        findings.append(_fleet_finding(subject, pool))
    trusting: list[tuple[str, dict[str, Any]]] = []
    before = len(findings)

    def accounts() -> list[Finding]:
        emails = [str(a["email"]) for a in apis.service_accounts()]
        policies = apis.service_account_policies(emails)
        trusting.extend(
            (f"service account {email}", binding)
            for email, policy in zip(emails, policies, strict=True)
            for binding in _pool_bindings(policy, pool)
        )
        return []

    def project() -> list[Finding]:
        trusting.extend((subject, b) for b in _pool_bindings(apis.project_policy(), pool))
        return []

    findings += _reading(subject, "which service accounts trust the pool", accounts)
    findings += _reading(subject, "which project roles the pool holds", project)
    read_all = len(findings) == before
    findings.append(_trust_finding(subject, pool, trusting, read_all))
    return findings


def _reading(subject: str, what: str, read: Callable[[], list[Finding]]) -> list[Finding]:
    """`read()`'s findings; where Google refuses the caller a permission, a warning naming it."""
    try:
        return read()
    except GoogleApiError as error:
        if not error.refused:
            raise
        return [
            Finding(
                "warning",
                subject,
                f"Could not check {what}: {error.permission} refused on {error.resource}"
                f" ({error.status} {error.reason}: {error.message}).",
                f"Grant the check {error.permission} ({READER_ROLE} grants it), or check it by"
                f" hand ({DOCS}).",
            )
        ]


def _clusters_findings(config: StackConfig, listed: Mapping[str, Any], pool: str) -> list[Finding]:
    spec = config.cluster
    assert spec.project is not None
    subject = f"project {spec.project}"
    others = sorted(
        f"{c.get('name')} in {c.get('location')}"
        for c in listed.get("clusters", [])
        if (c.get("name"), c.get("location")) != (spec.name, spec.location)
    )
    findings = [_other_clusters_finding(subject, pool, others, spec.create is not None)]
    if listed.get("missingZones"):
        zones = ", ".join(listed["missingZones"])
        findings.append(
            Finding(
                "warning",
                subject,
                f"GKE did not answer for zones {zones}: clusters there are unchecked.",
                "Run the check again later, or list them by hand (gcloud container clusters"
                f" list --project {spec.project}).",
            )
        )
    return findings


def _other_clusters_finding(subject: str, pool: str, others: list[str], created: bool) -> Finding:
    if not others:
        return Finding(
            "ok",
            subject,
            "No other GKE cluster in the project: none shares the cluster's Workload Identity"
            " pool.",
            "Nothing.",
        )
    message = (
        f"The project has other GKE clusters ({', '.join(others)}): every cluster of a project"
        f" shares the Workload Identity pool {pool}, so the deploy identity,"
        " which can create any namespace and Kubernetes service account in this stack's"
        " cluster, can act as every Google service account their workloads use, and its"
        " roles/container.admin reaches those clusters themselves."
    )
    if created:
        return Finding(
            "blocking", subject, message, f"Give the platform a project of its own ({DOCS})."
        )
    return Finding(
        "warning",
        subject,
        message,
        "Nothing, if the deploy identity may reach them (an attached cluster shares its"
        f" project); otherwise move the platform's cluster to a project of its own ({DOCS}).",
    )


def _fleet_finding(subject: str, pool: str) -> Finding:
    return Finding(
        "warning",
        subject,
        f"The cluster's Workload Identity pool is {pool}, its fleet host project's: every"
        " cluster of that fleet shares it, and the check reads neither the fleet's clusters"
        " nor that project's grants to the pool.",
        f"Check the fleet host project's clusters and grants to {pool} by hand ({DOCS}).",
    )


def _pool_bindings(policy: Mapping[str, Any], pool: str) -> list[dict[str, Any]]:
    """The policy's bindings (IAM `Policy.bindings`: role, members, condition), each with only
    its members of the pool, where it has any."""
    found = []
    for binding in policy.get("bindings", []):
        members = [m for m in binding.get("members", []) if in_pool(m, pool)]
        if members:
            found.append({**binding, "members": members})
    return found


def _trust_finding(
    subject: str, pool: str, trusting: list[tuple[str, dict[str, Any]]], read_all: bool
) -> Finding:
    checked = (
        "the policies of the project and of each of its service accounts"
        if read_all
        else "the policies that could be read"
    )
    if not trusting:
        return Finding(
            "ok" if read_all else "warning",
            subject,
            f"No role granted to {pool} in {checked}. {UNSEEN}",
            "Nothing." if read_all else "See the findings above for what was not read.",
        )
    grants = "; ".join(
        f"{where}: {binding['role']} to {', '.join(binding['members'])}"
        + (" (with a condition)" if binding.get("condition") else "")
        for where, binding in trusting
    )
    return Finding(
        "warning",
        subject,
        f"Grants to the cluster's Workload Identity pool ({grants}): the deploy identity can"
        f" create those namespaces and Kubernetes service accounts and act with these roles."
        f" {UNSEEN}",
        "Nothing, if they are the stack's cluster's own workloads' and the project is the"
        f" platform's alone; otherwise move them, or the platform, to another project ({DOCS}).",
    )
