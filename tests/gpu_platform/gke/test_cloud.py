"""The GKE side of the program: attaching to the cluster, and bad input refused before any
resource is registered (mocked program)."""

from collections.abc import Callable
from typing import Any

import pytest
import yaml

from gpu_platform.offline.program import Plan
from tests.stack_variants import without_queues

from .plans import GET_CLUSTER, on_ubuntu, problems_of, with_cluster, with_pool

Config = dict[str, Any]
PlanFor = Callable[[Config], Plan]


def test_cluster_is_looked_up_by_the_configured_project_location_and_name(
    gke_plan: Plan,
) -> None:
    (lookup,) = [i for i in gke_plan.invokes if i.token == GET_CLUSTER]
    assert (lookup.args["project"], lookup.args["location"], lookup.args["name"]) == (
        "ml-platform-dev",
        "us-central1",
        "ml-dev",
    )


def test_kubeconfig_is_exported_only_as_a_secret(gke_plan: Plan) -> None:
    assert "kubeconfig" in gke_plan.secret_outputs
    document = yaml.safe_load(gke_plan.outputs["kubeconfig"])
    assert document["users"][0]["user"]["exec"]["command"] == "gke-gcloud-auth-plugin"


def test_kubernetes_provider_uses_the_clusters_endpoint_and_the_exported_kubeconfig(
    gke_plan: Plan,
) -> None:
    (provider,) = gke_plan.of_type("pulumi:providers:kubernetes")
    assert provider.inputs["kubeconfig"] == gke_plan.outputs["kubeconfig"]
    (cluster,) = yaml.safe_load(provider.inputs["kubeconfig"])["clusters"]
    assert cluster["cluster"]["server"] == "https://203.0.113.10"


def test_every_kubernetes_resource_goes_through_the_clusters_provider(gke_plan: Plan) -> None:
    (provider,) = gke_plan.of_type("pulumi:providers:kubernetes")
    on_cluster = [r for r in gke_plan.resources if r.type.startswith("kubernetes:")]
    assert on_cluster
    # A provider reference is the provider's URN, `::` and its ID.
    assert {r.name: (r.provider or "").rsplit("::", 1)[0] for r in on_cluster} == {
        r.name: provider.urn for r in on_cluster
    }


def test_kubeconfig_context_from_config_is_used_instead_and_nothing_is_exported(
    gke_config: Config, plan_for: PlanFor
) -> None:
    with_cluster(gke_config, kubeconfigContext="gke_ml-platform-dev_us-central1_ml-dev")
    plan = plan_for(gke_config)
    (provider,) = plan.of_type("pulumi:providers:kubernetes")
    assert provider.inputs["context"] == "gke_ml-platform-dev_us-central1_ml-dev"
    assert "kubeconfig" not in provider.inputs
    assert "kubeconfig" not in plan.outputs


def test_autopilot_cluster_is_refused_before_any_resource(
    gke_config: Config, failed_plan_for: PlanFor, cluster_answer: dict[str, Any]
) -> None:
    cluster_answer["enableAutopilot"] = True
    plan = failed_plan_for(gke_config)
    assert list(problems_of(plan)) == ["gpu-platform:cluster.name"]
    assert plan.resources == []


def test_cluster_without_workload_identity_is_refused_before_any_resource(
    gke_config: Config, failed_plan_for: PlanFor, cluster_answer: dict[str, Any]
) -> None:
    cluster_answer["workloadIdentityConfigs"] = []
    plan = failed_plan_for(gke_config)
    assert "Workload Identity" in problems_of(plan)["gpu-platform:cluster.name"]
    assert plan.resources == []


@pytest.mark.parametrize(
    ("pool", "path"),
    [
        # A3 with a T4.
        (
            {"instanceTypes": ["a3-highgpu-8g"], "accelerator": "t4", "gpusPerNode": 8},
            "gpu-platform:pools[0].accelerator",
        ),
        # MIG on an L4.
        (
            {"sharing": {"mode": "mig", "profile": "all-1g.10gb"}},
            "gpu-platform:pools[0].sharing.mode",
        ),
        # A pool with no GPU.
        ({"instanceTypes": ["n2-standard-8"]}, "gpu-platform:pools[0].instanceTypes[0]"),
        # A count the machine type does not come with.
        ({"gpusPerNode": 2}, "gpu-platform:pools[0].gpusPerNode"),
        # Persistent Disk on a machine type that takes only Hyperdisk.
        (
            {
                "instanceTypes": ["a4-highgpu-8g"],
                "accelerator": None,
                "gpusPerNode": None,
                "gcp": {"diskType": "pd-balanced"},
            },
            "gpu-platform:pools[0].gcp.diskType",
        ),
        # Upgrades that could neither add nor take out a node.
        ({"gcp": {"maxSurge": 0, "maxUnavailable": 0}}, "gpu-platform:pools[0].gcp.maxSurge"),
    ],
)
def test_bad_pool_is_refused_at_its_key_before_any_resource(
    gke_config: Config, failed_plan_for: PlanFor, pool: Config, path: str
) -> None:
    plan = failed_plan_for(with_pool(gke_config, **pool))
    assert list(problems_of(plan)) == [path]
    assert plan.resources == []


def test_mig_on_a_gpu_read_from_the_machine_type_is_checked_too(
    gke_config: Config, failed_plan_for: PlanFor
) -> None:
    mig = {"mode": "mig", "profile": "all-1g.10gb"}
    with_pool(gke_config, accelerator=None, gpusPerNode=None, sharing=mig)
    plan = failed_plan_for(gke_config)
    assert "l4 has no MIG" in problems_of(plan)["gpu-platform:pools[0].sharing.mode"]
    assert plan.resources == []


def test_cos_with_the_operators_driver_is_refused_before_any_resource(
    gke_config: Config, failed_plan_for: PlanFor
) -> None:
    gke_config["gpu-platform:operator"] = {"overrides": {"driver": {"enabled": True}}}
    plan = failed_plan_for(gke_config)
    assert "nodeImage ubuntu" in problems_of(plan)["gpu-platform:operator.overrides.driver.enabled"]
    assert plan.resources == []


def test_ubuntu_with_the_operators_driver_is_accepted(
    gke_config: Config, plan_for: PlanFor
) -> None:
    on_ubuntu(gke_config)
    gke_config["gpu-platform:operator"] = {"overrides": {"driver": {"enabled": True}}}
    assert plan_for(gke_config).of_type("gcp:container/nodePool:NodePool")


def test_every_bad_pool_is_reported_at_once(gke_config: Config, failed_plan_for: PlanFor) -> None:
    good = gke_config["gpu-platform:pools"][0]
    without_queues(gke_config)["gpu-platform:pools"] = [
        {**good, "name": "no-gpu", "instanceTypes": ["e2-standard-8"]},
        good,
        {**good, "name": "wrong-count", "gpusPerNode": 4},
    ]
    assert list(problems_of(failed_plan_for(gke_config))) == [
        "gpu-platform:pools[0].instanceTypes[0]",
        "gpu-platform:pools[2].gpusPerNode",
    ]
