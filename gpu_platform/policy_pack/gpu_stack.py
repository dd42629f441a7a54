"""A stack that runs GPU pools also installs the GPU Operator and alerts on GPU health.

Without the operator nothing installs the device plugin, DCGM monitoring and driver
management the pools rely on; without alerts a GPU that falls off the bus (an Xid error) or
overheats goes unnoticed while still being paid for. Advisory by default: an organisation may
install both from another stack that shares the cluster.
"""

import re
from collections.abc import Iterator, Sequence
from functools import partial

import karpenter_pools
from checks import Findings
from gpu_pools import POOL_TYPES, is_gpu_pool
from helm import HELM_TYPES, is_gpu_operator
from props import elements, value_at
from pulumi_policy import (
    EnforcementLevel,
    PolicyResource,
    ReportViolation,
    StackValidationArgs,
    StackValidationPolicy,
)

NAME = "gpu-stack-complete"
PROMETHEUS_RULE_TYPE = "kubernetes:monitoring.coreos.com/v1:PrometheusRule"
DCGM_METRIC = re.compile(r"\bDCGM_FI_[A-Z0-9_]+")


def alerts_on_gpus(rule: PolicyResource) -> bool:
    return any(
        isinstance(expression, str) and DCGM_METRIC.search(expression)
        for group in elements(rule.props, "spec", "groups")
        for expression in (value_at(r, "expr") for r in elements(group, "rules"))
    )


def completeness_problems(
    resources: Sequence[PolicyResource], pools: Sequence[PolicyResource]
) -> Iterator[str]:
    names = ", ".join(f'"{pool.name}"' for pool in pools)
    if not any(r.resource_type in HELM_TYPES and is_gpu_operator(r.props) for r in resources):
        yield (
            f"the stack runs GPU pools ({names}) but installs no GPU Operator (a Helm release of "
            'chart "gpu-operator"), which their nodes need for the device plugin, DCGM '
            "monitoring and driver management. Fix: install it in this stack, or turn this "
            "policy off for stacks whose cluster gets it from another stack."
        )
    rules = [r for r in resources if r.resource_type == PROMETHEUS_RULE_TYPE]
    if not any(alerts_on_gpus(rule) for rule in rules):
        yield (
            f"the stack runs GPU pools ({names}) but declares no GPU alerts (a PrometheusRule "
            "whose rules use DCGM metrics such as DCGM_FI_DEV_XID_ERRORS). Fix: declare GPU "
            "alert rules, or turn this policy off for stacks whose cluster gets them from "
            "another stack."
        )


def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    with Findings(NAME, "the stack", report_violation) as findings:
        pools = [
            pool
            for pool in args.resources
            if pool.resource_type in (*POOL_TYPES, karpenter_pools.NODE_POOL_TYPE)
            and findings.known(f"whether {pool.urn} has GPUs", partial(_has_gpus, pool))
        ]
        if pools:
            findings.check(
                "the GPU Operator and GPU alerts",
                partial(completeness_problems, args.resources, pools),
            )


def _has_gpus(pool: PolicyResource) -> bool:
    if pool.resource_type == karpenter_pools.NODE_POOL_TYPE:
        return karpenter_pools.is_gpu_node_pool(pool.props)
    return is_gpu_pool(pool.resource_type, pool.props)


POLICIES = [
    StackValidationPolicy(
        name=NAME,
        description="A stack with GPU pools installs the GPU Operator and GPU alert rules.",
        validate=validate,
        enforcement_level=EnforcementLevel.ADVISORY,
    )
]
