"""The add-on versions pinned for a cluster the platform creates (addon_versions.json), and
derive.py, which writes them from EKS's DescribeAddonVersions answers: shaped as botocore's EKS
model describes that answer, newest compatible version kept."""

import re

from botocore.validate import ParamValidator

from gpu_platform.config.fields import PATTERN_MEANINGS
from gpu_platform.eks.new_cluster.addon_pins import CORE_ADDONS, addon_versions
from gpu_platform.eks.new_cluster.derive import newest_versions
from gpu_platform.versions import SUPPORTED_KUBERNETES_VERSIONS

from .aws_api import service_model

EKS_ADDON_VERSION = next(p for p, m in PATTERN_MEANINGS.items() if "EKS add-on version" in m)

# A DescribeAddonVersions answer, as botocore's EKS model shapes it (DescribeAddonVersionsResponse).
ANSWER = {
    "addons": [
        {
            "addonName": "coredns",
            "type": "networking",
            "addonVersions": [
                {
                    "addonVersion": "v1.12.4-eksbuild.1",
                    "architecture": ["amd64", "arm64"],
                    "compatibilities": [{"clusterVersion": "1.35", "defaultVersion": True}],
                },
                {
                    "addonVersion": "v1.12.10-eksbuild.2",
                    "compatibilities": [{"clusterVersion": "1.35", "defaultVersion": False}],
                },
                {
                    "addonVersion": "v1.13.0-eksbuild.1",
                    "compatibilities": [{"clusterVersion": "1.36", "defaultVersion": True}],
                },
            ],
        },
        {"addonName": "amazon-cloudwatch-observability", "addonVersions": []},
    ]
}


def test_the_answer_is_shaped_as_botocore_describes_it() -> None:
    shape = service_model("eks").operation_model("DescribeAddonVersions").output_shape
    assert shape is not None

    report = ParamValidator().validate(ANSWER, shape)

    assert not report.has_errors(), report.generate_report()


def test_derive_keeps_the_newest_version_compatible_with_the_minor() -> None:
    # By number, not as text: 1.12.10 comes after 1.12.4; 1.13.0 is for 1.36 only.
    assert newest_versions(ANSWER, "1.35") == {"coredns": "v1.12.10-eksbuild.2"}
    assert newest_versions(ANSWER, "1.36") == {"coredns": "v1.13.0-eksbuild.1"}


def test_every_supported_minor_pins_every_core_addon_in_eks_form() -> None:
    pinned = addon_versions()

    assert set(pinned) == set(SUPPORTED_KUBERNETES_VERSIONS)
    for minor, versions in pinned.items():
        assert set(versions) == set(CORE_ADDONS), minor
        for addon, version in versions.items():
            assert re.match(EKS_ADDON_VERSION, version), (minor, addon, version)
