"""How a GKE pool gets its capacity: Compute Engine reservations, flex-start VMs and queued
provisioning, as the node pool the real program declares (mocked program), and the settings that
cannot go together refused with their key before anything is registered.

The shapes follow GKE's own: the provisioningrequest guide creates a flex-start, queued pool with
`--flex-start --enable-queued-provisioning --enable-autoscaling --num-nodes=0
--location-policy=ANY --reservation-affinity=none --no-enable-autorepair`, and the flex-start
guide the same without queued provisioning, with `--max-run-duration <seconds>s`.
"""

from collections.abc import Callable
from typing import Any

import pytest

from gpu_platform.config import ConfigError
from gpu_platform.offline.program import Plan

from .plans import node_pool, on_ubuntu, problems_of, with_pool

# Its tests plan the same configs again and again, and change the program only through the
# stand-ins' answers.
pytestmark = pytest.mark.shared_plans

Config = dict[str, Any]
PlanFor = Callable[[Config], Plan]
ON_DEMAND_L4: Config = {"capacity": "on-demand"}
"""The fixture's pool is on Spot, which neither reservations nor flex-start go with."""
FLEX_START: Config = {**ON_DEMAND_L4, "gcp": {"flexStart": True}}
QUEUED: Config = {**ON_DEMAND_L4, "gcp": {"queuedProvisioning": True}}
SPECIFIC: Config = {
    **ON_DEMAND_L4,
    "zones": ["us-central1-a"],
    "gcp": {"reservation": "specific", "reservationName": "l4-ml-dev"},
}


def inputs(plan: Plan) -> dict[str, Any]:
    return node_pool(plan).inputs


def node_config(plan: Plan) -> dict[str, Any]:
    return inputs(plan)["nodeConfig"]


# --- Reservations --------------------------------------------------------------------------


def test_a_pool_that_states_no_reservation_sends_no_affinity(gke_plan: Plan) -> None:
    # terraform-provider-google's node_config.go marks reservation_affinity ForceNew: a default
    # stated by the platform would replace every pool created without one.
    assert "reservationAffinity" not in node_config(gke_plan)


def test_a_pool_on_no_reservation_consumes_none(gke_config: Config, plan_for: PlanFor) -> None:
    with_pool(gke_config, **ON_DEMAND_L4, gcp={"reservation": "none"})

    assert node_config(plan_for(gke_config))["reservationAffinity"] == {
        "consumeReservationType": "NO_RESERVATION"
    }


def test_an_unreserved_on_demand_pool_keeps_its_zones_balanced(
    gke_config: Config, plan_for: PlanFor
) -> None:
    with_pool(gke_config, **ON_DEMAND_L4, gcp={"reservation": "none"})

    assert inputs(plan_for(gke_config))["autoscaling"]["locationPolicy"] == "BALANCED"


def test_a_pool_on_any_reservation_consumes_any_matching_one(
    gke_config: Config, plan_for: PlanFor
) -> None:
    with_pool(gke_config, **ON_DEMAND_L4, gcp={"reservation": "any"})

    assert node_config(plan_for(gke_config))["reservationAffinity"] == {
        "consumeReservationType": "ANY_RESERVATION"
    }


def test_a_pool_on_a_specific_reservation_names_it_by_the_reservation_name_key(
    gke_config: Config, plan_for: PlanFor
) -> None:
    with_pool(gke_config, **SPECIFIC)

    plan = plan_for(gke_config)

    assert node_config(plan)["reservationAffinity"] == {
        "consumeReservationType": "SPECIFIC_RESERVATION",
        "key": "compute.googleapis.com/reservation-name",
        "values": ["l4-ml-dev"],
    }
    assert inputs(plan)["nodeLocations"] == ["us-central1-a"]


@pytest.mark.parametrize(
    "reserved", [{**ON_DEMAND_L4, "gcp": {"reservation": "any"}}, SPECIFIC], ids=["any", "specific"]
)
def test_a_reserved_pool_scales_up_where_its_reservation_has_room(
    gke_config: Config, plan_for: PlanFor, reserved: Config
) -> None:
    # ANY "prioritize[s] utilization of unused reservations" (pulumi-gcp's location_policy).
    with_pool(gke_config, **reserved)

    assert inputs(plan_for(gke_config))["autoscaling"]["locationPolicy"] == "ANY"


# --- Flex-start ----------------------------------------------------------------------------


def test_a_flex_start_pool_is_created_as_gkes_guide_creates_one(
    gke_config: Config, plan_for: PlanFor
) -> None:
    with_pool(gke_config, **FLEX_START)

    plan = plan_for(gke_config)

    assert node_config(plan)["flexStart"] is True
    assert node_config(plan)["spot"] is False
    assert node_config(plan)["reservationAffinity"] == {"consumeReservationType": "NO_RESERVATION"}
    assert inputs(plan)["initialNodeCount"] == 0
    assert inputs(plan)["autoscaling"] == {
        "totalMinNodeCount": 0,
        "totalMaxNodeCount": 3,
        "locationPolicy": "ANY",
    }
    assert inputs(plan)["management"] == {"autoRepair": False, "autoUpgrade": True}
    assert "queuedProvisioning" not in inputs(plan)


def test_a_flex_start_pool_leaves_the_run_time_to_gkes_default_of_seven_days(
    gke_config: Config, plan_for: PlanFor
) -> None:
    with_pool(gke_config, **FLEX_START)

    assert "maxRunDuration" not in node_config(plan_for(gke_config))


def test_max_run_hours_become_the_nodes_max_run_duration_in_seconds(
    gke_config: Config, plan_for: PlanFor
) -> None:
    with_pool(gke_config, **ON_DEMAND_L4, gcp={"flexStart": True, "maxRunHours": 24})

    assert node_config(plan_for(gke_config))["maxRunDuration"] == "86400s"


# --- Queued provisioning -------------------------------------------------------------------


@pytest.mark.parametrize("flex_start", [False, True])
def test_a_queued_pool_gets_nodes_only_through_provisioning_requests(
    gke_config: Config, plan_for: PlanFor, flex_start: bool
) -> None:
    with_pool(gke_config, **ON_DEMAND_L4, gcp={"queuedProvisioning": True, "flexStart": flex_start})

    plan = plan_for(gke_config)

    assert inputs(plan)["queuedProvisioning"] == {"enabled": True}
    assert inputs(plan)["autoscaling"] == {
        "totalMinNodeCount": 0,
        "totalMaxNodeCount": 3,
        "locationPolicy": "ANY",
    }
    assert inputs(plan)["management"] == {"autoRepair": False, "autoUpgrade": True}
    assert node_config(plan)["reservationAffinity"] == {"consumeReservationType": "NO_RESERVATION"}


def test_a_queued_pool_declares_only_the_gpu_taint_as_gke_adds_its_own(
    gke_config: Config, plan_for: PlanFor
) -> None:
    # "to add the cloud.google.com/gke-queued taint to the node pool" (the provisioningrequest
    # page): GKE's, not the pool's to declare.
    with_pool(gke_config, **QUEUED)

    assert node_config(plan_for(gke_config))["taints"] == [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"},
        {"key": VALIDATION_TOLERATION["key"], "value": "pending", "effect": "NO_SCHEDULE"},
    ]


# GKE taints a queued pool's nodes `cloud.google.com/gke-queued=true:NoSchedule` itself ("to add
# the cloud.google.com/gke-queued taint to the node pool", the provisioningrequest page), and a
# DaemonSet tolerates only `node.kubernetes.io/*` taints by itself: without these, the device
# plugin never runs there and `nvidia.com/gpu` is never advertised.
GKE_QUEUED_TOLERATION = {
    "key": "cloud.google.com/gke-queued",
    "operator": "Equal",
    "value": "true",
    "effect": "NoSchedule",
}
# Every validated pool's own startup taint (docs/node-validation.md), which the platform's
# DaemonSets tolerate as they do the pool's other taints.
VALIDATION_TOLERATION = {
    "key": "startup-taint.cluster-autoscaler.kubernetes.io/gpu-validation",
    "operator": "Equal",
    "value": "pending",
    "effect": "NoSchedule",
}


def operator_values(plan: Plan) -> dict[str, Any]:
    return plan.named("gpu-operator", "kubernetes:helm.sh/v3:Release").inputs["values"]


def test_the_operators_daemonsets_tolerate_the_taint_gke_puts_on_a_queued_pool(
    gke_config: Config, plan_for: PlanFor
) -> None:
    with_pool(gke_config, **QUEUED)

    tolerations = operator_values(plan_for(gke_config))["daemonsets"]["tolerations"]

    assert GKE_QUEUED_TOLERATION in tolerations


def test_the_feature_discovery_worker_tolerates_the_taint_gke_puts_on_a_queued_pool(
    gke_config: Config, plan_for: PlanFor
) -> None:
    # NFD's worker labels the node `feature.node.kubernetes.io/pci-10de.present`, by which the
    # operator finds its GPU nodes: its tolerations are its own, not `daemonsets.tolerations`.
    with_pool(gke_config, **QUEUED)

    worker = operator_values(plan_for(gke_config))["node-feature-discovery"]["worker"]

    assert GKE_QUEUED_TOLERATION in worker["tolerations"]


def test_a_queued_ubuntu_pools_driver_tolerates_the_taint_gke_puts_on_it(
    gke_config: Config, plan_for: PlanFor
) -> None:
    on_ubuntu(gke_config)
    with_pool(gke_config, **QUEUED)

    (driver,) = plan_for(gke_config).of_type("kubernetes:nvidia.com/v1alpha1:NVIDIADriver")

    assert driver.inputs["spec"]["tolerations"] == [VALIDATION_TOLERATION, GKE_QUEUED_TOLERATION]


def test_a_queued_pools_workloads_are_told_to_tolerate_the_taint_gke_puts_on_it(
    gke_config: Config, plan_for: PlanFor
) -> None:
    with_pool(gke_config, **QUEUED)

    pool = plan_for(gke_config).outputs["pools"]["l4-shared"]

    assert {"key": "cloud.google.com/gke-queued", "value": "true", "effect": "NoSchedule"} in pool[
        "taints"
    ]
    assert GKE_QUEUED_TOLERATION in pool["workload"]["tolerations"]


@pytest.mark.parametrize("mode", [ON_DEMAND_L4, FLEX_START, SPECIFIC])
def test_pools_gke_does_not_taint_add_no_toleration_for_it(
    gke_config: Config, plan_for: PlanFor, mode: Config
) -> None:
    with_pool(gke_config, **mode)

    tolerations = operator_values(plan_for(gke_config))["daemonsets"]["tolerations"]

    assert tolerations == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        VALIDATION_TOLERATION,
    ]


@pytest.mark.parametrize("mode", [FLEX_START, QUEUED])
def test_capacity_modes_keep_the_pools_node_identity(
    gke_config: Config, plan_for: PlanFor, mode: Config
) -> None:
    with_pool(gke_config, **ON_DEMAND_L4)
    ordinary = node_config(plan_for(gke_config))
    with_pool(gke_config, **mode)

    changed = node_config(plan_for(gke_config))

    assert (changed["labels"], changed["taints"]) == (ordinary["labels"], ordinary["taints"])


def test_an_ordinary_pool_states_none_of_the_scheduler_settings(gke_plan: Plan) -> None:
    # Each of them replaces a node pool when it changes: a pool from before they existed must
    # not see them appear.
    assert "queuedProvisioning" not in inputs(gke_plan)
    assert {"flexStart", "maxRunDuration"}.isdisjoint(node_config(gke_plan))


# --- Settings that cannot go together ------------------------------------------------------

# (what is wrong, the pool's changes, the key the error names, words its expectation has)
BAD_POOLS: list[tuple[str, Config, str, str]] = [
    (
        "specific reservation without its name",
        {**SPECIFIC, "gcp": {"reservation": "specific"}},
        "pools[0].gcp.reservationName",
        "the name of the Compute Engine reservation to consume",
    ),
    (
        "reservation name without a specific reservation",
        {**ON_DEMAND_L4, "gcp": {"reservation": "any", "reservationName": "l4-ml-dev"}},
        "pools[0].gcp.reservationName",
        "no value unless gcp.reservation is specific",
    ),
    (
        "specific reservation over the region's zones",
        {**SPECIFIC, "zones": []},
        "pools[0].zones",
        "exactly one zone with reservation specific",
    ),
    (
        "specific reservation over two zones",
        {**SPECIFIC, "zones": ["us-central1-a", "us-central1-b"]},
        "pools[0].zones",
        "exactly one zone with reservation specific",
    ),
    (
        "Spot VMs on reservations",
        {"capacity": "spot", "gcp": {"reservation": "any"}},
        "pools[0].gcp.reservation",
        "none, or no value, with capacity spot: Spot VMs cannot consume reservations",
    ),
    (
        "flex-start on a reservation",
        {**ON_DEMAND_L4, "gcp": {"flexStart": True, "reservation": "any"}},
        "pools[0].gcp.reservation",
        "none, or no value, with gcp.flexStart or gcp.queuedProvisioning",
    ),
    (
        "queued provisioning on a specific reservation",
        {**SPECIFIC, "gcp": {**SPECIFIC["gcp"], "queuedProvisioning": True}},
        "pools[0].gcp.reservation",
        "none, or no value, with gcp.flexStart or gcp.queuedProvisioning",
    ),
    (
        "flex-start Spot VMs",
        {"capacity": "spot", "gcp": {"flexStart": True}},
        "pools[0].capacity",
        "on-demand with gcp.flexStart",
    ),
    (
        "a floor of flex-start nodes",
        {**FLEX_START, "min": 3, "max": 6},
        "pools[0].min",
        "0 with gcp.flexStart:",
    ),
    (
        "a floor of queued nodes",
        {**QUEUED, "min": 3, "max": 6},
        "pools[0].min",
        "0 with gcp.queuedProvisioning:",
    ),
    (
        "a run time for nodes that are not flex-start",
        {**QUEUED, "gcp": {"queuedProvisioning": True, "maxRunHours": 24}},
        "pools[0].gcp.maxRunHours",
        "no value unless gcp.flexStart is true",
    ),
    (
        "a run time beyond flex-start's seven days",
        {**ON_DEMAND_L4, "gcp": {"flexStart": True, "maxRunHours": 169}},
        "pools[0].gcp.maxRunHours",
        "less than or equal to 168",
    ),
    (
        "flex-start nodes pinned to a GKE version without it",
        {**ON_DEMAND_L4, "gcp": {"flexStart": True, "nodeVersion": "1.32.1-gke.1729000"}},
        "pools[0].gcp.nodeVersion",
        "1.32.2-gke.1652000 or later with gcp.flexStart",
    ),
]


@pytest.mark.parametrize(
    ("changes", "path", "words"),
    [case[1:] for case in BAD_POOLS],
    ids=[case[0] for case in BAD_POOLS],
)
def test_a_pool_whose_capacity_settings_conflict_is_refused_before_anything_is_registered(
    gke_config: Config, failed_plan_for: PlanFor, changes: Config, path: str, words: str
) -> None:
    with_pool(gke_config, **changes)

    plan = failed_plan_for(gke_config)

    problems = problems_of(plan)
    assert words in problems[f"gpu-platform:{path}"], problems
    assert plan.resources == []


# The minimum, and a later two-digit patch version (as text, 1.32.10 would sort before 1.32.2).
@pytest.mark.parametrize("version", ["1.32.2-gke.1652000", "1.32.10-gke.1000"])
def test_a_flex_start_pool_on_the_minimum_node_version_or_later_is_accepted(
    gke_config: Config, plan_for: PlanFor, version: str
) -> None:
    with_pool(gke_config, **ON_DEMAND_L4, gcp={"flexStart": True, "nodeVersion": version})

    assert node_config(plan_for(gke_config))["flexStart"] is True


@pytest.mark.parametrize(
    ("gcp", "master_version", "key", "minimum"),
    [
        ({"flexStart": True}, "1.32.1-gke.1729000", "flexStart", "1.32.2-gke.1652000"),
        (
            {"queuedProvisioning": True},
            "1.28.2-gke.1157000",
            "queuedProvisioning",
            "1.28.3-gke.1098000",
        ),
    ],
)
def test_a_capacity_mode_the_clusters_gke_version_lacks_is_refused_at_its_key(
    gke_config: Config,
    failed_plan_for: PlanFor,
    cluster_answer: dict[str, Any],
    gcp: Config,
    master_version: str,
    key: str,
    minimum: str,
) -> None:
    # On Ubuntu, whose driver the operator builds: GKE documents COS's drivers from 1.31 only.
    on_ubuntu(gke_config)
    cluster_answer["masterVersion"] = master_version
    with_pool(gke_config, **ON_DEMAND_L4, gcp=gcp)

    plan = failed_plan_for(gke_config)

    assert isinstance(plan.error, ConfigError)
    (problem,) = plan.error.problems
    assert (problem.path, problem.value) == (f"gpu-platform:pools[0].gcp.{key}", True)
    assert problem.expected == (
        f"false, or a cluster on GKE {minimum} or later (ml-dev runs {master_version}):"
        " upgrade the cluster first"
    )
    assert plan.resources == []


FOR_GCP = "no value when cloud is aws: it applies to gcp stacks only (GKE node pool settings)"


@pytest.mark.parametrize(
    "options",
    [
        {"reservation": "any"},
        {"reservation": "specific", "reservationName": "h100-ml-prod"},
        {"flexStart": True},
        {"queuedProvisioning": True},
        {"maxRunHours": 24},
    ],
)
def test_gke_capacity_settings_on_an_eks_stack_are_refused(
    dev_config: Config, failed_plan_for: PlanFor, options: Config
) -> None:
    dev_config["gpu-platform:pools"][0]["gcp"] = options

    plan = failed_plan_for(dev_config)

    assert problems_of(plan)["gpu-platform:pools[0].gcp"] == FOR_GCP
    assert plan.resources == []
