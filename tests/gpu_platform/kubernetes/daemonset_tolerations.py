"""Does every DaemonSet a plan installs tolerate every taint of every GPU pool it must run on?

`daemonset_toleration_problems(plan, config)` reads both sides from the planned resources alone:
the taints from each pool's node group, node pool or Karpenter NodePool (and what the cloud adds
to them on its own), the tolerations from each DaemonSet as it will be rendered: Kubernetes
DaemonSets, the charts' DaemonSets from their releases' values over the pinned charts' defaults,
the GPU Operator's operands from its ClusterPolicy values and NVIDIADriver resources, and the EKS
add-ons' from their `configurationValues`. A DaemonSet the helper does not know is itself a
problem, so that a new one cannot slip past unchecked.

Matching follows Kubernetes (k8s.io/api core/v1 `Toleration.ToleratesTaint`): an empty effect
matches every effect, `Exists` with an empty key every taint, `Equal` (the default operator) the
key and value. Only `NoSchedule` and `NoExecute` taints keep a DaemonSet's pod off a node; a
`PreferNoSchedule` one only weighs against it (the scheduler's TaintToleration plugin filters on
the first two).
"""

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpu_platform.offline.program import Plan, PlannedResource

Toleration = Mapping[str, Any]

POOL_LABEL = "gpu-platform.io/pool"
_CLOUD_EFFECTS = {
    "NO_SCHEDULE": "NoSchedule",
    "PREFER_NO_SCHEDULE": "PreferNoSchedule",
    "NO_EXECUTE": "NoExecute",
}
_REPELLING = ("NoSchedule", "NoExecute")

GPU_TAINT_EXISTS = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
TOLERATE_ALL = {"operator": "Exists"}

# GKE taints a queued-provisioning node pool's nodes itself (GKE, "Deploy GPUs for batch and AI
# workloads with Dynamic Workload Scheduler": `cloud.google.com/gke-queued=true:NoSchedule`).
GKE_QUEUED_TAINT = ("cloud.google.com/gke-queued", "true", "NoSchedule")

# NVIDIA/gpu-operator v26.7.0 deployments/gpu-operator/values.yaml: `daemonsets.tolerations`,
# which the chart renders into the ClusterPolicy and the operator sets on every operand
# DaemonSet, replacing theirs (controllers/object_controls.go, applyCommonDaemonsetConfig);
# and `node-feature-discovery.worker.tolerations`, which the node-feature-discovery 0.19.0
# chart renders on its worker DaemonSet (templates/worker.yaml).
OPERATOR_OPERANDS_DEFAULT = [GPU_TAINT_EXISTS]
NFD_WORKER_DEFAULT = [
    {
        "key": "node-role.kubernetes.io/control-plane",
        "operator": "Equal",
        "value": "",
        "effect": "NoSchedule",
    },
    GPU_TAINT_EXISTS,
]
# The NVIDIADriver's DaemonSet always tolerates the GPU taint, then the resource's own
# (gpu-operator v26.7.0 manifests/state-driver/0500_daemonset.yaml).
NVIDIA_DRIVER_BUILT_IN = [GPU_TAINT_EXISTS]
# aws/eks-charts stable/aws-efa-k8s-device-plugin v0.5.30 templates/daemonset.yaml:
# `CriticalAddonsOnly` Exists, then `.Values.tolerations`.
EFA_PLUGIN_BUILT_IN = [{"key": "CriticalAddonsOnly", "operator": "Exists"}]
# prometheus-community prometheus-node-exporter 4.56.1 values.yaml: `tolerations`.
NODE_EXPORTER_DEFAULT = [{"effect": "NoSchedule", "operator": "Exists"}]
# aws/eks-node-monitoring-agent v1.7.0 charts/eks-node-monitoring-agent/values.yaml:
# `nodeAgent.tolerations: [operator: Exists]`, `dcgmAgent.tolerations: []`; the DCGM server's
# node affinity there requires `kubernetes.io/arch In [amd64]`.
MONITORING_AGENT_DEFAULT = [TOLERATE_ALL]
DCGM_SERVER_DEFAULT: list[Toleration] = []
# GoogleCloudPlatform/container-engine-accelerators at this commit,
# nvidia-driver-installer/cos/daemonset-preloaded.yaml: `tolerations: [operator: Exists]`, on
# nodes with `cloud.google.com/gke-accelerator` (every GPU node) of COS.
COS_DRIVER_INSTALLER = (
    "https://raw.githubusercontent.com/GoogleCloudPlatform/container-engine-accelerators/"
    "f2cf4197a5c3f0f20133be15d5fad8b7453beed5/nvidia-driver-installer/cos/daemonset-preloaded.yaml"
)
# The EKS add-ons of a created cluster whose DaemonSets tolerate every taint as shipped, as long
# as `configurationValues` leaves their tolerations alone: aws/amazon-vpc-cni-k8s
# charts/aws-vpc-cni/templates/daemonset.yaml (`- operator: Exists`), aws/eks-pod-identity-agent
# charts/eks-pod-identity-agent/values.yaml (`tolerations: [operator: Exists]`),
# kubernetes-sigs/aws-ebs-csi-driver docs/install.md ("the driver node tolerates all taints"),
# and kube-proxy's, which EKS ships tolerating every taint. CoreDNS is a Deployment.
ADDONS_TOLERATING_ALL = {"vpc-cni", "kube-proxy", "eks-pod-identity-agent", "aws-ebs-csi-driver"}
ADDONS_WITHOUT_DAEMONSETS = {"coredns"}
# Resources that apply manifests or charts the helper cannot see into under mocks.
_MANIFEST_TYPES = ("kubernetes:yaml", "kubernetes:kustomize", "kubernetes:helm.sh/v4")
# Charts the platform installs that render no DaemonSet: Deployments and CRDs only (kueue: no
# `kind: DaemonSet` in charts/kueue/templates/ at v0.19.2).
CHARTS_WITHOUT_DAEMONSETS = {"cluster-autoscaler", "karpenter", "karpenter-crd", "kueue"}


@dataclass(frozen=True)
class PoolNodes:
    """What one GPU pool's nodes carry, as its planned resource declares them."""

    pool: str
    labels: Mapping[str, str]
    taints: tuple[tuple[str, str, str], ...]
    """(key, value, effect) of every taint its nodes carry."""
    arm64: bool = False
    cos: bool = False
    """A GKE node pool on Container-Optimized OS."""
    gke: bool = False
    """A GKE node pool, on any image."""


@dataclass(frozen=True)
class NodeDaemonSet:
    """A DaemonSet as rendered: its tolerations, and which pools' nodes it must run on."""

    name: str
    tolerations: Sequence[Toleration]
    runs_on: Callable[[PoolNodes], bool]


def tolerates(toleration: Toleration, taint: tuple[str, str, str]) -> bool:
    """Kubernetes' `Toleration.ToleratesTaint` (k8s.io/api core/v1 toleration.go)."""
    key, value, effect = taint
    if toleration.get("effect") and toleration["effect"] != effect:
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return not toleration.get("key") or toleration["key"] == key
    return toleration.get("key", "") == key and (toleration.get("value") or "") == value


def daemonset_toleration_problems(plan: Plan, config: Mapping[str, Any]) -> list[str]:
    """Every (DaemonSet, pool, taint) where the DaemonSet must run on the pool's nodes and does
    not tolerate the taint, every config pool no planned resource carries, and every DaemonSet
    the helper cannot read, as sentences."""
    pools = list(pool_nodes(plan))
    found = {p.pool for p in pools}
    problems = [
        f"pool {pool['name']}: no planned node group, node pool or NodePool carries its label"
        for pool in config.get("gpu-platform:pools", [])
        if pool["name"] not in found
    ]
    daemonsets: list[NodeDaemonSet] = []
    for resource in plan.resources:
        try:
            daemonsets += node_daemonsets(resource)
        except UnknownDaemonSets as unknown:
            problems.append(str(unknown))
    for daemonset in daemonsets:
        for pool in pools:
            if not daemonset.runs_on(pool):
                continue
            for taint in pool.taints:
                if taint[2] in _REPELLING and not any(
                    tolerates(t, taint) for t in daemonset.tolerations
                ):
                    problems.append(
                        f"{daemonset.name}: taint {taint[0]}={taint[1]}:{taint[2]}"
                        f" of pool {pool.pool} not tolerated"
                    )
    return problems


def pool_nodes(plan: Plan) -> Iterator[PoolNodes]:
    """The GPU pools' nodes (those labelled with a pool) as each planned resource declares them."""
    for r in plan.resources:
        if r.type == "aws:eks/nodeGroup:NodeGroup":
            labels = r.inputs.get("labels") or {}
            taints = tuple(
                (t["key"], t.get("value") or "", _CLOUD_EFFECTS.get(t["effect"], t["effect"]))
                for t in r.inputs.get("taints") or []
            )
            arm64 = "ARM_64" in (r.inputs.get("amiType") or "")
            if POOL_LABEL in labels:
                yield PoolNodes(labels[POOL_LABEL], labels, taints, arm64=arm64)
        elif r.type == "kubernetes:karpenter.sh/v1:NodePool":
            template = r.inputs["spec"]["template"]
            labels = template.get("metadata", {}).get("labels") or {}
            spec = template["spec"]
            # Karpenter holds a node's `startupTaints` until something removes them (the
            # NodePool CRD's description): DaemonSets meet them as much as `taints`.
            taints = tuple(
                (t["key"], t.get("value") or "", t["effect"])
                for t in [*(spec.get("taints") or []), *(spec.get("startupTaints") or [])]
            )
            arm64 = any(
                req["key"] == "kubernetes.io/arch" and req.get("values") == ["arm64"]
                for req in spec.get("requirements") or []
            )
            if POOL_LABEL in labels:
                yield PoolNodes(labels[POOL_LABEL], labels, taints, arm64=arm64)
        elif r.type == "gcp:container/nodePool:NodePool":
            node_config = r.inputs.get("nodeConfig") or {}
            labels = node_config.get("labels") or {}
            taints = tuple(
                (t["key"], t.get("value") or "", _CLOUD_EFFECTS.get(t["effect"], t["effect"]))
                for t in node_config.get("taints") or []
            )
            if (r.inputs.get("queuedProvisioning") or {}).get("enabled"):
                taints += (GKE_QUEUED_TAINT,)
            cos = (node_config.get("imageType") or "").startswith("COS")
            if POOL_LABEL in labels:
                yield PoolNodes(labels[POOL_LABEL], labels, taints, cos=cos, gke=True)


class UnknownDaemonSets(Exception):
    """A resource that may install DaemonSets whose tolerations the helper cannot tell."""


def _every_pool(pool: PoolNodes) -> bool:
    return True


def _selected_by(selector: Mapping[str, str]) -> Callable[[PoolNodes], bool]:
    return lambda pool: all(pool.labels.get(k) == v for k, v in selector.items())


def _affinity_in(pod: Mapping[str, Any]) -> Callable[[PoolNodes], bool]:
    """The pools a pod's required node affinity selects by their pool label: a node matches any
    one term, all of whose expressions (k8s.io/api core/v1 NodeSelectorTerm). Expressions on
    other labels (those a node gains later, such as the validation result) are left out: they
    select among a pool's nodes, not among pools."""
    required = (pod.get("affinity") or {}).get("nodeAffinity", {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = [
        [
            e
            for e in term.get("matchExpressions") or []
            if e["key"] == POOL_LABEL and e["operator"] == "In"
        ]
        for term in required.get("nodeSelectorTerms") or []
    ]
    if not terms:
        return _every_pool
    return lambda pool: any(
        all(pool.labels.get(e["key"]) in e["values"] for e in term) for term in terms
    )


def node_daemonsets(resource: PlannedResource) -> list[NodeDaemonSet]:
    """The DaemonSets the resource installs, as rendered, with the pools each must run on."""
    inputs = resource.inputs
    if resource.type == "kubernetes:apps/v1:DaemonSet":
        pod = inputs["spec"]["template"]["spec"]
        selected = _selected_by(pod.get("nodeSelector") or {})
        within = _affinity_in(pod)
        return [
            NodeDaemonSet(
                resource.name,
                pod.get("tolerations") or [],
                lambda pool: selected(pool) and within(pool),
            )
        ]
    if resource.type == "kubernetes:nvidia.com/v1alpha1:NVIDIADriver":
        spec = inputs["spec"]
        return [
            NodeDaemonSet(
                f"NVIDIADriver {resource.name}",
                [*NVIDIA_DRIVER_BUILT_IN, *(spec.get("tolerations") or [])],
                _selected_by(spec.get("nodeSelector") or {}),
            )
        ]
    if resource.type == "kubernetes:helm.sh/v3:Release":
        return _chart_daemonsets(resource.name, inputs["chart"], inputs.get("values") or {})
    if resource.type == "aws:eks/addon:Addon":
        return _addon_daemonsets(inputs["addonName"], inputs.get("configurationValues"))
    if resource.type == "kubernetes:yaml/v2:ConfigFile":
        if inputs.get("file") != COS_DRIVER_INSTALLER:
            raise UnknownDaemonSets(f"{resource.name}: a manifest whose tolerations are unread")
        return [NodeDaemonSet("nvidia-driver-installer", [TOLERATE_ALL], lambda p: p.cos)]
    if resource.type.startswith(_MANIFEST_TYPES):
        raise UnknownDaemonSets(f"{resource.name}: {resource.type} may hold DaemonSets")
    return []


def _chart_daemonsets(name: str, chart: str, values: Mapping[str, Any]) -> list[NodeDaemonSet]:
    chart = chart.rsplit("/", 1)[-1]
    if chart == "gpu-operator":
        nfd = values.get("node-feature-discovery", {}).get("worker", {})
        found = [
            NodeDaemonSet(
                "the GPU Operator's operands",
                values.get("daemonsets", {}).get("tolerations") or OPERATOR_OPERANDS_DEFAULT,
                _every_pool,
            )
        ]
        if values.get("nfd", {}).get("enabled", True):
            found.append(
                NodeDaemonSet(
                    "node-feature-discovery's worker",
                    nfd.get("tolerations", NFD_WORKER_DEFAULT),
                    _every_pool,
                )
            )
        return found
    if chart == "aws-efa-k8s-device-plugin":
        return [
            NodeDaemonSet(
                "the EFA device plugin",
                [*EFA_PLUGIN_BUILT_IN, *(values.get("tolerations") or [])],
                _selected_by(values.get("nodeSelector") or {}),
            )
        ]
    if chart == "nvidia-dra-driver-gpu":
        # NVIDIA/k8s-dra-driver-gpu deployments/helm/nvidia-dra-driver-gpu v25.12.0
        # templates/kubeletplugin.yaml: `.Values.kubeletPlugin.tolerations` (values.yaml `[]`)
        # and `.Values.kubeletPlugin.affinity`; the controller, a Deployment, only with
        # ComputeDomains (templates/controller.yaml).
        plugin = values.get("kubeletPlugin", {})
        return [
            NodeDaemonSet(
                "the DRA driver's kubelet plugin",
                plugin.get("tolerations") or [],
                _affinity_in(plugin),
            )
        ]
    if chart == "kube-prometheus-stack":
        node_exporter = values.get("prometheus-node-exporter", {})
        return [
            NodeDaemonSet(
                "node-exporter",
                node_exporter.get("tolerations", NODE_EXPORTER_DEFAULT),
                _every_pool,
            )
        ]
    if chart in CHARTS_WITHOUT_DAEMONSETS:
        return []
    raise UnknownDaemonSets(f"{name}: chart {chart}, whose DaemonSets' tolerations are unread")


def _addon_daemonsets(addon: str, configuration: str | None) -> list[NodeDaemonSet]:
    values = json.loads(configuration) if configuration else {}
    if addon == "eks-node-monitoring-agent":
        return [
            NodeDaemonSet(
                "the node monitoring agent",
                values.get("nodeAgent", {}).get("tolerations", MONITORING_AGENT_DEFAULT),
                _every_pool,
            ),
            NodeDaemonSet(
                "the node monitoring agent's DCGM server",
                values.get("dcgmAgent", {}).get("tolerations", DCGM_SERVER_DEFAULT),
                lambda pool: not pool.arm64,
            ),
        ]
    if addon in ADDONS_WITHOUT_DAEMONSETS:
        return []
    if addon in ADDONS_TOLERATING_ALL and "tolerations" not in json.dumps(values):
        return [NodeDaemonSet(f"the {addon} add-on", [TOLERATE_ALL], _every_pool)]
    raise UnknownDaemonSets(f"add-on {addon}: DaemonSet tolerations the helper cannot read")
