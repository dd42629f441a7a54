"""Attaching to the existing EKS cluster: the lookup, the Kubernetes provider with exec
authentication, the secret kubeconfig, the kubeconfig-context escape hatch and node subnets."""

from collections.abc import Callable
from typing import Any

import pytest
import yaml

from components.eks.cluster import EksCluster, Subnet, kubeconfig_for, private_subnets
from gpu_platform_cli.offline import Plan
from gpu_platform_cli.stand_ins import aws as stand_in

from .plans import problems_of, with_cluster

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


def test_private_subnets_are_those_without_public_ips() -> None:
    subnets = [Subnet("a", "z1", False), Subnet("b", "z1", True), Subnet("c", "z2", False)]

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


def test_a_cluster_with_only_public_subnets_needs_node_subnets(
    dev_config: Config, failed_plan_for: PlanFor, monkeypatch: pytest.MonkeyPatch
) -> None:
    def public_subnet(args: dict[str, Any]) -> dict[str, Any]:
        return {**stand_in.get_subnet(args), "mapPublicIpOnLaunch": True}

    token = "aws:ec2/getSubnet:getSubnet"
    monkeypatch.setitem(stand_in.INVOKES, token, public_subnet)

    plan = failed_plan_for(dev_config)

    assert "gpu-platform:cluster.nodeSubnetIds" in problems_of(plan)
    assert plan.resources == []
