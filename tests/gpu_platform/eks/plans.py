"""Reading the EKS side out of a plan, and changing the EKS (dev) test config."""

from typing import Any

from gpu_platform.config import ConfigError
from gpu_platform.offline.program import Plan, PlannedResource
from tests.stack_variants import (
    AL2023_RELEASE,
    BOTTLEROCKET_RELEASE,
    with_gpu_quotas_fitting_its_pools,
    with_whole_gpu_quota,
    without_queues,
)

Config = dict[str, Any]
POOLS = "gpu-platform:pools"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
ASG_TAG = "aws:autoscaling/tag:Tag"
COMPONENT = "gpu-platform:eks:GpuNodeGroup"
RELEASE = "kubernetes:helm.sh/v3:Release"


def node_group(plan: Plan, pool: str = "t4-shared") -> PlannedResource:
    return plan.named(f"{pool}-nodes", NODE_GROUP)


def launch_template(plan: Plan, pool: str = "t4-shared") -> PlannedResource:
    return plan.named(f"{pool}-launch-template", LAUNCH_TEMPLATE)


def component(plan: Plan, pool: str = "t4-shared") -> PlannedResource:
    return plan.named(pool, COMPONENT)


def asg_tags(plan: Plan, pool: str = "t4-shared") -> dict[str, str]:
    """The Auto Scaling group tags declared for a pool: key -> value."""
    return {
        r.inputs["tag"]["key"]: r.inputs["tag"]["value"]
        for r in plan.children_of(component(plan, pool))
        if r.type == ASG_TAG
    }


def with_pool(config: Config, **changes: Any) -> Config:
    """The config with its first pool changed (keys as in the stack file), and a quota of whole
    GPUs beside the stack's quota of shared ones, for a change that makes the pool exclusive."""
    config[POOLS][0].update(changes)
    return with_whole_gpu_quota(config)


def with_aws_options(config: Config, **options: Any) -> Config:
    config[POOLS][0].setdefault("aws", {}).update(options)
    return config


def with_cluster(config: Config, **changes: Any) -> Config:
    config["gpu-platform:cluster"].update(changes)
    return config


def with_extra_pool(config: Config, **fields: Any) -> Config:
    """The config with another pool, on AL2023_RELEASE unless `fields` pin another release, its
    namespaces' GPU quotas fitted to the pools (`with_gpu_quotas_fitting_its_pools`), and
    queues off (`without_queues`)."""
    aws = {"amiReleaseVersion": AL2023_RELEASE, **fields.get("aws", {})}
    config[POOLS].append({**fields, "aws": aws})
    return with_gpu_quotas_fitting_its_pools(without_queues(config))


def on_bottlerocket(config: Config) -> Config:
    """The config on Bottlerocket nodes, every pool pinned to BOTTLEROCKET_RELEASE."""
    with_cluster(config, nodeImage="bottlerocket")
    for pool in config[POOLS]:
        pool.setdefault("aws", {})["amiReleaseVersion"] = BOTTLEROCKET_RELEASE
    return config


def mig_pool(**fields: Any) -> dict[str, Any]:
    """An A100 80GB pool partitioned by MIG, `mixed` strategy."""
    return {
        "name": "a100-mig",
        "instanceTypes": ["p4de.24xlarge"],
        "max": 2,
        "sharing": {"mode": "mig", "strategy": "mixed", "profile": "all-1g.10gb"},
        **fields,
    }


def problems_of(plan: Plan) -> dict[str, str]:
    """The failed plan's config problems: key path -> what was expected."""
    assert isinstance(plan.error, ConfigError), plan.error
    return {p.path: p.expected for p in plan.error.problems}
