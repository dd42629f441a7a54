"""Public or private by the route table: the one associated with the subnet, else the VPC's main
one (Amazon VPC User Guide, "Subnet route tables"); public where it routes to an internet
gateway (Amazon EKS User Guide, network-reqs.adoc), whatever the subnet assigns on launch."""

import pytest

from gpu_platform.eks.subnets import Route, RouteTable, routing_of

SUBNET = "subnet-0aaa0000aaaa0000a"
VPC = "vpc-0123456789abcdef0"
TO_INTERNET_GATEWAY = Route("0.0.0.0/0", "igw-0123456789abcdef0")
TO_NAT_GATEWAY = Route("0.0.0.0/0", "nat-0123456789abcdef0")


def own_table(*routes: Route, table_id: str = "rtb-0000000000000own0") -> RouteTable:
    return RouteTable(table_id, VPC, main=False, subnet_ids=(SUBNET,), routes=routes)


def main_table(*routes: Route, vpc: str = VPC) -> RouteTable:
    return RouteTable("rtb-000000000000main0", vpc, main=True, routes=routes)


def test_a_table_of_its_own_routing_to_an_internet_gateway_makes_a_subnet_public() -> None:
    routing = routing_of(SUBNET, VPC, [own_table(TO_INTERNET_GATEWAY), main_table()])

    assert routing.public
    assert routing.explanation() == (
        "public: route table rtb-0000000000000own0 sends 0.0.0.0/0 to igw-0123456789abcdef0"
    )


def test_the_main_table_routing_to_an_internet_gateway_makes_a_subnet_without_one_public() -> None:
    routing = routing_of(SUBNET, VPC, [main_table(TO_INTERNET_GATEWAY)])

    assert routing.public
    assert routing.explanation() == (
        "public: route table rtb-000000000000main0 (the VPC's main) sends 0.0.0.0/0 to"
        " igw-0123456789abcdef0"
    )


def test_a_default_route_to_a_nat_gateway_keeps_a_subnet_private() -> None:
    routing = routing_of(SUBNET, VPC, [own_table(TO_NAT_GATEWAY)])

    assert not routing.public
    assert routing.explanation() == (
        "private: route table rtb-0000000000000own0 sends 0.0.0.0/0 to nat-0123456789abcdef0"
    )


def test_ipv6_egress_through_an_egress_only_gateway_keeps_a_subnet_private() -> None:
    # An egress-only internet gateway lets no IPv6 connection in (EC2 API Reference,
    # CreateEgressOnlyInternetGateway).
    routes = (TO_NAT_GATEWAY, Route("::/0", "eigw-0123456789abcdef0"))

    routing = routing_of(SUBNET, VPC, [own_table(*routes)])

    assert not routing.public
    assert routing.explanation() == (
        "private: route table rtb-0000000000000own0 sends 0.0.0.0/0 to nat-0123456789abcdef0,"
        " ::/0 to eigw-0123456789abcdef0"
    )


def test_ipv6_routed_to_an_internet_gateway_makes_a_subnet_public() -> None:
    routes = (TO_NAT_GATEWAY, Route("::/0", "igw-0123456789abcdef0"))

    routing = routing_of(SUBNET, VPC, [own_table(*routes)])

    assert routing.internet_route == Route("::/0", "igw-0123456789abcdef0")


def test_a_table_without_a_default_route_keeps_a_subnet_private() -> None:
    routing = routing_of(SUBNET, VPC, [own_table(Route("10.1.0.0/16", "pcx-0123456789abcdef0"))])

    assert not routing.public
    assert routing.explanation() == (
        "private: route table rtb-0000000000000own0 has no default route"
    )


def test_a_narrower_route_to_an_internet_gateway_makes_a_subnet_public_too() -> None:
    # "a route to an internet gateway" (network-reqs.adoc), not only the default one.
    routes = (TO_NAT_GATEWAY, Route("198.51.100.0/24", "igw-0123456789abcdef0"))

    routing = routing_of(SUBNET, VPC, [own_table(*routes)])

    assert routing.explanation() == (
        "public: route table rtb-0000000000000own0 sends 198.51.100.0/24 to igw-0123456789abcdef0"
    )


def test_the_default_route_is_the_one_named_where_several_go_to_an_internet_gateway() -> None:
    routes = (Route("198.51.100.0/24", "igw-0123456789abcdef0"), TO_INTERNET_GATEWAY)

    routing = routing_of(SUBNET, VPC, [own_table(*routes)])

    assert routing.internet_route == TO_INTERNET_GATEWAY


def test_a_table_of_its_own_overrides_the_main_table() -> None:
    tables = [main_table(TO_INTERNET_GATEWAY), own_table(TO_NAT_GATEWAY)]

    routing = routing_of(SUBNET, VPC, tables)

    assert (routing.table_id, routing.implicit, routing.public) == (
        "rtb-0000000000000own0",
        False,
        False,
    )


def test_a_private_main_table_does_not_save_a_subnet_whose_own_table_is_public() -> None:
    tables = [main_table(TO_NAT_GATEWAY), own_table(TO_INTERNET_GATEWAY)]

    assert routing_of(SUBNET, VPC, tables).public


def test_only_the_subnets_own_vpcs_main_table_applies() -> None:
    other_vpc = main_table(TO_INTERNET_GATEWAY, vpc="vpc-0fff0000ffff0000f")

    with pytest.raises(LookupError):
        routing_of(SUBNET, VPC, [other_vpc])
