"""The network of a GKE cluster the platform creates: a VPC network and a subnet whose
secondary ranges give pods and Services their addresses (VPC-native), and a Cloud Router with
Cloud NAT, the only way out for nodes that have no external address. Or an existing network and
subnet, which must already route to the internet (`cluster.create.gcp.existingNetwork`)."""

from dataclasses import dataclass

import pulumi
from pulumi_gcp import compute

from gpu_platform.config import GkeExistingNetwork, GkeNewNetwork
from gpu_platform.instance import lookup_provider

PODS_RANGE = "pods"
SERVICES_RANGE = "services"

NAT_MIN_PORTS = 64
"""Ports a VM starts with: Cloud NAT's fixed default, a power of two as dynamic allocation
requires."""
NAT_MAX_PORTS = 4096
"""The most a busy node grows to, a power of two above the minimum: 16 nodes take one NAT
address's 64,512 ports."""


@dataclass(frozen=True)
class ClusterNetwork:
    """Where the cluster's nodes, pods and Services take their addresses."""

    network: pulumi.Input[str]
    subnetwork: pulumi.Input[str]
    pods_range_name: str
    services_range_name: str
    node_cidr: pulumi.Input[str]
    """The nodes' range: the subnet's primary range, which the control plane must admit."""
    egress: tuple[pulumi.Resource, ...] = ()
    """What nodes need before they start: the NAT that lets them pull images."""


def existing_network(spec: GkeExistingNetwork, project: str, region: str) -> ClusterNetwork:
    """The existing subnet, with its primary range looked up (`compute.subnetworks.get`,
    `ipCidrRange`): nodes reach the control plane from it, and with authorized networks held
    on the private endpoint a node outside them cannot register."""
    subnet = compute.get_subnetwork_output(
        name=spec.subnetwork,
        project=project,
        region=region,
        opts=pulumi.InvokeOutputOptions(provider=lookup_provider("gcp")),
    )
    return ClusterNetwork(
        network=spec.network,
        subnetwork=spec.subnetwork,
        pods_range_name=spec.pods_range_name,
        services_range_name=spec.services_range_name,
        node_cidr=subnet.ip_cidr_range,
    )


def create_network(
    name: str, project: str, region: str, spec: GkeNewNetwork, parent: pulumi.Resource
) -> ClusterNetwork:
    child = pulumi.ResourceOptions(parent=parent)
    network = compute.Network(
        name,
        project=project,
        # Custom mode: no subnet in every region, only the cluster's.
        auto_create_subnetworks=False,
        routing_mode="REGIONAL",
        description=f"The network of GKE cluster {name}",
        opts=child,
    )
    subnet = compute.Subnetwork(
        name,
        project=project,
        region=region,
        network=network.self_link,
        ip_cidr_range=spec.subnet_cidr,
        secondary_ip_ranges=[
            compute.SubnetworkSecondaryIpRangeArgs(
                range_name=PODS_RANGE, ip_cidr_range=spec.pods_cidr
            ),
            compute.SubnetworkSecondaryIpRangeArgs(
                range_name=SERVICES_RANGE, ip_cidr_range=spec.services_cidr
            ),
        ],
        # Nodes without external addresses reach Google APIs (Artifact Registry, Cloud Logging)
        # over Google's network.
        private_ip_google_access=True,
        log_config=(
            compute.SubnetworkLogConfigArgs(
                aggregation_interval="INTERVAL_5_SEC",
                flow_sampling=spec.flow_log_sampling,
                metadata="INCLUDE_ALL_METADATA",
            )
            if spec.flow_log_sampling > 0
            else None
        ),
        opts=child,
    )
    router = compute.Router(
        name, project=project, region=region, network=network.self_link, opts=child
    )
    nat = compute.RouterNat(
        name,
        project=project,
        region=region,
        router=router.name,
        nat_ip_allocate_option="AUTO_ONLY",
        # This subnet only, every range of it: the nodes' and, as Dataplane V2 sends pod traffic
        # with the pod's address, the pods'.
        source_subnetwork_ip_ranges_to_nat="LIST_OF_SUBNETWORKS",
        subnetworks=[
            compute.RouterNatSubnetworkArgs(
                name=subnet.self_link, source_ip_ranges_to_nats=["ALL_IP_RANGES"]
            )
        ],
        log_config=compute.RouterNatLogConfigArgs(enable=True, filter="ERRORS_ONLY"),
        # GPU nodes pull multi-gigabyte images and models from registries and hubs over many
        # connections at once: a fixed 64 ports a VM (Cloud NAT's default) runs out, and
        # connections fail with OUT_OF_RESOURCES. Dynamic port allocation gives each VM from
        # NAT_MIN_PORTS up to NAT_MAX_PORTS as it needs (compute.v1 `RouterNat`; it requires
        # endpoint-independent mapping off).
        enable_dynamic_port_allocation=True,
        enable_endpoint_independent_mapping=False,
        min_ports_per_vm=NAT_MIN_PORTS,
        max_ports_per_vm=NAT_MAX_PORTS,
        opts=child,
    )
    return ClusterNetwork(
        network=network.self_link,
        subnetwork=subnet.self_link,
        pods_range_name=PODS_RANGE,
        services_range_name=SERVICES_RANGE,
        node_cidr=spec.subnet_cidr,
        egress=(nat,),
    )
