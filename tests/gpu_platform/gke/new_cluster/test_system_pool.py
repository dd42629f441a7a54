"""The system node pool: the controllers' nodes, untainted, running as a service account of
their own that holds only `roles/container.defaultNodeServiceAccount` (GKE hardening guide, "Use
least privilege Google service accounts")."""

from gpu_platform.offline.program import Plan

from .plans import IAM_MEMBER, NODE_POOL, SERVICE_ACCOUNT, system_pool


def test_the_system_nodes_run_as_their_own_least_privileged_account(gke_new_plan: Plan) -> None:
    pool = system_pool(gke_new_plan)
    (account,) = [a for a in gke_new_plan.of_type(SERVICE_ACCOUNT) if a.parent == pool.parent]
    roles = [m for m in gke_new_plan.of_type(IAM_MEMBER) if m.parent == pool.parent]

    assert pool.inputs["nodeConfig"]["serviceAccount"] == account.computed_outputs["email"]
    assert [(m.inputs["role"], m.inputs["member"]) for m in roles] == [
        ("roles/container.defaultNodeServiceAccount", account.computed_outputs["member"])
    ]


def test_the_system_nodes_are_untainted_hardened_and_autoscaled_per_zone(
    gke_new_plan: Plan,
) -> None:
    inputs = system_pool(gke_new_plan).inputs
    config = inputs["nodeConfig"]
    assert "taints" not in config
    assert config["workloadMetadataConfig"] == {"mode": "GKE_METADATA"}
    assert config["shieldedInstanceConfig"] == {
        "enableSecureBoot": True,
        "enableIntegrityMonitoring": True,
    }
    assert config["metadata"] == {"disable-legacy-endpoints": "true"}
    assert config["machineType"] == "e2-standard-4"
    assert inputs["autoscaling"]["minNodeCount"] == 1
    assert inputs["autoscaling"]["maxNodeCount"] == 2


def test_the_system_nodes_follow_the_control_plane(gke_new_plan: Plan) -> None:
    inputs = system_pool(gke_new_plan).inputs
    assert inputs["management"] == {"autoRepair": True, "autoUpgrade": True}
    assert "version" not in inputs
    assert inputs["upgradeSettings"]["maxUnavailable"] == 0


def test_the_system_nodes_account_is_a_stack_output(gke_new_plan: Plan) -> None:
    # The deploy identity needs roles/iam.serviceAccountUser on it to create the cluster.
    pool = system_pool(gke_new_plan)

    assert (
        gke_new_plan.outputs["systemNodeServiceAccount"]
        == pool.inputs["nodeConfig"]["serviceAccount"]
    )


def test_an_upgrade_of_the_system_nodes_waits_for_all_of_them_and_the_gpu_pools(
    gke_new_plan: Plan,
) -> None:
    # 2 nodes in each of GKE's 3 default zones, one at a time: 6 rounds of (15 minutes' start +
    # an hour's drain under disruption budgets, GKE's node-pool-upgrade-strategies page) = 450
    # minutes. GKE runs one node pool operation at a time, and terraform-provider-google
    # retries an update that meets another within the update's own timeout
    # (resource_container_node_pool.go, `RetryWhileIncompatibleOperation(timeout, ...)`): each
    # pool may wait through the others' too. The GPU pool, max 3 over 3 zones one at a time: 3
    # rounds of 75 = 225 minutes. 675 x 1.25 = 843.75, on both pools.
    assert {p.name: p.custom_timeouts for p in gke_new_plan.of_type(NODE_POOL)} == {
        "cluster-system": {"create": "844m", "update": "844m", "delete": "844m"},
        "l4-shared": {"create": "844m", "update": "844m", "delete": "844m"},
    }
