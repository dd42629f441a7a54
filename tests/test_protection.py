"""`gpu-platform:protect` guards what costs an outage or lost work to lose, and nothing that
ordinary changes replace: the node groups and node pools themselves, the GPU Operator's namespace
and release and the Prometheus stack the platform installs, but not their roles, policy
attachments, launch templates, Auto Scaling group tags or service accounts. A protected resource
cannot be deleted or replaced (`pulumi up` refuses), so a change that would replace one of those
children would freeze a protected stack.

The change tests plan prod before and after an ordinary change and check that no protected
resource would be deleted or replaced: each is still declared, under the same URN, and none of
the inputs its API cannot update in place changed."""

import copy
from collections.abc import Callable
from typing import Any

import botocore.session
import pytest

from gpu_platform.offline.program import Plan, PlannedResource, run_program
from gpu_platform.stack_files import stack_config
from tests.repository import PROJECT
from tests.shared_plans import shared_plan

Config = dict[str, Any]
NODE_POOL = "kubernetes:karpenter.sh/v1:NodePool"


def eks_node_group_inputs_updated_in_place() -> frozenset[str]:
    """What EKS changes on a live node group: UpdateNodegroupConfig and UpdateNodegroupVersion
    (botocore's EKS model), and its tags (TagResource). Any other input makes a new group."""
    eks = botocore.session.get_session().get_service_model("eks")
    members: set[str] = set()
    for operation in ("UpdateNodegroupConfig", "UpdateNodegroupVersion"):
        shape = eks.operation_model(operation).input_shape
        assert shape is not None
        members |= set(shape.members)
    # The provider's names for the same members.
    renamed = {"force": "forceUpdateVersion"}
    return frozenset({renamed.get(m, m) for m in members} | {"tags", "tagsAll"})


def replacing_changes(resource: PlannedResource, after: PlannedResource) -> set[str]:
    """The inputs changed from `resource` to `after` that replace the resource."""
    changed = {
        key
        for key in resource.inputs.keys() | after.inputs.keys()
        if resource.inputs.get(key) != after.inputs.get(key)
    }
    if resource.type == "aws:eks/nodeGroup:NodeGroup":
        return changed - eks_node_group_inputs_updated_in_place()
    if resource.type == "kubernetes:helm.sh/v3:Release":
        # Helm upgrades a release in place; it cannot rename or move one.
        return changed & {"name", "namespace"}
    if resource.type in ("kubernetes:core/v1:Namespace", NODE_POOL):
        # A Kubernetes object's name is its identity.
        return {"metadata"} & changed if _name(resource) != _name(after) else set()
    raise AssertionError(f"no replacement rule for protected {resource.type}")


def _name(resource: PlannedResource) -> str:
    return resource.inputs["metadata"]["name"]


def protected_losses(before: Plan, after: Plan) -> dict[str, Any]:
    """Protected resources of `before` that `after` would delete or replace, and why."""
    remaining = {r.urn: r for r in after.resources}
    losses: dict[str, Any] = {}
    for resource in before.resources:
        if not resource.protect:
            continue
        if resource.urn not in remaining:
            losses[resource.urn] = "deleted"
        elif changes := replacing_changes(resource, remaining[resource.urn]):
            losses[resource.urn] = sorted(changes)
    return losses


@pytest.fixture(scope="module")
def prod_config() -> Config:
    return stack_config("prod", PROJECT)


@pytest.fixture(scope="module")
def prod_plan(prod_config: Config) -> Plan:
    return run_program("prod", config=prod_config, project=PROJECT)


def test_prod_protects_exactly_its_node_groups_and_the_gpu_operator(prod_plan: Plan) -> None:
    protected = sorted((r.type, r.name) for r in prod_plan.resources if r.protect)

    assert protected == [
        ("aws:eks/nodeGroup:NodeGroup", "a100-canary-nodes"),
        ("aws:eks/nodeGroup:NodeGroup", "a100-inference-nodes"),
        ("aws:eks/nodeGroup:NodeGroup", "h100-training-nodes"),
        ("kubernetes:core/v1:Namespace", "gpu-operator"),
        ("kubernetes:helm.sh/v3:Release", "gpu-operator"),
    ]


def test_tenant_namespaces_stay_unprotected(prod_plan: Plan) -> None:
    tenants = [
        r for r in prod_plan.of_type("kubernetes:core/v1:Namespace") if r.name.startswith("ml-")
    ]

    assert tenants and not any(r.protect for r in tenants)


def test_the_node_groups_own_roles_and_tags_are_not_protected(prod_plan: Plan) -> None:
    children = [
        r
        for group in prod_plan.of_type("gpu-platform:eks:GpuNodeGroup")
        for r in prod_plan.children_of(group)
        if r.type != "aws:eks/nodeGroup:NodeGroup"
    ]

    assert {r.type for r in children} >= {
        "aws:iam/role:Role",
        "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
        "aws:ec2/launchTemplate:LaunchTemplate",
        "aws:autoscaling/tag:Tag",
    }
    assert not any(r.protect for r in children)


def new_mig_profile(config: Config) -> None:
    # On a100-inference and on its canary, whose sharing must stay that of the pool it tries.
    for pool in config["gpu-platform:pools"]:
        if pool["name"] in ("a100-inference", "a100-canary"):
            pool["sharing"]["profile"] = "all-3g.40gb"


def node_role_with_cni_policy(config: Config) -> None:
    config["gpu-platform:cluster"]["cniPolicyOnNodeRole"] = True


def relabelled_pool(config: Config) -> None:
    config["gpu-platform:pools"][0]["labels"] = {"team": "research"}


def shorter_idle_time(config: Config) -> None:
    config.setdefault("gpu-platform:autoscaler", {})["gpuNodeIdleMinutes"] = 5


ORDINARY_CHANGES: dict[str, Callable[[Config], None]] = {
    "a new MIG profile": new_mig_profile,
    "cniPolicyOnNodeRole turned on": node_role_with_cni_policy,
    "a new node label, and with it an Auto Scaling group tag": relabelled_pool,
    "an autoscaler tag's new value": shorter_idle_time,
}


@pytest.mark.parametrize("change", ORDINARY_CHANGES.values(), ids=ORDINARY_CHANGES.keys())
def test_an_ordinary_change_deletes_or_replaces_no_protected_resource(
    prod_config: Config, prod_plan: Plan, change: Callable[[Config], None]
) -> None:
    changed = copy.deepcopy(prod_config)
    change(changed)

    after = run_program("prod", config=changed, project=PROJECT)

    assert after.error is None
    assert [(r.urn, r.inputs) for r in after.resources] != [
        (r.urn, r.inputs) for r in prod_plan.resources
    ], "the change changed nothing"
    assert protected_losses(prod_plan, after) == {}


def test_a_change_of_instance_type_would_replace_a_protected_node_group(
    prod_config: Config, prod_plan: Plan
) -> None:
    changed = copy.deepcopy(prod_config)
    changed["gpu-platform:pools"][0]["instanceTypes"] = ["p5.4xlarge"]

    losses = protected_losses(prod_plan, run_program("prod", config=changed, project=PROJECT))

    assert list(losses.values()) == [["instanceTypes"]]


@pytest.fixture(scope="module")
def protected_karpenter_config() -> Config:
    config = copy.deepcopy(stack_config("karpenter-dev", PROJECT))
    config["gpu-platform:protect"] = True
    return config


@pytest.fixture(scope="module")
def protected_karpenter_plan(protected_karpenter_config: Config) -> Plan:
    return run_program("karpenter-dev", config=protected_karpenter_config, project=PROJECT)


def test_a_protected_karpenter_stack_protects_its_node_pools_and_karpenters_releases(
    protected_karpenter_plan: Plan,
) -> None:
    protected = sorted((r.type, r.name) for r in protected_karpenter_plan.resources if r.protect)

    assert protected == [
        ("kubernetes:core/v1:Namespace", "gpu-operator"),
        ("kubernetes:helm.sh/v3:Release", "gpu-operator"),
        ("kubernetes:helm.sh/v3:Release", "karpenter"),
        ("kubernetes:helm.sh/v3:Release", "karpenter-crd"),
        (NODE_POOL, "h100-block"),
        (NODE_POOL, "l4-on-demand"),
        (NODE_POOL, "l4-reserved"),
        (NODE_POOL, "t4-spot"),
    ]


def test_the_node_classes_are_not_protected(protected_karpenter_plan: Plan) -> None:
    # Deleting an EC2NodeClass takes no node down: its finalizer waits for the NodeClaims that
    # use it to go (karpenter-provider-aws v1.14.1 pkg/controllers/nodeclass/controller.go).
    node_classes = protected_karpenter_plan.of_type("kubernetes:karpenter.k8s.aws/v1:EC2NodeClass")

    assert node_classes and not any(r.protect for r in node_classes)


def longer_consolidation_wait(config: Config) -> None:
    config["gpu-platform:karpenter"] = {"consolidateAfterMinutes": 30}


def larger_pool(config: Config) -> None:
    config["gpu-platform:pools"][0]["max"] = 6


ORDINARY_KARPENTER_CHANGES: dict[str, Callable[[Config], None]] = {
    "a new node label": relabelled_pool,
    "a longer consolidation wait": longer_consolidation_wait,
    "a larger pool": larger_pool,
}


@pytest.mark.parametrize(
    "change", ORDINARY_KARPENTER_CHANGES.values(), ids=ORDINARY_KARPENTER_CHANGES.keys()
)
def test_an_ordinary_change_deletes_or_replaces_no_protected_node_pool(
    protected_karpenter_config: Config,
    protected_karpenter_plan: Plan,
    change: Callable[[Config], None],
) -> None:
    changed = copy.deepcopy(protected_karpenter_config)
    change(changed)

    after = run_program("karpenter-dev", config=changed, project=PROJECT)

    assert after.error is None
    assert [(r.urn, r.inputs) for r in after.resources] != [
        (r.urn, r.inputs) for r in protected_karpenter_plan.resources
    ], "the change changed nothing"
    assert protected_losses(protected_karpenter_plan, after) == {}


def test_removing_a_pool_would_delete_its_protected_node_pool(
    protected_karpenter_config: Config, protected_karpenter_plan: Plan
) -> None:
    changed = copy.deepcopy(protected_karpenter_config)
    # t4-spot; the smoke test runs on l4-on-demand.
    changed["gpu-platform:pools"] = [
        p for p in changed["gpu-platform:pools"] if p["name"] != "t4-spot"
    ]

    after = run_program("karpenter-dev", config=changed, project=PROJECT)

    assert after.error is None
    assert protected_losses(protected_karpenter_plan, after) == {
        "urn:pulumi:karpenter-dev::gpu-platform::gpu-platform:eks:KarpenterGpuNodePool"
        f"${NODE_POOL}::t4-spot": "deleted"
    }


@pytest.mark.parametrize("stack", ["dev", "gke-dev", "karpenter-dev"])
def test_other_stacks_protect_nothing(stack: str) -> None:
    assert not any(r.protect for r in shared_plan(stack).resources)


def test_gke_pools_are_protected_but_not_their_service_accounts(
    gke_config: Config, plan_for: Callable[[Config], Plan]
) -> None:
    gke_config["gpu-platform:protect"] = True
    gke_config["gpu-platform:cluster"]["kubeconfigContext"] = "ml-dev"

    plan = plan_for(gke_config)

    pools = plan.of_type("gcp:container/nodePool:NodePool")
    assert pools and all(r.protect for r in pools)
    assert not any(r.protect for r in plan.of_type("gcp:serviceaccount/account:Account"))


def test_an_installed_prometheus_stack_is_protected(
    dev_config: Config, plan_for: Callable[[Config], Plan]
) -> None:
    dev_config["gpu-platform:protect"] = True
    dev_config["gpu-platform:monitoring"] = {"installPrometheusStack": True}

    plan = plan_for(dev_config)

    monitoring = plan.named("gpu-monitoring", "gpu-platform:kubernetes:GpuMonitoring")
    assert {(r.type, r.protect) for r in plan.children_of(monitoring)} >= {
        ("kubernetes:core/v1:Namespace", True),
        ("kubernetes:helm.sh/v3:Release", True),
        ("kubernetes:monitoring.coreos.com/v1:PrometheusRule", False),
    }
