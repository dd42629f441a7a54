"""What `gpu-platform preflight` finds of a GKE stack's GPU quotas: whether the project's quotas
let every pool grow to its `max`, per region and over all regions.

Compute Engine's GPU quotas (the `Quota` schema of the compute.v1 discovery document, its
`metric` enum) are per region and per GPU model, separately for Spot and preemptible VMs
(`PREEMPTIBLE_NVIDIA_<GPU>_GPUS`), which flex-start and queued-provisioning VMs count against as
well (docs/gke-capacity.md); `GPUS_ALL_REGIONS` caps the project's GPUs over every region.
`regions.get` answers a region's quotas, `projects.get` the project-wide ones, each with its
`limit` and `usage`. A node that consumes a reservation takes no quota of its own: the
reservation holds it. The pools' GPUs in the cluster's region are summed per quota at their
`max` (and `min`, which GKE must be able to start): past a quota, a scale-up fails and pods
wait Pending.

For the GPUs that API names no quota for, preflight reads the Cloud Quotas API
(`cloudquotas.googleapis.com`, v1 `projects.locations.services.quotaInfos.list` of
`compute.googleapis.com`, which needs the permission `cloudquotas.quotas.get` and the API
enabled in the project: https://cloud.google.com/docs/quotas/reference/rest/v1/
projects.locations.services.quotaInfos/list). Compute Engine counts GPUs there by the
service-specific dimension `gpu_family` ("Configure Cloud Quotas dimensions" and "Quota and
system limit terminology" in Google's Cloud Quotas documentation); each `QuotaInfo` holds a
value per combination of dimensions (`dimensionsInfos[].dimensions`, `.details.value`,
`.applicableLocations`). Google's documentation names the dimension but neither the quota IDs
that carry it nor its values (which `gpu_family` an H100, H200 or B200 counts against): the
platform does not guess them, and shows the pools' region's GPU-family quotas as the project's
answer lists them, for the pools' GPUs to be compared by eye.
"""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpu_platform.config import GpuPoolSpec, dynamic_workload_scheduler_modes
from gpu_platform.node_identity import GpuShape
from gpu_platform.preflight.findings import Finding

# The platform's accelerator -> its regional quota metrics (on-demand, Spot and preemptible), as
# the compute.v1 discovery document's `Quota.metric` enum names them. It names no on-demand H100
# quota and none for H100 Mega, H200 or B200: those are not checked.
QUOTA_METRICS: Mapping[str, tuple[str | None, str | None]] = {
    "t4": ("NVIDIA_T4_GPUS", "PREEMPTIBLE_NVIDIA_T4_GPUS"),
    "p4": ("NVIDIA_P4_GPUS", "PREEMPTIBLE_NVIDIA_P4_GPUS"),
    "p100": ("NVIDIA_P100_GPUS", "PREEMPTIBLE_NVIDIA_P100_GPUS"),
    "v100": ("NVIDIA_V100_GPUS", "PREEMPTIBLE_NVIDIA_V100_GPUS"),
    "l4": ("NVIDIA_L4_GPUS", "PREEMPTIBLE_NVIDIA_L4_GPUS"),
    "a100-40gb": ("NVIDIA_A100_GPUS", "PREEMPTIBLE_NVIDIA_A100_GPUS"),
    "a100-80gb": ("NVIDIA_A100_80GB_GPUS", "PREEMPTIBLE_NVIDIA_A100_80GB_GPUS"),
    "h100-80gb": (None, "PREEMPTIBLE_NVIDIA_H100_GPUS"),
}
ALL_REGIONS = "GPUS_ALL_REGIONS"
GPU_FAMILY_DIMENSION = "gpu_family"
GLOBAL_LOCATION = "global"
"""`DimensionsInfo.applicableLocations` of a quota that is not per region or zone."""


@dataclass
class _Need:
    """The GPUs the pools that count against one quota may hold."""

    pools: list[str]
    at_min: int = 0
    at_max: int = 0


def unchecked_pools(pools: Sequence[tuple[GpuPoolSpec, GpuShape]]) -> list[str]:
    """The pools whose GPUs and capacity Compute Engine's API names no regional quota for."""
    return [
        pool.name
        for pool, gpus in pools
        if pool.gcp.reservation != "specific" and _metric(pool, gpus.accelerator) is None
    ]


def quota_findings(
    pools: Sequence[tuple[GpuPoolSpec, GpuShape]],
    region: str,
    regional: Iterable[Mapping[str, Any]],
    global_: Iterable[Mapping[str, Any]],
    family_quotas: Sequence[Mapping[str, Any]] | str = (),
) -> list[Finding]:
    """One finding per quota the pools count against, the regional ones first, then those
    with no quota to check; `regional` and `global_` are `Region.quotas` and `Project.quotas`,
    `family_quotas` the `QuotaInfo`s of Compute Engine that Cloud Quotas lists, or why it could
    not be read."""
    needs: dict[str, _Need] = {}
    unchecked = []
    for pool, gpus in pools:
        if pool.gcp.reservation == "specific":
            continue
        metric = _metric(pool, gpus.accelerator)
        for name in (metric, ALL_REGIONS):
            if name is not None:
                _add(needs.setdefault(name, _Need([])), pool, gpus)
        if metric is None:
            unchecked.append(pool.name)
    quotas = {q["metric"]: q for q in regional}
    quotas[ALL_REGIONS] = next((q for q in global_ if q["metric"] == ALL_REGIONS), {})
    findings = [
        _finding(metric, region, need, quotas.get(metric))
        for metric, need in sorted(needs.items(), key=lambda item: item[0] == ALL_REGIONS)
    ]
    if unchecked:
        findings.append(_unchecked_finding(unchecked, region, family_quotas))
    return findings


def _unchecked_finding(
    unchecked: Sequence[str], region: str, family_quotas: Sequence[Mapping[str, Any]] | str
) -> Finding:
    if isinstance(family_quotas, str):
        listed = f" Cloud Quotas could not be read: {family_quotas}."
    else:
        held = gpu_family_quotas(family_quotas, region)
        listed = (
            f" Cloud Quotas lists these GPU-family quotas in {region}: {'; '.join(held)}."
            if held
            else f" Cloud Quotas lists no GPU-family quota in {region}."
        )
    return Finding(
        "warning",
        "GPU quota",
        f"Not checked for {', '.join(unchecked)}: Compute Engine's API names no regional"
        f" quota for their GPUs and capacity.{listed}",
        "Check the pools' GPUs against their family's quota (the console's Quotas page) before"
        " they scale up.",
    )


def gpu_family_quotas(quota_infos: Iterable[Mapping[str, Any]], region: str) -> list[str]:
    """`<quotaId> gpu_family=<family>: <value>` of each value a `QuotaInfo` with the
    `gpu_family` dimension holds for `region` (or for every location), sorted."""
    found = []
    for info in quota_infos:
        if GPU_FAMILY_DIMENSION not in info.get("dimensions", []):
            continue
        for values in info.get("dimensionsInfos", []):
            dimensions = values.get("dimensions", {})
            if dimensions.get("region", region) != region:
                continue
            if not {region, GLOBAL_LOCATION} & set(values.get("applicableLocations", [])):
                continue
            family = dimensions.get(GPU_FAMILY_DIMENSION, "any other")
            value = values.get("details", {}).get("value", "?")
            found.append(f"{info.get('quotaId', '?')} {GPU_FAMILY_DIMENSION}={family}: {value}")
    return sorted(found)


def _metric(pool: GpuPoolSpec, accelerator: str) -> str | None:
    on_demand, preemptible = QUOTA_METRICS.get(accelerator, (None, None))
    if pool.capacity == "spot" or dynamic_workload_scheduler_modes(pool):
        return preemptible
    return on_demand


def _add(need: _Need, pool: GpuPoolSpec, gpus: GpuShape) -> None:
    need.pools.append(pool.name)
    need.at_min += pool.min * gpus.count
    need.at_max += pool.max * gpus.count


def _finding(metric: str, region: str, need: _Need, quota: Mapping[str, Any] | None) -> Finding:
    where = "over all regions" if metric == ALL_REGIONS else f"in {region}"
    subject = f"quota {metric} {where}"
    pools = ", ".join(need.pools)
    if not quota:
        return Finding(
            "warning",
            subject,
            f"Compute Engine lists no quota {metric} {where}, which {pools} count against.",
            "Check the project's GPU quotas (Cloud Quotas) before the pools scale up.",
        )
    limit, usage = int(quota["limit"]), int(quota.get("usage", 0))
    held = f"The quota is {limit} GPUs ({usage} in use)"
    if limit < need.at_min:
        return Finding(
            "blocking",
            subject,
            f"{held}; {pools} start and keep {need.at_min} GPUs at their min.",
            f"Request a {metric} quota of at least {need.at_max} {where}, or lower the pools' min.",
        )
    if limit < need.at_max:
        return Finding(
            "warning",
            subject,
            f"{held}; {pools} may grow to {need.at_max} GPUs at their max: past {limit}, scale-ups"
            " fail and pods wait Pending.",
            f"Request a {metric} quota of {need.at_max} {where}, or lower the pools' max.",
        )
    return Finding(
        "ok",
        subject,
        f"{held}; {pools} need at most {need.at_max} at their max.",
        "Nothing.",
    )
