"""Node repair on the GPU node groups, and the node monitoring agent that lets it see GPU faults."""

import json
from collections.abc import Callable

from jsonschema import Draft7Validator

from gpu_platform.cli.offline import Plan
from gpu_platform.eks.addon_schemas import addon_schema
from tests.conftest import Config

PlanFor = Callable[[Config], Plan]
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
ADDON = "aws:eks/addon:Addon"


def test_gpu_node_groups_repair_one_node_at_a_time(dev_plan: Plan) -> None:
    (group,) = dev_plan.of_type(NODE_GROUP)

    assert group.inputs["nodeRepairConfig"] == {
        "enabled": True,
        "maxParallelNodesRepairedCount": 1,
        "maxUnhealthyNodeThresholdPercentage": 20,
    }


def test_node_repair_can_be_turned_off_per_pool(dev_config: Config, plan_for: PlanFor) -> None:
    dev_config["gpu-platform:pools"][0]["aws"]["nodeRepair"] = False

    (group,) = plan_for(dev_config).of_type(NODE_GROUP)

    assert group.inputs["nodeRepairConfig"] == {"enabled": False}


def test_the_node_monitoring_agent_is_not_installed_unless_asked(dev_plan: Plan) -> None:
    assert dev_plan.of_type(ADDON) == []


def test_the_node_monitoring_agent_runs_its_dcgm_server_on_the_tainted_gpu_nodes(
    dev_config: Config, plan_for: PlanFor
) -> None:
    dev_config["gpu-platform:cluster"]["nodeMonitoringAgentVersion"] = "v1.7.0-eksbuild.1"

    (addon,) = plan_for(dev_config).of_type(ADDON)

    assert addon.inputs["addonName"] == "eks-node-monitoring-agent"
    assert addon.inputs["addonVersion"] == "v1.7.0-eksbuild.1"
    # aws/eks-node-monitoring-agent v1.7.0 chart values: `dcgmAgent.tolerations: []`, while the
    # agent's own DaemonSet tolerates every taint (`operator: Exists`).
    assert json.loads(addon.inputs["configurationValues"]) == {
        "dcgmAgent": {
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
        }
    }


def test_the_agents_configuration_is_one_its_add_on_accepts(
    dev_config: Config, plan_for: PlanFor
) -> None:
    # EKS checks `configurationValues` against the add-on's schema
    # (aws/eks-node-monitoring-agent v1.7.0, charts/configuration.schema.json, derived into
    # gpu_platform/eks/addon_schemas/): every level refuses keys it does not name.
    dev_config["gpu-platform:cluster"]["nodeMonitoringAgentVersion"] = "v1.7.0-eksbuild.1"
    (addon,) = plan_for(dev_config).of_type(ADDON)
    validator = Draft7Validator(addon_schema("eks-node-monitoring-agent", "v1.7.0"))

    assert list(validator.iter_errors(json.loads(addon.inputs["configurationValues"]))) == []
    assert not validator.is_valid({"dcgmAgent": {"toleration": []}})
