"""A Karpenter pool of instance families or categories with one GPU model, as data-on-eks writes
its GPU NodePools (`karpenter.k8s.aws/instance-family In [...]` or `instance-category In [...]`
with `karpenter.k8s.aws/instance-gpu-name In [...]`): its NodePool against the pinned CRD, its
limits from the largest size the platform's table admits, what is refused, and the nodes `fit`
plans for it.

The labels are the provider's well-known ones (aws/karpenter-provider-aws pkg/apis/v1/labels.go
at v1.14.1: `LabelInstanceFamily`, `LabelInstanceCategory`, `LabelInstanceGPUName`), valued as
`computeRequirements` (pkg/providers/instancetype/types.go) sets them from DescribeInstanceTypes:
the family is the name before the `.`, the category the letters before the generation
(`instanceTypeScheme`), the GPU name EC2's in lower case (`lowerKabobCase`). The instance data is
EC2's, as the offline stand-ins hold it.
"""

import copy
import re
from collections.abc import Callable
from typing import Any

import pytest

from gpu_platform.config import ConfigError
from gpu_platform.kubernetes.crd_schemas import validation_errors
from gpu_platform.node_identity import INSTANCE_TYPE_LABEL
from gpu_platform.offline.fit import node_templates
from gpu_platform.offline.plan import read_policy_config
from gpu_platform.offline.program import Plan, run_program
from gpu_platform.stack_files import stack_config
from gpu_platform.versions import KARPENTER_CHART
from tests.gpu_platform.eks.test_karpenter_node_pool import (
    FLEXIBLE_POOL_LABELS,
    cel_failures,
    crd_schema,
)
from tests.repository import PROJECT

Config = dict[str, Any]
PlanFor = Callable[[Config], Plan]
NODE_POOL = "kubernetes:karpenter.sh/v1:NodePool"
POOL = "l4-on-demand"
FAMILIES = "gpu-platform:pools[3].aws.instanceFamilies"
CATEGORIES = "gpu-platform:pools[3].aws.instanceCategories"
# Every g6 size amazon-eks-ami's instance data lists (gpu_platform/eks/max_pods/max_pods.json),
# each with 1 to 8 L4s.
G6_SIZES = {
    "g6.xlarge",
    "g6.2xlarge",
    "g6.4xlarge",
    "g6.8xlarge",
    "g6.12xlarge",
    "g6.16xlarge",
    "g6.24xlarge",
    "g6.48xlarge",
}


def flexible(accelerator: str, **options: list[str]) -> Config:
    """karpenter-dev whose on-demand L4 pool takes `options` (aws.instanceFamilies or
    aws.instanceCategories) and `accelerator` instead of its instance types."""
    config = copy.deepcopy(stack_config("karpenter-dev", PROJECT))
    pool = config["gpu-platform:pools"][3]
    assert pool["name"] == POOL
    del pool["instanceTypes"]
    pool["accelerator"] = accelerator
    pool["aws"].update(options)
    # l4-reserved's on-demand fallback would outrank the family's sizes it lacks, which the plan
    # refuses (gpu_platform/eks/karpenter/fallback_order.py): without it a full reservation
    # leaves the pods to this pool.
    config["gpu-platform:pools"][1]["aws"].pop("onDemandFallback")
    return config


@pytest.fixture(scope="module")
def g6_plan() -> Plan:
    return run_program("karpenter-dev", flexible("l4", instanceFamilies=["g6"]))


def node_pool(plan: Plan) -> dict[str, Any]:
    planned = plan.named(POOL, NODE_POOL)
    return {key: planned.inputs[key] for key in ("apiVersion", "kind", "metadata", "spec")}


def requirements(plan: Plan) -> dict[str, list[str]]:
    found = node_pool(plan)["spec"]["template"]["spec"]["requirements"]
    assert all(r["operator"] == "In" for r in found)
    return {r["key"]: r["values"] for r in found}


def refusal(failed_plan_for: PlanFor, config: Config) -> dict[str, str]:
    plan = failed_plan_for(config)
    assert isinstance(plan.error, ConfigError)
    assert plan.resources == []
    return {p.path: p.expected for p in plan.error.problems}


def test_a_family_pool_requires_its_families_and_its_gpus_ec2_name(g6_plan: Plan) -> None:
    found = requirements(g6_plan)

    assert found["karpenter.k8s.aws/instance-family"] == ["g6"]
    assert found["karpenter.k8s.aws/instance-gpu-name"] == ["l4"]
    assert INSTANCE_TYPE_LABEL not in found


def test_a_category_pool_requires_its_categories(plan_for: PlanFor) -> None:
    # Category g holds one L40S family, g6e.
    found = requirements(plan_for(flexible("l40s", instanceCategories=["g"])))

    assert found["karpenter.k8s.aws/instance-category"] == ["g"]
    assert found["karpenter.k8s.aws/instance-gpu-name"] == ["l40s"]


def test_a_category_pool_spans_the_zones_of_any_of_its_sizes(plan_for: PlanFor) -> None:
    config = flexible("h200-141gb", instanceCategories=["p"])
    config["gpu-platform:pools"] = [config["gpu-platform:pools"][3]]
    config["aws:region"] = config["gpu-platform:cluster"]["region"] = "us-west-2"

    # EC2 offers the p5e.48xlarge in us-west-2c only, the p5en.48xlarge in a, c and d: Karpenter
    # launches a size where it is offered, so the pool needs no zone that offers both.
    assert requirements(plan_for(config))["topology.kubernetes.io/zone"] == [
        "us-west-2a",
        "us-west-2c",
        "us-west-2d",
    ]


def test_a_family_pools_node_pool_validates_against_the_pinned_crd(g6_plan: Plan) -> None:
    obj = node_pool(g6_plan)

    assert validation_errors(obj, KARPENTER_CHART.name, KARPENTER_CHART.version) == []
    assert cel_failures(obj) == []


def test_the_labels_a_flexible_pool_requires_are_well_known_to_the_pinned_crd() -> None:
    # The CEL reading of the rule on a requirement's key takes these three only; the rule itself
    # lists every well-known label of the provider.
    key = crd_schema("NodePool")["properties"]["spec"]["properties"]["template"]["properties"][
        "spec"
    ]["properties"]["requirements"]["items"]["properties"]["key"]
    (rule,) = [
        v["rule"]
        for v in key["x-kubernetes-validations"]
        if v["message"] == 'label domain "karpenter.k8s.aws" is restricted'
    ]
    well_known = set(re.findall(r'"(karpenter\.k8s\.aws/[^"]+)"', rule))

    assert set(FLEXIBLE_POOL_LABELS) <= well_known


def test_a_family_pools_limits_are_max_nodes_of_its_largest_size(g6_plan: Plan) -> None:
    # karpenter-dev's pool has max 2; EC2: g6.48xlarge has 8 L4s and 192 vCPUs.
    assert node_pool(g6_plan)["spec"]["limits"] == {
        "nvidia.com/gpu": "16",
        "cpu": "384",
        "nodes": "2",
    }


def test_fit_plans_a_node_of_every_size_of_the_family(g6_plan: Plan) -> None:
    planned = {t.labels[INSTANCE_TYPE_LABEL] for t in node_templates(g6_plan) if t.pool == POOL}

    assert planned == G6_SIZES


def test_a_stack_with_a_family_pool_plans_with_no_mandatory_violation(
    g6_plan: Plan, analyze_plan
) -> None:
    config = read_policy_config(PROJECT.directory / "policy-config", "karpenter-dev", None)

    verdicts = analyze_plan(g6_plan.resources, config=config)

    assert [v for v in verdicts if v.mandatory] == []


def test_a_category_with_fractions_of_the_gpu_under_its_name_is_refused(
    failed_plan_for: PlanFor,
) -> None:
    # EC2 names the g6f's eighth, quarter and half of an L4 `L4` as well: the NodePool would
    # admit them, and no device plugin config here describes a fraction of a GPU.
    found = refusal(failed_plan_for, flexible("l4", instanceCategories=["g"]))

    assert found[CATEGORIES].startswith("instanceCategories without other GPUs under the GPU")
    assert "g6f.large" in found[CATEGORIES]


def test_a_category_of_a100s_of_both_sizes_is_refused(failed_plan_for: PlanFor) -> None:
    # EC2 names the p4d's 40 GB A100 and the p4de's 80 GB one both `A100`.
    found = refusal(failed_plan_for, flexible("a100-80gb", instanceCategories=["p"]))

    assert "p4d.24xlarge" in found[CATEGORIES]


def test_a_family_the_table_has_no_gpu_type_of_is_refused(failed_plan_for: PlanFor) -> None:
    found = refusal(failed_plan_for, flexible("l4", instanceFamilies=["g9"]))

    assert found[FAMILIES].startswith(
        "instanceFamilies of which the platform's table of GPU instance types"
    )
    assert "g6, g6e" in found[FAMILIES]


def test_a_family_without_the_pools_gpu_is_refused_naming_what_it_has(
    failed_plan_for: PlanFor,
) -> None:
    found = refusal(failed_plan_for, flexible("l4", instanceFamilies=["g6e"]))

    assert found[FAMILIES].endswith("these have l40s")
