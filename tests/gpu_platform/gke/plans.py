"""Reading the GKE side out of a plan, and changing the GKE test config."""

from typing import Any

from gpu_platform.config import ConfigError
from gpu_platform.offline.program import Plan, PlannedResource
from tests.stack_variants import with_whole_gpu_quota

Config = dict[str, Any]
NODE_POOL = "gcp:container/nodePool:NodePool"
GET_CLUSTER = "gcp:container/getCluster:getCluster"


def node_pool(plan: Plan, pool: str = "l4-shared") -> PlannedResource:
    """The GKE node pool the program declares for a pool of the stack config."""
    return plan.named(pool, NODE_POOL)


def with_pool(config: Config, **changes: Any) -> Config:
    """The config with its first pool changed (keys as in the stack file), and a quota of whole
    GPUs beside the stack's quota of shared ones, for a change that makes the pool exclusive."""
    config["gpu-platform:pools"][0].update(changes)
    return with_whole_gpu_quota(config)


def with_cluster(config: Config, **changes: Any) -> Config:
    config["gpu-platform:cluster"].update(changes)
    return config


def on_ubuntu(config: Config) -> Config:
    """The config on Ubuntu nodes, with whole GPUs: GKE shares GPUs on COS only."""
    with_cluster(config, nodeImage="ubuntu")
    for pool in config["gpu-platform:pools"]:
        pool["sharing"] = {"mode": "exclusive"}
    return with_whole_gpu_quota(config)


def problems_of(plan: Plan) -> dict[str, str]:
    """The failed plan's config problems: key path -> what was expected."""
    assert isinstance(plan.error, ConfigError), plan.error
    return {p.path: p.expected for p in plan.error.problems}
