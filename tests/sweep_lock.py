"""The lock the configuration sweep plans with: test data, not facts read from any source.

COS's default driver from GKE 1.34 on comes from the project's lock (docs/lock.md), so that the
sweep's COS pools plan at every supported minor without stating `gcp.cosDriverBranch`: each GKE
version a drawn stack may run (the stand-in control plane's, the versions pools pin, one of each
later minor, which a cluster created at a bare minor takes, the map listing them) runs a
made-up COS image whose default for every GPU GKE offers is SWEEP_LOCK_DRIVER.
"""

from datetime import UTC, datetime
from pathlib import Path

from gpu_platform.accelerators import ACCELERATORS
from gpu_platform.drivers import gke_minor
from gpu_platform.lock.cos import cos_driver_key
from gpu_platform.lock.lockfile import COS_DRIVERS, GKE_COS_IMAGES, GKE_LISTED_VERSIONS, Lock, entry
from gpu_platform.offline.stand_ins.gcp import STAND_IN_MASTER_VERSION

SWEEP_LOCK_DRIVER = "580.95.05"
_VERSIONS = (
    "1.33.4-gke.1036000",
    STAND_IN_MASTER_VERSION,
    "1.34.1-gke.1829001",
    "1.35.6-gke.1163000",
    "1.36.2-gke.1045000",
)
_SOURCE = "https://test.invalid/sweep-lock"
_READ_AT = datetime(2026, 12, 1, tzinfo=UTC)


def write_sweep_lock(path: Path) -> None:
    images = {version: f"cos-test-{i}" for i, version in enumerate(_VERSIONS)}
    gpus = [name for name, accelerator in ACCELERATORS.items() if accelerator.gke_type]
    Lock(path=path).with_entries(
        GKE_COS_IMAGES, {v: entry(image, _SOURCE, _READ_AT) for v, image in images.items()}
    ).with_entries(
        COS_DRIVERS,
        {
            cos_driver_key(image, gpu): entry(SWEEP_LOCK_DRIVER, _SOURCE, _READ_AT)
            for image in images.values()
            for gpu in gpus
        },
    ).with_entries(
        GKE_LISTED_VERSIONS,
        {
            minor: entry(" ".join(v for v in _VERSIONS if gke_minor(v) == minor), _SOURCE, _READ_AT)
            for minor in {gke_minor(v) for v in _VERSIONS}
        },
    ).save()
