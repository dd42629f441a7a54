"""The system node pool of a GKE cluster the platform creates: a few small on-demand nodes in
each zone for what runs outside the GPU nodes (kube-dns, the GPU Operator's controllers,
Prometheus, the platform's reaper and gates), untainted so that all of it lands there without
tolerations, while the GPU nodes' own taint keeps it off them.

Its nodes run as a service account of their own that holds only
`roles/container.defaultNodeServiceAccount`, never as the Compute Engine default service account
(which holds Editor on the project in many projects): GKE's hardening guide, "Use least
privilege Google service accounts", and terraform-google-kubernetes-engine's safer-cluster
(`create_service_account`).
"""

from datetime import timedelta

import pulumi
from pulumi_gcp import container, projects, serviceaccount

from gpu_platform.config import GkeSystemNodePool
from gpu_platform.gke.cluster import GkeCluster
from gpu_platform.gke.node_pool import (
    CLOUD_PLATFORM_SCOPE,
    NODE_COUNT_PROPERTIES,
    NODE_SERVICE_ACCOUNT_ROLE,
    node_service_account_id,
)
from gpu_platform.rollout_timeouts import gke_surge_rollout

SYSTEM_IMAGE_TYPE = "COS_CONTAINERD"
SYSTEM_DISK_TYPE = "pd-balanced"
SYSTEM_ROLE_LABEL = "gpu-platform.io/node-role"
REGION_ZONES = 3
"""The zones of a regional cluster that names none: GKE's default of three."""
# One node more at a time, none fewer: the controllers keep running during upgrades.
SURGE_UPGRADE = (1, 0)


def system_node_identity(
    name: str, cluster: GkeCluster, parent: pulumi.Resource
) -> tuple[serviceaccount.Account, projects.IAMMember]:
    """The system nodes' service account and its one role; the cluster's default node pool,
    created and removed at once, runs as it too."""
    account = serviceaccount.Account(
        name,
        project=cluster.project,
        account_id=node_service_account_id(cluster, "nodes", prefix="sys"),
        display_name=f"System nodes of {cluster.name}",
        opts=pulumi.ResourceOptions(parent=parent),
    )
    role = projects.IAMMember(
        name,
        project=cluster.project,
        role=NODE_SERVICE_ACCOUNT_ROLE,
        member=account.member,
        opts=pulumi.ResourceOptions(parent=parent),
    )
    return account, role


def system_node_pool(
    name: str,
    cluster: GkeCluster,
    cluster_name: pulumi.Input[str],
    spec: GkeSystemNodePool,
    service_account: pulumi.Input[str],
    update_timeout: pulumi.CustomTimeouts,
    opts: pulumi.ResourceOptions,
) -> container.NodePool:
    """The system node pool; `update_timeout` is every node pool's of the cluster
    (`gpu_platform.rollout_timeouts.gke_update_timeout`), as the pool's upgrades wait for the
    GPU pools' and theirs for it."""
    return container.NodePool(
        name,
        args=system_node_pool_args(cluster, cluster_name, spec, service_account),
        opts=pulumi.ResourceOptions.merge(
            opts,
            pulumi.ResourceOptions(
                ignore_changes=list(NODE_COUNT_PROPERTIES),
                custom_timeouts=update_timeout,
            ),
        ),
    )


def system_pool_rollout(spec: GkeSystemNodePool) -> timedelta:
    """The longest upgrade of the system nodes: GKE upgrades them with the control plane, a node
    at a time."""
    return gke_surge_rollout(spec.max_per_zone * REGION_ZONES, REGION_ZONES, *SURGE_UPGRADE)


def system_node_pool_args(
    cluster: GkeCluster,
    cluster_name: pulumi.Input[str],
    spec: GkeSystemNodePool,
    service_account: pulumi.Input[str],
) -> container.NodePoolArgs:
    return container.NodePoolArgs(
        project=cluster.project,
        location=cluster.location,
        cluster=cluster_name,
        initial_node_count=spec.min_per_zone,
        autoscaling=container.NodePoolAutoscalingArgs(
            min_node_count=spec.min_per_zone,
            max_node_count=spec.max_per_zone,
            location_policy="BALANCED",
        ),
        # The system nodes follow the control plane (a release channel requires it); the GPU
        # pools keep their own pins.
        management=container.NodePoolManagementArgs(auto_repair=True, auto_upgrade=True),
        upgrade_settings=container.NodePoolUpgradeSettingsArgs(
            strategy="SURGE", max_surge=SURGE_UPGRADE[0], max_unavailable=SURGE_UPGRADE[1]
        ),
        node_config=container.NodePoolNodeConfigArgs(
            machine_type=spec.machine_type,
            disk_size_gb=spec.disk_size_gib,
            disk_type=SYSTEM_DISK_TYPE,
            image_type=SYSTEM_IMAGE_TYPE,
            service_account=service_account,
            oauth_scopes=[CLOUD_PLATFORM_SCOPE],
            labels={SYSTEM_ROLE_LABEL: "system"},
            metadata={"disable-legacy-endpoints": "true"},
            workload_metadata_config=container.NodePoolNodeConfigWorkloadMetadataConfigArgs(
                mode="GKE_METADATA"
            ),
            shielded_instance_config=container.NodePoolNodeConfigShieldedInstanceConfigArgs(
                enable_secure_boot=True, enable_integrity_monitoring=True
            ),
        ),
    )
