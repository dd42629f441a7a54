"""Attaching to the existing EKS cluster: the lookup, the Kubernetes provider with exec
authentication, the secret kubeconfig, the kubeconfig-context escape hatch and node subnets."""

from collections.abc import Callable
from typing import Any

import pytest
import yaml

from gpu_platform.eks.cluster import EksCluster, Subnet, kubeconfig_for, private_subnets
from gpu_platform.eks.subnets import Route, SubnetRouting
from gpu_platform.offline.program import Plan
from gpu_platform.offline.stand_ins import aws as stand_in

from .plans import node_group, problems_of, with_cluster

Config = dict[str, Any]
PlanFor = Callable[[Config], Plan]
PROVIDER = "pulumi:providers:kubernetes"

CLUSTER = EksCluster(
    name="ml-dev",
    region="eu-west-1",
    arn="arn:aws:eks:eu-west-1:111122223333:cluster/ml-dev",
    endpoint="https://ABC.gr7.eu-west-1.eks.amazonaws.com",
    certificate_authority="Q0E=",
    version="1.35",
    status="ACTIVE",
    subnet_ids=("subnet-1",),
)


def test_kubeconfig_reaches_the_endpoint_with_the_clusters_ca() -> None:
    kubeconfig = yaml.safe_load(kubeconfig_for(CLUSTER))

    (cluster,) = kubeconfig["clusters"]
    assert cluster["cluster"] == {
        "server": "https://ABC.gr7.eu-west-1.eks.amazonaws.com",
        "certificate-authority-data": "Q0E=",
    }
    assert kubeconfig["current-context"] == CLUSTER.arn


def test_kubeconfig_gets_its_token_from_aws_eks_get_token() -> None:
    kubeconfig = yaml.safe_load(kubeconfig_for(CLUSTER))

    (user,) = kubeconfig["users"]
    assert user["user"] == {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": "aws",
            "args": [
                "eks",
                "get-token",
                "--cluster-name",
                "ml-dev",
                "--region",
                "eu-west-1",
                "--output",
                "json",
            ],
            "interactiveMode": "Never",
        }
    }


def test_cluster_arn_tells_partition_and_account() -> None:
    assert (CLUSTER.partition, CLUSTER.account_id) == ("aws", "111122223333")


def test_private_subnets_are_those_whose_route_table_reaches_no_internet_gateway() -> None:
    nat = SubnetRouting("rtb-1", False, None, (Route("0.0.0.0/0", "nat-1"),))
    igw = SubnetRouting("rtb-2", False, Route("0.0.0.0/0", "igw-1"), (Route("0.0.0.0/0", "igw-1"),))
    subnets = [Subnet("a", "z1", nat), Subnet("b", "z1", igw), Subnet("c", "z2", nat)]

    assert [s.id for s in private_subnets(subnets)] == ["a", "c"]


def test_program_looks_the_cluster_up_by_name_and_region(dev_plan: Plan) -> None:
    lookups = [i.args for i in dev_plan.invokes if i.token == "aws:eks/getCluster:getCluster"]

    assert lookups == [{"name": "ml-dev", "region": "us-east-1"}]


def test_provider_uses_the_built_kubeconfig_which_is_exported_as_a_secret(dev_plan: Plan) -> None:
    (provider,) = dev_plan.of_type(PROVIDER)
    kubeconfig = yaml.safe_load(dev_plan.outputs["kubeconfig"])

    assert "kubeconfig" in dev_plan.secret_outputs
    assert provider.inputs["kubeconfig"] == dev_plan.outputs["kubeconfig"]
    assert (
        kubeconfig["clusters"][0]["cluster"]["server"]
        == stand_in.get_cluster({"name": "ml-dev", "region": "us-east-1"})["endpoint"]
    )
    assert "context" not in provider.inputs


def test_kubernetes_resources_go_through_the_clusters_provider(dev_plan: Plan) -> None:
    (provider,) = dev_plan.of_type(PROVIDER)
    on_cluster = [r for r in dev_plan.resources if r.custom and r.type.startswith("kubernetes:")]

    assert on_cluster
    assert {r.provider.rsplit("::", 1)[0] for r in on_cluster if r.provider} == {provider.urn}


def test_a_kubeconfig_context_in_config_is_used_instead(
    dev_config: Config, plan_for: PlanFor
) -> None:
    plan = plan_for(with_cluster(dev_config, kubeconfigContext="ml-dev-admin"))

    (provider,) = plan.of_type(PROVIDER)
    assert provider.inputs["context"] == "ml-dev-admin"
    assert "kubeconfig" not in provider.inputs
    assert "kubeconfig" not in plan.outputs


# --- Node subnets: private by their route tables ------------------------------------------------

REGION = "us-east-1"
INTERNET_GATEWAY = "igw-0123456789abcdef0"


def stand_in_subnet(zone: str, public: bool = False) -> str:
    (subnet,) = [
        s for s, (z, p) in stand_in.cluster_subnets(REGION).items() if (z, p) == (zone, public)
    ]
    return subnet


def stand_in_table(subnet: str | None) -> dict[str, Any]:
    """The stand-in route table associated with `subnet`; None: the main table."""
    (table,) = [
        t
        for t in stand_in.route_tables(REGION)
        if any(a["subnetId"] == (subnet or "") for a in t["associations"])
    ]
    return table


def table_id(subnet: str | None) -> str:
    return str(stand_in_table(subnet)["routeTableId"])


def route_to_internet_gateway(
    monkeypatch: pytest.MonkeyPatch, tables: Callable[[dict[str, Any]], bool] = lambda t: True
) -> None:
    """The stand-in route tables that `tables` picks send 0.0.0.0/0 to INTERNET_GATEWAY."""
    original = stand_in.route_tables

    def to_internet_gateway(table: dict[str, Any]) -> dict[str, Any]:
        routes = [{**r, "natGatewayId": "", "gatewayId": INTERNET_GATEWAY} for r in table["routes"]]
        return {**table, "routes": routes}

    monkeypatch.setattr(
        stand_in,
        "route_tables",
        lambda region: [to_internet_gateway(t) if tables(t) else t for t in original(region)],
    )


def test_the_program_reads_the_route_tables_of_the_clusters_subnets(dev_plan: Plan) -> None:
    # `getRouteTables` for the ids of the subnets' own tables, `getRouteTable` for each of them,
    # and for the VPC's main table, which the first zone's private subnet uses.
    lookups = [(i.token, i.args) for i in dev_plan.invokes if "RouteTable" in i.token]
    vpc = stand_in.get_subnet({"id": stand_in_subnet("us-east-1a"), "region": REGION})["vpcId"]
    own = sorted(
        table_id(s) for s in stand_in.cluster_subnets(REGION) if s != stand_in_subnet("us-east-1a")
    )

    assert lookups == [
        (
            "aws:ec2/getRouteTables:getRouteTables",
            {
                "vpcId": vpc,
                "region": REGION,
                "filters": [
                    {
                        "values": list(stand_in.cluster_subnets(REGION)),
                        "name": "association.subnet-id",
                    }
                ],
            },
        ),
        *(
            ("aws:ec2/getRouteTable:getRouteTable", {"region": REGION, "routeTableId": table})
            for table in own
        ),
        (
            "aws:ec2/getRouteTable:getRouteTable",
            {
                "vpcId": vpc,
                "region": REGION,
                "filters": [{"values": ["true"], "name": "association.main"}],
            },
        ),
    ]


def test_a_cluster_with_only_public_subnets_needs_node_subnets(
    dev_config: Config, failed_plan_for: PlanFor, monkeypatch: pytest.MonkeyPatch
) -> None:
    route_to_internet_gateway(monkeypatch)

    plan = failed_plan_for(dev_config)

    problem = problems_of(plan)["gpu-platform:cluster.nodeSubnetIds"]
    assert problem.startswith(
        "private subnets for the GPU nodes: every subnet of cluster ml-dev is public, its route"
        " table sending traffic to an internet gateway ("
    )
    assert (
        f"{stand_in_subnet('us-east-1a')}: route table {table_id(None)} (the VPC's main)"
        f" sends 0.0.0.0/0 to {INTERNET_GATEWAY}"
    ) in problem
    assert (
        f"{stand_in_subnet('us-east-1b')}: route table"
        f" {table_id(stand_in_subnet('us-east-1b'))} sends 0.0.0.0/0 to {INTERNET_GATEWAY}"
    ) in problem
    assert plan.resources == []


def test_subnets_that_assign_no_public_ips_are_still_public_by_their_routes(
    dev_config: Config, failed_plan_for: PlanFor, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_public_ips(args: dict[str, Any]) -> dict[str, Any]:
        return {**stand_in.get_subnet(args), "mapPublicIpOnLaunch": False}

    monkeypatch.setitem(stand_in.INVOKES, "aws:ec2/getSubnet:getSubnet", no_public_ips)
    route_to_internet_gateway(monkeypatch)

    plan = failed_plan_for(dev_config)

    assert "gpu-platform:cluster.nodeSubnetIds" in problems_of(plan)


def test_a_subnet_that_assigns_public_ips_is_used_where_its_routes_keep_it_private(
    dev_config: Config, plan_for: PlanFor, dev_plan: Plan, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Without a route to an internet gateway, a public address reaches nothing.
    def public_ips(args: dict[str, Any]) -> dict[str, Any]:
        return {**stand_in.get_subnet(args), "mapPublicIpOnLaunch": True}

    monkeypatch.setitem(stand_in.INVOKES, "aws:ec2/getSubnet:getSubnet", public_ips)

    plan = plan_for(dev_config)

    assert node_group(plan).inputs["subnetIds"] == node_group(dev_plan).inputs["subnetIds"]


def test_a_subnet_without_a_table_of_its_own_is_public_where_the_main_table_is(
    dev_config: Config, plan_for: PlanFor, monkeypatch: pytest.MonkeyPatch
) -> None:
    main = table_id(None)
    route_to_internet_gateway(monkeypatch, lambda t: t["routeTableId"] == main)

    plan = plan_for(dev_config)

    left_out = plan.outputs["nodeSubnets"]["leftOut"]
    assert {
        "id": stand_in_subnet("us-east-1a"),
        "zone": "us-east-1a",
        "why": (
            f"public: route table {main} (the VPC's main) sends 0.0.0.0/0 to {INTERNET_GATEWAY}"
        ),
    } in left_out
    assert stand_in_subnet("us-east-1a") not in node_group(plan).inputs["subnetIds"]


def test_a_public_subnet_named_in_node_subnet_ids_is_refused(
    dev_config: Config, failed_plan_for: PlanFor
) -> None:
    public = stand_in_subnet("us-east-1a", public=True)
    with_cluster(dev_config, nodeSubnetIds=[stand_in_subnet("us-east-1b"), public])

    plan = failed_plan_for(dev_config)

    igw = stand_in_table(public)["routes"][0]["gatewayId"]
    assert problems_of(plan) == {
        "gpu-platform:cluster.nodeSubnetIds[1]": "a private subnet (GPU nodes must not sit in a"
        f" public one), but its route table {table_id(public)} sends 0.0.0.0/0 to {igw}"
    }
    assert plan.resources == []
