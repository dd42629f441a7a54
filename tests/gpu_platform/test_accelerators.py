"""The MIG geometry of each accelerator agrees with what the pinned GPU Operator's MIG manager
partitions a GPU into: its default mig-parted config (NVIDIA/gpu-operator v26.7.0
`assets/state-mig-manager/0400_configmap.yaml`, derived into upstream/mig_configs.json by
upstream/derive_mig_configs.py). A pool's `all-<profile>` is that config's name, and a profile
the config has no entry for, or none with the instance count the platform plans with, would
leave the node unpartitioned or advertising other slices than the autoscaler was told."""

import json
from pathlib import Path

import pytest

from gpu_platform.accelerators import ACCELERATORS, mig_instances_per_gpu
from gpu_platform.versions import GPU_OPERATOR_CHART

MIG_CONFIGS = json.loads((Path(__file__).parent / "upstream" / "mig_configs.json").read_text())
MIG_PROFILES = [
    (name, profile, instances)
    for name, accelerator in ACCELERATORS.items()
    for profile, instances in accelerator.mig_profiles.items()
]


def test_the_mig_configs_are_the_pinned_charts() -> None:
    assert MIG_CONFIGS["source"].startswith(f"NVIDIA/gpu-operator@{GPU_OPERATOR_CHART.version} ")


@pytest.mark.parametrize(
    ("accelerator", "profile", "instances"),
    MIG_PROFILES,
    ids=[f"{name}-{profile}" for name, profile, _ in MIG_PROFILES],
)
def test_each_mig_profile_is_one_the_mig_manager_partitions_into(
    accelerator: str, profile: str, instances: int
) -> None:
    assert instances in MIG_CONFIGS["instances"].get(profile, [])


def test_an_a100_40gb_holds_four_1g_10gb_instances() -> None:
    # The config's `all-1g.10gb` entry for the A100 40GB devices (0x20B010DE...): "1g.10gb": 4.
    assert mig_instances_per_gpu("a100-40gb", "all-1g.10gb") == 4
    assert mig_instances_per_gpu("a100-80gb", "all-1g.10gb") == 7
