"""The plan's warning for validated GKE pools that may scale to zero nodes, where GKE's
autoscaler is not confirmed to leave the validation taint out of its template."""

import copy

from gpu_platform.offline.plan import plan_stack
from gpu_platform.offline.program import Plan
from gpu_platform.offline.validation_warnings import NODE_POOL, unconfirmed_gke_scale_up
from tests.repository import PROJECT
from tests.shared_plans import shared_plan

WARNING = (
    "GKE node pool l4-shared may scale to zero nodes and carries the node validation taint"
    " startup-taint.cluster-autoscaler.kubernetes.io/gpu-validation: no GKE documentation"
    " confirms that GKE's cluster autoscaler leaves such a startup taint out when it scales a"
    " pool up from zero, as the open-source one does. If it does not, the pool's pending pods"
    " never get a node. Check that the pool scales up from zero before relying on it, give it a"
    " minimum of at least 1, or set validation.enabled false on it (docs/node-validation.md)."
)


def test_gpu_platform_plan_warns_of_a_validated_gke_pool_at_min_zero() -> None:
    # Pulumi.gke-dev.yaml: pool l4-shared, min 0, validation on.
    assert WARNING in plan_stack("gke-dev", project=PROJECT).warnings


def gke_dev_with(**autoscaling: int) -> Plan:
    plan = copy.deepcopy(shared_plan("gke-dev"))
    (pool,) = plan.of_type(NODE_POOL)
    pool.inputs["autoscaling"].update(autoscaling)
    return plan


def test_a_pool_that_keeps_a_node_is_not_warned() -> None:
    assert unconfirmed_gke_scale_up(gke_dev_with(totalMinNodeCount=1)) == []
    assert unconfirmed_gke_scale_up(gke_dev_with(totalMinNodeCount=0)) == [WARNING]


def test_a_pool_without_the_taint_is_not_warned() -> None:
    plan = copy.deepcopy(shared_plan("gke-dev"))
    (pool,) = plan.of_type(NODE_POOL)
    pool.inputs["nodeConfig"]["taints"] = pool.inputs["nodeConfig"]["taints"][:1]
    assert unconfirmed_gke_scale_up(plan) == []
