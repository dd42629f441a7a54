"""Contract: every node group and launch template the program declares is a request EKS and EC2
accept by botocore's service models, and a node group created from it in moto's EKS keeps its
taints, labels and scaling."""

import copy
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from gpu_platform.offline.program import Plan, run_program
from gpu_platform.stack_files import stack_config
from tests.stack_variants import with_quota_for_any_pool

from .aws_api import create_launch_template_request, create_nodegroup_request, request_problems
from .new_cluster_api import requests_for
from .plans import (
    LAUNCH_TEMPLATE,
    NODE_GROUP,
    mig_pool,
    on_bottlerocket,
    with_aws_options,
    with_extra_pool,
    with_pool,
)

Config = dict[str, Any]
REGION = "us-east-1"

VARIANTS: dict[str, Callable[[Config], Any]] = {
    "dev": lambda c: c,
    "bottlerocket on arm": lambda c: (
        on_bottlerocket(c),
        with_pool(c, instanceTypes=["g5g.xlarge"], sharing={"mode": "exclusive"}),
    ),
    "capacity block": lambda c: (
        with_pool(
            c,
            capacity="capacity-block",
            instanceTypes=["p5.48xlarge"],
            accelerator=None,
            gpusPerNode=None,
            zones=["us-east-1a"],
        ),
        with_aws_options(c, capacityReservationId="cr-0123456789abcdef0"),
    ),
    "mig, pinned release, extra labels and taints, percentage updates": lambda c: with_extra_pool(
        c,
        **mig_pool(
            min=1,
            labels={"team": "vision"},
            taints=[{"key": "team", "value": "vision", "effect": "PreferNoSchedule"}],
            aws={"amiReleaseVersion": "1.35.6-20260625", "maxUnavailablePercent": 50},
        ),
    ),
    "efa training pool": lambda c: (
        with_pool(
            c,
            instanceTypes=["p5.48xlarge"],
            accelerator=None,
            gpusPerNode=None,
            sharing={"mode": "exclusive"},
            zones=["us-east-1a"],
        ),
        with_aws_options(c, efa=True),
    ),
    "per-zone node groups": lambda c: (
        with_pool(c, zones=["us-east-1a", "us-east-1b"]),
        with_aws_options(c, nodeGroupPerZone=True),
    ),
    "repair threshold by count, surging updates": lambda c: with_aws_options(
        c, nodeRepairMaxUnhealthyNodes=1, updateStrategy="default"
    ),
    "second hop, own node role": lambda c: with_aws_options(
        c,
        metadataHopLimit=2,
        nodeRoleArn="arn:aws:iam::123456789012:role/gpu-nodes",
    ),
}


@pytest.fixture(scope="module")
def plans() -> dict[str, Plan]:
    """One plan per variant of the dev stack, shared by the module's tests."""
    plans = {}
    for name, change in VARIANTS.items():
        config = with_quota_for_any_pool(copy.deepcopy(stack_config("dev")))
        change(config)
        plans[name] = run_program("dev", config=config)
    return plans


@pytest.fixture(scope="module")
def moto_eks() -> Iterator[tuple[Any, Any, list[str]]]:
    """moto's EKS and EC2 with an ACTIVE cluster `ml-dev` in two subnets."""
    with mock_aws():
        ec2 = boto3.client("ec2", region_name=REGION)
        eks = boto3.client("eks", region_name=REGION)
        vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
        subnets = [
            ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.0.{i}.0/24", AvailabilityZone=zone)[
                "Subnet"
            ]["SubnetId"]
            for i, zone in enumerate(("us-east-1a", "us-east-1b"))
        ]
        eks.create_cluster(
            name="ml-dev",
            version="1.35",
            roleArn="arn:aws:iam::123456789012:role/ml-dev-cluster",
            resourcesVpcConfig={"subnetIds": subnets},
        )
        yield eks, ec2, subnets


REQUESTS = {
    NODE_GROUP: ("eks", "CreateNodegroup", create_nodegroup_request),
    LAUNCH_TEMPLATE: ("ec2", "CreateLaunchTemplate", create_launch_template_request),
}


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("type_", REQUESTS)
def test_declared_resources_are_requests_the_api_accepts(
    plans: dict[str, Plan], variant: str, type_: str
) -> None:
    service, operation, translate = REQUESTS[type_]
    resources = plans[variant].of_type(type_)
    assert resources

    for resource in resources:
        request = translate(resource.name, resource.inputs)
        assert request_problems(service, operation, request) == [], resource.name


@pytest.mark.parametrize("variant", VARIANTS)
def test_node_groups_keep_taints_labels_and_scaling_in_moto_eks(
    plans: dict[str, Plan], moto_eks: tuple[Any, Any, list[str]], variant: str
) -> None:
    eks, ec2, subnets = moto_eks
    # A pool's node groups (one, or one per zone) share its launch template.
    created_templates = {
        template.parent: ec2.create_launch_template(
            **{
                **create_launch_template_request(template.name, template.inputs),
                "LaunchTemplateName": f"v{list(VARIANTS).index(variant)}-{template.name}",
            }
        )["LaunchTemplate"]
        for template in plans[variant].of_type(LAUNCH_TEMPLATE)
    }
    for group in plans[variant].of_type(NODE_GROUP):
        created_template = created_templates[group.parent]
        request = create_nodegroup_request(group.name, group.inputs)
        request.update(
            nodegroupName=f"v{list(VARIANTS).index(variant)}-{group.name}",
            subnets=subnets,
            launchTemplate={
                "id": created_template["LaunchTemplateId"],
                "version": str(created_template["LatestVersionNumber"]),
            },
        )

        eks.create_nodegroup(**request)
        created = eks.describe_nodegroup(
            clusterName="ml-dev", nodegroupName=request["nodegroupName"]
        )["nodegroup"]

        assert created["taints"] == request["taints"]
        assert created["labels"] == request["labels"]
        assert created["scalingConfig"] == request["scalingConfig"]
        assert (created["amiType"], created["capacityType"], created["instanceTypes"]) == (
            request["amiType"],
            request["capacityType"],
            request["instanceTypes"],
        )
        assert created["launchTemplate"]["id"] == created_template["LaunchTemplateId"]


def test_the_node_monitoring_agent_add_on_is_a_request_eks_accepts(plans: dict[str, Plan]) -> None:
    # Its `configurationValues` (the DCGM server's tolerations) and no conflict resolution, which
    # CreateAddon and UpdateAddon leave optional (botocore's EKS model).
    (addon,) = plans["dev"].of_type("aws:eks/addon:Addon")

    requests = requests_for(addon)

    assert [operation for _, operation, _ in requests] == ["CreateAddon", "UpdateAddon"]
    assert "configurationValues" in requests[0][2]
    for service, operation, params in requests:
        assert request_problems(service, operation, params) == [], operation


def test_the_contract_check_catches_what_eks_would_refuse(plans: dict[str, Plan]) -> None:
    (group,) = plans["dev"].of_type(NODE_GROUP)
    request = create_nodegroup_request(group.name, group.inputs)
    request["capacityType"] = "PREEMPTIBLE"
    request["labels"] = {**request["labels"], "x" * 64: "too long a key"}
    request["scalingConfig"] = {**request["scalingConfig"], "maxSize": "3"}
    del request["nodeRole"]

    problems = "\n".join(request_problems("eks", "CreateNodegroup", request))

    assert "PREEMPTIBLE" in problems
    assert "above the maximum 63" in problems
    assert "maxSize" in problems
    assert "nodeRole" in problems


def test_the_contract_check_knows_the_repair_actions_eks_has(plans: dict[str, Plan]) -> None:
    # botocore's EKS model, RepairAction: Replace, Reboot, NoAction; no pod restart.
    (group,) = plans["dev"].of_type(NODE_GROUP)
    request = create_nodegroup_request(group.name, group.inputs)
    request["nodeRepairConfig"]["nodeRepairConfigOverrides"][0]["repairAction"] = "RestartPod"

    problems = request_problems("eks", "CreateNodegroup", request)

    assert problems == [
        "CreateNodegroup.nodeRepairConfig.nodeRepairConfigOverrides[0].repairAction:"
        " 'RestartPod' is not one of ['Replace', 'Reboot', 'NoAction']"
    ]


def test_the_translation_refuses_an_input_it_does_not_know() -> None:
    with pytest.raises(KeyError, match="warmPoolConfig"):
        create_nodegroup_request("x", {"warmPoolConfig": {"maxGroupPreparedCapacity": 1}})
