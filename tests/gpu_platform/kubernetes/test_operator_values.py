"""The GPU Operator chart values: what each platform, sharing mode, taint and monitoring setting
makes of them. Pure functions, tested without the program."""

from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_platform.config import GpuPoolSpec, MonitoringSpec, OperatorSpec, Platform
from gpu_platform.kubernetes import operator_values
from gpu_platform.kubernetes.alerts import DCGM_METRICS_FILE
from gpu_platform.kubernetes.operator_values import (
    DEFAULT_SHARING_CONFIG,
    DEVICE_PLUGIN_CONFIG_MAP,
    deep_merge,
    device_plugin_config,
    operator_values_for,
    sharing_configs_for,
)
from gpu_platform.node_identity import (
    DEVICE_PLUGIN_CONFIG_LABEL,
    GpuShape,
    GpuSharer,
    ResolvedPool,
    resolve_pool,
)

Sharing = dict[str, Any]
EXCLUSIVE: Sharing = {"mode": "exclusive"}
TIME_SLICING: Sharing = {"mode": "time-slicing", "replicas": 4}
MPS: Sharing = {"mode": "mps", "replicas": 2}
MIG_MIXED: Sharing = {"mode": "mig", "strategy": "mixed", "profile": "all-3g.40gb"}

# The chart's default `daemonsets.tolerations` (values.yaml of the pinned chart).
CHART_DEFAULT_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
# Every validated pool's startup taint (docs/node-validation.md).
VALIDATION_TOLERATION = {
    "key": "startup-taint.cluster-autoscaler.kubernetes.io/gpu-validation",
    "operator": "Equal",
    "value": "pending",
    "effect": "NoSchedule",
}


def pool(index: int = 0, sharing: dict[str, Any] = EXCLUSIVE, **fields: Any) -> ResolvedPool:
    mig = sharing["mode"] == "mig"
    spec = GpuPoolSpec.model_validate(
        {
            "name": f"pool-{index}",
            "instanceTypes": ["p4de.24xlarge" if mig else "g4dn.xlarge"],
            "max": 2,
            "sharing": sharing,
            **fields,
        }
    )
    return resolve_pool(spec, index, GpuShape("a100-80gb" if mig else "t4", 1))


def values_for(
    *pools: ResolvedPool,
    platform: Platform = Platform.EKS_AL2023,
    operator: OperatorSpec | None = None,
    monitoring: MonitoringSpec | None = None,
) -> dict[str, Any]:
    return operator_values_for(
        operator or OperatorSpec(),
        platform,
        list(pools) or [pool()],
        monitoring or MonitoringSpec(),
    )


def parsed_configs(*pools: ResolvedPool) -> dict[str, Any]:
    return {name: yaml.safe_load(text) for name, text in sharing_configs_for(pools).items()}


# --- every platform --------------------------------------------------------------------------


@pytest.mark.parametrize("platform", list(Platform))
def test_crd_upgrade_hook_is_on(platform: Platform) -> None:
    assert values_for(platform=platform)["operator"]["upgradeCRD"] is True


@pytest.mark.parametrize("platform", list(Platform))
def test_operator_leaves_its_namespace_labels_to_the_platform(platform: Platform) -> None:
    assert values_for(platform=platform)["psa"] == {"enabled": False}


# --- who installs what, per platform ---------------------------------------------------------


def test_eks_al2023_leaves_driver_and_toolkit_to_the_ami() -> None:
    values = values_for(platform=Platform.EKS_AL2023)

    assert (values["driver"], values["toolkit"]) == ({"enabled": False}, {"enabled": False})
    assert "enabled" not in values["devicePlugin"]


def test_eks_bottlerocket_also_leaves_the_device_plugin_to_the_os() -> None:
    values = values_for(platform=Platform.EKS_BOTTLEROCKET)

    assert values["driver"] == values["toolkit"] == values["devicePlugin"] == {"enabled": False}


def test_eks_bottlerocket_gets_no_sharing_configs_or_mig_manager() -> None:
    values = values_for(platform=Platform.EKS_BOTTLEROCKET)

    assert "config" not in values["devicePlugin"]
    assert values["migManager"] == {"enabled": False}


def test_gke_cos_uses_googles_driver_and_its_paths() -> None:
    values = values_for(platform=Platform.GKE_COS)

    assert values["driver"] == {"enabled": False}
    assert values["hostPaths"] == {"driverInstallDir": "/home/kubernetes/bin/nvidia"}
    assert values["toolkit"] == {
        "installDir": "/home/kubernetes/bin/nvidia",
        "env": [{"name": "RUNTIME_CONFIG_SOURCE", "value": "file"}],
    }
    assert values["cdi"] == {"enabled": True}


def test_gke_ubuntu_has_the_operator_install_the_driver_at_default_paths() -> None:
    values = values_for(platform=Platform.GKE_UBUNTU)

    assert values["driver"]["enabled"] is True
    assert not {"hostPaths", "cdi"} & values.keys()


def test_gke_ubuntu_leaves_the_driver_to_the_platforms_nvidiadriver_resources() -> None:
    # The chart's default NVIDIADriver would be the fallback for nodes no other selects; with
    # the CRD on, ClusterPolicy carries no driver version and each NVIDIADriver its own upgrade
    # policy (gpu-operator v26.7.0 templates/nvidiadriver.yaml, templates/clusterpolicy.yaml).
    values = values_for(
        platform=Platform.GKE_UBUNTU, operator=OperatorSpec(driverVersion="580.95.05")
    )

    assert {k: v for k, v in values["driver"].items() if k != "manager"} == {
        "enabled": True,
        "nvidiaDriverCRD": {"enabled": True, "deployDefaultCR": False},
    }


@pytest.mark.parametrize("platform", [p for p in Platform if p is not Platform.GKE_UBUNTU])
def test_where_the_node_image_carries_the_driver_the_operator_builds_none(
    platform: Platform,
) -> None:
    assert values_for(platform=platform)["driver"] == {"enabled": False}


def test_gke_ubuntu_toolkit_reads_containerds_config_from_its_file_too() -> None:
    # NVIDIA's GKE page asks for it on GKE 1.33+ whichever node image (gpu-operator#1577).
    values = values_for(platform=Platform.GKE_UBUNTU)

    assert values["toolkit"] == {"env": [{"name": "RUNTIME_CONFIG_SOURCE", "value": "file"}]}


# --- device plugin sharing configs -----------------------------------------------------------


def test_device_plugin_creates_the_configs_with_exclusive_by_default() -> None:
    config = values_for(pool(sharing=TIME_SLICING))["devicePlugin"]["config"]

    assert (config["create"], config["name"], config["default"]) == (
        True,
        DEVICE_PLUGIN_CONFIG_MAP,
        "exclusive",
    )
    assert DEFAULT_SHARING_CONFIG in config["data"]


def test_exclusive_config_is_present_without_an_exclusive_pool() -> None:
    assert parsed_configs(pool(sharing=MPS))["exclusive"] == {
        "version": "v1",
        "flags": {"migStrategy": "none"},
    }


def test_time_slicing_config_advertises_replicas_of_each_gpu_as_nvidia_com_gpu() -> None:
    assert parsed_configs(pool(sharing=TIME_SLICING))["time-slicing-4"] == {
        "version": "v1",
        "flags": {"migStrategy": "none"},
        "sharing": {
            "timeSlicing": {
                "renameByDefault": False,
                "failRequestsGreaterThanOne": True,
                "resources": [{"name": "nvidia.com/gpu", "replicas": 4}],
            }
        },
    }


def test_mps_config_advertises_replicas_of_each_gpu_as_nvidia_com_gpu() -> None:
    assert parsed_configs(pool(sharing=MPS))["mps-2"]["sharing"] == {
        "mps": {
            "renameByDefault": False,
            "failRequestsGreaterThanOne": True,
            "resources": [{"name": "nvidia.com/gpu", "replicas": 2}],
        }
    }


def test_mig_config_sets_the_mixed_strategy() -> None:
    config = parsed_configs(pool(sharing=MIG_MIXED))["mig-mixed"]

    assert config == {"version": "v1", "flags": {"migStrategy": "mixed"}}


def test_pools_of_one_sharing_mode_share_one_config() -> None:
    configs = sharing_configs_for([pool(0, TIME_SLICING), pool(1, TIME_SLICING)])

    assert list(configs) == ["exclusive", "time-slicing-4"]


def test_pools_of_one_mode_with_different_replicas_get_a_config_each() -> None:
    other = {"mode": "time-slicing", "replicas": 8}

    assert list(sharing_configs_for([pool(0, TIME_SLICING), pool(1, other)])) == [
        "exclusive",
        "time-slicing-4",
        "time-slicing-8",
    ]


def test_every_pools_node_label_selects_a_config_that_exists() -> None:
    pools = [pool(i, s) for i, s in enumerate([EXCLUSIVE, TIME_SLICING, MPS, MIG_MIXED])]

    data = values_for(*pools)["devicePlugin"]["config"]["data"]

    assert {p.identity.labels[DEVICE_PLUGIN_CONFIG_LABEL] for p in pools} == set(data)


def test_configs_do_not_depend_on_the_order_of_pools() -> None:
    pools = [pool(0, MPS), pool(1, TIME_SLICING)]

    assert list(sharing_configs_for(pools)) == list(sharing_configs_for(pools[::-1]))


def test_device_plugin_config_is_the_one_the_yaml_carries() -> None:
    text = sharing_configs_for([pool(sharing=MPS)])["mps-2"]

    assert yaml.safe_load(text) == device_plugin_config(pool(sharing=MPS).spec.sharing)


# --- MIG -------------------------------------------------------------------------------------


def test_mig_pool_sets_the_clusters_mig_strategy() -> None:
    values = values_for(pool(0, TIME_SLICING), pool(1, MIG_MIXED))

    assert values["mig"] == {"strategy": "mixed"}


@pytest.mark.parametrize("platform", [p for p in Platform if p is not Platform.EKS_BOTTLEROCKET])
def test_mig_pool_runs_the_mig_manager_rebooting_nodes_to_switch_mode(platform: Platform) -> None:
    values = values_for(pool(sharing=MIG_MIXED), platform=platform)

    assert values["migManager"] == {
        "enabled": True,
        "config": {"default": "all-disabled"},
        "env": [{"name": "WITH_REBOOT", "value": "true"}],
    }


def test_without_mig_pools_the_mig_manager_is_off_and_the_strategy_untouched() -> None:
    values = values_for(pool(0, TIME_SLICING), pool(1, EXCLUSIVE))

    assert values["migManager"] == {"enabled": False}
    assert "mig" not in values


# --- tolerations -----------------------------------------------------------------------------


def test_daemonsets_tolerate_the_gpu_taint_as_the_chart_does_by_default() -> None:
    assert values_for(pool(validation={"enabled": False}))["daemonsets"]["tolerations"] == [
        CHART_DEFAULT_TOLERATION
    ]


def test_daemonsets_tolerate_the_validation_taint_of_a_validated_pool() -> None:
    assert values_for(pool())["daemonsets"]["tolerations"] == [
        CHART_DEFAULT_TOLERATION,
        VALIDATION_TOLERATION,
    ]


def test_daemonsets_tolerate_a_pools_extra_taints() -> None:
    taint = {"key": "team", "value": "ml", "effect": "NoExecute"}

    tolerations = values_for(pool(taints=[taint]))["daemonsets"]["tolerations"]

    assert tolerations == [
        CHART_DEFAULT_TOLERATION,
        {**taint, "operator": "Equal"},
        VALIDATION_TOLERATION,
    ]


def test_node_feature_discovery_worker_tolerates_a_pools_extra_taints() -> None:
    taint = {"key": "dedicated", "value": "", "effect": "NoSchedule"}

    tolerations = values_for(pool(taints=[taint]))["node-feature-discovery"]["worker"][
        "tolerations"
    ]

    assert {**taint, "operator": "Equal"} in tolerations
    assert CHART_DEFAULT_TOLERATION in tolerations


def test_node_feature_discovery_worker_keeps_its_control_plane_toleration() -> None:
    tolerations = values_for(pool())["node-feature-discovery"]["worker"]["tolerations"]

    assert tolerations[0] == {
        "key": "node-role.kubernetes.io/control-plane",
        "operator": "Equal",
        "value": "",
        "effect": "NoSchedule",
    }


def test_a_taint_on_several_pools_is_tolerated_once() -> None:
    taint = {"key": "team", "value": "ml", "effect": "NoSchedule"}

    tolerations = values_for(pool(0, taints=[taint]), pool(1, taints=[taint]))["daemonsets"][
        "tolerations"
    ]

    # The GPU taint's, the team's and the validation taint's.
    assert len(tolerations) == 3


# --- DCGM exporter ---------------------------------------------------------------------------


def test_dcgm_exporter_is_on_with_its_service_monitor() -> None:
    exporter = values_for()["dcgmExporter"]

    assert (exporter["enabled"], exporter["serviceMonitor"]["enabled"]) == (True, True)


def test_service_monitor_carries_the_labels_prometheus_selects_by() -> None:
    monitoring = MonitoringSpec.model_validate({"serviceMonitorLabels": {"release": "prom"}})

    monitor = values_for(monitoring=monitoring)["dcgmExporter"]["serviceMonitor"]

    assert monitor["additionalLabels"] == {"release": "prom"}


def test_service_monitor_keeps_the_workloads_pod_and_namespace_labels() -> None:
    assert values_for()["dcgmExporter"]["serviceMonitor"]["honorLabels"] is True


def test_service_monitor_drops_the_exporters_own_pod_labels_so_free_gpus_have_none() -> None:
    relabelings = values_for()["dcgmExporter"]["serviceMonitor"]["relabelings"]

    assert relabelings == [{"action": "labeldrop", "regex": "pod|namespace|container"}]


def test_service_monitor_scrapes_every_fifteen_seconds() -> None:
    assert values_for()["dcgmExporter"]["serviceMonitor"]["interval"] == "15s"


@pytest.mark.parametrize("sharing", [TIME_SLICING, MPS], ids=["time-slicing", "mps"])
def test_a_pool_sharing_gpus_has_the_exporter_attribute_each_replica_to_its_pod(
    sharing: dict[str, Any],
) -> None:
    # dcgm-exporter pkg/cmd/app.go reads the env var KUBERNETES_VIRTUAL_GPUS (no DCGM_EXPORTER_
    # prefix); its pidmapper.go reads /proc/<pid>/cgroup of the host's processes.
    exporter = values_for(pool(0, EXCLUSIVE), pool(1, sharing))["dcgmExporter"]

    assert {"name": "KUBERNETES_VIRTUAL_GPUS", "value": "true"} in exporter["env"]
    assert exporter["hostPID"] is True
    # pidmapper.go maps processes only to pods with a UID, read from the API server.
    assert exporter["enablePodUID"] is True


@pytest.mark.parametrize("sharing", [EXCLUSIVE, MIG_MIXED], ids=["exclusive", "mig"])
def test_without_shared_replicas_the_exporter_keeps_to_its_own_pid_namespace(
    sharing: dict[str, Any],
) -> None:
    exporter = values_for(pool(sharing=sharing))["dcgmExporter"]

    assert {"hostPID", "enablePodUID"}.isdisjoint(exporter)
    assert [env["name"] for env in exporter["env"]] == ["DCGM_EXPORTER_CONFIGMAP_DATA"]


def gke_shared_pool(index: int = 0, sharing: dict[str, Any] = TIME_SLICING) -> ResolvedPool:
    spec = GpuPoolSpec.model_validate(
        {"name": f"pool-{index}", "instanceTypes": ["a2-highgpu-1g"], "max": 2, "sharing": sharing}
    )
    return resolve_pool(spec, index, GpuShape("a100-40gb", 1), GpuSharer.GKE)


@pytest.mark.parametrize(
    ("platform", "pools"),
    [
        (Platform.GKE_COS, [pool(sharing=EXCLUSIVE)]),
        (Platform.GKE_COS, [gke_shared_pool(0), pool(1, EXCLUSIVE)]),
        (Platform.GKE_UBUNTU, [pool(sharing=EXCLUSIVE)]),
        (Platform.EKS_AL2023, [pool(sharing=TIME_SLICING)]),
        (Platform.EKS_AL2023, [pool(sharing=MIG_MIXED)]),
    ],
    ids=["cos-exclusive", "cos-mixed", "ubuntu", "eks-time-slicing", "eks-mig"],
)
def test_the_operators_exporter_matches_pods_by_uuid_as_the_operators_device_plugin_names_them(
    platform: Platform, pools: list[ResolvedPool]
) -> None:
    # Left out, dcgm-exporter's `--kubernetes-gpu-id-type` is `uid` (4.5.3-4.8.2 pkg/cmd/app.go);
    # GKE-shared nodes have an exporter of their own (test_gke_dcgm_exporter.py).
    env = values_for(*pools, platform=platform)["dcgmExporter"]["env"]

    assert "DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE" not in [e["name"] for e in env]


GKE_MIG: Sharing = {"mode": "mig", "strategy": "mixed", "profile": "all-1g.5gb"}


@pytest.mark.parametrize(
    "pools",
    [[gke_shared_pool(0)], [gke_shared_pool(0), gke_shared_pool(1, GKE_MIG)]],
    ids=["time-slicing", "time-slicing-and-mig"],
)
def test_with_every_pool_gke_shared_the_operators_exporter_matches_pods_by_device_name(
    pools: list[ResolvedPool],
) -> None:
    # The operator's exporter selects nodes by `nvidia.com/gpu.deploy.dcgm-exporter: "true"`
    # alone (gpu-operator v26.7.0 assets/state-dcgm-exporter/0800_daemonset.yaml), which a
    # GKE-shared pool's nodes lose only when the pool's update, after its canary's gate, gives
    # them "false". Until then the exporter runs there, and GKE's device plugin names the devices
    # `nvidia0/vgpu1` (container-engine-accelerators pkg/gpu/nvidia/manager.go), which
    # dcgm-exporter finds with `device-name` alone (4.5.3-4.8.2 internal/pkg/collector/types.go
    # GetIDOfType).
    env = values_for(*pools, platform=Platform.GKE_COS)["dcgmExporter"]["env"]

    assert [e for e in env if e["name"] == "DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE"] == [
        {"name": "DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE", "value": "device-name"}
    ]


# --- overrides -------------------------------------------------------------------------------


def test_overrides_merge_into_the_platforms_values_key_by_key() -> None:
    operator = OperatorSpec(overrides={"dcgmExporter": {"serviceMonitor": {"interval": "30s"}}})

    monitor = values_for(operator=operator)["dcgmExporter"]["serviceMonitor"]

    assert (monitor["interval"], monitor["honorLabels"]) == ("30s", True)


def test_overrides_win_over_the_platforms_values() -> None:
    operator = OperatorSpec(overrides={"toolkit": {"enabled": True}})

    assert values_for(operator=operator, platform=Platform.EKS_AL2023)["toolkit"] == {
        "enabled": True
    }


def test_overrides_replace_lists_whole() -> None:
    toleration = {"key": "x", "operator": "Exists"}
    operator = OperatorSpec(overrides={"daemonsets": {"tolerations": [toleration]}})

    assert values_for(operator=operator)["daemonsets"]["tolerations"] == [toleration]


def test_an_exporter_env_override_joins_the_platforms_env_by_name() -> None:
    # A list override would replace the platform's whole (`deep_merge`), dropping the metric set
    # and the ID type; the operator sets a name given again in its place (setContainerEnv,
    # controllers/object_controls.go at v26.7.0).
    virtual = {"name": "KUBERNETES_VIRTUAL_GPUS", "value": "false"}
    interval = {"name": "DCGM_EXPORTER_INTERVAL", "value": "10000"}
    operator = OperatorSpec(overrides={"dcgmExporter": {"env": [interval, virtual]}})
    platforms = values_for(gke_shared_pool(0), platform=Platform.GKE_COS)["dcgmExporter"]["env"]

    env = values_for(gke_shared_pool(0), platform=Platform.GKE_COS, operator=operator)[
        "dcgmExporter"
    ]["env"]

    assert [e["name"] for e in env] == [
        "DCGM_EXPORTER_CONFIGMAP_DATA",
        "KUBERNETES_VIRTUAL_GPUS",
        "DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE",
        "DCGM_EXPORTER_INTERVAL",
    ]
    assert env == [platforms[0], virtual, platforms[2], interval]


def test_deep_merge_changes_neither_input() -> None:
    base = {"a": {"b": [1]}}
    override = {"a": {"c": 2}}

    merged = deep_merge(base, override)
    merged["a"]["b"].append(3)

    assert (base, override) == ({"a": {"b": [1]}}, {"a": {"c": 2}})


# --- the exporter's metric set ----------------------------------------------------------------


def metrics_config_map(values: dict[str, Any]) -> dict[str, Any]:
    (config_map,) = values["extraObjects"]
    return dict(config_map)


def exporter_env(values: dict[str, Any]) -> dict[str, str]:
    return {env["name"]: env["value"] for env in values["dcgmExporter"]["env"]}


def test_the_chart_creates_the_metric_set_as_a_config_map_in_the_operators_namespace() -> None:
    config_map = metrics_config_map(values_for())

    assert (config_map["apiVersion"], config_map["kind"]) == ("v1", "ConfigMap")
    assert config_map["metadata"]["namespace"] == "gpu-operator"
    assert config_map["metadata"]["name"].startswith("gpu-platform-dcgm-metrics-")


def test_the_config_map_holds_the_committed_csv_under_the_key_the_exporter_reads() -> None:
    # dcgm-exporter reads the CSV from the key `metrics` (appconfig.DefaultConfigMapKey).
    assert metrics_config_map(values_for())["data"] == {"metrics": DCGM_METRICS_FILE.read_text()}


@pytest.mark.parametrize("platform", list(Platform))
def test_the_exporter_reads_its_metric_set_from_that_config_map(platform: Platform) -> None:
    values = values_for(platform=platform)

    name = metrics_config_map(values)["metadata"]["name"]
    assert exporter_env(values)["DCGM_EXPORTER_CONFIGMAP_DATA"] == f"gpu-operator:{name}"


def test_the_operators_namespace_from_the_config_holds_the_metric_set() -> None:
    values = values_for(operator=OperatorSpec(namespace="nvidia-gpu"))

    assert metrics_config_map(values)["metadata"]["namespace"] == "nvidia-gpu"
    assert exporter_env(values)["DCGM_EXPORTER_CONFIGMAP_DATA"].startswith("nvidia-gpu:")


def test_the_config_map_is_named_after_its_content_so_a_new_set_restarts_the_exporter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    csv = tmp_path / "dcgm-metrics.csv"
    csv.write_text("DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).\n")
    monkeypatch.setattr(operator_values, "DCGM_METRICS_FILE", csv)

    config_map = metrics_config_map(values_for())

    assert config_map["metadata"]["name"] == "gpu-platform-dcgm-metrics-7cbcef3633"


def test_a_pool_sharing_gpus_keeps_the_metric_set_beside_the_per_pod_attribution() -> None:
    env = exporter_env(values_for(pool(0, TIME_SLICING)))

    assert set(env) == {"DCGM_EXPORTER_CONFIGMAP_DATA", "KUBERNETES_VIRTUAL_GPUS"}
