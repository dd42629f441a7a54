"""Does every tenant namespace's quota cap what the stack's GPU nodes can advertise?

A ResourceQuota caps only the resources its `hard` names (k8s.io/apiserver v0.35.0,
pkg/admission/plugin/resourcequota/controller.go `CheckRequest`). `quota_problems(plan, config)`
reads, for each pool's nodes as the planned resources label them when they join:
- a MIG node advertises `nvidia.com/mig-<profile>` for each profile NVML lists, `+` made `.`
  (k8s-device-plugin v0.20.0 internal/rm/rm.go `AddDefaultResourcesToConfig`): the profile its
  pool selects (`nvidia.com/mig.config: all-<slice>`), or any other of its GPU's once an admin
  relabels it, so every slice of every GPU the platform knows is capped, at no more than the
  namespace's `migQuota` of it;
- a pool whose device plugin config is `exclusive` hands out whole GPUs as `nvidia.com/gpu`, the
  name replicas of shared GPUs have too, so no namespace's cap of it may pass its `gpuQuota`;
- where no pool hands out whole GPUs but one shares them (time-slicing, MPS, GKE's sharing),
  `nvidia.com/gpu` are replicas, capped at no more than `sharedGpuQuota`;
- a DRA pool's nodes (`nvidia.com/gpu.deploy.device-plugin=false` off GKE) advertise no
  `nvidia.com/gpu` at all: their devices are capped per DeviceClass
  (gpu_platform/kubernetes/dra_devices.py), and no pod counting GPUs lands there;
- from Kubernetes 1.34, where claims are served and quota counts devices per class
  (`<class>.deviceclass.resource.k8s.io/devices`, pkg/quota/v1/evaluator/core/
  resource_claims.go), a DRA driver the platform does not install (EKS Auto Mode's, from 1.36)
  may publish GPUs whatever the pools: every quota holds NVIDIA's driver's classes
  (nvidia-dra-driver-gpu v25.12.0 templates/deviceclass-*.yaml) at 0, and any other class at
  no more than the namespace's `gpuQuota`;
- but from 1.36, where DRAExtendedResource is on by default, the scheduler serves a pod asking
  for `nvidia.com/gpu` on such a driver's nodes through `gpu.nvidia.com`, the chart's class
  mapping that resource (deviceclass-gpu.yaml, `extendedResourceName`), with a claim in the
  pod's namespace, and quota counts the class's devices as `nvidia.com/gpu`: on a stack
  without DRA pools the class is held at exactly the namespace's cap of `nvidia.com/gpu`, so
  that it refuses no claim that cap admits. An EKS Auto Mode stack (no DRA pools) holds it so
  from 1.34, where Auto Mode runs no DRA driver and the cap is inert, so that an upgrade to 1.36
  outside the stack finds it in place. A stack with DRA pools keeps it at 0: there it is the
  platform's own driver's, and tenants claim a model through the model's class.
"""

from collections import Counter
from collections.abc import Mapping
from typing import Any

from gpu_platform.accelerators import MIG_SLICES
from gpu_platform.offline.program import Plan
from gpu_platform.offline.stand_ins import aws as aws_stand_in
from gpu_platform.offline.stand_ins import gcp as gcp_stand_in
from tests.gpu_platform.kubernetes.daemonset_tolerations import pool_nodes

QUOTA = "kubernetes:core/v1:ResourceQuota"
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
GPUS = "requests.nvidia.com/gpu"
MIG_PREFIX = "requests.nvidia.com/mig-"
DEVICES = ".deviceclass.resource.k8s.io/devices"
NVIDIA_CLASSES = ("gpu.nvidia.com", "mig.nvidia.com", "vfio.gpu.nvidia.com")
COUNTED_CLASS = "gpu.nvidia.com"


def cluster_minor(config: Mapping[str, Any]) -> tuple[int, int]:
    """The Kubernetes minor of the stack's cluster: a created one's, else the stand-in's."""
    create = config.get("gpu-platform:cluster", {}).get("create") or {}
    version = create.get("kubernetesVersion") or (
        gcp_stand_in.STAND_IN_MASTER_VERSION
        if config.get("gpu-platform:cloud") == "gcp"
        else aws_stand_in.STAND_IN_KUBERNETES_VERSION
    )
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def device_class_problems(
    name: str, hard: Mapping[str, str], gpu_quota: int, counted: bool
) -> list[str]:
    """Where namespace `name`'s quota leaves one of NVIDIA's classes uncapped or above 0, or
    lets a class of a model take more than `gpu_quota`; where the `counted` class's devices
    are counted as `nvidia.com/gpu` (from 1.36 without DRA pools; on Auto Mode from 1.34), where
    its cap is other than the namespace's of `nvidia.com/gpu`."""
    problems = [
        f"namespace {name}: {device_class}{DEVICES} uncapped"
        for device_class in NVIDIA_CLASSES
        if device_class + DEVICES not in hard
    ]
    for key, value in hard.items():
        if not key.endswith(DEVICES):
            continue
        device_class = key.removesuffix(DEVICES)
        if counted and device_class == COUNTED_CLASS:
            if value != hard.get(GPUS):
                problems.append(f"namespace {name}: {key} {value}, not its {GPUS} {hard.get(GPUS)}")
            continue
        limit = 0 if device_class in NVIDIA_CLASSES else gpu_quota
        if int(value) > limit:
            problems.append(f"namespace {name}: {key} {value} above {limit}")
    return problems


def quota_problems(plan: Plan, config: Mapping[str, Any]) -> list[str]:
    """Each tenant namespace without a quota, each MIG slice a quota leaves uncapped or caps
    above its `migQuota`, and each cap of `nvidia.com/gpu` above the namespace's `gpuQuota`
    where a pool hands out whole GPUs, or above its `sharedGpuQuota` where pools only share
    them, as sentences."""
    quotas = {
        r.inputs["metadata"]["namespace"]: r.inputs["spec"]["hard"] for r in plan.of_type(QUOTA)
    }
    pools = [
        p
        for p in pool_nodes(plan)
        if p.gke or p.labels.get("nvidia.com/gpu.deploy.device-plugin") != "false"
    ]
    whole = [p.pool for p in pools if p.labels.get(DEVICE_PLUGIN_CONFIG_LABEL) == "exclusive"]
    shared = [p.pool for p in pools if p.pool not in whole and MIG_CONFIG_LABEL not in p.labels]
    # Kueue admits on every pool but the canaries, and holds a tenant's borrowing limit on each
    # of them apart (gpu_platform/kubernetes/kueue.py, `with_borrowing`).
    canaries = {p["name"] for p in config.get("gpu-platform:pools", []) if "canaryOf" in p}
    flavors = Counter(
        GPUS
        if MIG_CONFIG_LABEL not in p.labels
        else MIG_PREFIX + p.labels[MIG_CONFIG_LABEL].removeprefix("all-")
        for p in {p.pool: p for p in pools if p.pool not in canaries}.values()
    )
    problems = []
    queued = config.get("gpu-platform:queues", {}).get("enabled", False)
    dra = any(p.get("allocation") == "dra" for p in config.get("gpu-platform:pools", []))
    for namespace in config.get("gpu-platform:namespaces", []):
        name = namespace["name"]
        # A queued namespace may run what Kueue lets it borrow too, on each pool.
        borrowing = namespace.get("queue", {}).get("borrowingLimit", 0) if queued else 0
        hard = quotas.get(name)
        if hard is None:
            problems.append(f"namespace {name}: no ResourceQuota")
            continue
        if cluster_minor(config) >= (1, 34):
            auto_mode = config.get("gpu-platform:provisioner") == "eks-auto-mode"
            counted = (cluster_minor(config) >= (1, 36) or auto_mode) and not dra
            problems += device_class_problems(name, hard, namespace.get("gpuQuota", 0), counted)
        mig_quota = namespace.get("migQuota", {})
        for slice_name in MIG_SLICES:
            resource = MIG_PREFIX + slice_name
            if resource not in hard:
                problems.append(f"namespace {name}: {resource} uncapped")
            elif int(hard[resource]) > mig_quota.get(slice_name, 0) + borrowing * flavors[resource]:
                problems.append(
                    f"namespace {name}: {resource} {hard[resource]} above its migQuota"
                    f" {mig_quota.get(slice_name, 0)}"
                )
        if whole:
            kind, setting, pools_named = "whole GPUs", "gpuQuota", whole
        elif shared:
            kind, setting, pools_named = "replicas", "sharedGpuQuota", shared
        else:
            continue
        limit = namespace.get(setting, 0) + borrowing * flavors[GPUS]
        if int(hard.get(GPUS, limit + 1)) > limit:
            problems.append(
                f"namespace {name}: {GPUS} {hard.get(GPUS)} lets pods take more {kind} of"
                f" {', '.join(pools_named)} than {setting} {limit}"
            )
    return problems


CLUSTER_QUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"
LOCAL_QUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue"
QUEUED_NAMESPACE_LABEL = "gpu-platform.io/queue"


def kueue_quota_problems(plan: Plan, config: Mapping[str, Any] | None = None) -> list[str]:
    """Where Kueue's quotas and the namespaces' disagree, as sentences: a queued namespace (one
    labelled `gpu-platform.io/queue`) without its LocalQueue or ClusterQueue, a resource
    whose nominal quotas and borrowing limits, summed over every flavor that holds it, are other
    than the namespace's ResourceQuota of it (more than it, where the namespace splits it), and,
    given the stack's `config`, a flavor whose nominal quota is not the pool's share where the
    namespace splits its quota (`queue.poolQuotas`). A ResourceQuota caps a resource over all
    pools, a ClusterQueue each flavor apart (`ResourceQuota.NominalQuota`, "the quantity of
    this resource that is available for Workloads admitted by this ClusterQueue" per flavor,
    apis/kueue/v1beta2/clusterqueue_types.go at v0.19.2): only the sums agreeing keeps Kueue
    from admitting what the namespace may not run, shares below the quota only leaving it
    unused.
    """
    quotas = {
        r.inputs["metadata"]["namespace"]: r.inputs["spec"]["hard"] for r in plan.of_type(QUOTA)
    }
    queues = {
        q.inputs["spec"]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"]: q
        for q in plan.of_type(CLUSTER_QUEUE)
    }
    local = {
        q.inputs["metadata"]["namespace"]: q.inputs["spec"]["clusterQueue"]
        for q in plan.of_type(LOCAL_QUEUE)
    }
    splits = {
        namespace["name"]: namespace.get("queue", {}).get("poolQuotas", {})
        for namespace in (config or {}).get("gpu-platform:namespaces", [])
    }
    problems = []
    for namespace in plan.of_type("kubernetes:core/v1:Namespace"):
        name = namespace.inputs["metadata"]["name"]
        if QUEUED_NAMESPACE_LABEL not in namespace.inputs["metadata"].get("labels", {}):
            continue
        queue = queues.get(name)
        if queue is None or local.get(name) != queue.inputs["metadata"]["name"]:
            problems.append(f"namespace {name}: queued, without its ClusterQueue and LocalQueue")
            continue
        hard = quotas.get(name, {})
        most: dict[str, int] = {}
        for group in queue.inputs["spec"]["resourceGroups"]:
            for flavor in group["flavors"]:
                for resource in flavor["resources"]:
                    share = splits.get(name, {}).get(flavor["name"], resource["nominalQuota"])
                    if resource["nominalQuota"] != share:
                        problems.append(
                            f"ClusterQueue {queue.inputs['metadata']['name']} holds"
                            f" {resource['nominalQuota']} {resource['name']} on {flavor['name']},"
                            f" its namespace's share there {share}"
                        )
                    held = resource["nominalQuota"] + resource.get("borrowingLimit", 0)
                    most[resource["name"]] = most.get(resource["name"], 0) + held
        for resource, held in most.items():
            cap = hard.get(f"requests.{resource}")
            # Shares adding up to less than the quota leave part of it unused, which is safe.
            if cap is None or int(cap) < held or (int(cap) > held and not splits.get(name)):
                problems.append(
                    f"ClusterQueue {queue.inputs['metadata']['name']} holds {held} {resource}"
                    f" over its flavors with what it borrows, its namespace's ResourceQuota {cap}"
                )
    return problems
