"""The GKE pre-flight check's GPU quota findings, against the fake Compute Engine API of
test_preflight_gke (answers held to the compute.v1 discovery document's `Region` and `Project`
schemas). The stack is gke-dev's with the capacity pools: l4-shared (Spot, 3 x 1 L4), l4-flex
(flex-start, 4 x 2 L4), h100-queued (queued flex-start, 4 x 8 H100) and h100-specific (on a
specific reservation)."""

import json
from importlib.resources import files
from typing import Any

from gpu_platform.cli.findings import Finding
from gpu_platform.cli.preflight_gke_quotas import ALL_REGIONS, QUOTA_METRICS
from tests.gpu_platform.cli import test_preflight_gke as base

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


def test_gpus_without_a_quota_in_the_api_are_named_as_not_checked(google: FakeGoogle) -> None:
    # The discovery document names no on-demand H100 quota.
    def on_demand_h100(c: Config) -> None:
        base.pool(c, "l4-shared").update(
            instanceTypes=["a3-highgpu-8g"],
            accelerator=None,
            gpusPerNode=None,
            capacity="on-demand",
        )

    assert quota_findings(base.findings(google, on_demand_h100))["GPU quota"] == Finding(
        "warning",
        "GPU quota",
        "Not checked for l4-shared: Compute Engine's API names no regional quota for their GPUs"
        " and capacity.",
        "Check the pools' GPUs in the console's Quotas page (Cloud Quotas) before they scale up.",
    )


def test_a_pool_on_a_specific_reservation_counts_against_no_quota(google: FakeGoogle) -> None:
    found = quota_findings(base.findings(google))

    assert not any("h100-specific" in f.message for f in found.values())
