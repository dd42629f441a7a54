"""Fixtures for the GKE cluster the platform creates: the shared GKE test config with
`cluster.create`, and its plan."""

import copy
from collections.abc import Callable
from typing import Any

import pytest

from gpu_platform.cli.offline import Plan

Config = dict[str, Any]


@pytest.fixture
def gke_new_config(gke_config: Config) -> Config:
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
def gke_new_plan(gke_new_config: Config, plan_for: Callable[[Config], Plan]) -> Plan:
    return plan_for(gke_new_config)
