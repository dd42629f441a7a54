"""What any plan must hold of DRA pools (`allocation: dra`), whatever its other settings:
`dra_problems`.

1. NVIDIA's DRA driver is installed exactly where a pool's nodes keep the GPU Operator's device
   plugin off (`nvidia.com/gpu.deploy.device-plugin=false`: gpu-operator v26.7.0
   assets/state-device-plugin/0500_daemonset.yaml selects "true"), and its kubelet plugin is
   allowed onto each such pool's nodes: a node it misses publishes no GPU, and a claim on it
   never starts. That it tolerates their taints is `daemonset_toleration_problems`' to say.
2. Each such pool's nodes carry the DRA taint (`gpu-platform.io/allocation=dra:NoSchedule`):
   from Kubernetes 1.36 the scheduler serves `nvidia.com/gpu` from a DRA node's devices
   (DRAExtendedResource; nvidia-dra-driver-gpu v25.12.0 templates/deviceclass-gpu.yaml,
   `extendedResourceName`), and only that taint keeps a pod counting GPUs off them.
3. The GPU Operator's device plugin is off cluster-wide (every pool is DRA, as config
   validation holds): only then does the operator's validator skip its wait for the device
   plugin's `nvidia.com/gpu` (gpu-operator v26.7.0 controllers/object_controls.go), which it
   would fail on a DRA node forever.
4. The cluster autoscaler the stack installs simulates claims there
   (`enable-dynamic-resource-allocation`, false by default at cluster-autoscaler-1.34.5:
   config/flags/flags.go).

A plan without DRA pools (every GKE and Karpenter plan) has nothing to break but an installed
driver: `[]`.
"""

from typing import Any

from gpu_platform.offline.program import Plan

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
RELEASE = "kubernetes:helm.sh/v3:Release"
DEVICE_PLUGIN_DEPLOY = "nvidia.com/gpu.deploy.device-plugin"
POOL = "gpu-platform.io/pool"
DRA_TAINT = {"key": "gpu-platform.io/allocation", "value": "dra", "effect": "NO_SCHEDULE"}


def dra_problems(plan: Plan, _config: Any = None) -> list[str]:
    groups = [
        r
        for r in plan.of_type(NODE_GROUP)
        if r.inputs.get("labels", {}).get(DEVICE_PLUGIN_DEPLOY) == "false"
    ]
    releases = {r.inputs["chart"]: r.inputs for r in plan.of_type(RELEASE)}
    driver = releases.get("nvidia-dra-driver-gpu")
    if not groups:
        return [] if driver is None else ["the DRA driver is installed without a DRA pool"]
    if driver is None:
        return [f"no DRA driver for the DRA node groups {[g.name for g in groups]}"]
    plugin = driver["values"]["kubeletPlugin"]
    (term,) = plugin["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    (expression,) = term["matchExpressions"]
    found = []
    for group in groups:
        if expression["key"] != POOL or group.inputs["labels"][POOL] not in expression["values"]:
            found.append(f"{group.name}: the DRA kubelet plugin is not allowed onto its nodes")
        if DRA_TAINT not in group.inputs.get("taints", []):
            found.append(f"{group.name}: its nodes lack the DRA taint")
    operator = releases.get("gpu-operator")
    if operator is not None and operator["values"]["devicePlugin"].get("enabled") is not False:
        found.append("the GPU Operator's device plugin is on beside DRA pools")
    autoscaler = releases.get("cluster-autoscaler")
    if autoscaler is not None and not autoscaler["values"]["extraArgs"].get(
        "enable-dynamic-resource-allocation"
    ):
        found.append("the cluster autoscaler does not simulate DRA claims")
    return found
