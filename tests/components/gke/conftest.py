"""Fixtures for the GKE side: the program's plan for the shared `gke_config`."""

from collections.abc import Callable
from typing import Any

import pytest

from gpu_platform_cli.offline import Plan

Config = dict[str, Any]


@pytest.fixture
def gke_plan(gke_config: Config, plan_for: Callable[[Config], Plan]) -> Plan:
    return plan_for(gke_config)
