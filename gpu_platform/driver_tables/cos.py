"""The NVIDIA driver branch Container-Optimized OS loads on a GKE node by default, per GKE minor
version and GPU model, for every GKE version the platform supports and every GPU GKE offers.

The platform applies Google's COS installer DaemonSet (`daemonset-preloaded.yaml`), which passes
`cos-gpu-installer` no `--version`: it installs the driver that the node's COS build labels
`DEFAULT` for the node's GPU, in the build's `gpu_driver_versions.textproto` (linked from every
COS release note). COS sets that default per GPU type, and gives a new GPU a newer branch than
the others (cos/overlays/board-overlays `scripts/gpu_driver_versions`, "Update policy to support
New Feature Branch drivers": "For new GPUs that require an NFB ... the NFB driver is temporarily
set as the LATEST and DEFAULT").

What is known, and from where:
- GKE 1.31 to 1.33: GKE's "Run GPUs in GKE Standard node pools" (how-to/gpus, "Install NVIDIA
  GPU drivers") lists R535 as COS's default driver.
- H200 (A3 Ultra): "From GKE 1.31.4-gke.1072000, the DEFAULT version points to 550 (min
  required gpu driver version) for H200 GPU" (AI-Hypercomputer/xpk pull request 322).
- B200 (A4): no source names COS's default for it; R535 cannot drive it (NVIDIA's GPU Operator
  platform support: "HGX B200 requires a driver container version of 570.133.20 or later").
- GKE 1.34 and later: GKE publishes no such table. Its guide maps a GKE version to the COS build
  it runs (GKE release notes), and that build's list to the default per GPU (how-to/gpus,
  "Map the GKE version and Container-Optimized OS node image version to the GPU driver
  version"); GoogleCloudPlatform/professional-services `tools/gke-gpu-driver-version` does the
  lookup for a version and GPU.

Where no source this table can cite gives the default, the entry says so (`Unpublished`), and
the plan reads the default from the project's lock instead: `gpu-platform lock` follows the
published map and lists for every GKE version from this table's oldest on (gpu_platform/lock/,
docs/lock.md), so that each fact lives in one place, here with its source or there with its URL.
A pool's `gcp.cosDriverBranch` states the branch instead, and the smoke test checks it on a
node. `tests/gpu_platform/driver_tables/test_cos.py` fails when a supported version or a GPU
GKE offers has no entry.
"""

from collections.abc import Mapping
from dataclasses import dataclass

from gpu_platform.accelerators import ACCELERATORS


@dataclass(frozen=True)
class CosDefault:
    """COS's default driver branch for a GPU on a GKE version, as a source gives it."""

    branch: int
    source: str


@dataclass(frozen=True)
class Unpublished:
    """No source gives COS's default driver for a GPU on a GKE version."""

    why: str


_GKE_TABLE = "GKE's COS driver table (how-to/gpus)"
_XPK_322 = "AI-Hypercomputer/xpk#322: COS's DEFAULT for H200 is R550 from 1.31.4-gke.1072000"
_NO_B200_DEFAULT = (
    "GKE's COS table gives R535 for 1.31 to 1.33, which cannot drive B200 (it needs R570 or"
    " newer), and no source names the branch COS loads for B200"
)
_NO_TABLE = (
    "GKE publishes no COS driver table from 1.34 on: the default is in the gpu_driver_versions"
    ' list of the COS build that GKE version runs (how-to/gpus, "Map the GKE version and'
    ' Container-Optimized OS node image version to the GPU driver version"), which the lock'
    " holds"
)

_NO_TABLE_MINORS = ("1.34", "1.35", "1.36")
_GKE_GPUS = tuple(name for name, accelerator in ACCELERATORS.items() if accelerator.gke_type)


def _gke_1_32_and_1_33(accelerator: str) -> CosDefault | Unpublished:
    if accelerator == "h200-141gb":
        return CosDefault(550, _XPK_322)
    if accelerator == "b200":
        return Unpublished(_NO_B200_DEFAULT)
    return CosDefault(535, _GKE_TABLE)


COS_DEFAULT_DRIVERS: Mapping[str, Mapping[str, CosDefault | Unpublished]] = {
    # 1.32 is older than the platform supports, but a pool's nodes may still run it.
    **{minor: {gpu: _gke_1_32_and_1_33(gpu) for gpu in _GKE_GPUS} for minor in ("1.32", "1.33")},
    **{minor: dict.fromkeys(_GKE_GPUS, Unpublished(_NO_TABLE)) for minor in _NO_TABLE_MINORS},
}
"""GKE minor -> the platform's accelerator name -> COS's default driver branch, or why it is not
known."""
