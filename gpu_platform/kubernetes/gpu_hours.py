"""What a unit of each pool's GPU resource is worth in GPUs, for GPU-hours per team.

Kubernetes counts what a pod requests in units of the resource its node advertises: a whole GPU
(`nvidia.com/gpu` on an exclusive pool), a replica of a time-sliced or MPS GPU (`nvidia.com/gpu`
too: the platform keeps the device plugin's `renameByDefault` off), a MIG slice the operator's
MIG manager makes (`nvidia.com/mig-<slice>`) or a partition GKE makes (`nvidia.com/gpu`). The
same request is worth a GPU on one pool and a seventh of one on another, and nothing on the node
says which in a number Prometheus can read: the pools' config does. Each pool's worth becomes a
recording rule of its own (`gpu_platform:pool_gpus_per_request`, labelled with the pool and the
resource as kube-state-metrics names it), which the GPU-hour rules of `alerts/gpu-alerts.yaml`
join each pod's requests with through its node's pool label.

A unit is worth the node's GPUs over the units it advertises: a replica of a GPU shared N ways
is 1/N, a slice of a uniform MIG profile the share of the GPU it leaves the other slices (an
A100's `1g.10gb` is 1/7, its `3g.40gb` 1/2, since a GPU holds two and no third), so that a
pool's GPU-hours add up to its nodes' whatever the sharing.
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from gpu_platform.node_identity import GPU_RESOURCE, MIG_RESOURCE_PREFIX, ResolvedPool

POOL_SHARE_SERIES = "gpu_platform:pool_gpus_per_request"
GPU_HOURS_GROUP = "gpu-platform.gpu-hours"
"""The rules group of `alerts/gpu-alerts.yaml` the pools' rules open."""


@dataclass(frozen=True)
class PoolGpuShare:
    """What one unit of the GPU resource a pool's nodes advertise stands for."""

    pool: str
    resource: str
    """As Kubernetes names it: `nvidia.com/gpu`, `nvidia.com/mig-1g.10gb`."""
    gpus: Fraction


def pool_gpu_shares(pools: Sequence[ResolvedPool]) -> list[PoolGpuShare]:
    """Each pool's GPU resource (the one its nodes advertise units of) and a unit's worth."""
    return [
        PoolGpuShare(pool.spec.name, resource, Fraction(pool.gpu.count, units))
        for pool in pools
        for resource, units in pool.identity.resources.items()
        if units and (resource == GPU_RESOURCE or resource.startswith(MIG_RESOURCE_PREFIX))
    ]


def kube_state_resource(resource: str) -> str:
    """A resource's name in kube-state-metrics' `resource` label: every character but letters,
    digits and `_` as `_` (v2.20.0 internal/store/pod.go, `SanitizeLabelName`)."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", resource)


def pool_share_rules(shares: Sequence[PoolGpuShare]) -> list[dict[str, Any]]:
    """A recording rule per pool: a constant series with its unit's worth in GPUs."""
    return [
        {
            "record": POOL_SHARE_SERIES,
            "expr": f"vector({_promql_fraction(share.gpus)})",
            "labels": {"pool": share.pool, "resource": kube_state_resource(share.resource)},
        }
        for share in shares
    ]


def _promql_fraction(value: Fraction) -> str:
    if value.denominator == 1:
        return str(value.numerator)
    return f"{value.numerator} / {value.denominator}"
