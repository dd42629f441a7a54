"""The GKE pre-flight check's GPU quota findings, against the fake Compute Engine API of
test_checks (answers held to the compute.v1 discovery document's `Region` and `Project`
schemas). The stack is gke-dev's with the capacity pools: l4-shared (Spot, 3 x 1 L4), l4-flex
(flex-start, 4 x 2 L4), h100-queued (queued flex-start, 4 x 8 H100) and h100-specific (on a
specific reservation)."""

import json
from importlib.resources import files
from typing import Any

from gpu_platform.gke.preflight.quotas import ALL_REGIONS, QUOTA_METRICS
from gpu_platform.preflight.findings import Finding
from tests.gpu_platform.gke.preflight import test_checks as base

Config = dict[str, Any]
google = base.google
FakeGoogle = base.FakeGoogle
L4 = "quota PREEMPTIBLE_NVIDIA_L4_GPUS in us-central1"
ALL = "quota GPUS_ALL_REGIONS over all regions"


def quota_findings(found: list[Finding]) -> dict[str, Finding]:
    return {f.subject: f for f in found if f.subject.startswith(("quota ", "GPU quota"))}


def test_every_quota_metric_is_one_compute_engines_api_names() -> None:
    document = json.loads(
        (files("googleapiclient.discovery_cache") / "documents" / "compute.v1.json").read_text()
    )
    named = set(document["schemas"]["Quota"]["properties"]["metric"]["enum"])

    ours = {m for pair in QUOTA_METRICS.values() for m in pair if m is not None} | {ALL_REGIONS}

    assert ours <= named


def test_a_regional_quota_below_the_pools_max_warns(google: FakeGoogle) -> None:
    google.quotas({**base.AMPLE_QUOTAS, "PREEMPTIBLE_NVIDIA_L4_GPUS": (8, 2)})

    assert quota_findings(base.findings(google))[L4] == Finding(
        "warning",
        L4,
        "The quota is 8 GPUs (2 in use); l4-shared, l4-flex may grow to 11 GPUs at their max:"
        " past 8, scale-ups fail and pods wait Pending.",
        "Request a PREEMPTIBLE_NVIDIA_L4_GPUS quota of 11 in us-central1, or lower the pools' max.",
    )


def test_a_quota_below_the_pools_min_blocks(google: FakeGoogle) -> None:
    google.quotas({**base.AMPLE_QUOTAS, "PREEMPTIBLE_NVIDIA_L4_GPUS": (1, 0)})

    found = quota_findings(base.findings(google, lambda c: base.pool(c, "l4-shared").update(min=2)))

    assert found[L4] == Finding(
        "blocking",
        L4,
        "The quota is 1 GPUs (0 in use); l4-shared, l4-flex start and keep 2 GPUs at their min.",
        "Request a PREEMPTIBLE_NVIDIA_L4_GPUS quota of at least 11 in us-central1, or lower the"
        " pools' min.",
    )


def test_the_project_wide_quota_counts_every_region_and_pool(google: FakeGoogle) -> None:
    google.quotas(all_regions=16)

    assert quota_findings(base.findings(google))[ALL].severity == "warning"
    assert "may grow to 43 GPUs" in quota_findings(base.findings(google))[ALL].message


def test_a_quota_compute_engine_does_not_list_warns(google: FakeGoogle) -> None:
    google.quotas({"PREEMPTIBLE_NVIDIA_L4_GPUS": (64, 0)})

    assert quota_findings(base.findings(google))[
        "quota PREEMPTIBLE_NVIDIA_H100_GPUS in us-central1"
    ] == Finding(
        "warning",
        "quota PREEMPTIBLE_NVIDIA_H100_GPUS in us-central1",
        "Compute Engine lists no quota PREEMPTIBLE_NVIDIA_H100_GPUS in us-central1, which"
        " h100-queued count against.",
        "Check the project's GPU quotas (Cloud Quotas) before the pools scale up.",
    )


def test_on_demand_l4s_count_against_the_on_demand_quota(google: FakeGoogle) -> None:
    found = quota_findings(
        base.findings(google, lambda c: base.pool(c, "l4-shared").update(capacity="on-demand"))
    )

    assert found["quota NVIDIA_L4_GPUS in us-central1"].message == (
        "The quota is 64 GPUs (0 in use); l4-shared need at most 3 at their max."
    )


def on_demand_h100(c: Config) -> None:
    # The compute.v1 discovery document names no on-demand H100 quota.
    base.pool(c, "l4-shared").update(
        instanceTypes=["a3-highgpu-8g"],
        accelerator=None,
        gpusPerNode=None,
        capacity="on-demand",
    )


NOT_CHECKED = (
    "Not checked for l4-shared: Compute Engine's API names no regional quota for their GPUs and"
    " capacity."
)
ACTION = (
    "Check the pools' GPUs against their family's quota (the console's Quotas page) before they"
    " scale up."
)


def test_gpus_without_a_quota_in_the_api_are_shown_their_regions_gpu_family_quotas(
    google: FakeGoogle,
) -> None:
    # A ListQuotaInfosResponse as the Cloud Quotas v1 REST reference shapes it (QuotaInfo:
    # quotaId, dimensions, dimensionsInfos[].dimensions/details.value/applicableLocations);
    # the quota IDs and gpu_family values are test data, not Google's.
    family = {
        "quotaId": "TEST-GPUS-PER-FAMILY-per-project-region",
        "service": "compute.googleapis.com",
        "dimensions": ["region", "gpu_family"],
        "dimensionsInfos": [
            {
                "dimensions": {"region": "us-central1", "gpu_family": "TEST_H100"},
                "details": {"value": "16"},
                "applicableLocations": ["us-central1"],
            },
            {
                "dimensions": {"region": "europe-west4", "gpu_family": "TEST_H100"},
                "details": {"value": "64"},
                "applicableLocations": ["europe-west4"],
            },
            {
                "dimensions": {"region": "us-central1"},
                "details": {"value": "0"},
                "applicableLocations": ["us-central1"],
            },
        ],
    }
    cpus = {
        "quotaId": "TEST-CPUS-per-project-region",
        "dimensions": ["region"],
        "dimensionsInfos": [{"details": {"value": "24"}, "applicableLocations": ["us-central1"]}],
    }
    google.quota_infos = (200, {"quotaInfos": [family, cpus]})

    assert quota_findings(base.findings(google, on_demand_h100))["GPU quota"] == Finding(
        "warning",
        "GPU quota",
        f"{NOT_CHECKED} Cloud Quotas lists these GPU-family quotas in us-central1:"
        " TEST-GPUS-PER-FAMILY-per-project-region gpu_family=TEST_H100: 16;"
        " TEST-GPUS-PER-FAMILY-per-project-region gpu_family=any other: 0.",
        ACTION,
    )


def test_a_project_without_the_cloud_quotas_api_says_what_it_needs(google: FakeGoogle) -> None:
    assert quota_findings(base.findings(google, on_demand_h100))["GPU quota"] == Finding(
        "warning",
        "GPU quota",
        f"{NOT_CHECKED} Cloud Quotas could not be read: 403 PERMISSION_DENIED: Cloud Quotas API"
        " has not been used in project acme-ml-dev before or it is disabled. (it needs the Cloud"
        " Quotas API, cloudquotas.googleapis.com, enabled and cloudquotas.quotas.get).",
        ACTION,
    )


def test_cloud_quotas_is_asked_only_for_gpus_compute_engine_names_no_quota_for(
    google: FakeGoogle,
) -> None:
    # Every pool of the stack counts against a quota compute.v1 names (Spot and flex-start
    # against the preemptible ones).
    base.findings(google)

    assert "cloudquotas.projects.locations.services.quotaInfos.list" not in google.calls


def test_a_pool_on_a_specific_reservation_counts_against_no_quota(google: FakeGoogle) -> None:
    found = quota_findings(base.findings(google))

    assert not any("h100-specific" in f.message for f in found.values())
