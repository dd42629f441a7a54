"""A good stack config gets the documented defaults, and its platform from its cloud and node
image."""

from typing import Any

import pytest

from gpu_platform.config import ConfigError, ExclusiveSharing, Platform, load_stack_config
from gpu_platform.versions import GPU_OPERATOR_CHART
from tests.stack_variants import AL2023_RELEASE, BOTTLEROCKET_RELEASE

Config = dict[str, Any]


MINIMAL: Config = {
    "cloud": "aws",
    "cluster": {"name": "ml", "region": "us-east-1"},
    "pools": [
        {
            "name": "gpu",
            "instanceTypes": ["g5.xlarge"],
            "max": 2,
            "aws": {"amiReleaseVersion": AL2023_RELEASE},
        }
    ],
}


def test_pools_scale_to_zero_by_default() -> None:
    assert load_stack_config(MINIMAL).pools[0].min == 0


def test_pools_default_to_exclusive_on_demand_gpus() -> None:
    spec = load_stack_config(MINIMAL).pools[0]

    assert (spec.capacity, spec.sharing) == ("on-demand", ExclusiveSharing())


def test_root_disk_defaults_to_room_for_gpu_images() -> None:
    assert load_stack_config(MINIMAL).pools[0].disk_size_gib >= 100


def _with_node_role(arn: str) -> dict[str, Any]:
    gpu_pool = MINIMAL["pools"][0]
    return {**MINIMAL, "pools": [{**gpu_pool, "aws": {**gpu_pool["aws"], "nodeRoleArn": arn}}]}


@pytest.mark.parametrize(
    "arn",
    [
        "arn:aws:iam::123456789012:role/gpu-nodes",
        "arn:aws:iam::123456789012:role/platform/gpu/gpu-nodes",
    ],
    ids=["aws", "aws with a path"],
)
def test_node_roles_of_the_aws_partition_are_accepted(arn: str) -> None:
    assert load_stack_config(_with_node_role(arn)).pools[0].aws.node_role_arn == arn


@pytest.mark.parametrize(
    "arn",
    [
        "arn:aws-cn:iam::123456789012:role/gpu-nodes",
        "arn:aws-us-gov:iam::123456789012:role/platform/gpu/gpu-nodes",
    ],
    ids=["aws-cn", "aws-us-gov"],
)
def test_node_roles_of_other_partitions_are_refused(arn: str) -> None:
    # docs/iam/eks-permissions-boundary.json and the deploy policies name arn:aws: only.
    with pytest.raises(ConfigError, match=r"partition aws only"):
        load_stack_config(_with_node_role(arn))


@pytest.mark.parametrize("subnet", ["subnet-0a1b2c3d", "subnet-0123456789abcdef0"])
def test_subnet_ids_of_both_lengths_are_accepted(subnet: str) -> None:
    raw = {**MINIMAL, "cluster": {**MINIMAL["cluster"], "nodeSubnetIds": [subnet]}}

    assert load_stack_config(raw).cluster.node_subnet_ids == [subnet]


def test_bottlerocket_takes_its_own_ami_release_form() -> None:
    raw = {
        **MINIMAL,
        "cluster": {**MINIMAL["cluster"], "nodeImage": "bottlerocket"},
        "pools": [{**MINIMAL["pools"][0], "aws": {"amiReleaseVersion": "1.52.0-0d4a7f31"}}],
    }

    assert load_stack_config(raw).pools[0].aws.ami_release_version == "1.52.0-0d4a7f31"


def test_operator_defaults_to_the_pinned_chart() -> None:
    operator = load_stack_config(MINIMAL).operator

    assert (operator.chart_version, operator.repository) == (
        GPU_OPERATOR_CHART.version,
        GPU_OPERATOR_CHART.repository,
    )


@pytest.mark.parametrize(
    ("cloud", "cluster", "node_image", "pool_fields", "platform"),
    [
        (
            "aws",
            {"region": "us-east-1"},
            None,
            {"aws": {"amiReleaseVersion": AL2023_RELEASE}},
            Platform.EKS_AL2023,
        ),
        (
            "aws",
            {"region": "us-east-1"},
            "bottlerocket",
            {"aws": {"amiReleaseVersion": BOTTLEROCKET_RELEASE}},
            Platform.EKS_BOTTLEROCKET,
        ),
        ("gcp", {"project": "p", "location": "us-central1"}, None, {}, Platform.GKE_COS),
        ("gcp", {"project": "p", "location": "us-central1"}, "ubuntu", {}, Platform.GKE_UBUNTU),
    ],
)
def test_platform_follows_cloud_and_node_image(
    cloud, cluster, node_image, pool_fields, platform
) -> None:
    raw = {
        **MINIMAL,
        "cloud": cloud,
        "cluster": {"name": "ml", **cluster, **({"nodeImage": node_image} if node_image else {})},
        "pools": [{"name": "gpu", "instanceTypes": ["g2-standard-8"], "max": 2, **pool_fields}],
    }

    assert load_stack_config(raw).platform is platform


def test_a_dra_pool_adds_the_dra_drivers_namespace_to_the_release_namespaces() -> None:
    # gpu_platform/kubernetes/dra_driver.py installs the driver's release there, and a preview
    # reads its record, a Secret of that namespace (docs/ci.md).
    dra: Config = {**MINIMAL, "pools": [{**MINIMAL["pools"][0], "min": 1, "allocation": "dra"}]}

    assert load_stack_config(dra).helm_release_namespaces == [
        "gpu-operator",
        "gpu-platform-system",
        "nvidia-dra-driver-gpu",
    ]
    assert load_stack_config(MINIMAL).helm_release_namespaces == [
        "gpu-operator",
        "gpu-platform-system",
    ]
