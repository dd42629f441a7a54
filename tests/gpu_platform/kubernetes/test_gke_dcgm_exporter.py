"""A GKE stack on COS with pools GKE shares and pools of whole GPUs: one DCGM exporter per GPU
node, matching the pods to its GPUs by the IDs that node's device plugin gives them."""

import copy
from typing import Any

import pytest

from gpu_platform.cli.analyzer import analyze_plan
from gpu_platform.cli.offline import Plan, PlannedResource, run_program
from gpu_platform.cli.plan import _policy_config
from gpu_platform.cli.stack_files import stack_config
from gpu_platform.kubernetes.gke_dcgm_exporter import gke_exporter_env
from tests.repository import PROJECT
from tests.stack_variants import with_whole_gpu_quota

SHARED_POOL = "l4-shared"
WHOLE_POOL = "a3-training"
NAMESPACE = "gpu-operator"
DAEMONSET = "kubernetes:apps/v1:DaemonSet"
SERVICE = "kubernetes:core/v1:Service"

# dcgm-exporter 4.5.3-4.8.2 pkg/cmd/app.go: `--kubernetes-gpu-id-type`, env
# DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE, `uid` when unset; internal/pkg/appconfig/const.go:
# `uid` and `device-name`. internal/pkg/collector/types.go GetIDOfType gives a GPU's UUID for
# `uid` and `nvidia<index>` for `device-name`, which internal/pkg/transformation/kubernetes.go
# (toDeviceToPod) looks up among the device IDs of the kubelet's pod-resources API, stripping
# GKE's `/vgpu<n>`. GKE's device plugin lists `nvidia0`, `nvidia0/vgpu1`
# (GoogleCloudPlatform/container-engine-accelerators pkg/gpu/nvidia/manager.go,
# beta_plugin_test.go); NVIDIA's lists GPU UUIDs.
DEVICE_NAMES = {"name": "DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE", "value": "device-name"}
ID_TYPE = "DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE"

# gpu-operator v26.7.0 assets/state-dcgm-exporter/0800_daemonset.yaml: the operator's exporter
# runs where this label is "true"; controllers/state_manager.go (addGPUStateLabels) sets it on
# GPU nodes only where it is missing or empty.
OPERATOR_EXPORTER_NODES = {"nvidia.com/gpu.deploy.dcgm-exporter": "true"}
# 0400_service.yaml: the operator's Service selects these pods; 0500_service_monitor.yaml: its
# ServiceMonitor selects Services with this label, scrapes their port `gpu-metrics`, and names
# the job after their `app` label.
OPERATOR_EXPORTER_APP = {"app": "nvidia-dcgm-exporter"}


# Kubernetes' spelling of a taint's effect, and the GKE API's (container.v1 NodeTaint).
GKE_EFFECTS = {
    "NoSchedule": "NO_SCHEDULE",
    "PreferNoSchedule": "PREFER_NO_SCHEDULE",
    "NoExecute": "NO_EXECUTE",
}


def mixed_config() -> dict[str, Any]:
    """gke-dev (COS, time-sliced spot L4s, which GKE's device plugin shares) with a pool of
    whole H100s for training, which the operator's device plugin serves."""
    config = with_whole_gpu_quota(copy.deepcopy(stack_config("gke-dev", PROJECT)))
    config["gpu-platform:pools"].append(
        {"name": WHOLE_POOL, "instanceTypes": ["a3-highgpu-8g"], "max": 2}
    )
    return config


@pytest.fixture(scope="module")
def plan() -> Plan:
    return run_program("gke-dev", config=mixed_config(), project=PROJECT)


def gke_exporter(plan: Plan) -> PlannedResource:
    (daemonset,) = [
        r
        for r in plan.of_type(DAEMONSET)
        if r.inputs["metadata"]["name"] == "nvidia-dcgm-exporter-gke"
    ]
    return daemonset


def pod_spec(plan: Plan) -> dict[str, Any]:
    return gke_exporter(plan).inputs["spec"]["template"]["spec"]


def operator_values(plan: Plan) -> dict[str, Any]:
    return plan.named("gpu-operator", "kubernetes:helm.sh/v3:Release").inputs["values"]


def node_labels(plan: Plan, pool: str) -> dict[str, str]:
    """A node of `pool` once the operator has labelled it: the pool's labels, and the
    operator's deploy label where the node has none."""
    labels = plan.named(pool, "gcp:container/nodePool:NodePool").inputs["nodeConfig"]["labels"]
    return {**OPERATOR_EXPORTER_NODES, **labels}


def selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(key) == value for key, value in selector.items())


def test_a_cos_stack_of_gke_shared_and_whole_gpu_pools_plans_with_no_mandatory_violation(
    plan: Plan,
) -> None:
    assert plan.error is None
    config = _policy_config(PROJECT.directory / "policy-config", "gke-dev", None)

    verdicts = analyze_plan(plan.resources, config=config)

    assert [v for v in verdicts if v.mandatory] == []


@pytest.mark.parametrize(
    ("pool", "exporter"),
    [(SHARED_POOL, "nvidia-dcgm-exporter-gke"), (WHOLE_POOL, "nvidia-dcgm-exporter")],
)
def test_each_pools_nodes_have_exactly_one_exporter(plan: Plan, pool: str, exporter: str) -> None:
    labels = node_labels(plan, pool)
    selectors = {
        "nvidia-dcgm-exporter": OPERATOR_EXPORTER_NODES,
        "nvidia-dcgm-exporter-gke": pod_spec(plan)["nodeSelector"],
    }

    assert [name for name, selector in selectors.items() if selects(selector, labels)] == [exporter]


def test_the_gke_shared_pools_exporter_matches_pods_by_device_name(plan: Plan) -> None:
    (container,) = pod_spec(plan)["containers"]

    assert [e for e in container["env"] if e["name"] == ID_TYPE] == [DEVICE_NAMES]


def test_the_whole_gpu_pools_exporter_matches_pods_by_uuid(plan: Plan) -> None:
    env = operator_values(plan)["dcgmExporter"]["env"]

    assert ID_TYPE not in [e["name"] for e in env]


def test_the_gke_exporter_runs_as_the_operators_exporter_does(plan: Plan) -> None:
    spec = pod_spec(plan)
    exporter = operator_values(plan)["dcgmExporter"]
    (container,) = spec["containers"]

    assert gke_exporter(plan).inputs["metadata"]["namespace"] == NAMESPACE
    assert spec["tolerations"] == operator_values(plan)["daemonsets"]["tolerations"]
    # The chart's default `daemonsets.priorityClassName` (values.yaml at v26.7.0).
    assert spec["priorityClassName"] == "system-node-critical"
    assert spec["serviceAccountName"] == "nvidia-dcgm-exporter"
    assert spec["automountServiceAccountToken"] is True
    assert spec["runtimeClassName"] == "nvidia"
    assert container["image"] == exporter["image"]
    assert container["image"].startswith("nvcr.io/nvidia/k8s/dcgm-exporter:4.6.0-4.8.3-distroless@")
    # The metric set's ConfigMap and per-replica attribution, as the operator's exporter has them.
    assert [e for e in container["env"] if e in exporter["env"]] == exporter["env"]
    assert {"name": "KUBERNETES_VIRTUAL_GPUS", "value": "true"} in container["env"]
    assert {"name": "DCGM_EXPORTER_KUBERNETES_ENABLE_POD_UID", "value": "true"} in container["env"]
    assert spec["hostPID"] is True


def test_the_gke_exporter_tolerates_the_taints_of_the_pools_it_runs_on(plan: Plan) -> None:
    node_config = plan.named(SHARED_POOL, "gcp:container/nodePool:NodePool").inputs["nodeConfig"]
    tolerations = pod_spec(plan)["tolerations"]

    for taint in node_config["taints"]:
        assert any(
            t["key"] == taint["key"]
            and GKE_EFFECTS[t["effect"]] == taint["effect"]
            and (t["operator"] == "Exists" or t["value"] == taint["value"])
            for t in tolerations
        ), taint


def test_the_gke_exporter_is_scraped_by_the_operators_service_monitor_under_its_job(
    plan: Plan,
) -> None:
    (service,) = [
        r
        for r in plan.of_type(SERVICE)
        if r.inputs["metadata"]["name"] == "nvidia-dcgm-exporter-gke"
    ]
    pod_labels = gke_exporter(plan).inputs["spec"]["template"]["metadata"]["labels"]

    assert selects(OPERATOR_EXPORTER_APP, service.inputs["metadata"]["labels"])
    assert service.inputs["metadata"]["namespace"] == NAMESPACE
    assert [p["name"] for p in service.inputs["spec"]["ports"]] == ["gpu-metrics"]
    assert selects(service.inputs["spec"]["selector"], pod_labels)
    # Not also behind the operator's Service, which would have it scraped twice.
    assert not selects(OPERATOR_EXPORTER_APP, pod_labels)


def test_the_gke_exporter_waits_for_the_operators_release(plan: Plan) -> None:
    release = plan.named("gpu-operator", "kubernetes:helm.sh/v3:Release")

    assert release.urn in gke_exporter(plan).dependencies


def test_a_stack_whose_gpus_only_the_operator_serves_has_no_second_exporter() -> None:
    plan = run_program("dev")

    assert [r.inputs["metadata"]["name"] for r in plan.of_type(DAEMONSET)] == []


def test_an_exporter_turned_off_in_the_chart_values_is_off_on_gke_shared_nodes_too() -> None:
    config = mixed_config()
    config["gpu-platform:operator"] = {"overrides": {"dcgmExporter": {"enabled": False}}}

    plan = run_program("gke-dev", config=config, project=PROJECT)

    assert plan.of_type(DAEMONSET) == []


def test_an_override_of_the_id_type_leaves_the_gke_exporter_on_device_names() -> None:
    env = gke_exporter_env(
        {
            "env": [
                {"name": ID_TYPE, "value": "uid"},
                {"name": "DCGM_EXPORTER_LISTEN", "value": ":9500"},
            ]
        }
    )

    assert [e for e in env if e["name"] == ID_TYPE] == [DEVICE_NAMES]
    # A name set again takes its new value in place, as the operator's setContainerEnv does.
    assert [e["value"] for e in env if e["name"] == "DCGM_EXPORTER_LISTEN"] == [":9500"]
