"""The NVIDIA driver a pool's nodes run, and the newest CUDA release its pods may use.

CUDA applications fail at their first CUDA call on a driver older than the CUDA release they
were built for: the pod schedules and starts, and dies. So each pool's driver is settled before
its nodes exist, from what pins it on each platform (the EKS AMI release, the GPU Operator's
driver version, GKE's node version), and its CUDA ceiling is read from one table
(`CUDA_BY_DRIVER_BRANCH` in gpu_platform/versions.py). The ceiling goes on the nodes as a label,
into the plan and the stack outputs, and the policy pack holds GPU workloads to it.
"""

import json
import re
from dataclasses import dataclass
from pathlib import Path

from gpu_platform.driver_tables.cos import COS_DEFAULT_DRIVERS, CosDefault, Unpublished
from gpu_platform.lock.cos import cos_driver_key, cos_gpu_type
from gpu_platform.lock.lockfile import (
    COS_DRIVERS,
    GKE_COS_IMAGES,
    GKE_LISTED_VERSIONS,
    Lock,
    MissingLockEntry,
    project_lock,
)
from gpu_platform.version_order import version_key
from gpu_platform.versions import CUDA_BY_DRIVER_BRANCH, SUPPORTED_KUBERNETES_VERSIONS

DRIVER_LABEL = "gpu-platform.io/nvidia-driver"
"""The driver version (`580.159.03`), or its branch (`580`) where only that is known."""
CUDA_LABEL = "gpu-platform.io/cuda"
"""The newest CUDA `major.minor` the node's driver runs: what the pack holds pods to."""


@dataclass(frozen=True)
class NvidiaDriver:
    """A pool's NVIDIA driver, as far as the program knows it."""

    version: str
    """`580.159.03`, or the branch alone (`580`) where nothing pins the exact version."""
    source: str
    """What decides it, in words: `AMI release 1.35.6-20260714`, `GPU Operator`..."""

    @property
    def branch(self) -> int:
        return int(self.version.split(".", 1)[0])

    @property
    def cuda(self) -> str:
        """The newest CUDA release the driver runs natively."""
        return cuda_for_branch(self.branch)

    def describe(self) -> str:
        return f"NVIDIA driver {self.version} (CUDA {self.cuda}), from {self.source}"


def cuda_for_branch(branch: int) -> str:
    """The ceiling of the newest known branch at or below `branch`: a branch the table does not
    list yet (a new feature branch) runs at least what the one before it runs."""
    known = [b for b in CUDA_BY_DRIVER_BRANCH if b <= branch]
    if not known:
        raise ValueError(
            f"NVIDIA driver branch {branch} is older than any the platform knows"
            f" ({min(CUDA_BY_DRIVER_BRANCH)} and newer)"
        )
    return CUDA_BY_DRIVER_BRANCH[max(known)]


def cuda_tuple(version: str) -> tuple[int, int]:
    """`12.4` or `12.4.1` -> (12, 4), for comparing CUDA releases."""
    major, minor = version_key(version)[0][:2]
    return major, minor


# --- What pins the driver, per platform --------------------------------------------------------

AL2023_DRIVERS: dict[str, dict[str, str]] = json.loads(
    (Path(__file__).parent / "driver_tables" / "al2023-nvidia.json").read_text()
)
"""EKS AL2023 NVIDIA AMI release -> CPU architecture -> driver, derived from amazon-eks-ami's
changelog by gpu_platform/driver_tables/derive_al2023.py."""

# Bottlerocket release (major.minor) -> its `aws-k8s-<minor>-nvidia` variant's driver, from
# Bottlerocket's variant definitions (the `kmod-6.12-nvidia-r570-tesla` or `-r580-tesla` package
# each variant includes) and the kernel kit each release pins (bottlerocket-kernel-kit's
# kmod-6.12-nvidia-r5x0 specs). A variant's branch can change between releases: 1.33's moved
# from R570 to R580 in 1.53.0.
_BOTTLEROCKET_RELEASE_DRIVERS: dict[tuple[str, ...], dict[str, str]] = {
    ("1.40",): {"1.33": "570.133.20"},
    ("1.41", "1.42"): {"1.33": "570.148.08"},
    ("1.43", "1.44", "1.45", "1.46"): {"1.33": "570.172.08"},
    ("1.47", "1.48"): {"1.33": "570.172.08", "1.34": "580.65.06"},
    ("1.49", "1.50", "1.51", "1.52"): {"1.33": "570.195.03", "1.34": "580.95.05"},
    ("1.53",): {"1.33": "580.95.05", "1.34": "580.95.05", "1.35": "580.95.05"},
    ("1.54", "1.55", "1.56", "1.57"): {
        "1.33": "580.126.09",
        "1.34": "580.126.09",
        "1.35": "580.126.09",
    },
}
BOTTLEROCKET_DRIVERS = {
    release: drivers
    for releases, drivers in _BOTTLEROCKET_RELEASE_DRIVERS.items()
    for release in releases
}
"""Bottlerocket release (`1.54`) -> Kubernetes minor of the variant -> driver."""

# The oldest driver branch that drives a GPU, for the GPUs that a table's branch could be too old
# for: "550 (min required gpu driver version) for H200 GPU" (AI-Hypercomputer/xpk#322); "HGX
# B200 requires a driver container version of 570.133.20 or later" (NVIDIA GPU Operator
# platform support, NVIDIA/cloud-native-docs#184).
GPU_MINIMUM_DRIVER_BRANCH = {"h200-141gb": 550, "b200": 570}


def eks_driver(
    node_image: str, release: str, architecture: str, kubernetes_version: str
) -> NvidiaDriver | None:
    """The driver of an EKS NVIDIA AMI release; None where the tables do not list it."""
    if node_image == "bottlerocket":
        version = BOTTLEROCKET_DRIVERS.get(gke_minor(release), {}).get(kubernetes_version)
    else:
        version = AL2023_DRIVERS.get(release, {}).get(architecture)
    return NvidiaDriver(version, f"AMI release {release}") if version else None


def known_releases(node_image: str) -> str:
    """The newest EKS releases the tables know, for error messages."""
    if node_image == "bottlerocket":
        releases = sorted(BOTTLEROCKET_DRIVERS, key=version_key)
        return (
            f"the platform knows the driver of Bottlerocket releases {releases[0]} to"
            f" {releases[-1]} (gpu_platform/drivers.py)"
        )
    # The table lists releases newest first.
    newest_per_minor = [
        next(r for r in AL2023_DRIVERS if r.startswith(f"{minor}."))
        for minor in SUPPORTED_KUBERNETES_VERSIONS
        if any(r.startswith(f"{minor}.") for r in AL2023_DRIVERS)
    ]
    listed = ", ".join(f"{r} (driver {AL2023_DRIVERS[r]['x86_64']})" for r in newest_per_minor)
    return (
        f"the newest the platform knows per Kubernetes version are {listed}; newer ones are"
        " added by gpu_platform/driver_tables/derive_al2023.py"
    )


def gke_driver(
    node_image: str, node_version: str, accelerator: str, cos_branch: int | None, operator: str
) -> NvidiaDriver | Unpublished:
    """The driver of a GKE pool's nodes, or on COS why no source gives it.

    `node_version` is the GKE version of the nodes themselves, and `accelerator` their GPU: COS's
    default driver depends on both, and comes from the table where a source gives it
    (gpu_platform/driver_tables/cos.py), else from the lock (`gpu-platform lock`, which reads
    the COS build's own list; MissingLockEntry where the lock lacks it). `operator` is the driver
    the GPU Operator builds for the pool on Ubuntu (its `gcp.driverVersion`, else
    `operator.driverVersion`). What pins it is named by the version alone, so that a canary that
    pins the same version as its pool is in step with it.
    """
    if node_image == "ubuntu":
        return NvidiaDriver(operator, f"the GPU Operator at {operator}")
    if cos_branch is None:
        return cos_default_driver(node_version, accelerator)
    # The pool's branch stands where no source gives COS's default; where one does, the pool's
    # rules refuse a branch that contradicts it (gpu_platform/gke/node_driver.py).
    known = known_cos_default(node_version, accelerator)
    if known is not None:
        return known
    return NvidiaDriver(str(cos_branch), f"gcp.cosDriverBranch, on GKE {node_version}")


def cos_default(node_version: str, accelerator: str) -> CosDefault | Unpublished | None:
    """COS's default driver for the GPU on the nodes' GKE version, as the table has it; None
    where the table has no entry for that version."""
    return COS_DEFAULT_DRIVERS.get(gke_minor(node_version), {}).get(accelerator)


def cos_default_driver(node_version: str, accelerator: str) -> NvidiaDriver | Unpublished:
    """COS's default driver for the GPU on the GKE version: the table's where it cites a
    source, else the project's lock's (MissingLockEntry where the lock lacks it)."""
    entry = cos_default(node_version, accelerator)
    if isinstance(entry, CosDefault):
        return NvidiaDriver(str(entry.branch), f"COS's default on GKE {node_version}")
    if not cos_default_in_lock(node_version, accelerator):
        return Unpublished(f"the platform knows COS's defaults from GKE {_OLDEST_COS_MINOR} on")
    return locked_cos_default(project_lock(), node_version, accelerator)


def known_cos_default(node_version: str, accelerator: str) -> NvidiaDriver | None:
    """COS's default driver for the GPU on the GKE version where the table or the lock gives
    one; None where neither does."""
    try:
        driver = cos_default_driver(node_version, accelerator)
    except MissingLockEntry:
        return None
    return driver if isinstance(driver, NvidiaDriver) else None


_OLDEST_COS_MINOR = min(COS_DEFAULT_DRIVERS, key=version_key)
_BARE_MINOR = re.compile(r"^\d+\.\d+$")


def cos_default_in_lock(node_version: str, accelerator: str) -> bool:
    """Whether COS's default driver for the GPU on the GKE version is the lock's to give: where
    the table names no source for it, from the table's oldest version on (older ones are older
    than the platform supports)."""
    return not isinstance(cos_default(node_version, accelerator), CosDefault) and version_key(
        gke_minor(node_version)
    ) >= version_key(_OLDEST_COS_MINOR)


def locked_cos_default(
    lock: Lock, node_version: str, accelerator: str
) -> NvidiaDriver | Unpublished:
    """COS's default driver for the GPU on the GKE version, as the lock has it: the COS image
    the version runs (`gke_cos_images`), then that image's default for the GPU (`cos_drivers`).
    MissingLockEntry where the lock lacks either. A bare minor (`1.35`: a cluster not created
    yet, which GKE creates at a patch of its channel's choosing) has the default every version
    of that minor gke-to-cos.json lists agrees on."""
    if _BARE_MINOR.match(node_version):
        return _minor_default(lock, node_version, accelerator)
    image = lock.require(
        GKE_COS_IMAGES,
        node_version,
        f"the COS image GKE {node_version} runs, whose driver list gives COS's default NVIDIA"
        f" driver for {accelerator}",
    ).value
    if image is None:
        return Unpublished(f"gke-to-cos.json gives no COS image for GKE {node_version}")
    listed = lock.require(
        COS_DRIVERS,
        cos_driver_key(image, accelerator),
        f"COS's default NVIDIA driver for {accelerator} on {image}, the COS image of GKE"
        f" {node_version}",
    )
    if listed.value is None:
        return Unpublished(
            f"{image}, the COS image of GKE {node_version}, lists no driver for"
            f" {cos_gpu_type(accelerator)} ({listed.source})"
        )
    return NvidiaDriver(listed.value, f"COS's default on GKE {node_version}")


@dataclass(frozen=True)
class DifferingDefaults(Unpublished):
    """COS's default differs between the versions GKE may create a cluster of a minor at."""

    branches: tuple[int, ...] = ()
    """The branches those versions' COS loads for the GPU, one of which a pool may state."""


def _minor_default(lock: Lock, minor: str, accelerator: str) -> NvidiaDriver | Unpublished:
    """The default every GKE version of `minor` that gke-to-cos.json listed when the lock was
    written agrees on (`gke_listed_versions`).

    GKE creates a cluster at its release channel's default version of the minor asked for,
    which moves with the channel: no plan can know that patch, so a default that differs
    between the minor's patches is not a fact the plan can state. Only the versions the map
    lists now count: one it dropped is no channel's default any longer, though the lock keeps
    it for the clusters that still run it."""
    listed = lock.require(
        GKE_LISTED_VERSIONS,
        minor,
        f"the GKE {minor} versions gke-to-cos.json lists, the minor the cluster is created at,"
        f" whose COS images' driver lists give COS's default NVIDIA driver for {accelerator}",
    )
    versions = (listed.value or "").split()
    if not versions:
        return Unpublished(f"gke-to-cos.json listed no GKE {minor} version ({listed.source})")
    drivers = {v: locked_cos_default(lock, v, accelerator) for v in versions}
    loaded = [d for d in drivers.values() if isinstance(d, NvidiaDriver)]
    branches = sorted({d.branch for d in loaded})
    if len(loaded) == len(drivers) and len(branches) == 1:
        patches = {d.version for d in loaded}
        # Patches of one branch agree on the CUDA ceiling, which is what the labels promise.
        version = patches.pop() if len(patches) == 1 else str(branches[0])
        return NvidiaDriver(version, f"COS's default on every GKE {minor} version GKE offers")
    found = "; ".join(
        f"{v}: {d.version if isinstance(d, NvidiaDriver) else d.why}" for v, d in drivers.items()
    )
    state = (
        f", or state the branch in gcp.cosDriverBranch (one of {', '.join(map(str, branches))},"
        " the branches they load)"
        if branches
        else ""
    )
    return DifferingDefaults(
        f"COS's default differs between the GKE {minor} versions gke-to-cos.json lists"
        f" ({found}), and GKE creates the cluster at its channel's default {minor} version,"
        " which a plan cannot know: set `cluster.create.gcp.releaseChannel` to none and"
        f" `cluster.create.gcp.version` to one of them{state}",
        tuple(branches),
    )


def differing_branches(node_version: str, accelerator: str) -> tuple[int, ...] | None:
    """Where the nodes' version is a minor whose listed versions' COS load different branches
    for the GPU (a cluster created at its channel's default), those branches; else None."""
    try:
        driver = cos_default_driver(node_version, accelerator)
    except MissingLockEntry:
        return None
    return driver.branches if isinstance(driver, DifferingDefaults) else None


def too_old_for(accelerator: str, driver: NvidiaDriver) -> int | None:
    """The oldest branch that drives the GPU, where the driver is older; else None."""
    minimum = GPU_MINIMUM_DRIVER_BRANCH.get(accelerator)
    return minimum if minimum is not None and driver.branch < minimum else None


def gke_minor(version: str) -> str:
    """The Kubernetes minor (`1.35`) of a version (`1.35.6-gke.1163000`, `1.35.6-20260714`)."""
    match = re.match(r"(\d+\.\d+)", version)
    return match[1] if match else version
