"""The GKE node pool the real program declares, property by property (mocked program)."""

import re
from collections.abc import Callable
from typing import Any

import pytest
from pulumi import _types
from pulumi_gcp import container

from gpu_platform.gke.cluster import GkeCluster
from gpu_platform.gke.node_pool import NODE_SERVICE_ACCOUNT_ROLE, node_service_account_id
from gpu_platform.offline.program import Plan
from tests.stack_variants import without_queues

from .gke_api import api_problems, to_api_node_pool
from .plans import node_pool, on_ubuntu, problems_of, with_cluster, with_pool

# Its tests plan the same configs again and again, and change the program only through the
# stand-ins' answers.
pytestmark = pytest.mark.shared_plans

Config = dict[str, Any]
PlanFor = Callable[[Config], Plan]
MIG_POOL = {
    "name": "a100-mig",
    "instanceTypes": ["a2-highgpu-1g"],
    "max": 2,
    "sharing": {"mode": "mig", "profile": "all-1g.5gb"},
}


def node_config(plan: Plan, pool: str = "l4-shared") -> dict[str, Any]:
    return node_pool(plan, pool).inputs["nodeConfig"]


def test_node_pool_is_a_child_of_the_pools_component(gke_plan: Plan) -> None:
    pool = node_pool(gke_plan)
    (component,) = [r for r in gke_plan.resources if r.urn == pool.parent]
    assert (component.type, component.name) == ("gpu-platform:gke:GpuNodePool", "l4-shared")


def test_node_pool_joins_the_configured_cluster(gke_plan: Plan) -> None:
    inputs = node_pool(gke_plan).inputs
    assert (inputs["project"], inputs["location"], inputs["cluster"]) == (
        "ml-platform-dev",
        "us-central1",
        "ml-dev",
    )


def test_node_pool_is_named_by_pulumi_after_the_pool(gke_plan: Plan) -> None:
    # No fixed name: Pulumi adds a suffix, so a replacement pool can exist beside the old one.
    assert "name" not in node_pool(gke_plan).inputs


def test_accelerator_type_and_count_come_from_the_pool(gke_plan: Plan) -> None:
    (accelerator,) = node_config(gke_plan)["guestAccelerators"]
    assert (accelerator["type"], accelerator["count"]) == ("nvidia-l4", 1)


def test_gke_driver_installation_is_disabled(gke_plan: Plan) -> None:
    (accelerator,) = node_config(gke_plan)["guestAccelerators"]
    assert accelerator["gpuDriverInstallationConfig"] == {
        "gpuDriverVersion": "INSTALLATION_DISABLED"
    }


def test_accelerator_count_is_read_from_the_machine_type_when_left_out(
    gke_config: Config, plan_for: PlanFor
) -> None:
    pool = gke_config["gpu-platform:pools"][0]
    del pool["accelerator"], pool["gpusPerNode"]
    pool["instanceTypes"] = ["g2-standard-48"]
    (accelerator,) = node_config(plan_for(gke_config))["guestAccelerators"]
    assert (accelerator["type"], accelerator["count"]) == ("nvidia-l4", 4)


def accelerator_of(plan: Plan, pool: str = "l4-shared") -> dict[str, Any]:
    (accelerator,) = node_config(plan, pool)["guestAccelerators"]
    return accelerator


def test_a_time_sliced_pool_has_gke_share_each_gpu_between_its_replicas(
    gke_config: Config, plan_for: PlanFor
) -> None:
    sharing = {"mode": "time-slicing", "replicas": 4}
    accelerator = accelerator_of(plan_for(with_pool(gke_config, sharing=sharing)))

    assert accelerator["gpuSharingConfig"] == {
        "gpuSharingStrategy": "TIME_SHARING",
        "maxSharedClientsPerGpu": 4,
    }
    assert "gpuPartitionSize" not in accelerator


def test_an_mps_pool_is_refused_on_gke_before_any_resource(
    gke_config: Config, failed_plan_for: PlanFor
) -> None:
    # GKE's device plugin serves MPS only once an MPS control daemon runs on the node
    # ("NVIDIA MPS is not running on this node": container-engine-accelerators
    # pkg/gpu/nvidia/manager.go, isMpsHealthy), which nothing the platform runs starts.
    plan = failed_plan_for(with_pool(gke_config, sharing={"mode": "mps", "replicas": 3}))

    assert problems_of(plan)["gpu-platform:pools[0].sharing.mode"].startswith(
        "time-slicing or mig on GKE: GKE's device plugin serves MPS only where an MPS control"
        " daemon runs on the node"
    )
    assert plan.resources == []


def test_a_mig_pool_has_gke_partition_its_gpus(gke_config: Config, plan_for: PlanFor) -> None:
    without_queues(gke_config)["gpu-platform:pools"].append(MIG_POOL)

    accelerator = accelerator_of(plan_for(gke_config), "a100-mig")

    assert accelerator["gpuPartitionSize"] == "1g.5gb"
    assert "gpuSharingConfig" not in accelerator


def test_an_exclusive_pool_leaves_gke_sharing_unset(gke_config: Config, plan_for: PlanFor) -> None:
    accelerator = accelerator_of(plan_for(with_pool(gke_config, sharing={"mode": "exclusive"})))

    assert set(accelerator) == {"type", "count", "gpuDriverInstallationConfig"}


def test_an_exclusive_pools_gpus_go_to_the_operators_device_plugin(
    gke_config: Config, plan_for: PlanFor
) -> None:
    plan = plan_for(with_pool(gke_config, sharing={"mode": "exclusive"}))
    identity = plan.outputs["pools"]["l4-shared"]["labels"]

    assert node_config(plan)["labels"] == {
        **identity,
        "gke-no-default-nvidia-gpu-device-plugin": "true",
    }
    assert identity["nvidia.com/device-plugin.config"] == "exclusive"


def test_a_shared_pools_gpus_go_to_gkes_device_plugin_and_not_the_operators(
    gke_plan: Plan,
) -> None:
    identity = gke_plan.outputs["pools"]["l4-shared"]["labels"]

    # The operator deploys its device plugin, MIG manager and DCGM exporter only where these
    # labels are "true", and leaves a value already set (controllers/state_manager.go at
    # v26.7.0); the exporter that reads GKE's device names runs where the last is "false" and
    # the platform's sharer label says GKE.
    assert node_config(gke_plan)["labels"] == {
        **identity,
        "nvidia.com/gpu.deploy.device-plugin": "false",
        "nvidia.com/gpu.deploy.mig-manager": "false",
        "nvidia.com/gpu.deploy.dcgm-exporter": "false",
        "gpu-platform.io/gpu-sharer": "gke",
    }
    assert "nvidia.com/device-plugin.config" not in identity


def test_a_mig_pool_has_no_mig_manager_layout_label(gke_config: Config, plan_for: PlanFor) -> None:
    without_queues(gke_config)["gpu-platform:pools"].append(MIG_POOL)

    labels = node_config(plan_for(gke_config), "a100-mig")["labels"]

    assert "nvidia.com/mig.config" not in labels


def test_gpu_taint_is_declared_explicitly_in_gke_spelling(gke_plan: Plan) -> None:
    assert node_config(gke_plan)["taints"] == [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"},
        {
            "key": "startup-taint.cluster-autoscaler.kubernetes.io/gpu-validation",
            "value": "pending",
            "effect": "NO_SCHEDULE",
        },
    ]


def test_extra_taints_follow_the_gpu_taint_in_gke_spelling(
    gke_config: Config, plan_for: PlanFor
) -> None:
    with_pool(gke_config, taints=[{"key": "team", "value": "vision", "effect": "NoExecute"}])
    assert node_config(plan_for(gke_config))["taints"][1:2] == [
        {"key": "team", "value": "vision", "effect": "NO_EXECUTE"}
    ]


def test_total_autoscaling_from_zero_to_max_with_any_location_for_spot(gke_plan: Plan) -> None:
    assert node_pool(gke_plan).inputs["autoscaling"] == {
        "totalMinNodeCount": 0,
        "totalMaxNodeCount": 3,
        "locationPolicy": "ANY",
    }


def test_per_zone_autoscaling_and_balanced_location_for_on_demand(
    gke_config: Config, plan_for: PlanFor
) -> None:
    with_pool(gke_config, capacity="on-demand", min=1, gcp={"autoscalingScope": "per-zone"})
    assert node_pool(plan_for(gke_config)).inputs["autoscaling"] == {
        "minNodeCount": 1,
        "maxNodeCount": 3,
        "locationPolicy": "BALANCED",
    }


def test_initial_node_count_is_zero_for_a_pool_scaled_to_zero(gke_plan: Plan) -> None:
    assert node_pool(gke_plan).inputs["initialNodeCount"] == 0


@pytest.mark.parametrize(("scope", "initial"), [("per-zone", 2), ("total", 1)])
def test_initial_node_count_per_zone_starts_exactly_the_minimum(
    gke_config: Config, plan_for: PlanFor, scope: str, initial: int
) -> None:
    # Three zones offer g2-standard-8 in the stand-in us-central1. initialNodeCount is per zone
    # (pulumi-gcp NodePool docs): a total minimum of 3 is one per zone.
    min_nodes = 2 if scope == "per-zone" else 3
    with_pool(gke_config, min=min_nodes, max=6, gcp={"autoscalingScope": scope})
    pool = node_pool(plan_for(gke_config))
    assert (len(pool.inputs["nodeLocations"]), pool.inputs["initialNodeCount"]) == (3, initial)


@pytest.mark.parametrize("min_nodes", [1, 2, 4, 5])
def test_a_total_minimum_the_zones_do_not_divide_is_refused_before_anything_starts(
    gke_config: Config, failed_plan_for: PlanFor, min_nodes: int
) -> None:
    # With `min: 1, max: 1` over three zones the pool would otherwise start three nodes.
    with_pool(gke_config, min=min_nodes, max=6)

    plan = failed_plan_for(gke_config)

    assert plan.resources == []
    assert problems_of(plan)["gpu-platform:pools[0].min"].startswith(
        "0 or a multiple of the pool's 3 zones (us-central1-a, us-central1-b, us-central1-c)"
    )


@pytest.mark.parametrize("zones", [1, 2, 4])
def test_a_minimum_the_named_zones_divide_starts_that_many(
    gke_config: Config, plan_for: PlanFor, zones: int
) -> None:
    named = ["us-central1-a", "us-central1-b", "us-central1-c", "us-central1-f"][:zones]
    with_pool(
        gke_config,
        min=zones,
        max=8,
        zones=named,
        instanceTypes=["n1-standard-8"],
        gpusPerNode=1,
        accelerator="t4",
    )

    pool = node_pool(plan_for(gke_config))

    assert pool.inputs["initialNodeCount"] * len(pool.inputs["nodeLocations"]) == zones


def test_node_counts_are_left_to_the_autoscaler_on_updates(gke_plan: Plan) -> None:
    pool = node_pool(gke_plan)
    assert {"initialNodeCount", "nodeCount"} <= set(pool.ignore_changes)
    assert pool.inputs["ignoreNodeCountChanges"] is True


def test_the_maintenance_policy_is_set_when_the_pool_is_created_only(gke_plan: Plan) -> None:
    # hashicorp/terraform-provider-google google/services/container/
    # resource_container_node_pool.go: `maintenance_policy` is read by `expandNodePool` (create)
    # and by no update: a change to it would be a diff on every preview that changes nothing.
    assert set(node_pool(gke_plan).ignore_changes) == {
        "initialNodeCount",
        "nodeCount",
        "maintenancePolicies",
    }


def test_ignored_properties_are_node_pool_properties() -> None:
    engine_names = set(_types.input_type_py_to_pulumi_names(container.NodePoolArgs).values())
    assert {"initialNodeCount", "nodeCount", "maintenancePolicies"} <= engine_names


@pytest.mark.parametrize(("capacity", "spot"), [("spot", True), ("on-demand", False)])
def test_spot_follows_the_pools_capacity(
    gke_config: Config, plan_for: PlanFor, capacity: str, spot: bool
) -> None:
    with_pool(gke_config, capacity=capacity)
    assert node_config(plan_for(gke_config))["spot"] is spot


def test_cos_nodes_use_cos_containerd_with_secure_boot(gke_plan: Plan) -> None:
    config = node_config(gke_plan)
    assert config["imageType"] == "COS_CONTAINERD"
    assert config["shieldedInstanceConfig"] == {
        "enableSecureBoot": True,
        "enableIntegrityMonitoring": True,
    }
    assert "gpu-platform.io/driver" not in config["labels"]


def test_ubuntu_nodes_turn_secure_boot_off_for_the_operators_driver_and_say_so_by_label(
    gke_config: Config, plan_for: PlanFor
) -> None:
    on_ubuntu(gke_config)
    config = node_config(plan_for(gke_config))
    assert config["imageType"] == "UBUNTU_CONTAINERD"
    assert config["shieldedInstanceConfig"] == {
        "enableSecureBoot": False,
        "enableIntegrityMonitoring": True,
    }
    assert config["labels"]["gpu-platform.io/driver"] == "operator"


def test_pods_see_the_gke_metadata_server(gke_plan: Plan) -> None:
    assert node_config(gke_plan)["workloadMetadataConfig"] == {"mode": "GKE_METADATA"}


def test_legacy_metadata_endpoints_are_disabled(gke_plan: Plan) -> None:
    assert node_config(gke_plan)["metadata"] == {"disable-legacy-endpoints": "true"}


def test_nodes_are_repaired_and_upgraded_by_gke(gke_plan: Plan) -> None:
    assert node_pool(gke_plan).inputs["management"] == {"autoRepair": True, "autoUpgrade": True}


def test_a_pinned_pool_on_a_release_channel_is_held_from_upgrades_until_end_of_support(
    gke_config: Config, plan_for: PlanFor
) -> None:
    # pulumi-gcp's container.NodePool `version`: with `auto_upgrade` too, "they will fight each
    # other for what the node version should be". GKE API (container.v1 discovery document),
    # ReleaseChannel: on a channel, node auto-upgrade "defaults to true and cannot be
    # disabled"; NodePool.maintenancePolicy.exclusionUntilEndOfSupport holds the pool's version.
    with_pool(gke_config, gcp={"nodeVersion": "1.33.5-gke.1201000"})

    inputs = node_pool(plan_for(gke_config)).inputs

    assert inputs["management"] == {"autoRepair": True, "autoUpgrade": True}
    assert inputs["maintenancePolicies"] == [{"exclusionUntilEndOfSupports": [{"enabled": True}]}]
    assert api_problems(to_api_node_pool("l4", inputs)) == []


@pytest.mark.parametrize("channels", [[], [{"channel": "UNSPECIFIED"}]])
def test_a_pinned_pool_on_a_cluster_without_a_channel_is_not_auto_upgraded(
    gke_config: Config, plan_for: PlanFor, cluster_answer: Config, channels: list[Any]
) -> None:
    cluster_answer["releaseChannels"] = channels
    with_pool(gke_config, gcp={"nodeVersion": "1.33.5-gke.1201000"})

    inputs = node_pool(plan_for(gke_config)).inputs

    assert inputs["management"] == {"autoRepair": True, "autoUpgrade": False}
    assert "maintenancePolicies" not in inputs


def test_a_pool_that_follows_the_cluster_has_no_upgrade_exclusion(gke_plan: Plan) -> None:
    assert "maintenancePolicies" not in node_pool(gke_plan).inputs


def test_a_pool_pinned_past_the_control_plane_is_refused_before_any_resource(
    gke_config: Config, failed_plan_for: PlanFor
) -> None:
    # GKE runs no node newer than its control plane (its version skew policy): the stand-in
    # cluster runs 1.33.5-gke.1201000, a patch behind this canary.
    with_pool(gke_config, gcp={"nodeVersion": "1.33.6-gke.1000"})

    plan = failed_plan_for(gke_config)

    assert problems_of(plan)["gpu-platform:pools[0].gcp.nodeVersion"] == (
        "at most 1.33.5-gke.1201000, the version of ml-dev's control plane: GKE runs no node"
        " newer than its control plane; upgrade the cluster first"
    )
    assert plan.resources == []


@pytest.mark.parametrize("version", ["1.33.5-gke.1201000", "1.33.5-gke.999000", "1.33.4-gke.2000"])
def test_a_pool_pinned_at_or_behind_the_control_plane_is_accepted(
    gke_config: Config, plan_for: PlanFor, version: str
) -> None:
    # Compared by numbers: the build 999000 comes before 1201000, as 4 before 5.
    with_pool(gke_config, gcp={"nodeVersion": version})

    assert node_pool(plan_for(gke_config)).inputs["version"] == version


def test_upgrades_surge_one_node_and_take_none_out_of_service_by_default(gke_plan: Plan) -> None:
    assert node_pool(gke_plan).inputs["upgradeSettings"] == {
        "strategy": "SURGE",
        "maxSurge": 1,
        "maxUnavailable": 0,
    }


# The per-node durations of an upgrade (gpu_platform/rollout_timeouts.py has their sources): a
# drain honours disruption budgets for at most an hour (GKE's node-pool-upgrade-strategies page);
# the platform's 15-minute allowance for a node's start; a quarter more as margin; never below
# terraform-provider-google resource_container_node_pool.go's 30 minutes.


def test_an_upgrade_waits_for_the_longest_surge_the_pool_allows(gke_plan: Plan) -> None:
    # max 3 over 3 zones, one node at a time: 3 rounds of (15 + 60) = 225 minutes, x 1.25.
    assert node_pool(gke_plan).custom_timeouts == {
        "create": "282m",
        "update": "282m",
        "delete": "282m",
    }


def test_every_pool_waits_through_the_other_pools_upgrades(
    gke_config: Config, plan_for: PlanFor
) -> None:
    # GKE runs one node pool operation at a time, and terraform-provider-google retries an
    # update that meets another within the update's own timeout
    # (resource_container_node_pool.go, `RetryWhileIncompatibleOperation(timeout, ...)`): the
    # pool of 225 minutes above and one of a single node (one round of 75) may each wait 300,
    # x 1.25 = 375.
    first = gke_config["gpu-platform:pools"][0]
    without_queues(gke_config)["gpu-platform:pools"].append(
        {**first, "name": "l4-batch", "min": 0, "max": 1}
    )
    plan = plan_for(gke_config)

    assert node_pool(plan).custom_timeouts == {"create": "375m", "update": "375m", "delete": "375m"}
    assert node_pool(plan, "l4-batch").custom_timeouts == {
        "create": "375m",
        "update": "375m",
        "delete": "375m",
    }


SPECIFIC_RESERVATION: Config = {
    "capacity": "on-demand",
    "zones": ["us-central1-a"],
    "gcp": {"reservation": "specific", "reservationName": "l4-ml-dev"},
}


def test_a_specific_reservation_pool_upgrades_without_surging_by_default(
    gke_config: Config, plan_for: PlanFor
) -> None:
    # GKE counts surge nodes against the reservation, sized to the pool, and "continues to
    # attempt" the upgrade while it has no room (GKE's node-upgrades-quota page): one node out
    # of service at a time instead.
    with_pool(gke_config, **SPECIFIC_RESERVATION)

    assert node_pool(plan_for(gke_config)).inputs["upgradeSettings"] == {
        "strategy": "SURGE",
        "maxSurge": 0,
        "maxUnavailable": 1,
    }


def test_a_specific_reservation_pool_surges_where_it_says_so(
    gke_config: Config, plan_for: PlanFor
) -> None:
    # Where the reservation holds spare VMs; `preflight` checks that it does.
    with_pool(
        gke_config,
        **{**SPECIFIC_RESERVATION, "gcp": {**SPECIFIC_RESERVATION["gcp"], "maxSurge": 1}},
    )

    settings = node_pool(plan_for(gke_config)).inputs["upgradeSettings"]

    assert (settings["maxSurge"], settings["maxUnavailable"]) == (1, 0)


def test_a_pool_on_any_reservation_surges_as_it_falls_back_on_demand(
    gke_config: Config, plan_for: PlanFor
) -> None:
    with_pool(gke_config, capacity="on-demand", gcp={"reservation": "any"})

    settings = node_pool(plan_for(gke_config)).inputs["upgradeSettings"]

    assert (settings["maxSurge"], settings["maxUnavailable"]) == (1, 0)


def test_a_pool_not_surging_takes_one_node_out_of_service_by_default(
    gke_config: Config, plan_for: PlanFor
) -> None:
    with_pool(gke_config, gcp={"maxSurge": 0})

    settings = node_pool(plan_for(gke_config)).inputs["upgradeSettings"]

    assert (settings["maxSurge"], settings["maxUnavailable"]) == (0, 1)


def test_a_blue_green_pool_drains_a_node_a_batch_and_keeps_the_old_ones_for_its_soak(
    gke_config: Config, plan_for: PlanFor
) -> None:
    # pulumi-gcp NodePool `upgrade_settings.blue_green_settings`; the API's BlueGreenSettings
    # (container.v1 discovery document): `nodePoolSoakDuration` is the time after the whole blue
    # pool is drained before it is deleted.
    with_pool(gke_config, gcp={"upgradeStrategy": "blue-green", "blueGreenSoakHours": 24})

    assert node_pool(plan_for(gke_config)).inputs["upgradeSettings"] == {
        "strategy": "BLUE_GREEN",
        "blueGreenSettings": {
            "nodePoolSoakDuration": "86400s",
            "standardRolloutPolicy": {"batchNodeCount": 1},
        },
    }


def test_a_blue_green_pool_with_a_drain_wait_waits_for_its_jobs_before_it_drains(
    gke_config: Config, plan_for: PlanFor
) -> None:
    # container.v1 discovery document: `AutoscaledRolloutPolicy.waitForDrainDuration` is the
    # "Time to wait after cordoning the blue pool before draining the nodes", where a
    # `StandardRolloutPolicy` drains at once (`batchSoakDuration` "Default to zero"); a
    # BlueGreenSettings takes one policy or the other.
    with_pool(
        gke_config,
        gcp={
            "upgradeStrategy": "blue-green",
            "blueGreenDrainWaitHours": 96,
            "blueGreenSoakHours": 24,
        },
    )

    pool = node_pool(plan_for(gke_config))

    assert pool.inputs["upgradeSettings"] == {
        "strategy": "BLUE_GREEN",
        "blueGreenSettings": {
            "nodePoolSoakDuration": "86400s",
            "autoscaledRolloutPolicy": {"waitForDrainDuration": "345600s"},
        },
    }
    # `pulumi up` waits through it all: 15 minutes for the new nodes, the 96 h wait, 3 nodes x
    # an hour's drain, the 24 h soak = 123 h 15 = 7395 minutes, x 1.25 (rollout_timeouts.py).
    assert pool.custom_timeouts == {"create": "9244m", "update": "9244m", "delete": "9244m"}


@pytest.mark.parametrize(
    ("pool", "key", "words"),
    [
        (
            {
                **SPECIFIC_RESERVATION,
                "gcp": {**SPECIFIC_RESERVATION["gcp"], "upgradeStrategy": "blue-green"},
            },
            "gcp.upgradeStrategy",
            "surge with reservation specific",
        ),
        (
            {"capacity": "on-demand", "gcp": {"flexStart": True, "upgradeStrategy": "blue-green"}},
            "gcp.upgradeStrategy",
            "surge with gcp.flexStart",
        ),
        (
            {"gcp": {"upgradeStrategy": "blue-green", "maxSurge": 2}},
            "gcp.maxSurge",
            "no value with upgradeStrategy blue-green",
        ),
        ({"gcp": {"blueGreenSoakHours": 4}}, "gcp.blueGreenSoakHours", "no value unless"),
        (
            {"gcp": {"blueGreenDrainWaitHours": 48}},
            "gcp.blueGreenDrainWaitHours",
            "no value unless",
        ),
    ],
)
def test_upgrade_settings_that_cannot_work_are_refused_at_their_key(
    gke_config: Config, failed_plan_for: PlanFor, pool: Config, key: str, words: str
) -> None:
    with_pool(gke_config, **pool)

    plan = failed_plan_for(gke_config)

    assert words in problems_of(plan)[f"gpu-platform:pools[0].{key}"]
    assert plan.resources == []


def test_upgrade_settings_come_from_the_pool(gke_config: Config, plan_for: PlanFor) -> None:
    with_pool(gke_config, gcp={"maxSurge": 0, "maxUnavailable": 2})
    settings = node_pool(plan_for(gke_config)).inputs["upgradeSettings"]
    assert (settings["maxSurge"], settings["maxUnavailable"]) == (0, 2)


def test_boot_disk_size_comes_from_the_pool_on_balanced_persistent_disk(
    gke_config: Config, plan_for: PlanFor
) -> None:
    with_pool(gke_config, diskSizeGib=400)
    config = node_config(plan_for(gke_config))
    assert (config["diskSizeGb"], config["diskType"]) == (400, "pd-balanced")


def test_boot_disk_type_comes_from_the_pool_when_set(gke_config: Config, plan_for: PlanFor) -> None:
    with_pool(gke_config, gcp={"diskType": "pd-ssd"})
    assert node_config(plan_for(gke_config))["diskType"] == "pd-ssd"


def test_machine_types_without_persistent_disk_boot_from_hyperdisk(
    gke_config: Config, plan_for: PlanFor
) -> None:
    with_cluster(gke_config, location="us-east4")
    with_pool(gke_config, instanceTypes=["a3-ultragpu-8g"], accelerator="h200-141gb", gpusPerNode=8)
    assert node_config(plan_for(gke_config))["diskType"] == "hyperdisk-balanced"


def test_pool_gets_its_own_node_service_account_with_the_default_node_role_only(
    gke_plan: Plan,
) -> None:
    (account,) = gke_plan.of_type("gcp:serviceaccount/account:Account")
    (binding,) = gke_plan.of_type("gcp:projects/iAMMember:IAMMember")
    assert account.inputs["project"] == binding.inputs["project"] == "ml-platform-dev"
    assert binding.inputs["role"] == NODE_SERVICE_ACCOUNT_ROLE
    assert binding.inputs["role"] == "roles/container.defaultNodeServiceAccount"
    email = f"{account.inputs['accountId']}@ml-platform-dev.iam.gserviceaccount.com"
    assert binding.inputs["member"] == f"serviceAccount:{email}"
    assert node_config(gke_plan)["serviceAccount"] == email


def test_nodes_start_only_once_their_account_holds_its_role(gke_plan: Plan) -> None:
    (binding,) = gke_plan.of_type("gcp:projects/iAMMember:IAMMember")
    assert binding.urn in node_pool(gke_plan).dependencies


def test_access_is_decided_by_the_service_account_not_by_scopes(gke_plan: Plan) -> None:
    assert node_config(gke_plan)["oauthScopes"] == [
        "https://www.googleapis.com/auth/cloud-platform"
    ]


def test_configured_service_account_is_used_and_none_is_created(
    gke_config: Config, plan_for: PlanFor
) -> None:
    email = "gpu-nodes@ml-platform-dev.iam.gserviceaccount.com"
    with_pool(gke_config, gcp={"serviceAccount": email})
    plan = plan_for(gke_config)
    assert node_config(plan)["serviceAccount"] == email
    assert plan.of_type("gcp:serviceaccount/account:Account") == []
    assert plan.of_type("gcp:projects/iAMMember:IAMMember") == []


def test_node_service_account_ids_are_valid_and_differ_between_clusters() -> None:
    def cluster(name: str) -> GkeCluster:
        return GkeCluster("p", "us-central1", name, "e", "c", "v", False, "p.svc.id.goog")

    longest = "a" * 32
    ids = {node_service_account_id(cluster(c), p) for c in ("dev", "prod") for p in ("x", longest)}
    assert len(ids) == 4
    assert all(re.fullmatch(r"[a-z][-a-z0-9]{4,28}[a-z0-9]", i) for i in ids), ids


def test_vms_carry_the_pool_as_a_billing_label(gke_plan: Plan) -> None:
    assert node_config(gke_plan)["resourceLabels"] == {"gpu-platform-pool": "l4-shared"}


def test_operator_waits_for_the_node_pools_that_do_not_validate_their_nodes(
    gke_config: Config, plan_for: PlanFor
) -> None:
    # One that validates them waits for its validator, in the operator's namespace, instead
    # (tests/gpu_platform/kubernetes/node_validation/test_validator_order.py).
    plan = plan_for(with_pool(gke_config, validation={"enabled": False}))
    operator = plan.named("gpu-operator", "gpu-platform:kubernetes:GpuOperator")
    assert node_pool(plan).urn in operator.dependencies
