"""Scale from zero: the node-template hints and discovery tags on each node group's Auto Scaling
group, as pure tags and as the `aws.autoscaling.Tag` resources the program declares."""

import re
from collections.abc import Callable
from typing import Any

from gpu_platform.config import GpuPoolSpec
from gpu_platform.eks.autoscaler_tags import autoscaler_tags, ephemeral_storage_gib
from gpu_platform.node_identity import GpuShape, NodeIdentity, Taint, resolve_pool
from gpu_platform.offline.program import Plan

from .plans import (
    ASG_TAG,
    asg_tags,
    component,
    mig_pool,
    node_group,
    problems_of,
    with_extra_pool,
    with_pool,
)

Config = dict[str, Any]
PlanFor = Callable[[Config], Plan]


def test_tags_hint_every_label_taint_and_resource_and_mark_the_group_for_discovery() -> None:
    identity = NodeIdentity(
        labels={"gpu-platform.io/pool": "t4", "k8s.amazonaws.com/accelerator": "nvidia-tesla-t4"},
        taints=(Taint("nvidia.com/gpu", "present", "NoSchedule"), Taint("spot", "", "NoExecute")),
        resources={"nvidia.com/gpu": 4},
    )

    tags = autoscaler_tags(identity, "ml-dev", idle_minutes=15, disk_size_gib=100)

    options = "k8s.io/cluster-autoscaler/node-template/autoscaling-options/"
    assert tags == {
        "k8s.io/cluster-autoscaler/enabled": "true",
        "k8s.io/cluster-autoscaler/ml-dev": "owned",
        "k8s.io/cluster-autoscaler/node-template/label/gpu-platform.io/pool": "t4",
        "k8s.io/cluster-autoscaler/node-template/label/k8s.amazonaws.com/accelerator": (
            "nvidia-tesla-t4"
        ),
        "k8s.io/cluster-autoscaler/node-template/taint/nvidia.com/gpu": "present:NoSchedule",
        "k8s.io/cluster-autoscaler/node-template/taint/spot": ":NoExecute",
        "k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu": "4",
        "k8s.io/cluster-autoscaler/node-template/resources/ephemeral-storage": "88Gi",
        options + "scaledownunneededtime": "15m0s",
        options + "scaledowngpuutilizationthreshold": "0.000001",
    }


def test_ephemeral_storage_is_the_volume_less_the_kubelets_reserve_and_eviction_threshold() -> None:
    # 200 GiB: 10% nodefs.available eviction threshold and 1Gi kube-reserved (amazon-eks-ami
    # nodeadm kubelet defaults), 1Gi for the filesystem's own overhead.
    assert ephemeral_storage_gib(200) == 178


def test_a_mig_pool_is_drained_only_when_no_pod_requests_cpu_or_memory_there() -> None:
    # Without the AWS GPU label the autoscaler judges the node by CPU and memory
    # (eligibility.go: GetNodeGpuConfig is nil), DaemonSets included unless told otherwise.
    spec = GpuPoolSpec.model_validate(mig_pool())
    pool = resolve_pool(spec, 0, GpuShape("a100-80gb", 8))

    tags = autoscaler_tags(pool.identity, "ml-dev", idle_minutes=10, disk_size_gib=200)

    options = "k8s.io/cluster-autoscaler/node-template/autoscaling-options/"
    assert tags[options + "scaledownutilizationthreshold"] == "0.000001"
    assert tags[options + "ignoredaemonsetsutilization"] == "true"
    assert options + "scaledowngpuutilizationthreshold" not in tags


def removable_before_the_fix(utilization: float, threshold: str) -> bool:
    # isNodeBelowUtilizationThreshold, core/scaledown/eligibility/eligibility.go at
    # cluster-autoscaler-1.33.3 and 1.34.2: `if utilInfo.Utilization >= threshold` keeps it.
    return not utilization >= float(threshold)


def removable_after_the_fix(utilization: float, threshold: str) -> bool:
    # isNodeAtOrBelowUtilizationThreshold, the same file from 1.33.4, 1.34.3 and 1.35.0
    # (66d2242f61): `if utilInfo.Utilization > threshold` keeps it.
    return not utilization > float(threshold)


def test_the_threshold_removes_an_empty_node_under_both_comparisons() -> None:
    spec = GpuPoolSpec.model_validate(mig_pool())
    for identity in (resolve_pool(spec, 0, GpuShape("a100-80gb", 8)).identity, T4_IDENTITY):
        (threshold,) = (
            v for k, v in _options(identity).items() if k.endswith("utilizationthreshold")
        )

        assert removable_before_the_fix(0.0, threshold)
        assert removable_after_the_fix(0.0, threshold)


def test_the_threshold_keeps_a_node_any_pod_holds_under_both_comparisons() -> None:
    spec = GpuPoolSpec.model_validate(mig_pool())
    # Requested over allocatable milli-units (simulator/utilization/info.go): one millicore of
    # a p5.48xlarge's 192 CPUs, and one time-sliced replica of 8 GPUs shared 48 ways.
    smallest = [1 / 192_000, 1 / (8 * 48)]
    for identity in (resolve_pool(spec, 0, GpuShape("a100-80gb", 8)).identity, T4_IDENTITY):
        (threshold,) = (
            v for k, v in _options(identity).items() if k.endswith("utilizationthreshold")
        )
        for utilization in smallest:
            assert not removable_before_the_fix(utilization, threshold)
            assert not removable_after_the_fix(utilization, threshold)


T4_IDENTITY = NodeIdentity(
    labels={"k8s.amazonaws.com/accelerator": "nvidia-tesla-t4"},
    taints=(Taint("nvidia.com/gpu", "present", "NoSchedule"),),
    resources={"nvidia.com/gpu": 1},
)


def _options(identity: NodeIdentity) -> dict[str, str]:
    tags = autoscaler_tags(identity, "ml-dev", idle_minutes=10, disk_size_gib=200)
    return {k: v for k, v in tags.items() if "/autoscaling-options/" in k}


def test_a_mixed_mig_pool_hints_its_slices_per_node() -> None:
    spec = GpuPoolSpec.model_validate(mig_pool())
    pool = resolve_pool(spec, 0, GpuShape("a100-80gb", 8))

    tags = autoscaler_tags(pool.identity, "ml-dev", idle_minutes=10, disk_size_gib=200)

    # 7 instances of 1g.10gb per A100 80GB, 8 GPUs.
    assert tags["k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/mig-1g.10gb"] == "56"


def test_a_mixed_mig_pool_hints_that_no_whole_gpu_is_left() -> None:
    # The autoscaler's template starts from the instance type's 8 physical GPUs
    # (aws_manager.go:285 at cluster-autoscaler 1.35.2) and only a hint overrides them.
    spec = GpuPoolSpec.model_validate(mig_pool())
    pool = resolve_pool(spec, 0, GpuShape("a100-80gb", 8))

    tags = autoscaler_tags(pool.identity, "ml-dev", idle_minutes=10, disk_size_gib=200)

    assert tags["k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu"] == "0"


def test_program_tags_the_node_groups_auto_scaling_group(dev_plan: Plan) -> None:
    tags = [r for r in dev_plan.children_of(component(dev_plan)) if r.type == ASG_TAG]

    # The stand-in node group's Auto Scaling group, named the way EKS names them
    # (`eks-<node group>-<uuid>`), the node group the way the AWS provider names one from its
    # prefix (18 digits and 8 hex).
    (name,) = {t.inputs["autoscalingGroupName"] for t in tags}
    assert re.fullmatch(r"eks-t4-shared-[0-9]{18}[0-9a-f]{8}-[0-9a-f-]{36}", name)
    assert all(node_group(dev_plan).urn in t.dependencies for t in tags)


def test_hints_are_not_copied_to_instances(dev_plan: Plan) -> None:
    tags = [r for r in dev_plan.children_of(component(dev_plan)) if r.type == ASG_TAG]

    assert tags
    assert {t.inputs["tag"]["propagateAtLaunch"] for t in tags} == {False}


def test_program_hints_what_the_node_group_sets_and_the_device_plugin_advertises(
    dev_plan: Plan,
) -> None:
    inputs = node_group(dev_plan).inputs
    advertised = dev_plan.outputs["pools"]["t4-shared"]["resources"]

    tags = asg_tags(dev_plan)

    prefix = "k8s.io/cluster-autoscaler/node-template/"
    assert {k.removeprefix(prefix + "label/"): v for k, v in tags.items() if "/label/" in k} == (
        inputs["labels"]
    )
    # Every taint of the node group but its startup taint, which the autoscaler would drop from
    # the template anyway (`SanitizeTaints`, utils/taints/taints.go, cluster-autoscaler-1.35.2).
    assert {k.removeprefix(prefix + "taint/"): v for k, v in tags.items() if "/taint/" in k} == {
        "nvidia.com/gpu": "present:NoSchedule"
    }
    assert {t["key"] for t in inputs["taints"]} == {
        "nvidia.com/gpu",
        "startup-taint.cluster-autoscaler.kubernetes.io/gpu-validation",
    }
    # Four time-sliced replicas of the one T4 of a g4dn.xlarge.
    assert advertised == {"nvidia.com/gpu": 4}
    assert tags[prefix + "resources/nvidia.com/gpu"] == "4"


def test_program_marks_the_group_for_this_clusters_autoscaler(dev_plan: Plan) -> None:
    tags = asg_tags(dev_plan)

    assert tags["k8s.io/cluster-autoscaler/enabled"] == "true"
    assert tags["k8s.io/cluster-autoscaler/ml-dev"] == "owned"


def test_gpu_nodes_get_the_configured_idle_time(dev_config: Config, plan_for: PlanFor) -> None:
    dev_config["gpu-platform:autoscaler"] = {"gpuNodeIdleMinutes": 25}

    tags = asg_tags(plan_for(dev_config))

    assert tags[
        "k8s.io/cluster-autoscaler/node-template/autoscaling-options/scaledownunneededtime"
    ] == ("25m0s")


def test_a_validating_node_is_not_removed_as_unready(dev_config: Config, plan_for: PlanFor) -> None:
    dev_config["gpu-platform:pools"][0]["validation"] = {"dcgmDiagLevel": 2}

    tags = asg_tags(plan_for(dev_config))

    # A node still validating is unready to the autoscaler, removed after
    # `scaledownunreadytime` (read per group, `GetOptions`, cloudprovider/aws/aws_manager.go,
    # cluster-autoscaler-1.35.2; 20 minutes by default). The one-GPU t4 pool's: 900 s for the
    # node's start, 300 s for the validation pod's, 60 s each for `nvidia-smi -q -x` and
    # `nvlink --status`, 300 s to pull DCGM's image, 900 s for `dcgmi diag -r 2`: 2520 s.
    assert tags[
        "k8s.io/cluster-autoscaler/node-template/autoscaling-options/scaledownunreadytime"
    ] == ("42m0s")


def test_each_pool_tags_its_own_group(dev_config: Config, plan_for: PlanFor) -> None:
    plan = plan_for(with_extra_pool(dev_config, **mig_pool()))

    mig_tags = asg_tags(plan, "a100-mig")

    assert mig_tags["k8s.io/cluster-autoscaler/node-template/label/gpu-platform.io/pool"] == (
        "a100-mig"
    )
    assert mig_tags["k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/mig-1g.10gb"] == (
        "56"
    )


def test_more_hints_than_a_group_holds_is_a_config_error(
    dev_config: Config, failed_plan_for: PlanFor
) -> None:
    labels = {f"example.com/label-{i}": "x" for i in range(40)}
    plan = failed_plan_for(with_pool(dev_config, labels=labels))

    assert "gpu-platform:pools[0].labels" in problems_of(plan)
    assert plan.resources == []


def test_two_taints_with_one_key_is_a_config_error(
    dev_config: Config, failed_plan_for: PlanFor
) -> None:
    taints = [
        {"key": "team", "value": "a", "effect": "NoSchedule"},
        {"key": "team", "value": "a", "effect": "NoExecute"},
    ]
    plan = failed_plan_for(with_pool(dev_config, taints=taints))

    assert "gpu-platform:pools[0].taints[1].key" in problems_of(plan)
    assert plan.resources == []
