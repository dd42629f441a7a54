"""Preflight's reading of the flags and priorities of the cluster autoscaler a cluster runs
itself, against kubernetes/autoscaler at cluster-autoscaler-1.35.2: config/flags/flags.go (the
flags and their defaults), expander/priority/priority.go (the ConfigMap and `BestOptions`),
core/scaledown/eligibility/eligibility.go (the threshold comparison)."""

import copy
from collections.abc import Mapping
from typing import Any

from gpu_platform.config import StackConfig
from gpu_platform.eks.autoscaler_settings import own_autoscaler_settings
from gpu_platform.eks.preflight.autoscaler_settings import autoscaler_settings_findings, parse_flags
from gpu_platform.preflight.findings import Finding

SUBJECT = "cluster ml-dev autoscaler settings"
CONFIG_MAP = "cluster-autoscaler-priority-expander"

# The container of AWS's example Deployment (cloudprovider/aws/examples/
# cluster-autoscaler-autodiscover.yaml, cluster-autoscaler-1.35.2), as the Kubernetes API returns
# it: least-waste, no balancing.
AWS_EXAMPLE: dict[str, Any] = {
    "name": "cluster-autoscaler",
    "image": "registry.k8s.io/autoscaling/cluster-autoscaler:v1.35.2",
    "command": [
        "./cluster-autoscaler",
        "--v=4",
        "--stderrthreshold=info",
        "--cloud-provider=aws",
        "--skip-nodes-with-local-storage=false",
        "--expander=least-waste",
        "--node-group-auto-discovery=asg:tag=k8s.io/cluster-autoscaler/enabled,"
        "k8s.io/cluster-autoscaler/ml-dev",
    ],
}
# The container the cluster-autoscaler chart 9.59.0 renders (templates/deployment.yaml: every
# `extraArgs` entry as `--key=value`) with the flags the platform asks for.
CHART_WITH_PLATFORM_FLAGS: dict[str, Any] = {
    "name": "aws-cluster-autoscaler",
    "image": "registry.k8s.io/autoscaling/cluster-autoscaler:v1.35.2",
    "command": [
        "./cluster-autoscaler",
        "--cloud-provider=aws",
        "--namespace=autoscaling",
        "--node-group-auto-discovery=asg:tag=k8s.io/cluster-autoscaler/enabled,"
        "k8s.io/cluster-autoscaler/ml-dev",
        "--balance-similar-node-groups=true",
        "--balancing-ignore-label=nodegroup-name",
        "--expander=priority,least-waste",
        "--logtostderr=true",
        "--v=4",
    ],
}
# A CPU group's Auto Scaling group, as EKS names a managed node group's.
CPU_ONLY = "10:\n  - '^eks-general-purpose-.*'\n"


def config_map(priorities: str) -> dict[str, Any]:
    return {"metadata": {"name": CONFIG_MAP}, "data": {"priorities": priorities}}


def platforms_priorities(stack: StackConfig) -> str:
    text: str = own_autoscaler_settings(stack.autoscaler, stack.pools)["priorityConfigMap"]["data"]
    return text


def findings_for(
    stack: StackConfig,
    container: Mapping[str, Any],
    config_maps: Mapping[tuple[str, str], Mapping[str, Any]] | None = None,
    release: str = "v1.35.2",
) -> list[Finding]:
    known = config_maps or {}
    return autoscaler_settings_findings(
        stack, container, release, lambda namespace, name: known.get((namespace, name))
    )


def messages(findings: list[Finding]) -> list[str]:
    return [f.message for f in findings if f.severity == "warning"]


def test_the_platforms_flags_and_priorities_are_ok(own_autoscaler_stack: StackConfig) -> None:
    # The chart's `--namespace` is where the expander reads its ConfigMap
    # (`configNamespace`, expander/factory/expander_factory.go).
    maps = {("autoscaling", CONFIG_MAP): config_map(platforms_priorities(own_autoscaler_stack))}

    findings = findings_for(own_autoscaler_stack, CHART_WITH_PLATFORM_FLAGS, maps)

    assert findings == [
        Finding("ok", SUBJECT, "Its flags and priorities are the platform's.", "Nothing.")
    ]


def test_an_expander_without_priority_is_a_warning(own_autoscaler_stack: StackConfig) -> None:
    findings = findings_for(own_autoscaler_stack, AWS_EXAMPLE)

    assert findings[0] == Finding(
        "warning",
        SUBJECT,
        "Its expander is least-waste, not priority: the GPU pools are not ranked by capacity,"
        " and a CPU pod that tolerates the GPU taint may grow a GPU pool where a CPU group fits"
        " it.",
        "Give it --expander=priority,least-waste and the priority ConfigMap the plan prints"
        " (ownAutoscaler).",
    )


def test_no_expander_flag_is_least_waste(own_autoscaler_stack: StackConfig) -> None:
    # `expanderFlag` defaults to `expander.LeastWasteExpanderName` (flags.go).
    container = {**AWS_EXAMPLE, "command": ["./cluster-autoscaler", "--cloud-provider=aws"]}

    assert messages(findings_for(own_autoscaler_stack, container))[0].startswith(
        "Its expander is least-waste, not priority"
    )


def test_priority_without_its_config_map_is_a_warning(
    own_autoscaler_stack: StackConfig,
) -> None:
    # Without the ConfigMap `BestOptions` returns every option unfiltered (priority.go).
    findings = findings_for(own_autoscaler_stack, CHART_WITH_PLATFORM_FLAGS)

    assert messages(findings) == [
        f"Its expander lists priority, but ConfigMap autoscaling/{CONFIG_MAP} has no priorities:"
        " the expander filters nothing, and the GPU pools are not ranked."
    ]


def test_a_gpu_pool_no_priority_matches_is_a_warning_as_the_expander_drops_it(
    own_autoscaler_stack: StackConfig,
) -> None:
    # A group no expression matches: "The group won't be used" (`BestOptions`, priority.go).
    maps = {("autoscaling", CONFIG_MAP): config_map(CPU_ONLY)}

    findings = findings_for(own_autoscaler_stack, CHART_WITH_PLATFORM_FLAGS, maps)

    assert messages(findings) == [
        f"No expression of ConfigMap autoscaling/{CONFIG_MAP} matches the node groups of"
        " t4-shared (eks-<pool>-...): wherever another group fits a pod, the priority expander"
        " drops them."
    ]


def test_a_catch_all_priority_keeps_every_gpu_pool(own_autoscaler_stack: StackConfig) -> None:
    # Expressions match unanchored (`FindStringIndex`, priority.go).
    maps = {("autoscaling", CONFIG_MAP): config_map(CPU_ONLY + "1:\n  - 't4'\n")}

    assert messages(findings_for(own_autoscaler_stack, CHART_WITH_PLATFORM_FLAGS, maps)) == []


def test_unreadable_priorities_are_a_warning(own_autoscaler_stack: StackConfig) -> None:
    # `parsePrioritiesYAMLString` wants `map[int][]string` (priority.go).
    maps = {("autoscaling", CONFIG_MAP): config_map("gpu:\n  - '.*'\n")}

    (message,) = messages(findings_for(own_autoscaler_stack, CHART_WITH_PLATFORM_FLAGS, maps))

    assert message.startswith(f"ConfigMap autoscaling/{CONFIG_MAP} cannot be read")


def test_without_balancing_similar_groups_is_a_warning(
    own_autoscaler_stack: StackConfig,
) -> None:
    # `balance-similar-node-groups` defaults to false (flags.go).
    container = copy.deepcopy(CHART_WITH_PLATFORM_FLAGS)
    container["command"].remove("--balance-similar-node-groups=true")
    maps = {("autoscaling", CONFIG_MAP): config_map(platforms_priorities(own_autoscaler_stack))}

    assert messages(findings_for(own_autoscaler_stack, container, maps)) == [
        "It runs without --balance-similar-node-groups: a burst fills one zonal node group of a"
        " pool before the next."
    ]


def test_an_atomic_pool_under_an_autoscaler_that_ignores_provisioning_requests_blocks(
    own_autoscaler_stack: StackConfig,
) -> None:
    # `enable-provisioning-requests` defaults to false (config/flags/flags.go at
    # cluster-autoscaler-1.33.6, 1.34.5, 1.35.2 and 1.36.1).
    pools = [
        p.model_copy(update={"aws": p.aws.model_copy(update={"atomic_scale_up": True})})
        for p in own_autoscaler_stack.pools
    ]
    stack = own_autoscaler_stack.model_copy(update={"pools": pools})
    maps = {("autoscaling", CONFIG_MAP): config_map(platforms_priorities(stack))}
    given = copy.deepcopy(CHART_WITH_PLATFORM_FLAGS)
    given["command"].append("--enable-provisioning-requests=true")

    (finding,) = [f for f in findings_for(stack, CHART_WITH_PLATFORM_FLAGS, maps) if f.blocking]
    assert finding.message.startswith("It runs without --enable-provisioning-requests")
    assert (
        "--enable-provisioning-requests=true"
        in own_autoscaler_settings(stack.autoscaler, stack.pools)["flags"]
    )
    assert not [f for f in findings_for(stack, given, maps) if f.blocking]


def test_without_ignoring_the_node_group_name_label_is_a_warning(
    own_autoscaler_stack: StackConfig,
) -> None:
    # `nodegroup-name` is not in the AWS comparator's ignored labels
    # (processors/nodegroupset/aws_nodegroups.go; kubernetes/autoscaler#6954).
    container = copy.deepcopy(CHART_WITH_PLATFORM_FLAGS)
    container["command"].remove("--balancing-ignore-label=nodegroup-name")
    maps = {("autoscaling", CONFIG_MAP): config_map(platforms_priorities(own_autoscaler_stack))}

    assert messages(findings_for(own_autoscaler_stack, container, maps)) == [
        "It runs without --balancing-ignore-label=nodegroup-name: the label names each node"
        " group (EKS's eks:nodegroup-name tag, kubernetes/autoscaler#6954), so no two zonal"
        " groups of a pool are similar and none is balanced."
    ]


def test_a_zero_threshold_before_the_fix_is_a_warning(own_autoscaler_stack: StackConfig) -> None:
    # eligibility.go compares `>=` at cluster-autoscaler-1.34.2, `>` from 1.34.3 (66d2242f61).
    container = copy.deepcopy(CHART_WITH_PLATFORM_FLAGS)
    container["command"].append("--scale-down-utilization-threshold=0")
    maps = {("autoscaling", CONFIG_MAP): config_map(platforms_priorities(own_autoscaler_stack))}

    old = messages(findings_for(own_autoscaler_stack, container, maps, release="v1.34.2"))
    fixed = messages(findings_for(own_autoscaler_stack, container, maps, release="v1.34.3"))

    assert old == [
        "It runs with --scale-down-utilization-threshold=0 at v1.34.2, which keeps a node whose"
        " utilization equals the threshold (eligibility.go before kubernetes/autoscaler"
        " 66d2242f61): an empty node of a group without its own threshold is never removed."
    ]
    assert fixed == []


def test_flags_are_read_as_pflag_reads_them() -> None:
    # pflag over Go's flags (kube_flag.InitFlags, main.go): `--name value` for a flag that takes
    # one, a bare bool, `_` read as `-` (WordSepNormalizeFunc), a repeatable flag's every value.
    flags = parse_flags(
        [
            "./cluster-autoscaler",
            "--expander",
            "priority",
            "--balance_similar_node_groups",
            "--balancing-ignore-label=nodegroup-name",
            "--balancing-ignore-label=k8s.amazonaws.com/eniConfig",
        ]
    )

    assert flags == {
        "expander": ["priority"],
        "balance-similar-node-groups": ["true"],
        "balancing-ignore-label": ["nodegroup-name", "k8s.amazonaws.com/eniConfig"],
    }
