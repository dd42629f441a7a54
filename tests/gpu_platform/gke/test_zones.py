"""Where the program places a pool's nodes, from the stand-in zone lookups (mocked program).

The stand-in us-central1 has zones a, b, c and f; f offers no G2 and no A2 Ultra.
"""

from collections.abc import Callable
from typing import Any

from gpu_platform.offline.program import Plan
from tests.stack_variants import without_queues

from .plans import node_pool, problems_of, with_cluster, with_pool

Config = dict[str, Any]
PlanFor = Callable[[Config], Plan]
MACHINE_TYPES = "gcp:compute/getMachineTypes:getMachineTypes"


def test_regional_pool_goes_to_the_zones_of_the_region_that_offer_its_machine_type(
    gke_plan: Plan,
) -> None:
    assert node_pool(gke_plan).inputs["nodeLocations"] == [
        "us-central1-a",
        "us-central1-b",
        "us-central1-c",
    ]


def test_every_zone_of_the_region_is_asked_for_the_machine_type(gke_plan: Plan) -> None:
    asked = [i.args for i in gke_plan.invokes if i.token == MACHINE_TYPES]
    assert sorted(a["zone"] for a in asked) == [f"us-central1-{z}" for z in "abcf"]
    assert {a["filter"] for a in asked} == {'name = "g2-standard-8"'}
    assert {a["project"] for a in asked} == {"ml-platform-dev"}


def test_each_zone_is_asked_once_however_many_pools_share_a_machine_type(
    gke_config: Config, plan_for: PlanFor
) -> None:
    second = {**gke_config["gpu-platform:pools"][0], "name": "l4-second"}
    without_queues(gke_config)["gpu-platform:pools"].append(second)
    plan = plan_for(gke_config)
    asked = [i.args["zone"] for i in plan.invokes if i.token == MACHINE_TYPES]
    assert len(asked) == len(set(asked)) == 4


def test_zonal_cluster_pool_stays_in_the_clusters_zone(
    gke_config: Config, plan_for: PlanFor
) -> None:
    with_cluster(gke_config, location="us-central1-b")
    assert node_pool(plan_for(gke_config)).inputs["nodeLocations"] == ["us-central1-b"]


def test_zones_named_by_the_pool_are_kept(gke_config: Config, plan_for: PlanFor) -> None:
    with_pool(gke_config, zones=["us-central1-c", "us-central1-a"])
    assert node_pool(plan_for(gke_config)).inputs["nodeLocations"] == [
        "us-central1-c",
        "us-central1-a",
    ]


def test_zone_without_the_machine_type_is_refused_naming_the_zones_that_have_it(
    gke_config: Config, failed_plan_for: PlanFor
) -> None:
    with_pool(gke_config, zones=["us-central1-a", "us-central1-f"])
    plan = failed_plan_for(gke_config)
    assert problems_of(plan) == {
        "gpu-platform:pools[0].zones[1]": "a zone of us-central1 that offers g2-standard-8:"
        " us-central1-a, us-central1-b, us-central1-c"
    }
    assert plan.resources == []


def test_zone_outside_the_clusters_region_is_refused(
    gke_config: Config, failed_plan_for: PlanFor
) -> None:
    with_pool(gke_config, zones=["europe-west4-a"])
    plan = failed_plan_for(gke_config)
    assert list(problems_of(plan)) == ["gpu-platform:pools[0].zones[0]"]
    assert plan.resources == []


def test_pool_with_no_zone_offering_its_machine_type_is_refused_naming_the_pool(
    gke_config: Config, failed_plan_for: PlanFor
) -> None:
    # No zone of the stand-in us-central1 offers A3 Ultra.
    with_pool(gke_config, instanceTypes=["a3-ultragpu-8g"], accelerator=None, gpusPerNode=None)
    plan = failed_plan_for(gke_config)
    found = problems_of(plan)
    assert list(found) == ["gpu-platform:pools[0].instanceTypes[0]"]
    assert "pool l4-shared has no zone left" in found["gpu-platform:pools[0].instanceTypes[0]"]
    assert plan.resources == []


def test_n1_pool_must_name_its_zones(gke_config: Config, failed_plan_for: PlanFor) -> None:
    with_pool(gke_config, instanceTypes=["n1-standard-8"], accelerator="t4")
    plan = failed_plan_for(gke_config)
    found = problems_of(plan)
    assert list(found) == ["gpu-platform:pools[0].zones"]
    assert "nvidia-tesla-t4" in found["gpu-platform:pools[0].zones"]
    assert plan.resources == []


def test_n1_pool_goes_to_the_zones_it_names_with_its_attached_gpus(
    gke_config: Config, plan_for: PlanFor
) -> None:
    with_pool(
        gke_config,
        instanceTypes=["n1-standard-16"],
        accelerator="t4",
        gpusPerNode=2,
        zones=["us-central1-b", "us-central1-f"],
    )
    pool = node_pool(plan_for(gke_config))
    assert pool.inputs["nodeLocations"] == ["us-central1-b", "us-central1-f"]
    (accelerator,) = pool.inputs["nodeConfig"]["guestAccelerators"]
    assert (accelerator["type"], accelerator["count"]) == ("nvidia-tesla-t4", 2)
