"""The GPU Operator's operand images by digest, per chart version.

NVIDIA records the digest of every operand image a release runs in the release's OLM bundle
(`bundle/manifests/gpu-operator-certified.clusterserviceversion.yaml`, `spec.relatedImages`, at
the release tag). `derive.py` here keeps, for each operand the chart's values.yaml names, the
bundle's image of exactly that repository and tag, and writes them to
`gpu-operator-<version>.json`. The chart renders an operand's image from its `repository`,
`image` and `version` values; with `repository` and `version` empty it takes `image` as the
whole reference (`imagePath` in api/nvidia/v1/clusterpolicy_types.go at v26.7.0, the path
NVIDIA keeps for digest-pinning tools), so the tag stays beside the digest for people.
"""

import json
from functools import cache
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent

OPERANDS = ("toolkit", "devicePlugin", "gfd", "dcgmExporter", "migManager")
"""The chart's operands whose images the platform pins by digest. Not the driver (the bundle
records the OpenShift driver image, not the Ubuntu one the operator builds from
`<version>-<os>`), nor `driver.manager`, whose values the chart also joins into the operator's
`DRIVER_MANAGER_IMAGE` as `repository/image:version` (templates/_helpers.tpl), nor the
operator and its validator, for which the bundle names a development build."""


def digests_file(chart_version: str) -> Path:
    return HERE / f"gpu-operator-{chart_version}.json"


@cache
def operand_images(chart_version: str) -> dict[str, str]:
    """Operand values key -> `repository/image:tag@sha256:...` for a chart version; empty for
    a version no digests were derived for."""
    path = digests_file(chart_version)
    return json.loads(path.read_text()) if path.exists() else {}


def operand_image_values(chart_version: str) -> dict[str, Any]:
    """The chart values that pin each operand to its digest, for this chart version."""
    return {
        operand: {"repository": "", "image": reference, "version": ""}
        for operand, reference in operand_images(chart_version).items()
    }
