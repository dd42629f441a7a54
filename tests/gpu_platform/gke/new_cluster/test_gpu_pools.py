"""The GPU pools on a cluster the platform creates are those it declares on an existing cluster
of the same version: the same node pools, accounts and Kubernetes side, only waiting for the
cluster."""

from collections.abc import Callable
from typing import Any

import pytest

from gpu_platform.offline.program import Plan

from .plans import NODE_POOL, SYSTEM_POOL, cluster, system_pool

Config = dict[str, Any]
GPU_POOL_PARTS = (
    NODE_POOL,
    "gcp:serviceaccount/account:Account",
    "gcp:projects/iAMMember:IAMMember",
)


def gpu_pool_inputs(plan: Plan) -> dict[tuple[str, str], dict]:
    return {
        (r.type, r.name): r.inputs
        for r in plan.resources
        if r.type in GPU_POOL_PARTS and r.name.startswith("l4-shared")
    }


def test_gpu_pools_are_declared_as_on_an_existing_cluster(
    gke_plan: Plan, gke_new_plan: Plan
) -> None:
    attached, created = gpu_pool_inputs(gke_plan), gpu_pool_inputs(gke_new_plan)

    assert (NODE_POOL, "l4-shared") in attached
    assert created == attached


def test_gpu_pools_wait_for_the_cluster_only_where_it_is_created(
    gke_plan: Plan, gke_new_plan: Plan
) -> None:
    attached = gke_plan.named("l4-shared", NODE_POOL)
    created = gke_new_plan.named("l4-shared", NODE_POOL)
    waits_for = {cluster(gke_new_plan).urn, system_pool(gke_new_plan).urn}

    assert waits_for <= set(created.dependencies)
    assert set(created.dependencies) - waits_for == set(attached.dependencies)
    assert SYSTEM_POOL not in {r.name for r in gke_plan.resources}


@pytest.fixture
def attached_with_prometheus_stack(gke_config: Config, plan_for: Callable[[Config], Plan]) -> Plan:
    """The existing-cluster plan with the Prometheus stack a created cluster requires."""
    gke_config["gpu-platform:monitoring"] = {
        **gke_config.get("gpu-platform:monitoring", {}),
        "installPrometheusStack": True,
    }
    return plan_for(gke_config)


def test_the_same_kubernetes_objects_are_declared(
    attached_with_prometheus_stack: Plan, gke_new_plan: Plan
) -> None:
    def objects(plan: Plan) -> dict[tuple[str, str], dict]:
        return {
            (r.type, r.name): r.inputs
            for r in plan.resources
            if r.type.startswith("kubernetes:") and r.name != "cluster-administrators"
        }

    assert objects(gke_new_plan) == objects(attached_with_prometheus_stack)
