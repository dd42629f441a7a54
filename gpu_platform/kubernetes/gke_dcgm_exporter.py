"""The DCGM exporter of the GPU nodes whose GPUs GKE's own device plugin serves.

The exporter labels a GPU's series with the pod holding it by matching the device IDs that the
kubelet's pod-resources API lists for each container against one ID of the GPU, chosen by
`DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE` (pkg/cmd/app.go, `--kubernetes-gpu-id-type`;
internal/pkg/collector/types.go `GetIDOfType`; internal/pkg/transformation/kubernetes.go
`toDeviceToPod`, `toDeviceToSharingPods`; read at dcgm-exporter 4.5.3-4.8.2, the operand images
pin 4.6.0-4.8.3):

- `uid`, the default: the GPU's UUID, as the operator's device plugin names its devices
  (`GPU-<uuid>`, `GPU-<uuid>::<replica>` for a time-sliced replica);
- `device-name`: `nvidia<index>`, as GKE's device plugin names them (`nvidia0`, `nvidia0/vgpu1`
  for a shared replica, whose `/vgpu<n>` the exporter strips: container-engine-accelerators
  pkg/gpu/nvidia/manager.go, beta_plugin.go).

MIG instances match by GPU and instance whatever the type. The GPU Operator runs one exporter
DaemonSet with one type, and a stack on Container-Optimized OS has pools of both device plugins
(shared ones GKE's, exclusive ones the operator's: `gpu_platform.node_identity.sharer_for`).
So the operator's exporter keeps the default (`device-name` only where every pool is
GKE-shared and it has no node of the operator's device plugin to serve:
operator_values.exporter_gpu_id_type) and stays on the nodes of the operator's device plugin,
and this DaemonSet, the operator's exporter as the chart values describe it with
`device-name`, runs on GKE's. The operator deploys its exporter only where
`nvidia.com/gpu.deploy.dcgm-exporter` is "true" (0800_daemonset.yaml), and sets that label only
where it is missing (controllers/state_manager.go, addGPUStateLabels, at v26.7.0); GKE-shared
pools' nodes join with "false" and the platform's `gpu-platform.io/gpu-sharer: gke`, which this
DaemonSet selects together: a node an admin opts out of the exporter ("false" by hand) gets
none, and a GKE-shared node whose operands were turned off (`nvidia.com/gpu.deploy.operands`,
whose "false" makes the operator remove the deploy labels: removeAllGPUStateLabels) has none
either. Every GPU node has one exporter at most, never two. This DaemonSet selects by the
sharer label rather than by the pools' names, which its nodes have from their start: the
"false" that keeps the operator's exporter off comes with the sharer label, so a node without
it would get both exporters, and a list of pools would restart every exporter pod whenever a
GKE-shared pool comes or goes.

The pod is the operator's exporter as the chart values make it: TransformDCGMExporter,
transformValidationInitContainer, applyCommonDaemonsetConfig and applyCommonDaemonsetMetadata
(controllers/object_controls.go at v26.7.0) over 0800_daemonset.yaml, for what the chart's
templates/clusterpolicy.yaml passes on to the ClusterPolicy. What the operator does there that
this DaemonSet does not (`dcgm.enabled`, `cdi.nriPluginEnabled`, `dcgmExporter.hpcJobMapping`)
config validation refuses on a stack with GKE-shared pools
(`gpu_platform.config.operator_rules.gke_exporter_override_problems`).

Its Service carries the label the operator's ServiceMonitor selects and takes its job name from
(`app: nvidia-dcgm-exporter`, `jobLabel: app`: assets/state-dcgm-exporter/0500_service_monitor.
yaml at v26.7.0), so both exporters are scraped by one ServiceMonitor under one `job`, with its
interval, labels and relabelings. Its pods have an `app` of their own, so the operator's Service,
which selects `app: nvidia-dcgm-exporter` pods, never lists them twice.
"""

import posixpath
from collections.abc import Sequence
from typing import Any, cast

import pulumi
from pulumi_kubernetes import apps, core

from gpu_platform.kubernetes.monitoring import (
    DCGM_EXPORTER,
    DCGM_EXPORTER_PORT,
    GKE_DCGM_EXPORTER,
)
from gpu_platform.kubernetes.operator_values import DEVICE_NAMES, env_by_name
from gpu_platform.lock.images import locked_digest
from gpu_platform.node_identity import GKE_EXPORTER_NODES, GpuSharer, ResolvedPool
from gpu_platform.secrets import secret_if

Values = dict[str, Any]

# What the operator's exporter runs with whatever its values say (0800_daemonset.yaml), and what
# it adds for `enablePodUID` / `enablePodLabels` (controllers/object_controls.go,
# TransformDCGMExporter, at v26.7.0).
_BASE_ENV: list[Values] = [
    {"name": "DCGM_EXPORTER_LISTEN", "value": f":{DCGM_EXPORTER_PORT}"},
    {"name": "DCGM_EXPORTER_KUBERNETES", "value": "true"},
    {"name": "DCGM_EXPORTER_COLLECTORS", "value": "/etc/dcgm-exporter/dcp-metrics-included.csv"},
    {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
]
_POD_METADATA_ENV = {
    "enablePodUID": "DCGM_EXPORTER_KUBERNETES_ENABLE_POD_UID",
    "enablePodLabels": "DCGM_EXPORTER_KUBERNETES_ENABLE_POD_LABELS",
}
_POD_LABEL_ALLOWLIST_ENV = "DCGM_EXPORTER_KUBERNETES_POD_LABEL_ALLOWLIST_REGEX"
# `dcgmExporter.config.name`: a ConfigMap of the user's whose `dcgm-metrics.csv` the operator
# mounts as the exporter's metrics file (MetricsConfigMountPath, MetricsConfigFileName).
_METRICS_FILE = "dcgm-metrics.csv"
_METRICS_PATH = f"/etc/dcgm-exporter/{_METRICS_FILE}"
_POD_RESOURCES = "pod-resources"
_KUBELET_ROOT_DIR = "/var/lib/kubelet"
# The chart's defaults (values.yaml at v26.7.0) for what the platform's values leave out.
_CHART_PRIORITY_CLASS = "system-node-critical"
_CHART_VALIDATOR_IMAGE = ("nvcr.io/nvidia", "gpu-operator")
_CHART_MAX_UNAVAILABLE = "1"
# Where the operator's container toolkit runtime handler is registered (operator.runtimeClass),
# which gives the exporter the node's GPUs and driver libraries.
_CHART_RUNTIME_CLASS = "nvidia"
# The pull policies the operator knows; any other is IfNotPresent (api/nvidia/v1/
# clusterpolicy_types.go, ImagePullPolicy, at v26.7.0).
_PULL_POLICIES = ("Always", "Never", "IfNotPresent")
# The operator does not wait for its operands, nor does anything wait for this one: like the
# operator's exporter, whether it runs on a node is the `DcgmExporterDown` and
# `DcgmExporterMissing` alerts' to say. Pulumi would otherwise wait for a pod on every selected
# node, and for a Service endpoint that a pool scaled to zero never has.
_NO_AWAIT = {"pulumi.com/skipAwait": "true"}


def needs_gke_exporter(pools: Sequence[ResolvedPool], values: Values) -> bool:
    """Where GKE shares a pool's GPUs, unless the chart values turn the exporter off
    (`dcgmExporter.enabled`, which the policy pack's `gpu-operator-release` refuses)."""
    exporter_on = values["dcgmExporter"].get("enabled", True)
    return exporter_on and any(pool.sharer is GpuSharer.GKE for pool in pools)


def _labels() -> dict[str, str]:
    return {"app": GKE_DCGM_EXPORTER, "app.kubernetes.io/part-of": "gpu-platform"}


def image_path(component: Values, default_version: str = "") -> str:
    """An operand's image as the operator renders it from `repository`, `image` and `version`,
    or `image` alone with the other two empty (api/nvidia/v1/clusterpolicy_types.go,
    imagePath, at v26.7.0)."""
    repository = component.get("repository", "")
    image = component["image"]
    version = component.get("version") or default_version
    if not repository and not version:
        return str(image)
    separator = "@" if version.startswith("sha256:") else ":"
    return f"{repository}/{image}{separator}{version}"


def _locked_version(component: Values, default_version: str) -> str:
    """The version an operand's image takes by default (the chart's), with the digest the lock
    holds for it (`<version>@sha256:...`, which `image_path` renders after the tag)."""
    if component.get("version") or not component.get("repository"):
        return default_version
    repository = f"{component['repository']}/{component['image']}"
    digest = locked_digest(repository, default_version)
    return default_version if digest is None else f"{default_version}@{digest}"


def _pull_policy(component: Values) -> str:
    policy = component.get("imagePullPolicy")
    return policy if policy in _PULL_POLICIES else "IfNotPresent"


def gke_exporter_env(exporter: Values) -> list[Values]:
    """The container's env: the operator's own, then what `enablePodUID`, `enablePodLabels`,
    `podLabelAllowlistRegex`, `config.name` and `dcgmExporter.env` set (the metric set's
    ConfigMap, per-replica attribution), then `device-name`. A name set again takes the new
    value in its place, as the operator's `setContainerEnv` does."""
    derived = [
        {"name": n, "value": "true"} for k, n in _POD_METADATA_ENV.items() if exporter.get(k)
    ]
    if exporter.get("podLabelAllowlistRegex"):
        allowlist = ",".join(exporter["podLabelAllowlistRegex"])
        derived.append({"name": _POD_LABEL_ALLOWLIST_ENV, "value": allowlist})
    if _metrics_config_map(exporter):
        derived.append({"name": "DCGM_EXPORTER_COLLECTORS", "value": _METRICS_PATH})
    return env_by_name(_BASE_ENV, derived, exporter.get("env", []), [DEVICE_NAMES])


def _metrics_config_map(exporter: Values) -> str:
    return str((exporter.get("config") or {}).get("name") or "")


def gke_exporter_pod_metadata(values: Values) -> Values:
    """The pod's labels and annotations: `dcgmExporter.annotations`, then the operands'
    `daemonsets.labels` and `daemonsets.annotations`, which never replace the labels the
    DaemonSet selects its pods by (applyCommonDaemonsetMetadata skips `app` and
    `app.kubernetes.io/part-of`)."""
    daemonsets = values.get("daemonsets", {})
    annotations = {
        **values["dcgmExporter"].get("annotations", {}),
        **daemonsets.get("annotations", {}),
    }
    metadata: Values = {"labels": {**daemonsets.get("labels", {}), **_labels()}}
    if annotations:
        metadata["annotations"] = annotations
    return metadata


def gke_exporter_pod_spec(values: Values, chart_version: str) -> Values:
    """The pod of the operator's exporter (0800_daemonset.yaml and TransformDCGMExporter at
    v26.7.0) as `values`, the GPU Operator chart's, describe it, on GKE-shared nodes and matching
    devices by name."""
    exporter = values["dcgmExporter"]
    daemonsets = values.get("daemonsets", {})
    validator = values.get("validator", {})
    metrics_config_map = _metrics_config_map(exporter)
    container: Values = {
        "name": DCGM_EXPORTER,
        "image": image_path(exporter),
        "imagePullPolicy": _pull_policy(exporter),
        "env": gke_exporter_env(exporter),
        "ports": [{"name": "metrics", "containerPort": DCGM_EXPORTER_PORT}],
        "livenessProbe": _health_probe(periodSeconds=5),
        "readinessProbe": _health_probe(),
        "volumeMounts": [
            {
                "name": "pod-gpu-resources",
                "readOnly": True,
                "mountPath": f"{_KUBELET_ROOT_DIR}/{_POD_RESOURCES}",
            }
        ],
        "securityContext": {"privileged": True},
    }
    if exporter.get("args"):
        container["args"] = exporter["args"]
    if exporter.get("resources"):
        container["resources"] = exporter["resources"]
    # The kubelet's pod-resources socket, where `hostPaths.kubeletRootDir` puts it; the
    # container sees it where the exporter looks.
    kubelet_root = values.get("hostPaths", {}).get("kubeletRootDir") or _KUBELET_ROOT_DIR
    volumes: list[Values] = [
        {
            "name": "pod-gpu-resources",
            "hostPath": {"path": posixpath.join(kubelet_root, _POD_RESOURCES)},
        },
        {"name": "run-nvidia", "hostPath": {"path": "/run/nvidia"}},
    ]
    if metrics_config_map:
        container["volumeMounts"].append(
            {
                "name": "metrics-config",
                "readOnly": True,
                "mountPath": _METRICS_PATH,
                "subPath": _METRICS_FILE,
            }
        )
        items = [{"key": _METRICS_FILE, "path": _METRICS_FILE}]
        volumes.append(
            {"name": "metrics-config", "configMap": {"name": metrics_config_map, "items": items}}
        )
    spec: Values = {
        "nodeSelector": dict(GKE_EXPORTER_NODES),
        # The operator's operands' tolerations (`daemonsets.tolerations`): the GPU taint and
        # every other taint of the pools' nodes (operator_values.toleration_values_for).
        "tolerations": daemonsets["tolerations"],
        "priorityClassName": daemonsets.get("priorityClassName", _CHART_PRIORITY_CLASS),
        # The operator's exporter's account: its Role reads the metric set's ConfigMap, and with
        # `enablePodUID` its ClusterRole reads pods (0200_role.yaml, 0210_clusterrole.yaml); the
        # token is mounted because the exporter reads the ConfigMap through the API server.
        "serviceAccountName": DCGM_EXPORTER,
        "automountServiceAccountToken": True,
        "runtimeClassName": values.get("operator", {}).get("runtimeClass", _CHART_RUNTIME_CLASS),
        "hostPID": bool(exporter.get("hostPID", False)),
        "initContainers": [_toolkit_validation(validator, chart_version)],
        "containers": [container],
        "volumes": volumes,
    }
    if exporter.get("hostNetwork"):
        spec["hostNetwork"] = True
        spec["dnsPolicy"] = "ClusterFirstWithHostNet"
    # The validator's image and the exporter's, each from a registry that may need them
    # (addPullSecrets: in that order, each name once).
    secrets = [*validator.get("imagePullSecrets", []), *exporter.get("imagePullSecrets", [])]
    if secrets:
        spec["imagePullSecrets"] = [{"name": s} for s in dict.fromkeys(secrets)]
    return spec


def gke_exporter_update_strategy(daemonsets: Values) -> Values:
    """How the DaemonSet rolls, as the operator rolls its operands (`daemonsets.updateStrategy`
    and `daemonsets.rollingUpdate.maxUnavailable`: applyUpdateStrategyConfig at v26.7.0)."""
    if daemonsets.get("updateStrategy") == "OnDelete":
        return {"type": "OnDelete"}
    rolling = daemonsets.get("rollingUpdate") or {}
    max_unavailable = str(rolling.get("maxUnavailable", _CHART_MAX_UNAVAILABLE))
    value = max_unavailable if max_unavailable.endswith("%") else int(max_unavailable)
    return {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": value}}


def _health_probe(**timing: int) -> Values:
    return {
        "httpGet": {"port": DCGM_EXPORTER_PORT, "path": "/health"},
        "initialDelaySeconds": 45,
        **timing,
    }


def _toolkit_validation(validator: Values, chart_version: str) -> Values:
    # The exporter starts once the operator's validator on the node has found the container
    # toolkit working, as the operator's exporter does: the validator's image (chart default:
    # nvcr.io/nvidia/gpu-operator at the chart's version), already on every GPU node, with
    # `validator.toolkit.env`, `validator.resources` and as root (transformValidationInitContainer,
    # transformValidatorSecurityContext, at v26.7.0).
    repository, image = _CHART_VALIDATOR_IMAGE
    component = {"repository": repository, "image": image, **validator}
    container: Values = {
        "name": "toolkit-validation",
        "image": image_path(component, _locked_version(component, chart_version)),
        "imagePullPolicy": _pull_policy(validator),
        "command": ["sh", "-c"],
        "args": [
            "until [ -f /run/nvidia/validations/toolkit-ready ]; do echo waiting for nvidia"
            " container stack to be setup; sleep 5; done"
        ],
        "securityContext": {"privileged": True, "runAsUser": 0},
        "volumeMounts": [
            {
                "name": "run-nvidia",
                "mountPath": "/run/nvidia",
                "mountPropagation": "HostToContainer",
            }
        ],
    }
    toolkit_env = (validator.get("toolkit") or {}).get("env") or []
    if toolkit_env:
        container["env"] = toolkit_env
    if validator.get("resources"):
        container["resources"] = validator["resources"]
    return container


def gke_exporter_service_spec(exporter: Values) -> Values:
    """The Service of the exporter's pods, with the `type` and `internalTrafficPolicy` of
    `dcgmExporter.service` (TransformDCGMExporterService at v26.7.0)."""
    service = exporter.get("service") or {}
    spec: Values = {
        "selector": {"app": GKE_DCGM_EXPORTER},
        # The port name the operator's ServiceMonitor scrapes (`port: gpu-metrics`).
        "ports": [
            {
                "name": "gpu-metrics",
                "port": DCGM_EXPORTER_PORT,
                "targetPort": DCGM_EXPORTER_PORT,
                "protocol": "TCP",
            }
        ],
    }
    spec.update({k: service[k] for k in ("type", "internalTrafficPolicy") if service.get(k)})
    return spec


def declare_gke_dcgm_exporter(
    name: str,
    namespace: pulumi.Input[str],
    values: Values,
    chart_version: str,
    opts: pulumi.ResourceOptions,
    secret: bool = False,
) -> apps.v1.DaemonSet:
    """The DaemonSet and its Service in the operator's `namespace`, after what `opts` says (the
    operator's release, which creates the service account and the metric set's ConfigMap);
    the pod spec `secret` where the chart values are."""
    core.v1.Service(
        f"{name}-{GKE_DCGM_EXPORTER}",
        metadata=cast(
            Any,
            {
                "name": GKE_DCGM_EXPORTER,
                "namespace": namespace,
                # Selected by the operator's ServiceMonitor, whose job is this label's value.
                "labels": {"app": DCGM_EXPORTER, "app.kubernetes.io/part-of": "gpu-platform"},
                "annotations": {"prometheus.io/scrape": "true", **_NO_AWAIT},
            },
        ),
        spec=cast(Any, gke_exporter_service_spec(values["dcgmExporter"])),
        opts=opts,
    )
    return apps.v1.DaemonSet(
        f"{name}-{GKE_DCGM_EXPORTER}",
        metadata=cast(
            Any,
            {
                "name": GKE_DCGM_EXPORTER,
                "namespace": namespace,
                "labels": _labels(),
                "annotations": _NO_AWAIT,
            },
        ),
        spec=cast(
            Any,
            {
                "selector": {"matchLabels": {"app": GKE_DCGM_EXPORTER}},
                "updateStrategy": gke_exporter_update_strategy(values.get("daemonsets", {})),
                "template": {
                    "metadata": secret_if(secret, gke_exporter_pod_metadata(values)),
                    "spec": secret_if(secret, gke_exporter_pod_spec(values, chart_version)),
                },
            },
        ),
        opts=opts,
    )
