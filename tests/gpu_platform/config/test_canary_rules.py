"""Canary pools: a new AMI release or node version reaches a pool only through its canary."""

import copy
from collections.abc import Callable
from typing import Any

import pytest
from rich.console import Console

from gpu_platform.cli.plan import print_pool_software
from gpu_platform.config import ConfigError, load_stack_config
from gpu_platform.offline.program import Plan, run_program
from gpu_platform.stack_files import stack_config
from tests.conftest import Config
from tests.repository import PROJECT
from tests.shared_plans import shared_plan

# Its tests plan the same configs again and again, and change the program only through the
# stand-ins' answers.
pytestmark = pytest.mark.shared_plans

PlanFor = Callable[[Config], Plan]
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
NODE_POOL = "gcp:container/nodePool:NodePool"


def canary_of(config: Config, target: int = 0, **fields: Any) -> dict[str, Any]:
    """Add a canary of pools[target], a copy of it under another name, and return it."""
    pools = config["gpu-platform:pools"]
    canary = {**copy.deepcopy(pools[target]), "name": "canary", "canaryOf": pools[target]["name"]}
    canary.update(fields)
    pools.append(canary)
    return canary


def problems(plan: Plan) -> dict[str, str]:
    assert isinstance(plan.error, ConfigError), plan.error
    return {p.path: p.expected for p in plan.error.problems}


def node_group_of(plan: Plan, pool: str) -> dict[str, Any]:
    (group,) = [
        g for g in plan.of_type(NODE_GROUP) if g.inputs["labels"]["gpu-platform.io/pool"] == pool
    ]
    return group.inputs


def test_a_canarys_nodes_say_whose_canary_they_are(dev_config: Config, plan_for: PlanFor) -> None:
    canary_of(dev_config)

    labels = node_group_of(plan_for(dev_config), "canary")["labels"]

    assert labels["gpu-platform.io/canary-of"] == "t4-shared"


def test_changing_the_canarys_release_leaves_every_other_pool_unchanged() -> None:
    before = shared_plan("prod")
    config = copy.deepcopy(dict(stack_config("prod", PROJECT)))
    canary = next(p for p in config["gpu-platform:pools"] if p["name"] == "a100-canary")
    canary["aws"]["amiReleaseVersion"] = "1.35.6-20260625"

    after = run_program("prod", config=config, project=PROJECT)

    def outside_the_canary(plan: Plan) -> dict[str, Any]:
        return {r.urn: r.inputs for r in plan.resources if "a100-canary" not in r.urn}

    assert outside_the_canary(after) == outside_the_canary(before)
    assert node_group_of(after, "a100-canary")["releaseVersion"] == "1.35.6-20260625"


def test_a_pool_may_not_run_a_release_newer_than_its_canarys(
    dev_config: Config, failed_plan_for: PlanFor
) -> None:
    canary_of(dev_config, aws={"amiReleaseVersion": "1.35.6-20260625"})

    found = problems(failed_plan_for(dev_config))

    assert found == {
        "gpu-platform:pools[0].aws.amiReleaseVersion": "at most 1.35.6-20260625, the version"
        " of its canary pools[1] (canary): move the canary first, watch it, then promote"
    }


def validated(config: Config, canary: str, pool: str) -> None:
    """Validate the stack file with pools[0] at release `pool` and its canary at `canary`."""
    config["gpu-platform:pools"][0]["aws"]["amiReleaseVersion"] = pool
    canary_of(config, aws={"amiReleaseVersion": canary})
    load_stack_config(
        {k.removeprefix("gpu-platform:"): v for k, v in config.items() if k.startswith("gpu-")}
    )


def test_a_canary_on_a_two_digit_patch_leads_a_pool_on_a_one_digit_one(dev_config: Config) -> None:
    # As text, 1.33.13 would sort before 1.33.9.
    validated(dev_config, canary="1.33.13-20260714", pool="1.33.9-20260714")


def test_a_pool_on_a_two_digit_patch_is_ahead_of_a_canary_on_a_one_digit_one(
    dev_config: Config,
) -> None:
    with pytest.raises(ConfigError) as raised:
        validated(dev_config, canary="1.33.9-20260714", pool="1.33.13-20260714")

    assert [p.path for p in raised.value.problems] == [
        "gpu-platform:pools[0].aws.amiReleaseVersion"
    ]


def test_a_pool_at_its_canarys_release_is_promoted(dev_config: Config, plan_for: PlanFor) -> None:
    canary_of(dev_config)

    plan = plan_for(dev_config)

    assert (
        node_group_of(plan, "canary")["releaseVersion"]
        == node_group_of(plan, "t4-shared")["releaseVersion"]
    )


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("missing", "another pool's name: ['t4-shared']"),
        ("canary", "another pool's name: ['t4-shared']"),
    ],
    ids=["unknown", "itself"],
)
def test_a_canary_names_another_pool(
    dev_config: Config, failed_plan_for: PlanFor, target: str, expected: str
) -> None:
    canary_of(dev_config, canaryOf=target)

    assert problems(failed_plan_for(dev_config)) == {"gpu-platform:pools[1].canaryOf": expected}


def test_a_canary_of_a_canary_is_refused(dev_config: Config, failed_plan_for: PlanFor) -> None:
    canary_of(dev_config)
    canary_of(dev_config, target=1, name="canary2")

    found = problems(failed_plan_for(dev_config))

    assert found["gpu-platform:pools[2].canaryOf"] == (
        "a pool that is not itself a canary (canary is t4-shared's)"
    )


def test_a_canary_on_other_gpus_is_refused(dev_config: Config, failed_plan_for: PlanFor) -> None:
    canary_of(dev_config, instanceTypes=["g5.xlarge"], accelerator="a10g")

    found = problems(failed_plan_for(dev_config))

    assert found["gpu-platform:pools[1].canaryOf"].startswith(
        "a pool with the canary's instance types and sharing mode: t4-shared has"
        " ['g4dn.xlarge'], time-slicing; this pool ['g5.xlarge'], time-slicing"
    )


def test_a_gke_pool_pinned_past_its_unpinned_canary_is_refused(
    gke_config: Config, failed_plan_for: PlanFor
) -> None:
    gke_config["gpu-platform:pools"][0]["gcp"] = {
        "nodeVersion": "1.33.5-gke.1201000",
        "cosDriverBranch": 535,
    }
    canary_of(gke_config, gcp={})

    found = problems(failed_plan_for(gke_config))

    assert found["gpu-platform:pools[0].gcp.nodeVersion"].startswith(
        "at most the cluster version, the version of its canary pools[1] (canary)"
    )


def test_a_gke_canary_runs_its_own_node_version(gke_config: Config, plan_for: PlanFor) -> None:
    # The stand-in control plane's version: a canary goes no further (GKE runs no node newer).
    canary_of(gke_config, gcp={"nodeVersion": "1.33.5-gke.1201000"})

    versions = {p.name: p.inputs.get("version") for p in plan_for(gke_config).of_type(NODE_POOL)}

    assert versions == {"l4-shared": None, "canary": "1.33.5-gke.1201000"}


def printed_pools(plan: Plan) -> str:
    console = Console(record=True, width=400)
    print_pool_software(plan, console)
    return console.export_text()


def test_the_plan_shows_a_canary_ahead_of_its_pool() -> None:
    shown = printed_pools(shared_plan("prod"))

    assert (
        "a100-canary: NVIDIA driver 580.159.03 (CUDA 13.0), pinned by AMI release"
        " 1.35.6-20260714; canary of a100-inference, ahead of it (AMI release 1.35.4-20260505):"
        " promote by giving a100-inference the canary's version"
    ) in shown


def test_the_plan_shows_a_promoted_canary_in_step(dev_config: Config, plan_for: PlanFor) -> None:
    canary_of(dev_config)

    shown = printed_pools(plan_for(dev_config))

    assert "canary of t4-shared, in step with it" in shown


# --- GKE Ubuntu: the driver the GPU Operator builds, per pool ---------------------------------

NVIDIA_DRIVER = "kubernetes:nvidia.com/v1alpha1:NVIDIADriver"


def on_ubuntu_with_a_canary(gke_config: Config, **canary: Any) -> Config:
    """The GKE stack on Ubuntu (whole GPUs: GKE shares GPUs on COS only) with a canary of its
    pool."""
    gke_config["gpu-platform:cluster"]["nodeImage"] = "ubuntu"
    gke_config["gpu-platform:pools"][0]["sharing"] = {"mode": "exclusive"}
    canary_of(gke_config, **canary)
    return gke_config


def test_an_ubuntu_canary_builds_its_own_driver(gke_config: Config, plan_for: PlanFor) -> None:
    on_ubuntu_with_a_canary(gke_config, gcp={"driverVersion": "610.43.02"})

    plan = plan_for(gke_config)

    versions = {
        d.inputs["metadata"]["name"]: d.inputs["spec"]["version"]
        for d in plan.of_type(NVIDIA_DRIVER)
    }
    labels = plan.named("canary", NODE_POOL).inputs["nodeConfig"]["labels"]
    assert versions == {"l4-shared": "595.91.07", "canary": "610.43.02"}
    assert (labels["gpu-platform.io/nvidia-driver"], labels["gpu-platform.io/cuda"]) == (
        "610.43.02",
        "13.3",
    )


def test_an_ubuntu_pool_on_the_operators_driver_may_not_pass_its_canary(
    gke_config: Config, failed_plan_for: PlanFor
) -> None:
    on_ubuntu_with_a_canary(gke_config, gcp={"driverVersion": "580.126.09"})

    found = problems(failed_plan_for(gke_config))

    assert found == {
        "gpu-platform:operator.driverVersion": "at most 580.126.09, the NVIDIA driver of pools[0]"
        " (l4-shared)'s canary pools[1] (canary): give the canary the new driver first"
        " (gcp.driverVersion), watch it, then promote"
    }


def test_an_ubuntu_pool_pinning_its_own_driver_may_not_pass_its_canary(
    gke_config: Config, failed_plan_for: PlanFor
) -> None:
    gke_config["gpu-platform:pools"][0]["gcp"] = {"driverVersion": "610.43.02"}
    on_ubuntu_with_a_canary(gke_config, gcp={})

    found = problems(failed_plan_for(gke_config))

    assert found == {
        "gpu-platform:pools[0].gcp.driverVersion": "at most 595.91.07, the NVIDIA driver of"
        " pools[0] (l4-shared)'s canary pools[1] (canary): give the canary the new driver first"
        " (gcp.driverVersion), watch it, then promote"
    }


@pytest.mark.parametrize(
    ("canary", "refused"),
    [("595.100.01", set()), ("595.9.99", {"gpu-platform:operator.driverVersion"})],
    ids=["ahead", "behind"],
)
def test_ubuntu_drivers_are_compared_as_numbers(
    gke_config: Config, canary: str, refused: set[str]
) -> None:
    # As text, 595.100.01 sorts before the pool's 595.91.07, and 595.9.99 after it.
    on_ubuntu_with_a_canary(gke_config, gcp={"driverVersion": canary})

    plan = run_program("dev", config=gke_config, project=PROJECT, raise_errors=False)

    assert (set(problems(plan)) if plan.error else set()) == refused


def test_changing_the_ubuntu_canarys_driver_leaves_every_other_pool_unchanged(
    gke_config: Config, plan_for: PlanFor
) -> None:
    on_ubuntu_with_a_canary(gke_config, gcp={"driverVersion": "595.91.07"})
    before = plan_for(gke_config)
    gke_config["gpu-platform:pools"][1]["gcp"]["driverVersion"] = "610.43.02"

    after = plan_for(gke_config)

    def outside_the_canary(plan: Plan) -> dict[str, Any]:
        return {r.urn: r.inputs for r in plan.resources if "canary" not in r.urn}

    def canary_changes(plan: Plan) -> dict[str, Any]:
        driver = plan.named("gpu-operator-driver-canary", NVIDIA_DRIVER).inputs["spec"]
        labels = plan.named("canary", NODE_POOL).inputs["nodeConfig"]["labels"]
        return {"version": driver["version"], "label": labels["gpu-platform.io/nvidia-driver"]}

    assert outside_the_canary(after) == outside_the_canary(before)
    assert canary_changes(before) == {"version": "595.91.07", "label": "595.91.07"}
    assert canary_changes(after) == {"version": "610.43.02", "label": "610.43.02"}


def test_the_plan_shows_an_ubuntu_canarys_driver_ahead_of_its_pool(
    gke_config: Config, plan_for: PlanFor
) -> None:
    on_ubuntu_with_a_canary(gke_config, gcp={"driverVersion": "610.43.02"})

    shown = printed_pools(plan_for(gke_config))

    assert (
        "canary: NVIDIA driver 610.43.02 (CUDA 13.3), pinned by the GPU Operator at 610.43.02;"
        " canary of l4-shared, ahead of it (the GPU Operator at 595.91.07): promote by giving"
        " l4-shared the canary's version"
    ) in shown


def test_an_ubuntu_canary_pinning_its_pools_driver_is_in_step(
    gke_config: Config, plan_for: PlanFor
) -> None:
    on_ubuntu_with_a_canary(gke_config, gcp={"driverVersion": "595.91.07"})

    shown = printed_pools(plan_for(gke_config))

    assert "canary of l4-shared, in step with it" in shown


def test_a_canary_on_a_capacity_block_is_refused(
    dev_config: Config, failed_plan_for: PlanFor
) -> None:
    # EKS user guide, "Create a managed node group with Capacity Blocks for ML": the group is
    # updated at desired size 0, between blocks, and starts nodes only within the block; the
    # gate after the canary's update would wait for one until its deadline.
    canary_of(
        dev_config,
        capacity="capacity-block",
        zones=["us-east-1a"],
        aws={
            "amiReleaseVersion": "1.35.6-20260714",
            "capacityReservationId": "cr-0123456789abcdef0",
        },
    )

    assert problems(failed_plan_for(dev_config)) == {
        "gpu-platform:pools[1].capacity": "on-demand, spot or reserved on a canary (canaryOf): a"
        " Capacity Block starts nodes only within its window, and its node group is updated"
        " between blocks, so the canary's gate would wait for a node until its deadline"
    }


def test_a_queued_canary_is_refused(gke_config: Config, failed_plan_for: PlanFor) -> None:
    # GKE's provisioningrequest page: a queued pool's nodes come only for a ProvisioningRequest,
    # which the gate's plain pod is not.
    canary_of(gke_config, capacity="on-demand", gcp={"flexStart": True, "queuedProvisioning": True})

    assert problems(failed_plan_for(gke_config)) == {
        "gpu-platform:pools[1].gcp.queuedProvisioning": "false on a canary (canaryOf): a queued"
        " pool starts nodes only for a ProvisioningRequest, never for the canary's gate, a plain"
        " pod, which would wait for a node until its deadline; gcp.flexStart without it starts"
        " nodes for pending pods"
    }


def test_a_flex_start_canary_is_accepted(gke_config: Config, plan_for: PlanFor) -> None:
    # GKE's concepts/dws ("About flex-start provisioning mode"): without queued provisioning,
    # GKE starts a flex-start node for a pending pod once it finds capacity.
    canary_of(gke_config, capacity="on-demand", gcp={"flexStart": True})

    plan = plan_for(gke_config)

    assert plan.error is None
    assert plan.named("canary", NODE_POOL).inputs["nodeConfig"]["flexStart"] is True


def reserved_pool(config: Config, **aws: Any) -> None:
    """The dev stack's pool on an on-demand capacity reservation in one zone."""
    (pool,) = config["gpu-platform:pools"]
    pool.update(capacity="reserved", zones=["us-east-1a"])
    pool["aws"].update(capacityReservationId="cr-0123456789abcdef0", **aws)


def test_a_canary_on_its_pools_reservation_alone_is_refused(
    dev_config: Config, failed_plan_for: PlanFor
) -> None:
    # A targeted reservation the led pool fills at its max leaves no room for the gate's node,
    # and a `reserved` node group never launches outside it (EC2 user guide, capacity
    # reservations: targeted reservations are used only by launches that name them).
    reserved_pool(dev_config)
    canary_of(dev_config, max=1)

    assert problems(failed_plan_for(dev_config)) == {
        "gpu-platform:pools[1].capacity": "on-demand or spot on a canary (canaryOf) of"
        " t4-shared, a reservation of its own, or aws.onDemandFallback: true:"
        " cr-0123456789abcdef0 is t4-shared's reservation too, and once that pool fills it the"
        " canary's gate waits for a node until its deadline"
    }


@pytest.mark.parametrize(
    "canary",
    [
        {"capacity": "on-demand", "aws": {"amiReleaseVersion": "1.35.6-20260714"}},
        {
            "aws": {
                "amiReleaseVersion": "1.35.6-20260714",
                "capacityReservationId": "cr-0fedcba9876543210",
            }
        },
    ],
    ids=["on-demand", "its-own-reservation"],
)
def test_a_canary_of_a_reserved_pool_with_capacity_of_its_own_is_accepted(
    dev_config: Config, plan_for: PlanFor, canary: dict[str, Any]
) -> None:
    reserved_pool(dev_config)
    canary_of(dev_config, max=1, **canary)

    plan = plan_for(dev_config)

    assert plan.error is None
    assert node_group_of(plan, "canary")["labels"]["gpu-platform.io/canary-of"] == "t4-shared"


def test_a_gke_canary_on_its_pools_specific_reservation_is_refused(
    gke_config: Config, failed_plan_for: PlanFor
) -> None:
    # GKE, consuming reserved zonal resources: a `specific` pool takes only its reservation and
    # never falls back to on-demand capacity.
    (pool,) = gke_config["gpu-platform:pools"]
    pool.update(
        capacity="on-demand",
        zones=["us-central1-a"],
        gcp={"reservation": "specific", "reservationName": "l4-ml-dev"},
    )
    canary_of(gke_config, max=1)

    assert problems(failed_plan_for(gke_config)) == {
        "gpu-platform:pools[1].gcp.reservationName": "a reservation of the canary's own, or"
        " gcp.reservation none or any, on a canary (canaryOf) of l4-shared: it is l4-shared's"
        " reservation too, and once that pool fills it the canary's gate waits for a node until"
        " its deadline"
    }
