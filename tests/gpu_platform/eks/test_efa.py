"""`aws.efa`: a training pool whose nodes reach each other over EFA, one adapter per network
card, in one zone and a cluster placement group, with the EFA device plugin to advertise them."""

from collections.abc import Callable
from pathlib import Path
from typing import Any

import botocore.session
import pytest
from botocore.model import StructureShape

from gpu_platform.config import ConfigError
from gpu_platform.kubernetes.chart_keys import chart_key_paths, key_paths
from gpu_platform.lock.lockfile import IMAGES, Lock, entry
from gpu_platform.offline.program import Plan, run_program
from gpu_platform.offline.stand_ins import aws as stand_in
from gpu_platform.platform_images import EFA_DEVICE_PLUGIN_IMAGE
from gpu_platform.stack_files import stack_config
from gpu_platform.versions import EFA_DEVICE_PLUGIN_CHART
from tests.repository import PROJECT

from .efa_invariants import efa_problems
from .plans import asg_tags, launch_template, node_group, with_aws_options, with_pool

# Its tests plan one EFA pool again and again, and change the program only through its config
# and the lock path (a test's own).
pytestmark = pytest.mark.shared_plans

Config = dict[str, Any]
PlanFor = Callable[[Config], Plan]
SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
PLACEMENT_GROUP = "aws:ec2/placementGroup:PlacementGroup"
RELEASE = "kubernetes:helm.sh/v3:Release"
NAMESPACE = "kubernetes:core/v1:Namespace"


def efa_pool(config: Config, **changes: Any) -> Config:
    """The dev pool on p5.48xlarge (32 EFA interfaces, 8 H100s) in one zone, with EFA."""
    pool = {
        "instanceTypes": ["p5.48xlarge"],
        "accelerator": None,
        "gpusPerNode": None,
        "sharing": {"mode": "exclusive"},
        "zones": ["us-east-1a"],
    }
    with_pool(config, **{**pool, **changes})
    return with_aws_options(config, efa=True)


def cluster_security_group() -> str:
    found = stand_in.get_cluster({"name": "ml-dev", "region": "us-east-1"})
    return str(found["vpcConfig"]["clusterSecurityGroupId"])


def test_each_network_card_gets_an_efa_the_first_also_carrying_ip_traffic(
    dev_config: Config, plan_for: PlanFor
) -> None:
    interfaces = launch_template(plan_for(efa_pool(dev_config))).inputs["networkInterfaces"]

    assert len(interfaces) == 32
    first, *others = interfaces
    assert (first["deviceIndex"], first["networkCardIndex"], first["interfaceType"]) == (
        0,
        0,
        "efa",
    )
    cluster_group, efa_group = first["securityGroups"]
    assert cluster_group == cluster_security_group()
    # Device 1 on the further cards, as the stacks' launch templates have it: another index
    # would be a new launch template version, which replaces every node of the node group.
    assert [
        (i["deviceIndex"], i["networkCardIndex"], i["interfaceType"], i["securityGroups"])
        for i in others
    ] == [(1, card, "efa-only", [efa_group]) for card in range(1, 32)]


def test_efa_only_is_an_interface_type_ec2_takes() -> None:
    model = botocore.session.get_session().get_service_model("ec2")
    shape = model.shape_for("LaunchTemplateInstanceNetworkInterfaceSpecificationRequest")
    assert isinstance(shape, StructureShape)

    assert "<code>efa-only</code>" in shape.members["InterfaceType"].documentation


def test_the_efa_security_group_lets_all_traffic_flow_within_itself(
    dev_config: Config, plan_for: PlanFor
) -> None:
    (group,) = plan_for(efa_pool(dev_config)).of_type(SECURITY_GROUP)

    rule = {"protocol": "-1", "fromPort": 0, "toPort": 0, "self": True}
    assert [{k: r[k] for k in rule} for r in group.inputs["ingress"]] == [rule]
    assert [{k: r[k] for k in rule} for r in group.inputs["egress"]] == [rule]
    assert group.inputs["vpcId"] == stand_in.get_cluster({"name": "ml-dev"})["vpcConfig"]["vpcId"]


def test_the_nodes_start_in_a_cluster_placement_group(
    dev_config: Config, plan_for: PlanFor
) -> None:
    plan = plan_for(efa_pool(dev_config))

    (placement,) = plan.of_type(PLACEMENT_GROUP)
    assert placement.inputs["strategy"] == "cluster"
    assert "placement" in launch_template(plan).property_dependencies


@pytest.mark.parametrize("capacity", ["capacity-block", "reserved"])
def test_a_pool_in_a_reservation_has_no_placement_group_of_its_own(
    dev_config: Config, plan_for: PlanFor, capacity: str
) -> None:
    # A block's instances are placed together already; an instance launched into a placement
    # group matches only reservations made in that group (EC2 user guide, "Capacity
    # Reservations in cluster placement groups"), which one the stack creates cannot have.
    config = efa_pool(dev_config, capacity=capacity)
    config["gpu-platform:pools"][0]["aws"]["capacityReservationId"] = "cr-0123456789abcdef0"

    plan = plan_for(config)

    assert plan.of_type(PLACEMENT_GROUP) == []
    assert len(launch_template(plan).inputs["networkInterfaces"]) == 32


def ec2_documentation(shape: str) -> str:
    """The EC2 API reference's text of a shape, from the installed botocore's EC2 model."""
    model = botocore.session.get_session().get_service_model("ec2")
    return model.shape_for(shape).documentation


def test_ec2_places_a_capacity_blocks_instances_together_itself() -> None:
    # Why a Capacity Block pool gets no placement group: the API reference, shape CapacityBlock.
    assert (
        "Instances that run inside a Capacity Block are automatically placed close together"
        ' inside <a href="http://aws.amazon.com/ec2/ultraclusters/">Amazon EC2 UltraClusters</a>,'
        " for low-latency, petabit-scale, non-blocking networking."
    ) in ec2_documentation("CapacityBlock")


def test_a_capacity_block_cannot_be_bought_into_a_placement_group() -> None:
    # An on-demand reservation may be made in a cluster placement group, and a launch into the
    # group matches only such reservations; a Capacity Block is bought with no group, so one the
    # stack creates would match no block.
    model = botocore.session.get_session().get_service_model("ec2")
    create = model.operation_model("CreateCapacityReservation").input_shape
    purchase = model.operation_model("PurchaseCapacityBlock").input_shape
    assert isinstance(create, StructureShape) and isinstance(purchase, StructureShape)

    assert "PlacementGroupArn" in create.members
    assert sorted(purchase.members) == [
        "CapacityBlockOfferingId",
        "DryRun",
        "InstancePlatform",
        "TagSpecifications",
    ]


def test_a_capacity_block_efa_pool_under_karpenter_selects_no_placement_group(
    plan_for: PlanFor,
) -> None:
    # Karpenter v1.14.1 puts a selected placement group in the launch template of every launch,
    # reserved ones included, beside the block as its CapacityReservationTarget
    # (pkg/providers/launchtemplate/launchtemplate.go, types.go `buildPlacement`): with one,
    # EC2 would look for the block in the group.
    plan = plan_for(stack_config("karpenter-dev", PROJECT))
    node_class = plan.named("h100-block", "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass")

    assert "placementGroupSelector" not in node_class.inputs["spec"]
    assert len(node_class.inputs["spec"]["networkInterfaces"]) == 33
    assert plan.of_type(PLACEMENT_GROUP) == []


def test_the_autoscaler_template_offers_the_efa_devices_and_label(
    dev_config: Config, plan_for: PlanFor
) -> None:
    plan = plan_for(efa_pool(dev_config))
    tags = asg_tags(plan)

    # Without the resource hint a pod asking for vpc.amazonaws.com/efa never scales the pool
    # up from zero (aws_manager.go buildNodeFromTemplate knows only CPU, memory, pods, GPUs).
    assert tags["k8s.io/cluster-autoscaler/node-template/resources/vpc.amazonaws.com/efa"] == "32"
    assert tags["k8s.io/cluster-autoscaler/node-template/label/gpu-platform.io/efa"] == "true"
    assert node_group(plan).inputs["labels"]["gpu-platform.io/efa"] == "true"


def test_the_efa_device_plugin_runs_on_the_efa_pools_only_tolerating_the_gpu_taint(
    dev_config: Config, plan_for: PlanFor
) -> None:
    releases = plan_for(efa_pool(dev_config)).of_type(RELEASE)
    (plugin,) = [r for r in releases if r.inputs["chart"] == EFA_DEVICE_PLUGIN_CHART.name]

    assert plugin.inputs["version"] == "v0.5.30"
    assert plugin.inputs["repositoryOpts"] == {"repo": "https://aws.github.io/eks-charts"}
    # aws/eks-charts stable/aws-efa-k8s-device-plugin values.yaml: `tolerations: []`,
    # `nodeSelector: {}` (the template adds only CriticalAddonsOnly), `updateStrategy:
    # {type: RollingUpdate}`, one node at a time.
    assert plugin.inputs["values"] == {
        # values.yaml's own image, set whole so that the policy pack sees it (by tag here: the
        # tests' lock holds no digest).
        "image": {"repository": EFA_DEVICE_PLUGIN_IMAGE.repository, "tag": "v0.5.20"},
        "tolerations": [
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
            # It must run on a node before its validation, which checks the EFA devices.
            {
                "key": "startup-taint.cluster-autoscaler.kubernetes.io/gpu-validation",
                "operator": "Equal",
                "value": "pending",
                "effect": "NoSchedule",
            },
        ],
        "nodeSelector": {"gpu-platform.io/efa": "true"},
        "updateStrategy": {"rollingUpdate": {"maxUnavailable": "25%"}},
    }


def test_the_efa_device_plugin_runs_in_the_operators_privileged_namespace_not_kube_system(
    dev_config: Config, plan_for: PlanFor
) -> None:
    """Its pod mounts hostPath volumes (`/var/lib/kubelet/device-plugins`, `/dev/infiniband/`:
    aws/eks-charts stable/aws-efa-k8s-device-plugin/templates/daemonset.yaml at v0.5.30), which
    Pod Security admits only at `privileged` (Kubernetes "Pod Security Standards", Baseline:
    "HostPath volumes must be forbidden"). The GPU Operator's namespace is that already, and out
    of kube-system a preview reads the release's record without kube-system's Secrets."""
    plan = plan_for(efa_pool(dev_config))
    (plugin,) = [
        r for r in plan.of_type(RELEASE) if r.inputs["chart"] == EFA_DEVICE_PLUGIN_CHART.name
    ]
    (namespace,) = [
        n for n in plan.of_type(NAMESPACE) if n.inputs["metadata"]["name"] == "gpu-operator"
    ]

    assert plugin.inputs["namespace"] == "gpu-operator"
    assert namespace.inputs["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == (
        "privileged"
    )
    assert namespace.urn in plugin.dependencies
    # The dev stack's autoscaler and Kueue keep theirs in their own namespaces.
    assert plan.outputs["helmReleaseNamespaces"] == [
        "gpu-operator",
        "gpu-platform-system",
        "kueue-system",
    ]


def test_a_moved_efa_device_plugin_starts_only_once_the_old_one_is_gone(
    dev_config: Config, plan_for: PlanFor
) -> None:
    """pulumi-kubernetes replaces a release on a `namespace` change, the new one first unless
    told otherwise (provider/pkg/provider/helm_release.go at v4.32.0)."""
    releases = plan_for(efa_pool(dev_config)).of_type(RELEASE)
    (plugin,) = [r for r in releases if r.inputs["chart"] == EFA_DEVICE_PLUGIN_CHART.name]

    assert plugin.delete_before_replace is True


def test_the_efa_device_plugin_values_are_the_charts_keys(
    dev_config: Config, plan_for: PlanFor
) -> None:
    releases = plan_for(efa_pool(dev_config)).of_type(RELEASE)
    (plugin,) = [r for r in releases if r.inputs["chart"] == EFA_DEVICE_PLUGIN_CHART.name]

    paths = set(key_paths(plugin.inputs["values"], opaque={"nodeSelector"}))

    # The chart's values.yaml sets `updateStrategy.type` only, and its templates/daemonset.yaml
    # renders the whole map (`{{- with .Values.updateStrategy }} ... toYaml`): the key under it
    # is the DaemonSet's own.
    assert paths - chart_key_paths("v0.5.30", "aws-efa-k8s-device-plugin") == {
        "updateStrategy.rollingUpdate.maxUnavailable"
    }


def test_the_efa_device_plugin_runs_by_the_locks_digest(
    dev_config: Config, plan_for: PlanFor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    digest = "sha256:" + "e7" * 32
    # stable/aws-efa-k8s-device-plugin/values.yaml at chart v0.5.30, `image.repository`.
    image = "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-efa-k8s-device-plugin"
    lock = Lock(path=tmp_path / "gpu-platform.lock")
    lock.with_entries(IMAGES, {f"{image}:v0.5.20": entry(digest, "https://ecr.example")}).save()
    monkeypatch.setenv("GPU_PLATFORM_LOCK", str(lock.path))
    releases = plan_for(efa_pool(dev_config)).of_type(RELEASE)
    (plugin,) = [r for r in releases if r.inputs["chart"] == EFA_DEVICE_PLUGIN_CHART.name]

    # stable/aws-efa-k8s-device-plugin at chart v0.5.30: values.yaml's `image.tag` is v0.5.20,
    # and templates/daemonset.yaml renders the image as `<image.repository>:<image.tag>`, so the
    # digest follows the tag.
    assert plugin.inputs["values"]["image"] == {"repository": image, "tag": f"v0.5.20@{digest}"}
    assert EFA_DEVICE_PLUGIN_IMAGE.repository == image


def test_a_stack_without_efa_pools_installs_no_efa_device_plugin(dev_plan: Plan) -> None:
    charts = [r.inputs["chart"] for r in dev_plan.of_type(RELEASE)]

    assert EFA_DEVICE_PLUGIN_CHART.name not in charts
    assert dev_plan.of_type(SECURITY_GROUP) == []


def test_an_efa_pool_in_several_zones_fails_naming_zones(
    dev_config: Config, plan_for: PlanFor
) -> None:
    with pytest.raises(ConfigError) as error:
        plan_for(efa_pool(dev_config, zones=["us-east-1a", "us-east-1b"]))

    assert [p.path for p in error.value.problems] == ["gpu-platform:pools[0].zones"]


def test_an_efa_pool_of_an_instance_type_without_efa_fails_naming_it(
    dev_config: Config, plan_for: PlanFor
) -> None:
    config = with_aws_options(with_pool(dev_config, zones=["us-east-1a"]), efa=True)

    with pytest.raises(ConfigError) as error:
        plan_for(config)

    (problem,) = error.value.problems
    assert problem.path == "gpu-platform:pools[0].instanceTypes"
    assert problem.expected.endswith("without: g4dn.xlarge")


# EFA interfaces per instance type are EC2's (`NetworkInfo.EfaInfo.MaximumEfaInterfaces` of
# DescribeInstanceTypes, as gpu_platform/offline/stand_ins/ec2_data/instance_types.json keeps
# moto's copy): p5.4xlarge 1, p5.48xlarge 32; p5e.48xlarge 32, p5en.48xlarge 16.
MIXED_EFA = (
    "instance types, or families or categories of sizes, that all take the same number of EFA"
    " interfaces with aws.efa: every node of the pool launches with the same interfaces, so a"
    " larger size would run short of EFAs (list one number's sizes in instanceTypes, and make a"
    " pool for each other number); EFA interfaces: "
)


def on_demand_h100(**changes: Any) -> Config:
    """karpenter-dev whose EFA pool (pools[0]) is on-demand H100s, changed by `changes`."""
    config = stack_config("karpenter-dev", PROJECT)
    pool = config["gpu-platform:pools"][0]
    pool["capacity"] = "on-demand"
    del pool["aws"]["capacityReservationId"]
    pool.update(changes)
    return config


def refused(config: Config, stack: str = "karpenter-dev") -> list[tuple[str, Any, str]]:
    with pytest.raises(ConfigError) as error:
        run_program(stack, config, project=PROJECT)
    return [(p.path, p.value, p.expected) for p in error.value.problems]


def test_a_karpenter_efa_pool_of_sizes_with_other_efa_counts_is_refused_naming_them() -> None:
    # Karpenter launches every node with the node class's interfaces and advertises their
    # `efa-only` count, not the instance type's (aws/karpenter-provider-aws v1.14.1,
    # pkg/providers/launchtemplate/launchtemplate.go `generateNetworkInterfaces`,
    # pkg/providers/instancetype/types.go `efas`): sized for the p5.4xlarge, a p5.48xlarge would
    # get 1 EFA of its 32.
    config = on_demand_h100(instanceTypes=["p5.4xlarge", "p5.48xlarge"])

    assert refused(config) == [
        (
            "gpu-platform:pools[0].instanceTypes",
            ["p5.4xlarge", "p5.48xlarge"],
            MIXED_EFA + "p5.4xlarge 1, p5.48xlarge 32",
        )
    ]


def test_a_karpenter_efa_pool_of_a_family_whose_sizes_take_other_efa_counts_is_refused() -> None:
    # The p5 sizes of the platform's table (gpu_platform/eks/max_pods): p5.4xlarge, p5.48xlarge.
    config = on_demand_h100()
    pool = config["gpu-platform:pools"][0]
    del pool["instanceTypes"]
    pool["aws"]["instanceFamilies"] = ["p5"]

    assert refused(config) == [
        (
            "gpu-platform:pools[0].aws.instanceFamilies",
            ["p5"],
            MIXED_EFA + "p5.4xlarge 1, p5.48xlarge 32",
        )
    ]


def test_a_node_group_efa_pool_of_one_shape_but_other_efa_counts_is_refused(
    dev_config: Config,
) -> None:
    # p5e.48xlarge and p5en.48xlarge are one shape to the autoscaler (8 H200s, 192 vCPUs,
    # 2 TiB), but take 32 and 16 EFAs; a launch template lists one set of interfaces.
    config = efa_pool(
        dev_config, instanceTypes=["p5e.48xlarge", "p5en.48xlarge"], zones=["us-east-2a"]
    )
    config["gpu-platform:cluster"]["region"] = "us-east-2"

    assert refused(config, "dev") == [
        (
            "gpu-platform:pools[0].instanceTypes",
            ["p5e.48xlarge", "p5en.48xlarge"],
            MIXED_EFA + "p5en.48xlarge 16, p5e.48xlarge 32",
        )
    ]


def test_a_karpenter_efa_pool_of_sizes_with_one_efa_count_gives_each_node_that_count() -> None:
    # g6e.8xlarge (1 L40S) and g6e.12xlarge (4 L40S) both take 1 EFA.
    config = on_demand_h100(
        name="l40s-efa", instanceTypes=["g6e.8xlarge", "g6e.12xlarge"], accelerator="l40s"
    )

    plan = run_program("karpenter-dev", config, project=PROJECT)

    node_class = plan.named("l40s-efa", "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass")
    assert node_class.inputs["spec"]["networkInterfaces"] == [
        {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
        {"networkCardIndex": 0, "deviceIndex": 1, "interfaceType": "efa-only"},
    ]
    assert efa_problems(plan, config) == []
