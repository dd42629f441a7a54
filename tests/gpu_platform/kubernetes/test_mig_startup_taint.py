"""A new MIG node's startup taint: on the pools whose slices the operator makes, tolerated by the
operator's DaemonSets and by no workload, left out of the autoscaler's template, and removed by
the platform's remover once the MIG manager reports `success`."""

import copy
from typing import Any

import pytest

from gpu_platform.config import GpuPoolSpec
from gpu_platform.kubernetes.gpu_pod import gpu_tolerations
from gpu_platform.kubernetes.mig_startup_taint_remover import Nodes, sweep, taint_removal
from gpu_platform.node_identity import GpuShape, GpuSharer, Taint, resolve_pool
from gpu_platform.offline.program import Plan, PlannedResource
from gpu_platform.versions import MIG_STARTUP_TAINT_REMOVER_IMAGE
from tests.gpu_platform.kubernetes.restricted_pod_security import restricted_violations
from tests.gpu_platform.kubernetes.test_idle_gpu_reaper import serve
from tests.shared_plans import shared_plan

# cluster-autoscaler FAQ "Startup taints" and `StartupTaintPrefix` (utils/taints/taints.go,
# cluster-autoscaler-1.35.2): every taint whose key has this prefix is a startup taint.
STARTUP_TAINT = Taint(
    "startup-taint.cluster-autoscaler.kubernetes.io/mig-config", "pending", "NoSchedule"
)
NAME = "gpu-operator-gpu-mig-startup-taint-remover"


@pytest.fixture(scope="module")
def prod_plan() -> Plan:
    return shared_plan("prod")


def mig_spec() -> GpuPoolSpec:
    return GpuPoolSpec.model_validate(
        {
            "name": "a100-mig",
            "instanceTypes": ["p4de.24xlarge"],
            "max": 1,
            "sharing": {"mode": "mig", "profile": "all-1g.10gb"},
        }
    )


def test_a_mig_pool_the_operator_partitions_starts_its_nodes_tainted() -> None:
    pool = resolve_pool(mig_spec(), 0, GpuShape("a100-80gb", 8))

    assert STARTUP_TAINT in pool.identity.taints


def test_pools_gke_partitions_and_whole_gpu_pools_are_not_tainted() -> None:
    gke = resolve_pool(mig_spec(), 0, GpuShape("a100-80gb", 1), GpuSharer.GKE)
    whole = resolve_pool(
        GpuPoolSpec.model_validate({"name": "h100", "instanceTypes": ["p5.48xlarge"], "max": 1}),
        0,
        GpuShape("h100", 8),
    )

    # GKE's device plugin advertises nothing until every GPU is partitioned
    # (container-engine-accelerators pkg/gpu/nvidia/mig/mig.go).
    assert STARTUP_TAINT not in gke.identity.taints
    assert STARTUP_TAINT not in whole.identity.taints


def node_group_taints(plan: Plan, pool: str) -> list[dict[str, Any]]:
    taints: list[dict[str, Any]] = plan.named(
        f"{pool}-nodes", "aws:eks/nodeGroup:NodeGroup"
    ).inputs["taints"]
    return taints


def test_the_mig_node_groups_carry_the_taint_and_the_others_do_not(prod_plan: Plan) -> None:
    taint = {
        "key": "startup-taint.cluster-autoscaler.kubernetes.io/mig-config",
        "value": "pending",
        "effect": "NO_SCHEDULE",
    }

    assert taint in node_group_taints(prod_plan, "a100-inference")
    assert taint in node_group_taints(prod_plan, "a100-canary")
    assert taint not in node_group_taints(prod_plan, "h100-training")


def operator_values(plan: Plan) -> dict[str, Any]:
    values: dict[str, Any] = plan.named("gpu-operator", "kubernetes:helm.sh/v3:Release").inputs[
        "values"
    ]
    return values


def test_the_operators_daemonsets_and_feature_discovery_tolerate_it(prod_plan: Plan) -> None:
    values = operator_values(prod_plan)
    toleration = {
        "key": "startup-taint.cluster-autoscaler.kubernetes.io/mig-config",
        "operator": "Equal",
        "value": "pending",
        "effect": "NoSchedule",
    }

    # The MIG manager, the device plugin and the validator are the chart's `daemonsets`; the
    # node-feature-discovery worker labels the node's PCI devices that select them.
    assert toleration in values["daemonsets"]["tolerations"]
    assert toleration in values["node-feature-discovery"]["worker"]["tolerations"]


def test_no_workload_of_any_pool_tolerates_it() -> None:
    for pool in (
        resolve_pool(mig_spec(), 0, GpuShape("a100-80gb", 8)),
        resolve_pool(
            GpuPoolSpec.model_validate(
                {"name": "h100", "instanceTypes": ["p5.48xlarge"], "max": 1}
            ),
            0,
            GpuShape("h100", 8),
        ),
    ):
        tolerations = gpu_tolerations(pool)

        assert tolerations and all(t["key"] == "nvidia.com/gpu" for t in tolerations)


# --- The remover's objects --------------------------------------------------------------------


def test_the_remover_runs_where_a_pool_has_mig_slices(prod_plan: Plan, dev_plan: Plan) -> None:
    deployment = prod_plan.named(NAME, "kubernetes:apps/v1:Deployment")

    assert deployment.inputs["metadata"]["namespace"] == "gpu-operator"
    assert deployment.inputs["spec"]["replicas"] == 1
    assert dev_plan.of_type("kubernetes:apps/v1:Deployment") == []


def test_the_remover_may_list_and_patch_nodes_and_nothing_else(prod_plan: Plan) -> None:
    role = prod_plan.named(NAME, "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole")
    binding = prod_plan.named(NAME, "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding")

    assert role.inputs["rules"] == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list", "patch"]}
    ]
    assert binding.inputs["subjects"] == [
        {
            "kind": "ServiceAccount",
            "name": "gpu-mig-startup-taint-remover",
            "namespace": "gpu-operator",
        }
    ]


def remover_pod(plan: Plan) -> dict[str, Any]:
    deployment: PlannedResource = plan.named(NAME, "kubernetes:apps/v1:Deployment")
    pod: dict[str, Any] = deployment.inputs["spec"]["template"]["spec"]
    return pod


def test_the_remover_pod_passes_restricted_on_the_pinned_image(prod_plan: Plan) -> None:
    pod = remover_pod(prod_plan)

    assert restricted_violations(pod) == []
    assert pod["containers"][0]["image"] == MIG_STARTUP_TAINT_REMOVER_IMAGE.reference
    assert "tolerations" not in pod


def test_the_remover_runs_the_script_from_its_config_map(prod_plan: Plan) -> None:
    pod = remover_pod(prod_plan)
    config_map = prod_plan.named(NAME, "kubernetes:core/v1:ConfigMap")

    assert pod["volumes"] == [
        {"name": "script", "configMap": {"name": config_map.inputs["metadata"]["name"]}}
    ]
    assert pod["containers"][0]["command"] == [
        "python3",
        "/opt/gpu-platform/mig_startup_taint_remover.py",
    ]
    assert "def sweep(" in config_map.inputs["data"]["mig_startup_taint_remover.py"]


# --- The remover's script ---------------------------------------------------------------------


def node(state: str | None, taints: list[dict[str, str]]) -> dict[str, Any]:
    labels = {} if state is None else {"nvidia.com/mig.config.state": state}
    return {"metadata": {"name": "ip-10-0-1-7", "labels": labels}, "spec": {"taints": taints}}


GPU = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
STARTUP = {
    "key": "startup-taint.cluster-autoscaler.kubernetes.io/mig-config",
    "value": "pending",
    "effect": "NoSchedule",
}


@pytest.mark.parametrize("state", [None, "pending", "rebooting", "failed"])
def test_a_node_not_yet_partitioned_keeps_the_taint(state: str | None) -> None:
    # mig-parted v0.15.0 deployments/container/reconfigure-mig.sh sets these states.
    assert taint_removal(node(state, [GPU, STARTUP])) is None


def test_a_partitioned_node_loses_the_taint_where_it_still_is() -> None:
    patch = taint_removal(node("success", [GPU, STARTUP]))

    assert patch == [
        {
            "op": "test",
            "path": "/spec/taints/1/key",
            "value": "startup-taint.cluster-autoscaler.kubernetes.io/mig-config",
        },
        {"op": "remove", "path": "/spec/taints/1"},
    ]
    assert taint_removal(node("success", [GPU])) is None


class FakeNodes:
    """The nodes API: a list by label selector, and JSON patches that test and remove."""

    def __init__(self, nodes: list[dict[str, Any]]) -> None:
        self.nodes = {n["metadata"]["name"]: n for n in nodes}
        self.calls: list[tuple[str, str]] = []

    def answer(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        self.calls.append((method, path))
        if method == "GET":
            return 200, {"items": [copy.deepcopy(n) for n in self.nodes.values()]}
        found = self.nodes[path.rsplit("/", 1)[1]]
        test, remove = body
        index = int(remove["path"].rsplit("/", 1)[1])
        if found["spec"]["taints"][index]["key"] != test["value"]:
            return 422, {"kind": "Status", "reason": "Invalid"}
        del found["spec"]["taints"][index]
        return 200, found


def swept(fake: FakeNodes) -> int:
    """One sweep against `fake`, served on a local port; how many patches failed."""
    server, url = serve(fake)  # type: ignore[arg-type]
    try:
        return sweep(Nodes(url, "token"))
    finally:
        server.shutdown()


def test_a_sweep_lists_partitioned_nodes_and_removes_their_taint() -> None:
    fake = FakeNodes([node("success", [STARTUP, GPU])])

    failed = swept(fake)

    assert failed == 0
    assert fake.nodes["ip-10-0-1-7"]["spec"]["taints"] == [GPU]
    assert fake.calls == [
        ("GET", "/api/v1/nodes?labelSelector=nvidia.com%2Fmig.config.state%3Dsuccess"),
        ("PATCH", "/api/v1/nodes/ip-10-0-1-7"),
    ]


def test_a_refused_patch_is_counted_and_the_sweep_goes_on() -> None:
    other = node("success", [STARTUP])
    other["metadata"]["name"] = "ip-10-0-1-8"
    fake = FakeNodes([node("success", [STARTUP]), other])
    fake.nodes["ip-10-0-1-7"]["spec"]["taints"] = [GPU]  # changed since it was listed
    fake.answer = _listing_stale(fake)  # type: ignore[method-assign]

    failed = swept(fake)

    assert failed == 1
    assert fake.nodes["ip-10-0-1-8"]["spec"]["taints"] == []


def _listing_stale(fake: FakeNodes) -> Any:
    answer = FakeNodes.answer

    def stale(method: str, path: str, body: Any) -> tuple[int, Any]:
        if method == "GET":
            return 200, {"items": [node("success", [STARTUP]), fake.nodes["ip-10-0-1-8"]]}
        return answer(fake, method, path, body)

    return stale
