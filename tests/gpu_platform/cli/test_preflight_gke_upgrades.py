"""The GKE pre-flight check's upgrade findings, against the fake GKE API of test_preflight_gke
(answers held to the container.v1 discovery document's `Cluster` schema): pinned node versions
against the control plane, the cluster's maintenance window and exclusions, and a specific
reservation's room for surge nodes."""

from typing import Any

import pytest

from gpu_platform.cli.findings import Finding
from tests.gpu_platform.cli import test_preflight_gke as base

Config = dict[str, Any]
google = base.google
FakeGoogle = base.FakeGoogle
CLUSTER = "cluster ml-dev"
RESERVED = base.RESERVED


def cluster_findings(found: list[Finding]) -> list[Finding]:
    return [f for f in found if f.subject == CLUSTER]


def test_a_pool_pinned_past_the_control_plane_blocks(google: FakeGoogle) -> None:
    # GKE runs no node newer than its control plane; the cluster runs 1.35.2-gke.1485000.
    def pinned(c: Config) -> None:
        base.pool(c, "l4-shared")["gcp"] = {"nodeVersion": "1.35.3-gke.1000"}

    assert base.of_pool(base.findings(google, pinned), "l4-shared") == [
        Finding(
            "blocking",
            "pool l4-shared",
            "gpu-platform:pools[0].gcp.nodeVersion is 1.35.3-gke.1000, newer than the control"
            " plane's GKE 1.35.2-gke.1485000: GKE runs no node newer than its control plane and"
            " refuses the pool.",
            "Upgrade the control plane first, or pin the pool at 1.35.2-gke.1485000 or older.",
        )
    ]


def test_without_a_window_or_exclusion_the_auto_upgraded_pools_are_named(
    google: FakeGoogle,
) -> None:
    google.cluster(status="RUNNING", currentMasterVersion=base.VERSION, maintenancePolicy={})

    (_, maintenance) = cluster_findings(base.findings(google))

    # l4-flex and h100-queued are flex-start: GKE replaces their nodes as they end.
    assert maintenance.severity == "warning"
    assert maintenance.message == (
        "No maintenance window or exclusion: GKE may upgrade the nodes of l4-shared,"
        " h100-specific at any time, honouring PodDisruptionBudgets for up to an hour during a"
        " surge upgrade before it evicts, so a longer job is ended."
    )


def exclusion(scope: str | None) -> dict[str, Any]:
    window: dict[str, Any] = {
        "startTime": "2020-01-01T00:00:00Z",
        "endTime": "2099-01-01T00:00:00Z",
    }
    if scope is not None:
        window["maintenanceExclusionOptions"] = {"scope": scope}
    return {"maintenancePolicy": {"window": {"maintenanceExclusions": {"training": window}}}}


@pytest.mark.parametrize("scope", ["NO_MINOR_OR_NODE_UPGRADES", "NO_UPGRADES", None])
def test_an_exclusion_in_force_that_holds_node_upgrades_off_is_ok(
    google: FakeGoogle, scope: str | None
) -> None:
    google.cluster(status="RUNNING", currentMasterVersion=base.VERSION, **exclusion(scope))

    (_, maintenance) = cluster_findings(base.findings(google))

    assert maintenance == Finding(
        "ok",
        CLUSTER,
        "Maintenance exclusion training until 2099-01-01T00:00:00Z holds GKE's node upgrades off.",
        "Nothing.",
    )


def test_an_exclusion_of_minor_upgrades_only_leaves_node_patches_and_warns(
    google: FakeGoogle,
) -> None:
    # MaintenanceExclusionOptions.scope NO_MINOR_UPGRADES: patch upgrades still reach nodes.
    google.cluster(
        status="RUNNING", currentMasterVersion=base.VERSION, **exclusion("NO_MINOR_UPGRADES")
    )

    (_, maintenance) = cluster_findings(base.findings(google))

    assert maintenance.severity == "warning"


def test_an_exclusion_that_has_ended_warns(google: FakeGoogle) -> None:
    ended = exclusion("NO_UPGRADES")
    ended["maintenancePolicy"]["window"]["maintenanceExclusions"]["training"]["endTime"] = (
        "2021-01-01T00:00:00Z"
    )
    google.cluster(status="RUNNING", currentMasterVersion=base.VERSION, **ended)

    (_, maintenance) = cluster_findings(base.findings(google))

    assert maintenance.severity == "warning"


def pin_the_upgraded_pools(c: Config) -> None:
    for name in ("l4-shared", base.GKE_RESERVED_POOL):
        base.pool(c, name).setdefault("gcp", {})["nodeVersion"] = "1.35.2-gke.1485000"


def test_pinned_pools_of_a_cluster_without_a_channel_need_no_window(google: FakeGoogle) -> None:
    # container.v1 ReleaseChannel.channel: `UNSPECIFIED` is "No channel specified".
    google.cluster(
        status="RUNNING",
        currentMasterVersion=base.VERSION,
        maintenancePolicy={},
        releaseChannel={"channel": "UNSPECIFIED"},
    )

    assert cluster_findings(base.findings(google, pin_the_upgraded_pools)) == [base.CLUSTER_OK]


def test_pinned_pools_of_a_cluster_on_a_release_channel_still_need_a_window(
    google: FakeGoogle,
) -> None:
    # On a release channel GKE upgrades pinned pools too when auto-upgrade runs (gcp.nodeVersion);
    # container.v1 `Cluster.releaseChannel` enrols a cluster created without a channel in one.
    google.cluster(
        status="RUNNING",
        currentMasterVersion=base.VERSION,
        maintenancePolicy={},
        releaseChannel={"channel": "REGULAR"},
    )

    (_, maintenance) = cluster_findings(base.findings(google, pin_the_upgraded_pools))

    assert maintenance.severity == "warning"
    assert "l4-shared, h100-specific at any time" in maintenance.message


# --- A specific reservation's room for surge nodes --------------------------------------------


def surging(c: Config) -> None:
    base.pool(c, base.GKE_RESERVED_POOL)["gcp"]["maxSurge"] = 1


def test_a_surging_pool_whose_reservation_has_no_spare_vm_warns(google: FakeGoogle) -> None:
    # The reservation holds 2, the pool's max: GKE counts the surge node against it and keeps
    # retrying the upgrade (GKE's node-upgrades-quota page).
    found = base.of_pool(base.findings(google, surging), base.GKE_RESERVED_POOL)

    assert found[-1] == Finding(
        "warning",
        RESERVED,
        "An upgrade adds 1 node(s) (maxSurge) from reservation h100-ml-dev, which holds 2: with"
        " the pool at its max of 2, GKE has no VM to surge to and keeps retrying the upgrade.",
        "Set gpu-platform:pools[1].gcp.maxSurge to 0 (one node is then taken out at a time), or"
        " grow the reservation to 3.",
    )


def test_a_surging_pool_whose_reservation_has_a_spare_vm_is_proven(google: FakeGoogle) -> None:
    google.reservation(count=3)

    found = base.of_pool(base.findings(google, surging), base.GKE_RESERVED_POOL)

    assert found[-1].severity == "ok"
    assert found[-1].message.startswith("Reservation h100-ml-dev holds 3: room for")


def test_a_pool_that_does_not_surge_is_not_checked_for_spare_vms(google: FakeGoogle) -> None:
    found = base.of_pool(base.findings(google), base.GKE_RESERVED_POOL)

    assert not any("maxSurge" in f.message for f in found)
