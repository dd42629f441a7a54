"""What `gpu-platform preflight` finds of a GKE stack's project that the deploy identity could
reach beyond the stack: the platform needs a project of its own.

Every cluster of a project shares one Workload Identity pool, `<project>.svc.id.goog`
(container.v1 `WorkloadIdentityConfig.workloadPool`: "The workload pool to attach all
Kubernetes service accounts to"; GKE takes no other pool for a cluster, and a fleet's pool is its
host project's, shared likewise). A Google service account that trusts
`serviceAccount:<project>.svc.id.goog[<namespace>/<name>]` trusts that Kubernetes service
account in every cluster of the project, and the deploy identity, which holds
`roles/container.admin` on the project, can create that namespace and service account in the
stack's cluster and act as it. So the check reads:

- the project's clusters in every location (`container.projects.locations.clusters.list` with
  location `-`): another cluster blocks, its workloads' Google service accounts being within the
  deploy identity's reach, and the cluster itself within its `roles/container.admin`;
- the IAM policy of each service account of the project (`iam.projects.serviceAccounts.list`,
  `getIamPolicy`) and of the project (`cloudresourcemanager.projects.getIamPolicy`): each binding
  whose members include the pool's identities (`serviceAccount:<pool>[...]`, or the
  `principal://` and `principalSet://` identifiers of Workload Identity Federation for GKE) is a
  warning naming the role, the resource and the members: the deploy identity can act as them.

Service accounts of other projects that trust the pool are out of the check's sight.
"""

import re
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from gpu_platform.cli.findings import Finding
from gpu_platform.config import StackConfig

POOL_SUFFIX = ".svc.id.goog"
DOCS = 'docs/create-cluster-gke.md, "A project of its own"'


class IdentityApis(Protocol):
    def clusters(self) -> list[dict[str, Any]]: ...

    def service_accounts(self) -> list[dict[str, Any]]: ...

    def service_account_policy(self, email: str) -> dict[str, Any]: ...

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


def identity_findings(config: StackConfig, apis: IdentityApis) -> list[Finding]:
    spec = config.cluster
    assert spec.project is not None and spec.location is not None
    pool = workload_pool(spec.project)
    findings = [_other_clusters_finding(spec.project, spec.name, spec.location, apis.clusters())]
    trusting = [
        (f"service account {account['email']}", binding)
        for account in apis.service_accounts()
        for binding in _pool_bindings(apis.service_account_policy(account["email"]), pool)
    ]
    trusting += [
        (f"project {spec.project}", binding)
        for binding in _pool_bindings(apis.project_policy(), pool)
    ]
    findings.append(_trust_finding(spec.project, pool, trusting))
    return findings


def _other_clusters_finding(
    project: str, name: str, location: str, clusters: Iterable[Mapping[str, Any]]
) -> Finding:
    subject = f"project {project}"
    others = sorted(
        f"{c.get('name')} in {c.get('location')}"
        for c in clusters
        if (c.get("name"), c.get("location")) != (name, location)
    )
    if not others:
        return Finding(
            "ok",
            subject,
            "No other GKE cluster in the project: none shares the cluster's Workload Identity"
            " pool.",
            "Nothing.",
        )
    return Finding(
        "blocking",
        subject,
        f"The project has other GKE clusters ({', '.join(others)}): every cluster of a project"
        f" shares the Workload Identity pool {workload_pool(project)}, so the deploy identity,"
        " which can create any namespace and Kubernetes service account in this stack's"
        " cluster, can act as every Google service account their workloads use, and its"
        " roles/container.admin reaches those clusters themselves.",
        f"Give the platform a project of its own ({DOCS}).",
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


def _trust_finding(project: str, pool: str, trusting: list[tuple[str, dict[str, Any]]]) -> Finding:
    subject = f"project {project}"
    if not trusting:
        return Finding(
            "ok",
            subject,
            f"No service account of the project, nor the project, grants a role to {pool}.",
            "Nothing.",
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
        " create those namespaces and Kubernetes service accounts and act with these roles.",
        "Nothing, if they are the stack's cluster's own workloads' and the project is the"
        f" platform's alone; otherwise move them, or the platform, to another project ({DOCS}).",
    )
