"""Tenant namespaces as the program declares them: Pod Security labels, the GPU quota and the
restricted `nvidia-smi` smoke test."""

import subprocess
from decimal import Decimal
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import pytest

from gpu_platform.config import GpuPoolSpec, TenantNamespaceSpec
from gpu_platform.fit import quantity
from gpu_platform.kubernetes.tenant_namespace import (
    ROLLOUT_PENDING_CHECK,
    SMOKE_TEST_SCRIPT,
    gpu_quota,
)
from gpu_platform.node_identity import GpuShape, ResolvedPool, resolve_pool
from gpu_platform.offline.program import Plan, PlannedResource, run_program
from gpu_platform.offline.stand_ins import aws as stand_ins_aws
from gpu_platform.stack_files import stack_config
from gpu_platform.versions import GPU_SMOKE_TEST_IMAGE, POD_SECURITY_VERSION
from tests.conftest import dev_stack_config, gke_stack_config
from tests.gpu_platform.gke.plans import on_ubuntu
from tests.gpu_platform.kubernetes.gate_graph import new_driver_preference
from tests.gpu_platform.kubernetes.restricted_pod_security import restricted_violations
from tests.kubernetes_schemas import manifest, validate
from tests.repository import PROJECT
from tests.shared_plans import shared_plan
from tests.stack_variants import MIG_POOL, MIG_SLICE_RESOURCE, with_mig_mixed_pool

COMPONENT = "gpu-platform:kubernetes:GpuTenantNamespace"
NAMESPACE = "kubernetes:core/v1:Namespace"
QUOTA = "kubernetes:core/v1:ResourceQuota"
JOB = "kubernetes:batch/v1:Job"


def namespace(plan: Plan, name: str = "ml-sandbox") -> PlannedResource:
    return plan.named(name, NAMESPACE)


def quota(plan: Plan, name: str = "ml-sandbox") -> PlannedResource:
    return plan.named(f"{name}-gpu-quota", QUOTA)


def pool(index: int, sharing: dict[str, Any]) -> ResolvedPool:
    spec = GpuPoolSpec.model_validate(
        {"name": f"pool-{index}", "instanceTypes": ["g4dn.xlarge"], "max": 1, "sharing": sharing}
    )
    return resolve_pool(spec, index, GpuShape("t4", 1))


# The longest a new one-GPU node of a validated pool stays tainted: 300 s for the validation
# pod's start, 60 s each for `nvidia-smi -q -x` and `nvidia-smi nvlink --status`, 300 s for
# `dcgmi diag -r 1` (node_validation/validate.py's timeouts), and 300 s to pull DCGM's image
# (duration.py's allowance per tool image).
VALIDATION = 300 + 60 + 60 + 300 + 300


def job(plan: Plan, name: str = "ml-sandbox") -> PlannedResource:
    return plan.named(f"{name}-gpu-smoke-test", JOB)


def pod(plan: Plan) -> dict[str, Any]:
    return job(plan).inputs["spec"]["template"]["spec"]


@pytest.fixture
def prod_plan() -> Plan:
    return shared_plan("prod")


@pytest.fixture
def mig_plan(dev_config, shared_plan_for) -> Plan:
    return shared_plan_for(with_mig_mixed_pool(dev_config))


# --- Namespace -----------------------------------------------------------------------------


def test_namespace_has_the_configured_name(dev_plan) -> None:
    assert namespace(dev_plan).inputs["metadata"]["name"] == "ml-sandbox"


def test_namespace_enforces_audits_and_warns_restricted_at_the_pinned_version(dev_plan) -> None:
    labels = namespace(dev_plan).inputs["metadata"]["labels"]

    assert labels == {
        "pod-security.kubernetes.io/enforce": "restricted",
        "pod-security.kubernetes.io/enforce-version": POD_SECURITY_VERSION,
        "pod-security.kubernetes.io/audit": "restricted",
        "pod-security.kubernetes.io/audit-version": POD_SECURITY_VERSION,
        "pod-security.kubernetes.io/warn": "restricted",
        "pod-security.kubernetes.io/warn-version": POD_SECURITY_VERSION,
        # The dev stack queues its jobs through Kueue, whose webhooks select this label.
        "gpu-platform.io/queue": "default",
    }


def test_baseline_level_applies_to_every_mode(dev_config, plan_for) -> None:
    dev_config["gpu-platform:namespaces"][0]["podSecurity"] = "baseline"

    labels = namespace(plan_for(dev_config)).inputs["metadata"]["labels"]

    assert {labels[f"pod-security.kubernetes.io/{m}"] for m in ("enforce", "audit", "warn")} == {
        "baseline"
    }


def test_each_configured_namespace_gets_its_own_resources(dev_config, plan_for) -> None:
    dev_config["gpu-platform:namespaces"].append({"name": "vision", "sharedGpuQuota": 2})

    plan = plan_for(dev_config)

    assert [r.name for r in plan.children_of(plan.named("vision", COMPONENT))] == [
        "vision",
        "vision-gpu-quota",
        "vision-cluster-queue",
        "vision-local-queue",
        "vision-gpu-pod-defaults",
    ]


def test_children_belong_to_the_component(dev_plan) -> None:
    component = dev_plan.named("ml-sandbox", COMPONENT)

    assert {r.type for r in dev_plan.children_of(component)} == {
        NAMESPACE,
        QUOTA,
        "kubernetes:core/v1:LimitRange",
        JOB,
        "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue",
        "kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue",
    }


# --- Quota ---------------------------------------------------------------------------------


# Every uniform MIG profile of the GPUs the platform knows (A30, A100 40GB and 80GB, H100, H200,
# B200), from NVIDIA's MIG user guide, "Supported MIG Profiles", and each GPU's profiles with
# media engines, which the GPU Operator v26.7.0's MIG manager offers as `all-<profile>.me`
# (assets/state-mig-manager/0400_configmap.yaml): what the device plugin's `mixed` strategy can
# advertise as `nvidia.com/mig-<profile>`, NVML's `1g.10gb+me` as `mig-1g.10gb.me`
# (k8s-device-plugin v0.20.0, the operator's, internal/rm/rm.go `AddDefaultResourcesToConfig`:
# `strings.ReplaceAll("mig-"+p.String(), "+", ".")`).
MIG_SLICES = {
    *("1g.6gb", "2g.12gb", "4g.24gb", "1g.6gb.me", "2g.12gb.me"),
    *("1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb", "1g.5gb.me"),
    *("1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb", "1g.10gb.me"),
    *("1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb", "1g.18gb.me"),
    *("1g.23gb", "1g.45gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb", "1g.23gb.me"),
}


def hard(plan: Plan, name: str = "ml-sandbox") -> dict[str, str]:
    return dict(quota(plan, name).inputs["spec"]["hard"])


def allowed(plan: Plan, name: str = "ml-sandbox") -> dict[str, str]:
    """The quota's caps but the MIG slices and DeviceClasses it holds at 0."""
    return {
        k: v
        for k, v in hard(plan, name).items()
        if v != "0" or ("mig-" not in k and ".deviceclass." not in k)
    }


def test_quota_caps_gpu_requests_in_the_namespace(dev_plan) -> None:
    inputs = quota(dev_plan).inputs

    assert (inputs["metadata"]["namespace"], allowed(dev_plan)) == (
        "ml-sandbox",
        {"requests.nvidia.com/gpu": "8"},
    )


def test_quota_waits_for_its_namespace(dev_plan) -> None:
    assert namespace(dev_plan).urn in quota(dev_plan).dependencies


def test_every_mig_slice_is_capped_whatever_the_stacks_pools(dev_plan) -> None:
    # The dev stack has no MIG pool and its namespace no migQuota. A ResourceQuota caps only
    # the names in its `hard` (k8s.io/apiserver v0.35.0,
    # pkg/admission/plugin/resourcequota/controller.go `CheckRequest`): a slice left out would
    # be unlimited on a MIG pool added later.
    assert {k: v for k, v in hard(dev_plan).items() if "mig-" in k} == {
        f"requests.nvidia.com/mig-{s}": "0" for s in MIG_SLICES
    }


def test_a_slice_migquota_leaves_out_is_capped_at_0_beside_one_it_lists(prod_plan) -> None:
    caps = hard(prod_plan, "ml-inference")

    # prod's pools advertise 1g.10gb alone; 3g.40gb is a slice of the same GPU.
    assert (caps["requests.nvidia.com/mig-1g.10gb"], caps["requests.nvidia.com/mig-3g.40gb"]) == (
        "112",
        "0",
    )


def test_replicas_of_shared_gpus_are_capped_by_their_own_setting(dev_config, plan_for) -> None:
    dev_config["gpu-platform:namespaces"][0].update(gpuQuota=3, sharedGpuQuota=12, migQuota={})

    # The dev stack's only pool is time-sliced: its nvidia.com/gpu are replicas.
    assert allowed(plan_for(dev_config)) == {"requests.nvidia.com/gpu": "12"}


def test_a_replica_cap_never_lets_pods_take_more_whole_gpus() -> None:
    spec = TenantNamespaceSpec.model_validate({"name": "team", "gpuQuota": 2, "sharedGpuQuota": 12})
    pools = [pool(0, {"mode": "exclusive"}), pool(1, {"mode": "time-slicing", "replicas": 4})]

    # Both are nvidia.com/gpu, and a ResourceQuota caps a resource by its name: a cap of 2 + 12
    # would let the namespace's pods take 14 whole GPUs. Config validation refuses any
    # sharedGpuQuota here; the cap stays at gpuQuota all the same.
    assert gpu_quota(spec, pools, "1.35")["requests.nvidia.com/gpu"] == "2"


def test_a_profile_with_media_engines_is_capped_under_the_device_plugins_name() -> None:
    spec = TenantNamespaceSpec.model_validate({"name": "team", "migQuota": {"1g.10gb.me": 2}})
    caps = gpu_quota(spec, [pool(0, {"mode": "exclusive"})], "1.35")

    # NVML's 1g.10gb+me, as k8s-device-plugin v0.20.0 names it (internal/rm/rm.go); its
    # sibling of the A100 40GB, which migQuota leaves out, at 0.
    assert (
        caps["requests.nvidia.com/mig-1g.10gb.me"],
        caps["requests.nvidia.com/mig-1g.5gb.me"],
    ) == (
        "2",
        "0",
    )


def test_whole_gpus_are_capped_by_gpu_quota(prod_plan) -> None:
    assert allowed(prod_plan, "ml-training") == {
        "requests.nvidia.com/gpu": "16",
    }


def test_mig_slices_are_capped_by_their_own_setting(prod_plan) -> None:
    assert allowed(prod_plan, "ml-inference") == {
        # No whole GPU: ml-inference sets only migQuota.
        "requests.nvidia.com/gpu": "0",
        "requests.nvidia.com/mig-1g.10gb": "112",
    }


def test_quota_caps_mig_slices_of_a_mixed_pool_apart_from_replicas(mig_plan) -> None:
    assert allowed(mig_plan) == {
        "requests.nvidia.com/gpu": "8",
        f"requests.{MIG_SLICE_RESOURCE}": "8",
    }


# Kubernetes pkg/quota/v1/evaluator/core/resource_claims.go (v1.34 to v1.36): devices claimed
# per class, `<class>.deviceclass.resource.k8s.io/devices`; the classes of NVIDIA's DRA driver
# chart, nvidia-dra-driver-gpu v25.12.0 templates/deviceclass-gpu.yaml, deviceclass-mig.yaml,
# deviceclass-vfio-gpu.yaml.
NVIDIA_CLASSES_AT_0 = {
    "gpu.nvidia.com.deviceclass.resource.k8s.io/devices": "0",
    "mig.nvidia.com.deviceclass.resource.k8s.io/devices": "0",
    "vfio.gpu.nvidia.com.deviceclass.resource.k8s.io/devices": "0",
}


def device_class_caps(caps: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in caps.items() if ".deviceclass." in k}


@pytest.mark.parametrize("version", ["1.34", "1.35", "1.35.6-gke.1163000"])
def test_nvidia_dra_classes_are_capped_at_0_without_dra_pools_at_1_34_and_1_35(
    version: str,
) -> None:
    spec = TenantNamespaceSpec.model_validate({"name": "team", "gpuQuota": 4})

    caps = gpu_quota(spec, [pool(0, {"mode": "exclusive"})], version)

    assert device_class_caps(caps) == NVIDIA_CLASSES_AT_0


@pytest.mark.parametrize("version", ["1.36", "1.36.1-gke.1000000"])
def test_from_1_36_the_gpu_class_is_capped_at_the_gpus_a_namespace_may_ask_for(
    version: str,
) -> None:
    spec = TenantNamespaceSpec.model_validate({"name": "team", "gpuQuota": 4})

    caps = gpu_quota(spec, [pool(0, {"mode": "exclusive"})], version)

    # DRAExtendedResource, on by default from 1.36, serves `nvidia.com/gpu` through
    # gpu.nvidia.com (its `extendedResourceName` in the chart's deviceclass-gpu.yaml) and
    # counts its devices as `nvidia.com/gpu`; MIG and VFIO classes map nothing.
    assert device_class_caps(caps) == {
        "gpu.nvidia.com.deviceclass.resource.k8s.io/devices": "4",
        "mig.nvidia.com.deviceclass.resource.k8s.io/devices": "0",
        "vfio.gpu.nvidia.com.deviceclass.resource.k8s.io/devices": "0",
    }


def test_from_1_36_the_gpu_class_follows_replicas_where_pools_only_share() -> None:
    spec = TenantNamespaceSpec.model_validate({"name": "team", "gpuQuota": 2, "sharedGpuQuota": 12})

    caps = gpu_quota(spec, [pool(0, {"mode": "time-slicing", "replicas": 4})], "1.36")

    # The namespace's pods may ask for 12 `nvidia.com/gpu`: a claim made for one of them is
    # not refused below that.
    assert caps["gpu.nvidia.com.deviceclass.resource.k8s.io/devices"] == "12"


def test_from_1_36_the_gpu_class_allows_what_a_queued_namespace_borrows() -> None:
    spec = TenantNamespaceSpec.model_validate(
        {"name": "team", "gpuQuota": 4, "queue": {"borrowingLimit": 3}}
    )
    pools = [pool(0, {"mode": "exclusive"}), pool(1, {"mode": "exclusive"})]

    caps = gpu_quota(spec, pools, "1.36", queued=True)

    # 4, and 3 more borrowed on each of the two pools Kueue admits on.
    assert (
        caps["requests.nvidia.com/gpu"],
        caps["gpu.nvidia.com.deviceclass.resource.k8s.io/devices"],
    ) == ("10", "10")


@pytest.mark.parametrize("version", ["1.34", "1.35"])
def test_on_auto_mode_the_gpu_class_is_capped_at_the_gpus_a_namespace_may_ask_for_from_1_34(
    version: str,
) -> None:
    spec = TenantNamespaceSpec.model_validate({"name": "team", "gpuQuota": 4})

    caps = gpu_quota(spec, [pool(0, {"mode": "exclusive"})], version, auto_mode=True)

    assert device_class_caps(caps) == {
        "gpu.nvidia.com.deviceclass.resource.k8s.io/devices": "4",
        "mig.nvidia.com.deviceclass.resource.k8s.io/devices": "0",
        "vfio.gpu.nvidia.com.deviceclass.resource.k8s.io/devices": "0",
    }


def test_on_auto_mode_a_cluster_before_1_34_gets_no_device_class_caps() -> None:
    spec = TenantNamespaceSpec.model_validate({"name": "team", "gpuQuota": 4})

    caps = gpu_quota(spec, [pool(0, {"mode": "exclusive"})], "1.33", auto_mode=True)

    assert device_class_caps(caps) == {}


def test_a_cluster_before_1_34_gets_no_device_class_caps() -> None:
    spec = TenantNamespaceSpec.model_validate({"name": "team", "gpuQuota": 4})

    # resource.k8s.io/v1, and with it per-class device quota, is served from 1.34.
    caps = gpu_quota(spec, [pool(0, {"mode": "exclusive"})], "1.33")

    assert device_class_caps(caps) == {}


def plan_at(stack: str, version: str, monkeypatch: pytest.MonkeyPatch, **aws: Any) -> Plan:
    """`stack` on an existing EKS cluster at Kubernetes `version`, its first pool's `aws`
    settings updated with `aws`."""
    monkeypatch.setattr(stand_ins_aws, "STAND_IN_KUBERNETES_VERSION", version)
    config = stack_config(stack, PROJECT)
    config["gpu-platform:pools"][0].setdefault("aws", {}).update(aws)
    return run_program(stack, config=config, project=PROJECT)


@pytest.mark.parametrize("version", ["1.34", "1.35", "1.36"])
def test_an_auto_mode_stack_caps_the_gpu_class_at_its_gpu_quota_from_1_34(
    monkeypatch: pytest.MonkeyPatch, version: str
) -> None:
    # auto-dev has no DRA pool; "EKS Auto Mode includes the NVIDIA DRA driver in the node
    # runtime on Kubernetes version 1.36 and later" (EKS user guide, "Use the NVIDIA DRA driver
    # or device plugin on Amazon EKS"): below 1.36 no such class exists, and the cap is in place
    # when the cluster is upgraded outside the stack. ml-sandbox's gpuQuota is 4.
    plan = plan_at("auto-dev", version, monkeypatch)

    assert device_class_caps(hard(plan)) == {
        "gpu.nvidia.com.deviceclass.resource.k8s.io/devices": "4",
        "mig.nvidia.com.deviceclass.resource.k8s.io/devices": "0",
        "vfio.gpu.nvidia.com.deviceclass.resource.k8s.io/devices": "0",
    }


@pytest.mark.parametrize("minor", ["1.34", "1.35", "1.36"])
def test_a_quota_capping_device_classes_validates_at_each_version_serving_dra(
    monkeypatch: pytest.MonkeyPatch, minor: str
) -> None:
    found = quota(plan_at("auto-dev", minor, monkeypatch))

    assert len(device_class_caps(found.inputs["spec"]["hard"])) == 3
    validate(manifest(found), minor)


def test_an_eks_cluster_at_1_33_gets_no_device_class_caps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The newest AL2023 release for 1.33 the platform knows (gpu_platform/driver_tables).
    plan = plan_at("dev", "1.33", monkeypatch, amiReleaseVersion="1.33.13-20260714")

    assert device_class_caps(hard(plan)) == {}


def test_a_gke_cluster_at_1_33_gets_no_device_class_caps() -> None:
    # The GKE stand-in's cluster runs 1.33.5-gke.1201000.
    assert device_class_caps(hard(shared_plan("gke-dev"))) == {}


def test_quota_of_zero_keeps_gpus_out(dev_config, plan_for) -> None:
    dev_config["gpu-platform:namespaces"][0] = {"name": "ml-sandbox"}

    assert set(hard(plan_for(dev_config)).values()) == {"0"}


# --- Smoke test ----------------------------------------------------------------------------


LIMIT_RANGE = "kubernetes:core/v1:LimitRange"


def limit_range(plan: Plan, name: str = "ml-sandbox") -> PlannedResource:
    return plan.named(f"{name}-gpu-pod-defaults", LIMIT_RANGE)


def test_containers_without_requests_get_a_small_cpu_and_memory_request(dev_plan) -> None:
    inputs = limit_range(dev_plan).inputs

    assert inputs["metadata"]["namespace"] == "ml-sandbox"
    assert inputs["spec"] == {
        "limits": [{"type": "Container", "defaultRequest": {"cpu": "100m", "memory": "256Mi"}}]
    }


def test_a_mig_pod_with_the_defaults_keeps_its_node_above_the_scale_down_threshold(
    mig_plan,
) -> None:
    (default,) = limit_range(mig_plan).inputs["spec"]["limits"]
    requests = default["defaultRequest"]
    # A p4de.24xlarge as the autoscaler's template has it: 96 vCPUs, 1152 GiB
    # (cloudprovider/aws/ec2_instance_types.go). Utilization is the larger of CPU and memory
    # requested over allocatable, DaemonSets left out (simulator/utilization/info.go,
    # cluster-autoscaler-1.35.2); a MIG pool's threshold is one millionth (its ASG tag).
    cpu = quantity(requests["cpu"]) / 96
    memory = quantity(requests["memory"]) / (1152 * 2**30)

    assert max(cpu, memory) > Decimal("0.000001")


def test_the_defaults_fit_four_replicas_on_the_smallest_gpu_node(dev_plan) -> None:
    (default,) = limit_range(dev_plan).inputs["spec"]["limits"]
    requests = default["defaultRequest"]

    # g4dn.xlarge: 4 vCPUs, 16 GiB, time-sliced 4 ways in the dev stack.
    assert 4 * quantity(requests["cpu"]) <= 1
    assert 4 * quantity(requests["memory"]) <= 2 * 2**30


def test_no_smoke_test_without_a_pool(dev_config, plan_for) -> None:
    del dev_config["gpu-platform:namespaces"][0]["smokeTestPool"]

    assert plan_for(dev_config).of_type(JOB) == []


def test_smoke_test_runs_its_driver_check_from_the_pinned_image(dev_plan) -> None:
    (container,) = pod(dev_plan)["containers"]

    assert (container["image"], container["command"]) == (
        GPU_SMOKE_TEST_IMAGE.reference,
        ["sh", "-c", SMOKE_TEST_SCRIPT],
    )


def test_smoke_test_expects_the_pools_driver(dev_plan) -> None:
    (container,) = pod(dev_plan)["containers"]

    assert {"name": "EXPECTED_NVIDIA_DRIVER", "value": "580.159.03"} in container["env"]


def run_smoke_script(tmp_path: Path, expected: str, drivers: list[str]) -> "CompletedProcess[str]":
    """The smoke test's script under `sh`, with an `nvidia-smi` that reports `drivers`."""
    fake = tmp_path / "nvidia-smi"
    listing = "\n".join(drivers)
    fake.write_text(
        f'#!/bin/sh\nif [ "$1" = --query-gpu=driver_version ]; then printf "{listing}\\n"; fi\n'
    )
    fake.chmod(0o755)
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin", "EXPECTED_NVIDIA_DRIVER": expected}
    return subprocess.run(
        ["sh", "-c", SMOKE_TEST_SCRIPT], env=env, capture_output=True, text=True, check=False
    )


@pytest.mark.parametrize(
    ("expected", "drivers"),
    [("580.159.03", ["580.159.03"]), ("580", ["580.95.05", "580.95.05"])],
    ids=["exact version", "branch"],
)
def test_the_smoke_script_passes_on_the_expected_driver(
    tmp_path: Path, expected: str, drivers: list[str]
) -> None:
    assert run_smoke_script(tmp_path, expected, drivers).returncode == 0


@pytest.mark.parametrize(
    ("expected", "drivers"),
    [("580.159.03", ["580.159.031"]), ("580", ["580.95.05", "570.195.03"]), ("58", ["580.1"])],
    ids=["another patch", "one gpu on another branch", "a prefix of the branch"],
)
def test_the_smoke_script_fails_on_another_driver(
    tmp_path: Path, expected: str, drivers: list[str]
) -> None:
    result = run_smoke_script(tmp_path, expected, drivers)

    assert result.returncode == 1
    assert "not the pool's" in result.stdout


def test_the_smoke_image_runs_on_every_driver_a_pool_may_have() -> None:
    # nvcr.io/nvidia/cuda:<major>.<minor>.<patch>-base-...: CUDA 12.2, which R535 runs (the
    # oldest default driver a pool gets, GKE COS 1.31-1.33).
    release = GPU_SMOKE_TEST_IMAGE.tag.split("-")[0]

    assert tuple(map(int, release.split(".")[:2])) <= (12, 2)


def test_smoke_test_runs_in_the_tenant_namespace(dev_plan) -> None:
    assert job(dev_plan).inputs["metadata"]["namespace"] == "ml-sandbox"


def test_smoke_test_pod_passes_restricted(dev_plan) -> None:
    assert restricted_violations(pod(dev_plan)) == []


def test_smoke_test_pod_runs_as_a_non_root_user_without_privileges(dev_plan) -> None:
    spec = pod(dev_plan)

    assert spec["securityContext"] == {
        "runAsNonRoot": True,
        "runAsUser": 1000,
        "runAsGroup": 1000,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert spec["containers"][0]["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
    }


def test_smoke_test_pod_gets_no_service_account_token(dev_plan) -> None:
    assert pod(dev_plan)["automountServiceAccountToken"] is False


def test_smoke_test_takes_one_gpu_as_a_limit(dev_plan) -> None:
    assert pod(dev_plan)["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"


def test_smoke_test_on_a_mig_mixed_pool_takes_one_slice(mig_plan) -> None:
    limits = pod(mig_plan)["containers"][0]["resources"]["limits"]

    assert (limits.get(MIG_SLICE_RESOURCE), "nvidia.com/gpu" in limits) == ("1", False)


def test_smoke_test_tolerates_the_gpu_taint(dev_plan) -> None:
    assert pod(dev_plan)["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}
    ]


def test_smoke_test_requires_a_node_of_its_pool(mig_plan) -> None:
    affinity = pod(mig_plan)["affinity"]["nodeAffinity"]

    assert affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] == [
        {
            "matchExpressions": [
                {"key": "gpu-platform.io/pool", "operator": "In", "values": [MIG_POOL]}
            ]
        }
    ]


def test_the_autoscaler_never_drains_a_node_mid_smoke_test(dev_plan) -> None:
    # cluster-autoscaler simulator/drainability/rules/notsafetoevict/rule.go blocks the drain.
    metadata = job(dev_plan).inputs["spec"]["template"]["metadata"]

    assert metadata["annotations"] == {"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}


def test_karpenter_never_disrupts_a_node_mid_smoke_test() -> None:
    # Karpenter reads no cluster autoscaler annotation; `karpenter.sh/do-not-disrupt` keeps it
    # from consolidating, drifting or evicting (concepts/disruption.md at v1.14.1).
    metadata = job(shared_plan("karpenter-dev")).inputs["spec"]["template"]["metadata"]

    assert metadata["annotations"] == {"karpenter.sh/do-not-disrupt": "true"}


def test_failed_nvidia_smi_fails_the_job_without_retrying(dev_plan) -> None:
    spec = job(dev_plan).inputs["spec"]

    assert (spec["backoffLimit"], spec["template"]["spec"]["restartPolicy"]) == (0, "Never")


def test_disrupted_pod_is_retried_rather_than_counted_as_a_failure(dev_plan) -> None:
    assert job(dev_plan).inputs["spec"]["podFailurePolicy"] == {
        "rules": [
            {
                "action": "Ignore",
                "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
            }
        ]
    }


def test_job_gives_up_after_the_configured_deadline(dev_config, plan_for) -> None:
    dev_config["gpu-platform:namespaces"][0]["smokeTestDeadlineSeconds"] = 1200
    dev_config["gpu-platform:pools"][0]["validation"] = {"enabled": False}

    assert job(plan_for(dev_config)).inputs["spec"]["activeDeadlineSeconds"] == 1200


def test_a_validated_pools_smoke_test_waits_for_its_nodes_validation(dev_plan) -> None:
    # The Job's pod does not tolerate the validation taint: the 900 s of
    # smokeTestDeadlineSeconds' default, then the dev stack's one-GPU node's validation (no NCCL
    # test on one GPU).
    assert job(dev_plan).inputs["spec"]["activeDeadlineSeconds"] == 900 + VALIDATION


def test_pulumi_waits_past_the_jobs_deadline(dev_plan) -> None:
    inputs = job(dev_plan).inputs
    await_seconds = int(inputs["metadata"]["annotations"]["pulumi.com/timeoutSeconds"])

    assert await_seconds > inputs["spec"]["activeDeadlineSeconds"]


def test_failed_smoke_test_is_replaced_on_the_next_update(dev_plan) -> None:
    assert job(dev_plan).inputs["metadata"]["annotations"]["pulumi.com/replaceUnready"] == "true"


def test_finished_job_is_kept_so_refresh_does_not_rerun_it(dev_plan) -> None:
    assert "ttlSecondsAfterFinished" not in job(dev_plan).inputs["spec"]


def test_smoke_test_waits_for_namespace_and_quota(dev_plan) -> None:
    assert {namespace(dev_plan).urn, quota(dev_plan).urn} <= set(job(dev_plan).dependencies)


# --- GKE Ubuntu: the smoke test waits for its pool's new driver -------------------------------


@pytest.fixture(scope="module")
def ubuntu_plan() -> Plan:
    """GKE Ubuntu, the smoke test on `l4-shared`, which runs a driver of its own."""
    config = on_ubuntu(gke_stack_config(dev_stack_config()))
    (pool,) = config["gpu-platform:pools"]
    pool.setdefault("gcp", {})["driverVersion"] = "595.120.02"
    return run_program("dev", config=config, project=PROJECT)


def test_an_ubuntu_smoke_test_retries_a_node_still_on_the_old_driver(ubuntu_plan: Plan) -> None:
    # A new driver is a new pod template, so Pulumi replaces the Job once the pool's
    # NVIDIADriver changed, and the GPU Operator loads the driver on the running nodes after
    # that, one node at a time (gpu-operator v26.7.0 controllers/upgrade_controller.go,
    # reconcileNVIDIADriverUpgrades): with `backoffLimit: 0` a pod on a node not reached yet
    # failed `pulumi up`. `Ignore` does not count the pod and starts another (Kubernetes core/v1
    # PodFailurePolicyAction).
    spec = job(ubuntu_plan).inputs["spec"]
    (container,) = spec["template"]["spec"]["containers"]

    assert spec["podFailurePolicy"]["rules"][0] == {
        "action": "Ignore",
        "onExitCodes": {"containerName": "nvidia-smi", "operator": "In", "values": [75]},
    }
    assert container["command"][2].startswith(ROLLOUT_PENDING_CHECK)
    assert {"name": "EXPECTED_NVIDIA_DRIVER", "value": "595.120.02"} in container["env"]


def test_an_ubuntu_smoke_test_prefers_nodes_on_the_new_driver_but_requires_only_its_pool(
    ubuntu_plan: Plan,
) -> None:
    # GPU feature discovery's driver label (NVIDIA/k8s-device-plugin v0.20.0 internal/lm/nvml.go
    # `newVersionLabeler`); required, it would keep the cluster autoscaler from scaling the pool
    # up, as its template is a copy of an old node (kubernetes/autoscaler
    # cluster-autoscaler-1.35.2 processors/nodeinfosprovider/mixed_nodeinfos_processor.go) and
    # only required terms filter (kubernetes v1.35
    # pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go).
    affinity = pod(ubuntu_plan)["affinity"]["nodeAffinity"]

    assert affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] == [
        {
            "matchExpressions": [
                {"key": "gpu-platform.io/pool", "operator": "In", "values": ["l4-shared"]}
            ]
        }
    ]
    assert affinity["preferredDuringSchedulingIgnoredDuringExecution"] == (
        new_driver_preference("595.120.02")
    )


def test_an_ubuntu_smoke_tests_deadline_covers_the_operators_wait_for_a_nodes_jobs(
    ubuntu_plan: Plan,
) -> None:
    # smokeTestDeadlineSeconds (900 by default), then 1440 minutes for a node's Jobs
    # (driverUpgradeJobWaitMinutes' default, the NVIDIADriver's waitForCompletion), 300 s for
    # the GPU pods' deletion (its podDeletion timeout), 60 s for GPU feature discovery to
    # relabel the node and 600 s of the Job controller's backoff after ignored failures
    # (MaxJobPodFailureBackOff, which counts ignored failures too, kubernetes/kubernetes#130881),
    # three times: the first pod after the upgrade and two on nodes not upgraded yet; Pulumi
    # waits 120 s longer, and the 30 minutes of `queues.smokeTestQueueMinutes` the Job may wait
    # in its queue before its deadline starts. A new node's validation adds its worst case
    # (VALIDATION). Should the autoscaler remove the smoke test's idle node during the Job
    # controller's backoff, Kueue evicts the Job once its pods stay unready past
    # `recoveryTimeout` (pkg/controller/core/workload_controller.go at kueue v0.19.2), 1260 s
    # after its last pod where the deadline allowed 660 s; requeues it after 60 s
    # (`backoffBaseSeconds`); holds it inadmissible meanwhile, so the tenant's next job may
    # take its quota and it waits in the queue again, another 30 minutes (`UpdateRequeueState`,
    # pkg/workload/workload.go); and admits it again, whose new node is ready within Kueue's
    # `timeout`: 900 s for its start, its validation and 600 s for the pod's start.
    inputs = job(ubuntu_plan).inputs
    deadline = 900 + VALIDATION + 1440 * 60 + 300 + 3 * 660
    first_wait = 120 + 30 * 60
    readmission = (1260 - 660) + 60 + 30 * 60 + 900 + VALIDATION + 600

    assert (
        inputs["spec"]["activeDeadlineSeconds"],
        inputs["metadata"]["annotations"]["pulumi.com/timeoutSeconds"],
    ) == (deadline, str(deadline + first_wait + readmission))
