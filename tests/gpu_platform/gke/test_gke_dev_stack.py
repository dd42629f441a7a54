"""The GKE dev stack in the repository (`Pulumi.gke-dev.yaml`) plans offline, whole."""

import pytest

from gpu_platform.cli.offline import Plan, run_program


@pytest.fixture(scope="module")
def plan() -> Plan:
    return run_program("gke-dev")


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
    (exporter,) = plan.of_type("kubernetes:apps/v1:DaemonSet")
    spec = exporter.inputs["spec"]["template"]["spec"]
    labels = plan.named("l4-shared", "gcp:container/nodePool:NodePool").inputs["nodeConfig"][
        "labels"
    ]

    assert {"name": "DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE", "value": "device-name"} in spec[
        "containers"
    ][0]["env"]
    assert spec["nodeSelector"].items() <= labels.items()
