"""The EKS GPU node group in the real program: IAM role, launch template and managed node group,
as the program declares them for the dev stack and variations of it."""

import json
from collections.abc import Callable
from typing import Any

import pytest

from gpu_platform.eks.node_group import CNI_POLICY, DESIRED_SIZE, NODE_POLICIES
from gpu_platform.offline.program import Plan
from gpu_platform.offline.stand_ins import aws as stand_in

from .plans import (
    COMPONENT,
    LAUNCH_TEMPLATE,
    NODE_GROUP,
    component,
    launch_template,
    mig_pool,
    node_group,
    on_bottlerocket,
    problems_of,
    with_aws_options,
    with_cluster,
    with_extra_pool,
    with_pool,
)

# Its tests plan the same configs again and again, and change the program only through the
# stand-ins' answers.
pytestmark = pytest.mark.shared_plans

Config = dict[str, Any]
PlanFor = Callable[[Config], Plan]
ROLE = "aws:iam/role:Role"
ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"


def private_subnets_in(*zones: str) -> list[str]:
    """The stand-in cluster's private subnets in these zones of us-east-1."""
    subnets = stand_in.cluster_subnets("us-east-1").items()
    return [s for s, (zone, public) in subnets if zone in zones and not public]


# --- The component and its children ------------------------------------------------------------


def test_each_pool_is_one_component_parenting_its_resources(dev_plan: Plan) -> None:
    (group,) = dev_plan.of_type(COMPONENT)
    children = {r.type for r in dev_plan.children_of(group)}

    assert group.name == "t4-shared"
    assert {ROLE, ATTACHMENT, LAUNCH_TEMPLATE, NODE_GROUP, "aws:autoscaling/tag:Tag"} == children


def test_every_regional_resource_goes_to_the_clusters_region(dev_plan: Plan) -> None:
    regional = [
        r for r in dev_plan.children_of(component(dev_plan)) if r.type not in (ROLE, ATTACHMENT)
    ]

    assert {r.inputs["region"] for r in regional} == {"us-east-1"}


# --- Node group -----------------------------------------------------------------------------------


def test_node_group_joins_the_looked_up_cluster(dev_plan: Plan) -> None:
    inputs = node_group(dev_plan).inputs

    assert inputs["clusterName"] == "ml-dev"
    assert inputs["nodeGroupNamePrefix"] == "t4-shared-"


def test_node_group_takes_the_pools_instance_types_in_order(
    dev_config: Config, plan_for: PlanFor
) -> None:
    # Two types of one shape (2 T4g GPUs, 64 vCPUs, 128 GiB), not in alphabetical order.
    pool = dev_config["gpu-platform:pools"][0]
    pool.update(instanceTypes=["g5g.metal", "g5g.16xlarge"], gpusPerNode=2)

    plan = plan_for(dev_config)

    assert node_group(plan).inputs["instanceTypes"] == ["g5g.metal", "g5g.16xlarge"]


@pytest.mark.parametrize(
    ("node_image", "instance_type", "ami_type"),
    [
        (None, "g4dn.xlarge", "AL2023_x86_64_NVIDIA"),
        ("al2023", "g5g.xlarge", "AL2023_ARM_64_NVIDIA"),
        ("bottlerocket", "g4dn.xlarge", "BOTTLEROCKET_x86_64_NVIDIA"),
        ("bottlerocket", "g5g.xlarge", "BOTTLEROCKET_ARM_64_NVIDIA"),
    ],
)
def test_ami_type_is_the_nvidia_one_for_the_node_image_and_architecture(
    dev_config: Config, plan_for: PlanFor, node_image: str | None, instance_type: str, ami_type: str
) -> None:
    if node_image == "al2023":
        with_cluster(dev_config, nodeImage=node_image)
    elif node_image == "bottlerocket":
        on_bottlerocket(dev_config)
    with_pool(dev_config, instanceTypes=[instance_type], sharing={"mode": "exclusive"})

    assert node_group(plan_for(dev_config)).inputs["amiType"] == ami_type


@pytest.mark.parametrize(
    ("capacity", "capacity_type"),
    [("on-demand", "ON_DEMAND"), ("spot", "SPOT"), ("capacity-block", "CAPACITY_BLOCK")],
)
def test_capacity_maps_to_the_eks_capacity_type(
    dev_config: Config, plan_for: PlanFor, capacity: str, capacity_type: str
) -> None:
    with_pool(dev_config, capacity=capacity, instanceTypes=["g4dn.xlarge"])
    if capacity == "capacity-block":
        with_pool(dev_config, zones=["us-east-1a"])
        with_aws_options(dev_config, capacityReservationId="cr-0123456789abcdef0")

    assert node_group(plan_for(dev_config)).inputs["capacityType"] == capacity_type


def test_scaling_starts_at_min_and_ends_at_max(dev_config: Config, plan_for: PlanFor) -> None:
    with_pool(dev_config, min=1, max=5)

    scaling = node_group(plan_for(dev_config)).inputs["scalingConfig"]

    assert scaling == {"minSize": 1, "desiredSize": 1, "maxSize": 5}


def test_dev_pool_scales_from_zero(dev_plan: Plan) -> None:
    scaling = node_group(dev_plan).inputs["scalingConfig"]

    assert scaling == {"minSize": 0, "desiredSize": 0, "maxSize": 3}


def test_desired_size_is_left_to_the_autoscaler_on_updates(dev_plan: Plan) -> None:
    assert node_group(dev_plan).ignore_changes == (DESIRED_SIZE,)
    assert DESIRED_SIZE == "scalingConfig.desiredSize"


def test_updates_replace_one_node_at_a_time_without_surging(dev_plan: Plan) -> None:
    # EKS user guide, managed-node-update-behavior: the default strategy first adds nodes (up to
    # two per zone), which scarce GPU capacity fails with NodeCreationFailure; MINIMAL
    # terminates the old node first ("for example with hardware accelerators such as GPUs").
    assert node_group(dev_plan).inputs["updateConfig"] == {
        "maxUnavailable": 1,
        "updateStrategy": "MINIMAL",
    }


def test_updates_replace_a_percentage_when_configured(
    dev_config: Config, plan_for: PlanFor
) -> None:
    with_aws_options(dev_config, maxUnavailablePercent=25)

    assert node_group(plan_for(dev_config)).inputs["updateConfig"] == {
        "maxUnavailablePercentage": 25,
        "updateStrategy": "MINIMAL",
    }


def test_a_pool_with_capacity_to_spare_can_surge_on_updates(
    dev_config: Config, plan_for: PlanFor
) -> None:
    with_aws_options(dev_config, updateStrategy="default")

    assert node_group(plan_for(dev_config)).inputs["updateConfig"]["updateStrategy"] == "DEFAULT"


# The per-node durations of a rollout (gpu_platform/rollout_timeouts.py has their sources): EKS
# user guide, managed-node-update-behavior: a drain of at most 15 minutes and 60 seconds after the
# cordon per batch; the platform's 15-minute allowance for a node's start; a quarter more as
# margin; never below terraform-provider-aws internal/service/eks/node_group.go's 60 minutes.


def test_updates_wait_for_the_longest_rollout_of_the_pool(dev_plan: Plan) -> None:
    # dev's pool: max 3, one node at a time: 15 + 3 x (15 + 1 + 15) = 108 minutes, x 1.25 = 135.
    assert node_group(dev_plan).custom_timeouts == {"update": "135m"}


def test_each_zonal_node_group_waits_for_its_own_share_of_the_pool(
    dev_config: Config, plan_for: PlanFor
) -> None:
    # max 12 over the stand-in cluster's five zones: 3, 3, 2, 2 and 2 nodes, half of each group
    # at a time, rounded down.
    with_pool(dev_config, max=12)
    with_aws_options(dev_config, nodeGroupPerZone=True, maxUnavailablePercent=50)
    groups = plan_for(dev_config).of_type(NODE_GROUP)

    # 3 nodes a node at a time: 15 + 3 x 31 = 108 minutes, x 1.25 = 135; 2 nodes: 15 + 2 x 31 =
    # 77, x 1.25 = 96.25.
    assert {g.name: g.custom_timeouts["update"] for g in groups} == {
        "t4-shared-nodes-us-east-1a": "135m",
        "t4-shared-nodes-us-east-1b": "135m",
        "t4-shared-nodes-us-east-1c": "97m",
        "t4-shared-nodes-us-east-1d": "97m",
        "t4-shared-nodes-us-east-1f": "97m",
    }


def test_taints_are_the_gpu_taint_and_the_pools_own_in_eks_spelling(
    dev_config: Config, plan_for: PlanFor
) -> None:
    with_pool(
        dev_config,
        taints=[
            {"key": "team", "value": "vision", "effect": "NoSchedule"},
            {"key": "preemptible", "effect": "PreferNoSchedule"},
            {"key": "maintenance", "value": "soon", "effect": "NoExecute"},
        ],
    )

    taints = node_group(plan_for(dev_config)).inputs["taints"]

    assert taints == [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"},
        {"key": "team", "value": "vision", "effect": "NO_SCHEDULE"},
        {"key": "preemptible", "effect": "PREFER_NO_SCHEDULE"},
        {"key": "maintenance", "value": "soon", "effect": "NO_EXECUTE"},
        # The pool's validation taint (docs/node-validation.md).
        {
            "key": "startup-taint.cluster-autoscaler.kubernetes.io/gpu-validation",
            "value": "pending",
            "effect": "NO_SCHEDULE",
        },
    ]


def test_labels_are_the_node_identity_and_the_aws_gpu_label(dev_plan: Plan) -> None:
    labels = node_group(dev_plan).inputs["labels"]

    assert labels == {
        **dev_plan.outputs["pools"]["t4-shared"]["labels"],
        "k8s.amazonaws.com/accelerator": "nvidia-tesla-t4",
    }
    assert labels["nvidia.com/device-plugin.config"] == "time-slicing-4"
    assert labels["nvidia.com/gpu.present"] == "true"
    assert labels["gpu-platform.io/pool"] == "t4-shared"


def test_a_mig_pool_selects_its_mig_layout_by_label(dev_config: Config, plan_for: PlanFor) -> None:
    with_extra_pool(dev_config, **mig_pool())

    labels = node_group(plan_for(dev_config), "a100-mig").inputs["labels"]

    assert labels["nvidia.com/mig.config"] == "all-1g.10gb"
    assert labels["nvidia.com/device-plugin.config"] == "mig-mixed"


def test_a_mig_pools_nodes_go_without_the_aws_gpu_label(
    dev_config: Config, plan_for: PlanFor
) -> None:
    # Why: tests/gpu_platform/eks/test_autoscaler_readiness.py.
    with_extra_pool(dev_config, **mig_pool())

    labels = node_group(plan_for(dev_config), "a100-mig").inputs["labels"]

    assert "k8s.amazonaws.com/accelerator" not in labels
    assert labels["gpu-platform.io/accelerator"] == "a100-80gb"


def test_gpu_model_and_count_come_from_ec2_when_config_leaves_them_out(
    dev_config: Config, plan_for: PlanFor
) -> None:
    with_extra_pool(dev_config, name="a100", instanceTypes=["p4d.24xlarge"], max=1)

    plan = plan_for(dev_config)

    assert plan.outputs["pools"]["a100"]["resources"] == {"nvidia.com/gpu": 8}
    assert plan.outputs["pools"]["a100"]["labels"]["gpu-platform.io/accelerator"] == "a100-40gb"


def test_subnets_are_the_private_ones_where_every_instance_type_is_offered(
    dev_plan: Plan,
) -> None:
    # EC2 offers g4dn.xlarge and g4dn.2xlarge in us-east-1a-d and f, not in us-east-1e.
    expected = private_subnets_in(
        "us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d", "us-east-1f"
    )

    assert sorted(node_group(dev_plan).inputs["subnetIds"]) == sorted(expected)


def test_subnets_of_a_pool_follow_its_instance_types(dev_config: Config, plan_for: PlanFor) -> None:
    with_extra_pool(dev_config, **mig_pool())

    subnets = node_group(plan_for(dev_config), "a100-mig").inputs["subnetIds"]

    # p4de.24xlarge is offered in us-east-1b and c only.
    assert sorted(subnets) == sorted(private_subnets_in("us-east-1b", "us-east-1c"))


def test_pool_zones_narrow_the_subnets(dev_config: Config, plan_for: PlanFor) -> None:
    with_pool(dev_config, zones=["us-east-1b", "us-east-1c"])

    subnets = node_group(plan_for(dev_config)).inputs["subnetIds"]

    assert sorted(subnets) == sorted(private_subnets_in("us-east-1b", "us-east-1c"))


def test_node_subnets_named_in_config_are_used_instead_of_the_clusters(
    dev_config: Config, plan_for: PlanFor
) -> None:
    with_cluster(dev_config, nodeSubnetIds=["subnet-0aaa0000aaaa0000a", "subnet-0bbb0000bbbb0000b"])

    subnets = node_group(plan_for(dev_config)).inputs["subnetIds"]

    assert set(subnets) <= {"subnet-0aaa0000aaaa0000a", "subnet-0bbb0000bbbb0000b"}
    assert subnets


def test_ami_release_is_pinned_from_config(dev_config: Config, plan_for: PlanFor) -> None:
    with_aws_options(dev_config, amiReleaseVersion="1.35.6-20260625")

    assert node_group(plan_for(dev_config)).inputs["releaseVersion"] == "1.35.6-20260625"


def test_node_group_sets_no_disk_size_beside_its_launch_template(dev_plan: Plan) -> None:
    inputs = node_group(dev_plan).inputs

    assert "diskSize" not in inputs
    assert inputs["launchTemplate"] == {"id": "t4-shared-launch-template-id", "version": "1"}


def test_node_group_has_no_remote_access(dev_plan: Plan) -> None:
    assert "remoteAccess" not in node_group(dev_plan).inputs


# --- Node role ---------------------------------------------------------------------------------


def test_node_role_is_assumed_by_ec2_only(dev_plan: Plan) -> None:
    role = dev_plan.named("t4-shared-node-role", ROLE)
    trust = json.loads(role.inputs["assumeRolePolicy"])

    assert trust["Statement"] == [
        {
            "Effect": "Allow",
            "Principal": {"Service": "ec2.amazonaws.com"},
            "Action": "sts:AssumeRole",
        }
    ]


def node_role_policies(plan: Plan) -> set[str]:
    return {
        r.inputs["policyArn"] for r in plan.children_of(component(plan)) if r.type == ATTACHMENT
    }


def test_node_role_has_the_node_policies_and_not_the_cni_policy(dev_plan: Plan) -> None:
    # The VPC CNI's policy is on its own role (`cluster.vpcCniRole`), not on the nodes'.
    assert node_role_policies(dev_plan) == {f"arn:aws:iam::aws:policy/{p}" for p in NODE_POLICIES}
    assert NODE_POLICIES == ("AmazonEKSWorkerNodePolicy", "AmazonEC2ContainerRegistryPullOnly")


def test_cni_policy_goes_on_the_node_role_only_when_asked(
    dev_config: Config, plan_for: PlanFor
) -> None:
    with_cluster(dev_config, cniPolicyOnNodeRole=True)

    assert node_role_policies(plan_for(dev_config)) == {
        f"arn:aws:iam::aws:policy/{p}" for p in (*NODE_POLICIES, CNI_POLICY)
    }


def test_node_group_waits_for_its_role_policies(dev_plan: Plan) -> None:
    attachments = {r.urn for r in dev_plan.children_of(component(dev_plan)) if r.type == ATTACHMENT}

    assert attachments <= set(node_group(dev_plan).dependencies)
    assert node_group(dev_plan).inputs["nodeRoleArn"].endswith(":role/ml-dev.pool-t4-shared")


def test_a_node_role_from_config_is_used_and_none_created(
    dev_config: Config, plan_for: PlanFor
) -> None:
    arn = "arn:aws:iam::123456789012:role/gpu-nodes"
    with_aws_options(dev_config, nodeRoleArn=arn)

    plan = plan_for(dev_config)

    assert node_group(plan).inputs["nodeRoleArn"] == arn
    assert not [r for r in plan.children_of(component(plan)) if r.type in (ROLE, ATTACHMENT)]


def test_no_access_entry_or_aws_auth_mapping_is_created_for_the_node_role(dev_plan: Plan) -> None:
    types = {r.type for r in dev_plan.resources}
    config_maps = [r for r in dev_plan.resources if r.type == "kubernetes:core/v1:ConfigMap"]

    assert "aws:eks/accessEntry:AccessEntry" not in types
    assert all(r.inputs.get("metadata", {}).get("name") != "aws-auth" for r in config_maps)


# --- Launch template ------------------------------------------------------------------------------


def test_launch_template_requires_imdsv2_with_one_hop(dev_plan: Plan) -> None:
    assert launch_template(dev_plan).inputs["metadataOptions"] == {
        "httpEndpoint": "enabled",
        "httpTokens": "required",
        "httpPutResponseHopLimit": 1,
        "instanceMetadataTags": "disabled",
    }


def test_launch_template_allows_a_second_hop_when_config_asks(
    dev_config: Config, plan_for: PlanFor
) -> None:
    with_aws_options(dev_config, metadataHopLimit=2)

    options = launch_template(plan_for(dev_config)).inputs["metadataOptions"]

    assert options["httpPutResponseHopLimit"] == 2
    assert options["httpTokens"] == "required"


def test_al2023_root_volume_is_encrypted_gp3_of_the_pools_disk_size(
    dev_config: Config, plan_for: PlanFor
) -> None:
    with_pool(dev_config, diskSizeGib=300)

    mappings = launch_template(plan_for(dev_config)).inputs["blockDeviceMappings"]

    assert mappings == [
        {
            "deviceName": "/dev/xvda",
            "ebs": {
                "volumeType": "gp3",
                "volumeSize": 300,
                "throughput": 500,
                "iops": 6000,
                "encrypted": "true",
                "deleteOnTermination": "true",
            },
        }
    ]


def test_the_image_volumes_speed_comes_from_config(dev_config: Config, plan_for: PlanFor) -> None:
    with_aws_options(dev_config, volumeThroughputMibps=1000, volumeIops=16000)

    (mapping,) = launch_template(plan_for(dev_config)).inputs["blockDeviceMappings"]

    assert (mapping["ebs"]["throughput"], mapping["ebs"]["iops"]) == (1000, 16000)


def test_throughput_beyond_a_quarter_of_the_iops_is_refused(
    dev_config: Config, failed_plan_for: PlanFor
) -> None:
    # EC2: a gp3 volume gets at most 0.25 MiB/s per provisioned IOPS.
    with_aws_options(dev_config, volumeThroughputMibps=1000, volumeIops=3000)

    plan = failed_plan_for(dev_config)

    assert problems_of(plan)["gpu-platform:pools[0].aws.volumeThroughputMibps"] == (
        "at most a quarter of volumeIops (750), or more volumeIops"
    )


def test_bottlerocket_data_volume_takes_the_disk_size_and_both_are_encrypted(
    dev_config: Config, plan_for: PlanFor
) -> None:
    on_bottlerocket(dev_config)
    with_pool(dev_config, sharing={"mode": "exclusive"})

    mappings = launch_template(plan_for(dev_config)).inputs["blockDeviceMappings"]

    encrypted = {"volumeType": "gp3", "encrypted": "true", "deleteOnTermination": "true"}
    assert mappings == [
        {"deviceName": "/dev/xvda", "ebs": encrypted},
        {
            "deviceName": "/dev/xvdb",
            "ebs": {**encrypted, "volumeSize": 200, "throughput": 500, "iops": 6000},
        },
    ]


def test_instances_and_volumes_are_tagged_with_cluster_and_pool(dev_plan: Plan) -> None:
    specs = launch_template(dev_plan).inputs["tagSpecifications"]
    tags = {
        "Name": "ml-dev-t4-shared",
        "gpu-platform.io/pool": "t4-shared",
        "gpu-platform.io/cluster": "ml-dev",
    }

    assert specs == [
        {"resourceType": "instance", "tags": tags},
        {"resourceType": "volume", "tags": tags},
    ]


def test_launch_template_has_no_ssh_key_image_or_user_data(dev_plan: Plan) -> None:
    inputs = launch_template(dev_plan).inputs

    assert not {"keyName", "imageId", "userData", "instanceType"} & set(inputs)


def with_capacity_block_pool(config: Config) -> Config:
    """The dev stack's pool on a Capacity Block of p5.48xlarge in us-east-1a."""
    with_pool(
        config,
        capacity="capacity-block",
        instanceTypes=["p5.48xlarge"],
        accelerator="h100-80gb",
        gpusPerNode=8,
        zones=["us-east-1a"],
    )
    return with_aws_options(config, capacityReservationId="cr-0123456789abcdef0")


def test_a_capacity_block_pool_launches_into_its_reservation(
    dev_config: Config, plan_for: PlanFor
) -> None:
    inputs = launch_template(plan_for(with_capacity_block_pool(dev_config))).inputs

    assert inputs["instanceMarketOptions"] == {"marketType": "capacity-block"}
    assert inputs["capacityReservationSpecification"] == {
        "capacityReservationTarget": {"capacityReservationId": "cr-0123456789abcdef0"}
    }


def test_a_capacity_block_pool_launches_only_in_the_blocks_zone(
    dev_config: Config, plan_for: PlanFor
) -> None:
    # Instances of a Capacity Block launch only in its zone; config asks for that one zone.
    subnets = node_group(plan_for(with_capacity_block_pool(dev_config))).inputs["subnetIds"]

    assert sorted(subnets) == sorted(private_subnets_in("us-east-1a"))


def test_other_pools_launch_without_reservation_or_market_options(dev_plan: Plan) -> None:
    inputs = launch_template(dev_plan).inputs

    assert "instanceMarketOptions" not in inputs
    assert "capacityReservationSpecification" not in inputs
