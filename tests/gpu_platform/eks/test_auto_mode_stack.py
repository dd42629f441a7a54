"""The shipped stack on an EKS Auto Mode cluster (Pulumi.auto-dev.yaml): Auto Mode runs the
NVIDIA driver, container toolkit and device plugin on its nodes (EKS user guide,
automode/auto-accelerated.adoc: the device plugin is "not visible as a daemon set"), its own
Karpenter, networking and node monitoring and repair, so the stack declares only NodePools,
NodeClasses and what runs on the nodes: the GPU Operator's monitoring, node validation and the
tenants."""

from typing import Any

import pytest

from gpu_platform.offline.plan import read_policy_config
from gpu_platform.offline.program import Plan
from gpu_platform.offline.stand_ins import aws as stand_in
from gpu_platform.stack_files import stack_config
from tests.repository import PROJECT
from tests.shared_plans import shared_plan

STACK = "auto-dev"


@pytest.fixture(scope="module")
def plan() -> Plan:
    return shared_plan(STACK)


def operator_values(plan: Plan) -> dict[str, Any]:
    values: dict[str, Any] = plan.named("gpu-operator", "kubernetes:helm.sh/v3:Release").inputs[
        "values"
    ]
    return values


def test_each_pool_is_an_auto_mode_node_pool_and_node_class(plan: Plan) -> None:
    pools = stack_config(STACK, PROJECT)["gpu-platform:pools"]
    for kind in (
        "kubernetes:karpenter.sh/v1:NodePool",
        "kubernetes:eks.amazonaws.com/v1:NodeClass",
    ):
        assert sorted(r.name for r in plan.of_type(kind)) == sorted(p["name"] for p in pools)
    assert plan.of_type("kubernetes:karpenter.k8s.aws/v1:EC2NodeClass") == []


def test_node_classes_run_the_clusters_auto_mode_node_role(plan: Plan) -> None:
    described = stand_in.get_cluster({"name": "ml-auto-dev", "region": "us-east-1"})
    role = described["computeConfigs"][0]["nodeRoleArn"].rsplit("/")[-1]
    for node_class in plan.of_type("kubernetes:eks.amazonaws.com/v1:NodeClass"):
        assert node_class.inputs["spec"]["role"] == role


def test_the_operator_installs_no_driver_toolkit_or_device_plugin_and_keeps_monitoring(
    plan: Plan,
) -> None:
    values = operator_values(plan)
    for operand in ("driver", "toolkit", "devicePlugin", "migManager"):
        assert values[operand]["enabled"] is False, operand
    assert values["dcgmExporter"].get("enabled", True) is True


def test_nothing_of_what_auto_mode_runs_itself_is_installed(plan: Plan) -> None:
    # No Karpenter, cluster autoscaler, node monitoring agent or VPC CNI identity: the stack
    # declares no AWS resource at all, and no release but the operator's.
    assert [r for r in plan.resources if r.type.startswith("aws:")] == []
    releases = plan.of_type("kubernetes:helm.sh/v3:Release")
    assert [r.name for r in releases] == ["gpu-operator"]


def test_a_cluster_without_an_auto_mode_node_role_is_refused_by_provisioner(
    monkeypatch: pytest.MonkeyPatch, failed_plan_for
) -> None:
    def without_auto_mode(args: dict[str, Any]) -> dict[str, Any]:
        return {**stand_in.get_cluster(args), "computeConfigs": [{"enabled": False}]}

    monkeypatch.setitem(stand_in.INVOKES, "aws:eks/getCluster:getCluster", without_auto_mode)
    error = failed_plan_for(stack_config(STACK, PROJECT)).error
    assert "gpu-platform:provisioner" in str(error)
    assert "whose EKS Auto Mode compute is on with a node role" in str(error)


def test_nodes_are_validated_all_but_the_driver_auto_mode_chooses(plan: Plan) -> None:
    for pool in stack_config(STACK, PROJECT)["gpu-platform:pools"]:
        daemonset = plan.named(f"node-validation-{pool['name']}", "kubernetes:apps/v1:DaemonSet")
        (validator,) = daemonset.inputs["spec"]["template"]["spec"]["containers"]
        env = {e["name"]: e.get("value") for e in validator["env"]}
        assert env["DRIVER_VERSION"] == ""
        assert "driver" in env["SKIP_CHECKS"].split(",")


def test_an_attached_cluster_keeps_its_network_policy_switch(plan: Plan) -> None:
    # `enable-network-policy-controller` turns enforcement of every NetworkPolicy of the
    # cluster on (auto-net-pol.adoc, awsdocs/amazon-eks-user-guide latest/ug/automode/), and a
    # patch's `destroy` releases it (pulumi-kubernetes provider/pkg/ssa/actions.go
    # `Relinquish`): a cluster the stack attaches to is left as it is, preflight checking it.
    assert plan.of_type("kubernetes:core/v1:ConfigMapPatch") == []


def test_the_platforms_own_smoke_test_draws_no_cuda_advisory(plan: Plan, analyze_plan) -> None:
    # AWS publishes no driver of Auto Mode's AMIs, so no pool has a known CUDA release; the
    # smoke test needs none (it runs nvidia-smi with NVIDIA_DISABLE_REQUIRE), and the stack has
    # no other GPU workload.
    config = read_policy_config(PROJECT.directory / "policy-config", STACK, None)

    verdicts = analyze_plan(plan.resources, config=config)

    assert [v.message for v in verdicts if v.policy_name == "gpu-pods-cuda-known"] == []
