"""Fixtures for the GKE cluster the platform creates: the shared GKE test config with
`cluster.create`, and its plan."""

import copy
from typing import Any

import pytest

from gpu_platform.offline.program import Plan, run_program
from tests.conftest import dev_stack_config, gke_stack_config
from tests.repository import PROJECT

Config = dict[str, Any]


def creating(gke_config: Config) -> Config:
    """The GKE test stack, creating its cluster with every default (1.33, whose COS driver the
    platform knows), and the Prometheus stack a created cluster needs."""
    config = copy.deepcopy(gke_config)
    config["gpu-platform:cluster"]["create"] = {"kubernetesVersion": "1.33"}
    config["gpu-platform:monitoring"] = {
        **config.get("gpu-platform:monitoring", {}),
        "installPrometheusStack": True,
    }
    return config


@pytest.fixture
def gke_new_config(gke_config: Config) -> Config:
    return creating(gke_config)


@pytest.fixture(scope="session")
def gke_new_plan() -> Plan:
    """The plan of `gke_new_config`, planned once: the tests that take it only read it."""
    return run_program(
        "dev", config=creating(gke_stack_config(dev_stack_config())), project=PROJECT
    )
