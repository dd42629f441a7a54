"""Rules of a pool on every cloud.

The labels its nodes may carry: those the kubelet sets from `--node-labels`, none of the cloud's
own. MIG profiles are checked against the GPU the pool's instance type carries, whose memory size
decides the profiles it has (NVIDIA's MIG user guide, "Supported MIG Profiles": the
A100-SXM4-40GB table, and for the 80GB "the profile names will change according to the memory
proportion", to 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb). `1g.10gb` is one of both: seven to
an 80 GB GPU, four to a 40 GB one (the GPU Operator v26.7.0 MIG manager's `all-1g.10gb`, per
device)."""

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_platform.config import ConfigError
from gpu_platform.offline.program import Plan
from tests.console import gpu_platform_here, own_project_in
from tests.stack_variants import AL2023_RELEASE

Config = dict[str, Any]
POOL = "a100"


def with_mig_pool(config: Config, instance_type: str, profile: str) -> Config:
    """`config` with one MIG pool of `instance_type` (8 A100s) partitioned into `profile`."""
    config["gpu-platform:pools"] = [
        {
            "name": POOL,
            "instanceTypes": [instance_type],
            "max": 2,
            "sharing": {"mode": "mig", "profile": profile},
            "aws": {"amiReleaseVersion": AL2023_RELEASE},
        }
    ]
    slice_ = profile.removeprefix("all-")
    for namespace in config["gpu-platform:namespaces"]:
        # A smoke test on a MIG pool asks for one of its slices, which the quota must allow.
        namespace.update(smokeTestPool=POOL, migQuota={slice_: 8})
    return config


def test_an_80gb_profile_on_an_a100_40gb_is_refused_before_anything_is_registered(
    tmp_path: Path,
) -> None:
    project = own_project_in(tmp_path)
    stack_file = project / "stacks" / "Pulumi.staging.yaml"
    stack = yaml.safe_load(stack_file.read_text())
    with_mig_pool(stack["config"], "p4d.24xlarge", "all-1g.20gb")
    stack_file.write_text(yaml.safe_dump(stack))

    result = gpu_platform_here("plan", "staging", cwd=project)

    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.splitlines() == [
        "Invalid stack configuration (1 problem(s)):",
        '  gpu-platform:pools[0].sharing.profile: got "all-1g.20gb"; expected a profile of'
        " a100-40gb: all-1g.5gb, all-1g.10gb, all-2g.10gb, all-3g.20gb, all-4g.20gb, all-7g.40gb",
    ]


@pytest.mark.parametrize(
    ("instance_type", "profile"),
    [("p4de.24xlarge", "all-1g.20gb"), ("p4d.24xlarge", "all-1g.10gb")],
    ids=["the 80GB profile on an A100 80GB", "1g.10gb on an A100 40GB"],
)
def test_a_profile_of_the_gpu_gives_four_slices_of_each_of_its_eight_gpus(
    dev_config: Config, plan_for: Callable[[Config], Plan], instance_type: str, profile: str
) -> None:
    plan = plan_for(with_mig_pool(dev_config, instance_type, profile))

    assert plan.outputs["pools"][POOL]["resources"] == {
        "nvidia.com/gpu": 0,
        f"nvidia.com/mig-{profile.removeprefix('all-')}": 32,
    }


@pytest.mark.parametrize(
    "key", ["node.kubernetes.io/lifecycle", "kubelet.kubernetes.io/team", "example.com/team"]
)
def test_labels_the_kubelet_may_set_are_accepted(dev_config: Config, plan_for, key: str) -> None:
    # The kubelet's --node-labels accepts the kubelet.kubernetes.io/ and node.kubernetes.io/
    # namespaces, and any namespace outside kubernetes.io and k8s.io.
    dev_config["gpu-platform:pools"][0]["labels"] = {key: "x"}

    assert plan_for(dev_config).error is None


def test_a_cloud_google_com_label_is_refused_on_gke(gke_config: Config, failed_plan_for) -> None:
    gke_config["gpu-platform:pools"][0]["labels"] = {"cloud.google.com/gke-nodepool": "mine"}

    plan = failed_plan_for(gke_config)

    assert isinstance(plan.error, ConfigError)
    (problem,) = plan.error.problems
    assert (problem.path, problem.expected) == (
        "gpu-platform:pools[0].labels.cloud.google.com/gke-nodepool",
        "no label under cloud.google.com/ (GKE sets those)",
    )


def test_a_replacement_cap_off_karpenter_is_refused(dev_config: Config, failed_plan_for) -> None:
    # dev's pools are managed node groups: deleting a Node terminates none of their instances.
    dev_config["gpu-platform:pools"][0]["validation"] = {"replacementsPerHour": 1}

    plan = failed_plan_for(dev_config)

    assert isinstance(plan.error, ConfigError)
    (problem,) = plan.error.problems
    assert (problem.path, problem.value) == (
        "gpu-platform:pools[0].validation.replacementsPerHour",
        1,
    )
    assert "provisioner: karpenter" in problem.expected


def t4_pool(config: Config) -> Config:
    # dev's first pool is `accelerator: t4` (sm_75), for which the NCCL test's image builds no
    # kernels: NVCC_GENCODE in aws-samples/awsome-distributed-training micro-benchmarks/
    # nccl-tests/nccl-tests.Dockerfile names sm_80, sm_86, sm_89, sm_90 and sm_100 only.
    return config


def mig_pool(config: Config) -> Config:
    # NVIDIA's MIG user guide, "CUDA Device Enumeration": one CUDA process sees one MIG device.
    return with_mig_pool(config, "p4d.24xlarge", "all-1g.5gb")


@pytest.mark.parametrize(
    ("pool", "expected"),
    [
        (t4_pool, "no value on a t4 pool: the NCCL test's image has kernels for a100-40gb,"),
        (mig_pool, "no value on a MIG pool (`sharing.mode: mig`)"),
    ],
)
def test_a_bus_bandwidth_where_the_nccl_test_cannot_run_is_refused(
    dev_config: Config, failed_plan_for, pool: Callable[[Config], Config], expected: str
) -> None:
    config = pool(dev_config)
    config["gpu-platform:pools"][0]["validation"] = {"expectedBusBandwidthGbps": 100}

    plan = failed_plan_for(config)

    assert isinstance(plan.error, ConfigError)
    (problem,) = plan.error.problems
    assert (problem.path, problem.value) == (
        "gpu-platform:pools[0].validation.expectedBusBandwidthGbps",
        100,
    )
    assert problem.expected.startswith(expected)
