"""Pools that cannot work on EKS fail before any resource is registered, with the key path, the
value and what is allowed: found by the lookups (instance types, zones, GPUs) or by the rules
EKS and the autoscaler impose."""

from collections.abc import Callable
from typing import Any

import pytest

from gpu_platform.config import ConfigError
from gpu_platform.offline.program import Plan

from .plans import mig_pool, with_aws_options, with_cluster, with_extra_pool, with_pool

Config = dict[str, Any]
PlanFor = Callable[[Config], Plan]


def unset(config: Config, *keys: str) -> Config:
    for key in keys:
        config["gpu-platform:pools"][0].pop(key, None)
    return config


# (what is wrong, how to break the dev config, the key path the error must name, words the
# expectation must contain)
BAD_CONFIGS: list[tuple[str, Callable[[Config], Any], str, str]] = [
    (
        "unknown instance type",
        lambda c: with_pool(c, instanceTypes=["g4dn.xlarge", "g9x.huge"]),
        "gpu-platform:pools[0].instanceTypes",
        "not offered there: g9x.huge",
    ),
    (
        "instance type not offered in the region",
        lambda c: with_pool(c, instanceTypes=["p3.2xlarge"]),
        "gpu-platform:pools[0].instanceTypes",
        "offers in us-east-1",
    ),
    (
        "instance type without a GPU",
        lambda c: unset(with_pool(c, instanceTypes=["m5.large"]), "accelerator", "gpusPerNode"),
        "gpu-platform:pools[0].instanceTypes",
        "m5.large has no GPU",
    ),
    (
        "fraction of a GPU",
        lambda c: unset(with_pool(c, instanceTypes=["g6f.xlarge"]), "accelerator", "gpusPerNode"),
        "gpu-platform:pools[0].instanceTypes",
        "whole NVIDIA GPUs",
    ),
    (
        "instance types with different GPU counts",
        lambda c: with_pool(c, instanceTypes=["g4dn.xlarge", "g4dn.12xlarge"]),
        "gpu-platform:pools[0].instanceTypes",
        "the same GPUs, vCPUs, memory",
    ),
    (
        # The autoscaler would plan every node as a g4dn.xlarge (aws_manager.go,
        # buildInstanceType: "always use first instance").
        "instance types of the same GPU but different sizes",
        lambda c: with_pool(c, instanceTypes=["g4dn.xlarge", "g4dn.2xlarge"]),
        "gpu-platform:pools[0].instanceTypes",
        "plans a scale-up from zero with the first type's",
    ),
    (
        "instance types of different architectures",
        lambda c: with_pool(c, instanceTypes=["g4dn.xlarge", "g5g.xlarge"]),
        "gpu-platform:pools[0].instanceTypes",
        "CPU architecture",
    ),
    (
        "stated accelerator is not the instance type's",
        lambda c: with_pool(c, accelerator="l4"),
        "gpu-platform:pools[0].accelerator",
        "t4, the GPU of g4dn.xlarge",
    ),
    (
        "stated GPU count is not the instance type's",
        lambda c: with_pool(c, gpusPerNode=2),
        "gpu-platform:pools[0].gpusPerNode",
        "1, the GPUs of g4dn.xlarge",
    ),
    (
        "MIG on a GPU without MIG, read from the instance type",
        lambda c: unset(
            with_pool(c, sharing={"mode": "mig", "profile": "all-1g.10gb"}),
            "accelerator",
            "gpusPerNode",
        ),
        "gpu-platform:pools[0].sharing.mode",
        "t4 has no MIG",
    ),
    (
        "MIG profile of another GPU",
        lambda c: with_extra_pool(
            c,
            **mig_pool(
                instanceTypes=["p4d.24xlarge"],
                sharing={"mode": "mig", "strategy": "mixed", "profile": "all-1g.20gb"},
            ),
        ),
        "gpu-platform:pools[1].sharing.profile",
        "a profile of a100-40gb",
    ),
    (
        "zones where the instance type is not offered",
        lambda c: with_pool(c, zones=["us-east-1e"]),
        "gpu-platform:pools[0].zones",
        "EC2 offers g4dn.xlarge in none of them",
    ),
    (
        "zone without a node subnet",
        lambda c: with_pool(c, zones=["us-west-2a"]),
        "gpu-platform:pools[0].zones",
        "no node subnet in us-west-2a",
    ),
    (
        "capacity block with several instance types",
        lambda c: with_aws_options(
            with_pool(
                c,
                capacity="capacity-block",
                instanceTypes=["g5g.16xlarge", "g5g.metal"],
                gpusPerNode=2,
            ),
            capacityReservationId="cr-0123456789abcdef0",
        ),
        "gpu-platform:pools[0].instanceTypes",
        "exactly one instance type",
    ),
    (
        "capacity block without its reservation",
        lambda c: with_pool(
            c, capacity="capacity-block", instanceTypes=["g4dn.xlarge"], zones=["us-east-1a"]
        ),
        "gpu-platform:pools[0].aws.capacityReservationId",
        "reservation id",
    ),
    (
        "capacity block over several zones",
        lambda c: with_aws_options(
            with_pool(c, capacity="capacity-block", instanceTypes=["g4dn.xlarge"]),
            capacityReservationId="cr-0123456789abcdef0",
        ),
        "gpu-platform:pools[0].zones",
        "exactly one zone with capacity-block, the block's",
    ),
    (
        "reservation on a spot pool",
        lambda c: with_aws_options(c, capacityReservationId="cr-0123456789abcdef0"),
        "gpu-platform:pools[0].aws.capacityReservationId",
        "no value unless capacity is reserved or capacity-block (this pool's is spot)",
    ),
    (
        "label key longer than EKS takes",
        lambda c: with_pool(c, labels={"example.com/" + "k" * 60: "x"}),
        "gpu-platform:pools[0].labels.example.com/" + "k" * 60,
        "at most 63 characters",
    ),
    (
        "empty label value",
        lambda c: with_pool(c, labels={"team": ""}),
        "gpu-platform:pools[0].labels.team",
        "not empty",
    ),
    (
        "update percentage out of range",
        lambda c: with_aws_options(c, maxUnavailablePercent=0),
        "gpu-platform:pools[0].aws.maxUnavailablePercent",
        "greater than or equal to 1",
    ),
    (
        "a repair threshold of no node",
        lambda c: with_aws_options(c, nodeRepairMaxUnhealthyNodes=0),
        "gpu-platform:pools[0].aws.nodeRepairMaxUnhealthyNodes",
        "greater than or equal to 1",
    ),
    (
        "an update strategy EKS does not have",
        lambda c: with_aws_options(c, updateStrategy="surge"),
        "gpu-platform:pools[0].aws.updateStrategy",
        "'minimal' or 'default'",
    ),
    (
        "autoscaler idle time of zero",
        lambda c: c.update({"gpu-platform:autoscaler": {"gpuNodeIdleMinutes": 0}}),
        "gpu-platform:autoscaler.gpuNodeIdleMinutes",
        "greater than or equal to 1",
    ),
    (
        "unknown expander",
        lambda c: c.update({"gpu-platform:autoscaler": {"expander": "price"}}),
        "gpu-platform:autoscaler.expander",
        "least-waste",
    ),
    (
        "autoscaler image tag that is not a version",
        lambda c: c.update({"gpu-platform:autoscaler": {"imageTag": "latest"}}),
        "gpu-platform:autoscaler.imageTag",
        "exact version",
    ),
    (
        "node role named by its instance profile",
        lambda c: with_aws_options(
            c, nodeRoleArn="arn:aws:iam::123456789012:instance-profile/gpu-nodes"
        ),
        "gpu-platform:pools[0].aws.nodeRoleArn",
        "an IAM role ARN",
    ),
    (
        "node role in an account id one digit short",
        lambda c: with_aws_options(c, nodeRoleArn="arn:aws:iam::12345678901:role/gpu-nodes"),
        "gpu-platform:pools[0].aws.nodeRoleArn",
        "a 12-digit account id",
    ),
    (
        "node role in a partition AWS does not have",
        lambda c: with_aws_options(c, nodeRoleArn="arn:aws-eu:iam::123456789012:role/gpu-nodes"),
        "gpu-platform:pools[0].aws.nodeRoleArn",
        "partition aws only",
    ),
    *(
        (
            f"cluster in the {partition} partition",
            lambda c, region=region: with_cluster(c, region=region),
            "gpu-platform:cluster.region",
            "a region of the aws partition",
        )
        for partition, region in (("aws-cn", "cn-north-1"), ("aws-us-gov", "us-gov-west-1"))
    ),
    (
        "AMI release without its build",
        lambda c: with_aws_options(c, amiReleaseVersion="1.33.4"),
        "gpu-platform:pools[0].aws.amiReleaseVersion",
        "1.33.4-20251016 on AL2023",
    ),
    (
        "Bottlerocket AMI release on AL2023 nodes",
        lambda c: with_aws_options(c, amiReleaseVersion="1.52.0-0d4a7f31"),
        "gpu-platform:pools[0].aws.amiReleaseVersion",
        "1.52.0-0d4a7f31 is Bottlerocket's form",
    ),
    (
        "capacity reservation id one digit short",
        lambda c: with_aws_options(
            with_pool(c, capacity="capacity-block", instanceTypes=["g4dn.xlarge"]),
            capacityReservationId="cr-0123456789abcdef",
        ),
        "gpu-platform:pools[0].aws.capacityReservationId",
        "'cr-' and 17 hex digits",
    ),
    (
        "node subnet id of another length",
        lambda c: with_cluster(c, nodeSubnetIds=["subnet-0123456789abcdef0", "subnet-12345"]),
        "gpu-platform:cluster.nodeSubnetIds[1]",
        "'subnet-' and 8 or 17 hex digits",
    ),
    (
        "node subnets named by their VPC",
        lambda c: with_cluster(c, nodeSubnetIds=["vpc-0123456789abcdef0"]),
        "gpu-platform:cluster.nodeSubnetIds[0]",
        "'subnet-' and 8 or 17 hex digits",
    ),
    (
        "misspelt cluster key",
        lambda c: with_cluster(c, nodeSubnets=["subnet-1"]),
        "gpu-platform:cluster.nodeSubnets",
        "no such key",
    ),
]


@pytest.mark.parametrize(
    ("break_config", "path", "words"),
    [pytest.param(b, p, w, id=what) for what, b, p, w in BAD_CONFIGS],
)
def test_bad_config_names_the_key_and_registers_nothing(
    dev_config: Config,
    failed_plan_for: PlanFor,
    break_config: Callable[[Config], Any],
    path: str,
    words: str,
) -> None:
    break_config(dev_config)

    plan = failed_plan_for(dev_config)

    assert isinstance(plan.error, ConfigError), plan.error
    problems = {p.path: p for p in plan.error.problems}
    assert path in problems, plan.error.report()
    assert words in problems[path].expected
    assert plan.resources == []


def test_every_bad_pool_is_reported_at_once(dev_config: Config, failed_plan_for: PlanFor) -> None:
    with_pool(dev_config, zones=["us-east-1e"])
    with_extra_pool(dev_config, name="cpu", instanceTypes=["m5.large"], max=1)

    plan = failed_plan_for(dev_config)

    assert isinstance(plan.error, ConfigError)
    assert {p.path for p in plan.error.problems} == {
        "gpu-platform:pools[0].zones",
        "gpu-platform:pools[1].instanceTypes",
    }
