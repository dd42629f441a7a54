"""COS's default NVIDIA driver per GKE version and GPU: an entry for every version the platform
supports and every GPU GKE offers, each as its source gives it (gpu_platform/driver_tables/cos.py
names them)."""

import pytest

from gpu_platform.accelerators import ACCELERATORS
from gpu_platform.driver_tables.cos import COS_DEFAULT_DRIVERS, CosDefault, Unpublished
from gpu_platform.drivers import GPU_MINIMUM_DRIVER_BRANCH
from gpu_platform.versions import SUPPORTED_KUBERNETES_VERSIONS

GKE_GPUS = sorted(name for name, accelerator in ACCELERATORS.items() if accelerator.gke_type)


@pytest.mark.parametrize("minor", SUPPORTED_KUBERNETES_VERSIONS)
def test_every_supported_gke_version_has_an_entry_for_every_gpu_gke_offers(minor: str) -> None:
    assert sorted(COS_DEFAULT_DRIVERS.get(minor, {})) == GKE_GPUS


@pytest.mark.parametrize(
    ("gpu", "branch"),
    [
        # GKE's COS table (how-to/gpus): R535 is COS's default on GKE 1.31 to 1.33.
        ("t4", 535),
        ("l4", 535),
        ("a100-80gb", 535),
        ("h100-80gb", 535),
        ("h100-mega-80gb", 535),
        # AI-Hypercomputer/xpk#322: "From GKE 1.31.4-gke.1072000, the DEFAULT version points to
        # 550 (min required gpu driver version) for H200 GPU".
        ("h200-141gb", 550),
    ],
)
def test_gke_1_33_defaults_are_the_published_ones(gpu: str, branch: int) -> None:
    entry = COS_DEFAULT_DRIVERS["1.33"][gpu]

    assert isinstance(entry, CosDefault)
    assert entry.branch == branch


def test_no_source_gives_coss_default_for_b200_on_gke_1_33() -> None:
    assert isinstance(COS_DEFAULT_DRIVERS["1.33"]["b200"], Unpublished)


@pytest.mark.parametrize("minor", ["1.34", "1.35", "1.36"])
def test_gke_publishes_no_cos_driver_table_from_1_34(minor: str) -> None:
    entries = COS_DEFAULT_DRIVERS[minor].values()

    assert all(isinstance(entry, Unpublished) for entry in entries)


def test_no_known_default_is_older_than_its_gpu_needs() -> None:
    too_old = [
        (minor, gpu, entry.branch)
        for minor, entries in COS_DEFAULT_DRIVERS.items()
        for gpu, entry in entries.items()
        if isinstance(entry, CosDefault) and entry.branch < GPU_MINIMUM_DRIVER_BRANCH.get(gpu, 0)
    ]

    assert too_old == []
