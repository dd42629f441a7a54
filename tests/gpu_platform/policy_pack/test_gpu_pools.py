"""The GPU pool policies on EKS node groups (and their launch templates) and GKE node pools."""

import copy
from typing import Any

import pytest

from gpu_platform.offline.program import PlannedResource
from tests.gpu_platform.policy_pack.builders import (
    LAUNCH_TEMPLATE,
    NODE_GROUP,
    UNKNOWN,
    Analyze,
    eks_node_group,
    gke_node_pool,
    launch_template,
    messages,
    resource,
    urn,
    violations,
)

POOL_POLICIES = ("gpu-pool-scheduling", "gpu-pool-scaling")


def found(analyze: Analyze, policy: str, *resources: Any, **config: Any) -> list[str]:
    return messages(analyze(*resources, config={policy: config} if config else None), policy)


@pytest.mark.parametrize(
    "policy", [*POOL_POLICIES, "eks-gpu-node-access", "eks-gpu-launch-template"]
)
def test_the_platforms_eks_node_group_passes(analyze: Analyze, policy: str) -> None:
    template = launch_template()

    assert found(analyze, policy, template, eks_node_group(template)) == []


@pytest.mark.parametrize("policy", [*POOL_POLICIES, "gke-gpu-node-security"])
def test_the_platforms_gke_node_pool_passes(analyze: Analyze, policy: str) -> None:
    assert found(analyze, policy, gke_node_pool()) == []


def test_pools_without_gpus_are_left_alone(analyze: Analyze) -> None:
    general = eks_node_group(name="general")
    general.inputs.update(amiType="AL2023_x86_64_STANDARD", instanceTypes=["m7i.large"], taints=[])
    cpu_pool = gke_node_pool("cpu")
    del cpu_pool.inputs["nodeConfig"]["guestAccelerators"]
    del cpu_pool.inputs["autoscaling"]

    verdicts = analyze(general, cpu_pool)

    # Every node group, GPU or not, is held to IMDSv2 (test_eks_cluster.py).
    assert [
        v
        for v in verdicts
        if v.urn in (general.urn, cpu_pool.urn) and v.policy_name != "eks-node-group-imdsv2"
    ] == []


def test_a_gpu_instance_type_makes_a_gpu_node_group(analyze: Analyze) -> None:
    group = eks_node_group()
    group.inputs.update(amiType="CUSTOM", instanceTypes=["p5.48xlarge"], taints=[])

    assert len(found(analyze, "gpu-pool-scheduling", group)) == 1


def test_an_unknown_ami_type_does_not_hide_gpu_instance_types(analyze: Analyze) -> None:
    group = eks_node_group()
    group.inputs.update(amiType=UNKNOWN, taints=[])

    assert len(found(analyze, "gpu-pool-scheduling", group)) == 1


def test_a_gpu_pool_without_the_gpu_taint_is_reported(analyze: Analyze) -> None:
    group = eks_node_group()
    group.inputs["taints"] = [{"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"}]
    pool = gke_node_pool()
    pool.inputs["nodeConfig"]["taints"] = []

    assert found(analyze, "gpu-pool-scheduling", group, pool) == [
        "the GPU node group has no nvidia.com/gpu=present:NO_SCHEDULE taint in taints, so pods "
        "that need no GPU can land on its nodes and keep them from scaling to zero. Fix: add "
        '{key: "nvidia.com/gpu", value: "present", effect: "NO_SCHEDULE"}.',
        "the GPU node pool has no nvidia.com/gpu=present:NO_SCHEDULE taint in nodeConfig.taints, "
        "so pods that need no GPU can land on its nodes and keep them from scaling to zero. "
        'Fix: add {key: "nvidia.com/gpu", value: "present", effect: "NO_SCHEDULE"}.',
    ]


def test_an_eks_gpu_node_group_needs_an_accelerator_label(analyze: Analyze) -> None:
    group = eks_node_group()
    group.inputs["labels"] = {"team": "ml"}
    aws_labelled = eks_node_group(name="aws-labelled")
    aws_labelled.inputs["labels"] = {"k8s.amazonaws.com/accelerator": "nvidia-l4"}

    assert found(analyze, "gpu-pool-scheduling", group, aws_labelled) == [
        "the GPU node group sets neither accelerator label (gpu-platform.io/accelerator nor "
        "k8s.amazonaws.com/accelerator) in labels, so GPU pods cannot select it, and the "
        "cluster autoscaler does not treat a new node as a GPU node while its device plugin "
        'starts. Fix: set labels["gpu-platform.io/accelerator"] to the GPU model, e.g. "a10g".'
    ]


def test_a_gpu_pool_that_cannot_scale_to_zero_is_reported(analyze: Analyze) -> None:
    group = eks_node_group()
    group.inputs["scalingConfig"]["minSize"] = 1

    assert found(analyze, "gpu-pool-scaling", group) == [
        "the GPU node group keeps nodes running while idle (scalingConfig.minSize=1). Fix: set "
        'it to 0, or list "l4-nodes" in poolsAllowedMinAboveZero if it must stay warm.'
    ]
    assert found(analyze, "gpu-pool-scaling", group, poolsAllowedMinAboveZero=["l4-nodes"]) == []


def test_a_gpu_pool_larger_than_allowed_is_reported(analyze: Analyze) -> None:
    pool = gke_node_pool()
    pool.inputs["autoscaling"] = {"minNodeCount": 0, "maxNodeCount": 40}

    assert found(analyze, "gpu-pool-scaling", pool) == [
        "the GPU node pool can grow to 80 nodes (autoscaling.maxNodeCount=40 per zone x 2 "
        "zones), more than maxNodesPerPool (64). Fix: lower it, or raise maxNodesPerPool."
    ]
    assert found(analyze, "gpu-pool-scaling", pool, maxNodesPerPool=80) == []


def test_a_gke_pool_must_autoscale_with_a_known_total_bound(analyze: Analyze) -> None:
    fixed = gke_node_pool("fixed")
    del fixed.inputs["autoscaling"]
    per_zone = gke_node_pool("per-zone")
    per_zone.inputs["autoscaling"] = {"minNodeCount": 0, "maxNodeCount": 4}
    del per_zone.inputs["nodeLocations"]

    assert found(analyze, "gpu-pool-scaling", fixed, per_zone) == [
        "the GPU node pool does not autoscale (autoscaling is unset), so it can neither scale to "
        "zero nor grow with demand. Fix: set autoscaling.totalMinNodeCount to 0 and "
        "autoscaling.totalMaxNodeCount to its largest size.",
        "the GPU node pool bounds its size per zone (autoscaling.maxNodeCount=4 per zone) "
        "without nodeLocations, so its total size depends on the cluster's zones. Fix: set "
        "autoscaling.totalMaxNodeCount instead, or list nodeLocations.",
    ]


def test_an_eks_gpu_node_group_allows_no_ssh_and_uses_a_launch_template(analyze: Analyze) -> None:
    group = eks_node_group()
    group.inputs["remoteAccess"] = {"ec2SshKey": "ops"}
    del group.inputs["launchTemplate"]

    assert found(analyze, "eks-gpu-node-access", group) == [
        "the GPU node group opens SSH to its nodes (remoteAccess). Fix: remove remoteAccess; "
        "reach nodes through SSM Session Manager if you must.",
        "the GPU node group has no launchTemplate, so IMDSv2 and the encryption of its root "
        "volume are not set by this stack. Fix: give it a launch template that sets "
        'metadataOptions.httpTokens "required" and encrypts its EBS volumes.',
    ]


def test_the_launch_template_must_require_imdsv2_and_encrypt_volumes(analyze: Analyze) -> None:
    template = launch_template()
    template.inputs["metadataOptions"]["httpTokens"] = "optional"
    template.inputs["blockDeviceMappings"].append(
        {"deviceName": "/dev/xvdb", "ebs": {"volumeSize": 500}}
    )

    verdicts = analyze(template, eks_node_group(template))

    assert messages(verdicts, "eks-gpu-launch-template") == [
        'the launch template "l4-launch-template" of GPU node group "l4-nodes" does not require '
        'IMDSv2 (metadataOptions.httpTokens="optional"), so any process on the node can read '
        "its instance credentials without a session token. Fix: set "
        'metadataOptions.httpTokens to "required".',
        'the launch template "l4-launch-template" of GPU node group "l4-nodes" does not encrypt '
        'blockDeviceMappings[1] ("/dev/xvdb", ebs.encrypted=null). Fix: set ebs.encrypted to '
        '"true".',
    ]
    assert {v.urn for v in verdicts if v.policy_name == "eks-gpu-launch-template"} == {
        urn(LAUNCH_TEMPLATE, "l4-launch-template")
    }


def test_a_launch_template_is_also_found_by_name(analyze: Analyze) -> None:
    template = launch_template()
    template.inputs["name"] = "ml-dev-l4"
    template.inputs["metadataOptions"]["httpTokens"] = "optional"
    group = eks_node_group()
    group.inputs["launchTemplate"] = {"name": "ml-dev-l4", "version": "$Latest"}

    assert len(messages(analyze(template, group), "eks-gpu-launch-template")) == 1


def test_a_launch_template_outside_the_stack_cannot_be_vouched_for(analyze: Analyze) -> None:
    group = eks_node_group()

    verdicts = analyze(group)

    assert messages(verdicts, "eks-gpu-launch-template") == [
        'the launch template "lt-0123456789abcdef0" of GPU node group "l4-nodes" is not '
        "declared in this stack, so its IMDSv2 and volume encryption cannot be checked. Fix: "
        "declare it in this stack."
    ]
    assert {v.urn for v in verdicts if v.policy_name == "eks-gpu-launch-template"} == {
        urn(NODE_GROUP, "l4-nodes")
    }


def test_a_launch_template_with_no_ebs_volume_is_reported(analyze: Analyze) -> None:
    template = launch_template()
    del template.inputs["blockDeviceMappings"]

    assert messages(analyze(template, eks_node_group(template)), "eks-gpu-launch-template") == [
        'the launch template "l4-launch-template" of GPU node group "l4-nodes" maps no EBS '
        "volume, so the root volume is encrypted only if the account encrypts by default. Fix: "
        'map the root device (e.g. "/dev/xvda") with ebs.encrypted "true".'
    ]


def test_a_gke_gpu_pool_is_hardened(analyze: Analyze) -> None:
    pool = gke_node_pool()
    config = pool.inputs["nodeConfig"]
    config["shieldedInstanceConfig"] = {"enableSecureBoot": False}
    del config["workloadMetadataConfig"]
    config["metadata"] = {"disable-legacy-endpoints": "false"}

    assert found(analyze, "gke-gpu-node-security", pool) == [
        "the GPU node pool does not turn on secure boot "
        "(nodeConfig.shieldedInstanceConfig.enableSecureBoot), so its nodes can boot a tampered "
        "kernel or unsigned modules. Fix: set it to true; only an Ubuntu pool labelled "
        'gpu-platform.io/driver: "operator", whose driver the GPU Operator builds, may leave it '
        "off.",
        "the GPU node pool does not set nodeConfig.workloadMetadataConfig.mode to GKE_METADATA "
        "(it is null), so pods can read the node's service account credentials. Fix: set it to "
        '"GKE_METADATA".',
        'the GPU node pool does not set nodeConfig.metadata["disable-legacy-endpoints"] to '
        '"true" (it is "false"), leaving the metadata server\'s legacy endpoints open. Fix: set '
        'it to "true".',
    ]


def test_ubuntu_pools_on_the_operators_driver_may_skip_secure_boot(analyze: Analyze) -> None:
    pool = gke_node_pool()
    config = pool.inputs["nodeConfig"]
    config["shieldedInstanceConfig"] = {"enableSecureBoot": False}
    config["labels"]["gpu-platform.io/driver"] = "operator"
    cos_pool = gke_node_pool("cos")
    cos_pool.inputs["nodeConfig"].update(pool.inputs["nodeConfig"], imageType="COS_CONTAINERD")
    config["imageType"] = "UBUNTU_CONTAINERD"

    verdicts = analyze(pool, cos_pool)

    assert [v.urn for v in verdicts if v.policy_name == "gke-gpu-node-security"] == [cos_pool.urn]


def test_a_pool_is_matched_by_its_resource_name_for_a_floor(analyze: Analyze) -> None:
    pool = gke_node_pool("warm-l4")
    pool.inputs["autoscaling"]["totalMinNodeCount"] = 1
    other = resource(NODE_GROUP, "unrelated", {"amiType": "AL2023_x86_64_STANDARD"})

    config = {"poolsAllowedMinAboveZero": ["warm-l4"]}
    assert found(analyze, "gpu-pool-scaling", pool, other, **config) == []
    assert found(analyze, "gpu-pool-scaling", pool, other) == [
        "the GPU node pool keeps nodes running while idle (autoscaling.totalMinNodeCount=1). "
        'Fix: set it to 0, or list "warm-l4" in poolsAllowedMinAboveZero if it must stay warm.'
    ]


# The cluster-wide GKE policies (gke_clusters.py, test_gke_clusters.py) judge the cluster's own
# settings, which these clusters leave out.
CLUSTER_POLICIES = (
    "gke-node-service-account",
    "gke-cluster-access",
    "gke-cluster-hardening",
    "gke-cluster-secrets-encryption",
)


def gke_cluster_with_inline_pools(*pools: dict[str, Any]) -> Any:
    inputs = {"name": "ml-dev", "location": "us-central1", "nodePools": list(pools)}
    return resource("gcp:container/cluster:Cluster", "ml-dev", inputs)


def pool_violations(verdicts: Any) -> list[Any]:
    return [v for v in violations(verdicts) if v.policy_name not in CLUSTER_POLICIES]


def test_a_gpu_node_pool_declared_inside_a_gke_cluster_is_held_to_the_pool_rules(
    analyze: Analyze,
) -> None:
    inline = copy.deepcopy(gke_node_pool().inputs)
    inline["name"] = "l4-inline"
    inline["nodeConfig"]["taints"] = []
    inline["nodeConfig"]["workloadMetadataConfig"] = {"mode": "GCE_METADATA"}
    cpu_only = {"name": "system", "nodeConfig": {"machineType": "e2-standard-4"}}

    verdicts = analyze(gke_cluster_with_inline_pools(cpu_only, inline))

    assert sorted((v.policy_name, v.message.split(":")[0]) for v in pool_violations(verdicts)) == [
        ("gke-gpu-node-security", "nodePools[1]"),
        ("gpu-pool-scheduling", "nodePools[1]"),
    ]


def test_a_gke_cluster_without_gpu_node_pools_is_not_judged(analyze: Analyze) -> None:
    cpu_only = {"name": "system", "nodeConfig": {"machineType": "e2-standard-4"}}

    assert pool_violations(analyze(gke_cluster_with_inline_pools(cpu_only))) == []


def custom_ami_node_group(template: PlannedResource) -> PlannedResource:
    """A node group on a custom AMI: its instance type is in its launch template only."""
    template.inputs["instanceType"] = "p5.48xlarge"
    template.inputs["imageId"] = "ami-0123456789abcdef0"
    group = eks_node_group(template, name="h100-nodes")
    group.inputs["amiType"] = "CUSTOM"
    del group.inputs["instanceTypes"]
    return group


def test_a_custom_ami_node_group_is_a_gpu_pool_by_its_launch_template(analyze: Analyze) -> None:
    template = launch_template()
    group = custom_ami_node_group(template)
    group.inputs["taints"] = []
    group.inputs["scalingConfig"] = {"minSize": 0, "desiredSize": 0, "maxSize": 500}
    group.inputs["remoteAccess"] = {"ec2SshKey": "ops"}

    verdicts = analyze(template, group)

    found = messages(verdicts, "eks-gpu-launch-template-pools")
    assert [m.split(":", 1)[0] for m in found] == [
        "gpu-pool-scheduling (a p5.48xlarge node group by its launch template)",
        "gpu-pool-scaling (a p5.48xlarge node group by its launch template)",
        "eks-gpu-node-access (a p5.48xlarge node group by its launch template)",
    ]
    assert "has no nvidia.com/gpu=present:NO_SCHEDULE taint in taints" in found[0]
    assert "maxSize" in found[1] and "500" in found[1]
    assert "opens SSH" in found[2]
    assert {v.urn for v in verdicts if v.policy_name == "eks-gpu-launch-template-pools"} == {
        urn(NODE_GROUP, "h100-nodes")
    }
    # The resource policies see no GPU in the node group alone.
    assert messages(verdicts, "gpu-pool-scheduling") == []


def test_a_custom_ami_gpu_node_group_that_meets_the_pool_rules_passes(analyze: Analyze) -> None:
    template = launch_template()

    verdicts = analyze(template, custom_ami_node_group(template))

    assert messages(verdicts, "eks-gpu-launch-template-pools") == []


def test_a_custom_ami_gpu_node_groups_launch_template_must_require_imdsv2(
    analyze: Analyze,
) -> None:
    template = launch_template()
    group = custom_ami_node_group(template)
    template.inputs["metadataOptions"]["httpTokens"] = "optional"

    (message,) = messages(analyze(template, group), "eks-gpu-launch-template")
    assert message.startswith(
        'the launch template "l4-launch-template" of GPU node group "h100-nodes" does not '
        "require IMDSv2"
    )


def test_a_node_group_on_a_cpu_launch_template_is_no_gpu_pool(analyze: Analyze) -> None:
    template = launch_template()
    group = custom_ami_node_group(template)
    template.inputs["instanceType"] = "m7i.2xlarge"
    group.inputs["taints"] = []

    verdicts = analyze(template, group)

    assert messages(verdicts, "eks-gpu-launch-template-pools") == []


def test_a_custom_ami_gpu_node_group_takes_the_scaling_policys_settings(
    analyze: Analyze,
) -> None:
    template = launch_template()
    group = custom_ami_node_group(template)
    group.inputs["scalingConfig"] = {"minSize": 1, "desiredSize": 1, "maxSize": 8}
    config = {"gpu-pool-scaling": {"poolsAllowedMinAboveZero": ["h100-nodes"]}}

    assert len(messages(analyze(template, group), "eks-gpu-launch-template-pools")) == 1
    assert messages(analyze(template, group, config=config), "eks-gpu-launch-template-pools") == []


def zone_groups(*maxima: int) -> list[PlannedResource]:
    """The dev pool as one node group per zone, with these maxima."""
    groups = []
    for zone, maximum in zip(("us-east-1a", "us-east-1b", "us-east-1c"), maxima, strict=False):
        group = eks_node_group(name=f"l4-nodes-{zone}")
        group.inputs["scalingConfig"] = {"minSize": 0, "desiredSize": 0, "maxSize": maximum}
        groups.append(group)
    return groups


def test_a_pool_over_several_node_groups_is_bounded_in_all(analyze: Analyze) -> None:
    verdicts = analyze(*zone_groups(30, 30, 30))

    assert messages(verdicts, "gpu-pool-total-size") == [
        'GPU pool "l4" can grow to 90 nodes over its 3 node groups (l4-nodes-us-east-1a 30, '
        "l4-nodes-us-east-1b 30, l4-nodes-us-east-1c 30), more than maxNodesPerPool (64). "
        "Fix: lower the pool's max, or raise maxNodesPerPool in the config of gpu-pool-scaling."
    ]
    # Each group alone is within the limit.
    assert messages(verdicts, "gpu-pool-scaling") == []


def test_a_pool_over_several_node_groups_takes_the_scaling_policys_limit(
    analyze: Analyze,
) -> None:
    config = {"gpu-pool-scaling": {"maxNodesPerPool": 96}}

    assert messages(analyze(*zone_groups(30, 30, 30), config=config), "gpu-pool-total-size") == []
