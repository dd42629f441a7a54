"""The stand-in route tables answer as the AWS provider's data sources do: `getRouteTables` the
ids every filter matches, none without failing; `getRouteTable` one table, failing unless
exactly one matches (terraform-provider-aws, internal/service/ec2/vpc_route_tables_data_source.go
and vpc_route_table_data_source.go)."""

import pytest

from gpu_platform.offline.stand_ins import aws

REGION = "us-east-1"


def vpc() -> str:
    return str(
        aws.get_subnet({"id": next(iter(aws.cluster_subnets(REGION))), "region": REGION})["vpcId"]
    )


def test_a_subnet_without_a_table_of_its_own_gets_no_id() -> None:
    found = aws.get_route_tables(
        {
            "vpcId": vpc(),
            "filters": [{"name": "association.subnet-id", "values": ["subnet-0aaa0000aaaa0000a"]}],
            "region": REGION,
        }
    )

    assert found["ids"] == []


def test_the_main_table_is_found_by_its_main_association() -> None:
    found = aws.get_route_table(
        {
            "vpcId": vpc(),
            "filters": [{"name": "association.main", "values": ["true"]}],
            "region": REGION,
        }
    )

    # EC2 names no subnet for the main table's association ("A subnet ID is not returned for an
    # implicit association", EC2 API Reference, RouteTableAssociation).
    assert [(a["subnetId"], a["main"]) for a in found["associations"]] == [("", True)]


def test_a_lookup_of_one_table_fails_where_several_match() -> None:
    with pytest.raises(LookupError):
        aws.get_route_table({"vpcId": vpc(), "region": REGION})
