"""The GKE pre-flight check's upgrade findings, against the fake GKE API of test_checks
(answers held to the container.v1 discovery document's `Cluster` schema): pinned node versions
against the control plane, the exclusion until end of support of each pinned pool GKE runs, the
cluster's maintenance window and exclusions, and a specific reservation's room for surge
nodes."""

import json
from pathlib import Path
from typing import Any

import pytest

from gpu_platform.lock.lockfile import LOCK_PATH_VARIABLE
from gpu_platform.preflight.findings import Finding
from tests.gpu_platform.gke.gke_api import api_problems
from tests.gpu_platform.gke.preflight import test_checks as base

Config = dict[str, Any]
google = base.google


@pytest.fixture(autouse=True)
def locked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A lock with L4's and H100's driver on every version these tests run or pin: its own
    findings are not these."""
    path = tmp_path / "gpu-platform.lock"
    monkeypatch.setenv(LOCK_PATH_VARIABLE, str(path))
    versions = (base.VERSION, "1.35.1-gke.1396000", "1.35.3-gke.1000")
    base.lock_of(path, {"l4": "580.95.05", "h100-80gb": "580.95.05"}, versions).save()


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


# A pinned pool's exclusion until end of support ends then (container.v1
# `NodePool.ExclusionUntilEndOfSupport.endTime`: "the cluster control plane version's end of
# support time"), and GKE upgrades the pool: automatic node upgrades happen "when there is an
# open maintenance window and no active maintenance exclusion" (GKE's
# maintenance-windows-and-exclusions page), so the cluster's window still decides when.
HELD_UNTIL = {
    "exclusionUntilEndOfSupport": {
        "enabled": True,
        "startTime": "2026-11-02T10:00:00Z",
        "endTime": "2027-10-01T00:00:00Z",
    }
}


def maintenance_findings(found: list[Finding]) -> list[Finding]:
    """The cluster's finding on when GKE upgrades its pools: a running pool here lacks the
    labels of the cluster's exporter finding, which is not this one."""
    return [f for f in cluster_findings(found) if "maintenance" in f.message.lower()]


def pinned_pools_running(**cluster: Any) -> dict[str, Any]:
    """Both pinned pools running on a release channel: l4-shared with its exclusion's end as GKE
    reports it, h100-specific with an exclusion GKE gives no end for; the others are flex-start
    or queued, which GKE replaces as they end."""
    reserved_labels = {"labels": {"gpu-platform.io/pool": base.GKE_RESERVED_POOL}}
    return {
        **running_pools(
            node_pool(maintenancePolicy=HELD_UNTIL),
            node_pool(
                name="h100-specific-9f8e7d6",
                config=reserved_labels,
                maintenancePolicy={"exclusionUntilEndOfSupport": {"enabled": True}},
            ),
        ),
        **cluster,
    }


def test_pinned_pools_without_a_window_are_upgraded_at_any_time_once_their_exclusion_ends(
    google: FakeGoogle,
) -> None:
    google.cluster(**pinned_pools_running(maintenancePolicy={}))

    found = base.findings(google, pin_the_upgraded_pools)

    (maintenance,) = maintenance_findings(found)
    assert maintenance.severity == "warning"
    assert maintenance.message == (
        "No maintenance window or exclusion: GKE may upgrade the nodes of the pinned pools once"
        " their exclusion until end of support ends (exclusionUntilEndOfSupport.endTime:"
        " l4-shared at 2027-10-01T00:00:00Z, h100-specific at its version's end of support),"
        " honouring PodDisruptionBudgets for up to an hour during a surge upgrade before it"
        " evicts, so a longer job is ended."
    )
    assert base.of_pool(found, "l4-shared") == []


def test_a_window_says_when_the_pinned_pools_are_upgraded_after_their_exclusion(
    google: FakeGoogle,
) -> None:
    daily = {"window": {"dailyMaintenanceWindow": {"startTime": "03:00"}}}
    google.cluster(**pinned_pools_running(maintenancePolicy=daily))

    (maintenance,) = maintenance_findings(base.findings(google, pin_the_upgraded_pools))

    assert maintenance == Finding(
        "ok",
        CLUSTER,
        "GKE upgrades nodes only in the daily maintenance window from 03:00 GMT. That includes"
        " the pinned pools once their exclusion until end of support ends"
        " (exclusionUntilEndOfSupport.endTime: l4-shared at 2027-10-01T00:00:00Z, h100-specific"
        " at its version's end of support).",
        "Nothing.",
    )


def test_unpinned_and_pinned_pools_without_a_window_are_named_apart(google: FakeGoogle) -> None:
    google.cluster(**running_pools(node_pool(maintenancePolicy=HELD_UNTIL)), maintenancePolicy={})

    (maintenance,) = maintenance_findings(base.findings(google, pin_l4_shared))

    assert maintenance.message.startswith(
        "No maintenance window or exclusion: GKE may upgrade the nodes of h100-specific at any"
        " time, and those of the pinned pools once their exclusion until end of support ends"
        " (exclusionUntilEndOfSupport.endTime: l4-shared at 2027-10-01T00:00:00Z), honouring"
    )


def test_a_cluster_exclusion_in_force_holds_a_pinned_pool_without_its_own_until_it_ends(
    google: FakeGoogle,
) -> None:
    # MaintenanceExclusionOptions.scope NO_MINOR_OR_NODE_UPGRADES holds every node upgrade off
    # while in force, the pinned pool's too; once it ends GKE moves the pool past its pin.
    training = exclusion("NO_MINOR_OR_NODE_UPGRADES")["maintenancePolicy"]
    google.cluster(**running_pools(node_pool()), maintenancePolicy=training)

    found = base.findings(google, pin_l4_shared)

    (finding,) = base.of_pool(found, "l4-shared")
    assert (finding.severity, finding.message) == (
        "warning",
        "gpu-platform:pools[0].gcp.nodeVersion pins the pool, whose node pool l4-shared-5e0d1c2"
        " has no maintenance exclusion until end of support"
        " (maintenancePolicy.exclusionUntilEndOfSupport.enabled is not true): the cluster's"
        " maintenance exclusion training until 2099-01-01T00:00:00Z holds it for now, and once"
        " that ends GKE, which keeps its auto-upgrade on in release channel REGULAR, moves it"
        " past the pin. Pulumi cannot add the exclusion to a node pool that exists, and the"
        " policy pack cannot see it there.",
    )
    assert maintenance_findings(found) == [
        Finding(
            "ok",
            CLUSTER,
            "Maintenance exclusion training until 2099-01-01T00:00:00Z holds GKE's node upgrades"
            " off.",
            "Nothing.",
        )
    ]


def test_a_cluster_exclusion_of_minor_upgrades_only_does_not_hold_a_pinned_pool(
    google: FakeGoogle,
) -> None:
    # NO_MINOR_UPGRADES lets GKE patch the pool's nodes, past a patch-level pin.
    training = exclusion("NO_MINOR_UPGRADES")["maintenancePolicy"]
    google.cluster(**running_pools(node_pool()), maintenancePolicy=training)

    (finding,) = base.of_pool(base.findings(google, pin_l4_shared), "l4-shared")

    assert finding.severity == "blocking"


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


# --- A pinned pool's exclusion until end of support -------------------------------------------


def running_pools(*pools: dict[str, Any], channel: str = "REGULAR") -> dict[str, Any]:
    """The cluster's fields with these node pools running (container.v1 `Cluster.nodePools`)."""
    return {
        "status": "RUNNING",
        "currentMasterVersion": base.VERSION,
        "releaseChannel": {"channel": channel},
        "nodePools": list(pools),
    }


def node_pool(**fields: Any) -> dict[str, Any]:
    """l4-shared as GKE runs it: Pulumi named it with a suffix, and the platform's label names
    the pool (`NodePool.config.labels`)."""
    return {
        "name": "l4-shared-5e0d1c2",
        "version": "1.35.1-gke.1396000",
        "config": {"imageType": "COS_CONTAINERD", "labels": {"gpu-platform.io/pool": "l4-shared"}},
        **fields,
    }


def pin_l4_shared(c: Config) -> None:
    base.pool(c, "l4-shared")["gcp"] = {"nodeVersion": "1.35.1-gke.1396000"}


@pytest.mark.parametrize(
    "policy",
    [{}, {"maintenancePolicy": {}}, {"maintenancePolicy": {"exclusionUntilEndOfSupport": {}}}],
)
def test_a_running_pinned_pool_without_its_exclusion_blocks(
    google: FakeGoogle, policy: dict[str, Any]
) -> None:
    # The exclusion the platform declares reaches GKE only when the provider creates the pool,
    # and the policy pack cannot see a pool's that exists (docs/upgrades.md).
    google.cluster(**running_pools(node_pool(**policy)))

    assert base.of_pool(base.findings(google, pin_l4_shared), "l4-shared") == [
        Finding(
            "blocking",
            "pool l4-shared",
            "gpu-platform:pools[0].gcp.nodeVersion pins the pool, whose node pool"
            " l4-shared-5e0d1c2 has no maintenance exclusion until end of support"
            " (maintenancePolicy.exclusionUntilEndOfSupport.enabled is not true): in release"
            " channel REGULAR GKE keeps its auto-upgrade on and moves it past the pin. Pulumi"
            " cannot add the exclusion to a node pool that exists, and the policy pack cannot see"
            " it there.",
            "Enable it with gcloud container node-pools update l4-shared-5e0d1c2 --project"
            " acme-ml-dev --location us-central1 --cluster ml-dev"
            " --add-maintenance-exclusion-until-end-of-support (gcloud 569.0.0 or later), or the"
            " GKE API's projects.locations.clusters.nodePools.update: PUT"
            " https://container.googleapis.com/v1/projects/acme-ml-dev/locations/us-central1/"
            "clusters/ml-dev/nodePools/l4-shared-5e0d1c2 with the body"
            f" {EXCLUSION_ONLY}. Send the maintenance policy alone: GKE may treat a request that"
            " also names the pool's node version as a node upgrade, which recreates its nodes"
            " even at the version they run.",
        )
    ]


EXCLUSION_ONLY = '{"maintenancePolicy": {"exclusionUntilEndOfSupport": {"enabled": true}}}'
"""The body gcloud sends for `container node-pools update NAME
--add-maintenance-exclusion-until-end-of-support` (google-cloud-sdk 578.0.0
lib/googlecloudsdk/api_lib/container/api_adapter.py: `UpdateNodePoolRequest` names the pool and
sets `maintenancePolicy` from `_GetNodePoolMaintenancePolicy` alone; the flag is public from
569.0.0, surface/container/node_pools/update.py). terraform-provider-google-beta v7.45.0, the
provider pulumi-gcp bridges (pulumi-gcp provider/go.mod replaces that module with ../upstream),
google-beta/services/container/resource_container_node_pool.go likewise updates
`upgrade_settings`, `node_drain_config` or `node_locations` with an `UpdateNodePoolRequest` of
that field alone, without `nodeVersion` or `imageType`, which container.v1 marks "Required". GKE
may treat a request with a node version as a node upgrade: its troubleshooting for "Node pool
requires recreation" recreates a pool with `gcloud container clusters upgrade --node-pool` to the
version it runs (`ClusterUpdate.desiredNodeVersion`), not with `nodePools.update`."""


def test_the_advised_body_changes_the_maintenance_policy_alone() -> None:
    # container.v1 discovery document: `UpdateNodePoolRequest.maintenancePolicy` is a
    # `NodePoolMaintenancePolicy`, whose `exclusionUntilEndOfSupport.enabled` is a boolean.
    body = json.loads(EXCLUSION_ONLY)

    assert api_problems(body, "UpdateNodePoolRequest") == []
    assert body.keys() == {"maintenancePolicy"}


def test_a_disabled_exclusion_blocks(google: FakeGoogle) -> None:
    disabled = {"exclusionUntilEndOfSupport": {"enabled": False}}
    google.cluster(**running_pools(node_pool(maintenancePolicy=disabled)))

    (finding,) = base.of_pool(base.findings(google, pin_l4_shared), "l4-shared")

    assert finding.severity == "blocking"


def test_a_running_pinned_pool_held_by_its_exclusion_passes(google: FakeGoogle) -> None:
    held = {
        "exclusionUntilEndOfSupport": {
            "enabled": True,
            "startTime": "2026-11-02T10:00:00Z",
            "endTime": "2027-10-01T00:00:00Z",
        }
    }
    google.cluster(**running_pools(node_pool(maintenancePolicy=held)))

    assert base.of_pool(base.findings(google, pin_l4_shared), "l4-shared") == []


def test_a_pinned_pool_gke_does_not_run_yet_is_created_with_its_exclusion(
    google: FakeGoogle,
) -> None:
    other = node_pool(name="system-1a2b3c4", config={"labels": {"role": "system"}})
    google.cluster(**running_pools(other))

    assert base.of_pool(base.findings(google, pin_l4_shared), "l4-shared") == []


def test_a_running_pinned_pool_of_a_cluster_without_a_channel_needs_no_exclusion(
    google: FakeGoogle,
) -> None:
    # Without a channel the platform turns the pinned pool's auto-upgrade off instead.
    google.cluster(**running_pools(node_pool(), channel="UNSPECIFIED"))

    assert base.of_pool(base.findings(google, pin_l4_shared), "l4-shared") == []


def test_an_unpinned_running_pool_needs_no_exclusion(google: FakeGoogle) -> None:
    google.cluster(**running_pools(node_pool()))

    assert base.of_pool(base.findings(google), "l4-shared") == []
