"""The network of the created cluster: VPC-native ranges, private access to Google APIs, and
Cloud NAT as the only way out for nodes without external addresses."""

from collections.abc import Callable
from typing import Any

from gpu_platform.offline.program import Plan

from .plans import NETWORK, ROUTER_NAT, SUBNETWORK, cluster, with_gcp

Config = dict[str, Any]


def test_the_network_has_no_subnet_but_the_clusters(gke_new_plan: Plan) -> None:
    (network,) = gke_new_plan.of_type(NETWORK)
    assert network.inputs["autoCreateSubnetworks"] is False


def test_the_subnet_gives_pods_and_services_their_secondary_ranges(gke_new_plan: Plan) -> None:
    (subnet,) = gke_new_plan.of_type(SUBNETWORK)
    assert subnet.inputs["ipCidrRange"] == "10.0.0.0/20"
    assert subnet.inputs["secondaryIpRanges"] == [
        {"rangeName": "pods", "ipCidrRange": "10.16.0.0/14"},
        {"rangeName": "services", "ipCidrRange": "10.20.0.0/20"},
    ]
    assert subnet.inputs["privateIpGoogleAccess"] is True
    policy = cluster(gke_new_plan).inputs["ipAllocationPolicy"]
    assert policy["clusterSecondaryRangeName"] == "pods"
    assert policy["servicesSecondaryRangeName"] == "services"


def test_cloud_nat_serves_every_range_of_the_subnet(gke_new_plan: Plan) -> None:
    (subnet,) = gke_new_plan.of_type(SUBNETWORK)
    (nat,) = gke_new_plan.of_type(ROUTER_NAT)
    assert nat.inputs["sourceSubnetworkIpRangesToNat"] == "LIST_OF_SUBNETWORKS"
    assert nat.inputs["subnetworks"] == [
        {"name": subnet.computed_outputs["selfLink"], "sourceIpRangesToNats": ["ALL_IP_RANGES"]}
    ]


def test_cloud_nat_allocates_ports_to_nodes_as_they_need_them(gke_new_plan: Plan) -> None:
    # compute.v1 `RouterNat.enableDynamicPortAllocation`: a VM gets minPortsPerVm, growing to
    # maxPortsPerVm (powers of two), which endpoint-independent mapping would forbid; without
    # it every VM has a fixed 64 ports.
    (nat,) = gke_new_plan.of_type(ROUTER_NAT)
    assert nat.inputs["enableDynamicPortAllocation"] is True
    assert nat.inputs["enableEndpointIndependentMapping"] is False
    assert (nat.inputs["minPortsPerVm"], nat.inputs["maxPortsPerVm"]) == (64, 4096)


def test_the_cluster_and_its_nodes_wait_for_the_nat(gke_new_plan: Plan) -> None:
    (nat,) = gke_new_plan.of_type(ROUTER_NAT)
    assert nat.urn in cluster(gke_new_plan).dependencies


def test_an_existing_network_is_used_as_given_and_nothing_is_created(
    gke_new_config: Config, plan_for: Callable[[Config], Plan]
) -> None:
    config = with_gcp(
        gke_new_config,
        existingNetwork={
            "network": "shared",
            "subnetwork": "gke-us-central1",
            "podsRangeName": "gke-pods",
            "servicesRangeName": "gke-services",
        },
    )

    plan = plan_for(config)

    inputs = cluster(plan).inputs
    assert (inputs["network"], inputs["subnetwork"]) == ("shared", "gke-us-central1")
    assert inputs["ipAllocationPolicy"]["clusterSecondaryRangeName"] == "gke-pods"
    assert not plan.of_type(NETWORK) and not plan.of_type(ROUTER_NAT)


def test_an_existing_subnets_primary_range_is_an_authorized_network(
    gke_new_config: Config, plan_for: Callable[[Config], Plan]
) -> None:
    # With authorized networks held on the private endpoint, a node outside them cannot reach
    # the control plane (Network Analyzer, "GKE cluster needs extended authorized range": "The
    # nodes created in the extended subnet range won't be able to communicate with the GKE
    # control plane"). The subnet's range is looked up (compute.v1 `Subnetwork.ipCidrRange`).
    existing = {
        "network": "shared",
        "subnetwork": "gke-us-central1",
        "podsRangeName": "gke-pods",
        "servicesRangeName": "gke-services",
    }

    plan = plan_for(with_gcp(gke_new_config, existingNetwork=existing))

    (lookup,) = [i for i in plan.invokes if i.token == "gcp:compute/getSubnetwork:getSubnetwork"]
    assert lookup.args == {
        "name": "gke-us-central1",
        "project": "ml-platform-dev",
        "region": "us-central1",
    }
    authorized = cluster(plan).inputs["masterAuthorizedNetworksConfig"]
    assert authorized["cidrBlocks"][0] == {
        "cidrBlock": lookup.result["ipCidrRange"],
        "displayName": "cluster nodes",
    }
    assert authorized["privateEndpointEnforcementEnabled"] is True


def test_flow_logs_record_half_the_flows_by_default(gke_new_plan: Plan) -> None:
    # compute.v1 `SubnetworkLogConfig`: flowSampling 0 to 1; 0.5 is what Google Cloud enables.
    (subnet,) = gke_new_plan.of_type(SUBNETWORK)

    assert subnet.inputs["logConfig"] == {
        "aggregationInterval": "INTERVAL_5_SEC",
        "flowSampling": 0.5,
        "metadata": "INCLUDE_ALL_METADATA",
    }


def test_a_flow_log_sampling_of_zero_turns_flow_logs_off(
    gke_new_config: Config, plan_for: Callable[[Config], Plan]
) -> None:
    plan = plan_for(with_gcp(gke_new_config, network={"flowLogSampling": 0}))

    (subnet,) = plan.of_type(SUBNETWORK)
    assert "logConfig" not in subnet.inputs
