"""The public GPU pod recipe: lands on its pool, gets its GPUs, passes `restricted`."""

import copy
from collections.abc import Callable
from typing import Any

import kubernetes_validate
import pytest

from gpu_platform.config import GpuPoolSpec
from gpu_platform.drivers import NvidiaDriver
from gpu_platform.kubernetes.gpu_pod import (
    gpu_node_affinity,
    gpu_pod_spec,
    gpu_resource,
    gpu_tolerations,
    model_placements,
    pool_placement,
)
from gpu_platform.node_identity import GpuShape, ResolvedPool, Taint, resolve_pool
from gpu_platform.versions import SUPPORTED_KUBERNETES_VERSIONS
from tests.gpu_platform.kubernetes.restricted_pod_security import (
    RESTRICTED_RULES,
    restricted_violations,
)

IMAGE = "registry.example.com/train:1.4"


def pool(accelerator: str = "t4", gpus: int = 1, **fields: Any) -> ResolvedPool:
    spec = GpuPoolSpec.model_validate(
        {"name": f"{accelerator}-pool", "instanceTypes": ["x"], "max": 2, **fields}
    )
    return resolve_pool(spec, 0, GpuShape(accelerator, gpus))


def mig_mixed_pool() -> ResolvedPool:
    return pool(
        "a100-80gb",
        8,
        sharing={"mode": "mig", "strategy": "mixed", "profile": "all-1g.10gb"},
    )


@pytest.fixture
def spec() -> dict[str, Any]:
    return gpu_pod_spec(pool(), IMAGE, ["python", "train.py"], restart_policy="Never")


def test_spec_passes_every_restricted_rule(spec) -> None:
    assert restricted_violations(spec) == []


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """A change that sets `path` (dots; digits index lists) in a pod spec."""

    def change(spec: dict[str, Any]) -> None:
        *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
        node: Any = spec
        for part in parents:
            node = node[part] if isinstance(part, int) else node.setdefault(part, {})
        node[last] = value

    return change


# One way to break each rule, to show the checks above can fail.
BREAKAGES = {
    "no_privileged_containers": _set("containers.0.securityContext.privileged", True),
    "no_host_namespaces": _set("hostPID", True),
    "no_host_path_volumes": _set("volumes", [{"name": "v", "hostPath": {"path": "/"}}]),
    "no_host_ports": _set("containers.0.ports", [{"containerPort": 80, "hostPort": 80}]),
    "only_baseline_capabilities_added": _set(
        "containers.0.securityContext.capabilities.add", ["SYS_ADMIN"]
    ),
    "app_armor_is_runtime_default_or_localhost": _set(
        "securityContext.appArmorProfile", {"type": "Unconfined"}
    ),
    "selinux_type_allowed_and_no_user_or_role": _set(
        "securityContext.seLinuxOptions", {"type": "spc_t"}
    ),
    "proc_mount_default": _set("containers.0.securityContext.procMount", "Unmasked"),
    "seccomp_not_unconfined": _set(
        "containers.0.securityContext.seccompProfile", {"type": "Unconfined"}
    ),
    "only_safe_sysctls": _set("securityContext.sysctls", [{"name": "kernel.msgmax", "value": "1"}]),
    "no_windows_host_process": _set(
        "containers.0.securityContext.windowsOptions", {"hostProcess": True}
    ),
    "no_probe_or_lifecycle_host": _set(
        "containers.0.livenessProbe", {"httpGet": {"host": "10.0.0.1", "port": 80}}
    ),
    "no_privilege_escalation": _set("containers.0.securityContext.allowPrivilegeEscalation", True),
    "all_capabilities_dropped_and_at_most_net_bind_service_added": _set(
        "containers.0.securityContext.capabilities.drop", ["NET_RAW"]
    ),
    "runs_as_non_root": _set("securityContext.runAsNonRoot", False),
    "never_runs_as_user_zero": _set("containers.0.securityContext.runAsUser", 0),
    "seccomp_runtime_default_or_localhost_everywhere": _set("securityContext.seccompProfile", {}),
    "only_restricted_volume_types": _set("volumes", [{"name": "v", "nfs": {"server": "s"}}]),
}


def test_every_restricted_rule_has_a_breakage() -> None:
    assert set(BREAKAGES) == set(RESTRICTED_RULES)


@pytest.mark.parametrize("rule", sorted(BREAKAGES))
def test_each_rule_catches_its_breakage(spec, rule: str) -> None:
    broken = copy.deepcopy(spec)
    BREAKAGES[rule](broken)

    assert rule in restricted_violations(broken)


@pytest.mark.parametrize("minor", SUPPORTED_KUBERNETES_VERSIONS)
def test_spec_validates_as_a_pod_against_the_kubernetes_schema(spec, minor: str) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "train"}, "spec": spec}

    kubernetes_validate.validate(pod, f"{minor}.0", strict=True)


def test_container_runs_the_image_and_command(spec) -> None:
    (container,) = spec["containers"]

    assert (container["image"], container["command"]) == (IMAGE, ["python", "train.py"])


def test_gpus_are_set_as_limits_of_the_pools_resource() -> None:
    spec = gpu_pod_spec(pool(gpus=4), IMAGE, ["x"], gpus=3)

    assert spec["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": "3"}}


def test_mig_mixed_pool_gets_its_slice_resource() -> None:
    spec = gpu_pod_spec(mig_mixed_pool(), IMAGE, ["x"])

    assert spec["containers"][0]["resources"]["limits"] == {"nvidia.com/mig-1g.10gb": "1"}


@pytest.mark.parametrize(
    "sharing",
    [{"mode": "time-slicing", "replicas": 4}, {"mode": "mps", "replicas": 4}],
    ids=["time-slicing", "mps"],
)
def test_a_shared_pool_gives_a_container_one_replica_at_most(sharing: dict[str, Any]) -> None:
    # k8s-device-plugin README: more than one shared GPU buys no more compute, and with
    # failRequestsGreaterThanOne (internal/rm/rm.go) the kubelet refuses the pod at admission.
    with pytest.raises(
        ValueError, match=r"gpus=2: .* can get 1 to 1 nvidia\.com/gpu \(its GPUs are shared"
    ):
        gpu_pod_spec(pool(gpus=4, sharing=sharing), IMAGE, ["x"], gpus=2)


def test_a_mig_pool_gives_a_container_several_slices() -> None:
    spec = gpu_pod_spec(mig_mixed_pool(), IMAGE, ["x"], gpus=2)

    assert spec["containers"][0]["resources"]["limits"] == {"nvidia.com/mig-1g.10gb": "2"}


def test_other_requests_and_limits_are_kept_beside_the_gpus() -> None:
    spec = gpu_pod_spec(
        pool(), IMAGE, ["x"], requests={"cpu": "4", "memory": "16Gi"}, limits={"memory": "16Gi"}
    )

    assert spec["containers"][0]["resources"] == {
        "requests": {"cpu": "4", "memory": "16Gi"},
        "limits": {"memory": "16Gi", "nvidia.com/gpu": "1"},
    }


@pytest.mark.parametrize("gpus", [0, 2])
def test_gpus_outside_one_node_are_refused(gpus: int) -> None:
    with pytest.raises(ValueError, match=r"1 to 1 nvidia\.com/gpu"):
        gpu_pod_spec(pool(gpus=1), IMAGE, ["x"], gpus=gpus)


def test_root_user_is_refused() -> None:
    with pytest.raises(ValueError, match="user_id=0"):
        gpu_pod_spec(pool(), IMAGE, ["x"], user_id=0)


def test_user_id_sets_user_and_group() -> None:
    spec = gpu_pod_spec(pool(), IMAGE, ["x"], user_id=65532)

    assert (spec["securityContext"]["runAsUser"], spec["securityContext"]["runAsGroup"]) == (
        65532,
        65532,
    )


def test_env_becomes_container_env() -> None:
    spec = gpu_pod_spec(pool(), IMAGE, ["x"], env={"A": "1"})

    assert spec["containers"][0]["env"] == [{"name": "A", "value": "1"}]


def test_restart_policy_is_left_to_kubernetes_unless_given() -> None:
    assert "restartPolicy" not in gpu_pod_spec(pool(), IMAGE, ["x"])


def test_tolerations_cover_the_gpu_taint_and_the_pools_own() -> None:
    tainted = pool(
        taints=[
            {"key": "team", "value": "vision", "effect": "NoSchedule"},
            {"key": "dedicated", "effect": "NoExecute"},
        ]
    )

    assert gpu_tolerations(tainted) == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"},
        {"key": "team", "operator": "Equal", "value": "vision", "effect": "NoSchedule"},
        {"key": "dedicated", "operator": "Exists", "effect": "NoExecute"},
    ]


def test_node_affinity_requires_the_pool_label() -> None:
    terms = gpu_node_affinity(pool())["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]

    assert terms == [
        {
            "matchExpressions": [
                {"key": "gpu-platform.io/pool", "operator": "In", "values": ["t4-pool"]}
            ]
        }
    ]


def test_spec_carries_the_pools_tolerations_and_affinity(spec) -> None:
    assert (spec["tolerations"], spec["affinity"]) == (
        gpu_tolerations(pool()),
        gpu_node_affinity(pool()),
    )


def test_gpu_resource_is_what_the_pool_advertises() -> None:
    assert gpu_resource(mig_mixed_pool()) == "nvidia.com/mig-1g.10gb"


def test_placement_under_the_cluster_autoscaler_keeps_it_from_draining_the_node() -> None:
    placement = pool_placement(pool(), "cluster-autoscaler")

    assert placement["workload"]["annotations"] == {
        "cluster-autoscaler.kubernetes.io/safe-to-evict": "false"
    }


def test_placement_under_karpenter_keeps_it_from_disrupting_the_node() -> None:
    # Karpenter v1.14.1 concepts/disruption.md, "Pod-Level Controls"; it reads no cluster
    # autoscaler annotation.
    placement = pool_placement(pool(), "karpenter")

    assert placement["workload"]["annotations"] == {"karpenter.sh/do-not-disrupt": "true"}


def test_deployments_under_karpenter_are_left_for_drift_to_move() -> None:
    # Without the annotation, drift evicts the pods within their PodDisruptionBudgets
    # (concepts/disruption.md at v1.14.1, "Drift"); with it, drift would wait for the
    # NodePool's terminationGracePeriod and then delete them (pkg/controllers/disruption/types.go
    # `EventualDisruptionClass`, kubernetes-sigs/karpenter v1.14.1).
    placement = pool_placement(pool(), "karpenter")

    assert placement["workload"]["deploymentAnnotations"] == {}


def test_deployments_under_the_cluster_autoscaler_keep_it_from_draining_the_node() -> None:
    placement = pool_placement(pool(), "cluster-autoscaler")

    assert placement["workload"]["deploymentAnnotations"] == {
        "cluster-autoscaler.kubernetes.io/safe-to-evict": "false"
    }


def named(name: str, accelerator: str = "l4", gpus: int = 1, **fields: Any) -> ResolvedPool:
    spec = GpuPoolSpec.model_validate({"name": name, "instanceTypes": ["x"], "max": 2, **fields})
    return resolve_pool(spec, 0, GpuShape(accelerator, gpus))


def models(*pools: ResolvedPool) -> dict[str, list[str]]:
    return {name: p["pools"] for name, p in model_placements(pools, "karpenter").items()}


def test_pools_of_one_gpu_model_share_a_placement_that_admits_them_all() -> None:
    placement = model_placements([named("l4-reserved"), named("l4-od")], "karpenter")["l4"]

    assert placement["pools"] == ["l4-reserved", "l4-od"]
    term = placement["workload"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert term == [
        {
            "matchExpressions": [
                {
                    "key": "gpu-platform.io/pool",
                    "operator": "In",
                    "values": ["l4-reserved", "l4-od"],
                }
            ]
        }
    ]


@pytest.mark.parametrize(
    ("other", "name"),
    [
        (named("t4", "t4"), "t4"),
        (named("l4-sliced", sharing={"mode": "time-slicing", "replicas": 4}), "l4-time-slicing-4"),
        (named("l4-efa", aws={"efa": True}), "l4-efa"),
    ],
)
def test_pools_a_pod_must_not_move_between_get_placements_of_their_own(
    other: ResolvedPool, name: str
) -> None:
    assert models(named("l4-od"), other) == {"l4": ["l4-od"], name: [other.spec.name]}


def test_pools_of_one_gpu_model_on_arm_and_x86_hosts_are_not_mixed() -> None:
    # EC2 calls the GPU of g5g (Graviton, arm64) `T4g`, which the platform reads as a T4
    # (gpu_platform/eks/instance_types.py): an amd64-only image on it would not start.
    spec = GpuPoolSpec.model_validate({"name": "t4-arm", "instanceTypes": ["x"], "max": 2})
    arm = resolve_pool(spec, 1, GpuShape("t4", 1, "arm64"))
    x86 = resolve_pool(spec.model_copy(update={"name": "t4-x86"}), 0, GpuShape("t4", 1, "x86_64"))

    assert models(x86, arm) == {"t4": ["t4-x86"], "t4-arm64": ["t4-arm"]}


def test_pools_of_one_gpu_model_on_drivers_of_other_cuda_versions_are_not_mixed() -> None:
    # A pool may pin its own AMI release or driver (aws.amiReleaseVersion, gcp.driverVersion):
    # a container built for CUDA 13.0 does not start on a 570 driver, which reaches 12.8
    # (NVIDIA's CUDA toolkit release notes, table 3, as gpu_platform/drivers.py keeps them).
    spec = GpuPoolSpec.model_validate({"name": "l4-new", "instanceTypes": ["x"], "max": 2})
    new = resolve_pool(spec, 0, GpuShape("l4", 1), driver=NvidiaDriver("580.95.05", "AMI"))
    old = resolve_pool(
        spec.model_copy(update={"name": "l4-old"}),
        1,
        GpuShape("l4", 1),
        driver=NvidiaDriver("570.195.03", "AMI"),
    )

    assert models(new, old) == {"l4-cuda-13.0": ["l4-new"], "l4-cuda-12.8": ["l4-old"]}


def test_mig_pools_of_other_profiles_are_not_mixed() -> None:
    small = named("a100-1g", "a100-80gb", 8, sharing={"mode": "mig", "profile": "all-1g.10gb"})
    large = named("a100-3g", "a100-80gb", 8, sharing={"mode": "mig", "profile": "all-3g.40gb"})

    assert models(small, large) == {
        "a100-80gb-mig-mixed-all-1g.10gb": ["a100-1g"],
        "a100-80gb-mig-mixed-all-3g.40gb": ["a100-3g"],
    }


def test_canaries_and_pools_with_taints_of_their_own_join_no_model_placement() -> None:
    canary = named("l4-canary", canaryOf="l4-od")
    team = named("l4-vision", taints=[{"key": "team", "value": "vision", "effect": "NoSchedule"}])

    assert models(named("l4-od"), canary, team) == {"l4": ["l4-od"]}


def test_a_queued_provisioning_pool_joins_no_model_placement() -> None:
    # A queued pool's nodes come only through a ProvisioningRequest, booked for its pods
    # (GKE's Dynamic Workload Scheduler page, provisioningrequest; gpu_platform/gke/
    # capacity_taints.py): a pod that tolerated `cloud.google.com/gke-queued` without one would
    # take a node booked for another job.
    queued = Taint("cloud.google.com/gke-queued", "true", "NoSchedule")
    spec = GpuPoolSpec.model_validate({"name": "l4-queued", "instanceTypes": ["x"], "max": 2})
    pools = [named("l4-od"), resolve_pool(spec, 1, GpuShape("l4", 1), cloud_taints=(queued,))]

    placement = model_placements(pools, "cluster-autoscaler")

    assert {name: p["pools"] for name, p in placement.items()} == {"l4": ["l4-od"]}
    assert placement["l4"]["workload"]["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}
    ]


def efa(name: str, zone: str) -> ResolvedPool:
    return named(name, "h100-80gb", 8, zones=[zone], aws={"efa": True})


def test_efa_pools_of_one_model_in_two_zones_get_a_placement_each_pinned_to_its_zone() -> None:
    # EFA traffic does not cross zones (EC2 user guide, "Elastic Fabric Adapter", limitations:
    # "EFA traffic can't cross Availability Zones or VPCs"): one placement over both pools would
    # let a 4-node NCCL job land 2 nodes in each zone.
    placements = model_placements(
        [efa("h100-a", "us-east-1a"), efa("h100-b", "us-east-1b")], "karpenter"
    )

    assert {name: p["pools"] for name, p in placements.items()} == {
        "h100-80gb-efa-us-east-1a": ["h100-a"],
        "h100-80gb-efa-us-east-1b": ["h100-b"],
    }
    assert placements["h100-80gb-efa-us-east-1b"]["workload"]["affinity"] == {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "gpu-platform.io/pool", "operator": "In", "values": ["h100-b"]},
                            {
                                "key": "topology.kubernetes.io/zone",
                                "operator": "In",
                                "values": ["us-east-1b"],
                            },
                        ]
                    }
                ]
            }
        }
    }


def test_efa_pools_of_one_model_in_one_zone_keep_their_placement_as_it_was() -> None:
    # A Job's pod template cannot change and a Deployment's rolls its pods when it does: the
    # placement other stacks read of a model whose EFA pools share a zone keeps its name and
    # affinity.
    placements = model_placements(
        [efa("h100-a", "us-east-1a"), efa("h100-b", "us-east-1a")], "karpenter"
    )

    assert list(placements) == ["h100-80gb-efa"]
    assert placements["h100-80gb-efa"]["pools"] == ["h100-a", "h100-b"]
    assert placements["h100-80gb-efa"]["workload"]["affinity"] == {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {
                                "key": "gpu-platform.io/pool",
                                "operator": "In",
                                "values": ["h100-a", "h100-b"],
                            }
                        ]
                    }
                ]
            }
        }
    }


def test_pools_without_efa_in_several_zones_still_share_a_placement() -> None:
    # Without EFA, nodes of one pool or several reach each other over the VPC in any zone.
    pools = [named("l4-a", zones=["us-east-1a"]), named("l4-b", zones=["us-east-1b"])]

    assert models(*pools) == {"l4": ["l4-a", "l4-b"]}


def test_efa_pools_split_by_cuda_and_by_zone_are_named_by_both() -> None:
    spec = GpuPoolSpec.model_validate(
        {"name": "h100-a", "instanceTypes": ["x"], "max": 2, "zones": ["us-east-1a"]}
    )
    spec = spec.model_copy(update={"aws": spec.aws.model_copy(update={"efa": True})})
    new = resolve_pool(spec, 0, GpuShape("h100-80gb", 8), driver=NvidiaDriver("580.95.05", "AMI"))
    old = resolve_pool(
        spec.model_copy(update={"name": "h100-b", "zones": ["us-east-1b"]}),
        1,
        GpuShape("h100-80gb", 8),
        driver=NvidiaDriver("570.195.03", "AMI"),
    )

    assert models(new, old) == {
        "h100-80gb-efa-cuda-13.0-us-east-1a": ["h100-a"],
        "h100-80gb-efa-cuda-12.8-us-east-1b": ["h100-b"],
    }
