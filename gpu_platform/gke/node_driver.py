"""The NVIDIA driver a GKE pool's nodes run, settled from the nodes' own GKE version and GPU.

On COS the driver is the one COS loads by default for the GPU on the nodes' GKE version
(gpu_platform/driver_tables/cos.py, else the project's lock), not the control plane's: GKE
upgrades the control plane first, and an unpinned pool's nodes follow later, so a driver read
from the control plane would run ahead of the nodes' and the CUDA label with it, admitting pods
that crash on their first CUDA call. On Ubuntu it is the driver the GPU Operator builds for the
pool.
"""

from gpu_platform.config import (
    ConfigError,
    ConfigProblem,
    GpuPoolSpec,
    StackConfig,
    key_path,
    pool_driver_version,
)
from gpu_platform.config.pool_rules import nccl_driver_problem
from gpu_platform.driver_tables.cos import Unpublished
from gpu_platform.drivers import (
    GPU_MINIMUM_DRIVER_BRANCH,
    NvidiaDriver,
    differing_branches,
    gke_driver,
    known_cos_default,
    too_old_for,
)
from gpu_platform.gke.cluster import GkeCluster
from gpu_platform.lock.lockfile import LOCK_FILE_NAME, REFRESH_BRANCH, MissingLockEntry


def node_version(spec: GpuPoolSpec, cluster: GkeCluster) -> tuple[str, str]:
    """The GKE version of the pool's nodes, and whence it is known: a pinned version, else what
    an existing pool's nodes run (GKE upgrades them after the control plane), else the
    cluster's, at which GKE creates a pool."""
    if spec.gcp.node_version is not None:
        return spec.gcp.node_version, "its gcp.nodeVersion"
    running = cluster.pool_versions.get(spec.name)
    if running is not None:
        return running, "the version its nodes run"
    return cluster.master_version, "the cluster's version, at which GKE creates it"


def pool_driver(
    config: StackConfig, cluster: GkeCluster, spec: GpuPoolSpec, index: int, accelerator: str
) -> NvidiaDriver:
    """The pool's driver; ConfigError at `gcp.cosDriverBranch` where no source gives COS's
    default for the nodes' version and GPU, or where the driver cannot drive the GPU;
    MissingLockEntry where the default is the lock's to give and it has none."""
    version, whence = node_version(spec, cluster)
    try:
        driver = gke_driver(
            config.node_image,
            version,
            accelerator,
            spec.gcp.cos_driver_branch,
            pool_driver_version(config.operator, spec),
        )
    except MissingLockEntry as missing:
        if spec.gcp.node_version is not None or not cluster.exists:
            raise
        # A release channel moves the cluster and its pools on any day of its maintenance
        # window: the version is GKE's choice, not the stack's, and the refresh proposes it.
        raise MissingLockEntry(
            missing.section,
            missing.key,
            f"{missing.what}. Pool {spec.name} is at GKE {version} ({whence}), a version GKE"
            " chose: where GKE moved the cluster there since the lock was last refreshed, the"
            f" daily refresh proposes the entry in a pull request from the branch {REFRESH_BRANCH}",
            missing.path,
        ) from None
    branch_key = key_path("pools", index, "gcp", "cosDriverBranch")
    stated = spec.gcp.cos_driver_branch
    contradicted = _contradicted_default(config, spec, version, accelerator)
    if contradicted is not None:
        raise _refused(
            branch_key,
            stated,
            f"no value, or {contradicted.branch}: COS loads R{contradicted.branch} for"
            f" {accelerator} on GKE {version} ({whence}; {contradicted.source}), and"
            " Google's installer loads COS's default whatever the pool states",
        )
    allowed = _branches_cos_may_load(config, spec, version, accelerator)
    if allowed is not None:
        raise _refused(
            branch_key,
            stated,
            f"one of {', '.join(map(str, allowed))}: the branches COS loads for {accelerator}"
            f" on the GKE {version} versions gke-to-cos.json lists ({whence}; {LOCK_FILE_NAME}),"
            " at one of which GKE creates the cluster",
        )
    if isinstance(driver, Unpublished):
        minimum = GPU_MINIMUM_DRIVER_BRANCH.get(accelerator)
        at_least = f" (at least {minimum}, the oldest that drives it)" if minimum else ""
        raise ConfigError(
            [
                ConfigProblem(
                    branch_key,
                    None,
                    f"the NVIDIA driver branch{at_least} that COS loads for {accelerator} on"
                    f" GKE {version} ({whence}): {driver.why}. `nvidia-smi` on such a node shows"
                    " it, and the smoke test checks it",
                )
            ]
        )
    too_old = too_old_for(accelerator, driver)
    if too_old is not None:
        raise ConfigError(
            [
                ConfigProblem(
                    branch_key,
                    spec.gcp.cos_driver_branch,
                    f"a branch of at least {too_old}: {driver.describe()} cannot drive"
                    f" {accelerator}; on COS, a GKE version whose COS loads one",
                )
            ]
        )
    nccl = nccl_driver_problem(spec, index, driver.branch)
    if nccl is not None:
        raise ConfigError([nccl])
    return driver


def _refused(key: str, value: object, expected: str) -> ConfigError:
    return ConfigError([ConfigProblem(key, value, expected)])


def _branches_cos_may_load(
    config: StackConfig, spec: GpuPoolSpec, version: str, accelerator: str
) -> tuple[int, ...] | None:
    """Where the pool states a branch for a minor whose listed versions' COS load others than
    it, those branches: a cluster created at its channel's default runs one of them, never the
    one stated."""
    stated = spec.gcp.cos_driver_branch
    if config.node_image != "cos" or stated is None:
        return None
    branches = differing_branches(version, accelerator)
    return branches if branches is not None and stated not in branches else None


def _contradicted_default(
    config: StackConfig, spec: GpuPoolSpec, version: str, accelerator: str
) -> NvidiaDriver | None:
    """COS's default for the nodes' version and GPU, from the table or the lock, where the
    pool's `gcp.cosDriverBranch` states another branch: the label would name a driver the nodes
    do not run, and the CUDA label a ceiling above theirs."""
    stated = spec.gcp.cos_driver_branch
    if config.node_image != "cos" or stated is None:
        return None
    known = known_cos_default(version, accelerator)
    return known if known is not None and known.branch != stated else None
