"""Shared fixtures: the real program, run under the recording mock runner.

Each test gets its own run (`preview=False`, so every apply callback runs), from the dev stack's
config or from a config the test builds on top of it.
"""

import copy
from collections.abc import Callable
from typing import Any

import pytest

from gpu_platform.cli.offline import Plan, run_program
from gpu_platform.cli.stack_files import stack_config
from tests.repository import PROJECT
from tests.stack_variants import with_quota_for_any_pool

Config = dict[str, Any]


def dev_stack_config() -> Config:
    """The dev stack's config, fully qualified keys, a copy of its own, its namespace allowed
    GPUs of every kind (`with_quota_for_any_pool`)."""
    return with_quota_for_any_pool(copy.deepcopy(stack_config("dev", PROJECT)))


@pytest.fixture
def dev_config() -> Config:
    """The dev stack's config, safe to change in the test."""
    return dev_stack_config()


@pytest.fixture
def gke_config(dev_config: Config) -> Config:
    """A GKE stack on COS with one L4 pool, for tests of the GKE side."""
    return gke_stack_config(dev_config)


def gke_stack_config(dev_config: Config) -> Config:
    """The dev stack's config made a GKE stack on COS with one L4 pool."""
    config = {k: v for k, v in dev_config.items() if not k.startswith("aws:")}
    config["gpu-platform:cloud"] = "gcp"
    config["gpu-platform:cluster"] = {
        "name": "ml-dev",
        "project": "ml-platform-dev",
        "location": "us-central1",
    }
    config["gpu-platform:pools"] = [
        {
            "name": "l4-shared",
            "instanceTypes": ["g2-standard-8"],
            "accelerator": "l4",
            "gpusPerNode": 1,
            "max": 3,
            "capacity": "spot",
            "sharing": {"mode": "time-slicing", "replicas": 4},
        }
    ]
    config["gpu-platform:namespaces"] = [
        {
            "name": "ml-sandbox",
            "gpuQuota": 8,
            "sharedGpuQuota": 8,
            "migQuota": {"1g.10gb": 8},
            "smokeTestPool": "l4-shared",
        }
    ]
    return config


@pytest.fixture
def plan_for() -> Callable[[Config], Plan]:
    """Run the program for a config and return what it declared."""

    def run(config: Config) -> Plan:
        return run_program("dev", config=config, project=PROJECT)

    return run


@pytest.fixture
def failed_plan_for() -> Callable[[Config], Plan]:
    """Run the program for a config expected to fail; the error is in `Plan.error`."""

    def run(config: Config) -> Plan:
        plan = run_program("dev", config=config, project=PROJECT, raise_errors=False)
        assert plan.error is not None, "the program was expected to fail"
        return plan

    return run


@pytest.fixture
def dev_plan() -> Plan:
    return run_program("dev", project=PROJECT)
