"""On a cluster the platform creates, every custom resource it applies has its CRD, and every
object its namespace, by the time `pulumi up` applies it: installed by a Helm release of the same
plan, or by GKE itself for a feature the created cluster turns on. The offline plan cannot ask an
API server, so a missing CRD would only show as "no matches for kind" after the cluster exists.

The kinds each Helm chart installs, with their upstream files: tests/custom_resources.py. Besides
them:
- GKE managed collection, on where the cluster's `monitoringConfig.managedPrometheusConfig` is
  enabled: the operator of GoogleCloudPlatform/prometheus-engine, `charts/operator/crds/`,
  `monitoring.googleapis.com` (GKE docs, "Get started with managed collection").
"""

from collections.abc import Callable
from typing import Any

import pytest

from gpu_platform.offline.program import Plan
from tests.custom_resources import RELEASE, Kind, release_kinds, required_kinds
from tests.kubernetes_schemas import kubernetes_objects, manifest

from .plans import cluster, with_managed_prometheus

Config = dict[str, Any]
MANAGED_COLLECTION_KINDS = {
    ("monitoring.googleapis.com", kind)
    for kind in (
        "ClusterNodeMonitoring",
        "ClusterPodMonitoring",
        "ClusterRules",
        "GlobalRules",
        "NodeMonitoring",
        "OperatorConfig",
        "PodMonitoring",
        "Rules",
    )
}
# Namespaces every cluster has (Kubernetes docs, "Namespaces": initial namespaces).
BUILT_IN_NAMESPACES = {"default", "kube-system", "kube-public", "kube-node-lease"}


def installed_kinds(plan: Plan) -> set[Kind]:
    """The custom kinds the plan's Helm releases and the created cluster install."""
    kinds = release_kinds(plan)
    monitoring = cluster(plan).inputs.get("monitoringConfig", {})
    if monitoring.get("managedPrometheus", {}).get("enabled"):
        kinds |= MANAGED_COLLECTION_KINDS
    return kinds


PLANS: dict[str, Callable[[Config], Config]] = {
    "defaults": lambda config: config,
    "Managed Service for Prometheus": with_managed_prometheus,
}


@pytest.fixture(params=sorted(PLANS))
def created_plan(
    request: pytest.FixtureRequest, gke_new_config: Config, plan_for: Callable[[Config], Plan]
) -> Plan:
    return plan_for(PLANS[request.param](gke_new_config))


def test_every_custom_resource_has_its_crd_installed_in_the_same_plan(created_plan: Plan) -> None:
    required = required_kinds(created_plan)

    assert ("monitoring.coreos.com", "PrometheusRule") in required
    assert required - installed_kinds(created_plan) == set()


def test_managed_collection_objects_come_with_the_cluster_setting_that_installs_their_crds(
    gke_new_config: Config, plan_for: Callable[[Config], Plan]
) -> None:
    plan = plan_for(with_managed_prometheus(gke_new_config))

    assert ("monitoring.googleapis.com", "ClusterPodMonitoring") in required_kinds(plan)
    assert cluster(plan).inputs["monitoringConfig"]["managedPrometheus"] == {"enabled": True}


def test_every_object_goes_into_a_namespace_the_plan_creates_or_every_cluster_has(
    created_plan: Plan,
) -> None:
    created = {
        manifest(r)["metadata"]["name"]
        for r in kubernetes_objects(created_plan)
        if manifest(r)["kind"] == "Namespace"
    }
    used = {
        namespace
        for r in [*kubernetes_objects(created_plan), *created_plan.of_type(RELEASE)]
        if (namespace := (r.inputs.get("metadata") or r.inputs).get("namespace"))
    }

    assert "monitoring" in used
    assert used - created - BUILT_IN_NAMESPACES == set()
