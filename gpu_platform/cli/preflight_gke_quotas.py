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
"""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpu_platform.cli.findings import Finding
from gpu_platform.config import GpuPoolSpec, dynamic_workload_scheduler_modes
from gpu_platform.node_identity import GpuShape

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


@dataclass
class _Need:
    """The GPUs the pools that count against one quota may hold."""

    pools: list[str]
    at_min: int = 0
    at_max: int = 0


def quota_findings(
    pools: Sequence[tuple[GpuPoolSpec, GpuShape]],
    region: str,
    regional: Iterable[Mapping[str, Any]],
    global_: Iterable[Mapping[str, Any]],
) -> list[Finding]:
    """One finding per quota the pools count against, the regional ones first, then those
    with no quota to check; `regional` and `global_` are `Region.quotas` and `Project.quotas`."""
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
        findings.append(
            Finding(
                "warning",
                "GPU quota",
                f"Not checked for {', '.join(unchecked)}: Compute Engine's API names no regional"
                " quota for their GPUs and capacity.",
                "Check the pools' GPUs in the console's Quotas page (Cloud Quotas) before they"
                " scale up.",
            )
        )
    return findings


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
