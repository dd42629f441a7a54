"""Stack configs, built on the dev stack's, that tests of several components share."""

import copy
from typing import Any

Config = dict[str, Any]

AL2023_RELEASE = "1.35.6-20260714"
"""An EKS AL2023 NVIDIA AMI release for Kubernetes 1.35, the stand-in cluster's version, whose
driver the platform knows (580.159.03): every EKS pool must pin one."""
BOTTLEROCKET_RELEASE = "1.54.0-0d4a7f31"
"""A Bottlerocket release whose NVIDIA variant's driver the platform knows (580.126.09)."""

MIG_POOL = "a100-mig"
MIG_SLICE_RESOURCE = "nvidia.com/mig-1g.10gb"


def with_mig_mixed_pool(config: Config) -> Config:
    """`config` plus an A100 80GB pool partitioned into 1g.10gb MIG slices, advertised under their
    own resource name (`mixed`), which the tenant namespace's smoke test runs on."""
    config = copy.deepcopy(config)
    config["gpu-platform:pools"].append(
        {
            "name": MIG_POOL,
            "instanceTypes": ["p4de.24xlarge"],
            "accelerator": "a100-80gb",
            "gpusPerNode": 8,
            "max": 2,
            "sharing": {"mode": "mig", "strategy": "mixed", "profile": "all-1g.10gb"},
            "aws": {"amiReleaseVersion": AL2023_RELEASE},
        }
    )
    config["gpu-platform:namespaces"][0]["smokeTestPool"] = MIG_POOL
    config["gpu-platform:namespaces"][0]["migQuota"] = {"1g.10gb": 8}
    return config


ATOMIC_POOL = MIG_POOL


def with_atomic_pool(config: Config) -> Config:
    """The dev stack's `config` plus its MIG pool (`with_mig_mixed_pool`) whose nodes come up
    together for a queued job (`aws.atomicScaleUp`): of slices, which no other pool hands out,
    so that no tenant's quota needs splitting between pools (gpu_platform/config/queue_rules.py)."""
    config = with_mig_mixed_pool(config)
    config["gpu-platform:pools"][-1]["aws"]["atomicScaleUp"] = True
    return config


def without_queues(config: Config) -> Config:
    """`config` with Kueue off, for a test that puts pools of one tenant's GPU resource side by
    side (on GKE every pool's is `nvidia.com/gpu`), whose quota queues want split between them
    (gpu_platform/config/queue_rules.py)."""
    config["gpu-platform:queues"] = {"enabled": False}
    return config


def reachable_gke(gke_config: Config) -> Config:
    """The GKE fixture's config, reaching its cluster through a kubeconfig context."""
    config = copy.deepcopy(gke_config)
    config["gpu-platform:cluster"]["kubeconfigContext"] = "ml-dev"
    return config


GKE_RESERVED_POOL = "h100-specific"
FLEX_START_POOL = "l4-flex"
QUEUED_POOL = "h100-queued"
"""The pool docs/examples/queued-provisioning-job.yaml runs on."""


def with_whole_gpu_quota(config: Config) -> Config:
    """`config`, with its pools as they will be, whose namespaces may also hold whole GPUs
    (`gpuQuota`), as many as the replicas of shared ones they hold: a smoke test on an exclusive
    pool asks for a whole GPU. Where the pools hand out whole GPUs beside shared ones, both are
    `nvidia.com/gpu`, which `gpuQuota` alone caps and the plan refuses a `sharedGpuQuota` for:
    each namespace's `sharedGpuQuota` is added to its `gpuQuota` there."""
    for namespace in config.get("gpu-platform:namespaces", []):
        namespace.setdefault("gpuQuota", namespace.get("sharedGpuQuota", 8))
    return with_gpu_quotas_fitting_its_pools(config)


def with_gpu_quotas_fitting_its_pools(config: Config) -> Config:
    """`config` whose namespaces' caps of `nvidia.com/gpu` fit its pools as they now are: where
    they hand out whole GPUs beside shared ones, `sharedGpuQuota` added to `gpuQuota` (both are
    `nvidia.com/gpu` there, which `gpuQuota` alone caps; the plan refuses a `sharedGpuQuota`);
    where they only share GPUs, a `gpuQuota` alone, from a stack that had whole GPUs, made
    `sharedGpuQuota` too (the plan refuses a `gpuQuota` that caps nothing)."""
    cluster = config.get("gpu-platform:cluster", {})
    cloud = config["gpu-platform:cloud"]
    node_image = cluster.get("nodeImage", "al2023" if cloud == "aws" else "cos")
    keys = {quota_key(pool, cloud, node_image) for pool in config.get("gpu-platform:pools", [])}
    for namespace in config.get("gpu-platform:namespaces", []):
        if {"gpuQuota", "sharedGpuQuota"} <= keys and "sharedGpuQuota" in namespace:
            shared = namespace.pop("sharedGpuQuota")
            namespace["gpuQuota"] = namespace.get("gpuQuota", 0) + shared
        elif "gpuQuota" not in keys and "sharedGpuQuota" in keys:
            namespace.setdefault("sharedGpuQuota", namespace.get("gpuQuota", 0))
    return config


def quota_key(pool: Config, cloud: str, node_image: str) -> str:
    """The namespace setting that caps what pods ask of a pool: `gpuQuota` whole GPUs,
    `sharedGpuQuota` replicas of time-sliced and MPS GPUs and GKE's partitions (GKE partitions
    MIG GPUs on COS), `migQuota` the slices the operator's MIG manager makes."""
    mode = pool.get("sharing", {}).get("mode", "exclusive")
    if mode == "exclusive":
        return "gpuQuota"
    if mode == "mig" and not (cloud == "gcp" and node_image == "cos"):
        return "migQuota"
    return "sharedGpuQuota"


def with_gke_capacity_pools(gke_config: Config) -> Config:
    """The GKE fixture's config plus a pool on a specific Compute Engine reservation (in its one
    zone), a flex-start pool whose nodes run for at most a day, and a flex-start pool with
    queued provisioning, as GKE's guide creates them, all of whole GPUs beside the fixture's
    pool that GKE time-shares."""
    config = copy.deepcopy(gke_config)
    config["gpu-platform:pools"] += [
        {
            "name": GKE_RESERVED_POOL,
            "instanceTypes": ["a3-highgpu-8g"],
            "max": 2,
            "zones": ["us-central1-a"],
            "gcp": {"reservation": "specific", "reservationName": "h100-ml-dev"},
        },
        {
            "name": FLEX_START_POOL,
            "instanceTypes": ["g2-standard-24"],
            "max": 4,
            "gcp": {"flexStart": True, "maxRunHours": 24},
        },
        {
            "name": QUEUED_POOL,
            "instanceTypes": ["a3-highgpu-8g"],
            "max": 4,
            "gcp": {"flexStart": True, "queuedProvisioning": True},
        },
    ]
    # Four pools of `nvidia.com/gpu` under one tenant's quota, which queues want split between
    # them (gpu_platform/config/queue_rules.py).
    config["gpu-platform:queues"] = {"enabled": False}
    return with_whole_gpu_quota(config)


ODCR_POOL = "h100-odcr"
ODCR = "cr-0a1b2c3d4e5f60718"
"""The on-demand capacity reservation of ODCR_POOL: p5.48xlarge in us-east-1a."""
ODCR_GROUP = "arn:aws:resource-groups:us-east-1:123456789012:group/gpu-reservations"
"""A resource group of capacity reservations, for ODCR_POOL to launch into instead."""
BLOCK_POOL = "h100-block"
BLOCK = "cr-0123456789abcdef0"
"""The Capacity Block of BLOCK_POOL: p5.48xlarge in us-east-1a."""
BLOCK_START = "2026-12-01T11:30:00+00:00"
"""When BLOCK starts, as EC2 reports a block's `StartDate`."""


def with_ec2_reserved_pools(config: Config) -> Config:
    """`config` plus two pools of p5.48xlarge in us-east-1a, at most 2 nodes each, whose
    capacity is bought ahead: ODCR_POOL in the on-demand capacity reservation ODCR,
    and BLOCK_POOL on the Capacity Block BLOCK, which starts at BLOCK_START; queues off."""
    config = copy.deepcopy(config)
    config["gpu-platform:pools"] += [
        _h100_pool(ODCR_POOL, "reserved", capacityReservationId=ODCR),
        _h100_pool(
            BLOCK_POOL,
            "capacity-block",
            capacityReservationId=BLOCK,
            capacityBlockStart=BLOCK_START,
        ),
    ]
    return with_gpu_quotas_fitting_its_pools(without_queues(config))


def _h100_pool(name: str, capacity: str, **aws: str) -> dict[str, Any]:
    return {
        "name": name,
        "instanceTypes": ["p5.48xlarge"],
        "max": 2,
        "zones": ["us-east-1a"],
        "capacity": capacity,
        "aws": {"amiReleaseVersion": AL2023_RELEASE, **aws},
    }


def with_quota_for_any_pool(config: Config) -> Config:
    """`config` with its first namespace allowed whole GPUs and 1g.10gb MIG slices too (the dev
    stack file's allows only replicas), so that a test that changes the smoke test's pool to
    another sharing mode still has a smoke test the quota admits."""
    config["gpu-platform:namespaces"][0].update(gpuQuota=8, migQuota={"1g.10gb": 8})
    return config
