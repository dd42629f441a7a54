"""Kueue from its pinned chart: a ResourceFlavor per pool, each tenant's ClusterQueue at its
namespace's own quotas in one cohort, a LocalQueue in each tenant namespace, and everything
Kueue's webhooks judge waiting for its release."""

import copy
import re
from typing import Any

import pytest
import yaml

from gpu_platform.config import ConfigError
from gpu_platform.config.problems import MISSING
from gpu_platform.kubernetes.chart_keys import chart_key_paths, key_paths
from gpu_platform.kubernetes.crd_schemas import validation_errors
from gpu_platform.offline.program import Plan, PlannedResource
from tests.gpu_platform.kubernetes.quota_invariants import kueue_quota_problems
from tests.repository import ROOT
from tests.stack_variants import with_mig_mixed_pool

KUEUE = "kueue.x-k8s.io/v1beta2"
FLAVOR = f"kubernetes:{KUEUE}:ResourceFlavor"
CLUSTER_QUEUE = f"kubernetes:{KUEUE}:ClusterQueue"
LOCAL_QUEUE = f"kubernetes:{KUEUE}:LocalQueue"
RELEASE = "kubernetes:helm.sh/v3:Release"
NAMESPACE = "kubernetes:core/v1:Namespace"
GPU_TOLERATION = {
    "key": "nvidia.com/gpu",
    "operator": "Equal",
    "value": "present",
    "effect": "NoSchedule",
}


def release(plan: Plan) -> PlannedResource:
    return plan.named("kueue", RELEASE)


def manager_config(plan: Plan) -> dict[str, Any]:
    values = release(plan).inputs["values"]
    return yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])


@pytest.fixture
def mig_plan(dev_config, shared_plan_for) -> Plan:
    return shared_plan_for(with_mig_mixed_pool(dev_config))


def test_each_pool_is_a_flavor_by_its_label_tolerating_its_lasting_taints_only(dev_plan) -> None:
    # The dev pool's nodes are validated: they join with the validation taint, which no
    # workload may tolerate (gpu_platform/kubernetes/node_validation/names.py).
    (flavor,) = dev_plan.of_type(FLAVOR)

    assert flavor.inputs["metadata"] == {"name": "t4-shared"}
    assert flavor.inputs["spec"] == {
        "nodeLabels": {"gpu-platform.io/pool": "t4-shared"},
        "tolerations": [GPU_TOLERATION],
    }


def test_a_tenants_cluster_queue_holds_its_namespaces_quota_in_the_cohort(dev_plan) -> None:
    queue = dev_plan.named("ml-sandbox-cluster-queue", CLUSTER_QUEUE)

    assert queue.inputs["metadata"] == {"name": "ml-sandbox"}
    assert queue.inputs["spec"] == {
        "cohortName": "gpu-tenants",
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ml-sandbox"}},
        "queueingStrategy": "BestEffortFIFO",
        # Kueue's default `whenCanBorrow: MayStopSearch` stops at the first flavor where a pod
        # set fits by borrowing; TryNextFlavor goes on to one where it fits within the share
        # (`shouldTryNextFlavor` and `isPreferred`, pkg/scheduler/flavorassigner/
        # flavorassigner.go at v0.19.2; the field and its enum in the pinned CRD, below).
        "flavorFungibility": {"whenCanBorrow": "TryNextFlavor"},
        # The dev stack's `sharedGpuQuota: 8` on its one time-sliced pool.
        "resourceGroups": [
            {
                "coveredResources": ["nvidia.com/gpu"],
                "flavors": [
                    {
                        "name": "t4-shared",
                        "resources": [
                            {"name": "nvidia.com/gpu", "nominalQuota": 8, "borrowingLimit": 0}
                        ],
                    }
                ],
            }
        ],
        # Nothing preempted within the queue, so that the smoke test's priority evicts nothing.
        "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "Never"},
    }
    assert validation_errors(queue.inputs, "kueue", "0.19.2") == []


def test_the_namespaces_local_queue_is_onto_its_cluster_queue(dev_plan) -> None:
    queue = dev_plan.named("ml-sandbox-local-queue", LOCAL_QUEUE)

    # `default`: the LocalQueue Kueue's webhooks give a job that names none
    # (`constants.DefaultLocalQueueName`, pkg/controller/constants/constants.go, applied by
    # pkg/controller/jobframework/defaults.go at v0.19.2).
    assert queue.inputs["metadata"] == {"name": "default", "namespace": "ml-sandbox"}
    assert queue.inputs["spec"] == {"clusterQueue": "ml-sandbox"}


def test_a_mig_pool_is_a_group_of_its_slice_at_the_namespaces_mig_quota(mig_plan) -> None:
    queue = mig_plan.named("ml-sandbox-cluster-queue", CLUSTER_QUEUE)

    groups = {
        tuple(g["coveredResources"]): g["flavors"] for g in queue.inputs["spec"]["resourceGroups"]
    }
    assert groups[("nvidia.com/mig-1g.10gb",)] == [
        {
            "name": "a100-mig",
            "resources": [
                {"name": "nvidia.com/mig-1g.10gb", "nominalQuota": 8, "borrowingLimit": 0}
            ],
        }
    ]


@pytest.mark.parametrize("fixture", ["dev_plan", "mig_plan", "split_plan"])
def test_cluster_queues_and_resource_quotas_agree(fixture: str, request) -> None:
    assert kueue_quota_problems(request.getfixturevalue(fixture)) == []


def test_a_cluster_queue_off_its_resource_quota_is_found(dev_plan) -> None:
    queue = dev_plan.named("ml-sandbox-cluster-queue", CLUSTER_QUEUE)
    queue.inputs["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = 9

    assert kueue_quota_problems(dev_plan) == [
        "ClusterQueue ml-sandbox holds 9 nvidia.com/gpu over its flavors with what it borrows,"
        " its namespace's ResourceQuota 8"
    ]


def test_two_flavors_of_one_resource_are_summed_against_its_resource_quota(dev_plan) -> None:
    # Two pools handing out nvidia.com/gpu at 8 each: Kueue would admit 16 while the
    # namespace's ResourceQuota runs 8, though each flavor alone matches it.
    queue = dev_plan.named("ml-sandbox-cluster-queue", CLUSTER_QUEUE)
    flavors = queue.inputs["spec"]["resourceGroups"][0]["flavors"]
    flavors.append({**copy.deepcopy(flavors[0]), "name": "l4-shared"})

    assert kueue_quota_problems(dev_plan) == [
        "ClusterQueue ml-sandbox holds 16 nvidia.com/gpu over its flavors with what it borrows,"
        " its namespace's ResourceQuota 8"
    ]


def with_a_second_pool(config: dict[str, Any], **queue: Any) -> dict[str, Any]:
    """`config` with a second pool of the dev pool's replicas, `t4-shared-b`, the namespace's
    queue set to `queue`."""
    pool = copy.deepcopy(config["gpu-platform:pools"][0])
    config["gpu-platform:pools"].append({**pool, "name": "t4-shared-b"})
    config["gpu-platform:namespaces"][0]["queue"] = queue
    return config


@pytest.fixture
def split_config(dev_config) -> dict[str, Any]:
    """The dev namespace's `sharedGpuQuota: 8` split between two pools of replicas, each
    borrowing up to 2 more."""
    split = {"t4-shared": 5, "t4-shared-b": 3}
    return with_a_second_pool(dev_config, poolQuotas=split, borrowingLimit=2)


@pytest.fixture
def split_plan(split_config, shared_plan_for) -> Plan:
    return shared_plan_for(split_config)


def test_a_flavor_off_its_share_is_found_though_the_sums_agree(split_config, split_plan) -> None:
    queue = split_plan.named("ml-sandbox-cluster-queue", CLUSTER_QUEUE)
    for flavor in queue.inputs["spec"]["resourceGroups"][0]["flavors"]:
        flavor["resources"][0]["nominalQuota"] = 4

    assert kueue_quota_problems(split_plan) == []
    assert kueue_quota_problems(split_plan, split_config) == [
        "ClusterQueue ml-sandbox holds 4 nvidia.com/gpu on t4-shared, its namespace's share"
        " there 5",
        "ClusterQueue ml-sandbox holds 4 nvidia.com/gpu on t4-shared-b, its namespace's share"
        " there 3",
    ]


def test_a_split_quota_is_each_pools_nominal_quota_and_what_both_borrow_is_allowed(
    split_plan,
) -> None:
    queue = split_plan.named("ml-sandbox-cluster-queue", CLUSTER_QUEUE)

    assert queue.inputs["spec"]["resourceGroups"] == [
        {
            "coveredResources": ["nvidia.com/gpu"],
            "flavors": [
                {
                    "name": name,
                    "resources": [
                        {"name": "nvidia.com/gpu", "nominalQuota": share, "borrowingLimit": 2}
                    ],
                }
                for name, share in (("t4-shared", 5), ("t4-shared-b", 3))
            ],
        }
    ]
    # Kueue admits on each flavor up to its nominalQuota and borrowingLimit, never bounding a
    # resource over its flavors (`available`, pkg/cache/scheduler/resource_node.go at v0.19.2):
    # 5 + 2 on one pool and 3 + 2 on the other, which the ResourceQuota allows together.
    quota = split_plan.named("ml-sandbox-gpu-quota", "kubernetes:core/v1:ResourceQuota")
    assert quota.inputs["spec"]["hard"]["requests.nvidia.com/gpu"] == "12"
    assert validation_errors(queue.inputs, "kueue", "0.19.2") == []


def test_two_pools_of_a_queued_tenants_resource_without_a_split_are_refused(
    dev_config, failed_plan_for
) -> None:
    plan = failed_plan_for(with_a_second_pool(dev_config))

    assert isinstance(plan.error, ConfigError), plan.error
    (problem,) = plan.error.problems
    assert (problem.path, problem.value) == (
        "gpu-platform:namespaces[0].queue.poolQuotas",
        MISSING,
    )
    assert problem.expected.startswith(
        "a share of gpu-platform:namespaces[0].sharedGpuQuota (8) for each of pools t4-shared,"
        " t4-shared-b, which all hand out the GPUs it caps, the shares adding up to at most 8"
        " (given: none, t4-shared, t4-shared-b missing), such as {t4-shared: 4, t4-shared-b: 4}:"
    )
    assert problem.expected.endswith(
        "or take the namespace out of the queues (gpu-platform:namespaces[0].queue.enabled"
        " false), the place for work Kueue does not queue (docs/queues.md)"
    )


def test_a_quota_of_none_needs_no_split_and_borrows_on_each_pool(dev_config, plan_for) -> None:
    namespace = dev_config["gpu-platform:namespaces"][0]
    namespace.update(sharedGpuQuota=0)
    del namespace["smokeTestPool"]

    plan = plan_for(with_a_second_pool(dev_config, borrowingLimit=2))

    queue = plan.named("ml-sandbox-cluster-queue", CLUSTER_QUEUE)
    assert [
        (f["name"], f["resources"][0]["nominalQuota"], f["resources"][0]["borrowingLimit"])
        for f in queue.inputs["spec"]["resourceGroups"][0]["flavors"]
    ] == [("t4-shared", 0, 2), ("t4-shared-b", 0, 2)]
    quota = plan.named("ml-sandbox-gpu-quota", "kubernetes:core/v1:ResourceQuota")
    assert quota.inputs["spec"]["hard"]["requests.nvidia.com/gpu"] == "4"


def test_a_split_off_its_quota_or_of_pools_that_share_nothing_is_refused_by_key(
    dev_config, failed_plan_for
) -> None:
    config = with_a_second_pool(
        dev_config, poolQuotas={"t4-shared": 5, "t4-shared-b": 4, "t4-canary": 1, "h100": 2}
    )
    with_a_canary(config)

    plan = failed_plan_for(config)

    assert isinstance(plan.error, ConfigError), plan.error
    assert {p.path: p.value for p in plan.error.problems} == {
        "gpu-platform:namespaces[0].queue.poolQuotas.t4-canary": 1,
        "gpu-platform:namespaces[0].queue.poolQuotas.h100": 2,
        "gpu-platform:namespaces[0].queue.poolQuotas": {"t4-shared": 5, "t4-shared-b": 4},
    }
    expected = {p.path.rsplit(".", 1)[-1]: p.expected for p in plan.error.problems}
    assert expected["t4-canary"] == (
        "one of the pools that hand out a GPU resource with another: t4-shared, t4-shared-b;"
        " t4-canary is a canary (canaryOf), on which Kueue admits no job (docs/queues.md)"
    )
    assert expected["h100"].endswith("; h100 is no pool of the stack (docs/queues.md)")
    assert "(given: 5 + 4 = 9)" in expected["poolQuotas"]


def test_a_split_leaving_a_pool_out_is_refused_though_its_shares_add_up_to_the_quota(
    dev_config, failed_plan_for
) -> None:
    # The pool left out would get the whole quota as its nominalQuota, and Kueue would admit
    # twice the quota over both.
    plan = failed_plan_for(with_a_second_pool(dev_config, poolQuotas={"t4-shared": 8}))

    assert isinstance(plan.error, ConfigError), plan.error
    (problem,) = plan.error.problems
    assert (problem.path, problem.value) == (
        "gpu-platform:namespaces[0].queue.poolQuotas",
        {"t4-shared": 8},
    )
    assert "(given: 8 = 8, t4-shared-b missing)" in problem.expected


def test_shares_adding_up_to_less_than_the_quota_plan_with_a_warning_by_key(
    dev_config, plan_for
) -> None:
    # Kueue then admits at most 5 + 2 of the ResourceQuota's 8: the middle step of moving
    # quota between pools, never past the ResourceQuota.
    config = with_a_second_pool(dev_config, poolQuotas={"t4-shared": 5, "t4-shared-b": 2})

    plan = plan_for(config)

    quota = plan.named("ml-sandbox-gpu-quota", "kubernetes:core/v1:ResourceQuota")
    assert quota.inputs["spec"]["hard"]["requests.nvidia.com/gpu"] == "8"
    assert kueue_quota_problems(plan, config) == []
    # Logged by the program (`pulumi.log.warn`), so `pulumi preview` and `up` show it too.
    assert plan.logged_warnings == [
        "namespace ml-sandbox: its queue's shares (queue.poolQuotas) of its quota of"
        " nvidia.com/gpu (8) on pools t4-shared, t4-shared-b add up to 7 (5 + 2): Kueue admits"
        " no job on the 1 left. Once the pool whose share you lowered runs within it, raise the"
        " share of the pool that takes the rest (docs/queues.md)."
    ]


def test_shares_adding_up_to_the_quota_warn_of_nothing_whatever_they_borrow(split_plan) -> None:
    # 5 + 3 of `sharedGpuQuota: 8`, its ResourceQuota 8 + 2 borrowed on each of the two pools.
    quota = split_plan.named("ml-sandbox-gpu-quota", "kubernetes:core/v1:ResourceQuota")
    assert quota.inputs["spec"]["hard"]["requests.nvidia.com/gpu"] == "12"
    assert split_plan.logged_warnings == []


def test_a_split_of_a_pool_that_alone_hands_out_its_resource_is_refused(
    dev_config, failed_plan_for
) -> None:
    dev_config["gpu-platform:namespaces"][0]["queue"] = {"poolQuotas": {"t4-shared": 8}}

    plan = failed_plan_for(dev_config)

    assert isinstance(plan.error, ConfigError), plan.error
    (problem,) = plan.error.problems
    assert (problem.path, problem.value) == (
        "gpu-platform:namespaces[0].queue.poolQuotas.t4-shared",
        8,
    )
    assert problem.expected == (
        "no entry: no two pools of the stack hand out one GPU resource; t4-shared alone hands"
        " out the GPUs gpu-platform:namespaces[0].sharedGpuQuota caps, and holds all of it"
        " (docs/queues.md)"
    )


def test_a_lending_limit_or_smoke_test_beyond_a_pools_share_is_refused(
    dev_config, failed_plan_for
) -> None:
    # The smoke test runs on t4-shared, whose share leaves it nothing; Kueue refuses a
    # lendingLimit above the nominalQuota of any flavor (`validateLendingLimit`,
    # pkg/webhooks/clusterqueue_webhook.go at v0.19.2), here t4-shared's 0.
    split = {"t4-shared": 0, "t4-shared-b": 8}
    plan = failed_plan_for(with_a_second_pool(dev_config, poolQuotas=split, lendingLimit=4))

    assert isinstance(plan.error, ConfigError), plan.error
    assert [(p.path, p.value, p.expected) for p in plan.error.problems] == [
        (
            "gpu-platform:namespaces[0].queue.poolQuotas.t4-shared",
            0,
            "at least 1 when the namespace runs its smoke test on t4-shared",
        ),
        (
            "gpu-platform:namespaces[0].queue.lendingLimit",
            4,
            "at most 0, the namespace's quota of pool t4-shared's GPUs"
            " (gpu-platform:namespaces[0].queue.poolQuotas.t4-shared): a tenant lends only what"
            " its quota holds",
        ),
    ]


def test_two_pools_handing_out_a_resource_of_a_namespace_out_of_the_queues_are_allowed(
    dev_config, plan_for
) -> None:
    # Kueue admits nothing in the namespace, so only its ResourceQuota counts its GPUs.
    pool = copy.deepcopy(dev_config["gpu-platform:pools"][0])
    dev_config["gpu-platform:pools"].append({**pool, "name": "t4-shared-b"})
    dev_config["gpu-platform:namespaces"][0]["queue"] = {"enabled": False}

    assert plan_for(dev_config).of_type(CLUSTER_QUEUE) == []


def with_a_canary(config: dict[str, Any], **fields: Any) -> None:
    pool = copy.deepcopy(config["gpu-platform:pools"][0])
    config["gpu-platform:pools"].append(
        {**pool, "name": "t4-canary", "max": 1, "canaryOf": pool["name"], **fields}
    )


def test_a_canary_beside_its_pool_has_no_flavor_and_is_accepted(dev_config, plan_for) -> None:
    # Kueue copies a flavor's nodeLabels into the node selector of the pods it admits
    # (`FromAssignment`, pkg/podset/podset.go at v0.19.2): jobs admitted on t4-shared stay
    # off its canary, which shares its replicas and so gets no flavor to be admitted on.
    with_a_canary(dev_config)
    dev_config["gpu-platform:namespaces"][0]["queue"] = {"borrowingLimit": 2}

    plan = plan_for(dev_config)

    assert [f.inputs["metadata"]["name"] for f in plan.of_type(FLAVOR)] == ["t4-shared"]
    # Kueue lets the namespace borrow on t4-shared alone: its quota of 8 and 2 more, once.
    quota = plan.named("ml-sandbox-gpu-quota", "kubernetes:core/v1:ResourceQuota")
    assert quota.inputs["spec"]["hard"]["requests.nvidia.com/gpu"] == "10"
    queue = plan.named("ml-sandbox-cluster-queue", CLUSTER_QUEUE)
    (group,) = queue.inputs["spec"]["resourceGroups"]
    assert [f["name"] for f in group["flavors"]] == ["t4-shared"]
    assert kueue_quota_problems(plan) == []


def test_a_queued_smoke_test_on_a_canary_is_refused(dev_config, failed_plan_for) -> None:
    with_a_canary(dev_config)
    dev_config["gpu-platform:namespaces"][0]["smokeTestPool"] = "t4-canary"

    plan = failed_plan_for(dev_config)

    assert isinstance(plan.error, ConfigError), plan.error
    (problem,) = plan.error.problems
    assert (problem.path, problem.value) == (
        "gpu-platform:namespaces[0].smokeTestPool",
        "t4-canary",
    )
    assert problem.expected.startswith("a pool that is no canary while queues.enabled is true")


def test_a_canary_scaling_up_atomically_is_refused(dev_config, failed_plan_for) -> None:
    aws = dev_config["gpu-platform:pools"][0]["aws"]
    with_a_canary(dev_config, aws={**aws, "atomicScaleUp": True})

    plan = failed_plan_for(dev_config)

    assert isinstance(plan.error, ConfigError), plan.error
    (problem,) = plan.error.problems
    assert (problem.path, problem.value) == ("gpu-platform:pools[1].aws.atomicScaleUp", True)
    assert problem.expected.startswith("false on a canary (canaryOf)")


def test_borrowing_and_lending_limits_go_on_every_flavor(dev_config, plan_for) -> None:
    dev_config["gpu-platform:namespaces"][0]["queue"] = {"borrowingLimit": 2, "lendingLimit": 4}

    plan = plan_for(dev_config)

    queue = plan.named("ml-sandbox-cluster-queue", CLUSTER_QUEUE)
    (resource,) = queue.inputs["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    assert resource == {
        "name": "nvidia.com/gpu",
        "nominalQuota": 8,
        "borrowingLimit": 2,
        "lendingLimit": 4,
    }
    # What it borrows runs under the namespace's ResourceQuota too: 8 of its own and 2.
    hard = plan.named("ml-sandbox-gpu-quota", "kubernetes:core/v1:ResourceQuota").inputs["spec"]
    assert hard["hard"]["requests.nvidia.com/gpu"] == "10"
    # No pool hands out MIG slices: the dev namespace's migQuota of them borrows nothing.
    assert hard["hard"]["requests.nvidia.com/mig-1g.10gb"] == "8"
    assert kueue_quota_problems(plan) == []


def test_without_fair_sharing_nothing_is_preempted(dev_config, plan_for) -> None:
    dev_config["gpu-platform:queues"]["fairSharing"] = False

    plan = plan_for(dev_config)

    assert "preemption" not in plan.named("ml-sandbox-cluster-queue", CLUSTER_QUEUE).inputs["spec"]
    assert "fairSharing" not in manager_config(plan)


def test_a_lending_limit_above_the_quota_is_refused_by_its_key(dev_config, failed_plan_for) -> None:
    dev_config["gpu-platform:namespaces"][0]["queue"] = {"lendingLimit": 9}

    plan = failed_plan_for(dev_config)

    assert isinstance(plan.error, ConfigError), plan.error
    (problem,) = plan.error.problems
    assert (problem.path, problem.value) == ("gpu-platform:namespaces[0].queue.lendingLimit", 9)
    assert problem.expected.startswith("at most 8, the namespace's quota of pool t4-shared's GPUs")


def test_queue_limits_without_queues_are_refused(dev_config, failed_plan_for) -> None:
    dev_config["gpu-platform:queues"]["enabled"] = False
    with_a_second_pool(dev_config, borrowingLimit=1, poolQuotas={"t4-shared": 4})

    plan = failed_plan_for(dev_config)

    assert isinstance(plan.error, ConfigError), plan.error
    assert [(p.path, p.value) for p in plan.error.problems] == [
        ("gpu-platform:namespaces[0].queue.borrowingLimit", 1),
        ("gpu-platform:namespaces[0].queue.poolQuotas", {"t4-shared": 4}),
    ]
    assert plan.error.problems[1].expected == (
        "no value unless queues.enabled and gpu-platform:namespaces[0].queue.enabled are true:"
        " without its queue the namespace's ResourceQuota alone caps its pools, together"
    )


def test_kueues_namespace_of_another_component_is_refused(dev_config, failed_plan_for) -> None:
    dev_config["gpu-platform:queues"]["namespace"] = "gpu-operator"

    plan = failed_plan_for(dev_config)

    assert isinstance(plan.error, ConfigError), plan.error
    (problem,) = plan.error.problems
    assert problem.path == "gpu-platform:queues.namespace"


def test_off_the_stack_has_no_kueue(dev_config, plan_for) -> None:
    dev_config["gpu-platform:queues"]["enabled"] = False

    plan = plan_for(dev_config)

    assert not [r for r in plan.resources if "kueue" in r.type or r.name.startswith("kueue")]
    namespace = plan.named("ml-sandbox", NAMESPACE)
    assert "gpu-platform.io/queue" not in namespace.inputs["metadata"]["labels"]
    job = plan.named("ml-sandbox-gpu-smoke-test", "kubernetes:batch/v1:Job")
    assert "kueue.x-k8s.io/queue-name" not in job.inputs["metadata"]["labels"]


def test_a_namespace_out_of_the_queues_has_none_while_kueue_runs(dev_config, plan_for) -> None:
    # The place for a tenant's GPU services, which Kueue does not queue (docs/queues.md).
    dev_config["gpu-platform:namespaces"][0]["queue"] = {"enabled": False}

    plan = plan_for(dev_config)

    assert release(plan)
    assert plan.of_type(CLUSTER_QUEUE) == plan.of_type(LOCAL_QUEUE) == []
    namespace = plan.named("ml-sandbox", NAMESPACE)
    assert "gpu-platform.io/queue" not in namespace.inputs["metadata"]["labels"]
    job = plan.named("ml-sandbox-gpu-smoke-test", "kubernetes:batch/v1:Job")
    assert "kueue.x-k8s.io/queue-name" not in job.inputs["metadata"]["labels"]


def test_queue_limits_of_a_namespace_out_of_the_queues_are_refused(
    dev_config, failed_plan_for
) -> None:
    dev_config["gpu-platform:namespaces"][0]["queue"] = {"enabled": False, "lendingLimit": 2}

    plan = failed_plan_for(dev_config)

    assert isinstance(plan.error, ConfigError), plan.error
    (problem,) = plan.error.problems
    assert (problem.path, problem.value) == ("gpu-platform:namespaces[0].queue.lendingLimit", 2)
    assert problem.expected.startswith(
        "no value unless queues.enabled and gpu-platform:namespaces[0].queue.enabled are true"
    )


def test_the_release_is_the_pinned_chart_and_image(dev_plan) -> None:
    inputs = release(dev_plan).inputs

    assert (inputs["chart"], inputs["version"]) == (
        "oci://registry.k8s.io/kueue/charts/kueue",
        "0.19.2",
    )
    # hack/helm-chart-package.sh at v0.19.2 sets the published chart's image to this.
    assert inputs["values"]["controllerManager"]["manager"]["image"] == {
        "repository": "registry.k8s.io/kueue/kueue",
        "tag": "v0.19.2",
        "pullPolicy": "IfNotPresent",
    }


def test_every_value_the_platform_sets_is_a_key_of_the_pinned_chart(dev_plan) -> None:
    # The pods' annotations are a map of the platform's own keys, which the chart writes whole
    # (`toYaml`, charts/kueue/templates/manager/manager.yaml at v0.19.2).
    values = release(dev_plan).inputs["values"]
    paths = set(key_paths(values, opaque={"controllerManager.manager.podAnnotations"}))

    assert paths <= chart_key_paths("0.19.2", "kueue")


def test_kueues_webhooks_act_on_the_queued_namespaces_only(dev_plan) -> None:
    config = manager_config(dev_plan)

    assert config["managedJobsNamespaceSelector"] == {
        "matchExpressions": [{"key": "gpu-platform.io/queue", "operator": "Exists"}]
    }
    assert config["resources"] == {"quotaCheckStrategy": "IgnoreUndeclared"}
    assert config["fairSharing"] == {
        "preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]
    }
    assert (
        dev_plan.named("ml-sandbox", NAMESPACE).inputs["metadata"]["labels"][
            "gpu-platform.io/queue"
        ]
        == "default"
    )


def test_kueue_queues_jobs_and_leaves_pods_deployments_and_statefulsets_alone(dev_plan) -> None:
    # Kueue's integrations by their `FrameworkName` (pkg/controller/jobs/*/*_controller.go at
    # v0.19.2), but the pod-based ones: with `pod` on, Kueue's pod webhook gives every pod of a
    # namespace with a `default` LocalQueue that no managed job owns that queue and gates it, a
    # CPU-only one too (`Default`, pkg/controller/jobs/pod/pod_webhook.go), and `deployment`,
    # `statefulset` and the LeaderWorkerSet's turn `pod` on with them
    # (`ImplicitlyEnabledFrameworkNames`, their *_controller.go).
    assert manager_config(dev_plan)["integrations"]["frameworks"] == [
        "batch/job",
        "kubeflow.org/mpijob",
        "kubeflow.org/pytorchjob",
        "kubeflow.org/tfjob",
        "kubeflow.org/xgboostjob",
        "kubeflow.org/jaxjob",
        "kubeflow.org/paddlejob",
        "ray.io/rayjob",
        "ray.io/rayservice",
        "ray.io/raycluster",
        "jobset.x-k8s.io/jobset",
        "workload.codeflare.dev/appwrapper",
        "trainer.kubeflow.org/trainjob",
    ]


def test_kueue_runs_in_a_restricted_namespace_of_its_own(dev_plan) -> None:
    labels = dev_plan.named("kueue-namespace", NAMESPACE).inputs["metadata"]["labels"]

    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"
    assert release(dev_plan).inputs["namespace"] == "kueue-system"


def test_what_kueues_webhooks_judge_waits_for_its_release(dev_plan) -> None:
    # The tenant's namespace, queues and smoke-test Job are children of the tenant component,
    # which waits for the Kueue component's children, its release among them; the flavors and
    # cohort wait for the release itself.
    tenant = dev_plan.named("ml-sandbox", "gpu-platform:kubernetes:GpuTenantNamespace")

    assert release(dev_plan).urn in tenant.dependencies
    for flavor in dev_plan.of_type(FLAVOR):
        assert release(dev_plan).urn in flavor.dependencies


def test_the_smoke_test_goes_first_through_its_queue_and_pulumi_waits_for_it(
    dev_plan, dev_config, plan_for
) -> None:
    job = dev_plan.named("ml-sandbox-gpu-smoke-test", "kubernetes:batch/v1:Job")
    (priority,) = dev_plan.of_type(f"kubernetes:{KUEUE}:WorkloadPriorityClass")

    labels = job.inputs["metadata"]["labels"]
    assert labels["kueue.x-k8s.io/queue-name"] == "default"
    assert labels["kueue.x-k8s.io/priority-class"] == priority.inputs["metadata"]["name"]
    # Above a job that names no class, and so has priority 0.
    assert priority.inputs["value"] > 0
    assert release(dev_plan).urn in priority.dependencies
    assert validation_errors(priority.inputs, "kueue", "0.19.2") == []
    # The Job's deadline starts once Kueue admits it: Pulumi waits the default 30 minutes
    # in the queue on top of the deadline and its 120 s margin.
    deadline = job.inputs["spec"]["activeDeadlineSeconds"]
    assert job.inputs["metadata"]["annotations"]["pulumi.com/timeoutSeconds"] == str(
        deadline + 120 + 30 * 60
    )
    dev_config["gpu-platform:queues"]["smokeTestQueueMinutes"] = 0
    job = plan_for(dev_config).named("ml-sandbox-gpu-smoke-test", "kubernetes:batch/v1:Job")
    assert job.inputs["metadata"]["annotations"]["pulumi.com/timeoutSeconds"] == str(deadline + 120)


def test_kueue_runs_two_managers_spread_with_a_budget(dev_plan) -> None:
    manager = release(dev_plan).inputs["values"]["controllerManager"]

    assert manager["replicas"] == 2
    assert manager["podDisruptionBudget"] == {"enabled": True, "minAvailable": 1}
    # The manager pods' labels, `kueue.selectorLabels` in charts/kueue/templates/_helpers.tpl
    # at v0.19.2.
    assert manager["topologySpreadConstraints"] == [
        {
            "maxSkew": 1,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {
                "matchLabels": {
                    "app.kubernetes.io/name": "kueue",
                    "app.kubernetes.io/instance": "kueue",
                    "control-plane": "controller-manager",
                }
            },
        }
    ]


# The longest a new node may take to be validated (node_validation/duration.py's terms, our
# allowances): 900 s for the node's start, 300 s for the validation pod's, 60 s for
# `nvidia-smi -q -x` and 60 s for `nvidia-smi nvlink`, 300 s to pull DCGM's image and the
# diagnostic's timeout (300 s at level 1, 900 s at level 2), then, on a node of several GPUs
# with an expected bandwidth, 300 s to pull nccl-tests and its 600 s timeout. Kueue's timeout
# adds 600 s for the job's own pods to start.
PODS_READY = {
    # dev's t4-shared: one GPU, level 1. 900 + 300 + 60 + 60 + 300 + 300 + 600 = 2520 s.
    "a default validated pool": ({}, "42m0s"),
    # 900 + 300 + 60 + 60 + 300 + 900 + 300 + 600 + 600 = 4020 s.
    "level 2 and NCCL": (
        {
            "instanceTypes": ["g6.12xlarge"],
            "accelerator": "l4",
            "gpusPerNode": 4,
            "validation": {"dcgmDiagLevel": 2, "expectedBusBandwidthGbps": 40},
        },
        "67m0s",
    ),
    # 900 + 600 is below Kueue's own 30 minutes (`DefaultWaitForPodsReadyTimeout`,
    # apis/config/v1beta2/defaults.go at v0.19.2), which stays.
    "no validation": ({"validation": {"enabled": False}}, "30m0s"),
}


@pytest.mark.parametrize(("pool", "timeout"), PODS_READY.values(), ids=list(PODS_READY))
def test_an_admitted_workload_has_its_new_nodes_validation_to_be_ready(
    dev_config, plan_for, pool: dict[str, Any], timeout: str
) -> None:
    # Kueue evicts and requeues a workload whose pods are not ready within `timeout` of its
    # admission (apis/config/v1beta2/configuration_types.go `WaitForPodsReady` at v0.19.2), which
    # outlasts a new node's validation; within `recoveryTimeout` of a running one going unready,
    # 21 minutes whatever the pools: the Job controller's longest backoff between a smoke test's
    # pods, 10 minutes (`MaxJobPodFailureBackOff`, kubernetes pkg/controller/job/job_controller.go
    # v1.33 to v1.35), and the pods' start, our 10 minutes, with a minute's margin (the retry
    # lag's GPU feature discovery relabelling, `GFD_SLEEP_INTERVAL`, gpu-operator v26.7.0
    # assets/gpu-feature-discovery/0500_daemonset.yaml, which delays a pod's pass, not its
    # start). The timeouts are Go durations (metav1.Duration).
    dev_config["gpu-platform:pools"][0].update(pool)

    assert manager_config(plan_for(dev_config))["waitForPodsReady"] == {
        "timeout": timeout,
        "recoveryTimeout": "21m0s",
        "requeuingStrategy": {
            "timestamp": "Eviction",
            "backoffBaseSeconds": 60,
            "backoffMaxSeconds": 3600,
        },
    }


def test_a_queued_smoke_test_waiting_for_a_new_driver_is_not_evicted_between_its_pods(
    dev_plan,
) -> None:
    # While a node waits for its new driver, each smoke-test pod exits 75 after a minute, and
    # the Job controller starts the next one up to 10 minutes later (`MaxJobPodFailureBackOff`,
    # kubernetes pkg/controller/job/job_controller.go v1.33 to v1.35). Meanwhile the workload's
    # PodsReady is false (`ready + succeeded >= count`, kueue v0.19.2
    # pkg/controller/jobs/job/job_controller.go), and Kueue evicts it `recoveryTimeout` after the
    # drop (pkg/controller/core/workload_controller.go): that must outlast the 10-minute gap and
    # the next pod's start, our 10 minutes.
    recovery = manager_config(dev_plan)["waitForPodsReady"]["recoveryTimeout"]
    minutes, seconds = re.fullmatch(r"(\d+)m(\d+)s", recovery).groups()  # type: ignore[union-attr]

    assert int(minutes) * 60 + int(seconds) >= 10 * 60 + 10 * 60


def test_a_misspelt_cluster_queue_field_is_refused_by_the_pinned_crd(dev_plan) -> None:
    queue = copy.deepcopy(dev_plan.named("ml-sandbox-cluster-queue", CLUSTER_QUEUE).inputs)
    queue["spec"]["cohort"] = queue["spec"].pop("cohortName")

    assert validation_errors(queue, "kueue", "0.19.2") == [
        "spec: Additional properties are not allowed ('cohort' was unexpected)"
    ]


def test_a_protected_stack_protects_the_release_whose_crds_hold_every_queue(
    dev_config, plan_for
) -> None:
    dev_config["gpu-platform:protect"] = True

    assert release(plan_for(dev_config)).protect


def test_the_documented_usage_command_reads_each_flavors_gpus_by_name(dev_plan) -> None:
    # A flavor's `resources` lists every resource the ClusterQueue covers on it, in no order a
    # reader can rely on (v1beta2 FlavorUsage, apis/kueue/v1beta2/clusterqueue_types.go at
    # v0.19.2): the command picks the GPUs by name, not by position.
    docs = (ROOT / "docs" / "queues.md").read_text()
    (command,) = re.findall(r"kubectl get clusterqueue .*", docs)
    picked = re.findall(r"\{\.resources\[\?\(@\.name==\"([^\"]+)\"\)\]\.(\w+)\}", command)
    assert picked == [("nvidia.com/gpu", "total"), ("nvidia.com/gpu", "borrowed")]
    assert "[0]" not in command
    queue = copy.deepcopy(dev_plan.named("ml-sandbox-cluster-queue", CLUSTER_QUEUE).inputs)
    usage = [
        {"name": "cpu", "total": "2"},
        {"name": "nvidia.com/gpu", "total": "8", "borrowed": "2"},
    ]
    queue["status"] = {"flavorsReservation": [{"name": "t4-shared", "resources": usage}]}
    assert validation_errors(queue, "kueue", "0.19.2") == []
