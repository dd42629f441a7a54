"""Whether GPU nodes in the node subnets reach what they need: AWS's APIs and the image
registries of what the platform installs.

The node subnets are private ones, whose route table sends nothing to an internet gateway
(`gpu_platform.eks.subnets` decides, for the program and preflight alike). Whether a node gets a
public IPv4 address is its subnet's choice, as the launch template sets no network interface
(an EFA pool's lists its interfaces and asks for no address), but in a private subnet such an
address reaches nothing. So a node subnet reaches the internet only through a default route
(0.0.0.0/0) to a NAT gateway, a transit gateway or an appliance. Without one, every AWS API the
nodes and the cluster autoscaler call needs a VPC endpoint in the VPC (with private DNS for the
interface ones, so that the usual host names resolve to it), and images from public registries
cannot be pulled at all.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpu_platform.config import StackConfig
from gpu_platform.eks.subnets import IPV4_DEFAULT_ROUTE, SubnetRouting
from gpu_platform.preflight.findings import Finding


@dataclass(frozen=True)
class Endpoint:
    service: str
    """The last part of `com.amazonaws.<region>.<service>`."""
    kind: str
    """`Interface` or `Gateway`."""
    needed_by: str


# What a GPU node and the cluster autoscaler call, as EKS documents for private clusters.
ENDPOINTS = (
    Endpoint("ec2", "Interface", "the nodes' VPC CNI and the cluster autoscaler"),
    Endpoint("ecr.api", "Interface", "the nodes, pulling EKS's own images"),
    Endpoint("ecr.dkr", "Interface", "the nodes, pulling EKS's own images"),
    Endpoint("s3", "Gateway", "the nodes, pulling image layers from ECR"),
    Endpoint("sts", "Interface", "the cluster autoscaler's AWS credentials"),
    Endpoint("eks-auth", "Interface", "EKS Pod Identity, where the autoscaler gets them"),
    Endpoint("eks", "Interface", "the nodes joining, and the cluster autoscaler"),
    Endpoint("autoscaling", "Interface", "the cluster autoscaler"),
)
# Images the platform installs from public registries: the GPU Operator's from NVIDIA's, the
# cluster autoscaler's from Kubernetes'.
PUBLIC_REGISTRIES = ("nvcr.io", "registry.k8s.io")
# Route targets that carry a node's traffic to the internet without a public address, by the
# prefix of their ids: NAT gateways, transit gateways, network interfaces and instances (an
# appliance's), local gateways.
_EGRESS_TARGETS = ("nat-", "tgw-", "eni-", "i-", "lgw-")


def reachability_findings(
    config: StackConfig, ec2: Any, subnets: Sequence[tuple[Mapping[str, Any], SubnetRouting]]
) -> list[Finding]:
    """One finding for the node subnets' way out, and, where they have none, one for the VPC
    endpoints and one for the public images. `subnets` are the node subnets as EC2 describes
    them, each with the routing its route table gives it (`gpu_platform.eks.subnets.routing_of`)."""
    closed = [s["SubnetId"] for s, routing in subnets if not _has_egress(routing)]
    subject = f"cluster {config.cluster.name} node subnets"
    if not closed:
        return [
            Finding(
                "ok",
                subject,
                "Every node subnet reaches the internet through a default route.",
                "Nothing.",
            )
        ]
    region = config.cluster.region
    vpc = subnets[0][0]["VpcId"]
    present = _endpoint_services(ec2, vpc, region)
    missing = [e for e in ENDPOINTS if e.service not in present]
    listed = ", ".join(closed)
    findings = []
    if missing:
        findings.append(
            Finding(
                "blocking",
                subject,
                f"{listed} have no route to the internet, and VPC {vpc} has no endpoint for "
                + "; ".join(f"{e.service} ({e.needed_by})" for e in missing)
                + ".",
                "Create them: "
                + "; ".join(_create_command(e, vpc, region, closed) for e in missing)
                + ". Or route the subnets' 0.0.0.0/0 through a NAT gateway.",
            )
        )
    else:
        findings.append(
            Finding(
                "ok",
                subject,
                f"{listed} have no route to the internet; VPC {vpc} has an endpoint for every"
                " AWS API the nodes and the cluster autoscaler call.",
                "Nothing.",
            )
        )
    findings.append(
        Finding(
            "warning",
            subject,
            f"{listed} have no route to the internet: images from {', '.join(PUBLIC_REGISTRIES)}"
            " (the GPU Operator's and the cluster autoscaler's) cannot be pulled.",
            "Mirror them into ECR (a pull-through cache rule for each registry) and point the"
            " charts at the mirror through gpu-platform:operator's values; or give the subnets a"
            " NAT gateway.",
        )
    )
    return findings


def _has_egress(routing: SubnetRouting) -> bool:
    return any(
        route.destination == IPV4_DEFAULT_ROUTE
        and route.active
        and route.target.startswith(_EGRESS_TARGETS)
        for route in routing.default_routes
    )


def _endpoint_services(ec2: Any, vpc: str, region: str | None) -> set[str]:
    """The services of the VPC's usable endpoints: available, and for interface endpoints with
    private DNS, without which the usual host names do not reach them."""
    prefix = f"com.amazonaws.{region}."
    found = set()
    for page in ec2.get_paginator("describe_vpc_endpoints").paginate(
        Filters=[{"Name": "vpc-id", "Values": [vpc]}]
    ):
        for endpoint in page["VpcEndpoints"]:
            usable = endpoint.get("State", "").lower() == "available" and (
                endpoint.get("VpcEndpointType") == "Gateway" or endpoint.get("PrivateDnsEnabled")
            )
            if usable and endpoint["ServiceName"].startswith(prefix):
                found.add(endpoint["ServiceName"].removeprefix(prefix))
    return found


def _create_command(
    endpoint: Endpoint, vpc: str, region: str | None, subnets: Sequence[str]
) -> str:
    service = f"com.amazonaws.{region}.{endpoint.service}"
    if endpoint.kind == "Gateway":
        return (
            f"aws ec2 create-vpc-endpoint --vpc-id {vpc} --vpc-endpoint-type Gateway"
            f" --service-name {service} --route-table-ids <the subnets' route tables>"
        )
    return (
        f"aws ec2 create-vpc-endpoint --vpc-id {vpc} --vpc-endpoint-type Interface"
        f" --service-name {service} --subnet-ids {' '.join(subnets)} --private-dns-enabled"
    )
