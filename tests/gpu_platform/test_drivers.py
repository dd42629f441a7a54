"""Each pool's NVIDIA driver and CUDA ceiling: the tables against their sources, and the driver
as the program settles it on each platform."""

from collections.abc import Callable

import pytest

from gpu_platform.config import ConfigError
from gpu_platform.driver_tables.derive_al2023 import drivers_by_release
from gpu_platform.drivers import (
    AL2023_DRIVERS,
    BOTTLEROCKET_DRIVERS,
    cuda_for_branch,
    eks_driver,
)
from gpu_platform.offline.program import Plan
from gpu_platform.versions import CUDA_BY_DRIVER_BRANCH, SUPPORTED_KUBERNETES_VERSIONS
from tests.conftest import Config

PlanFor = Callable[[Config], Plan]
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
NODE_POOL = "gcp:container/nodePool:NodePool"

# CUDA Toolkit release notes, "CUDA Toolkit and Corresponding Driver Versions": the minimum
# Linux x86_64 driver of each toolkit release's GA (docs.nvidia.com/cuda/
# cuda-toolkit-release-notes, table 3). No CUDA 12.7 toolkit was released.
TOOLKIT_MINIMUM_DRIVER = {
    "11.0": "450.36.06",
    "11.1": "455.23",
    "11.2": "460.27.03",
    "11.3": "465.19.01",
    "11.4": "470.42.01",
    "11.5": "495.29.05",
    "11.6": "510.39.01",
    "11.7": "515.43.04",
    "11.8": "520.61.05",
    "12.0": "525.60.13",
    "12.1": "530.30.02",
    "12.2": "535.54.03",
    "12.3": "545.23.06",
    "12.4": "550.54.14",
    "12.5": "555.42.02",
    "12.6": "560.28.03",
    "12.8": "570.26",
    "12.9": "575.51.03",
    "13.0": "580.65.06",
    "13.1": "590.44.01",
    "13.2": "595.45.04",
    "13.3": "610.43.02",
}
# R565 drivers print "CUDA Version: 12.7" (`nvidia-smi` on 565.57.01), a release with no toolkit.
REPORTED_WITHOUT_A_TOOLKIT = {565: "12.7"}


@pytest.mark.parametrize("branch", sorted(CUDA_BY_DRIVER_BRANCH))
def test_each_branch_runs_the_newest_toolkit_whose_minimum_driver_it_meets(branch: int) -> None:
    met = [
        cuda
        for cuda, minimum in TOOLKIT_MINIMUM_DRIVER.items()
        if int(minimum.split(".")[0]) <= branch
    ]
    expected = REPORTED_WITHOUT_A_TOOLKIT.get(branch, met[-1])

    assert CUDA_BY_DRIVER_BRANCH[branch] == expected


def test_a_branch_between_known_ones_runs_what_the_one_below_runs() -> None:
    assert cuda_for_branch(600) == "13.2"


def test_a_branch_older_than_any_known_is_refused() -> None:
    with pytest.raises(ValueError, match="older than any the platform knows"):
        cuda_for_branch(440)


# --- EKS AMI releases --------------------------------------------------------------------------

# The shape of amazon-eks-ami's CHANGELOG.md (release v20260714, Kubernetes 1.35), cut down.
CHANGELOG = """
# AMI Release v20260714
<details>
<summary><b>Kubernetes 1.35</b></summary>
<table>
<tr><th>AMI Names</th><th>Release version</th><th>Included artifacts</th></tr>
<tr><td>amazon-eks-node-al2023-x86_64-nvidia-1.35-v20260714</td>
<td rowspan="2">1.35.6-20260714</td><td>s3://amazon-eks/1.35.6/</td></tr>
</table>
<table>
<tr><th>Package</th><th>AL2023_x86_64_NVIDIA</th><th>AL2023_x86_64_NEURON</th>
<th>AL2023_x86_64_STANDARD</th><th>AL2023_ARM_64_NVIDIA</th><th>AL2023_ARM_64_STANDARD</th></tr>
<tr><td>containerd</td><td colspan="5">2.1.5-1.amzn2023.0.1</td></tr>
<tr><td>kmod-nvidia-latest-dkms</td><td>580.159.03-1.amzn2023</td><td>—</td><td>—</td>
<td>580.159.03-1.el9</td><td>—</td></tr>
</table>
</details>
<details>
<summary><b>Kubernetes 1.28</b></summary>
<table><tr><th>AMI Names</th><th>Release version</th></tr>
<tr><td>x</td><td>1.28.15-20260714</td></tr></table>
</details>

# [ABANDONED] AMI Release v20260311
<details>
<summary><b>Kubernetes 1.35</b></summary>
<table><tr><th>AMI Names</th><th>Release version</th></tr>
<tr><td>x</td><td>1.35.2-20260311</td></tr></table>
<table>
<tr><th>Package</th><th>AL2023_x86_64_NVIDIA</th></tr>
<tr><td>kmod-nvidia-latest-dkms</td><td>580.126.09-1.amzn2023</td></tr>
</table>
</details>
"""


def test_the_derivation_reads_each_architectures_driver_package() -> None:
    assert drivers_by_release(CHANGELOG) == {
        "1.35.6-20260714": {"x86_64": "580.159.03", "arm64": "580.159.03"}
    }


def test_the_committed_table_holds_releases_as_the_changelog_lists_them() -> None:
    # CHANGELOG.md at amazon-eks-ami v20260724: the R570 -> R580 move reached 1.33 at v20251029.
    assert AL2023_DRIVERS["1.35.6-20260714"] == {"x86_64": "580.159.03", "arm64": "580.159.03"}
    assert AL2023_DRIVERS["1.35.0-20260116"]["x86_64"] == "580.105.08"
    assert AL2023_DRIVERS["1.33.5-20251023"]["x86_64"].startswith("570.")


def test_the_committed_table_holds_supported_kubernetes_versions_only() -> None:
    minors = {".".join(release.split(".")[:2]) for release in AL2023_DRIVERS}

    assert minors == set(SUPPORTED_KUBERNETES_VERSIONS)


def test_a_bottlerocket_variant_can_change_branch_between_releases() -> None:
    before = eks_driver("bottlerocket", "1.52.0-0d4a7f31", "x86_64", "1.33")
    after = eks_driver("bottlerocket", "1.53.0-0d4a7f31", "x86_64", "1.33")

    assert (before and before.version, after and after.version) == ("570.195.03", "580.95.05")


@pytest.mark.parametrize(
    "table",
    [
        {f"AL2023 {r} {a}": v for r, by in AL2023_DRIVERS.items() for a, v in by.items()},
        {
            f"Bottlerocket {r} {k}": v
            for r, by in BOTTLEROCKET_DRIVERS.items()
            for k, v in by.items()
        },
    ],
    ids=["al2023", "bottlerocket"],
)
def test_every_eks_driver_runs_the_nccl_tests_image(table: dict[str, str]) -> None:
    # The config refuses `validation.expectedBusBandwidthGbps` on a driver too old for the NCCL
    # test's image, built on CUDA 12.8.1 (versions.py NODE_VALIDATOR_NCCL_TESTS_IMAGE), only on
    # GKE pools (gke/node_driver.py): an EKS pool runs its AMI release's driver, from these
    # tables, which hold none older. One that did would fail every node's nccl-bandwidth check.
    minimum = int(TOOLKIT_MINIMUM_DRIVER["12.8"].split(".")[0])

    assert {name: v for name, v in table.items() if int(v.split(".")[0]) < minimum} == {}


def test_an_eks_node_group_is_labelled_with_its_driver_and_cuda(dev_plan: Plan) -> None:
    labels = dev_plan.of_type(NODE_GROUP)[0].inputs["labels"]

    assert labels["gpu-platform.io/nvidia-driver"] == "580.159.03"
    assert labels["gpu-platform.io/cuda"] == "13.0"


def test_the_stack_exports_each_pools_driver(dev_plan: Plan) -> None:
    assert dev_plan.outputs["gpuPools"] == {
        "t4-shared": {
            "nvidiaDriver": "580.159.03",
            "cuda": "13.0",
            "pinnedBy": "AMI release 1.35.6-20260714",
            "canaryOf": None,
        }
    }


def release_problem(plan: Plan) -> str:
    assert isinstance(plan.error, ConfigError), plan.error
    problems = {p.path: p.expected for p in plan.error.problems}
    return problems["gpu-platform:pools[0].aws.amiReleaseVersion"]


def with_release(config: Config, release: str | None) -> Config:
    aws = config["gpu-platform:pools"][0].setdefault("aws", {})
    if release is None:
        aws.pop("amiReleaseVersion", None)
    else:
        aws["amiReleaseVersion"] = release
    return config


def test_an_eks_pool_without_a_pinned_release_fails_listing_known_ones(
    dev_config: Config, failed_plan_for: PlanFor
) -> None:
    expected = release_problem(failed_plan_for(with_release(dev_config, None)))

    assert expected.startswith("a pinned AMI release; the newest the platform knows")
    assert "1.35.6-20260714 (driver 580.159.03)" in expected


def test_a_release_for_another_kubernetes_version_fails(
    dev_config: Config, failed_plan_for: PlanFor
) -> None:
    expected = release_problem(failed_plan_for(with_release(dev_config, "1.34.9-20260714")))

    assert expected.startswith("a release for Kubernetes 1.35, the version of cluster ml-dev")


def test_a_release_whose_driver_is_unknown_fails(
    dev_config: Config, failed_plan_for: PlanFor
) -> None:
    expected = release_problem(failed_plan_for(with_release(dev_config, "1.35.9-20270101")))

    assert expected.startswith("a release whose NVIDIA driver the platform knows")


# --- GKE ---------------------------------------------------------------------------------------


def gke_labels(plan: Plan) -> dict[str, str]:
    return plan.of_type(NODE_POOL)[0].inputs["nodeConfig"]["labels"]


def test_a_cos_pool_runs_the_default_driver_gke_documents_for_its_version(
    gke_config: Config, plan_for: PlanFor
) -> None:
    # The stand-in cluster runs GKE 1.33, whose COS default GKE documents as R535.
    labels = gke_labels(plan_for(gke_config))

    assert (labels["gpu-platform.io/nvidia-driver"], labels["gpu-platform.io/cuda"]) == (
        "535",
        "12.2",
    )


def test_an_ubuntu_pool_runs_the_operators_pinned_driver(
    gke_config: Config, plan_for: PlanFor
) -> None:
    gke_config["gpu-platform:cluster"]["nodeImage"] = "ubuntu"
    gke_config["gpu-platform:pools"][0]["sharing"] = {"mode": "exclusive"}

    labels = gke_labels(plan_for(gke_config))

    assert labels["gpu-platform.io/nvidia-driver"] == "595.91.07"
