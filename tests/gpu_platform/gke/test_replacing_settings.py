"""The settings whose change replaces a GKE node pool: each one does change the node pool input
it names (mocked program), an input the provider replaces the pool to change (`ForceNew` in
terraform-provider-google google/services/container/node_config.go: `guest_accelerator` with its
`count`, `type`, `gpu_sharing_config` and `gpu_partition_size`, `spot`, `reservation_affinity`,
`flex_start`, `max_run_duration`, `service_account`, `shielded_instance_config`; and
resource_container_node_pool.go: `queued_provisioning`), and the offline plan lists them."""

import copy
from collections.abc import Callable
from typing import Any

import pytest
from rich.console import Console

from gpu_platform.cli.plan import print_replacing_settings
from gpu_platform.gke.replacing_settings import REPLACING_SETTINGS
from gpu_platform.offline.program import Plan
from tests.shared_plans import shared_plan

from .plans import node_pool, on_ubuntu, with_cluster, with_pool

# Its tests plan the same configs again and again, and change the program only through the
# stand-ins' answers.
pytestmark = pytest.mark.shared_plans

Config = dict[str, Any]
PlanFor = Callable[[Config], Plan]
ON_DEMAND = {"capacity": "on-demand"}
N1_T4 = {"instanceTypes": ["n1-standard-16"], "accelerator": "t4", "zones": ["us-central1-b"]}
SPECIFIC = {
    **ON_DEMAND,
    "zones": ["us-central1-a"],
    "gcp": {"reservation": "specific", "reservationName": "l4-a"},
}

# Each setting: the pool (or cluster) before, and after its change.
CHANGES: dict[str, tuple[Config, Config]] = {
    "pools[].instanceTypes": ({}, {"instanceTypes": ["g2-standard-24"], "gpusPerNode": 2}),
    "pools[].accelerator": (
        {**N1_T4, "gpusPerNode": 2},
        {**N1_T4, "accelerator": "v100", "gpusPerNode": 2},
    ),
    "pools[].gpusPerNode": ({**N1_T4, "gpusPerNode": 1}, {**N1_T4, "gpusPerNode": 2}),
    "pools[].sharing": ({}, {"sharing": {"mode": "time-slicing", "replicas": 2}}),
    "pools[].capacity": ({}, ON_DEMAND),
    "pools[].gcp.reservation": (ON_DEMAND, {**ON_DEMAND, "gcp": {"reservation": "any"}}),
    "pools[].gcp.reservationName": (
        SPECIFIC,
        {**SPECIFIC, "gcp": {"reservation": "specific", "reservationName": "l4-b"}},
    ),
    "pools[].gcp.flexStart": (ON_DEMAND, {**ON_DEMAND, "gcp": {"flexStart": True}}),
    "pools[].gcp.maxRunHours": (
        {**ON_DEMAND, "gcp": {"flexStart": True, "maxRunHours": 24}},
        {**ON_DEMAND, "gcp": {"flexStart": True, "maxRunHours": 48}},
    ),
    "pools[].gcp.queuedProvisioning": (
        ON_DEMAND,
        {**ON_DEMAND, "gcp": {"queuedProvisioning": True}},
    ),
    "pools[].gcp.serviceAccount": (
        {},
        {"gcp": {"serviceAccount": "gpu-nodes@ml-platform-dev.iam.gserviceaccount.com"}},
    ),
}


def test_every_listed_setting_has_a_change_below() -> None:
    assert set(CHANGES) | {"cluster.nodeImage"} == set(REPLACING_SETTINGS)


def value_at(plan: Plan, path: str) -> Any:
    value: Any = node_pool(plan).inputs
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


@pytest.mark.parametrize("setting", CHANGES)
def test_a_replacing_setting_changes_the_input_it_names(
    gke_config: Config, plan_for: PlanFor, setting: str
) -> None:
    before, after = CHANGES[setting]
    path = REPLACING_SETTINGS[setting]

    old = value_at(plan_for(with_pool(copy.deepcopy(gke_config), **before)), path)
    new = value_at(plan_for(with_pool(copy.deepcopy(gke_config), **after)), path)

    assert old != new


def test_the_node_image_changes_the_shielded_instance_config(
    gke_config: Config, plan_for: PlanFor
) -> None:
    path = REPLACING_SETTINGS["cluster.nodeImage"]
    cos = copy.deepcopy(on_ubuntu(copy.deepcopy(gke_config)))
    with_cluster(cos, nodeImage="cos")

    assert value_at(plan_for(cos), path) != value_at(plan_for(on_ubuntu(gke_config)), path)


def printed(plan: Plan) -> str:
    console = Console(record=True, width=1000)
    print_replacing_settings(plan, console)
    return console.export_text()


def test_the_plan_of_a_gke_stack_lists_the_settings_that_replace_a_node_pool() -> None:
    shown = printed(shared_plan("gke-dev"))

    assert "A change of pools[].instanceTypes, pools[].accelerator," in shown
    assert "cluster.nodeImage replaces the node pool and its nodes" in shown


def test_the_plan_of_an_eks_stack_says_nothing_of_gke_node_pools() -> None:
    assert printed(shared_plan("dev")) == ""
