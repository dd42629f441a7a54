"""The GKE Standard cluster the platform creates, hardened as GKE's hardening guide and
terraform-google-kubernetes-engine's safer-cluster module have it:

- VPC-native (alias IPs from the subnet's secondary ranges), Dataplane V2 (`ADVANCED_DATAPATH`,
  which enforces NetworkPolicies without Calico);
- private nodes (no external address; Cloud NAT for egress), and a control plane reached
  privately, or publicly only from `endpoint.publicCidrs`: master authorized networks on, Google
  Cloud's own public ranges not let in, the DNS-based endpoint closed to user traffic;
- master authorized networks enforced on the private endpoint too
  (`privateEndpointEnforcementEnabled`), so that a VM of the network outside them does not reach
  the API;
- Workload Identity Federation (`<project>.svc.id.goog`), shielded nodes;
- Binary Authorization, evaluating the project's policy, which the platform writes in audit
  mode by default (`gcp.binaryAuthorization`, `binary_authorization`);
- Secrets encrypted with a Cloud KMS key (application-layer Secrets encryption);
- a release channel, or a pinned version on none; a weekly maintenance window and exclusions;
- no default node pool: GKE creates one with the cluster, and `remove_default_node_pool` deletes
  it right after (pulumi-gcp `container.Cluster`: "the recommended way ... is to create the
  smallest possible default node pool and immediately delete it"). That pool runs as the system
  nodes' own service account, never the Compute Engine default one;
- deletion protection (GKE's own and Pulumi's `protect`) where the stack is protected.
"""

from datetime import UTC, datetime, timedelta

import pulumi
from pulumi_gcp import container

from gpu_platform.config import (
    ClusterCreate,
    GkeClusterCreate,
    GkeMaintenanceWindow,
    MonitoringSpec,
)
from gpu_platform.gke.authorized_networks import NODES_BLOCK_NAME
from gpu_platform.gke.cluster import GkeCluster
from gpu_platform.gke.new_cluster.binary_authorization import EVALUATION_MODES
from gpu_platform.gke.new_cluster.network import ClusterNetwork
from gpu_platform.gke.node_pool import CLOUD_PLATFORM_SCOPE

RELEASE_CHANNELS = {
    "rapid": "RAPID",
    "regular": "REGULAR",
    "stable": "STABLE",
    "extended": "EXTENDED",
    "none": "UNSPECIFIED",
}
"""`releaseChannel` -> the API's `ReleaseChannel.channel`."""
EXCLUSION_SCOPES = {
    "no-upgrades": "NO_UPGRADES",
    "no-minor-upgrades": "NO_MINOR_UPGRADES",
    "no-minor-or-node-upgrades": "NO_MINOR_OR_NODE_UPGRADES",
}
"""`maintenanceExclusions[].scope` -> the API's `MaintenanceExclusionOptions.scope`."""
UNTIL_END_OF_SUPPORT = "UNTIL_END_OF_SUPPORT"
"""`MaintenanceExclusionOptions.endTimeBehavior` of an exclusion lasting while the version is
supported."""
WINDOW_FIRST_DAY = datetime(2025, 1, 6)
"""A Monday before any cluster: GKE takes the window's time of day and length from its start
and end, and its days from the recurrence."""
DATAPLANE_V2 = "ADVANCED_DATAPATH"
SYSTEM_METRICS = "SYSTEM_COMPONENTS"
"""GKE's own system metrics, which every other monitored component needs."""
ADMIN_SECURITY_GROUP = "gke-security-groups"
"""The group that Google Groups for RBAC requires to hold the groups RBAC names
(`gke-security-groups@<domain>`)."""


def control_plane_version(create: ClusterCreate) -> str:
    """What the cluster is created at: the pinned version, else the minor, whose newest version
    in the channel GKE picks."""
    return create.gcp.version or create.kubernetes_version


def cluster_args(
    cluster: GkeCluster,
    create: ClusterCreate,
    network: ClusterNetwork,
    node_service_account: pulumi.Input[str],
    monitoring: MonitoringSpec,
    protect: bool,
    labels: dict[str, str],
    secrets_key_name: pulumi.Input[str],
) -> container.ClusterArgs:
    gcp = create.gcp
    private = create.endpoint.access == "private"
    return container.ClusterArgs(
        name=cluster.name,
        project=cluster.project,
        location=cluster.location,
        network=network.network,
        subnetwork=network.subnetwork,
        networking_mode="VPC_NATIVE",
        ip_allocation_policy=container.ClusterIpAllocationPolicyArgs(
            cluster_secondary_range_name=network.pods_range_name,
            services_secondary_range_name=network.services_range_name,
            stack_type="IPV4",
        ),
        datapath_provider=DATAPLANE_V2,
        private_cluster_config=container.ClusterPrivateClusterConfigArgs(
            enable_private_nodes=True, enable_private_endpoint=private
        ),
        master_authorized_networks_config=authorized_networks(create, network),
        control_plane_endpoints_config=container.ClusterControlPlaneEndpointsConfigArgs(
            # GKE's DNS-based endpoint answers from anywhere to any Google identity allowed
            # `container.clusters.connect`; closed unless `gcp.dnsEndpoint`, the API is then
            # reached only through the IP endpoints configured here.
            dns_endpoint_config=container.ClusterControlPlaneEndpointsConfigDnsEndpointConfigArgs(
                allow_external_traffic=gcp.dns_endpoint
            ),
            ip_endpoints_config=container.ClusterControlPlaneEndpointsConfigIpEndpointsConfigArgs(
                enabled=True
            ),
        ),
        binary_authorization=container.ClusterBinaryAuthorizationArgs(
            evaluation_mode=EVALUATION_MODES[gcp.binary_authorization]
        ),
        workload_identity_config=container.ClusterWorkloadIdentityConfigArgs(
            workload_pool=cluster.workload_pool
        ),
        enable_shielded_nodes=True,
        enable_legacy_abac=False,
        release_channel=container.ClusterReleaseChannelArgs(
            channel=RELEASE_CHANNELS[gcp.release_channel]
        ),
        min_master_version=control_plane_version(create),
        maintenance_policy=maintenance_policy(gcp),
        authenticator_groups_config=admin_groups_config(create),
        monitoring_config=monitoring_config(monitoring),
        # The default node pool, created with the cluster and deleted at once (the provider
        # deletes `default-pool` right after creating the cluster). Meanwhile its nodes run as
        # the system nodes' service account, on the GKE metadata server and shielded, which a
        # cluster with Workload Identity and shielded nodes gives every new pool. Once it is
        # gone its settings read back empty: the program ignores them rather than replace the
        # cluster (`DEFAULT_POOL_PROPERTIES`).
        remove_default_node_pool=True,
        initial_node_count=1,
        node_config=container.ClusterNodeConfigArgs(
            service_account=node_service_account, oauth_scopes=[CLOUD_PLATFORM_SCOPE]
        ),
        # Application-layer Secrets encryption with the cluster's Cloud KMS key
        # (`gpu_platform.gke.new_cluster.secrets_key`).
        database_encryption=container.ClusterDatabaseEncryptionArgs(
            state="ENCRYPTED", key_name=secrets_key_name
        ),
        deletion_protection=protect,
        resource_labels=labels,
    )


DEFAULT_POOL_PROPERTIES = ("nodeConfig", "initialNodeCount")
"""The removed default node pool's settings: read back empty once it is gone."""


def monitoring_config(monitoring: MonitoringSpec) -> container.ClusterMonitoringConfigArgs | None:
    """Managed Service for Prometheus's managed collection where `googleManagedPrometheus` is
    on: it is what installs the `monitoring.googleapis.com` CRDs (ClusterPodMonitoring,
    ClusterRules) the platform then creates objects of. The provider sends the component list
    whenever the block is set (terraform-provider-google `expandMonitoringConfig`), so it names
    the system metrics GKE collects anyway rather than send none."""
    if not monitoring.google_managed_prometheus:
        return None
    return container.ClusterMonitoringConfigArgs(
        enable_components=[SYSTEM_METRICS],
        managed_prometheus=container.ClusterMonitoringConfigManagedPrometheusArgs(enabled=True),
    )


def authorized_networks(
    create: ClusterCreate, network: ClusterNetwork
) -> container.ClusterMasterAuthorizedNetworksConfigArgs:
    """Who reaches the control plane: the nodes' own subnet, `endpoint.publicCidrs` and
    `gcp.authorizedNetworks`; never Google Cloud's public ranges (any Compute Engine VM,
    anyone's). GKE holds only the public endpoint to them unless told to hold the private one
    too (`MasterAuthorizedNetworksConfig.privateEndpointEnforcementEnabled`, container.v1:
    "Whether master authorized networks is enforced on private endpoint or not",
    `gcp.privateEndpointEnforcement`); without it any address of the network, and of networks
    peered or connected to it, reaches the private endpoint."""
    blocks = [
        container.ClusterMasterAuthorizedNetworksConfigCidrBlockArgs(
            cidr_block=network.node_cidr, display_name=NODES_BLOCK_NAME
        )
    ]
    blocks += [
        container.ClusterMasterAuthorizedNetworksConfigCidrBlockArgs(
            cidr_block=cidr, display_name="endpoint.publicCidrs"
        )
        for cidr in create.endpoint.public_cidrs
    ]
    blocks += [
        container.ClusterMasterAuthorizedNetworksConfigCidrBlockArgs(
            cidr_block=extra.cidr, display_name=extra.display_name
        )
        for extra in create.gcp.authorized_networks
    ]
    return container.ClusterMasterAuthorizedNetworksConfigArgs(
        cidr_blocks=blocks,
        gcp_public_cidrs_access_enabled=False,
        private_endpoint_enforcement_enabled=create.gcp.private_endpoint_enforcement,
    )


def maintenance_policy(gcp: GkeClusterCreate) -> container.ClusterMaintenancePolicyArgs:
    start, end = window_times(gcp.maintenance_window)
    return container.ClusterMaintenancePolicyArgs(
        recurring_window=container.ClusterMaintenancePolicyRecurringWindowArgs(
            start_time=start,
            end_time=end,
            recurrence=f"FREQ=WEEKLY;BYDAY={','.join(gcp.maintenance_window.days)}",
        ),
        maintenance_exclusions=[
            container.ClusterMaintenancePolicyMaintenanceExclusionArgs(
                exclusion_name=exclusion.name,
                start_time=zulu(exclusion.start),
                end_time=None if exclusion.end is None else zulu(exclusion.end),
                exclusion_options=container.ClusterMaintenancePolicyMaintenanceExclusionExclusionOptionsArgs(
                    scope=EXCLUSION_SCOPES[exclusion.scope],
                    end_time_behavior=UNTIL_END_OF_SUPPORT
                    if exclusion.until_end_of_support
                    else None,
                ),
            )
            for exclusion in gcp.maintenance_exclusions
        ]
        or None,
    )


def zulu(time: datetime) -> str:
    """RFC 3339 in UTC with `Z`, as pulumi-gcp asks exclusion times to be given ("Zulu" date
    format) and GKE returns them, so that a time given with an offset reads back unchanged."""
    return f"{time.astimezone(UTC).replace(tzinfo=None).isoformat()}Z"


def window_times(window: GkeMaintenanceWindow) -> tuple[str, str]:
    """The window's first start and end, RFC 3339 in UTC."""
    hours, minutes = (int(part) for part in window.start.split(":"))
    start = WINDOW_FIRST_DAY + timedelta(hours=hours, minutes=minutes)
    end = start + timedelta(hours=window.duration_hours)
    return f"{start.isoformat()}Z", f"{end.isoformat()}Z"


def admin_domain(create: ClusterCreate) -> str | None:
    """The domain of the administrators' groups (config validation checks they share one)."""
    domains = {group.rpartition("@")[2] for group in create.administrators}
    return next(iter(domains)) if len(domains) == 1 else None


def admin_groups_config(
    create: ClusterCreate,
) -> container.ClusterAuthenticatorGroupsConfigArgs | None:
    domain = admin_domain(create)
    if domain is None:
        return None
    return container.ClusterAuthenticatorGroupsConfigArgs(
        security_group=f"{ADMIN_SECURITY_GROUP}@{domain}"
    )
