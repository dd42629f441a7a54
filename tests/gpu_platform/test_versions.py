"""Every pin in gpu_platform/versions.py is exact: charts at a version, images at a tag or digest,
manifests at a commit. Pins added later are checked without changing this test."""

import re
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from gpu_platform import versions
from gpu_platform.eks.addon_schemas import addon_schema
from gpu_platform.versions import ContainerImage, HelmChart, Subchart

EXACT_VERSION = re.compile(r"^v?\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$")
COMMIT_URL = re.compile(r"^https://[^\s]+/[0-9a-f]{40}/[^\s]+$")
IMAGE = re.compile(r"^[a-z0-9.-]+(:\d+)?/[a-z0-9._/-]+(:[A-Za-z0-9._-]+)?(@sha256:[0-9a-f]{64})?$")


def pins() -> Iterator[tuple[str, Any]]:
    for name, value in vars(versions).items():
        if name.isupper():
            if isinstance(value, Mapping):
                yield from ((f"{name}[{k}]", v) for k, v in value.items())
            else:
                yield name, value


def charts() -> list[tuple[str, HelmChart]]:
    return [(n, v) for n, v in pins() if isinstance(v, HelmChart)]


def subcharts() -> list[tuple[str, Subchart]]:
    return [(n, v) for n, v in pins() if isinstance(v, Subchart)]


def urls() -> list[tuple[str, str]]:
    return [(n, v) for n, v in pins() if isinstance(v, str) and v.startswith("https://")]


def images() -> list[tuple[str, str]]:
    return [(n, v.reference) for n, v in pins() if isinstance(v, ContainerImage)]


# The only digests versions.py holds are those an upstream release records for its own image
# (Karpenter's chart values); every other image's digest is read from its registry into the
# lock by `gpu-platform lock`, so that a tag's digest has one place.
DIGESTS_FROM_UPSTREAM_RELEASES = {"KARPENTER_CONTROLLER_IMAGE"}


@pytest.mark.parametrize(("name", "image"), images())
def test_only_an_upstream_recorded_digest_is_pinned_here(name: str, image: str) -> None:
    digest = image.partition("@")[2]

    assert bool(digest) == (name in DIGESTS_FROM_UPSTREAM_RELEASES), name
    assert not digest or re.fullmatch(r"sha256:[0-9a-f]{64}", digest), name


def test_every_image_with_a_digest_keeps_its_tag_for_people() -> None:
    # `repository:tag@digest`: a digest alone tells a reader nothing.
    assert all(":" in image.partition("@")[0].rsplit("/", 1)[-1] for _, image in images())


@pytest.mark.parametrize(("name", "chart"), charts())
def test_chart_is_pinned_to_an_exact_version(name: str, chart: HelmChart) -> None:
    assert EXACT_VERSION.match(chart.version), f"{name}: {chart.version}"


@pytest.mark.parametrize(("name", "chart"), charts())
def test_chart_comes_from_an_https_or_oci_repository(name: str, chart: HelmChart) -> None:
    assert chart.repository.startswith(("https://", "oci://")), f"{name}: {chart.repository}"


@pytest.mark.parametrize(("name", "subchart"), subcharts())
def test_subchart_is_named_at_an_exact_version(name: str, subchart: Subchart) -> None:
    assert EXACT_VERSION.match(subchart.version), f"{name}: {subchart.version}"


@pytest.mark.parametrize(("name", "url"), urls())
def test_manifest_url_is_pinned_to_a_commit(name: str, url: str) -> None:
    assert COMMIT_URL.match(url), f"{name}: {url} is not at a 40-character commit"


@pytest.mark.parametrize(("name", "image"), images())
def test_image_is_pinned_to_a_tag_other_than_latest_or_a_digest(name: str, image: str) -> None:
    assert IMAGE.match(image), f"{name}: {image} is not a registry/repository:tag[@digest]"
    tag = image.split("@")[0].rsplit("/", 1)[-1].partition(":")[2]
    assert "@sha256:" in image or (tag and tag != "latest"), f"{name}: {image}"


def test_the_gpu_operator_chart_is_the_one_the_platform_is_built_for() -> None:
    assert (versions.GPU_OPERATOR_CHART.name, versions.GPU_OPERATOR_CHART.version) == (
        "gpu-operator",
        "v26.7.0",
    )


def test_pod_security_version_is_a_kubernetes_minor() -> None:
    assert re.fullmatch(r"v1\.\d+", versions.POD_SECURITY_VERSION)


def test_the_supported_kubernetes_versions_are_those_nvidia_lists_for_the_pinned_operator() -> None:
    # NVIDIA's platform-support page, cloud providers table, for GPU Operator v26.7.0: EKS and
    # GKE, Kubernetes 1.33 to 1.36.
    assert versions.GPU_OPERATOR_CHART.version == "v26.7.0"
    assert versions.SUPPORTED_KUBERNETES_VERSIONS == ("1.33", "1.34", "1.35", "1.36")


def test_every_supported_kubernetes_version_has_its_autoscaler_release_and_no_other() -> None:
    assert tuple(versions.CLUSTER_AUTOSCALER_IMAGES) == versions.SUPPORTED_KUBERNETES_VERSIONS
    for minor, image in versions.CLUSTER_AUTOSCALER_IMAGES.items():
        assert image.tag.startswith(f"v{minor}.")


def test_the_operators_driver_is_the_pinned_charts_default() -> None:
    # gpu-operator v26.7.0, deployments/gpu-operator/values.yaml: `driver.version: 595.91.07`.
    assert (versions.GPU_OPERATOR_CHART.version, versions.GPU_OPERATOR_DRIVER_VERSION) == (
        "v26.7.0",
        "595.91.07",
    )


def test_the_node_monitoring_agent_is_an_add_on_build_of_the_release_its_schema_is_from() -> None:
    # The agent's configuration is checked against aws/eks-node-monitoring-agent v1.7.0's
    # charts/configuration.schema.json (gpu_platform/eks/addon_schemas/).
    release, _, build = versions.EKS_NODE_MONITORING_AGENT_ADDON_VERSION.partition("-")
    assert addon_schema("eks-node-monitoring-agent", release)
    assert re.fullmatch(r"eksbuild\.\d+", build)


def test_every_pin_is_checked_by_one_of_the_rules_above() -> None:
    checked = {n for n, _ in [*charts(), *subcharts(), *urls(), *images()]}
    # The CUDA table is checked against its source in tests/gpu_platform/test_drivers.py.
    cuda_table = {f"CUDA_BY_DRIVER_BRANCH[{branch}]" for branch in versions.CUDA_BY_DRIVER_BRANCH}
    versions_only = {
        "POD_SECURITY_VERSION",
        "SUPPORTED_KUBERNETES_VERSIONS",
        "GPU_OPERATOR_DRIVER_VERSION",
        "EKS_NODE_MONITORING_AGENT_ADDON_VERSION",
        *cuda_table,
    }

    assert {n for n, _ in pins()} - checked == versions_only
