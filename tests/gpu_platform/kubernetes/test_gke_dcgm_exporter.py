"""A GKE stack on COS with pools GKE shares and pools of whole GPUs: one DCGM exporter per GPU
node, matching the pods to its GPUs by the IDs that node's device plugin gives them."""

import copy
from typing import Any

import pytest

from gpu_platform.config import ConfigError, ConfigProblem, load_stack_config
from gpu_platform.kubernetes.gke_dcgm_exporter import (
    gke_exporter_env,
    gke_exporter_update_strategy,
)
from gpu_platform.kubernetes.monitoring import GKE_DCGM_EXPORTER
from gpu_platform.offline.plan import read_policy_config
from gpu_platform.offline.program import Plan, PlannedResource, run_program
from gpu_platform.stack_files import stack_config
from tests.repository import PROJECT
from tests.shared_plans import shared_plan
from tests.stack_variants import with_whole_gpu_quota, without_queues

SHARED_POOL = "l4-shared"
WHOLE_POOL = "a3-training"
NAMESPACE = "gpu-operator"
DAEMONSET = "kubernetes:apps/v1:DaemonSet"
SERVICE = "kubernetes:core/v1:Service"

# dcgm-exporter pkg/cmd/app.go, read at 4.5.3-4.8.2 (the operand images pin 4.6.0-4.8.3,
# gpu_platform/kubernetes/operand_images/): `--kubernetes-gpu-id-type`, env
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
SHARER_LABEL = "gpu-platform.io/gpu-sharer"
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
    config = copy.deepcopy(stack_config("gke-dev", PROJECT))
    config["gpu-platform:pools"].append(
        {"name": WHOLE_POOL, "instanceTypes": ["a3-highgpu-8g"], "max": 2}
    )
    return without_queues(with_whole_gpu_quota(config))


@pytest.fixture(scope="module")
def plan() -> Plan:
    return run_program("gke-dev", config=mixed_config(), project=PROJECT)


def gke_exporters(plan: Plan) -> list[PlannedResource]:
    """The platform's exporter DaemonSets, among its others (node validation's)."""
    return [r for r in plan.of_type(DAEMONSET) if r.inputs["metadata"]["name"] == GKE_DCGM_EXPORTER]


def gke_exporter(plan: Plan) -> PlannedResource:
    (daemonset,) = gke_exporters(plan)
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
    plan: Plan, analyze_plan
) -> None:
    assert plan.error is None
    config = read_policy_config(PROJECT.directory / "policy-config", "gke-dev", None)

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
    plan = shared_plan("dev")

    assert gke_exporters(plan) == []


def test_an_exporter_turned_off_in_the_chart_values_is_off_on_gke_shared_nodes_too() -> None:
    config = mixed_config()
    config["gpu-platform:operator"] = {"overrides": {"dcgmExporter": {"enabled": False}}}

    plan = run_program("gke-dev", config=config, project=PROJECT)

    assert gke_exporters(plan) == []


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


def test_a_node_opted_out_of_the_operators_exporter_gets_neither(plan: Plan) -> None:
    # NVIDIA's way to switch the exporter off on a node: its deploy label set to "false".
    labels = {**node_labels(plan, WHOLE_POOL), "nvidia.com/gpu.deploy.dcgm-exporter": "false"}

    assert not selects(pod_spec(plan)["nodeSelector"], labels)
    assert not selects(OPERATOR_EXPORTER_NODES, labels)


def test_gke_shared_nodes_carry_the_platforms_sharer_label(plan: Plan) -> None:
    assert node_labels(plan, SHARED_POOL)[SHARER_LABEL] == "gke"
    assert SHARER_LABEL not in node_labels(plan, WHOLE_POOL)


# --- The operator's exporter, as 0800_daemonset.yaml has it --------------------------------

# gpu-operator v26.7.0 assets/state-dcgm-exporter/0800_daemonset.yaml, with the validator's image
# that transformValidationInitContainer sets (the chart's `validator`: nvcr.io/nvidia/
# gpu-operator at the chart's appVersion, values.yaml and templates/clusterpolicy.yaml), its
# pull policy (values.yaml: IfNotPresent) and transformValidatorSecurityContext's root user
# (controllers/object_controls.go).
TOOLKIT_VALIDATION = {
    "name": "toolkit-validation",
    "image": "nvcr.io/nvidia/gpu-operator:v26.7.0",
    "imagePullPolicy": "IfNotPresent",
    "command": ["sh", "-c"],
    "args": [
        "until [ -f /run/nvidia/validations/toolkit-ready ]; do echo waiting for nvidia"
        " container stack to be setup; sleep 5; done"
    ],
    "securityContext": {"privileged": True, "runAsUser": 0},
    "volumeMounts": [
        {"name": "run-nvidia", "mountPath": "/run/nvidia", "mountPropagation": "HostToContainer"}
    ],
}
EXPORTER_VOLUMES = [
    {"name": "pod-gpu-resources", "hostPath": {"path": "/var/lib/kubelet/pod-resources"}},
    {"name": "run-nvidia", "hostPath": {"path": "/run/nvidia"}},
]
POD_RESOURCES_MOUNT = {
    "name": "pod-gpu-resources",
    "readOnly": True,
    "mountPath": "/var/lib/kubelet/pod-resources",
}
LIVENESS = {
    "httpGet": {"port": 9400, "path": "/health"},
    "initialDelaySeconds": 45,
    "periodSeconds": 5,
}
READINESS = {"httpGet": {"port": 9400, "path": "/health"}, "initialDelaySeconds": 45}


def test_the_gke_exporter_waits_for_the_toolkit_as_the_operators_does(plan: Plan) -> None:
    assert pod_spec(plan)["initContainers"] == [TOOLKIT_VALIDATION]


def test_the_gke_exporter_reads_the_kubelets_pod_resources_from_the_host(plan: Plan) -> None:
    (container,) = pod_spec(plan)["containers"]

    assert pod_spec(plan)["volumes"] == EXPORTER_VOLUMES
    assert container["volumeMounts"] == [POD_RESOURCES_MOUNT]


def test_the_gke_exporter_is_probed_as_the_operators_is(plan: Plan) -> None:
    (container,) = pod_spec(plan)["containers"]

    assert container["ports"] == [{"name": "metrics", "containerPort": 9400}]
    assert (container["livenessProbe"], container["readinessProbe"]) == (LIVENESS, READINESS)
    assert container["securityContext"] == {"privileged": True}


def test_the_gke_exporter_rolls_one_node_at_a_time_as_the_operators_operands(plan: Plan) -> None:
    # The chart's `daemonsets.rollingUpdate.maxUnavailable: "1"` (values.yaml at v26.7.0),
    # which applyUpdateStrategyConfig turns into the DaemonSet's.
    assert gke_exporter(plan).inputs["spec"]["updateStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": 1},
    }


# --- Chart values, through both exporters -------------------------------------------------

# Each chart value that reaches the operator's exporter (templates/clusterpolicy.yaml at
# v26.7.0 passes it to the ClusterPolicy), and what the operator makes of it
# (controllers/object_controls.go at v26.7.0: TransformDCGMExporter, TransformDCGMExporterService,
# transformValidationInitContainer, addPullSecrets, applyCommonDaemonsetConfig,
# applyUpdateStrategyConfig, applyCommonDaemonsetMetadata).
OVERRIDES: dict[str, Any] = {
    "dcgmExporter": {
        "imagePullSecrets": ["mirror-pull", "exporter-pull"],
        "imagePullPolicy": "Always",
        "args": ["-c", "30000"],
        "annotations": {"example.com/owner": "ml-platform"},
        "hostNetwork": True,
        "podLabelAllowlistRegex": ["^team$", "^app\\.kubernetes\\.io/.*"],
        "config": {"name": "custom-metrics"},
        "service": {"internalTrafficPolicy": "Local"},
    },
    "validator": {
        "imagePullSecrets": ["validator-pull", "mirror-pull"],
        "imagePullPolicy": "Never",
        "resources": {"limits": {"memory": "64Mi"}},
        "toolkit": {"env": [{"name": "WITH_WAIT", "value": "true"}]},
    },
    "hostPaths": {"kubeletRootDir": "/home/kubernetes/kubelet"},
    "daemonsets": {
        "labels": {"team": "ml", "app": "someone-else"},
        "annotations": {"example.com/cost-center": "research"},
        "rollingUpdate": {"maxUnavailable": "25%"},
    },
}


@pytest.fixture(scope="module")
def overridden() -> Plan:
    config = mixed_config()
    config["gpu-platform:operator"] = {"overrides": copy.deepcopy(OVERRIDES)}
    return run_program("gke-dev", config=config, project=PROJECT)


def _container(spec: dict[str, Any]) -> dict[str, Any]:
    (container,) = spec["containers"]
    return container


def _init_container(spec: dict[str, Any]) -> dict[str, Any]:
    (container,) = spec["initContainers"]
    return container


def _env(spec: dict[str, Any], name: str) -> list[str]:
    return [e["value"] for e in _container(spec)["env"] if e["name"] == name]


@pytest.mark.parametrize(
    ("override", "seen", "expected"),
    [
        (
            "validator.imagePullSecrets dcgmExporter.imagePullSecrets",
            lambda spec, _: spec["imagePullSecrets"],
            # addPullSecrets: the validator's first, each name once.
            [{"name": "validator-pull"}, {"name": "mirror-pull"}, {"name": "exporter-pull"}],
        ),
        (
            "dcgmExporter.imagePullPolicy",
            lambda spec, _: _container(spec)["imagePullPolicy"],
            "Always",
        ),
        ("dcgmExporter.args", lambda spec, _: _container(spec)["args"], ["-c", "30000"]),
        (
            "dcgmExporter.hostNetwork",
            lambda spec, _: (spec["hostNetwork"], spec["dnsPolicy"]),
            (True, "ClusterFirstWithHostNet"),
        ),
        (
            "dcgmExporter.podLabelAllowlistRegex",
            lambda spec, _: _env(spec, "DCGM_EXPORTER_KUBERNETES_POD_LABEL_ALLOWLIST_REGEX"),
            ["^team$,^app\\.kubernetes\\.io/.*"],
        ),
        (
            "dcgmExporter.config.name",
            lambda spec, _: (
                _env(spec, "DCGM_EXPORTER_COLLECTORS"),
                _container(spec)["volumeMounts"][1:],
                spec["volumes"][2:],
            ),
            (
                ["/etc/dcgm-exporter/dcgm-metrics.csv"],
                [
                    {
                        "name": "metrics-config",
                        "readOnly": True,
                        "mountPath": "/etc/dcgm-exporter/dcgm-metrics.csv",
                        "subPath": "dcgm-metrics.csv",
                    }
                ],
                [
                    {
                        "name": "metrics-config",
                        "configMap": {
                            "name": "custom-metrics",
                            "items": [{"key": "dcgm-metrics.csv", "path": "dcgm-metrics.csv"}],
                        },
                    }
                ],
            ),
        ),
        (
            "hostPaths.kubeletRootDir",
            lambda spec, _: (spec["volumes"][0], _container(spec)["volumeMounts"][0]),
            (
                {
                    "name": "pod-gpu-resources",
                    "hostPath": {"path": "/home/kubernetes/kubelet/pod-resources"},
                },
                POD_RESOURCES_MOUNT,
            ),
        ),
        (
            "validator.imagePullPolicy",
            lambda spec, _: _init_container(spec)["imagePullPolicy"],
            "Never",
        ),
        (
            "validator.resources",
            lambda spec, _: _init_container(spec)["resources"],
            {"limits": {"memory": "64Mi"}},
        ),
        (
            "validator.toolkit.env",
            lambda spec, _: _init_container(spec)["env"],
            [{"name": "WITH_WAIT", "value": "true"}],
        ),
        (
            "dcgmExporter.annotations daemonsets.annotations",
            lambda _, template: template["metadata"]["annotations"],
            {"example.com/owner": "ml-platform", "example.com/cost-center": "research"},
        ),
        (
            "daemonsets.labels",
            lambda _, template: template["metadata"]["labels"],
            {
                "team": "ml",
                "app": "nvidia-dcgm-exporter-gke",
                "app.kubernetes.io/part-of": "gpu-platform",
            },
        ),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_a_chart_value_reaches_both_exporters(
    overridden: Plan, override: str, seen: Any, expected: Any
) -> None:
    values = operator_values(overridden)
    for path in override.split():
        # The operator's exporter: the chart values the operator's ClusterPolicy is made from.
        setting: Any = OVERRIDES
        given: Any = values
        for key in path.split("."):
            setting, given = setting[key], given[key]
        assert given == setting, path
    template = gke_exporter(overridden).inputs["spec"]["template"]

    assert seen(template["spec"], template) == expected


def test_the_operands_rolling_update_reaches_the_gke_exporter(overridden: Plan) -> None:
    assert gke_exporter(overridden).inputs["spec"]["updateStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": "25%"},
    }


def test_the_operands_on_delete_update_strategy_reaches_the_gke_exporter() -> None:
    assert gke_exporter_update_strategy({"updateStrategy": "OnDelete"}) == {"type": "OnDelete"}


def test_the_exporters_service_settings_reach_the_gke_exporters_service(overridden: Plan) -> None:
    (service,) = [
        r
        for r in overridden.of_type(SERVICE)
        if r.inputs["metadata"]["name"] == "nvidia-dcgm-exporter-gke"
    ]

    assert service.inputs["spec"]["internalTrafficPolicy"] == "Local"


def _raw(overrides: dict[str, Any]) -> dict[str, Any]:
    raw = {
        key.removeprefix("gpu-platform:"): value
        for key, value in mixed_config().items()
        if key.startswith("gpu-platform:")
    }
    raw["operator"] = {"overrides": overrides}
    return raw


def _problems(raw: dict[str, Any]) -> list[ConfigProblem]:
    with pytest.raises(ConfigError) as error:
        load_stack_config(raw)
    return error.value.problems


@pytest.mark.parametrize(
    ("overrides", "path", "value", "does"),
    [
        (
            {"dcgm": {"enabled": True}},
            "dcgm.enabled",
            True,
            "points the operator's exporter at the standalone DCGM host engine (nvidia-dcgm:5555)",
        ),
        (
            {"cdi": {"enabled": True, "nriPluginEnabled": True}},
            "cdi.nriPluginEnabled",
            True,
            "gives the operator's exporter the node's GPUs through the NRI plugin in place of its"
            " runtime class",
        ),
        (
            {"dcgmExporter": {"hpcJobMapping": {"enabled": True, "directory": "/var/lib/hpc"}}},
            "dcgmExporter.hpcJobMapping.enabled",
            True,
            "mounts the HPC job mapping directory into the operator's exporter",
        ),
    ],
)
def test_a_chart_value_the_gke_exporter_cannot_follow_is_refused(
    overrides: dict[str, Any], path: str, value: Any, does: str
) -> None:
    (problem,) = _problems(_raw(overrides))

    assert (problem.path, problem.value, problem.expected) == (
        f"gpu-platform:operator.overrides.{path}",
        value,
        f"false or unset while GKE shares the GPUs of pools[0]: it {does}, which the platform's"
        " exporter on those nodes (nvidia-dcgm-exporter-gke) cannot do",
    )


def test_another_chart_version_without_the_exporters_image_is_refused_where_gke_shares() -> None:
    # The GKE exporter runs the operator's exporter image, which only the pinned chart's
    # operand digests (gpu_platform/kubernetes/operand_images/) name.
    raw = _raw({})
    raw["operator"]["chartVersion"] = "v26.3.0"

    (problem,) = _problems(raw)

    assert (problem.path, problem.value) == ("gpu-platform:operator.chartVersion", "v26.3.0")
    assert problem.expected.startswith("v26.7.0 while GKE shares the GPUs of pools[0], or the")
    assert (
        "operator.overrides.dcgmExporter (image, with repository and version or as a whole"
        " reference, as the operator reads them)"
    ) in problem.expected


def test_another_chart_version_with_the_exporters_image_is_taken() -> None:
    exporter = {"repository": "nvcr.io/nvidia/k8s", "image": "dcgm-exporter", "version": "4.5.2"}
    raw = _raw({"dcgmExporter": exporter})
    raw["operator"]["chartVersion"] = "v26.3.0"

    config = load_stack_config(raw)

    assert config.operator.chart_version == "v26.3.0"


def test_those_chart_values_are_taken_where_gke_shares_no_pool(dev_config) -> None:
    raw = {
        key.removeprefix("gpu-platform:"): value
        for key, value in dev_config.items()
        if key.startswith("gpu-platform:")
    }
    raw["operator"] = {"overrides": {"dcgm": {"enabled": True}}}

    assert load_stack_config(raw).operator.overrides == {"dcgm": {"enabled": True}}


def test_those_chart_values_are_taken_with_the_exporter_off() -> None:
    overrides = {"dcgmExporter": {"enabled": False}, "dcgm": {"enabled": True}}

    assert load_stack_config(_raw(overrides)).operator.overrides == overrides


@pytest.mark.parametrize("value", ["half", 0, "0%", "101%"])
def test_an_operand_rollout_neither_a_count_nor_a_percentage_is_refused(value: Any) -> None:
    # intstr: a count or a percentage (applyUpdateStrategyConfig at v26.7.0), which the GKE
    # exporter's DaemonSet takes as the operator's operands do; the API server refuses 0 where
    # maxSurge is 0 (a DaemonSet's default).
    (problem,) = _problems(_raw({"daemonsets": {"rollingUpdate": {"maxUnavailable": value}}}))

    assert (problem.path, problem.value, problem.expected) == (
        "gpu-platform:operator.overrides.daemonsets.rollingUpdate.maxUnavailable",
        value,
        'a number of nodes, at least 1, or a percentage from "1%" to "100%"',
    )
