"""Ending idle GPU pods needs a Prometheus to ask: the one given, or the one installed."""

from collections.abc import Callable
from typing import Any

import pytest

from gpu_platform.config import ConfigError, ConfigProblem, MonitoringSpec, load_stack_config
from gpu_platform.config.problems import MISSING

Config = dict[str, Any]


# --- Ending idle GPU pods ------------------------------------------------------------------


@pytest.fixture
def idle_config(dev_config: Config) -> Callable[..., Config]:
    """The dev stack's keys, without their namespace, with its tenant ending idle GPU pods."""

    def build(minutes: int = 60, **monitoring: Any) -> Config:
        raw = {
            key.removeprefix("gpu-platform:"): value
            for key, value in dev_config.items()
            if key.startswith("gpu-platform:")
        }
        raw["namespaces"][0]["gpuIdleMinutes"] = minutes
        raw["monitoring"] = monitoring
        return raw

    return build


def problems_of(raw: Config) -> list[ConfigProblem]:
    with pytest.raises(ConfigError) as error:
        load_stack_config(raw)
    return error.value.problems


def test_ending_idle_gpu_pods_needs_a_prometheus_to_ask(idle_config) -> None:
    (problem,) = problems_of(idle_config())

    assert (problem.path, problem.expected) == (
        "gpu-platform:monitoring.prometheusUrl",
        "the URL of the cluster's Prometheus, which namespaces[0] (gpuIdleMinutes) need to tell"
        " idle GPUs, such as http://prometheus-operated.monitoring.svc:9090; or"
        " installPrometheusStack: true, whose Prometheus is then queried",
    )


def test_the_installed_prometheus_stack_is_asked_by_default(idle_config) -> None:
    config = load_stack_config(idle_config(installPrometheusStack=True))

    # kube-prometheus-stack names its Prometheus Service `<fullname>-prometheus`, the fullname
    # being the release name when it contains the chart's, on `prometheus.service.port` 9090
    # (templates/prometheus/service.yaml, values.yaml).
    assert config.monitoring.query_url == (
        "http://kube-prometheus-stack-prometheus.monitoring.svc:9090"
    )


def test_a_prometheus_url_given_is_the_one_asked() -> None:
    url = "http://prometheus-operated.observability.svc:9090"

    monitoring = MonitoringSpec.model_validate(
        {"prometheusUrl": url, "installPrometheusStack": True}
    )

    assert monitoring.query_url == url


def test_no_prometheus_is_asked_without_one_given_or_installed() -> None:
    assert MonitoringSpec().query_url is None


def test_an_idle_limit_under_fifteen_minutes_is_refused(idle_config) -> None:
    (problem,) = problems_of(idle_config(10, installPrometheusStack=True))

    assert (problem.path, problem.value, problem.expected) == (
        "gpu-platform:namespaces[0].gpuIdleMinutes",
        10,
        "greater than or equal to 15",
    )


def test_an_idle_limit_over_a_week_is_refused(idle_config) -> None:
    (problem,) = problems_of(idle_config(10081, installPrometheusStack=True))

    assert (problem.path, problem.expected) == (
        "gpu-platform:namespaces[0].gpuIdleMinutes",
        "less than or equal to 10080",
    )


@pytest.mark.parametrize(
    "url",
    [
        "prometheus-operated.monitoring.svc:9090",
        "ftp://prometheus.example.com",
        "http://prometheus.example.com/?tenant=ml",
        "http://prometheus.example.com/#graph",
        "http://",
    ],
)
def test_a_prometheus_url_other_than_an_http_one_without_query_is_refused(
    idle_config, url: str
) -> None:
    (problem,) = problems_of(idle_config(prometheusUrl=url))

    assert (problem.path, problem.value, problem.expected) == (
        "gpu-platform:monitoring.prometheusUrl",
        url,
        "an http:// or https:// URL with no query or fragment, such as"
        " http://prometheus-operated.monitoring.svc:9090",
    )


@pytest.mark.parametrize(
    "url", ["https://prometheus.example.com", "http://thanos-query.monitoring.svc:9090/prom/"]
)
def test_an_http_prometheus_url_with_a_path_is_accepted(url: str) -> None:
    assert MonitoringSpec.model_validate({"prometheusUrl": url}).prometheus_url == url


# --- The DCGM exporter's env in the chart overrides -------------------------------------------


def with_overrides(dev_config: Config, overrides: dict[str, Any]) -> Config:
    raw = {k.removeprefix("gpu-platform:"): v for k, v in dev_config.items() if ":" in k}
    raw = {k: v for k, v in raw.items() if not k.startswith("aws")}
    raw["operator"] = {"overrides": overrides}
    return raw


def with_exporter_env(dev_config: Config, env: Any) -> Config:
    return with_overrides(dev_config, {"dcgmExporter": {"env": env}})


def test_an_override_of_the_exporters_gpu_id_type_is_refused(dev_config: Config) -> None:
    # dcgm-exporter matches pods by the IDs the node's device plugin lists (4.5.3-4.8.2
    # internal/pkg/collector/types.go `GetIDOfType`): UUIDs from the operator's, `nvidia0` from
    # GKE's (container-engine-accelerators pkg/gpu/nvidia/manager.go).
    setting = {"name": "DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE", "value": "device-name"}
    env = [{"name": "DCGM_EXPORTER_INTERVAL", "value": "10000"}, setting]

    (problem,) = problems_of(with_exporter_env(dev_config, env))

    assert problem == ConfigProblem(
        "gpu-platform:operator.overrides.dcgmExporter.env[1]",
        setting,
        "no entry named DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE: the platform sets it for each DCGM"
        " exporter, uid where the GPU Operator's device plugin names the devices, device-name"
        " where GKE's does (docs/gpu-sharing.md)",
    )


@pytest.mark.parametrize("env", [[{"value": "10000"}], {"DCGM_EXPORTER_INTERVAL": "10000"}])
def test_an_exporter_env_that_cannot_merge_by_name_is_refused(dev_config: Config, env: Any) -> None:
    (problem,) = problems_of(with_exporter_env(dev_config, env))

    assert (problem.path, problem.expected) == (
        "gpu-platform:operator.overrides.dcgmExporter.env",
        "a list of environment variables, each with a name: {name: NAME, value: VALUE}",
    )


# --- Overrides that would make the operator's release the stack's own --------------------------


@pytest.mark.parametrize(
    ("overrides", "path", "value"),
    [
        # node-feature-discovery 0.19.0 (the gpu-operator v26.7.0 chart's subchart) values.yaml
        # `namespaceOverride`: its objects go to that namespace.
        (
            {"node-feature-discovery": {"namespaceOverride": "kube-system"}},
            "node-feature-discovery.namespaceOverride",
            "kube-system",
        ),
        (
            {"driver": {"manager": {"extraObjects": [{"kind": "Pod"}]}}},
            "driver.manager.extraObjects",
            [{"kind": "Pod"}],
        ),
    ],
    ids=["namespaceOverride", "extraObjects"],
)
def test_an_override_the_pack_would_take_for_the_stacks_own_is_refused(
    dev_config: Config, overrides: dict[str, Any], path: str, value: Any
) -> None:
    (problem,) = problems_of(with_overrides(dev_config, overrides))

    assert (problem.path, problem.value) == (f"gpu-platform:operator.overrides.{path}", value)
    assert problem.expected.startswith("no value: ")
    assert "helm-release-workloads-visible" in problem.expected


# gpu-operator v26.7.0 templates/clusterpolicy.yaml writes `repository: {{
# .Values.driver.repository }}` unquoted into the ClusterPolicy's `driver` section (at an
# indentation of 4): a line break ends the scalar, and what follows is a key of the driver's own.
DRIVER_INJECTION = "nvcr.io/nvidia\n    imagePullPolicy: Always\n    image: evil/driver"


def test_an_override_the_chart_would_read_as_yaml_of_its_own_is_refused_by_key(
    dev_config: Config,
) -> None:
    (problem,) = problems_of(
        with_overrides(dev_config, {"driver": {"repository": DRIVER_INJECTION}})
    )

    assert problem == ConfigProblem(
        "gpu-platform:operator.overrides.driver.repository",
        DRIVER_INJECTION,
        "no line break, '\"', '\\', '{{' or '---' where the chart writes the value into its YAML"
        " as it is (any key but those it renders with toYaml): the policy pack would take the"
        " operator's release for the stack's own, which helm-release-workloads-visible refuses"
        ' where it is mandatory (docs/concepts.md, "Helm releases")',
    )


def test_an_override_the_chart_renders_with_to_yaml_may_hold_line_breaks(
    dev_config: Config,
) -> None:
    # v26.7.0 templates/clusterpolicy.yaml `env: {{ toYaml .Values.driver.env | nindent 6 }}`,
    # templates/plugin_config.yaml `data: {{ toYaml .Values.devicePlugin.config.data | ... }}`.
    overrides = {
        "driver": {"env": [{"name": "NOTE", "value": 'a\n"b"\n---\n{{ c }}'}]},
        "devicePlugin": {"config": {"data": {"custom": "version: v1\nflags: {}\n"}}},
    }

    load_stack_config(with_overrides(dev_config, overrides))


@pytest.mark.parametrize("line_break", ["\r", "\x85", "\u2028", "\u2029"])
def test_an_override_broken_by_any_line_break_yaml_knows_is_refused_by_key(
    dev_config: Config, line_break: str
) -> None:
    # go-yaml's `is_break` breaks a line at CR, NEL, LS and PS as well as LF; gpu-operator
    # v26.7.0 templates/operator.yaml writes `priorityClassName` unquoted.
    injected = f"system-node-critical{line_break}      hostPID: true"

    (problem,) = problems_of(
        with_overrides(dev_config, {"operator": {"priorityClassName": injected}})
    )

    assert problem.path == "gpu-platform:operator.overrides.operator.priorityClassName"
    assert problem.value == injected


# --- The custom resource the chart renders ------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "path", "value", "allowed"),
    [
        # gpu-operator v26.7.0 values.yaml: "To enable the GPUCluster (DRA) enablement stack,
        # set gpuCluster.deployCR=true and clusterPolicy.deployCR=false"; templates/
        # gpucluster.yaml and clusterpolicy.yaml render each with `if`, where a string is true.
        ({"gpuCluster": {"deployCR": True}}, "gpuCluster.deployCR", True, "the boolean false"),
        (
            {"gpuCluster": {"deployCR": "false"}},
            "gpuCluster.deployCR",
            "false",
            "the boolean false",
        ),
        (
            {"clusterPolicy": {"deployCR": False}},
            "clusterPolicy.deployCR",
            False,
            "the boolean true",
        ),
    ],
    ids=["gpu-cluster", "gpu-cluster-string", "no-cluster-policy"],
)
def test_a_custom_resource_other_than_the_cluster_policy_is_refused_by_key(
    dev_config: Config, overrides: dict[str, Any], path: str, value: Any, allowed: str
) -> None:
    (problem,) = problems_of(with_overrides(dev_config, overrides))

    assert (problem.path, problem.value) == (f"gpu-platform:operator.overrides.{path}", value)
    assert problem.expected.startswith(f"{allowed}, or no value: ")


def test_the_cluster_policy_alone_is_accepted(dev_config: Config) -> None:
    overrides = {"clusterPolicy": {"deployCR": True}, "gpuCluster": {"deployCR": False}}

    load_stack_config(with_overrides(dev_config, overrides))


# --- Operand images --------------------------------------------------------------------------

# gpu-operator v26.7.0 api/nvidia/v1/clusterpolicy_types.go, `imagePath` (lines 2058-2085):
# `image` whole with `repository` and `version` empty, else an error unless all three are set,
# joined as repository + "/" + image + ":" + version; with all three empty, the operator pod's
# `<OPERAND>_IMAGE` env. The platform names each pinned operand whole (`repository: ""`,
# `version: ""`: gpu_platform/kubernetes/operand_images/), the chart all three of the rest
# (values.yaml), but vgpuManager's repository and version, left "" for the image users build,
# and kataManager's; templates/clusterpolicy.yaml (lines 64 and 665) renders validator's and
# nodeStatusExporter's empty version as the chart's appVersion.
ALLOWED = (
    "repository, image (a name, with no tag, digest or port) and version together, or image"
    ' alone as the whole reference (registry/name:tag[@sha256:digest]) with `repository: ""`'
    ' and `version: ""` set too'
)
MISSING_ONE = "the GPU Operator refuses an image missing one of them"
JOINED_WHOLE = (
    "the GPU Operator would join the platform's image, a whole reference, between the"
    " repository and version"
)
JOINED_TAG = (
    "the GPU Operator joins image between the repository and version, so a tag, digest or port"
    " in it names no image"
)
NONE_SET = (
    "with none of the three set, the GPU Operator would take the image from its own"
    " `<OPERAND>_IMAGE` environment variable, which the policy pack does not judge"
)
MIRROR = "mirror.example.com:5000/k8s"
VALIDATOR = f"{MIRROR}/gpu-operator:v26.7.0"


def versioned_by_the_chart(operand: str) -> str:
    return (
        "repository, image (a name, with no tag, digest or port) and version together (image"
        f" alone is never {operand}'s whole reference, as the chart renders its empty version"
        " as its own)"
    )


@pytest.mark.parametrize(
    ("overrides", "path", "value", "expected"),
    [
        (
            {"dcgmExporter": {"version": "4.6.0-4.9.0-distroless"}},
            "dcgmExporter.repository",
            MISSING,
            f"{ALLOWED}: {MISSING_ONE}",
        ),
        (
            {"toolkit": {"repository": MIRROR}},
            "toolkit.version",
            MISSING,
            f"{ALLOWED}: {MISSING_ONE}",
        ),
        (
            {"dcgmExporter": {"repository": MIRROR, "version": "4.6.0-4.8.3-distroless"}},
            "dcgmExporter.image",
            MISSING,
            f"{ALLOWED}: {JOINED_WHOLE}",
        ),
        ({"gfd": {"image": None}}, "gfd.image", None, f"{ALLOWED}: {NONE_SET}"),
        (
            {"vgpuManager": {"version": "595.91.07"}},
            "vgpuManager.repository",
            MISSING,
            f"{ALLOWED}: {MISSING_ONE}",
        ),
        (
            {"gds": {"repository": MIRROR, "version": ""}},
            "gds.version",
            "",
            f"{ALLOWED}: {MISSING_ONE}",
        ),
        # The chart names none of kataManager's three.
        (
            {"kataManager": {"repository": MIRROR, "version": "v0.3.0"}},
            "kataManager.image",
            MISSING,
            f"{ALLOWED}: {MISSING_ONE}",
        ),
        # A whole reference over the platform's validator triple, or the chart's gds one.
        (
            {"validator": {"image": VALIDATOR}},
            "validator.image",
            VALIDATOR,
            f"{versioned_by_the_chart('validator')}: {JOINED_TAG}",
        ),
        (
            {"gds": {"enabled": True, "image": f"{MIRROR}/nvidia-fs:2.29.4"}},
            "gds.image",
            f"{MIRROR}/nvidia-fs:2.29.4",
            f"{ALLOWED}: {JOINED_TAG}",
        ),
        (
            {"validator": {"repository": "", "image": VALIDATOR, "version": ""}},
            "validator.repository",
            "",
            f"{versioned_by_the_chart('validator')}: {MISSING_ONE}",
        ),
        (
            {
                "nodeStatusExporter": {
                    "repository": "",
                    "image": f"{MIRROR}/gpu-operator-validator:v26.7.0",
                    "version": "",
                }
            },
            "nodeStatusExporter.repository",
            "",
            f"{versioned_by_the_chart('nodeStatusExporter')}: {MISSING_ONE}",
        ),
    ],
    ids=[
        "version-alone",
        "repository-alone",
        "no-image",
        "null-image",
        "vgpu",
        "empty-version",
        "kata",
        "whole-over-validator",
        "whole-over-chart",
        "whole-validator",
        "whole-node-status-exporter",
    ],
)
def test_an_operand_image_the_operator_refuses_is_refused_by_key(
    dev_config: Config, overrides: dict[str, Any], path: str, value: Any, expected: str
) -> None:
    (problem,) = problems_of(with_overrides(dev_config, overrides))

    assert problem == ConfigProblem(f"gpu-platform:operator.overrides.{path}", value, expected)


@pytest.mark.parametrize(
    "overrides",
    [
        {"dcgmExporter": {"image": f"{MIRROR}/dcgm-exporter:4.6.0-4.8.3-distroless"}},
        {"toolkit": {"repository": MIRROR, "image": "container-toolkit", "version": "v1.20.0"}},
        # The chart names gds's repository and image: the operator joins them to this version.
        {"gds": {"version": "2.29.4"}},
        {"vgpuManager": {"repository": MIRROR, "version": "595.91.07"}},
        # The chart renders these two's empty version as its appVersion, beside its image.
        {"validator": {"repository": MIRROR, "version": ""}},
        {"nodeStatusExporter": {"repository": MIRROR, "version": None}},
    ],
    ids=[
        "whole",
        "all-three",
        "chart-repository",
        "vgpu",
        "validator-app-version",
        "node-status-exporter-app-version",
    ],
)
def test_an_operand_image_the_operator_reads_is_accepted(
    dev_config: Config, overrides: dict[str, Any]
) -> None:
    load_stack_config(with_overrides(dev_config, overrides))
