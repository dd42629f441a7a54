"""A GKE cluster the platform creates (`cluster.create`), and the cluster as planned before it
exists.

`planned_cluster` is what the rest of the GKE side reads instead of a looked-up cluster: name,
location, the version it is created at and its workload pool, all from the config; its endpoint and
CA are the created cluster's outputs. `NewGkeCluster` creates, in order, the network (or takes the
existing one), the system nodes' service account, the Secrets key (or takes the existing one), the
cluster, and the system node pool; `ready` is what every Kubernetes object and GPU pool waits for,
so that `pulumi destroy` deletes them before the cluster."""

from collections.abc import Iterator

import pulumi
from pulumi_gcp import container, projects

from gpu_platform.administrators import administrator_resource_name
from gpu_platform.config import (
    ClusterCreate,
    ConfigProblem,
    GkeNewNetwork,
    StackConfig,
    key_path,
)
from gpu_platform.gke.cluster import GkeCluster
from gpu_platform.gke.new_cluster.binary_authorization import binary_authorization_policy
from gpu_platform.gke.new_cluster.cluster import (
    DEFAULT_POOL_PROPERTIES,
    admin_domain,
    cluster_args,
    control_plane_version,
)
from gpu_platform.gke.new_cluster.network import create_network, existing_network
from gpu_platform.gke.new_cluster.secrets_key import secrets_key
from gpu_platform.gke.new_cluster.system_pool import system_node_identity, system_node_pool

RELEASE_CHANNELS_DOC = "https://cloud.google.com/kubernetes-engine/docs/concepts/release-channels"
ADMIN_PROJECT_ROLE = "roles/container.clusterViewer"
"""What an administrator group needs in IAM to fetch the cluster's credentials; RBAC gives it
the rest (a ClusterRoleBinding to cluster-admin)."""
ADMIN_GRANT_EXPRESSION = 'resource.service == "container.googleapis.com"'
"""The condition on the administrators' project role. A project binding is keyed by role,
member and condition: without a condition of its own, two stacks in one project granting the
role to the same group would state one binding, and destroying either stack would take it from
the other's administrators (terraform-provider-google `google_project_iam_member`: deleting it
removes the member from the role). The expression keeps the role to GKE, all it holds
(IAM conditions-resource-attributes lists container.googleapis.com); its title names the
cluster."""


def planned_cluster(config: StackConfig) -> GkeCluster:
    """The cluster `cluster.create` asks for, before it exists."""
    spec = config.cluster
    create = spec.create
    assert create is not None and spec.project is not None and spec.location is not None
    return GkeCluster(
        project=spec.project,
        location=spec.location,
        name=spec.name,
        endpoint="",
        ca_certificate="",
        master_version=control_plane_version(create),
        autopilot=False,
        workload_pool=f"{spec.project}.svc.id.goog",
        exists=False,
    )


def planned_cluster_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    """What the created cluster cannot be, given the pools on it."""
    create = config.cluster.create
    assert create is not None
    channel = create.gcp.release_channel
    if channel != "none":
        # GKE keeps node auto-upgrade on in every node pool of a cluster enrolled in a release
        # channel; a pinned pool turns it off (`gpu_platform.gke.node_pool`).
        for i, pool in enumerate(config.pools):
            if pool.gcp.node_version is not None:
                yield ConfigProblem(
                    key_path("pools", i, "gcp", "nodeVersion"),
                    pool.gcp.node_version,
                    f"no value while cluster.create.gcp.releaseChannel is {channel}: a cluster in"
                    " a release channel upgrades every node pool itself"
                    f" ({RELEASE_CHANNELS_DOC}); pin pools with releaseChannel none, or hold"
                    " GPU nodes back with a no-minor-or-node-upgrades maintenance exclusion",
                )
    key = create.gcp.secrets_kms_key_name
    region = planned_cluster(config).region
    # GKE how-to/encrypting-secrets, "Create a Cloud KMS key": "A regional cluster should use a
    # key ring from the same location", a zonal cluster "can only use a key in" its region, and
    # "The Cloud KMS global region is not supported for use with GKE". Refused here, before the
    # network exists, rather than by the cluster's creation after it.
    if key is not None and key.split("/")[3] != region:
        yield ConfigProblem(
            key_path("cluster", "create", "gcp", "secretsKmsKeyName"),
            key,
            f"a key in the cluster's region, {region} (locations/{region}): GKE supports neither"
            f" the global location nor another one; this one is in {key.split('/')[3]}",
        )
    if create.administrators and admin_domain(create) is None:
        yield ConfigProblem(
            key_path("cluster", "create", "administrators"),
            create.administrators,
            "Google groups of one domain: GKE's Google Groups for RBAC reads them from"
            " gke-security-groups@<that domain>",
        )


class NewGkeCluster(pulumi.ComponentResource):
    """The network, the cluster and its system node pool."""

    def __init__(
        self,
        name: str,
        config: StackConfig,
        planned: GkeCluster,
        pool_update_timeout: pulumi.CustomTimeouts,
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("gpu-platform:gke:Cluster", name, None, opts)
        create = config.cluster.create
        assert create is not None
        gcp = create.gcp
        if gcp.existing_network is not None:
            network = existing_network(gcp.existing_network, planned.project, planned.region)
        else:
            network = create_network(
                planned.name, planned.project, planned.region, gcp.network or GkeNewNetwork(), self
            )
        account, role = system_node_identity(f"{name}-system-nodes", planned, self)
        key = secrets_key(name, planned, gcp, config.protect, self)
        policy = binary_authorization_policy(name, planned.project, gcp, self)
        self.system_service_account = account.email
        self.secrets_key_condition = key.condition
        self.cluster_resource = container.Cluster(
            name,
            args=cluster_args(
                planned,
                create,
                network,
                account.email,
                config.monitoring,
                config.protect,
                {"managed-by": "gpu-platform"},
                key.name,
            ),
            opts=pulumi.ResourceOptions(
                parent=self,
                # The default pool's nodes start as the system account, holding its role; GKE
                # checks that its service agent may use the Secrets key.
                # GKE evaluates the project's policy from the cluster's first pod on.
                depends_on=[role, *network.egress, *key.grants, *([policy] if policy else [])],
                ignore_changes=list(DEFAULT_POOL_PROPERTIES),
                protect=config.protect,
            ),
        )
        self.system_pool = system_node_pool(
            f"{name}-system",
            planned,
            self.cluster_resource.name,
            gcp.system_node_pool,
            account.email,
            pool_update_timeout,
            pulumi.ResourceOptions(parent=self, depends_on=[role, *network.egress]),
        )
        self.admin_grants = [
            projects.IAMMember(
                administrator_resource_name(name, group),
                project=planned.project,
                role=ADMIN_PROJECT_ROLE,
                member=f"group:{group}",
                condition=projects.IAMMemberConditionArgs(
                    title=f"gpu-platform cluster {planned.name} in {planned.location}",
                    description=f"Administrators of GKE cluster {planned.name}",
                    expression=ADMIN_GRANT_EXPRESSION,
                ),
                opts=pulumi.ResourceOptions(parent=self),
            )
            for group in create.administrators
        ]
        endpoint, ca_certificate = self._api_endpoint(create)
        self.cluster = GkeCluster(
            project=planned.project,
            location=planned.location,
            name=planned.name,
            endpoint=endpoint,
            ca_certificate=ca_certificate,
            master_version=planned.master_version,
            autopilot=False,
            workload_pool=planned.workload_pool,
            pool_versions=planned.pool_versions,
            exists=planned.exists,
        )
        self.ready: list[pulumi.Resource] = [self.cluster_resource, self.system_pool]
        """What Kubernetes objects and GPU pools wait for."""
        self.register_outputs({"cluster_name": self.cluster_resource.name})

    def _api_endpoint(self, create: ClusterCreate) -> tuple[pulumi.Output[str], pulumi.Input[str]]:
        """Where the platform reaches the API, and the CA its certificate is checked against.
        The DNS-based endpoint serves a certificate of a public CA, not of the cluster's, so its
        kubeconfig names no CA (google-github-actions/get-gke-credentials, `createKubeConfig`:
        "if the endpoint is DNS-based endpoint ... we can not use the cluster's CA cert")."""
        created = self.cluster_resource
        if create.gcp.dns_endpoint:
            dns = created.control_plane_endpoints_config.apply(
                lambda c: (
                    (c.dns_endpoint_config.endpoint or "") if c and c.dns_endpoint_config else ""
                )
            )
            return dns, ""
        ca = created.master_auth.apply(lambda auth: auth.cluster_ca_certificate or "")
        if create.endpoint.access == "private":
            private = created.private_cluster_config.apply(
                lambda c: (c.private_endpoint or "") if c else ""
            )
            return private, ca
        return created.endpoint, ca
