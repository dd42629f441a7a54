"""The stack policy: GPU pools come with the GPU Operator and GPU alert rules."""

from tests.gpu_platform.policy_pack.builders import (
    Analyze,
    eks_node_group,
    gke_node_pool,
    gpu_alert_rules,
    gpu_operator_release,
    launch_template,
)

POLICY = "gpu-stack-complete"


def test_gpu_pools_with_the_operator_and_alerts_pass(analyze: Analyze) -> None:
    verdicts = analyze(gke_node_pool(), gpu_operator_release(), gpu_alert_rules())

    assert [v for v in verdicts if v.policy_name == POLICY] == []


def test_missing_operator_and_alerts_are_advisory_by_default(analyze: Analyze) -> None:
    template = launch_template()
    rules = gpu_alert_rules()
    rules.inputs["spec"]["groups"][0]["rules"][0]["expr"] = "up == 0"

    verdicts = [
        v for v in analyze(template, eks_node_group(template), rules) if v.policy_name == POLICY
    ]

    assert [(v.enforcement_level, v.urn) for v in verdicts] == [("advisory", ""), ("advisory", "")]
    assert [v.message for v in verdicts] == [
        'the stack runs GPU pools ("l4-nodes") but installs no GPU Operator (a Helm release of '
        'chart "gpu-operator"), which their nodes need for the device plugin, DCGM monitoring '
        "and driver management. Fix: install it in this stack, or turn this policy off for "
        "stacks whose cluster gets it from another stack.",
        'the stack runs GPU pools ("l4-nodes") but declares no GPU alerts (a PrometheusRule '
        "whose rules use DCGM metrics such as DCGM_FI_DEV_XID_ERRORS). Fix: declare GPU alert "
        "rules, or turn this policy off for stacks whose cluster gets them from another stack.",
    ]


def test_it_can_be_made_mandatory(analyze: Analyze) -> None:
    verdicts = analyze(gke_node_pool(), gpu_operator_release(), config={POLICY: "mandatory"})

    assert [(v.policy_name, v.enforcement_level) for v in verdicts if v.policy_name == POLICY] == [
        (POLICY, "mandatory")
    ]


def test_a_stack_without_gpu_pools_needs_neither(analyze: Analyze) -> None:
    assert [v for v in analyze(gpu_operator_release()) if v.policy_name == POLICY] == []
