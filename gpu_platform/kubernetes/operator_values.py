"""The GPU Operator chart values for a stack: pure functions of its config and pools.

The chart has no values schema and ignores a misspelt key without a word, so every key path set
here is checked against the pinned chart's key list (gpu_platform/kubernetes/chart_keys/) by
tests/gpu_platform/kubernetes/test_chart_keys.py.
"""

import copy
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import yaml

from gpu_platform.config import (
    ExclusiveSharing,
    MigSharing,
    MonitoringSpec,
    MpsSharing,
    OperatorSpec,
    Platform,
    Sharing,
    TimeSlicingSharing,
)
from gpu_platform.config.operator import DRA_ENV, GPU_ID_TYPE_ENV
from gpu_platform.kubernetes.alerts import DCGM_METRICS_FILE
from gpu_platform.kubernetes.helm_release import daemonset_update_strategy
from gpu_platform.kubernetes.operator_images import operator_image_values
from gpu_platform.node_identity import (
    GPU_RESOURCE,
    GPU_TAINT,
    GpuSharer,
    ResolvedPool,
    Taint,
    sharing_config_name,
)

Values = dict[str, Any]

DEVICE_PLUGIN_CONFIG_MAP = "device-plugin-sharing"
"""The ConfigMap the chart creates with one device plugin config per sharing mode in use."""
DEFAULT_SHARING_CONFIG = sharing_config_name(ExclusiveSharing())
"""What a GPU node without the `nvidia.com/device-plugin.config` label gets."""

GKE_COS_DRIVER_DIR = "/home/kubernetes/bin/nvidia"
"""Where Google's driver installer puts the driver on COS, and the toolkit goes beside it."""

DCGM_SCRAPE_INTERVAL = "15s"
"""The chart's own interval; the idle and memory alerts look at windows of minutes."""

# On GKE 1.33+ the toolkit must read containerd's config from its file, on COS and Ubuntu
# alike: from `containerd config dump` it writes a CNI bin_dir that breaks every pod sandbox
# (NVIDIA's GKE page, Prerequisites; gpu-operator#1577).
_TOOLKIT_READS_CONTAINERD_FILE = {"name": "RUNTIME_CONFIG_SOURCE", "value": "file"}

# The platform's own settings per platform: who installs the driver, the container toolkit and
# the device plugin on the node (platform facts sections 1 to 3).
_NODE_SOFTWARE: Mapping[Platform, Values] = {
    # The EKS AL2023 NVIDIA AMI carries the driver and the toolkit; the operator builds no
    # driver for Amazon Linux (gpu-operator#686).
    Platform.EKS_AL2023: {"driver": {"enabled": False}, "toolkit": {"enabled": False}},
    # Bottlerocket's NVIDIA variant also runs its own device plugin.
    Platform.EKS_BOTTLEROCKET: {
        "driver": {"enabled": False},
        "toolkit": {"enabled": False},
        "devicePlugin": {"enabled": False},
    },
    # Google's driver installer DaemonSet owns the driver on COS; the toolkit installs next to
    # it.
    Platform.GKE_COS: {
        "driver": {"enabled": False},
        "hostPaths": {"driverInstallDir": GKE_COS_DRIVER_DIR},
        "toolkit": {"installDir": GKE_COS_DRIVER_DIR, "env": [_TOOLKIT_READS_CONTAINERD_FILE]},
        "cdi": {"enabled": True},
    },
    # On Ubuntu the operator builds and loads the driver itself, at the chart's default paths.
    Platform.GKE_UBUNTU: {
        "driver": {"enabled": True},
        "toolkit": {"env": [_TOOLKIT_READS_CONTAINERD_FILE]},
    },
}

# Every platform runs its GPUs in cloud VMs, where the MIG manager cannot reset a GPU in place
# to switch MIG mode on or off and has to reboot the node instead. GKE documents it; EC2's GPU
# instances are VMs as well, so EKS gets the same.
_MIG_MANAGER_REBOOTS = {"name": "WITH_REBOOT", "value": "true"}

# The chart's default `daemonsets.tolerations`: any value of the GPU taint, so also ours.
_GPU_TAINT_TOLERATION = {"key": GPU_TAINT.key, "operator": "Exists", "effect": GPU_TAINT.effect}
# The node-feature-discovery worker's default tolerations add the control plane's taint.
_CONTROL_PLANE_TOLERATION = {
    "key": "node-role.kubernetes.io/control-plane",
    "operator": "Equal",
    "value": "",
    "effect": "NoSchedule",
}


# node-feature-discovery's worker, the release's one DaemonSet, runs on every node. Its chart
# (0.19.0, the GPU Operator v26.7.0 chart's dependency) rolls 10 % of them at a time already;
# stated here, it follows the platform's other node agents (helm_release.py) and cannot move
# back to one node at a time with a chart upgrade. The operator's own DaemonSets, set by
# `daemonsets.updateStrategy`, are the operator's to roll, not Helm's to wait for.
NFD_WORKER_ROLLOUT: Values = {
    "node-feature-discovery": {"worker": {"updateStrategy": daemonset_update_strategy()}}
}


def operator_values_for(
    operator: OperatorSpec,
    platform: Platform,
    pools: Sequence[ResolvedPool],
    monitoring: MonitoringSpec,
) -> Values:
    """The chart values for a stack: the platform's own, then `operator.overrides` over them."""
    values: Values = {
        # Upgrades apply the new chart's CRDs from a pre-upgrade hook Job: Helm never updates
        # `crds/` itself, and a stale ClusterPolicy CRD drops or rejects new fields
        # (gpu-operator#431, #435).
        "operator": {"upgradeCRD": True},
        # The platform owns the namespace and its Pod Security labels; with `psa.enabled` the
        # operator would label it too, and the two would fight over the same labels.
        "psa": {"enabled": False},
    }
    for part in (
        _NODE_SOFTWARE[platform],
        driver_values_for(platform),
        sharing_values_for(platform, pools),
        device_plugin_values_for(pools),
        toleration_values_for(pools),
        dcgm_exporter_values_for(monitoring, pools, operator.namespace),
        NFD_WORKER_ROLLOUT,
        operator_image_values(operator.chart_version, platform),
    ):
        values = deep_merge(values, part)
    merged = deep_merge(values, operator.overrides)
    # A list replaced whole would drop the env the exporter needs (the metric set, per-pod
    # attribution of shared GPUs, the GPU ID type): an override's env joins the platform's.
    env = operator.overrides.get("dcgmExporter", {}).get("env")
    if env is not None:
        merged["dcgmExporter"]["env"] = env_by_name(
            values["dcgmExporter"]["env"], merged["dcgmExporter"]["env"]
        )
    return merged


def env_by_name(*envs: Iterable[Values]) -> list[Values]:
    """The env lists in turn, one entry per name: a name set again takes its new value in its
    place, as the operator's `setContainerEnv` does (controllers/object_controls.go at
    v26.7.0)."""
    merged: dict[str, Values] = {}
    for env in envs:
        for setting in env:
            merged[setting["name"]] = setting
    return list(merged.values())


def driver_values_for(platform: Platform) -> Values:
    """Where the operator builds the driver (GKE Ubuntu): from the platform's NVIDIADriver
    resources, one per pool with the pool's driver and upgrade policy
    (gpu_platform/kubernetes/nvidia_driver.py), instead of ClusterPolicy's one driver for every
    node.

    With the CRD on, the chart renders ClusterPolicy's driver version no more, and the operator
    rolls each NVIDIADriver out under its own upgrade policy (gpu-operator v26.7.0
    templates/clusterpolicy.yaml; controllers/upgrade_controller.go,
    reconcileNVIDIADriverUpgrades), so neither is set here. The chart's default NVIDIADriver
    stays off: it would be the fallback for GPU nodes that no other NVIDIADriver selects
    (templates/nvidiadriver.yaml, `default: true`), and every node of the stack's pools is
    selected by its pool's.
    """
    if platform is not Platform.GKE_UBUNTU:
        return {}
    return {"driver": {"nvidiaDriverCRD": {"enabled": True, "deployDefaultCR": False}}}


def sharing_values_for(platform: Platform, pools: Sequence[ResolvedPool]) -> Values:
    """The device plugin's sharing configs and the MIG settings for the pools' sharing modes."""
    if platform is Platform.EKS_BOTTLEROCKET:
        # The operator's device plugin is off, so its configs would reach no node; config
        # validation admits only exclusive pools on Bottlerocket.
        return {"migManager": {"enabled": False}}
    return {
        "devicePlugin": {
            "config": {
                "create": True,
                "name": DEVICE_PLUGIN_CONFIG_MAP,
                "default": DEFAULT_SHARING_CONFIG,
                "data": sharing_configs_for(pools),
            }
        },
        **mig_values_for(pools),
    }


def device_plugin_values_for(pools: Sequence[ResolvedPool]) -> Values:
    """The device plugin off where every pool allocates through DRA (config validation admits
    no DRA pool beside device-plugin ones): only then does the operator's validator leave out
    its check for the device plugin's `nvidia.com/gpu`, which a DRA node never advertises
    (gpu-operator v26.7.0 controllers/object_controls.go, the validator's `plugin` init
    container; cmd/nvidia-validator/main.go, `validateGPUResource`)."""
    if pools and all(pool.spec.allocation == "dra" for pool in pools):
        return {"devicePlugin": {"enabled": False}}
    return {}


def sharing_configs_for(pools: Sequence[ResolvedPool]) -> dict[str, str]:
    """One device plugin config (YAML) per sharing mode in use, under the name that the pools'
    `nvidia.com/device-plugin.config` node label selects; `exclusive` always among them."""
    sharings = [ExclusiveSharing(), *(pool.spec.sharing for pool in _served_by_operator(pools))]
    configs = {sharing_config_name(s): device_plugin_config(s) for s in sharings}
    return {name: yaml.safe_dump(configs[name], sort_keys=False) for name in sorted(configs)}


def device_plugin_config(sharing: Sharing) -> Values:
    """The NVIDIA device plugin config (version v1) for a node of this sharing mode."""
    match sharing:
        case TimeSlicingSharing(replicas=replicas):
            return _shared_gpu_config("timeSlicing", replicas)
        case MpsSharing(replicas=replicas):
            return _shared_gpu_config("mps", replicas)
        case MigSharing(strategy=strategy):
            return {"version": "v1", "flags": {"migStrategy": strategy}}
        case _:
            return {"version": "v1", "flags": {"migStrategy": "none"}}


def _shared_gpu_config(how: str, replicas: int) -> Values:
    return {
        "version": "v1",
        "flags": {"migStrategy": "none"},
        "sharing": {
            how: {
                # Keep advertising `nvidia.com/gpu`, which the node identity, the autoscaler's
                # scale-from-zero hints and the tenants' quotas count. `true` would advertise
                # `nvidia.com/gpu.shared` (k8s-device-plugin v0.20.0 api/config/v1/replicas.go,
                # `DefaultSharedRename`), which no released cluster autoscaler counts as a GPU
                # (processors/customresources/gpu_processor.go) and GKE's device plugin has no
                # counterpart of: the quotas cap whole GPUs and replicas together where a stack
                # has both (docs/gpu-sharing.md, "Quotas per kind of GPU").
                "renameByDefault": False,
                # Two replicas may be slices of one GPU: a pod asking for more than one would
                # get no more GPU than with one, so it is refused instead of misled.
                "failRequestsGreaterThanOne": True,
                "resources": [{"name": GPU_RESOURCE, "replicas": replicas}],
            }
        },
    }


def mig_values_for(pools: Sequence[ResolvedPool]) -> Values:
    """The cluster's MIG strategy and the MIG manager, when a pool partitions its GPUs."""
    sharings = (pool.spec.sharing for pool in _served_by_operator(pools))
    strategies = {sharing.strategy for sharing in sharings if isinstance(sharing, MigSharing)}
    if not strategies:
        return {"migManager": {"enabled": False}}
    (strategy,) = strategies  # config validation admits one strategy per stack
    return {
        "mig": {"strategy": strategy},
        "migManager": {
            "enabled": True,
            # Nodes are partitioned by their pool's `nvidia.com/mig.config` label; any other
            # MIG-capable GPU has MIG turned off.
            "config": {"default": "all-disabled"},
            "env": [_MIG_MANAGER_REBOOTS],
        },
    }


def _served_by_operator(pools: Sequence[ResolvedPool]) -> list[ResolvedPool]:
    # Pools whose GPUs GKE shares get neither the operator's device plugin nor its MIG manager.
    return [pool for pool in pools if pool.sharer is GpuSharer.OPERATOR]


def toleration_values_for(pools: Sequence[ResolvedPool]) -> Values:
    """Tolerations that let the operator's DaemonSets, and the node-feature-discovery worker
    that tells the operator which nodes have GPUs, onto every GPU node, extra taints included."""
    tolerations = gpu_node_tolerations(pools)
    return {
        "daemonsets": {"tolerations": tolerations},
        "node-feature-discovery": {
            "worker": {"tolerations": [_CONTROL_PLANE_TOLERATION, *tolerations]}
        },
    }


def gpu_node_tolerations(pools: Iterable[ResolvedPool]) -> list[Values]:
    """Tolerations that let a DaemonSet onto every node of `pools`: any value of the GPU taint,
    and each other taint the pools' nodes carry exactly (`extra_taints`), so that it stays off
    nodes tainted for something else."""
    return [_GPU_TAINT_TOLERATION, *(taint_toleration(taint) for taint in extra_taints(pools))]


def extra_taints(pools: Iterable[ResolvedPool]) -> list[Taint]:
    """The taints on the pools' nodes besides the GPU taint, each once: the pools' own and those
    the cloud adds (`NodeIdentity.cloud_taints`)."""
    taints = (t for pool in pools for t in pool.identity.node_taints if t != GPU_TAINT)
    return list(dict.fromkeys(taints))


def taint_toleration(taint: Taint) -> Values:
    """A toleration of exactly this taint."""
    return {"key": taint.key, "operator": "Equal", "value": taint.value, "effect": taint.effect}


def dcgm_exporter_values_for(
    monitoring: MonitoringSpec, pools: Sequence[ResolvedPool], operator_namespace: str
) -> Values:
    """The DCGM exporter with the platform's metric set and a ServiceMonitor that the cluster's
    Prometheus selects, attributing shared GPUs to the pods that share them when a pool
    time-slices or shares through MPS. It matches GPUs to pods by UUID, as the operator's device
    plugin names them, unless GKE's device plugin serves every pool (`exporter_gpu_id_type`);
    the nodes whose GPUs GKE's device plugin serves have an exporter of their own
    (gpu_platform/kubernetes/gke_dcgm_exporter.py), which takes its settings from these."""
    shares = any(_replicates_gpus(p) for p in pools)
    dra = any(p.spec.allocation == "dra" for p in pools)
    metrics = dcgm_metrics_config_map(operator_namespace)
    return {
        "dcgmExporter": {
            "enabled": True,
            "env": [
                # The exporter reads its metric set from this ConfigMap through the API server
                # at start (dcgm-exporter internal/pkg/counters/counter_config.go,
                # GetCounterSet). The operator then mounts the service account token, and its
                # Role lets the exporter read ConfigMaps of the operator's namespace
                # (gpu-operator v26.7.0 controllers/object_controls.go,
                # dcgmExporterEnvRequiresAPIAccess; assets/state-dcgm-exporter/0200_role.yaml).
                {
                    "name": "DCGM_EXPORTER_CONFIGMAP_DATA",
                    "value": f"{operator_namespace}:{metrics['metadata']['name']}",
                },
                *(_PER_POD_SHARED_GPU_ENV if shares else []),
                *exporter_gpu_id_type(pools),
                *(_DRA_ENV if dra else []),
            ],
            **(_PER_POD_SHARED_GPU_METRICS if shares else {}),
            "serviceMonitor": {
                "enabled": True,
                "interval": DCGM_SCRAPE_INTERVAL,
                "additionalLabels": dict(monitoring.service_monitor_labels),
                # The exporter labels a GPU's series with the `pod`, `namespace` and `container`
                # of the workload holding it. Honouring them keeps those names, where Prometheus
                # would otherwise rename them `exported_pod` and so on (dcgm-exporter#85); the
                # alert rules and dashboards select GPU series by `pod` and `namespace`.
                "honorLabels": True,
                # A GPU no pod holds has no such labels, and under honorLabels Prometheus would
                # fill them in with the exporter's own pod and namespace, making every free GPU
                # look allocated to the exporter. Dropping the target's labels keeps free GPUs
                # without `pod`. Exporter health is `up{job="nvidia-dcgm-exporter"}` by
                # `instance`, which also loses `namespace` and `pod`.
                "relabelings": [{"action": "labeldrop", "regex": "pod|namespace|container"}],
            },
        },
        # The chart's own `dcgmExporter.config` (a ConfigMap it creates and mounts as the
        # exporter's metrics file) is commented out in the pinned chart's values.yaml, so it is
        # not among the key paths the platform may set (chart_keys/); the exporter's own
        # ConfigMap option, through `dcgmExporter.env`, is. The chart renders `extraObjects`
        # with the release, so the ConfigMap exists before the operator starts any exporter.
        "extraObjects": [metrics],
    }


# The exporter matches the devices the kubelet lists for a DRA claim to GPUs only with this
# flag, false by default (dcgm-exporter pkg/cmd/app.go, `kubernetes-enable-dra`, since
# 4.3.1-4.4.0), reading each device's UUID from the DRA driver's ResourceSlices
# (internal/pkg/transformation/dra.go, `NewDRAResourceSliceManager`: resource.k8s.io/v1 at the
# pinned 4.6.0-4.8.3, which 4.5.3-4.8.2 did not read); without it a DRA GPU's
# series carry no pod, and the idle alerts, reaper and billing never see it. Its read access to
# ResourceSlices comes with the operator's release (kubernetes/exporter_slice_access.py).
_DRA_ENV = [{"name": DRA_ENV, "value": "true"}]


DEVICE_NAMES: Values = {"name": GPU_ID_TYPE_ENV, "value": "device-name"}
"""How dcgm-exporter finds the pod of a GPU that GKE's device plugin serves, which names its
devices `nvidia0`, `nvidia0/vgpu1` (gpu_platform/kubernetes/gke_dcgm_exporter.py)."""


def exporter_gpu_id_type(pools: Sequence[ResolvedPool]) -> list[Values]:
    """`device-name` for the operator's exporter where GKE's device plugin serves every pool.

    The operator's exporter runs where `nvidia.com/gpu.deploy.dcgm-exporter` is "true"
    (gpu-operator v26.7.0 assets/state-dcgm-exporter/0800_daemonset.yaml, its only node
    selector; the ClusterPolicy has no affinity for it), and GKE-shared pools' nodes get "false"
    only when their node pool is updated. A GKE-shared node without it yet is one of a pool that
    had the operator's exporter, by device name, before the platform gave those nodes an
    exporter of their own, and whose update waits for its canary's gate; or one whose operands
    were turned off and on. With no node of the operator's device plugin to serve, the
    operator's exporter keeps matching by device name there, so those pods keep their series."""
    if pools and all(pool.sharer is GpuSharer.GKE for pool in pools):
        return [DEVICE_NAMES]
    return []


DCGM_METRICS_CONFIG_MAP = "gpu-platform-dcgm-metrics"
"""The prefix of the name of the ConfigMap holding the exporter's metric set, which ends in a
hash of the set: a new set is a new name in the exporter's env, so the operator rolls the
exporter pods, which read the set only when they start."""
DCGM_METRICS_KEY = "metrics"
"""The key the exporter reads a ConfigMap's CSV from (dcgm-exporter `DefaultConfigMapKey`;
`readConfigMap` in 4.5.3-4.8.2)."""


def dcgm_metrics_config_map(namespace: str) -> Values:
    """The ConfigMap with the exporter's metric set, `alerts/dcgm-metrics.csv`."""
    csv = DCGM_METRICS_FILE.read_text()
    digest = hashlib.sha256(csv.encode()).hexdigest()[:10]
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{DCGM_METRICS_CONFIG_MAP}-{digest}", "namespace": namespace},
        "data": {DCGM_METRICS_KEY: csv},
    }


# By default the exporter labels a shared GPU's series with one of the pods sharing it, at
# random from scrape to scrape (dcgm-exporter#307; NVIDIA's GPU-sharing page lists it as a
# limitation). With KUBERNETES_VIRTUAL_GPUS it emits a copy per pod, labelled with the pod and
# the replica (`vgpu`), and since 4.5.3-4.8.2 fills DCGM_FI_DEV_GPU_UTIL and DCGM_FI_DEV_FB_USED
# of each copy from that pod's own processes (PR #594). It finds a process's pod from
# /proc/<pid>/cgroup, so it needs the host's PID namespace, and matches processes only to pods
# whose UID it read from the API server (`pidmapper.go`), which `enablePodUID` grants it (a
# ClusterRole that reads pods; chart 26.3.2 and later). Only stacks that share GPUs get these.
# Every metric but those two is the device's value, copied to each pod.
_PER_POD_SHARED_GPU_ENV = [{"name": "KUBERNETES_VIRTUAL_GPUS", "value": "true"}]
_PER_POD_SHARED_GPU_METRICS: Values = {"hostPID": True, "enablePodUID": True}


def _replicates_gpus(pool: ResolvedPool) -> bool:
    return isinstance(pool.spec.sharing, TimeSlicingSharing | MpsSharing)


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> Values:
    """`base` with `override` merged in: maps merge key by key, anything else is replaced."""
    merged = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged
