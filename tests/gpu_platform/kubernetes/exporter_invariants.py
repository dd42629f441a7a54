"""Has every GPU node one DCGM exporter, and does it find the pods on its GPUs?

dcgm-exporter labels a GPU's series with the pod holding it by matching the device IDs the
kubelet lists for each container against one ID of the GPU, of the type
`DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE` names: `uid` when unset, the GPU's UUID, as the
operator's device plugin names its devices; `device-name`, `nvidia<index>`, as GKE's device
plugin names them (`nvidia0/vgpu1` for a shared replica, whose suffix the exporter strips)
(dcgm-exporter 4.5.3-4.8.2 pkg/cmd/app.go, internal/pkg/collector/types.go `GetIDOfType`,
internal/pkg/transformation/kubernetes.go; container-engine-accelerators
pkg/gpu/nvidia/manager.go).

`exporter_problems(plan, config)` reads, for each pool's nodes as the planned resources label
them when they join:
- the GPU Operator's exporter runs there where `nvidia.com/gpu.deploy.dcgm-exporter` is "true",
  its DaemonSet's node selector, which the operator sets "true" on a GPU node without it
  (gpu-operator v26.7.0 assets/state-dcgm-exporter/0800_daemonset.yaml,
  controllers/state_manager.go `addGPUStateLabels`), unless the chart values turn it off;
- a planned DaemonSet of the dcgm-exporter image runs there where its node selector matches;
- GKE's device plugin serves a GKE node's GPUs unless `gke-no-default-nvidia-gpu-device-plugin`
  is "true" (NVIDIA's GPU Operator guide for GKE); the operator's serves every other node.
Two exporters count each GPU twice; none hides it. On a DRA pool's nodes
(`nvidia.com/gpu.deploy.device-plugin=false`) the exporter finds a claim's pod only with
`KUBERNETES_ENABLE_DRA=true` (dcgm-exporter pkg/cmd/app.go, false by default) and read access to
ResourceSlices, where it looks up each claimed device's UUID (internal/pkg/transformation/dra.go):
a ClusterRole granting `watch` on them bound to the operator exporter's service account,
`nvidia-dcgm-exporter` in the release's namespace (gpu-operator v26.7.0
assets/state-dcgm-exporter/0800_daemonset.yaml), both before the release, as the exporter builds
its ResourceSlice informer once, at startup (dra.go `NewDRAResourceSliceManager`).
"""

from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

from gpu_platform.offline.program import Plan, PlannedResource
from tests.gpu_platform.kubernetes.daemonset_tolerations import PoolNodes, pool_nodes

HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
DAEMONSET = "kubernetes:apps/v1:DaemonSet"
DEPLOY_LABEL = "nvidia.com/gpu.deploy.dcgm-exporter"
DEVICE_PLUGIN_DEPLOY = "nvidia.com/gpu.deploy.device-plugin"
GKE_PLUGIN_OFF = "gke-no-default-nvidia-gpu-device-plugin"
GPU_ID_TYPE = "DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE"
RBAC = "kubernetes:rbac.authorization.k8s.io/v1"
EXPORTER_ACCOUNT = "nvidia-dcgm-exporter"
EXPORTER_LABELS = (DEPLOY_LABEL, "gpu-platform.io/gpu-sharer")
"""What a GKE-shared pool's nodes take when their node pool is updated."""
Values = Mapping[str, Any]


def exporter_problems(plan: Plan, config: Mapping[str, Any]) -> list[str]:
    """Each pool whose nodes get no DCGM exporter or two, or one that cannot tell which pod
    holds a GPU there, as sentences; where every pool is GKE-shared, also for its nodes that
    joined before their node pool took the platform's exporter labels (a led pool's, until its
    update after the canary's gate)."""
    exporters = list(_exporters(plan))
    pools = list(pool_nodes(plan))
    if pools and all(_gke_serves(pool) for pool in pools):
        pools += [_joined_before_the_exporter_labels(pool) for pool in pools]
    problems = []
    for pool in pools:
        running = [(name, env, r) for name, env, runs_on, r in exporters if runs_on(pool)]
        if len(running) != 1:
            names = ", ".join(name for name, _, _ in running) or "none"
            problems.append(f"pool {pool.pool}: {len(running)} DCGM exporters ({names})")
            continue
        ((name, env, exporter),) = running
        wanted = "device-name" if _gke_serves(pool) else "uid"
        id_type = _id_type(env)
        dra = not pool.gke and pool.labels.get(DEVICE_PLUGIN_DEPLOY) == "false"
        if dra and (blind := _dra_blindness(plan, exporter, env)):
            problems.append(f"pool {pool.pool}: {name} {blind}")
        if id_type != wanted:
            problems.append(
                f"pool {pool.pool}: {name} matches GPUs by {id_type}, its device plugin's"
                f" names need {wanted}"
            )
    return problems


def _dra_blindness(plan: Plan, exporter: PlannedResource, env: list[Values]) -> str | None:
    enabled = [e.get("value") for e in env if e.get("name") == "KUBERNETES_ENABLE_DRA"]
    roles = {
        role.inputs["metadata"]["name"]: role
        for role in plan.of_type(f"{RBAC}:ClusterRole")
        for rule in role.inputs.get("rules") or []
        if "resourceslices" in rule["resources"] and "watch" in rule["verbs"]
    }
    subject = {
        "kind": "ServiceAccount",
        "name": EXPORTER_ACCOUNT,
        "namespace": _namespace(exporter),
    }
    bound = [
        (binding, roles[binding.inputs["roleRef"]["name"]])
        for binding in plan.of_type(f"{RBAC}:ClusterRoleBinding")
        if binding.inputs["roleRef"]["name"] in roles
        and subject in (binding.inputs.get("subjects") or [])
    ]
    if enabled[-1:] != ["true"] or not bound:
        return "cannot attribute DRA GPUs to pods"
    if not any(
        binding.urn in exporter.dependencies and role.urn in binding.dependencies
        for binding, role in bound
    ):
        return "may start before its access to ResourceSlices"
    return None


def _namespace(exporter: PlannedResource) -> Any:
    return exporter.inputs.get("namespace") or exporter.inputs["metadata"].get("namespace")


def _joined_before_the_exporter_labels(pool: PoolNodes) -> PoolNodes:
    labels = {k: v for k, v in pool.labels.items() if k not in EXPORTER_LABELS}
    return replace(pool, pool=f"{pool.pool} (a node that joined before its update)", labels=labels)


def _gke_serves(pool: PoolNodes) -> bool:
    # GKE runs its device plugin on every GPU node of a node pool; EKS and Karpenter have none.
    return pool.gke and pool.labels.get(GKE_PLUGIN_OFF) != "true"


def _id_type(env: list[Values]) -> str:
    # The last setting of a name is the one the container gets.
    values = [e.get("value") for e in env if e.get("name") == GPU_ID_TYPE]
    return str(values[-1]) if values else "uid"


def _exporters(plan: Plan) -> Iterator[tuple[str, list[Values], Any, PlannedResource]]:
    for resource in plan.resources:
        if resource.type == HELM_RELEASE and resource.inputs["chart"].endswith("gpu-operator"):
            exporter = (resource.inputs.get("values") or {}).get("dcgmExporter") or {}
            if exporter.get("enabled", True):
                yield (
                    "the GPU Operator's exporter",
                    list(exporter.get("env") or []),
                    lambda pool: pool.labels.get(DEPLOY_LABEL, "true") == "true",
                    resource,
                )
        elif resource.type == DAEMONSET:
            pod = resource.inputs["spec"]["template"]["spec"]
            for container in pod["containers"]:
                if "dcgm-exporter" in container["image"]:
                    selector = pod.get("nodeSelector") or {}
                    yield (
                        f"DaemonSet {resource.name}",
                        list(container.get("env") or []),
                        lambda pool, s=selector: s.items() <= pool.labels.items(),
                        resource,
                    )
