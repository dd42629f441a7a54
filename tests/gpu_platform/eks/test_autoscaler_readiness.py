"""Every EKS pool's nodes are ready to the cluster autoscaler once their device plugin runs, in
every sharing mode, and a MIG pool's scale-from-zero template has no whole GPUs.

`unready_to_the_autoscaler` is the autoscaler's rule, as `GpuCustomResourcesProcessor.
FilterOutNodesWithUnreadyResources` implements it (cluster-autoscaler 1.35.2 and 1.36.1,
`processors/customresources/gpu_processor.go:46-53`; 1.33.6 lines 45-51 with the first two
names only): a node carrying the provider's GPU label (`k8s.amazonaws.com/accelerator` on AWS,
`aws_cloud_provider.go:39`) but no non-zero allocatable of a known GPU resource
(`utils/gpu/gpu.go:46-52`) is held unready, at any age. Once 15 minutes old it counts against
`--ok-total-unready-count` (3) and `--max-total-unready-percentage` (45), past which the
autoscaler stops scaling the cluster (`clusterstate/clusterstate.go:433-436`; MIG resource
names are not in the list: kubernetes/autoscaler#8095).
"""

from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

import pytest

from gpu_platform.eks.instance_types import Gpus, instance_type
from gpu_platform.fit import EksNodeGroup, eks_node_template
from gpu_platform.offline.program import Plan

from .plans import asg_tags, mig_pool, node_group, with_extra_pool

# Its tests plan a pool of each sharing mode twice each, and change the program only through
# its config.
pytestmark = pytest.mark.shared_plans

Config = dict[str, Any]
PlanFor = Callable[[Config], Plan]

AWS_GPU_LABEL = "k8s.amazonaws.com/accelerator"
GPU_VENDOR_RESOURCE_NAMES = (
    "nvidia.com/gpu",
    "habana.ai/gaudi",
    "gpu.intel.com/xe",
    "amd.com/gpu",
    "microsoft.com/directx",
)
SHARING_MODES = {
    "exclusive": {"mode": "exclusive"},
    "time-slicing": {"mode": "time-slicing", "replicas": 4},
    "mps": {"mode": "mps", "replicas": 2},
    "mig": {"mode": "mig", "profile": "all-1g.10gb"},
}


def unready_to_the_autoscaler(labels: Mapping[str, str], allocatable: Mapping[str, Any]) -> bool:
    has_gpu_allocatable = any(
        Decimal(allocatable.get(name, 0)) != 0 for name in GPU_VENDOR_RESOURCE_NAMES
    )
    return AWS_GPU_LABEL in labels and not has_gpu_allocatable


def test_the_rule_holds_a_partitioned_node_with_the_aws_label_unready() -> None:
    # The node of kubernetes/autoscaler#8095: MIG slices, no whole GPU, the AWS GPU label.
    labels = {AWS_GPU_LABEL: "nvidia-a100-80gb"}

    assert unready_to_the_autoscaler(labels, {"nvidia.com/gpu": 0, "nvidia.com/mig-1g.10gb": 56})


# p4de.24xlarge as EC2 describes it: 8 NVIDIA A100 80GB.
P4DE = instance_type("p4de.24xlarge", 96, 1179648, ["x86_64"], [Gpus("NVIDIA", "A100", 8, 81920)])
# What its node advertises once the device plugin runs with each mode's config: 4 replicas per
# GPU time-sliced, 2 through MPS, seven 1g.10gb instances per A100 80GB (NVIDIA's MIG user
# guide) and no whole GPU left (`nvidia.com/gpu: 0`, as davidB/kubectl-view-allocations#258
# shows such a node).
RUNNING_NODE_ALLOCATABLE = {
    "exclusive": {"nvidia.com/gpu": 8},
    "time-slicing": {"nvidia.com/gpu": 32},
    "mps": {"nvidia.com/gpu": 16},
    "mig": {"nvidia.com/gpu": 0, "nvidia.com/mig-1g.10gb": 56},
}


def plan_in_mode(mode: str, config: Config, plan_for: PlanFor) -> Plan:
    pool = mig_pool(name="pool", sharing=SHARING_MODES[mode])
    return plan_for(with_extra_pool(config, **pool))


@pytest.mark.parametrize("mode", SHARING_MODES)
def test_a_running_node_of_every_sharing_mode_is_ready_to_the_autoscaler(
    mode: str, dev_config: Config, plan_for: PlanFor
) -> None:
    labels = node_group(plan_in_mode(mode, dev_config, plan_for), "pool").inputs["labels"]

    assert not unready_to_the_autoscaler(labels, RUNNING_NODE_ALLOCATABLE[mode])


@pytest.mark.parametrize("mode", SHARING_MODES)
def test_a_template_of_every_sharing_mode_advertises_what_a_running_node_does(
    mode: str, dev_config: Config, plan_for: PlanFor
) -> None:
    tags = asg_tags(plan_in_mode(mode, dev_config, plan_for), "pool")

    template = eks_node_template(
        tags, P4DE, EksNodeGroup("pool", "ml-dev", "us-east-1a", "ON_DEMAND", "AL2023", "1.35")
    )

    expected = RUNNING_NODE_ALLOCATABLE[mode]
    assert {name: template.resources[name] for name in expected} == expected
