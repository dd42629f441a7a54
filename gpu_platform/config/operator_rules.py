"""Rules of the GPU Operator's chart values and of monitoring."""

import difflib
import re
from collections.abc import Iterator
from typing import Any

from gpu_platform.config.operator import GPU_ID_TYPE_ENV
from gpu_platform.config.pools import gke_shares
from gpu_platform.config.problems import MISSING, ConfigProblem, key_path
from gpu_platform.config.stack import StackConfig, known_platform
from gpu_platform.kubernetes.chart_keys import chart_components
from gpu_platform.kubernetes.operand_images import operand_image_values
from gpu_platform.policy_pack.platform_releases import RAW_MANIFEST_KEYS
from gpu_platform.policy_pack.platform_values import (
    FOREIGN_ANYWHERE,
    PLATFORM_VALUES,
    SCALAR_TEXT,
    unsafe_scalars,
)
from gpu_platform.versions import GPU_OPERATOR_CHART, KUBE_PROMETHEUS_STACK_CHART


def operator_override_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    if "version" in config.operator.overrides.get("driver", {}):
        yield ConfigProblem(
            key_path("operator", "overrides", "driver", "version"),
            config.operator.overrides["driver"]["version"],
            "no value: set operator.driverVersion, which the pools' CUDA ceiling follows",
        )
    yield from _exporter_env_problems(config.operator.overrides.get("dcgmExporter", {}))
    yield from _custom_resource_problems(config.operator.overrides)
    yield from _image_problems(config)
    chart = GPU_OPERATOR_CHART
    components = chart_components(chart.version)
    for name, values in config.operator.overrides.items():
        if name not in components:
            guess = difflib.get_close_matches(name, components, n=1)
            hint = f"did you mean {guess[0]}?" if guess else ", ".join(sorted(components))
            yield ConfigProblem(
                key_path("operator", "overrides", name),
                values,
                f"a top-level component of the {chart.name} {chart.version} chart ({hint})",
            )
        else:
            yield from _foreign_override_problems(values, (name,))
            yield from _scalar_override_problems(values, name)


def _foreign_override_problems(values: Any, path: tuple[str | int, ...]) -> Iterator[ConfigProblem]:
    """Keys that would make the GPU Operator's release one the policy pack takes for the
    stack's own, not the platform's (gpu_platform/policy_pack/platform_values.py): a subchart's
    `namespaceOverride` (node-feature-discovery 0.19.0's) moves its objects out of the
    operator's namespace, and a chart renders the entries of `extraObjects`, `extraManifests`
    or `extraResources` as manifests of their own, which no policy sees. Under prod's policy
    config the release would then fail `helm-release-workloads-visible`."""
    steps: list[tuple[str | int, Any]] = []
    if isinstance(values, dict):
        steps = list(values.items())
    elif isinstance(values, list):
        steps = list(enumerate(values))
    for step, value in steps:
        what = _foreign_override(step)
        if what is None:
            yield from _foreign_override_problems(value, (*path, step))
            continue
        yield ConfigProblem(
            key_path("operator", "overrides", *path, step),
            value,
            f"no value: {what}, and the policy pack would take the operator's release for the"
            " stack's own, which helm-release-workloads-visible refuses where it is mandatory"
            ' (docs/concepts.md, "Helm releases")',
        )


def _scalar_override_problems(values: Any, component: str) -> Iterator[ConfigProblem]:
    """Strings the GPU Operator's chart would write into its YAML as they are, where a line
    break or a quote ends the scalar and what follows is YAML of the value's own (v26.7.0
    templates/clusterpolicy.yaml writes `driver.repository`, `image` and `version` unquoted):
    the policy pack takes a release holding one for the stack's own
    (gpu_platform/policy_pack/platform_values.py), which under prod's policy config fails
    `helm-release-workloads-visible`."""
    whole = PLATFORM_VALUES[GPU_OPERATOR_CHART.name].whole
    for place in unsafe_scalars(values, (component,), whole):
        value: Any = values
        for step in place[1:]:
            value = value[step]
        yield ConfigProblem(
            key_path("operator", "overrides", *place),
            value,
            f"{SCALAR_TEXT}: the policy pack"
            " would take the operator's release for the stack's own, which"
            " helm-release-workloads-visible refuses where it is mandatory"
            ' (docs/concepts.md, "Helm releases")',
        )


def _foreign_override(key: str | int) -> str | None:
    """What a key of `operator.overrides` that the pack takes for a foreign setting does."""
    if key in FOREIGN_ANYWHERE:
        return (
            "it moves the chart's objects out of the GPU Operator's namespace (operator.namespace)"
        )
    if key in RAW_MANIFEST_KEYS:
        return (
            "the chart renders its entries as objects no policy sees (declare such objects as"
            " resources of the stack's own program)"
        )
    return None


def _custom_resource_problems(overrides: dict[str, Any]) -> Iterator[ConfigProblem]:
    """The custom resource the chart renders for the operator: the ClusterPolicy, which the
    platform's values configure, and never NVIDIA's experimental GPUCluster (values.yaml at
    v26.7.0: "set gpuCluster.deployCR=true and clusterPolicy.deployCR=false"). Beside a
    GPUCluster the operator sets the ClusterPolicy NotReady and reconciles none of its operands
    (controllers/clusterpolicy_controller.go, "cannot co-exist"); without the ClusterPolicy it
    runs its own DRA driver, next to the platform's, and no DCGM exporter."""
    for component, wanted in (("clusterPolicy", True), ("gpuCluster", False)):
        value = _value_at(overrides, (component, "deployCR"))
        if value is not None and value is not wanted:
            yield ConfigProblem(
                key_path("operator", "overrides", component, "deployCR"),
                value,
                f"the boolean {str(wanted).lower()}, or no value: the platform runs the GPU"
                " Operator through its ClusterPolicy, which the operator stops reconciling"
                " beside a GPUCluster, and NVIDIA's DRA driver itself on DRA pools"
                " (`pools[].allocation: dra`, docs/dra.md)",
            )


IMAGE_KEYS = ("repository", "image", "version")
"""An operand's image in the GPU Operator's values: `repository`/`image`:`version`, or `image`
alone as the whole reference with `repository` and `version` empty."""

_IMAGE_PATH_OPERANDS = (
    "driver",
    "vgpuManager",
    "toolkit",
    "devicePlugin",
    "sandboxDevicePlugin",
    "kataSandboxDevicePlugin",
    "kataManager",
    "dcgmExporter",
    "dcgm",
    "nodeStatusExporter",
    "gfd",
    "validator",
    "migManager",
    "gds",
    "gdrcopy",
    "vfioManager",
    "vgpuDeviceManager",
    "ccManager",
)
"""The operands whose image the operator reads from the ClusterPolicy (api/nvidia/v1/
clusterpolicy_types.go, `ImagePath`, at v26.7.0)."""
_LEFT_EMPTY_BY_THE_CHART = {
    "vgpuManager": ("repository", "version"),
    "kataManager": IMAGE_KEYS,
}
"""What the chart's values (v26.7.0) leave empty of an operand's image: vgpuManager's
repository and version, for the image users build, and all of kataManager's. The rest it
names."""
_VERSIONED_BY_THE_CHART = ("validator", "nodeStatusExporter")
"""The operands whose `version` the chart renders as its appVersion where the values leave it
empty (templates/clusterpolicy.yaml at v26.7.0, lines 64 and 665): their version is never
empty, so `image` alone is never their whole reference."""


def operand_image(config: StackConfig, operand: str) -> dict[str, Any]:
    """An operand's `repository`, `image` and `version` as the GPU Operator reads them: the
    override's over the platform's (each operand it pins by a whole reference, gpu_platform/
    kubernetes/operand_images/) or the chart's, which are True where set, as the platform does
    not keep their values; a null or empty value is empty, but the version of an operand the
    chart versions itself."""
    override = config.operator.overrides.get(operand, {})
    base: dict[str, Any] = operand_image_values(config.operator.chart_version).get(operand) or {
        key: key not in _LEFT_EMPTY_BY_THE_CHART.get(operand, ()) for key in IMAGE_KEYS
    }
    image = {key: (override[key] or "") if key in override else base[key] for key in IMAGE_KEYS}
    if operand in _VERSIONED_BY_THE_CHART:
        image["version"] = image["version"] or True
    return image


def operand_image_problem(config: StackConfig, operand: str) -> ConfigProblem | None:
    """An image setting of `operand` the GPU Operator refuses or misreads: it takes `image` as
    the whole reference with `repository` and `version` empty, and otherwise returns an error
    unless all three are set, joining them as `repository/image:version` (api/nvidia/v1/
    clusterpolicy_types.go, `imagePath`, at v26.7.0), so that an `image` holding a tag, a
    digest or a registry port names no image. Either leaves the operand's state, and the
    ClusterPolicy, not ready. Where the platform names the image whole, an override setting
    `repository` or `version` sets `image` too, or the operator would join the platform's whole
    reference between them. With all three empty, the operator would take the image from its
    own `<OPERAND>_IMAGE` environment variable (`imagePath`'s fallback, set through
    `operator.env`): refused, so that every operand's image stays in the chart's image values,
    which the policy pack judges (gpu_platform/policy_pack/platform_images.py)."""
    override = config.operator.overrides.get(operand)
    if not isinstance(override, dict) or not set(IMAGE_KEYS) & override.keys():
        return None
    image = operand_image(config, operand)
    if not image["repository"] and not image["version"]:
        if image["image"]:
            return None
        return _image_problem(
            operand,
            override,
            "image",
            "with none of the three set, the GPU Operator would take the image from its own"
            " `<OPERAND>_IMAGE` environment variable, which the policy pack does not judge",
        )
    missing = [key for key in IMAGE_KEYS if not image[key]]
    if missing:
        return _image_problem(
            operand, override, missing[0], "the GPU Operator refuses an image missing one of them"
        )
    if "image" not in override and operand in operand_image_values(config.operator.chart_version):
        return _image_problem(
            operand,
            override,
            "image",
            "the GPU Operator would join the platform's image, a whole reference, between the"
            " repository and version",
        )
    if "image" in override and re.search("[:@]", str(override["image"])):
        return _image_problem(
            operand,
            override,
            "image",
            "the GPU Operator joins image between the repository and version, so a tag, digest"
            " or port in it names no image",
        )
    return None


def _image_problem(operand: str, override: dict[str, Any], key: str, why: str) -> ConfigProblem:
    if operand in _VERSIONED_BY_THE_CHART:
        allowed = (
            "repository, image (a name, with no tag, digest or port) and version together"
            f" (image alone is never {operand}'s whole reference, as the chart renders its"
            " empty version as its own)"
        )
    else:
        allowed = (
            "repository, image (a name, with no tag, digest or port) and version together, or"
            " image alone as the whole reference (registry/name:tag[@sha256:digest]) with"
            ' `repository: ""` and `version: ""` set too'
        )
    return ConfigProblem(
        key_path("operator", "overrides", operand, key),
        override.get(key, MISSING),
        f"{allowed}: {why}",
    )


def _image_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    for operand in _IMAGE_PATH_OPERANDS:
        problem = operand_image_problem(config, operand)
        if problem is not None:
            yield problem


def _exporter_env_problems(exporter: dict[str, Any]) -> Iterator[ConfigProblem]:
    """`dcgmExporter.env` joins the platform's env by name (gpu_platform/kubernetes/
    operator_values.py, `env_by_name`), which needs a name on every entry; the GPU ID type is the
    platform's, set for each exporter from the device plugin that names its nodes' devices."""
    if "env" not in exporter:
        return
    env = exporter["env"]
    if not isinstance(env, list) or not all(
        isinstance(e, dict) and isinstance(e.get("name"), str) for e in env
    ):
        yield ConfigProblem(
            key_path("operator", "overrides", "dcgmExporter", "env"),
            env,
            "a list of environment variables, each with a name: {name: NAME, value: VALUE}",
        )
        return
    for i, setting in enumerate(env):
        if setting["name"] == GPU_ID_TYPE_ENV:
            yield ConfigProblem(
                key_path("operator", "overrides", "dcgmExporter", "env", i),
                setting,
                f"no entry named {GPU_ID_TYPE_ENV}: the platform sets it for each DCGM exporter,"
                " uid where the GPU Operator's device plugin names the devices, device-name"
                " where GKE's does (docs/gpu-sharing.md)",
            )


# What the operator does to its DCGM exporter for these chart values (controllers/
# object_controls.go, TransformDCGMExporter and setRuntimeClassName, at v26.7.0) that the
# platform's exporter on GKE-shared nodes does not (gpu_platform/kubernetes/gke_dcgm_exporter.py
# does the rest): set, the nodes of the two kinds would be watched differently, without a word.
_NOT_ON_GKE_SHARED_NODES: dict[tuple[str, ...], str] = {
    ("dcgm", "enabled"): "points the operator's exporter at the standalone DCGM host engine"
    " (nvidia-dcgm:5555)",
    ("cdi", "nriPluginEnabled"): "gives the operator's exporter the node's GPUs through the"
    " NRI plugin in place of its runtime class",
    ("dcgmExporter", "hpcJobMapping", "enabled"): "mounts the HPC job mapping directory into the"
    " operator's exporter",
}


def gke_exporter_override_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    """Chart values the DCGM exporter on the nodes GKE shares cannot follow, refused where the
    stack has such nodes (and the exporter on)."""
    platform = known_platform(config)
    overrides = config.operator.overrides
    shared = [
        f"pools[{i}]"
        for i, pool in enumerate(config.pools)
        if platform is not None and gke_shares(platform, pool.sharing)
    ]
    if not shared or overrides.get("dcgmExporter", {}).get("enabled") is False:
        return
    chart = config.operator.chart_version
    exporter = overrides.get("dcgmExporter", {})
    if chart != GPU_OPERATOR_CHART.version and not exporter.get("image"):
        # The platform's exporter on those nodes runs the operator's exporter image, which it
        # knows for the pinned chart only (gpu_platform/kubernetes/operand_images/).
        yield ConfigProblem(
            key_path("operator", "chartVersion"),
            chart,
            f"{GPU_OPERATOR_CHART.version} while GKE shares the GPUs of {', '.join(shared)}, or"
            " the image that chart version's DCGM exporter runs in"
            " operator.overrides.dcgmExporter (image, with repository and version or as a whole"
            " reference, as the operator reads them): the platform"
            " runs that exporter itself on those nodes (nvidia-dcgm-exporter-gke) and knows"
            f" its image for {GPU_OPERATOR_CHART.version} only",
        )
    for path, what in _NOT_ON_GKE_SHARED_NODES.items():
        value = _value_at(overrides, path)
        if value:
            yield ConfigProblem(
                key_path("operator", "overrides", *path),
                value,
                f"false or unset while GKE shares the GPUs of {', '.join(shared)}: it {what},"
                " which the platform's exporter on those nodes (nvidia-dcgm-exporter-gke)"
                " cannot do",
            )
    # The exporter on those nodes rolls as the operator rolls its operands, which takes a count
    # or a percentage here (intstr, applyUpdateStrategyConfig at v26.7.0).
    path = ("daemonsets", "rollingUpdate", "maxUnavailable")
    value = _value_at(overrides, path)
    if value is not None and not re.fullmatch(r"[1-9][0-9]*|([1-9][0-9]?|100)%", str(value)):
        # 0 is refused by the API server where maxSurge is 0, as a DaemonSet's is by default.
        yield ConfigProblem(
            key_path("operator", "overrides", *path),
            value,
            'a number of nodes, at least 1, or a percentage from "1%" to "100%"',
        )


def _value_at(values: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        values = values.get(key) if isinstance(values, dict) else None
    return values


def monitoring_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    monitoring = config.monitoring
    operator_namespace = config.operator.namespace
    if monitoring.namespace == operator_namespace:
        # The GPU Operator's namespace is declared (privileged) for the operator and goes with
        # it; the Prometheus stack would declare it a second time.
        yield ConfigProblem(
            key_path("monitoring", "namespace"),
            monitoring.namespace,
            f"a namespace other than the GPU Operator's ({operator_namespace},"
            " operator.namespace): the platform declares that one for the operator alone",
        )
    release = KUBE_PROMETHEUS_STACK_CHART.name
    if (
        monitoring.install_prometheus_stack
        and monitoring.service_monitor_labels.get("release") != release
    ):
        yield ConfigProblem(
            key_path("monitoring", "serviceMonitorLabels"),
            monitoring.service_monitor_labels,
            f"labels including release: {release} with installPrometheusStack (the installed"
            " Prometheus selects ServiceMonitors and PrometheusRules by its release name)",
        )
    enforced = [i for i, ns in enumerate(config.namespaces) if ns.gpu_idle_minutes is not None]
    if enforced and monitoring.query_url is None:
        tenants = ", ".join(f"namespaces[{i}]" for i in enforced)
        yield ConfigProblem(
            key_path("monitoring", "prometheusUrl"),
            MISSING,
            f"the URL of the cluster's Prometheus, which {tenants} (gpuIdleMinutes) need to tell"
            " idle GPUs, such as http://prometheus-operated.monitoring.svc:9090; or"
            " installPrometheusStack: true, whose Prometheus is then queried",
        )
