"""The GKE dev stack in the repository (`Pulumi.gke-dev.yaml`) plans offline, whole."""

import copy
from dataclasses import replace

import pytest

from gpu_platform.kubernetes.monitoring import GKE_DCGM_EXPORTER
from gpu_platform.offline.plan import read_policy_config
from gpu_platform.offline.program import Plan, run_program
from gpu_platform.stack_files import stack_config
from tests.repository import PROJECT
from tests.shared_plans import shared_plan


@pytest.fixture(scope="module")
def plan() -> Plan:
    return shared_plan("gke-dev")


@pytest.mark.parametrize(
    ("type_", "name"),
    [
        ("gcp:container/nodePool:NodePool", "l4-shared"),
        ("kubernetes:yaml/v2:ConfigFile", "nvidia-driver-installer"),
        ("kubernetes:core/v1:ResourceQuota", "gpu-operator-critical-pods"),
        ("kubernetes:helm.sh/v3:Release", "gpu-operator"),
        ("gpu-platform:kubernetes:GpuMonitoring", "gpu-monitoring"),
        ("gpu-platform:kubernetes:GpuTenantNamespace", "ml-sandbox"),
    ],
)
def test_gke_dev_stack_declares(plan: Plan, type_: str, name: str) -> None:
    assert plan.named(name, type_)


def test_gke_dev_stack_is_spot_l4s_on_cos_shared_by_time_slicing(plan: Plan) -> None:
    config = plan.named("l4-shared", "gcp:container/nodePool:NodePool").inputs["nodeConfig"]
    assert (config["machineType"], config["imageType"], config["spot"]) == (
        "g2-standard-8",
        "COS_CONTAINERD",
        True,
    )
    assert plan.outputs["pools"]["l4-shared"]["resources"] == {"nvidia.com/gpu": 4}


def test_gke_dev_stack_lookups_are_answered_by_stand_ins(plan: Plan) -> None:
    assert {i.token for i in plan.invokes} == {
        "gcp:container/getCluster:getCluster",
        "gcp:compute/getZones:getZones",
        "gcp:compute/getMachineTypes:getMachineTypes",
    }


def test_gke_dev_stacks_exporter_finds_the_pods_on_gpus_gke_time_shares(plan: Plan) -> None:
    # GKE's device plugin names the replicas `nvidia0/vgpu<n>` (container-engine-accelerators
    # pkg/gpu/nvidia/manager.go): dcgm-exporter matches them with `device-name` only (4.5.3-4.8.2
    # internal/pkg/collector/types.go GetIDOfType; prometheus-engine's GKE example sets it). The
    # pool's nodes get the exporter that does, not the operator's.
    (exporter,) = [
        r
        for r in plan.of_type("kubernetes:apps/v1:DaemonSet")
        if r.inputs["metadata"]["name"] == GKE_DCGM_EXPORTER
    ]
    spec = exporter.inputs["spec"]["template"]["spec"]
    labels = plan.named("l4-shared", "gcp:container/nodePool:NodePool").inputs["nodeConfig"][
        "labels"
    ]

    assert {"name": "DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE", "value": "device-name"} in spec[
        "containers"
    ][0]["env"]
    assert spec["nodeSelector"].items() <= labels.items()


def test_gke_dev_with_a_pinned_pool_and_its_canary_plans_with_no_mandatory_violation(
    analyze_plan,
) -> None:
    # docs/upgrades.md, the runbook's step 2 on GKE: the pool and a canary of it pin
    # `gcp.nodeVersion` on gke-dev's cluster, which is in a release channel (the stand-in's
    # REGULAR). container.v1 `ReleaseChannel`: node auto-upgrade "defaults to true and cannot
    # be disabled" there, so each pool keeps it, held by its exclusion until end of support,
    # and the pack, configured as the stack is, must accept that.
    config = copy.deepcopy(dict(stack_config("gke-dev", PROJECT)))
    (pool,) = config["gpu-platform:pools"]
    pool["gcp"] = {"nodeVersion": "1.33.4-gke.1350000"}
    canary = {**copy.deepcopy(pool), "name": "l4-canary", "canaryOf": "l4-shared", "max": 1}
    # The stand-in's control plane runs 1.33.5-gke.1201000: no node may be newer.
    canary["gcp"] = {"nodeVersion": "1.33.5-gke.1201000"}
    config["gpu-platform:pools"].append(canary)

    plan = run_program("gke-dev", config=config, project=PROJECT)
    verdicts = analyze_plan(
        plan.resources,
        config=read_policy_config(PROJECT.directory / "policy-config", "gke-dev", None),
    )

    assert plan.error is None
    pinned = [
        r.inputs for r in plan.of_type("gcp:container/nodePool:NodePool") if "version" in r.inputs
    ]
    assert len(pinned) == 2
    assert all(p["management"]["autoUpgrade"] is True for p in pinned)
    assert [v for v in verdicts if v.mandatory] == []


def test_gke_dev_with_a_pool_pinned_after_it_was_created_plans_with_no_mandatory_violation(
    analyze_plan,
) -> None:
    # docs/upgrades.md: the pool exists unpinned, then pins `gcp.nodeVersion`. Its resource
    # ignores changes to `maintenancePolicies`, so the engine hands the pack the stored inputs'
    # (none) instead of the exclusion the program declares (pulumi/pulumi v3.259.0
    # pkg/resource/deploy/step_generator.go, generateSteps: processIgnoreChanges before the
    # analyzers): the pack, configured as the stack is, must not stop `pulumi up` there.
    config = copy.deepcopy(dict(stack_config("gke-dev", PROJECT)))
    (pool,) = config["gpu-platform:pools"]
    pool["gcp"] = {"nodeVersion": "1.33.4-gke.1350000"}
    plan = run_program("gke-dev", config=config, project=PROJECT)
    (pinned,) = [
        r for r in plan.of_type("gcp:container/nodePool:NodePool") if "version" in r.inputs
    ]
    assert "maintenancePolicies" in pinned.ignore_changes
    as_analyzed = replace(
        pinned,
        inputs={k: v for k, v in pinned.inputs.items() if k != "maintenancePolicies"},
    )

    verdicts = analyze_plan(
        [as_analyzed if r is pinned else r for r in plan.resources],
        config=read_policy_config(PROJECT.directory / "policy-config", "gke-dev", None),
    )

    assert plan.error is None
    assert [v for v in verdicts if v.mandatory] == []
