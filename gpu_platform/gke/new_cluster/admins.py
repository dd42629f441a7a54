"""The administrators' Google groups made cluster-admin in the cluster the platform creates.

GKE's Google Groups for RBAC (`authenticatorGroupsConfig`, on the cluster) puts the groups a
user belongs to, among those in `gke-security-groups@<domain>`, into the user's Kubernetes
identity; a ClusterRoleBinding to `cluster-admin` then names them. In IAM the groups only hold
`roles/container.clusterViewer`, enough to fetch the cluster's credentials, so that what they
may do in the cluster is RBAC's, and the project's other clusters stay out of reach.
"""

from collections.abc import Sequence

import pulumi
from pulumi_kubernetes import meta, rbac

from gpu_platform.instance import part_name

RBAC_API_GROUP = "rbac.authorization.k8s.io"


def administrator_bindings(
    groups: Sequence[str], opts: pulumi.ResourceOptions
) -> rbac.v1.ClusterRoleBinding | None:
    if not groups:
        return None
    return rbac.v1.ClusterRoleBinding(
        part_name("cluster-administrators"),
        metadata=meta.v1.ObjectMetaArgs(name="gpu-platform-administrators"),
        role_ref=rbac.v1.RoleRefArgs(
            api_group=RBAC_API_GROUP, kind="ClusterRole", name="cluster-admin"
        ),
        subjects=[
            rbac.v1.SubjectArgs(api_group=RBAC_API_GROUP, kind="Group", name=group)
            for group in groups
        ],
        opts=opts,
    )
