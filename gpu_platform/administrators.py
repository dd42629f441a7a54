"""Pulumi names of the per-administrator resources of a created cluster (EKS access entries, GKE
project IAM grants).

Named from the administrator, never from its position in `cluster.create.administrators`:
a positional name would, when one administrator is removed or added in front, move the next
ones' resources onto other principals, and with them replace resources whose deletion revokes
access that another resource still states (a non-authoritative IAM member removes its member
from the role on delete; terraform-provider-google `google_project_iam_member`)."""

import hashlib


def administrator_resource_name(prefix: str, principal: str) -> str:
    return f"{prefix}-admin-{hashlib.sha256(principal.encode()).hexdigest()[:10]}"
