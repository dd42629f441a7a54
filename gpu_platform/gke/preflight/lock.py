"""`gpu-platform preflight` on GKE: whether the lock holds COS's default driver for the GKE
versions the pools' nodes run now, the versions GKE may create the cluster at, and the versions
its release channel may move it to next.

The plan and `pulumi up` read COS's default driver for a pool's GPU on its nodes' version from
the lock where the hand table names no source for it (gpu_platform/drivers.py): a version GKE
moved the cluster or a pool to since the lock was last refreshed stops them. Preflight reads
the versions GKE runs and offers (`getServerConfig`, container.v1 `ServerConfig.channels[]`:
`defaultVersion`, the version new clusters get, and `validVersions`, those the channel offers)
and says so before they do.
"""

from collections.abc import Callable, Mapping
from typing import Any

from gpu_platform.config import GpuPoolSpec, StackConfig
from gpu_platform.driver_tables.cos import Unpublished
from gpu_platform.drivers import (
    DifferingDefaults,
    NvidiaDriver,
    cos_default_in_lock,
    gke_minor,
    locked_cos_default,
)
from gpu_platform.lock.lockfile import (
    LOCK_COMMAND,
    REFRESH_BRANCH,
    Lock,
    LockError,
    MissingLockEntry,
    load,
)
from gpu_platform.node_identity import POOL_LABEL, GpuShape
from gpu_platform.preflight.findings import Finding
from gpu_platform.version_order import version_key

ServerConfig = Callable[[], Mapping[str, Any]]
"""The location's `ServerConfig`, read only where a check needs it."""


def lock_findings(
    config: StackConfig,
    cluster: Mapping[str, Any] | None,
    gpus: Mapping[int, GpuShape],
    server: ServerConfig,
) -> list[Finding]:
    """For each COS pool whose driver comes from the lock, each GKE version the pool's nodes run
    or are pinned to (or, before the cluster exists, that GKE creates it at) that the lock has
    no entry for, or whose COS offers no driver for the GPU (the lock says so), or whose default
    contradicts the pool's `gcp.cosDriverBranch`; then each version the cluster's channel may
    move it to that the lock lacks. Nothing where the lock has what the plan will read."""
    if config.node_image != "cos":
        return []
    needs_lock = [
        (i, pool)
        for i, pool in enumerate(config.pools)
        if (version := _a_version(config, pool, cluster)) is not None
        and cos_default_in_lock(version, gpus[i].accelerator)
    ]
    if not needs_lock:
        return []
    try:
        lock = load()
    except LockError as error:
        return [Finding("blocking", "gpu-platform.lock", str(error), f"Run `{LOCK_COMMAND}`.")]
    channel, offered = _channel(config, cluster, server)
    findings = []
    for i, pool in needs_lock:
        accelerator = gpus[i].accelerator
        for version in _versions(config, pool, cluster, offered):
            if cos_default_in_lock(version, accelerator):
                finding = _finding(lock, pool, version, accelerator)
                findings += [finding] if finding is not None else []
    if cluster is not None and channel is not None:
        findings += _ahead_findings(lock, config, cluster, gpus, channel, offered)
    return findings


def _a_version(
    config: StackConfig, pool: GpuPoolSpec, cluster: Mapping[str, Any] | None
) -> str | None:
    """A version of the pool's nodes' minor, to tell whether the lock gives their driver; None
    where GKE gives none."""
    if pool.gcp.node_version is not None:
        return pool.gcp.node_version
    if cluster is not None:
        return cluster.get("currentMasterVersion") or None
    create = config.cluster.create
    assert create is not None  # no cluster without cluster.create is a finding of its own
    return create.gcp.version or create.kubernetes_version


def _channel(
    config: StackConfig, cluster: Mapping[str, Any] | None, server: ServerConfig
) -> tuple[str | None, Mapping[str, Any]]:
    """The cluster's release channel (`REGULAR`), and its entry of the location's
    `ServerConfig.channels[]`; None outside one (no automatic move of the cluster)."""
    if cluster is not None:
        channel = cluster.get("releaseChannel", {}).get("channel")
    else:
        create = config.cluster.create
        assert create is not None
        channel = create.gcp.release_channel.upper()
    if channel in (None, "", "NONE", "UNSPECIFIED"):
        return None, {}
    channels: list[Mapping[str, Any]] = server().get("channels", [])
    return channel, next((c for c in channels if c.get("channel") == channel), {})


def _versions(
    config: StackConfig,
    pool: GpuPoolSpec,
    cluster: Mapping[str, Any] | None,
    offered: Mapping[str, Any],
) -> list[str]:
    """The GKE versions of the pool's nodes: the one it pins, and the one GKE runs them at (a
    pool GKE does not run yet is created at the control plane's); before the cluster exists,
    the version it is created at: `gcp.version`, else the minor (whose versions the plan reads)
    and the patch GKE creates it at, the channel's default where it is of that minor, else
    every version of the minor the channel offers."""
    if cluster is not None:
        # Pulumi names each node pool with a random suffix: the platform's label names its pool.
        running = {
            live.get("config", {}).get("labels", {}).get(POOL_LABEL): live.get("version")
            for live in cluster.get("nodePools", [])
        }
        created = [running.get(pool.name) or cluster.get("currentMasterVersion")]
    else:
        create = config.cluster.create
        assert create is not None
        minor = create.kubernetes_version
        default = offered.get("defaultVersion")
        valid = [v for v in offered.get("validVersions", []) if gke_minor(v) == minor]
        if create.gcp.version is not None:
            created = [create.gcp.version]
        elif default is not None and gke_minor(default) == minor:
            created = [minor, default]
        else:
            created = [minor, *valid]
    versions = [pool.gcp.node_version, *created]
    return sorted({v for v in versions if v}, key=versions.index)


def _ahead_findings(
    lock: Lock,
    config: StackConfig,
    cluster: Mapping[str, Any],
    gpus: Mapping[int, GpuShape],
    channel: str,
    offered: Mapping[str, Any],
) -> list[Finding]:
    """A release channel moves the cluster, and the pools that pin no version, to versions it
    offers newer than the cluster's, on any day of its maintenance window: one warning per such
    version the lock lacks, before the plan stops at it."""
    current = str(cluster.get("currentMasterVersion", ""))
    ahead = {*offered.get("validVersions", []), offered.get("defaultVersion")}
    newer = sorted(
        (v for v in ahead if v and current and version_key(v) > version_key(current)),
        key=version_key,
    )
    findings = []
    for version in newer:
        missing: dict[str, list[str]] = {}
        for i, pool in enumerate(config.pools):
            accelerator = gpus[i].accelerator
            if pool.gcp.node_version is not None or not cos_default_in_lock(version, accelerator):
                continue
            try:
                locked_cos_default(lock, version, accelerator)
            except MissingLockEntry as lacking:
                missing.setdefault(lacking.entry_name, []).append(pool.name)
        for entry_name, pools in missing.items():
            findings.append(
                Finding(
                    "warning",
                    f"GKE {version}",
                    f"The cluster's {channel.lower()} channel offers it, and may move the"
                    f" cluster and its pools {', '.join(pools)} to it on any day of the"
                    f" maintenance window; {lock.path.name} has no entry {entry_name}: the plan"
                    " and every `pulumi up` would stop there.",
                    f"Merge the refresh's pull request (branch {REFRESH_BRANCH}), or run"
                    f" `{LOCK_COMMAND}` and commit {lock.path.name} (docs/lock.md).",
                )
            )
    return findings


def _finding(lock: Lock, pool: GpuPoolSpec, version: str, accelerator: str) -> Finding | None:
    subject = f"pool {pool.name}"
    try:
        driver = locked_cos_default(lock, version, accelerator)
    except MissingLockEntry as missing:
        outcome = (
            f"The plan takes its gcp.cosDriverBranch ({pool.gcp.cos_driver_branch}) unchecked"
            if pool.gcp.cos_driver_branch is not None
            else "The plan and every `pulumi up` stop at it until a refreshed lock is committed"
        )
        return Finding(
            "warning",
            subject,
            f"GKE {version}, which its nodes run or will run, has no entry in"
            f" {lock.path.name}: {missing.entry_name}. {outcome}.",
            f"Run `{LOCK_COMMAND}` and commit {lock.path.name} (docs/lock.md).",
        )
    stated = pool.gcp.cos_driver_branch
    if isinstance(driver, DifferingDefaults) and stated in driver.branches:
        return None
    if isinstance(driver, NvidiaDriver) and stated is not None and driver.branch != stated:
        return Finding(
            "blocking",
            subject,
            f"Its gcp.cosDriverBranch is {stated}, but on GKE {version}, which its nodes run or"
            f" will run, COS loads {driver.version} for its GPU ({lock.path.name}): Google's"
            " installer loads COS's default whatever the pool states, and the pool's labels"
            " would promise a CUDA its nodes do not run.",
            f"Remove gcp.cosDriverBranch, or set it to {driver.branch}.",
        )
    if isinstance(driver, Unpublished):
        return Finding(
            "blocking",
            subject,
            f"On GKE {version}, which its nodes run or will run: {driver.why}.",
            "Run the pool on a GKE version whose COS offers a driver for its GPU.",
        )
    return None
