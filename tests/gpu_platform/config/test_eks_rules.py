"""Config validation of `provisioner: karpenter`: an EKS setting, under which every pool is
exclusive and kept at zero when idle, and the settings of managed node groups and the cluster
autoscaler are refused, each by its key, the value found and what is allowed."""

import copy
from collections.abc import Callable
from typing import Any

import pytest

from gpu_platform.config import ConfigError, load_stack_config
from tests.stack_variants import AL2023_RELEASE

Config = dict[str, Any]

# A Karpenter stack's keys, without the `gpu-platform:` namespace.
KARPENTER: Config = {
    "cloud": "aws",
    "cluster": {"name": "ml", "region": "us-east-1"},
    "provisioner": "karpenter",
    "pools": [
        {
            "name": "l4",
            "instanceTypes": ["g6.xlarge"],
            "max": 2,
            "capacity": "spot",
            "aws": {"amiReleaseVersion": AL2023_RELEASE},
        }
    ],
    "namespaces": [{"name": "ml-sandbox", "gpuQuota": 4}],
}
GKE: Config = {
    "cloud": "gcp",
    "cluster": {"name": "ml", "project": "p", "location": "us-central1"},
    "pools": [{"name": "l4", "instanceTypes": ["g2-standard-8"], "max": 2}],
}
REFUSED_WITH_KARPENTER = "no value with provisioner karpenter"


def karpenter(**changes: Any) -> Config:
    return {**copy.deepcopy(KARPENTER), **changes}


def with_pool(**fields: Any) -> Config:
    config = karpenter()
    config["pools"][0].update(fields)
    return config


def with_aws(**options: Any) -> Config:
    config = karpenter()
    config["pools"][0]["aws"].update(options)
    return config


def problems(raw: Config) -> dict[str, str]:
    """The config's problems: key path -> what is allowed."""
    with pytest.raises(ConfigError) as error:
        load_stack_config(raw)
    return {p.path: p.expected for p in error.value.problems}


# (what is wrong, the config, the key path the error must name, words of what is allowed)
BAD: list[tuple[str, Callable[[], Config], str, str]] = [
    (
        "provisioner on GKE",
        lambda: {**GKE, "provisioner": "karpenter"},
        "gpu-platform:provisioner",
        "no value when cloud is gcp: it applies to aws stacks only",
    ),
    (
        "karpenter settings on GKE",
        lambda: {**GKE, "karpenter": {"consolidateAfterMinutes": 5}},
        "gpu-platform:karpenter",
        "no value when cloud is gcp: it applies to aws stacks only",
    ),
    (
        "karpenter settings with the cluster autoscaler",
        lambda: {**karpenter(provisioner="cluster-autoscaler"), "karpenter": {"namespace": "k"}},
        "gpu-platform:karpenter.namespace",
        "no value unless provisioner is karpenter",
    ),
    ("a minimum of nodes", lambda: with_pool(min=1), "gpu-platform:pools[0].min", "0 with"),
    (
        "time-slicing",
        lambda: with_pool(sharing={"mode": "time-slicing", "replicas": 4}),
        "gpu-platform:pools[0].sharing.mode",
        "exclusive with provisioner karpenter",
    ),
    (
        "mps",
        lambda: with_pool(sharing={"mode": "mps", "replicas": 2}),
        "gpu-platform:pools[0].sharing.mode",
        "one nvidia.com/gpu per physical GPU",
    ),
    (
        "mig",
        lambda: with_pool(
            instanceTypes=["p4de.24xlarge"], sharing={"mode": "mig", "profile": "all-1g.10gb"}
        ),
        "gpu-platform:pools[0].sharing.mode",
        "knows no MIG slices",
    ),
    (
        "an empty-node budget on a node group",
        lambda: {
            **with_aws(emptyNodesBudgetPercent=50),
            "provisioner": "cluster-autoscaler",
        },
        "gpu-platform:pools[0].aws.emptyNodesBudgetPercent",
        "no value unless provisioner is karpenter",
    ),
    (
        "a pool's consolidateAfter on a node group",
        lambda: {
            **with_aws(consolidateAfterMinutes="never"),
            "provisioner": "cluster-autoscaler",
        },
        "gpu-platform:pools[0].aws.consolidateAfterMinutes",
        "autoscaler.gpuNodeIdleMinutes",
    ),
    (
        "a consolidateAfter that is neither minutes nor never",
        lambda: with_aws(consolidateAfterMinutes="always"),
        "gpu-platform:pools[0].aws.consolidateAfterMinutes",
        "never",
    ),
    (
        "an existing Karpenter without its node role",
        lambda: karpenter(karpenter={"install": False}),
        "gpu-platform:karpenter.nodeRoleArn",
        "the ARN of the existing Karpenter's node role",
    ),
    (
        "a node role for the Karpenter the platform installs",
        lambda: karpenter(
            karpenter={"nodeRoleArn": "arn:aws:iam::123456789012:role/KarpenterNodeRole-ml"}
        ),
        "gpu-platform:karpenter.nodeRoleArn",
        "no value unless karpenter.install is false",
    ),
    (
        "a chart version for an existing Karpenter",
        lambda: karpenter(
            karpenter={
                "install": False,
                "nodeRoleArn": "arn:aws:iam::123456789012:role/KarpenterNodeRole-ml",
                "chartVersion": "1.14.1",
            }
        ),
        "gpu-platform:karpenter.chartVersion",
        "no value with karpenter.install false",
    ),
    (
        "node repair, which EKS gives managed node groups",
        lambda: with_aws(nodeRepair=True),
        "gpu-platform:pools[0].aws.nodeRepair",
        "Karpenter's own is an alpha feature the platform leaves off",
    ),
    (
        "a node group's repair threshold",
        lambda: with_aws(nodeRepairMaxUnhealthyNodes=1),
        "gpu-platform:pools[0].aws.nodeRepairMaxUnhealthyNodes",
        "EKS node repair acts on managed node groups only",
    ),
    (
        "a node group's update strategy",
        lambda: with_aws(updateStrategy="minimal"),
        "gpu-platform:pools[0].aws.updateStrategy",
        "within the pool's disruption budget",
    ),
    (
        "a node group per zone",
        lambda: with_aws(nodeGroupPerZone=True),
        "gpu-platform:pools[0].aws.nodeGroupPerZone",
        "Karpenter picks each node's zone",
    ),
    (
        "a node role of the pool's own",
        lambda: with_aws(nodeRoleArn="arn:aws:iam::123456789012:role/gpu-nodes"),
        "gpu-platform:pools[0].aws.nodeRoleArn",
        REFUSED_WITH_KARPENTER,
    ),
    (
        "reservations by resource group",
        lambda: with_aws(
            capacityReservationResourceGroupArn=(
                "arn:aws:resource-groups:us-east-1:123456789012:group/gpu-reservations"
            )
        ),
        "gpu-platform:pools[0].aws.capacityReservationResourceGroupArn",
        "name the reservation in aws.capacityReservationId",
    ),
    (
        "a Capacity Block's start",
        lambda: with_aws(capacityBlockStart="2026-12-01T11:30:00Z"),
        "gpu-platform:pools[0].aws.capacityBlockStart",
        REFUSED_WITH_KARPENTER,
    ),
    (
        "the cluster autoscaler's settings",
        lambda: karpenter(autoscaler={"install": False}),
        "gpu-platform:autoscaler.install",
        "installs Karpenter instead of the cluster autoscaler",
    ),
    (
        "the cluster autoscaler's expander",
        lambda: karpenter(autoscaler={"expander": "least-waste"}),
        "gpu-platform:autoscaler.expander",
        REFUSED_WITH_KARPENTER,
    ),
    (
        "a tenant in Karpenter's namespace",
        lambda: karpenter(
            karpenter={"namespace": "karpenter"},
            namespaces=[{"name": "karpenter", "gpuQuota": 4}],
        ),
        "gpu-platform:namespaces[0].name",
        "not Karpenter's",
    ),
    (
        "instance families on a node group",
        lambda: {**flexible(instanceFamilies=["g6"]), "provisioner": "cluster-autoscaler"},
        "gpu-platform:pools[0].aws.instanceFamilies",
        "no value unless provisioner is karpenter",
    ),
    (
        "instance categories on a node group",
        lambda: {**flexible(instanceCategories=["g"]), "provisioner": "cluster-autoscaler"},
        "gpu-platform:pools[0].aws.instanceCategories",
        "no value unless provisioner is karpenter",
    ),
    (
        "instance families beside instance types",
        lambda: with_aws(instanceFamilies=["g6"]),
        "gpu-platform:pools[0].aws.instanceFamilies",
        "no value beside instanceTypes",
    ),
    (
        "instance families and categories",
        lambda: flexible(instanceFamilies=["g6"], instanceCategories=["g"]),
        "gpu-platform:pools[0].aws.instanceCategories",
        "no value beside aws.instanceFamilies",
    ),
    (
        "instance families without the GPU model",
        lambda: without_accelerator(flexible(instanceFamilies=["g6"])),
        "gpu-platform:pools[0].accelerator",
        "the pool's one GPU model",
    ),
    (
        "neither instance types nor families",
        lambda: flexible(),
        "gpu-platform:pools[0].instanceTypes",
        "one or more EC2 instance types",
    ),
    (
        "an instance type for a family",
        lambda: flexible(instanceFamilies=["g6.xlarge"]),
        "gpu-platform:pools[0].aws.instanceFamilies[0]",
        "an EC2 instance family such as g6",
    ),
]


def flexible(**options: Any) -> Config:
    """The Karpenter stack whose pool names no instance types, an L4 pool by `options`."""
    config = with_aws(**options)
    config["pools"][0].pop("instanceTypes")
    config["pools"][0]["accelerator"] = "l4"
    return config


def without_accelerator(config: Config) -> Config:
    config["pools"][0].pop("accelerator")
    return config


@pytest.mark.parametrize(
    ("build", "expected_path", "words"),
    [pytest.param(build, path, words, id=name) for name, build, path, words in BAD],
)
def test_bad_karpenter_config_names_its_key_and_what_is_allowed(
    build: Callable[[], Config], expected_path: str, words: str
) -> None:
    found = problems(build())

    assert expected_path in found, found
    assert words in found[expected_path]


def test_a_bad_karpenter_stack_registers_nothing(dev_config: Config, failed_plan_for) -> None:
    dev_config["gpu-platform:provisioner"] = "karpenter"

    plan = failed_plan_for(dev_config)

    # The dev stack's pool time-slices its T4s.
    assert isinstance(plan.error, ConfigError)
    assert [p.path for p in plan.error.problems] == ["gpu-platform:pools[0].sharing.mode"]
    assert plan.resources == []


def test_a_karpenter_stack_of_exclusive_pools_kept_at_zero_is_valid() -> None:
    config = load_stack_config(karpenter(karpenter={"consolidateAfterMinutes": 30}))

    assert config.provisioner == "karpenter"
    assert config.karpenter.consolidate_after_minutes == 30


def test_an_empty_autoscaler_block_sets_nothing() -> None:
    load_stack_config(karpenter(autoscaler={}))


def test_the_cluster_autoscaler_stays_the_default_provisioner() -> None:
    config = karpenter()
    del config["provisioner"]

    assert load_stack_config(config).provisioner == "cluster-autoscaler"


@pytest.mark.parametrize(
    ("changes", "namespaces"),
    [
        ({}, ["gpu-operator", "kube-system"]),  # Karpenter's
        ({"karpenter": {"namespace": "karpenter"}}, ["gpu-operator", "karpenter"]),
        # The autoscaler's namespace only where it is installed.
        ({"provisioner": "cluster-autoscaler"}, ["gpu-operator", "gpu-platform-system"]),
        (
            {"provisioner": "cluster-autoscaler", "autoscaler": {"namespace": "autoscaler"}},
            ["autoscaler", "gpu-operator"],
        ),
    ],
)
def test_helm_release_namespaces_follow_the_provisioner(
    changes: Config, namespaces: list[str]
) -> None:
    assert load_stack_config(karpenter(**changes)).helm_release_namespaces == namespaces


def test_a_karpenter_pool_of_instance_families_and_one_gpu_model_is_valid() -> None:
    config = load_stack_config(flexible(instanceFamilies=["g6", "gr6"]))

    assert config.pools[0].instance_types == []
    assert config.pools[0].aws.instance_families == ["g6", "gr6"]


def test_an_efa_pool_is_valid_under_karpenter() -> None:
    # EC2NodeClass `networkInterfaces` and `placementGroupSelector` (pinned CRD, v1.14.1).
    config = load_stack_config(
        with_pool(
            instanceTypes=["p5.48xlarge"],
            zones=["us-east-1a"],
            aws={"amiReleaseVersion": AL2023_RELEASE, "efa": True},
        )
    )

    assert config.pools[0].aws.efa is True


def test_an_existing_karpenter_with_its_node_role_is_valid() -> None:
    role = "arn:aws:iam::123456789012:role/KarpenterNodeRole-ml"
    config = load_stack_config(karpenter(karpenter={"install": False, "nodeRoleArn": role}))

    assert (config.uses_karpenter, config.karpenter_installed) == (True, False)
    assert config.helm_release_namespaces == ["gpu-operator"]
