"""`gpu-platform preflight` on GKE: whether the lock holds COS's default driver for the GKE
versions the pools' nodes run now.

The plan and `pulumi up` read COS's default driver for a pool's GPU on its nodes' version from
the lock where the hand table names no source for it (gpu_platform/drivers.py): a version GKE
moved the cluster or a pool to since the lock was last refreshed stops them. Preflight reads
the versions GKE runs and says so before they do.
"""

from collections.abc import Mapping
from typing import Any

from gpu_platform.cli.findings import Finding
from gpu_platform.config import GpuPoolSpec, StackConfig
from gpu_platform.driver_tables.cos import Unpublished
from gpu_platform.drivers import cos_default_in_lock, locked_cos_default
from gpu_platform.lock.lockfile import LOCK_COMMAND, Lock, LockError, MissingLockEntry, load
from gpu_platform.node_identity import POOL_LABEL, GpuShape


def lock_findings(
    config: StackConfig, cluster: Mapping[str, Any], gpus: Mapping[int, GpuShape]
) -> list[Finding]:
    """For each COS pool whose driver comes from the lock, each GKE version the pool's nodes run
    or are pinned to that the lock has no entry for, or whose COS offers no driver for the GPU
    (the lock says so); nothing where the lock has what the plan will read."""
    if config.node_image != "cos":
        return []
    wanted = [
        (pool, version, gpus[i].accelerator)
        for i, pool in enumerate(config.pools)
        if pool.gcp.cos_driver_branch is None
        for version in _versions(pool, cluster)
        if cos_default_in_lock(version, gpus[i].accelerator)
    ]
    if not wanted:
        return []
    try:
        lock = load()
    except LockError as error:
        return [Finding("blocking", "gpu-platform.lock", str(error), f"Run `{LOCK_COMMAND}`.")]
    findings = (_finding(lock, pool, version, accelerator) for pool, version, accelerator in wanted)
    return [finding for finding in findings if finding is not None]


def _versions(pool: GpuPoolSpec, cluster: Mapping[str, Any]) -> list[str]:
    """The GKE versions of the pool's nodes: the one it pins, and the one GKE runs them at (a
    pool GKE does not run yet is created at the control plane's)."""
    # Pulumi names each node pool with a random suffix: the platform's label names its pool.
    running = {
        live.get("config", {}).get("labels", {}).get(POOL_LABEL): live.get("version")
        for live in cluster.get("nodePools", [])
    }
    live = running.get(pool.name) or cluster.get("currentMasterVersion")
    versions = [pool.gcp.node_version, live]
    return sorted({v for v in versions if v}, key=versions.index)


def _finding(lock: Lock, pool: GpuPoolSpec, version: str, accelerator: str) -> Finding | None:
    subject = f"pool {pool.name}"
    try:
        driver = locked_cos_default(lock, version, accelerator)
    except MissingLockEntry as missing:
        return Finding(
            "warning",
            subject,
            f"GKE {version}, which its nodes run or will run, has no entry in"
            f" {lock.path.name}: {missing.entry_name}. The plan and `pulumi up` stop at it.",
            f"Run `{LOCK_COMMAND}` and commit {lock.path.name} (docs/lock.md).",
        )
    if isinstance(driver, Unpublished):
        return Finding(
            "blocking",
            subject,
            f"On GKE {version}, which its nodes run or will run: {driver.why}.",
            "Run the pool on a GKE version whose COS offers a driver for its GPU.",
        )
    return None
