"""The GPU Operator chart's own images (the operator, its validator, the driver manager, the
node-feature-discovery subchart's) by the digest the lock holds for their tags.

The chart renders each as `<repository>/<image>:<version>` (deployments/gpu-operator/templates/
_helpers.tpl at v26.7.0, lines 71-87), and the operator builds the driver manager's path the
same way, with `@` only for a version that is a bare digest (internal/image/image.go,
ImagePath):
`version: v26.7.0@sha256:...` names the tag and its digest. node-feature-discovery's chart
(v0.19.0) renders `image.repository:image.tag`, its appVersion where the tag is empty, so
`image.tag` takes `v0.19.0@sha256:...` alike. The whole reference is set, by tag where the lock
has no digest yet, so that the policy pack's `platform-images-by-digest` sees each one. The
driver manager's reaches the operator as its `DRIVER_MANAGER_IMAGE` (templates/operator.yaml),
which an NVIDIADriver without `spec.manager`, as the platform's are, runs
(internal/state/driver.go, ImagePath's fallback to that variable).
"""

from gpu_platform.config import Platform
from gpu_platform.lock.images import pinned_version
from gpu_platform.platform_images import (
    GPU_OPERATOR_DRIVER_MANAGER_IMAGE,
    GPU_OPERATOR_IMAGE_REPOSITORY,
    NODE_FEATURE_DISCOVERY_IMAGE,
)
from gpu_platform.versions import GPU_OPERATOR_CHART, ContainerImage

Values = dict[str, object]


def _triple(image: ContainerImage) -> Values:
    repository, _, name = image.repository.rpartition("/")
    return {"repository": repository, "image": name, "version": pinned_version(image)}


def operator_image_values(chart_version: str, platform: Platform) -> dict[str, Values]:
    """The chart values naming its images, for the chart at `chart_version`. The driver
    manager's and node-feature-discovery's are those of the pinned chart only: another
    version's defaults are not recorded (gpu_platform/platform_images.py)."""
    operator = _triple(ContainerImage(GPU_OPERATOR_IMAGE_REPOSITORY, chart_version))
    values: dict[str, Values] = {"operator": operator, "validator": dict(operator)}
    if chart_version != GPU_OPERATOR_CHART.version:
        return values
    nfd = NODE_FEATURE_DISCOVERY_IMAGE
    values["node-feature-discovery"] = {
        "image": {"repository": nfd.repository, "tag": pinned_version(nfd)}
    }
    if platform is Platform.GKE_UBUNTU:
        values["driver"] = {"manager": _triple(GPU_OPERATOR_DRIVER_MANAGER_IMAGE)}
    return values
