"""The GPU pool policies on Karpenter NodePools and their EC2NodeClasses."""

from typing import Any

import pytest

from tests.gpu_platform.policy_pack.builders import (
    KARPENTER_NODE_POOL,
    UNKNOWN,
    Analyze,
    Notes,
    ec2_node_class,
    gpu_alert_rules,
    gpu_operator_release,
    gpu_pod_spec,
    karpenter_node_pool,
    messages,
    urn,
    violations,
    workload,
)

NODE_POOL_POLICIES = (
    "karpenter-gpu-pool-scheduling",
    "karpenter-gpu-pool-limits",
    "karpenter-gpu-pool-disruption",
    "karpenter-gpu-pool-budgets",
    "karpenter-gpu-capacity-fallback",
)
NODE_CLASS_POLICY = "karpenter-gpu-node-class"


def requirement(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": list(values)}


def set_capacity_types(pool: Any, operator: str, *values: str) -> None:
    """Replace the NodePool's capacity-type requirement."""
    spec = pool.inputs["spec"]["template"]["spec"]
    spec["requirements"] = [
        r for r in spec["requirements"] if r["key"] != "karpenter.sh/capacity-type"
    ]
    if operator:
        spec["requirements"].append(requirement("karpenter.sh/capacity-type", operator, *values))


def without_fallback_annotation(pool: Any) -> Any:
    del pool.inputs["metadata"]["annotations"]
    return pool


# --- the agreed shape, and what is a GPU NodePool ---------------------------------------------


def test_the_platforms_nodepool_and_node_class_draw_no_verdict(analyze: Analyze) -> None:
    pool, node_class = karpenter_node_pool(), ec2_node_class()

    verdicts = analyze(pool, node_class)

    assert [v for v in violations(verdicts) if v.urn in (pool.urn, node_class.urn)] == []
    for policy in (*NODE_POOL_POLICIES, NODE_CLASS_POLICY):
        assert messages(verdicts, policy) == [], policy


def test_a_nodepool_without_gpus_is_left_alone(analyze: Analyze) -> None:
    general = karpenter_node_pool("general")
    spec = general.inputs["spec"]
    spec["template"]["spec"].update(
        taints=[],
        requirements=[
            requirement("karpenter.k8s.aws/instance-category", "In", "c", "m", "r"),
            # Met by every instance type without GPUs too.
            requirement("karpenter.k8s.aws/instance-gpu-count", "DoesNotExist"),
            requirement("karpenter.k8s.aws/instance-gpu-name", "NotIn", "t4"),
        ],
    )
    del spec["limits"]
    class_of_general = ec2_node_class("general")
    class_of_general.inputs["spec"]["amiSelectorTerms"] = [{"alias": "al2023@latest"}]

    verdicts = analyze(without_fallback_annotation(general), class_of_general)

    assert violations(verdicts) == []


@pytest.mark.parametrize(
    "sign",
    [
        requirement("node.kubernetes.io/instance-type", "In", "m7i.large", "p5.48xlarge"),
        requirement("karpenter.k8s.aws/instance-family", "In", "g6e"),
        # EC2's GPU instance categories, each alone (data-on-eks's GPU NodePools select by
        # category or family and one GPU name).
        requirement("karpenter.k8s.aws/instance-category", "In", "p"),
        requirement("karpenter.k8s.aws/instance-category", "In", "g"),
        requirement("karpenter.k8s.aws/instance-category", "In", "gr"),
        requirement("karpenter.k8s.aws/instance-gpu-count", "Gt", "0"),
        requirement("karpenter.k8s.aws/instance-gpu-manufacturer", "In", "nvidia"),
        requirement("karpenter.k8s.aws/instance-gpu-name", "Exists"),
    ],
    ids=lambda r: f"{r['key']} {r['operator']} {','.join(r['values'])}",
)
def test_a_requirement_that_allows_gpu_instances_makes_a_gpu_nodepool(
    analyze: Analyze, sign: dict[str, Any]
) -> None:
    # No GPU limit, which alone would make it a GPU NodePool: the requirement must.
    pool = karpenter_node_pool()
    pool.inputs["spec"]["template"]["spec"].update(taints=[], requirements=[sign])
    del pool.inputs["spec"]["limits"]

    assert len(messages(analyze(pool), "karpenter-gpu-pool-scheduling")) == 1


def test_a_template_label_selecting_a_gpu_instance_type_makes_a_gpu_nodepool(
    analyze: Analyze,
) -> None:
    # Karpenter adds each template label to the requirements, `In` its value.
    pool = karpenter_node_pool()
    template = pool.inputs["spec"]["template"]
    template["spec"].update(taints=[], requirements=[])
    template["metadata"]["labels"]["node.kubernetes.io/instance-type"] = "g6.xlarge"
    del pool.inputs["spec"]["limits"]

    assert len(messages(analyze(pool), "karpenter-gpu-pool-scheduling")) == 1


def test_gpu_limits_alone_make_a_gpu_nodepool(analyze: Analyze) -> None:
    pool = karpenter_node_pool()
    pool.inputs["spec"]["template"]["spec"].update(taints=[], requirements=[])

    assert len(messages(analyze(pool), "karpenter-gpu-pool-scheduling")) == 1


# --- the NodePool's rules ---------------------------------------------------------------------


def test_a_gpu_nodepool_without_the_gpu_taint_is_reported(analyze: Analyze) -> None:
    pool = karpenter_node_pool()
    spec = pool.inputs["spec"]["template"]["spec"]
    # A startup taint is gone once the node is up, and Karpenter ignores it for scheduling.
    spec["startupTaints"] = spec.pop("taints")

    assert messages(analyze(pool), "karpenter-gpu-pool-scheduling") == [
        "the GPU NodePool has no nvidia.com/gpu=present:NoSchedule taint in "
        "spec.template.spec.taints, so pods that need no GPU can land on its nodes and keep "
        'them from scaling to zero. Fix: add {key: "nvidia.com/gpu", value: "present", '
        'effect: "NoSchedule"}.'
    ]


@pytest.mark.parametrize(
    "taint",
    [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "PreferNoSchedule"},
        {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"},
    ],
    ids=["soft effect", "other value", "cloud spelling"],
)
def test_only_the_gpu_taint_itself_will_do(analyze: Analyze, taint: dict[str, str]) -> None:
    pool = karpenter_node_pool()
    pool.inputs["spec"]["template"]["spec"]["taints"] = [taint]

    assert len(messages(analyze(pool), "karpenter-gpu-pool-scheduling")) == 1


def test_a_gpu_nodepool_without_gpu_limits_is_reported(analyze: Analyze) -> None:
    pool = karpenter_node_pool()
    pool.inputs["spec"]["limits"] = {"cpu": "1000"}

    assert messages(analyze(pool), "karpenter-gpu-pool-limits") == [
        'the GPU NodePool sets no spec.limits["nvidia.com/gpu"], so Karpenter starts GPU nodes '
        "for as long as GPU pods are pending, bounded only by the account's EC2 quotas. Fix: "
        "set it to the most GPUs the pool may run (its largest node count times the GPUs of a "
        "node)."
    ]


def test_on_demand_beside_spot_without_the_annotation_is_reported(analyze: Analyze) -> None:
    pool = without_fallback_annotation(karpenter_node_pool())

    assert messages(analyze(pool), "karpenter-gpu-capacity-fallback") == [
        "the GPU NodePool allows on-demand capacity beside spot (karpenter.sh/capacity-type "
        "allows spot, on-demand), so Karpenter falls back to on-demand GPU nodes at their full "
        "price whenever no spot capacity is to be had. Fix: require only spot in "
        "spec.template.spec.requirements, or, where that fallback is meant, annotate the "
        'NodePool gpu-platform.io/on-demand-fallback: "true".'
    ]


def test_a_nodepool_that_leaves_the_capacity_type_to_karpenter_may_fall_back(
    analyze: Analyze,
) -> None:
    # Without the requirement Karpenter takes reserved, then spot, then on-demand capacity
    # (karpenter.sh docs, concepts/nodepools.md, "Capacity Type").
    pool = without_fallback_annotation(karpenter_node_pool())
    set_capacity_types(pool, "")

    (message,) = messages(analyze(pool), "karpenter-gpu-capacity-fallback")
    assert message.startswith(
        "the GPU NodePool allows on-demand capacity beside reserved or spot (no "
        "karpenter.sh/capacity-type requirement, which allows reserved, spot, on-demand)"
    )


def test_on_demand_beside_reserved_capacity_is_a_fallback_too(analyze: Analyze) -> None:
    pool = without_fallback_annotation(karpenter_node_pool())
    set_capacity_types(pool, "NotIn", "spot")

    (message,) = messages(analyze(pool), "karpenter-gpu-capacity-fallback")
    assert message.startswith("the GPU NodePool allows on-demand capacity beside reserved (")


@pytest.mark.parametrize(
    ("operator", "values"),
    [
        ("In", ["on-demand"]),
        ("In", ["spot"]),
        ("In", ["reserved", "spot"]),
        ("NotIn", ["spot", "reserved"]),
    ],
)
def test_a_nodepool_without_an_on_demand_fallback_passes(
    analyze: Analyze, operator: str, values: list[str]
) -> None:
    pool = without_fallback_annotation(karpenter_node_pool())
    set_capacity_types(pool, operator, *values)

    assert messages(analyze(pool), "karpenter-gpu-capacity-fallback") == []


def test_a_capacity_type_template_label_narrows_the_requirement(analyze: Analyze) -> None:
    pool = without_fallback_annotation(karpenter_node_pool())
    pool.inputs["spec"]["template"]["metadata"]["labels"]["karpenter.sh/capacity-type"] = "spot"

    assert messages(analyze(pool), "karpenter-gpu-capacity-fallback") == []


def test_the_annotation_must_say_true(analyze: Analyze) -> None:
    pool = karpenter_node_pool()
    pool.inputs["metadata"]["annotations"]["gpu-platform.io/on-demand-fallback"] = "yes"

    assert len(messages(analyze(pool), "karpenter-gpu-capacity-fallback")) == 1


# --- the EC2NodeClass -------------------------------------------------------------------------


def node_class_findings(analyze: Analyze, node_class: Any) -> list[str]:
    verdicts = analyze(karpenter_node_pool(), node_class)
    assert {v.urn for v in verdicts if v.policy_name == NODE_CLASS_POLICY} <= {node_class.urn}
    return messages(verdicts, NODE_CLASS_POLICY)


def test_a_node_class_on_the_latest_ami_is_reported(analyze: Analyze) -> None:
    node_class = ec2_node_class()
    node_class.inputs["spec"]["amiSelectorTerms"] = [{"alias": "al2023@latest"}]

    assert node_class_findings(analyze, node_class) == [
        'the EC2NodeClass "l4" of GPU NodePool "l4" selects its AMI by '
        'spec.amiSelectorTerms[0].alias="al2023@latest", so every new AMI release, and the '
        "NVIDIA driver in it, reaches the pool's nodes unreviewed: Karpenter replaces them as "
        "drifted (karpenter.sh docs, managing-amis). Fix: pin a release, e.g. "
        '"al2023@v20260714" or an AMI id, and move it on a canary pool first.'
    ]


def test_a_node_class_without_imdsv2_is_reported(analyze: Analyze) -> None:
    node_class = ec2_node_class()
    node_class.inputs["spec"]["metadataOptions"]["httpTokens"] = "optional"

    assert node_class_findings(analyze, node_class) == [
        'the EC2NodeClass "l4" of GPU NodePool "l4" does not require IMDSv2 '
        '(spec.metadataOptions.httpTokens="optional"), so any process on the node can read its '
        "instance credentials without a session token. Fix: set "
        'spec.metadataOptions.httpTokens to "required".'
    ]


def test_metadata_options_left_to_the_crd_default_require_imdsv2(analyze: Analyze) -> None:
    # The CRD defaults httpTokens to "required" (karpenter-provider-aws v1.14.1
    # pkg/apis/crds/karpenter.k8s.aws_ec2nodeclasses.yaml).
    node_class = ec2_node_class()
    del node_class.inputs["spec"]["metadataOptions"]

    assert node_class_findings(analyze, node_class) == []


def test_a_node_class_with_an_unencrypted_volume_is_reported(analyze: Analyze) -> None:
    node_class = ec2_node_class()
    node_class.inputs["spec"]["blockDeviceMappings"].append(
        {"deviceName": "/dev/xvdb", "ebs": {"volumeSize": "500Gi", "encrypted": False}}
    )

    assert node_class_findings(analyze, node_class) == [
        'the EC2NodeClass "l4" of GPU NodePool "l4" does not encrypt '
        'spec.blockDeviceMappings[1] ("/dev/xvdb", ebs.encrypted=false). Fix: set '
        "ebs.encrypted to true."
    ]


def test_karpenters_default_root_volume_is_encrypted(analyze: Analyze) -> None:
    # Without mappings Karpenter maps an encrypted root volume for every AMI family but Custom
    # (pkg/providers/amifamily/resolver.go, DefaultEBS).
    node_class = ec2_node_class()
    del node_class.inputs["spec"]["blockDeviceMappings"]
    custom = ec2_node_class()
    custom.inputs["spec"].update(amiFamily="Custom", amiSelectorTerms=[{"id": "ami-0abc"}])
    del custom.inputs["spec"]["blockDeviceMappings"]

    assert node_class_findings(analyze, node_class) == []
    assert node_class_findings(analyze, custom) == [
        'the EC2NodeClass "l4" of GPU NodePool "l4" maps no EBS volume, so the root volume is '
        "encrypted only if the account encrypts by default. Fix: map the root device (e.g. "
        '"/dev/xvda") with ebs.encrypted true.'
    ]


def test_a_node_class_outside_the_stack_cannot_be_vouched_for(analyze: Analyze) -> None:
    verdicts = analyze(karpenter_node_pool())

    assert messages(verdicts, NODE_CLASS_POLICY) == [
        'the EC2NodeClass "l4" of GPU NodePool "l4" is not declared in this stack, so its AMI, '
        "IMDSv2 and volume encryption cannot be checked. Fix: declare it in this stack."
    ]
    assert {v.urn for v in verdicts if v.policy_name == NODE_CLASS_POLICY} == {
        urn(KARPENTER_NODE_POOL, "l4")
    }


def test_a_node_class_is_found_through_the_nodepools_dependency_on_it(analyze: Analyze) -> None:
    # A NodePool naming a node class by its computed name depends on it for its spec.
    node_class = ec2_node_class("gpu-l4-3f2a")
    node_class.inputs["spec"]["metadataOptions"]["httpTokens"] = "optional"
    pool = karpenter_node_pool()
    pool.inputs["spec"]["template"]["spec"]["nodeClassRef"]["name"] = UNKNOWN
    pool.property_dependencies["spec"] = (node_class.urn,)

    (message,) = messages(analyze(node_class, pool), NODE_CLASS_POLICY)
    assert message.startswith('the EC2NodeClass "gpu-l4-3f2a" of GPU NodePool "l4" does not')


def test_the_node_classes_of_nodepools_without_gpus_are_not_judged(analyze: Analyze) -> None:
    pool = karpenter_node_pool()
    pool.inputs["spec"]["template"]["spec"]["requirements"] = [
        requirement("karpenter.k8s.aws/instance-category", "In", "m")
    ]
    del pool.inputs["spec"]["limits"]
    node_class = ec2_node_class()
    node_class.inputs["spec"]["metadataOptions"]["httpTokens"] = "optional"

    assert messages(analyze(pool, node_class), NODE_CLASS_POLICY) == []


# --- values not known at preview --------------------------------------------------------------


def test_unknown_requirements_do_not_hide_gpu_limits(analyze: Analyze) -> None:
    pool = karpenter_node_pool()
    pool.inputs["spec"]["template"]["spec"].update(requirements=UNKNOWN, taints=[])

    assert len(messages(analyze(pool), "karpenter-gpu-pool-scheduling")) == 1


def test_a_nodepool_whose_gpus_are_unknown_is_not_judged(
    analyze: Analyze, new_notes: Notes
) -> None:
    pool = without_fallback_annotation(karpenter_node_pool())
    spec = pool.inputs["spec"]
    spec["template"]["spec"].update(requirements=UNKNOWN, taints=[])
    del spec["limits"]

    verdicts = [v for v in analyze(pool) if v.urn == pool.urn]

    assert {(v.policy_name, v.enforcement_level) for v in verdicts} == {
        ("checks-deferred-at-preview", "advisory")
    }
    assert (
        f'policy "karpenter-gpu-pool-scheduling" skipped checks on {pool.urn} until values are '
        "known: karpenter-gpu-pool-scheduling: string value at "
        ".spec.template.spec.requirements can't be known during preview"
    ) in new_notes()


def test_unknown_metadata_options_skip_only_the_imdsv2_check(
    analyze: Analyze, new_notes: Notes
) -> None:
    node_class = ec2_node_class()
    node_class.inputs["spec"]["amiSelectorTerms"] = [{"alias": "al2023@latest"}]
    node_class.inputs["spec"]["metadataOptions"] = UNKNOWN
    node_class.inputs["spec"]["blockDeviceMappings"][0]["ebs"]["encrypted"] = False

    found = node_class_findings(analyze, node_class)

    assert [m.split(", so ")[0].split(" (")[0] for m in found] == [
        'the EC2NodeClass "l4" of GPU NodePool "l4" selects its AMI by '
        'spec.amiSelectorTerms[0].alias="al2023@latest"',
        'the EC2NodeClass "l4" of GPU NodePool "l4" does not encrypt spec.blockDeviceMappings[0]',
    ]
    assert any(
        "karpenter-gpu-node-class" in note
        and "string value at .spec.metadataOptions can't be known during preview" in note
        for note in new_notes()
    )


# --- the stack's rules that read its pools --------------------------------------------------


def test_pods_on_a_karpenter_pool_are_held_to_its_cuda_ceiling(analyze: Analyze) -> None:
    pool = karpenter_node_pool()
    pool.inputs["spec"]["template"]["metadata"]["labels"].update(
        {"gpu-platform.io/nvidia-driver": "570.195.03", "gpu-platform.io/cuda": "12.8"}
    )
    spec = gpu_pod_spec()
    spec["nodeSelector"] = {"gpu-platform.io/pool": "l4"}
    spec["containers"][0]["image"] = "nvcr.io/nvidia/cuda:13.0.1-runtime-ubuntu24.04"
    deployment = workload("Deployment", spec)

    (message,) = messages(analyze(pool, deployment), "gpu-pods-cuda-within-driver")
    assert 'but pool "l4" runs NVIDIA driver 570.195.03' in message


def test_a_stack_of_karpenter_gpu_pools_needs_the_operator_and_alerts(analyze: Analyze) -> None:
    pool, node_class = karpenter_node_pool(), ec2_node_class()

    assert len(messages(analyze(pool, node_class), "gpu-stack-complete")) == 2
    complete = analyze(pool, node_class, gpu_operator_release(), gpu_alert_rules())
    assert messages(complete, "gpu-stack-complete") == []


# --- disruption settings of user-written GPU NodePools -----------------------------------------


def user_written_gpu_node_pool() -> Any:
    """A GPU NodePool as data-on-eks writes one: category and GPU name, no GPU limit."""
    pool = karpenter_node_pool()
    pool.inputs["spec"]["template"]["spec"]["requirements"] = [
        requirement("karpenter.k8s.aws/instance-category", "In", "g"),
        requirement("karpenter.k8s.aws/instance-gpu-name", "In", "l4"),
    ]
    del pool.inputs["spec"]["limits"]
    return pool


def test_a_gpu_nodepool_keeping_the_default_expiry_is_reported(analyze: Analyze) -> None:
    # karpenter.sh_nodepools.yaml at v1.14.1 defaults expireAfter to 720h.
    pool = user_written_gpu_node_pool()
    del pool.inputs["spec"]["template"]["spec"]["expireAfter"]

    assert messages(analyze(pool), "karpenter-gpu-pool-disruption") == [
        "the GPU NodePool leaves spec.template.spec.expireAfter to its default, 720h, so "
        "Karpenter drains every node that old, running jobs and all: expiry is forceful, past "
        "disruption budgets and karpenter.sh/do-not-disrupt (karpenter.sh docs, "
        'concepts/disruption, "Expiration"). Fix: set it to "Never" and roll new AMIs through '
        "drift."
    ]


def test_a_gpu_nodepool_that_expires_its_nodes_is_reported(analyze: Analyze) -> None:
    pool = user_written_gpu_node_pool()
    pool.inputs["spec"]["template"]["spec"]["expireAfter"] = "168h"

    (message,) = messages(analyze(pool), "karpenter-gpu-pool-disruption")
    assert message.startswith(
        'the GPU NodePool sets spec.template.spec.expireAfter="168h", so Karpenter drains'
    )


def auto_mode_gpu_node_pool(expire_after: str) -> Any:
    pool = user_written_gpu_node_pool()
    template = pool.inputs["spec"]["template"]["spec"]
    template["nodeClassRef"] = {"group": "eks.amazonaws.com", "kind": "NodeClass", "name": "gpu"}
    template["expireAfter"] = expire_after
    return pool


def test_an_auto_mode_gpu_nodepool_may_keep_its_nodes_as_long_as_auto_mode_allows(
    analyze: Analyze,
) -> None:
    # EKS user guide, automode/automode.adoc: Auto Mode nodes live at most 21 days.
    assert messages(analyze(auto_mode_gpu_node_pool("504h")), "karpenter-gpu-pool-disruption") == []
    (message,) = messages(analyze(auto_mode_gpu_node_pool("168h")), "karpenter-gpu-pool-disruption")
    assert message.endswith('Fix: set it to "504h", the longest EKS Auto Mode allows.')


@pytest.mark.parametrize("policy", [None, "WhenEmptyOrUnderutilized", "Balanced"])
def test_a_gpu_nodepool_that_consolidates_busy_nodes_is_reported(
    analyze: Analyze, policy: str | None
) -> None:
    # The CRD's default is WhenEmptyOrUnderutilized (karpenter.sh_nodepools.yaml, v1.14.1).
    pool = user_written_gpu_node_pool()
    disruption = pool.inputs["spec"]["disruption"]
    if policy is None:
        del disruption["consolidationPolicy"]
    else:
        disruption["consolidationPolicy"] = policy

    (message,) = messages(analyze(pool), "karpenter-gpu-pool-disruption")
    assert "moves running GPU pods off nodes it finds underused" in message
    shown = "its default, WhenEmptyOrUnderutilized" if policy is None else f'="{policy}"'
    assert shown in message


def test_a_gpu_nodepool_that_only_removes_empty_nodes_and_never_expires_passes(
    analyze: Analyze,
) -> None:
    assert messages(analyze(user_written_gpu_node_pool()), "karpenter-gpu-pool-disruption") == []


@pytest.mark.parametrize("nodes", ["1", "10%", "99%"])
def test_a_gpu_nodepool_with_a_small_budget_without_reasons_is_advised(
    analyze: Analyze, nodes: str
) -> None:
    # helpers.go (kubernetes-sigs/karpenter v1.14.1) takes NotReady and deleting nodes off every
    # budget; one without reasons holds for Empty too.
    pool = user_written_gpu_node_pool()
    pool.inputs["spec"]["disruption"]["budgets"] = [{"nodes": nodes}]

    (message,) = messages(analyze(pool), "karpenter-gpu-pool-budgets")
    assert message.startswith(
        f'the GPU NodePool has a disruption budget of nodes="{nodes}" without reasons, which'
        " also limits the removal of empty nodes"
    )


def test_a_gpu_nodepools_small_budget_for_empty_nodes_is_advised(analyze: Analyze) -> None:
    # The same trap with reasons: helpers.go takes NotReady nodes off the Empty budget too.
    pool = user_written_gpu_node_pool()
    pool.inputs["spec"]["disruption"]["budgets"] = [{"nodes": "1", "reasons": ["Empty"]}]

    (message,) = messages(analyze(pool), "karpenter-gpu-pool-budgets")
    assert message.startswith(
        'the GPU NodePool has a disruption budget of nodes="1" for reasons including Empty,'
    )


def test_a_gpu_nodepool_keeping_the_default_budget_is_advised(analyze: Analyze) -> None:
    # karpenter.sh_nodepools.yaml at v1.14.1: `budgets` defaults to [{nodes: 10%}].
    pool = user_written_gpu_node_pool()
    del pool.inputs["spec"]["disruption"]["budgets"]

    (message,) = messages(analyze(pool), "karpenter-gpu-pool-budgets")
    assert message.startswith(
        "the GPU NodePool leaves spec.disruption.budgets to its default, one budget of"
        " nodes=10% without reasons"
    )


def test_a_small_budget_without_reasons_is_advice_not_a_block(analyze: Analyze) -> None:
    pool = user_written_gpu_node_pool()
    pool.inputs["spec"]["disruption"]["budgets"] = [{"nodes": "1"}]

    levels = [
        v.enforcement_level for v in analyze(pool) if v.policy_name == "karpenter-gpu-pool-budgets"
    ]
    assert levels == ["advisory"]


@pytest.mark.parametrize(
    "budgets",
    [[{"nodes": "100%"}], [{"nodes": "1", "reasons": ["Drifted"]}]],
    ids=["all-nodes", "with-reasons"],
)
def test_budgets_with_reasons_or_of_every_node_pass(
    analyze: Analyze, budgets: list[dict[str, Any]]
) -> None:
    pool = user_written_gpu_node_pool()
    pool.inputs["spec"]["disruption"]["budgets"] = budgets

    assert messages(analyze(pool), "karpenter-gpu-pool-budgets") == []


# --- floating AMI selectors ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("term", "field"),
    [
        ({"alias": "bottlerocket@latest"}, 'alias="bottlerocket@latest"'),
        (
            {
                "ssmParameter": "/aws/service/eks/optimized-ami/1.35/amazon-linux-2023/x86_64/"
                "nvidia/recommended/image_id"
            },
            "ssmParameter=",
        ),
        (
            {
                "ssmParameter": "arn:aws:ssm:us-east-1::parameter/aws/service/bottlerocket/"
                "aws-k8s-1.35-nvidia/x86_64/latest/image_id"
            },
            "ssmParameter=",
        ),
        (
            # Canonical's EKS images move under `current` (its SSM parameter paths).
            {
                "ssmParameter": "/aws/service/canonical/ubuntu/eks/24.04/1.35/stable/current/"
                "amd64/hvm/ebs-gp3/ami-id"
            },
            "ssmParameter=",
        ),
        ({"name": "amazon-eks-node-al2023-x86_64-nvidia-1.35-*"}, "name="),
        ({"tags": {"team": "ml", "release": "2026*"}}, "tags.release="),
    ],
    ids=[
        "alias",
        "ssm-recommended",
        "ssm-latest-arn",
        "ssm-canonical-current",
        "name-wildcard",
        "tag-wildcard",
    ],
)
def test_every_floating_ami_selector_is_reported(
    analyze: Analyze, term: dict[str, Any], field: str
) -> None:
    node_class = ec2_node_class()
    node_class.inputs["spec"]["amiSelectorTerms"] = [term]

    (message,) = node_class_findings(analyze, node_class)
    assert f"selects its AMI by spec.amiSelectorTerms[0].{field}" in message
    assert "reaches the pool's nodes unreviewed" in message


@pytest.mark.parametrize(
    "term",
    [
        {"id": "ami-0123456789abcdef0"},
        # A release's own parameter names its version.
        {
            "ssmParameter": "/aws/service/eks/optimized-ami/1.35/amazon-linux-2023/x86_64/nvidia/"
            "amazon-eks-node-al2023-x86_64-nvidia-1.35-v20260714/image_id"
        },
        {"name": "amazon-eks-node-al2023-x86_64-nvidia-1.35-v20260714"},
        {"tags": {"release": "v20260714"}},
    ],
    ids=["id", "ssm-release", "name", "tags"],
)
def test_pinned_ami_selectors_pass(analyze: Analyze, term: dict[str, Any]) -> None:
    node_class = ec2_node_class()
    node_class.inputs["spec"]["amiSelectorTerms"] = [term]

    assert node_class_findings(analyze, node_class) == []
