"""The GPU Operator's operands pinned by the digests NVIDIA's release bundle records.

Expected digests are copied from NVIDIA/gpu-operator at tag v26.7.0,
bundle/manifests/gpu-operator-certified.clusterserviceversion.yaml (`spec.relatedImages` and the
operator's `*_IMAGE` environment), for the tags deployments/gpu-operator/values.yaml names at
the same tag."""

import pytest

from gpu_platform.kubernetes.operand_images import OPERANDS, operand_image_values
from gpu_platform.kubernetes.operand_images.derive import derive
from gpu_platform.offline.program import Plan
from gpu_platform.versions import GPU_OPERATOR_CHART
from tests.gpu_platform.kubernetes.test_gpu_operator import release

TOOLKIT = (
    "nvcr.io/nvidia/k8s/container-toolkit:v1.20.0"
    "@sha256:f8c647d581f7c8b178efdb7e6c94f5fb6eb12ebc05e2157fa314d327560fcb7a"
)
DEVICE_PLUGIN = (
    "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"
    "@sha256:a61ba9fd8efb82f3a79f877f7580e02c1e8e7593f62473644bc9c79e315c3312"
)
DCGM_EXPORTER = (
    "nvcr.io/nvidia/k8s/dcgm-exporter:4.6.0-4.8.3-distroless"
    "@sha256:613ab03c11d442fd960ff515f547e9921537454a712d08160bc8f677f89f1c35"
)
MIG_MANAGER = (
    "nvcr.io/nvidia/cloud-native/k8s-mig-manager:v0.15.0"
    "@sha256:cab2cf9deafc9602da69d0832a82958a7687f22f4a2f19674099dc9a5c4ea8e2"
)
BUNDLE_V26_7_0 = {
    "toolkit": TOOLKIT,
    "devicePlugin": DEVICE_PLUGIN,
    "gfd": DEVICE_PLUGIN,
    "dcgmExporter": DCGM_EXPORTER,
    "migManager": MIG_MANAGER,
}


@pytest.mark.parametrize("operand", OPERANDS)
def test_the_release_runs_each_operand_by_the_bundles_digest(dev_plan: Plan, operand: str) -> None:
    # With `repository` and `version` empty the chart leaves them out of the ClusterPolicy and
    # the operator takes `image` whole (api/nvidia/v1/clusterpolicy_types.go, imagePath, v26.7.0).
    values = release(dev_plan).inputs["values"][operand]

    assert (values["repository"], values["image"], values["version"]) == (
        "",
        BUNDLE_V26_7_0[operand],
        "",
    )


def test_the_pinned_chart_has_digests_and_another_version_none() -> None:
    # The bundle of one release says nothing of another's images.
    assert GPU_OPERATOR_CHART.version == "v26.7.0"
    assert operand_image_values("v26.3.3") == {}


CSV = {
    "spec": {
        "relatedImages": [
            {"name": "toolkit", "image": "r/k8s/container-toolkit:v1.19.0@sha256:" + "0" * 64},
            {"name": "toolkit", "image": "r/k8s/container-toolkit:v1.20.0@sha256:" + "1" * 64},
            {"name": "plugin", "image": "r/k8s-device-plugin:v0.20.0@sha256:" + "2" * 64},
            {"name": "dcgm", "image": "r/dcgm-exporter:4.6.0-distroless@sha256:" + "3" * 64},
            {"name": "mig", "image": "r/k8s-mig-manager:v0.15.0@sha256:" + "4" * 64},
        ]
    }
}
VALUES = {
    "toolkit": {"repository": "r/k8s", "image": "container-toolkit", "version": "v1.20.0"},
    "devicePlugin": {"repository": "r", "image": "k8s-device-plugin", "version": "v0.20.0"},
    "gfd": {"repository": "r", "image": "k8s-device-plugin", "version": "v0.20.0"},
    "dcgmExporter": {"repository": "r", "image": "dcgm-exporter", "version": "4.6.0-distroless"},
    "migManager": {"repository": "r", "image": "k8s-mig-manager", "version": "v0.15.0"},
}


def test_derive_takes_the_bundles_image_of_the_charts_exact_tag() -> None:
    assert derive(CSV, VALUES)["toolkit"] == "r/k8s/container-toolkit:v1.20.0@sha256:" + "1" * 64


def test_derive_fails_where_the_bundle_has_no_image_of_the_charts_tag() -> None:
    values = VALUES | {"migManager": VALUES["migManager"] | {"version": "v0.16.0"}}

    with pytest.raises(SystemExit, match="migManager"):
        derive(CSV, values)
