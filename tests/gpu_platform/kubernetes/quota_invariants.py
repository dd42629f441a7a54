"""Does every tenant namespace's quota cap what the stack's GPU nodes advertise?

A ResourceQuota caps only the resources its `hard` names (k8s.io/apiserver v0.35.0,
pkg/admission/plugin/resourcequota/controller.go `CheckRequest`). `quota_problems(plan, config)`
reads, for each pool's nodes as the planned resources label them when they join:
- a pool whose slices the operator's MIG manager makes, by the layout it selects
  (`nvidia.com/mig.config: all-<slice>`), advertises `nvidia.com/mig-<slice>` under the `mixed`
  strategy (k8s-device-plugin v0.20.0 internal/rm/rm.go `AddDefaultResourcesToConfig`);
- a pool whose device plugin config is `exclusive` hands out whole GPUs as `nvidia.com/gpu`, the
  name replicas of shared GPUs have too, so no namespace's cap of it may pass its `gpuQuota`.
"""

from collections.abc import Mapping
from typing import Any

from gpu_platform.cli.offline import Plan
from tests.gpu_platform.kubernetes.daemonset_tolerations import pool_nodes

QUOTA = "kubernetes:core/v1:ResourceQuota"
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
WHOLE_GPUS = "requests.nvidia.com/gpu"


def quota_problems(plan: Plan, config: Mapping[str, Any]) -> list[str]:
    """Each tenant namespace without a quota, each MIG slice a pool advertises that a quota
    leaves uncapped, and each cap of `nvidia.com/gpu` above the namespace's `gpuQuota` where a
    pool hands out whole GPUs, as sentences."""
    quotas = {
        r.inputs["metadata"]["namespace"]: r.inputs["spec"]["hard"] for r in plan.of_type(QUOTA)
    }
    pools = list(pool_nodes(plan))
    slices = {
        pool.pool: "requests.nvidia.com/mig-" + pool.labels[MIG_CONFIG_LABEL].removeprefix("all-")
        for pool in pools
        if MIG_CONFIG_LABEL in pool.labels
    }
    whole = [p.pool for p in pools if p.labels.get(DEVICE_PLUGIN_CONFIG_LABEL) == "exclusive"]
    problems = []
    for namespace in config.get("gpu-platform:namespaces", []):
        name = namespace["name"]
        hard = quotas.get(name)
        if hard is None:
            problems.append(f"namespace {name}: no ResourceQuota")
            continue
        problems += [
            f"namespace {name}: {resource} of pool {pool} uncapped"
            for pool, resource in slices.items()
            if resource not in hard
        ]
        gpu_quota = namespace.get("gpuQuota", 0)
        if whole and int(hard.get(WHOLE_GPUS, gpu_quota + 1)) > gpu_quota:
            problems.append(
                f"namespace {name}: {WHOLE_GPUS} {hard.get(WHOLE_GPUS)} lets pods take more"
                f" whole GPUs of {', '.join(whole)} than gpuQuota {gpu_quota}"
            )
    return problems
