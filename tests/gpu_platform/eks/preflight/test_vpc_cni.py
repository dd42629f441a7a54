"""Preflight's checks of the VPC CNI: for pools whose nodes get EFA-only interfaces, and whether
its network policy agent enforces the platform's NetworkPolicies. The `vpc-cni` add-on answered
by botocore's Stubber (moto has no add-ons), instance types from EC2's data."""

import copy
import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber
from moto import mock_aws

from gpu_platform.config import StackConfig, load_stack_config
from gpu_platform.eks.preflight.checks import describe_instance_types
from gpu_platform.eks.preflight.vpc_cni import network_policy_findings, vpc_cni_findings
from gpu_platform.preflight.findings import Finding
from gpu_platform.stack_files import stack_config
from tests.iam_policy import Request, allowed
from tests.repository import ROOT

SUBJECT = "cluster ml-dev vpc-cni"


def efa_stack(instance_type: str = "p5.48xlarge", stack: str = "dev") -> StackConfig:
    values = copy.deepcopy(stack_config(stack))
    values["gpu-platform:pools"][0].update(
        instanceTypes=[instance_type], accelerator=None, gpusPerNode=None, zones=["us-east-1a"]
    )
    values["gpu-platform:pools"][0]["aws"]["efa"] = True
    return load_stack_config(
        {k.removeprefix("gpu-platform:"): v for k, v in values.items() if k.startswith("gpu-")}
    )


@pytest.fixture(scope="module")
def described() -> dict[str, dict[str, Any]]:
    with mock_aws():
        ec2 = boto3.client("ec2", region_name="us-east-1")
        return describe_instance_types(ec2, ["p5.48xlarge", "g6.8xlarge"])


@pytest.fixture
def eks() -> Iterator[tuple[Any, Stubber]]:
    client = boto3.client(
        "eks", region_name="us-east-1", aws_access_key_id="a", aws_secret_access_key="b"
    )
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


def addon(stubber: Stubber, version: str, cluster: str = "ml-dev") -> None:
    stubber.add_response(
        "describe_addon",
        {"addon": {"addonName": "vpc-cni", "addonVersion": version}},
        {"clusterName": cluster, "addonName": "vpc-cni"},
    )


def test_a_cni_before_the_efa_only_fix_blocks(eks: tuple[Any, Stubber], described: Any) -> None:
    client, stubber = eks
    addon(stubber, "v1.18.4-eksbuild.1")

    (finding,) = vpc_cni_findings(efa_stack(), client, described)

    # aws/amazon-vpc-cni-k8s v1.18.4's pkg/awsutils/awsutils.go still reads every interface's
    # local-ipv4s from IMDS; v1.18.5 is the first tag whose GetENIMetadata skips interfaces
    # without them (#3047, brought to release-1.18 by #3049, 500236a80).
    assert (finding.severity, finding.message) == (
        "blocking",
        "The vpc-cni add-on is v1.18.4-eksbuild.1: the nodes of t4-shared get EFA-only"
        " interfaces, which it must ignore, and releases before v1.18.5 fail on them"
        " (aws/amazon-vpc-cni-k8s#3047).",
    )


def test_the_first_fixed_cni_is_enough(eks: tuple[Any, Stubber], described: Any) -> None:
    client, stubber = eks
    addon(stubber, "v1.18.5-eksbuild.1")

    (finding,) = vpc_cni_findings(efa_stack(), client, described)

    assert finding == Finding(
        "ok",
        SUBJECT,
        "The vpc-cni add-on is v1.18.5-eksbuild.1, which ignores the EFA-only interfaces of"
        " t4-shared.",
        "Nothing.",
    )


def test_a_cni_that_is_no_add_on_is_a_warning(eks: tuple[Any, Stubber], described: Any) -> None:
    client, stubber = eks
    stubber.add_client_error("describe_addon", "ResourceNotFoundException", http_status_code=404)

    (finding,) = vpc_cni_findings(efa_stack(), client, described)

    assert finding.severity == "warning"
    assert finding.message.startswith("The VPC CNI is not an EKS add-on")


def test_pools_without_efa_only_interfaces_are_not_checked(
    eks: tuple[Any, Stubber], described: Any
) -> None:
    client, _ = eks

    # A g6.8xlarge has one EFA: the node's primary interface, which carries IP traffic.
    assert vpc_cni_findings(efa_stack("g6.8xlarge"), client, described) == []
    assert vpc_cni_findings(load_stack_config_of_dev(), client, described) == []


def test_a_karpenter_pool_of_one_efa_gets_an_efa_only_interface_and_is_checked(
    eks: tuple[Any, Stubber], described: Any
) -> None:
    client, stubber = eks
    config = efa_stack("g6.8xlarge", "karpenter-dev")
    addon(stubber, "v1.18.4-eksbuild.1", config.cluster.name)

    # Karpenter launches no `efa` type: its EC2NodeClass's one EFA is an `efa-only` at card 0,
    # device 1, beside an ordinary primary (the CRD's interfaceType enum {interface,efa-only},
    # aws/karpenter-provider-aws pkg/apis/v1/ec2nodeclass.go at v1.14.1), so even a node of one
    # EFA has an interface without IP information, which v1.18.4 fails on.
    (finding,) = vpc_cni_findings(config, client, described)

    assert (finding.severity, finding.message) == (
        "blocking",
        f"The vpc-cni add-on is v1.18.4-eksbuild.1: the nodes of {config.pools[0].name} get"
        " EFA-only interfaces, which it must ignore, and releases before v1.18.5 fail on them"
        " (aws/amazon-vpc-cni-k8s#3047).",
    )


def load_stack_config_of_dev(install_prometheus_stack: bool = False) -> StackConfig:
    values = copy.deepcopy(stack_config("dev"))
    if install_prometheus_stack:
        values.setdefault("gpu-platform:monitoring", {})["installPrometheusStack"] = True
    return load_stack_config(
        {k.removeprefix("gpu-platform:"): v for k, v in values.items() if k.startswith("gpu-")}
    )


# --- The network policy agent ------------------------------------------------------------------

POLICIES = "cluster ml-dev network policies"


def with_prometheus() -> StackConfig:
    """The dev stack with the Prometheus stack the platform's NetworkPolicies guard."""
    return load_stack_config_of_dev(install_prometheus_stack=True)


def configured(stubber: Stubber, values: str | None) -> None:
    answer: dict[str, Any] = {"addonName": "vpc-cni", "addonVersion": "v1.21.1-eksbuild.8"}
    if values is not None:
        answer["configurationValues"] = values
    stubber.add_response(
        "describe_addon", {"addon": answer}, {"clusterName": "ml-dev", "addonName": "vpc-cni"}
    )


@pytest.mark.parametrize(
    "values",
    # EKS user guide, cni-network-policy-configure.adoc: `{ "enableNetworkPolicy": "true" }`;
    # EKS takes configuration values as JSON or YAML (botocore EKS CreateAddon
    # `configurationValues`: "the schema returned by DescribeAddonConfiguration").
    # A boolean renders the same flag, `--enable-network-policy=true` (aws/amazon-vpc-cni-k8s
    # v1.21.1 charts/aws-vpc-cni/templates/daemonset.yaml: `{{ .Values.enableNetworkPolicy }}`).
    [
        '{"enableNetworkPolicy": "true"}',
        'enableNetworkPolicy: "true"\nenv: {}',
        '{"enableNetworkPolicy": true}',
        "enableNetworkPolicy: true",
    ],
)
def test_an_agent_turned_on_enforces_them(eks: tuple[Any, Stubber], values: str) -> None:
    client, stubber = eks
    configured(stubber, values)

    assert network_policy_findings(with_prometheus(), client) == [
        Finding(
            "ok",
            POLICIES,
            "The vpc-cni add-on enforces NetworkPolicies (enableNetworkPolicy: true).",
            "Nothing.",
        )
    ]


def test_an_agent_left_off_warns_and_says_how_to_turn_it_on(eks: tuple[Any, Stubber]) -> None:
    client, stubber = eks
    # EKS's default: no configuration values; the add-on's chart then renders
    # `--enable-network-policy=false` (aws/amazon-vpc-cni-k8s v1.21.1
    # charts/aws-vpc-cni/values.yaml `enableNetworkPolicy: "false"`).
    configured(stubber, '{"env": {"WARM_IP_TARGET": "5"}}')

    assert network_policy_findings(with_prometheus(), client) == [
        Finding(
            "warning",
            POLICIES,
            "The vpc-cni add-on's network policy agent is off (enableNetworkPolicy not true), so"
            " the NetworkPolicies that keep tenants' pods from Prometheus (every tenant's series,"
            " no authentication) and Alertmanager (silences, no authentication) are accepted and"
            " not enforced, unless another network plugin enforces them.",
            "aws eks update-addon --cluster-name ml-dev --addon-name vpc-cni --resolve-conflicts"
            ' PRESERVE --configuration-values \'{"env": {"WARM_IP_TARGET": "5"},'
            ' "enableNetworkPolicy": "true"}\' (EKS user guide, cni-network-policy-configure.adoc;'
            " nodes need kernel 5.10 or later).",
        )
    ]


def test_a_cni_that_is_no_add_on_leaves_enforcement_unknown(eks: tuple[Any, Stubber]) -> None:
    client, stubber = eks
    stubber.add_client_error("describe_addon", "ResourceNotFoundException", http_status_code=404)

    (finding,) = network_policy_findings(with_prometheus(), client)

    # The network policy agent's container in the add-on's DaemonSet
    # (aws/amazon-vpc-cni-k8s v1.21.1 charts/aws-vpc-cni/templates/daemonset.yaml).
    assert finding.severity == "warning"
    assert "aws-eks-nodeagent container of the aws-node DaemonSet" in finding.action


def test_without_the_prometheus_stack_there_is_nothing_to_enforce(
    eks: tuple[Any, Stubber],
) -> None:
    client, _ = eks

    assert network_policy_findings(load_stack_config_of_dev(), client) == []


def test_a_refused_read_of_the_add_on_warns_under_the_preview_role(
    eks: tuple[Any, Stubber],
) -> None:
    # The EKS preview role's policy allows eks:DescribeAddon on the node monitoring agent's
    # add-on only (the add-on ARN: `arn:aws:eks:<region>:<account>:addon/<cluster>/<addon>/<id>`,
    # Service Authorization Reference, Amazon EKS, resource type `addon`).
    preview = json.loads((ROOT / "docs" / "iam" / "eks-preview-policy.json").read_text())
    role = {
        "aws:PrincipalAccount": "111111111111",
        "aws:PrincipalTag/gpu-platform-cluster": "ml-dev",
    }
    addon_arn = (
        "arn:aws:eks:us-east-1:111111111111:addon/ml-dev/{}/0ac9a1c2-0000-4000-8000-000000000000"
    )
    assert allowed(
        Request("eks:DescribeAddon", addon_arn.format("eks-node-monitoring-agent"), role), [preview]
    )
    assert not allowed(Request("eks:DescribeAddon", addon_arn.format("vpc-cni"), role), [preview])
    client, stubber = eks
    stubber.add_client_error("describe_addon", "AccessDeniedException", http_status_code=403)

    (finding,) = network_policy_findings(with_prometheus(), client)

    assert finding.severity == "warning"
    assert finding.message.endswith("eks:DescribeAddon on the vpc-cni add-on was refused.")
    assert "eks:DescribeAddon on arn:aws:eks:<region>:<account>:addon/ml-dev/vpc-cni/*" in (
        finding.action
    )


def test_another_failure_of_the_read_is_not_taken_for_a_refusal(eks: tuple[Any, Stubber]) -> None:
    client, stubber = eks
    stubber.add_client_error("describe_addon", "ServerException", http_status_code=500)

    with pytest.raises(ClientError):
        network_policy_findings(with_prometheus(), client)
