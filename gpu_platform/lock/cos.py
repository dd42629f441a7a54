"""Where COS's default NVIDIA driver for a GKE version and GPU is read, and how the lock keys it.

Two published files give it, as GKE's guide does it by hand (how-to/gpus, "Map the GKE version
and Container-Optimized OS node image version to the GPU driver version") and as
GoogleCloudPlatform/professional-services `tools/gke-gpu-driver-version` (src/main.rs) does it:
1. `gke-to-cos.json`: `entries[]` of `{gke_version, image}`, the COS image each GKE version's
   nodes run (`cos-121-18867-90-4`). The lock's `gke_cos_images` section.
2. That image's build's `gpu_driver_versions.textproto` (gpu_platform/lock/gpu_driver_versions.py),
   the drivers it offers per GPU type: the one labelled `DEFAULT` is the one Google's installer
   loads. The lock's `cos_drivers` section, keyed `<image>/<accelerator>`.
"""

import os
import re

from gpu_platform.accelerators import ACCELERATORS

GKE_TO_COS_URL = "https://www.gstatic.com/gke-image-maps/gke-to-cos.json"
COS_TOOLS_URL = "https://storage.googleapis.com/cos-tools"
GKE_TO_COS_URL_VARIABLE = "GPU_PLATFORM_GKE_TO_COS_URL"
"""An environment variable naming another copy of gke-to-cos.json (a mirror, a test server)."""
COS_TOOLS_URL_VARIABLE = "GPU_PLATFORM_COS_TOOLS_URL"
"""An environment variable naming another base of the cos-tools bucket's files."""

# A COS image is named `cos-[arm64-][<channel>-]<milestone>-<build>-<branch>-<patch>` and its
# build `<build>.<branch>.<patch>`: `cos-117-18613-339-26` is build 18613.339.26 of milestone 117,
# whose release note links cos-tools/18613.339.26/lakitu/gpu_driver_versions.textproto
# (google/gvisor test/gpu/cos_gpu_compatibility_test.go, imageNameToCosPatchVersion, reads it so).
_COS_IMAGE = re.compile(r"^cos-(?:arm64-)?(?:beta-|dev-|stable-)?\d+-(\d+)-(\d+)-(\d+)$")


def gke_to_cos_url() -> str:
    return os.environ.get(GKE_TO_COS_URL_VARIABLE) or GKE_TO_COS_URL


def driver_list_url(build: str) -> str:
    base = os.environ.get(COS_TOOLS_URL_VARIABLE) or COS_TOOLS_URL
    return f"{base.rstrip('/')}/{build}/lakitu/gpu_driver_versions.textproto"


def cos_build(image: str) -> str | None:
    """The build (`18867.90.4`) of a COS image (`cos-121-18867-90-4`); None for another name."""
    match = _COS_IMAGE.match(image)
    return ".".join(match.groups()) if match else None


def cos_gpu_type(accelerator: str) -> str:
    """How COS's driver lists name the GPU: GKE's accelerator type in capitals, `_` for `-`
    (`nvidia-h100-80gb` is `NVIDIA_H100_80GB`, as professional-services'
    tools/gke-gpu-driver-version README passes it; `NVIDIA_TESLA_V100`, `NVIDIA_TESLA_P4` in
    google/gvisor test/gpu/cos_gpu_compatibility_test.go; `NVIDIA_B200` in COS's
    board-overlays change af3ca4ea, "Update policy to support New Feature Branch drivers")."""
    gke_type = ACCELERATORS[accelerator].gke_type
    if gke_type is None:
        raise ValueError(f"GKE does not offer {accelerator}")
    return gke_type.upper().replace("-", "_")


def cos_driver_key(image: str, accelerator: str) -> str:
    return f"{image}/{accelerator}"
