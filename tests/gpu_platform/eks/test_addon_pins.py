"""The add-on versions pinned for a cluster the platform creates (addon_versions.json), and
derive.py, which writes them from EKS's DescribeAddonVersions answers: shaped as botocore's EKS
model describes that answer, newest compatible version kept."""

import re

import pytest
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


def test_the_pins_cover_exactly_the_supported_minors() -> None:
    assert set(addon_versions()) == set(SUPPORTED_KUBERNETES_VERSIONS)


# botocore's EKS model holds no add-on versions, and no DescribeAddonVersions answer is committed:
# what is checked offline is each pin's shape; `gpu-platform preflight` checks each pin against
# the versions EKS lists for the minor in the stack's region before `pulumi up`.


@pytest.mark.parametrize("minor", SUPPORTED_KUBERNETES_VERSIONS)
def test_every_core_addon_is_pinned_in_eks_form(minor: str) -> None:
    pinned = addon_versions()[minor]

    assert set(pinned) == set(CORE_ADDONS)
    for addon, version in pinned.items():
        assert re.match(EKS_ADDON_VERSION, version), (addon, version)


@pytest.mark.parametrize("minor", SUPPORTED_KUBERNETES_VERSIONS)
def test_kube_proxy_is_pinned_to_a_build_of_the_clusters_minor(minor: str) -> None:
    # EKS builds kube-proxy per Kubernetes minor: EKS user guide, eks-networking-add-ons.adoc,
    # "kube-proxy versions" (1.31: v1.31.2-eksbuild.3, 1.30: v1.30.6-eksbuild.3, ...).
    assert addon_versions()[minor]["kube-proxy"].startswith(f"v{minor}.")
