"""Fixtures for the GKE side: the program's plan for the shared `gke_config`."""

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from gpu_platform.cli.offline import Plan
from gpu_platform.cli.stand_ins import gcp as stand_in

from .plans import GET_CLUSTER

Config = dict[str, Any]


@pytest.fixture
def gke_plan(gke_config: Config, shared_plan_for: Callable[[Config], Plan]) -> Plan:
    return shared_plan_for(gke_config)


@pytest.fixture
def cluster_answer(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """Changes to make to the stand-in cluster lookup's answer."""
    changes: dict[str, Any] = {}
    answer = stand_in.INVOKES[GET_CLUSTER]
    monkeypatch.setitem(stand_in.INVOKES, GET_CLUSTER, lambda args: answer(args) | changes)
    yield changes
