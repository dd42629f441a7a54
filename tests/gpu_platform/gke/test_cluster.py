import dataclasses

import pytest
import yaml

from gpu_platform.gke.cluster import (
    AUTH_PLUGIN,
    GkeCluster,
    cluster_problems,
    kubeconfig_for,
    zone_region,
)

CLUSTER = GkeCluster(
    project="ml-platform-dev",
    location="us-central1",
    name="ml-dev",
    endpoint="203.0.113.10",
    ca_certificate="Q0EgZGF0YQ==",
    master_version="1.33.5-gke.1201000",
    autopilot=False,
    workload_pool="ml-platform-dev.svc.id.goog",
)


def test_kubeconfig_reaches_the_clusters_endpoint_over_https_with_its_ca() -> None:
    document = yaml.safe_load(kubeconfig_for(CLUSTER))
    (cluster,) = document["clusters"]
    assert cluster["cluster"] == {
        "server": "https://203.0.113.10",
        "certificate-authority-data": "Q0EgZGF0YQ==",
    }


def test_kubeconfig_authenticates_with_the_gke_auth_plugin_and_holds_no_credential() -> None:
    document = yaml.safe_load(kubeconfig_for(CLUSTER))
    (user,) = document["users"]
    assert set(user["user"]) == {"exec"}
    assert user["user"]["exec"]["command"] == AUTH_PLUGIN == "gke-gcloud-auth-plugin"
    assert user["user"]["exec"]["apiVersion"] == "client.authentication.k8s.io/v1beta1"


def test_kubeconfig_context_is_named_as_gcloud_names_it() -> None:
    name = "gke_ml-platform-dev_us-central1_ml-dev"
    document = yaml.safe_load(kubeconfig_for(CLUSTER))
    assert document["current-context"] == name
    assert document["contexts"] == [{"name": name, "context": {"cluster": name, "user": name}}]


@pytest.mark.parametrize(
    ("location", "region", "regional"),
    [("us-central1", "us-central1", True), ("europe-west4-b", "europe-west4", False)],
)
def test_region_of_a_regional_and_a_zonal_cluster(
    location: str, region: str, regional: bool
) -> None:
    cluster = dataclasses.replace(CLUSTER, location=location)
    assert (cluster.region, cluster.is_regional) == (region, regional)


def test_zone_region_is_none_for_a_region() -> None:
    assert (zone_region("us-east4-c"), zone_region("us-east4")) == ("us-east4", None)


def test_standard_cluster_with_workload_identity_has_no_problem() -> None:
    assert list(cluster_problems(CLUSTER)) == []


def test_autopilot_cluster_is_refused_at_the_cluster_name() -> None:
    (problem,) = cluster_problems(dataclasses.replace(CLUSTER, autopilot=True))
    assert (problem.path, problem.value) == ("gpu-platform:cluster.name", "ml-dev")
    assert "GKE Standard" in problem.expected


def test_cluster_without_workload_identity_is_refused_with_the_command_that_enables_it() -> None:
    (problem,) = cluster_problems(dataclasses.replace(CLUSTER, workload_pool=None))
    assert problem.path == "gpu-platform:cluster.name"
    assert "--workload-pool ml-platform-dev.svc.id.goog" in problem.expected
