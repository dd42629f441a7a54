"""Node repair on the GPU node groups, and the node monitoring agent that lets it see GPU faults."""

import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from jsonschema import Draft7Validator

from gpu_platform.eks.addon_schemas import addon_schema
from gpu_platform.kubernetes.alerts import XID_CLASSES_FILE, xid_classes
from gpu_platform.offline.program import Plan
from tests.conftest import Config
from tests.gpu_platform.kubernetes.daemonset_tolerations import daemonset_toleration_problems
from tests.shared_plans import shared_plan

PlanFor = Callable[[Config], Plan]
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
ADDON = "aws:eks/addon:Addon"


@pytest.fixture(scope="module")
def dev_stack_plan() -> Plan:
    """The dev stack's plan, once for the module's many readings of it."""
    return shared_plan("dev")


def repair_config(plan: Plan) -> dict[str, Any]:
    (group,) = plan.of_type(NODE_GROUP)
    return dict(group.inputs["nodeRepairConfig"])


def overrides_by_xid(plan: Plan) -> dict[int, dict[str, Any]]:
    found = {}
    for override in repair_config(plan)["nodeRepairConfigOverrides"]:
        code = re.fullmatch(r"NvidiaXID(\d+)Error", override["nodeUnhealthyReason"])
        assert code, override
        found[int(code.group(1))] = override
    return found


def test_gpu_node_groups_repair_one_node_at_a_time(dev_stack_plan: Plan) -> None:
    assert repair_config(dev_stack_plan)["enabled"] is True
    assert repair_config(dev_stack_plan)["maxParallelNodesRepairedCount"] == 1


def test_a_small_pools_one_bad_node_is_repaired(dev_stack_plan: Plan) -> None:
    # EKS user guide, node-repair: `maxUnhealthyNodeThresholdPercentage` is the share of
    # unhealthy nodes above which repair stops; 20 % stopped it for one bad node in a pool of
    # four or fewer. Unset, EKS pauses repairs only in a group of more than five nodes.
    config = repair_config(dev_stack_plan)

    assert "maxUnhealthyNodeThresholdPercentage" not in config
    assert "maxUnhealthyNodeThresholdCount" not in config


def test_a_pool_can_stop_repairs_above_a_count_of_unhealthy_nodes(
    dev_config: Config, plan_for: PlanFor
) -> None:
    dev_config["gpu-platform:pools"][0]["aws"]["nodeRepairMaxUnhealthyNodes"] = 2

    config = repair_config(plan_for(dev_config))

    assert config["maxUnhealthyNodeThresholdCount"] == 2
    assert "maxUnhealthyNodeThresholdPercentage" not in config


def test_node_repair_can_be_turned_off_per_pool(dev_config: Config, plan_for: PlanFor) -> None:
    dev_config["gpu-platform:pools"][0]["aws"]["nodeRepair"] = False

    assert repair_config(plan_for(dev_config)) == {"enabled": False}


@pytest.mark.parametrize(
    ("xid", "catalog_bucket"),
    [
        # AWS's default for these is Reboot (EKS user guide, node-health-nma, "NVIDIA XID
        # error codes"); NVIDIA's XID catalog (2025-09-30 spreadsheet, "Resolution Bucket
        # (Immediate Action)") restarts the application only, or does nothing.
        (13, "RESTART_APP"),
        (31, "RESTART_APP"),
        (63, "IGNORE"),
        (94, "RESTART_APP"),
        # Not on AWS's list; its agent may raise them in a later release.
        (43, "IGNORE"),
        (45, "WORKFLOW_XID_45"),
    ],
)
def test_an_application_xid_takes_no_repair(
    dev_stack_plan: Plan, xid: int, catalog_bucket: str
) -> None:
    assert json.loads(XID_CLASSES_FILE.read_text())["xids"][str(xid)]["bucket"] == catalog_bucket
    assert overrides_by_xid(dev_stack_plan)[xid] == {
        "nodeMonitoringCondition": "AcceleratedHardwareReady",
        "nodeUnhealthyReason": f"NvidiaXID{xid}Error",
        "minRepairWaitTimeMins": 10,
        "repairAction": "NoAction",
    }


@pytest.mark.parametrize(
    # NVIDIA's catalog: a GPU reset (RESET_GPU, WORKFLOW_XID_48, WORKFLOW_NVLINK_ERR) or a
    # restart of the machine (RESTART_BM, XID 79): AWS's Reboot or Replace stands.
    "xid",
    [48, 64, 74, 79, 95, 119, 120, 140],
)
def test_a_hardware_xid_keeps_the_repair_eks_gives_it(dev_stack_plan: Plan, xid: int) -> None:
    assert xid not in overrides_by_xid(dev_stack_plan)


def test_every_xid_the_catalog_restarts_the_application_for_or_ignores_takes_no_repair(
    dev_stack_plan: Plan,
) -> None:
    classes = xid_classes()

    assert sorted(overrides_by_xid(dev_stack_plan)) == sorted(
        classes["application"] + classes["ignore"]
    )


# aws/eks-node-monitoring-agent v1.7.0 (the pinned add-on's release),
# monitors/nvidia/dcgm/dcgm_policies.go: the XIDs for which the agent sets
# AcceleratedHardwareReady=False; every other XID is only a Warning Event.
AGENT_V1_7_0_CONDITION_XIDS = [
    46,
    48,
    54,
    62,
    63,
    64,
    74,
    79,
    95,
    109,
    110,
    119,
    120,
    136,
    140,
    142,
    143,
    151,
    155,
    156,
    158,
]


def test_with_the_pinned_agent_only_the_remapping_event_loses_its_repair(
    dev_stack_plan: Plan,
) -> None:
    # XID 63: NVIDIA's catalog IGNORE (the remap takes effect at the next reset, which
    # GpuMemoryRepairPending asks for); the agent's comment: "EC2 recommends replacing".
    assert sorted(set(overrides_by_xid(dev_stack_plan)) & set(AGENT_V1_7_0_CONDITION_XIDS)) == [63]


def test_no_override_names_the_double_bit_error_reason(dev_stack_plan: Plan) -> None:
    # The agent's DCGM double-bit policy (dcgm_client.go `DbePolicy`, dcgm_policies.go
    # `handleDbeFinding`) reports any uncorrectable ECC error, a contained one (XID 94) too, as
    # NvidiaDoubleBitError: EKS's repair stands, as GpuDoubleBitEccError asks for a reset.
    reasons = {
        o["nodeUnhealthyReason"] for o in repair_config(dev_stack_plan)["nodeRepairConfigOverrides"]
    }

    assert "NvidiaDoubleBitError" not in reasons


def test_the_agent_is_installed_where_node_groups_repair_their_nodes(dev_stack_plan: Plan) -> None:
    (addon,) = dev_stack_plan.of_type(ADDON)

    assert addon.inputs["addonName"] == "eks-node-monitoring-agent"
    assert addon.inputs["addonVersion"] == "v1.7.0-eksbuild.1"


def test_the_agent_is_not_installed_where_no_pool_repairs_its_nodes(
    dev_config: Config, plan_for: PlanFor
) -> None:
    dev_config["gpu-platform:pools"][0]["aws"]["nodeRepair"] = False

    assert plan_for(dev_config).of_type(ADDON) == []


def test_the_node_monitoring_agent_runs_its_dcgm_server_wherever_the_agent_runs(
    dev_config: Config, plan_for: PlanFor
) -> None:
    dev_config["gpu-platform:cluster"]["nodeMonitoringAgentVersion"] = "v1.7.0-eksbuild.3"
    # A pool tainted for one team: the DCGM server must reach its nodes too.
    dev_config["gpu-platform:pools"][0]["taints"] = [
        {"key": "dedicated", "value": "team-a", "effect": "NoSchedule"}
    ]

    plan = plan_for(dev_config)
    (addon,) = plan.of_type(ADDON)

    assert addon.inputs["addonName"] == "eks-node-monitoring-agent"
    assert addon.inputs["addonVersion"] == "v1.7.0-eksbuild.3"
    # aws/eks-node-monitoring-agent v1.7.0 chart values: `dcgmAgent.tolerations: []`, while the
    # agent's own DaemonSet tolerates every taint (`nodeAgent.tolerations: [operator: Exists]`);
    # where the agent runs without its DCGM server it reports DCGMError, a condition node repair
    # acts on (docs/node-health-issues.adoc at v1.7.0).
    configuration = json.loads(addon.inputs["configurationValues"])
    assert configuration == {"dcgmAgent": {"tolerations": [{"operator": "Exists"}]}}
    assert daemonset_toleration_problems(plan, dev_config) == []


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
