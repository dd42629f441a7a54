"""Where a new VPC's subnets and NAT gateways go: pure layout, read by the program
(`network.py`) and by `gpu-platform preflight`, which must agree on it."""

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass

from gpu_platform.config import EksNewVpc

# Zones whose subnets EKS refuses for a cluster, by zone id (EKS user guide, network-reqs.adoc,
# "Subnet requirements for clusters"): a zone's name maps to another id in every account.
EKS_UNSUPPORTED_ZONE_IDS = ("use1-az3", "usw1-az2", "cac1-az3")
NEW_VPC_ZONES = 3


@dataclass(frozen=True)
class SubnetPlan:
    zone: str
    private_cidr: str
    public_cidr: str


def subnet_plan(vpc: EksNewVpc, zones: Sequence[str]) -> list[SubnetPlan]:
    """A quarter of the VPC's block for each zone's private subnet (the VPC CNI gives every pod
    an address there), and a sixteenth of the last quarter for each zone's public one."""
    network = ipaddress.IPv4Network(vpc.cidr)
    quarters = list(network.subnets(prefixlen_diff=2))
    public = list(quarters[3].subnets(prefixlen_diff=2))
    return [SubnetPlan(zone, str(quarters[i]), str(public[i])) for i, zone in enumerate(zones)]


def nat_per_zone(vpc: EksNewVpc, protect: bool) -> bool:
    """`natGateways`, else one per zone where the stack is protected (production)."""
    if vpc.nat_gateways is None:
        return protect
    return vpc.nat_gateways == "one-per-zone"
