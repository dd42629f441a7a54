"""What the program deploys to validate new nodes, on the planned resources of the real program
under mocks: one DaemonSet per validated pool in the operator's namespace, configured from the
pool, its RBAC, the admission policy and, on Karpenter, the replacement ledger."""

import json
from typing import Any

import pytest

from gpu_platform.kubernetes.node_validation import validate
from gpu_platform.offline.program import Plan, PlannedResource
from gpu_platform.stack_files import stack_config
from tests.kubernetes_schemas import manifest
from tests.kubernetes_schemas import validate as validate_schema
from tests.repository import PROJECT
from tests.shared_plans import shared_plan
from tests.stack_variants import AL2023_RELEASE, BOTTLEROCKET_RELEASE

DAEMON_SET = "kubernetes:apps/v1:DaemonSet"
# Pulumi.karpenter-dev.yaml: h100-block is p5.48xlarge (8 H100, 32 EFA interfaces: EC2's
# accelerated computing instance table), l4-reserved g6.xlarge (1 L4) and g6.12xlarge (4 L4).
KARPENTER = "karpenter-dev"
KARPENTER_POOLS = ("h100-block", "l4-reserved", "t4-spot", "l4-on-demand")


def karpenter_plan(**pool_changes: Any) -> Plan:
    config = stack_config(KARPENTER, PROJECT)
    for pool in config["gpu-platform:pools"]:
        pool.update(pool_changes.get(pool["name"], {}))
    return shared_plan(KARPENTER, config)


def validator(plan: Plan, pool: str) -> PlannedResource:
    return plan.named(f"node-validation-{pool}", DAEMON_SET)


def env(daemon_set: PlannedResource) -> dict[str, Any]:
    container = daemon_set.inputs["spec"]["template"]["spec"]["containers"][0]
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def pod(daemon_set: PlannedResource) -> dict[str, Any]:
    spec: dict[str, Any] = daemon_set.inputs["spec"]["template"]["spec"]
    return spec


@pytest.fixture(scope="module")
def plan() -> Plan:
    return karpenter_plan()


def test_each_pool_validates_in_the_operators_namespace_once_per_node(plan: Plan) -> None:
    daemon_set = validator(plan, "h100-block")
    terms = pod(daemon_set)["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]

    assert daemon_set.inputs["metadata"]["namespace"] == "gpu-operator"
    assert terms == [
        {
            "matchExpressions": [
                {"key": "gpu-platform.io/pool", "operator": "In", "values": ["h100-block"]},
                {"key": "gpu-platform.io/validation", "operator": "DoesNotExist"},
            ]
        }
    ]


def test_the_pod_takes_every_gpu_through_the_runtime_class_without_requesting_any(
    plan: Plan,
) -> None:
    spec = pod(validator(plan, "h100-block"))
    # Every container but the first, which checks the node's taint only.
    containers = [*spec["initContainers"][1:], *spec["containers"]]

    assert spec["runtimeClassName"] == "nvidia"
    assert not any("nvidia.com/gpu" in str(c.get("resources")) for c in containers)
    assert all({"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"} in c["env"] for c in containers)
    assert {
        "key": "startup-taint.cluster-autoscaler.kubernetes.io/gpu-validation",
        "operator": "Equal",
        "value": "pending",
        "effect": "NoSchedule",
    } in spec["tolerations"]


# Bottlerocket's toolkit (Auto Mode's nodes, `nodeImage: bottlerocket`) gives a container without
# CAP_SYS_ADMIN no GPU by NVIDIA_VISIBLE_DEVICES, only by a mount of the host's /dev/null under
# /var/run/nvidia-container-devices, `all` naming every GPU (bottlerocket-os/bottlerocket-core-kit
# packages/nvidia-container-toolkit/nvidia-container-toolkit-config-k8s:
# accept-nvidia-visible-devices-envvar-when-unprivileged = false, ...-as-volume-mounts = true;
# NVIDIA/nvidia-container-toolkit v1.17.8, the release Bottlerocket builds,
# internal/config/image/cuda_image.go DevicesFromMounts (v1.20.0 requestsFromMounts), which
# skips any mount whose source is not /dev/null).
ALL_GPUS_VOLUME = {"name": "all-gpus", "hostPath": {"path": "/dev/null", "type": "CharDevice"}}
ALL_GPUS_MOUNT = {
    "name": "all-gpus",
    "mountPath": "/var/run/nvidia-container-devices/all",
    "readOnly": True,
}


def _eks_plan(shared_plan_for: Any, dev_config: Any, node_image: str) -> Plan:
    dev_config["gpu-platform:cluster"]["nodeImage"] = node_image
    pool = dev_config["gpu-platform:pools"][0]
    # Bottlerocket's nodes share no GPU (config rules refuse it there).
    pool["sharing"] = {"mode": "exclusive"}
    pool["aws"]["amiReleaseVersion"] = {
        "al2023": AL2023_RELEASE,
        "bottlerocket": BOTTLEROCKET_RELEASE,
    }[node_image]
    return shared_plan_for(dev_config)


@pytest.mark.parametrize("image", ["al2023", "bottlerocket", "eks-auto-mode"])
def test_the_unprivileged_validator_names_every_gpu_by_a_mount_on_every_node_image(
    shared_plan_for: Any, dev_config: Any, image: str
) -> None:
    if image == "eks-auto-mode":
        plan, pool = shared_plan("auto-dev"), "l40s"
    else:
        plan, pool = _eks_plan(shared_plan_for, dev_config, image), "t4-shared"
    spec = pod(validator(plan, pool))
    untainted, *_ = spec["initContainers"]
    checker = spec["containers"][0]

    assert ALL_GPUS_VOLUME in spec["volumes"]
    assert ALL_GPUS_MOUNT in checker["volumeMounts"]
    assert checker["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    # It checks the node's taint only, and must hold no GPU while a driver is unloaded.
    assert ALL_GPUS_MOUNT not in untainted["volumeMounts"]


def test_the_validator_is_configured_from_the_pool(plan: Plan) -> None:
    found = env(validator(plan, "h100-block"))

    assert {k: found[k] for k in ("EXPECTED_GPUS", "EXPECTED_NVLINKS", "EXPECTED_EFA_DEVICES")} == {
        "EXPECTED_GPUS": "8",
        # NVIDIA H100 Tensor Core GPU Architecture whitepaper: 18 NVLink links per H100 SXM5.
        "EXPECTED_NVLINKS": "18",
        "EXPECTED_EFA_DEVICES": "32",
    }
    assert (found["DCGM_DIAG_LEVEL"], found["SKIP_CHECKS"]) == ("1", "")
    assert found["NODE_NAME"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
    # The taint report.py removes on a pass: the one the pool's nodes join with.
    assert found["VALIDATION_TAINT_KEY"] == (
        "startup-taint.cluster-autoscaler.kubernetes.io/gpu-validation"
    )
    validate.config({k: v for k, v in found.items() if isinstance(v, str)})


def test_a_pool_of_several_sizes_expects_each_sizes_gpus(plan: Plan) -> None:
    found = env(validator(plan, "l4-reserved"))

    assert found["EXPECTED_GPUS"] == "4"
    assert json.loads(found["BY_INSTANCE_TYPE"]) == {
        "g6.xlarge": {"EXPECTED_GPUS": "1", "EXPECTED_NVLINKS": "0"}
    }


def test_level_two_and_skipped_checks_reach_the_pod() -> None:
    plan = karpenter_plan(
        **{"h100-block": {"validation": {"dcgmDiagLevel": 2, "skipChecks": ["pcie"]}}}
    )
    spec = pod(validator(plan, "h100-block"))
    script = spec["initContainers"][1]["command"][2]

    assert env(validator(plan, "h100-block"))["SKIP_CHECKS"] == "pcie"
    # validate.py DCGM_DIAG_TIMEOUT: 900 seconds for level 2.
    assert "timeout 900 dcgmi diag -r 2 -j > /recorded/dcgmi.out" in script


def test_a_pool_that_skips_the_diagnostic_runs_no_dcgm_container() -> None:
    plan = karpenter_plan(**{"h100-block": {"validation": {"skipChecks": ["dcgm-diag"]}}})

    names = [c["name"] for c in pod(validator(plan, "h100-block"))["initContainers"]]

    assert names == ["exempt-untainted"]


def test_no_pool_runs_the_all_reduce_without_a_bandwidth_to_hold_it_to(plan: Plan) -> None:
    spec = pod(validator(plan, "h100-block"))

    assert env(validator(plan, "h100-block"))["EXPECTED_BUSBW_GBPS"] == "0"
    assert "nccl-bandwidth" not in [c["name"] for c in spec["initContainers"]]


def test_a_pool_with_a_bandwidth_runs_the_all_reduce_in_its_own_container() -> None:
    bandwidth = {"validation": {"expectedBusBandwidthGbps": 400, "busBandwidthShare": 0.9}}
    plan = karpenter_plan(**{"h100-block": bandwidth, "l4-reserved": bandwidth})
    spec = pod(validator(plan, "h100-block"))
    nccl = spec["initContainers"][-1]
    script = nccl["command"][2]

    assert [c["name"] for c in spec["initContainers"]] == [
        "exempt-untainted",
        "dcgm-diag",
        "nccl-bandwidth",
    ]
    # aws-samples/awsome-distributed-training micro-benchmarks/nccl-tests: the Dockerfile's
    # default versions, published on public.ecr.aws/hpc-cloud, nccl-tests in /opt/nccl-tests.
    assert nccl["image"].startswith(
        "public.ecr.aws/hpc-cloud/nccl-tests:"
        "cuda12.8.1-efa1.43.2-ofiv1.16.3-ncclv2.27.7-1-testsv2.16.9"
    )
    assert "PATH=/opt/nccl-tests/build:$PATH" in script
    # validate.py NCCL_TIMEOUT: 600 seconds; its output where the validator reads it.
    assert (
        'timeout 600 all_reduce_perf -b 1G -e 8G -f 2 -g "$GPUS"'
        " > /recorded/all_reduce_perf.out" in script
    )
    assert nccl["securityContext"]["runAsNonRoot"] is True
    assert {"name": "shm", "mountPath": "/dev/shm"} in nccl["volumeMounts"]
    assert ALL_GPUS_MOUNT in nccl["volumeMounts"]
    assert nccl["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    found = env(validator(plan, "h100-block"))
    assert (found["EXPECTED_BUSBW_GBPS"], found["BUSBW_SHARE"]) == ("400.0", "0.9")
    # l4-reserved's g6.xlarge has one GPU: nothing to all-reduce across, no bandwidth to reach.
    assert json.loads(env(validator(plan, "l4-reserved"))["BY_INSTANCE_TYPE"]) == {
        "g6.xlarge": {"EXPECTED_GPUS": "1", "EXPECTED_NVLINKS": "0", "EXPECTED_BUSBW_GBPS": "0"}
    }


def test_an_untainted_node_is_exempted_before_any_tool_runs(plan: Plan) -> None:
    spec = pod(validator(plan, "h100-block"))

    first, *_ = spec["initContainers"]
    assert first["command"][-2:] == ["/opt/gpu-platform/report.py", "--exempt-untainted"]
    assert [c["name"] for c in spec["initContainers"]] == ["exempt-untainted", "dcgm-diag"]
    # It takes no GPU (a node validated again waits there while its old driver is unloaded).
    assert "NVIDIA_VISIBLE_DEVICES" not in {e["name"] for e in first["env"]}


def test_the_pod_has_time_to_record_a_failure_when_stopped(plan: Plan) -> None:
    # report.py holds SIGTERM off across four API calls, each within its 30 s timeout.
    assert pod(validator(plan, "h100-block"))["terminationGracePeriodSeconds"] == 120


def test_a_pool_without_validation_gets_no_validator() -> None:
    plan = karpenter_plan(**{"h100-block": {"validation": {"enabled": False}}})

    assert {r.name for r in plan.of_type(DAEMON_SET) if "node-validation" in r.name} == {
        f"node-validation-{pool}" for pool in KARPENTER_POOLS if pool != "h100-block"
    }


def test_karpenter_pools_replace_within_their_cap(plan: Plan) -> None:
    cluster_role = plan.named(
        "node-validation", "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole"
    )
    role = plan.named("node-validation", "kubernetes:rbac.authorization.k8s.io/v1:Role")

    assert env(validator(plan, "h100-block"))["REPLACEMENTS_PER_HOUR"] == "2"
    assert cluster_role.inputs["rules"] == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch", "delete"]}
    ]
    assert role.inputs["rules"][1] == {
        "apiGroups": [""],
        "resources": ["configmaps"],
        "resourceNames": ["gpu-node-validation-replacements"],
        "verbs": ["get", "update"],
    }
    assert plan.named("node-validation-ledger", "kubernetes:core/v1:ConfigMap")


def test_a_cap_of_zero_everywhere_may_delete_no_node() -> None:
    never = {"validation": {"replacementsPerHour": 0}}
    plan = karpenter_plan(**{p: never for p in KARPENTER_POOLS})
    cluster_role = plan.named(
        "node-validation", "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole"
    )
    role = plan.named("node-validation", "kubernetes:rbac.authorization.k8s.io/v1:Role")

    assert cluster_role.inputs["rules"][0]["verbs"] == ["get", "patch"]
    assert role.inputs["rules"] == [
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]}
    ]


def test_a_node_group_pool_never_replaces(shared_plan_for: Any, dev_config: Any) -> None:
    plan = shared_plan_for(dev_config)
    daemon_sets = [r for r in plan.of_type(DAEMON_SET) if r.name.startswith("node-validation-")]

    assert daemon_sets
    assert {env(d)["REPLACEMENTS_PER_HOUR"] for d in daemon_sets} == {"0"}


def test_the_admission_policy_binds_before_any_validator_runs(plan: Plan) -> None:
    binding = plan.named(
        "node-validation",
        "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding",
    )
    daemon_set = validator(plan, "h100-block")

    assert binding.urn in daemon_set.dependencies
    assert binding.inputs["spec"] == {
        "policyName": "gpu-platform-node-validator",
        "validationActions": ["Deny"],
    }


def test_the_validators_objects_are_valid_kubernetes(plan: Plan) -> None:
    for resource in plan.resources:
        if resource.name.startswith("node-validation") and resource.type.startswith("kubernetes:"):
            validate_schema(manifest(resource))


def test_a_failed_node_can_be_validated_again(plan: Plan) -> None:
    # A failed node that was not replaced carries the failure taint beside the validation taint.
    tolerations = pod(validator(plan, "h100-block"))["tolerations"]

    assert {
        "key": "gpu-platform.io/validation-failed",
        "operator": "Exists",
        "effect": "NoSchedule",
    } in tolerations
