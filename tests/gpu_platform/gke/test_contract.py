"""Contract: every node pool the program declares is a `NodePool` the GKE API accepts, by the
API's own discovery document (field names, types, enums)."""

import copy
from collections.abc import Callable
from typing import Any

import pytest

from gpu_platform.offline.program import Plan
from tests.shared_plans import shared_plan
from tests.stack_variants import with_gke_capacity_pools

from .gke_api import api_problems, discovery_document, to_api_node_pool
from .plans import NODE_POOL, on_ubuntu, with_cluster, with_pool

Config = dict[str, Any]


def api_node_pools(plan: Plan) -> list[dict[str, Any]]:
    pools = plan.of_type(NODE_POOL)
    assert pools, "the plan has no node pool"
    return [to_api_node_pool(pool.name, pool.inputs) for pool in pools]


def test_gke_dev_stack_node_pools_fit_the_api() -> None:
    for body in api_node_pools(shared_plan("gke-dev")):
        assert api_problems(body) == []


VARIANTS: dict[str, Callable[[Config], Config]] = {
    "ubuntu": on_ubuntu,
    "per-zone on-demand with a floor": lambda c: with_pool(
        c, capacity="on-demand", min=1, gcp={"autoscalingScope": "per-zone"}
    ),
    "extra taints and labels": lambda c: with_pool(
        c,
        labels={"team": "vision"},
        taints=[{"key": "team", "value": "vision", "effect": "PreferNoSchedule"}],
    ),
    "configured service account, ssd, surge off": lambda c: with_pool(
        c,
        gcp={
            "serviceAccount": "gpu-nodes@ml-platform-dev.iam.gserviceaccount.com",
            "diskType": "pd-ssd",
            "maxSurge": 0,
            "maxUnavailable": 1,
        },
    ),
    "n1 with attached t4s": lambda c: with_pool(
        c,
        instanceTypes=["n1-standard-16"],
        accelerator="t4",
        gpusPerNode=4,
        zones=["us-central1-b"],
    ),
    "a100 mig": lambda c: with_pool(
        c,
        instanceTypes=["a2-highgpu-8g"],
        accelerator=None,
        gpusPerNode=None,
        sharing={"mode": "mig", "strategy": "mixed", "profile": "all-3g.20gb"},
    ),
    "h200 on hyperdisk": lambda c: with_pool(
        with_cluster(c, location="us-east4"),
        instanceTypes=["a3-ultragpu-8g"],
        accelerator=None,
        gpusPerNode=None,
    ),
    "specific reservation, flex-start and queued provisioning": with_gke_capacity_pools,
    "blue-green upgrades with a soak": lambda c: with_pool(
        c, gcp={"upgradeStrategy": "blue-green", "blueGreenSoakHours": 24}
    ),
}


@pytest.mark.parametrize("variant", VARIANTS)
def test_node_pool_fits_the_api(
    gke_config: Config, plan_for: Callable[[Config], Plan], variant: str
) -> None:
    for body in api_node_pools(plan_for(VARIANTS[variant](gke_config))):
        assert api_problems(body) == []


def test_translation_carries_every_part_of_the_pool_into_the_body(gke_plan: Plan) -> None:
    (body,) = api_node_pools(gke_plan)
    assert set(body) == {
        "name",
        "locations",
        "initialNodeCount",
        "autoscaling",
        "management",
        "upgradeSettings",
        "config",
    }
    assert body["autoscaling"]["enabled"] is True
    (accelerator,) = body["config"]["accelerators"]
    assert accelerator["acceleratorType"] == "nvidia-l4"


# The validator itself: each of these must be caught, or the tests above prove nothing.


@pytest.fixture
def body(gke_plan: Plan) -> dict[str, Any]:
    (found,) = api_node_pools(gke_plan)
    return copy.deepcopy(found)


def test_validator_catches_a_misspelt_field(body: dict[str, Any]) -> None:
    body["config"]["diskSizeGB"] = body["config"].pop("diskSizeGb")
    assert api_problems(body) == ["NodePool.config.diskSizeGB: no such field in NodeConfig"]


def test_validator_catches_a_misspelt_nested_field(body: dict[str, Any]) -> None:
    accelerator = body["config"]["accelerators"][0]
    accelerator["gpuDriverInstallConfig"] = accelerator.pop("gpuDriverInstallationConfig")
    assert api_problems(body) == [
        "NodePool.config.accelerators[0].gpuDriverInstallConfig: no such field in AcceleratorConfig"
    ]


def test_validator_catches_a_bad_enum(body: dict[str, Any]) -> None:
    # The Kubernetes spelling of the effect, which GKE does not take.
    body["config"]["taints"][0]["effect"] = "NoSchedule"
    (problem,) = api_problems(body)
    assert problem.startswith("NodePool.config.taints[0].effect: 'NoSchedule' is not one of")


def test_validator_catches_a_bad_driver_version_enum(body: dict[str, Any]) -> None:
    body["config"]["accelerators"][0]["gpuDriverInstallationConfig"]["gpuDriverVersion"] = (
        "DISABLED"
    )
    assert len(api_problems(body)) == 1


def test_validator_catches_a_wrong_type(body: dict[str, Any]) -> None:
    body["config"]["spot"] = "true"
    body["autoscaling"]["totalMaxNodeCount"] = 2.5
    assert sorted(api_problems(body)) == [
        "NodePool.autoscaling.totalMaxNodeCount: 2.5 is not a 32-bit integer",
        "NodePool.config.spot: 'true' is not a boolean",
    ]


def test_validator_catches_a_field_the_api_sets_itself(body: dict[str, Any]) -> None:
    body["status"] = "RUNNING"
    assert api_problems(body) == ["NodePool.status: output only, set by the API"]


def test_validator_checks_map_values(body: dict[str, Any]) -> None:
    body["config"]["labels"]["gpu-platform.io/pool"] = 3
    assert api_problems(body) == ["NodePool.config.labels.gpu-platform.io/pool: 3 is not a string"]


def test_translation_passes_an_unknown_provider_input_on_for_the_schema_to_refuse(
    gke_plan: Plan,
) -> None:
    (pool,) = gke_plan.of_type(NODE_POOL)
    inputs = {**pool.inputs, "nodeLocation": ["us-central1-a"]}
    assert api_problems(to_api_node_pool(pool.name, inputs)) == [
        "NodePool.nodeLocation: no such field in NodePool"
    ]


def test_discovery_document_is_the_container_v1_api() -> None:
    document = discovery_document()
    assert (document["name"], document["version"]) == ("container", "v1")
    assert {"NodePool", "NodeConfig", "AcceleratorConfig", "NodeTaint"} <= set(document["schemas"])
