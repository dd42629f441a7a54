"""Whether a subnet is public or private, decided by its route table as AWS defines it.

EKS: "A public subnet is a subnet with a route table that includes a route to an internet
gateway, whereas a private subnet is a subnet with a route table that doesn't include a route to
an internet gateway" (Amazon EKS User Guide, "View Amazon EKS networking requirements for VPC
and subnets", amazon-eks-user-guide latest/ug/networking/network-reqs.adoc). Whether a subnet
assigns public IPv4 addresses on launch (`MapPublicIpOnLaunch`) does not decide it: a subnet
that assigns none but routes to an internet gateway is public (an Elastic IP or an IPv6 address
makes its instances reachable); a subnet without such a route that assigns them is private, its
instances out of the internet's reach, though AWS bills their public IPv4 addresses.

A subnet's route table is the one explicitly associated with it, else its VPC's main route table:
"If a subnet is not explicitly associated with any route table, it is implicitly associated with
the main route table. This command does not return the subnet ID for implicit associations"
(EC2 API Reference, DescribeRouteTables; likewise the Amazon VPC User Guide, "Subnet route
tables"), so the main table is found by its `Main` association.

Any route to an internet gateway (`igw-`) makes a subnet public, IPv4 or IPv6 (`::/0`), the
default route or a narrower one (which still opens the subnet to that part of the internet), and
in whatever state (the program's lookup does not see route states, and preflight must agree
with it). `::/0` to an egress-only internet gateway (`eigw-`) does not: that gateway
lets instances open IPv6 connections out and "prevents hosts outside of your VPC from initiating
an IPv6 connection" (EC2 API Reference, CreateEgressOnlyInternetGateway), the IPv6 counterpart
of a NAT gateway, which EKS names for private subnets ("a private subnet and its route table
doesn't include a route to a network address translation (NAT) device (IPv4) or an egress-only
gateway (IPv6)", network-reqs.adoc).

Both the program's lookup (`gpu_platform.eks.cluster`) and `gpu-platform preflight` decide here.
"""

from collections.abc import Sequence
from dataclasses import dataclass

IPV4_DEFAULT_ROUTE = "0.0.0.0/0"
DEFAULT_ROUTES = (IPV4_DEFAULT_ROUTE, "::/0")
_INTERNET_GATEWAY = "igw-"


@dataclass(frozen=True)
class Route:
    destination: str
    """An IPv4 or IPv6 CIDR block (`0.0.0.0/0`, `::/0`) or a prefix list id."""
    target: str
    """The id of where the route sends traffic: `igw-...`, `nat-...`, `eigw-...`, `tgw-...`."""
    active: bool = True
    """False for a route EC2 calls a `blackhole`, whose target is gone (EC2 API Reference,
    `Route`: "the route's target isn't available"); it sends nothing. Only preflight sees route
    states: whether a subnet is public does not depend on them."""


@dataclass(frozen=True)
class RouteTable:
    id: str
    vpc_id: str
    main: bool
    """The VPC's main route table, which every subnet without a table of its own uses."""
    subnet_ids: tuple[str, ...] = ()
    """The subnets explicitly associated with it."""
    routes: tuple[Route, ...] = ()


@dataclass(frozen=True)
class SubnetRouting:
    """The route table a subnet uses, and the routes that make it public or private."""

    table_id: str
    implicit: bool
    """The VPC's main table, the subnet having no table of its own."""
    internet_route: Route | None
    """A route to an internet gateway: what makes the subnet public."""
    default_routes: tuple[Route, ...] = ()

    @property
    def public(self) -> bool:
        return self.internet_route is not None

    @property
    def reason(self) -> str:
        """`route table rtb-1 sends 0.0.0.0/0 to igw-1`: the routes that decide."""
        table = f"route table {self.table_id}" + (" (the VPC's main)" if self.implicit else "")
        if self.internet_route is not None:
            return f"{table} {_sends([self.internet_route])}"
        if self.default_routes:
            return f"{table} {_sends(self.default_routes)}"
        return f"{table} has no default route"

    def explanation(self) -> str:
        """`public: route table rtb-1 sends 0.0.0.0/0 to igw-1`, or `private: ...`."""
        return f"{'public' if self.public else 'private'}: {self.reason}"


def routing_of(subnet_id: str, vpc_id: str, tables: Sequence[RouteTable]) -> SubnetRouting:
    """The subnet's routing among `tables` (its own, and its VPC's main one where it has none).

    Raises LookupError if neither is among them: every VPC has a main route table."""
    own = next((t for t in tables if subnet_id in t.subnet_ids), None)
    table = own or next((t for t in tables if t.main and t.vpc_id == vpc_id), None)
    if table is None:
        raise LookupError(f"no route table of subnet {subnet_id} or of VPC {vpc_id}")
    # Default routes first, so that the one the explanation names is the default where any is.
    routes = sorted(table.routes, key=lambda r: r.destination not in DEFAULT_ROUTES)
    return SubnetRouting(
        table_id=table.id,
        implicit=own is None,
        internet_route=next((r for r in routes if r.target.startswith(_INTERNET_GATEWAY)), None),
        default_routes=tuple(r for r in routes if r.destination in DEFAULT_ROUTES),
    )


def _sends(routes: Sequence[Route]) -> str:
    return "sends " + ", ".join(f"{r.destination} to {r.target}" for r in routes)
