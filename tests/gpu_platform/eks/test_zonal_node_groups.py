"""`aws.nodeGroupPerZone`: one node group per zone, so that the cluster autoscaler's
scale-from-zero template of each has the zone its nodes start in, with the pool's size shared
out over them."""

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from gpu_platform.config import ConfigError
from gpu_platform.eks.node_group import DESIRED_SIZE
from gpu_platform.offline.fit import node_templates
from gpu_platform.offline.program import Plan, PlannedResource
from gpu_platform.offline.stand_ins import aws as stand_in

from .plans import ASG_TAG, NODE_GROUP, component, with_aws_options, with_extra_pool, with_pool
from .test_cluster_autoscaler import release
from .test_node_group import private_subnets_in

# Its tests plan a zonal pool again and again, and change the program only through its config
# and the stand-in's live node groups.
pytestmark = pytest.mark.shared_plans

Config = dict[str, Any]
PlanFor = Callable[[Config], Plan]
ZONES = ["us-east-1a", "us-east-1b", "us-east-1c"]


def zonal(config: Config, **changes: Any) -> Config:
    with_pool(config, zones=ZONES, **changes)
    return with_aws_options(config, nodeGroupPerZone=True)


def node_groups(plan: Plan) -> dict[str, PlannedResource]:
    """The dev pool's node groups by resource name."""
    return {r.name: r for r in plan.children_of(component(plan)) if r.type == NODE_GROUP}


def test_each_zone_gets_a_node_group_in_its_own_subnet(
    dev_config: Config, plan_for: PlanFor
) -> None:
    groups = node_groups(plan_for(zonal(dev_config)))

    assert sorted(groups) == [f"t4-shared-nodes-{zone}" for zone in ZONES]
    for zone in ZONES:
        group = groups[f"t4-shared-nodes-{zone}"]
        # aws_manager.go buildNodeFromTemplate, `az := asg.AvailabilityZones[0]` (line 184 at
        # 1.33.6 and 1.34.5, 189 at 1.35.2 and 1.36.1, the pinned releases): the template's zone
        # is the group's first; each group has only its own.
        assert group.inputs["subnetIds"] == private_subnets_in(zone)
        assert group.inputs["nodeGroupNamePrefix"] == f"t4-shared-{zone}-"


def test_min_and_max_are_shared_out_over_the_zones(dev_config: Config, plan_for: PlanFor) -> None:
    groups = node_groups(plan_for(zonal(dev_config, min=1, max=4)))

    assert [groups[f"t4-shared-nodes-{zone}"].inputs["scalingConfig"] for zone in ZONES] == [
        {"minSize": 1, "desiredSize": 1, "maxSize": 2},
        {"minSize": 0, "desiredSize": 0, "maxSize": 1},
        {"minSize": 0, "desiredSize": 0, "maxSize": 1},
    ]


def test_each_zones_group_gets_the_scale_from_zero_hints(
    dev_config: Config, plan_for: PlanFor
) -> None:
    plan = plan_for(zonal(dev_config))
    tags = [r for r in plan.children_of(component(plan)) if r.type == ASG_TAG]
    single = [r for r in plan_for_single(dev_config, plan_for) if r.type == ASG_TAG]

    assert len(tags) == len(ZONES) * len(single)


def plan_for_single(config: Config, plan_for: PlanFor) -> list[PlannedResource]:
    config["gpu-platform:pools"][0]["aws"].pop("nodeGroupPerZone", None)
    plan = plan_for(config)
    return plan.children_of(component(plan))


def test_a_pool_that_cannot_give_each_zone_a_node_fails_naming_max(
    dev_config: Config, plan_for: PlanFor
) -> None:
    with pytest.raises(ConfigError) as error:
        plan_for(zonal(dev_config, max=2))

    (problem,) = error.value.problems
    assert problem.path == "gpu-platform:pools[0].max"


def test_a_pool_name_too_long_for_per_zone_group_names_fails(
    dev_config: Config, plan_for: PlanFor
) -> None:
    # 26 + len("-us-east-1a-") + 26 = 64, one more than EKS takes.
    for namespace in dev_config["gpu-platform:namespaces"]:
        namespace["smokeTestPool"] = "a" * 26
    with pytest.raises(ConfigError) as error:
        plan_for(zonal(dev_config, name="a" * 26))

    (problem,) = error.value.problems
    assert problem.path == "gpu-platform:pools[0].name"
    assert problem.expected.startswith("a name of at most 25 characters")


@pytest.fixture
def running() -> Iterator[None]:
    stand_in.LIVE_NODE_GROUPS["t4-shared-us-east-1b-20261123120000000000000a1b"] = {
        "minSize": 0,
        "maxSize": 1,
        "desiredSize": 0,
    }
    yield
    stand_in.LIVE_NODE_GROUPS.clear()


def test_a_zones_running_group_is_read_for_its_own_bounds(
    dev_config: Config, plan_for: PlanFor, running: None
) -> None:
    groups = node_groups(plan_for(zonal(dev_config, min=3, max=6)))

    assert groups["t4-shared-nodes-us-east-1b"].inputs["scalingConfig"]["desiredSize"] == 1
    assert DESIRED_SIZE not in groups["t4-shared-nodes-us-east-1b"].ignore_changes
    assert groups["t4-shared-nodes-us-east-1a"].ignore_changes == (DESIRED_SIZE,)


def test_a_pool_named_as_another_pools_zone_group_fails(
    dev_config: Config, plan_for: PlanFor
) -> None:
    with_extra_pool(dev_config, name="t4-shared-us-east-1a", instanceTypes=["g4dn.xlarge"], max=1)

    with pytest.raises(ConfigError) as error:
        plan_for(dev_config)

    (problem,) = error.value.problems
    assert problem.path == "gpu-platform:pools[1].name"


# What the AWS provider's comparator ignores when it asks whether two groups are similar:
# CreateAwsNodeInfoComparator's own list (processors/nodegroupset/aws_nodegroups.go) and
# BasicIgnoredLabels (compare_nodegroups.go), cluster-autoscaler-1.35.2, the same at 1.33.6,
# 1.34.5 and 1.36.1.
AWS_IGNORED_LABELS = {
    "alpha.eksctl.io/instance-id",
    "alpha.eksctl.io/nodegroup-name",
    "eks.amazonaws.com/nodegroup",
    "k8s.amazonaws.com/eniConfig",
    "lifecycle",
    "topology.ebs.csi.aws.com/zone",
    "topology.k8s.aws/zone-id",
    "kubernetes.io/hostname",
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "beta.kubernetes.io/fluentd-ds-ready",
    "kops.k8s.io/instancegroup",
}


def test_the_zonal_groups_of_a_pool_differ_only_in_labels_balancing_ignores(
    dev_config: Config, plan_for: PlanFor
) -> None:
    plan = plan_for(zonal(dev_config))
    templates = [t for t in node_templates(plan) if t.pool == "t4-shared"]
    ignored = AWS_IGNORED_LABELS | {
        value
        for key, value in release(plan).inputs["values"]["extraArgs"].items()
        if key.partition("_")[0] == "balancing-ignore-label"
    }

    # IsCloudProviderNodeInfoSimilar (compare_nodegroups.go): the same capacity, and the same
    # value of every label it does not ignore. A label known only by its form (the node
    # group's name, the hostname) has a value of each group's own.
    differing = {
        key
        for template in templates[1:]
        for key in {*template.labels, *templates[0].labels}
        if template.labels.get(key) != templates[0].labels.get(key)
    } | {key for template in templates for key in template.patterns}
    assert len(templates) == len(ZONES)
    assert all(t.resources == templates[0].resources for t in templates)
    assert differing - ignored == set()
    assert "nodegroup-name" in differing
