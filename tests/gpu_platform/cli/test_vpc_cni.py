"""Preflight's check of the VPC CNI for pools whose nodes get EFA-only interfaces: the `vpc-cni`
add-on answered by botocore's Stubber (moto has no add-ons), instance types from EC2's data."""

import copy
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from gpu_platform.cli.findings import Finding
from gpu_platform.cli.preflight_eks import describe_instance_types
from gpu_platform.cli.stack_files import stack_config
from gpu_platform.cli.vpc_cni import vpc_cni_findings
from gpu_platform.config import StackConfig, load_stack_config

SUBJECT = "cluster ml-dev vpc-cni"


def efa_stack(instance_type: str = "p5.48xlarge") -> StackConfig:
    values = copy.deepcopy(stack_config("dev"))
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


def addon(stubber: Stubber, version: str) -> None:
    stubber.add_response(
        "describe_addon",
        {"addon": {"addonName": "vpc-cni", "addonVersion": version}},
        {"clusterName": "ml-dev", "addonName": "vpc-cni"},
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


def load_stack_config_of_dev() -> StackConfig:
    values = stack_config("dev")
    return load_stack_config(
        {k.removeprefix("gpu-platform:"): v for k, v in values.items() if k.startswith("gpu-")}
    )
