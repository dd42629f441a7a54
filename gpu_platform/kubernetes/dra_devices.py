"""How pods claim the GPUs of DRA pools (`allocation: dra`): a DeviceClass per GPU model, named
after it, and a ResourceClaimTemplate of one GPU of each model in every tenant namespace, whose
quota caps the devices claimed per class.

NVIDIA's DRA driver publishes each GPU as a device of the driver `gpu.nvidia.com` with the
attributes `type` (`gpu`, or `mig` for a MIG device) and `productName`, among others
(NVIDIA/k8s-dra-driver-gpu cmd/gpu-kubelet-plugin/deviceinfo.go at v25.12.0); its chart's own
DeviceClass `gpu.nvidia.com` selects every whole GPU whatever the model
(templates/deviceclass-gpu.yaml). A class per model lets a pod claim the model and a namespace's
quota cap it: Kubernetes counts a namespace's claimed devices per class,
`<class>.deviceclass.resource.k8s.io/devices` (pkg/quota/v1/evaluator/core/resource_claims.go,
v1.34 to v1.36).
"""

from collections.abc import Mapping, Sequence
from typing import Any

from gpu_platform.config.dra_rules import kubernetes_minor, serves_dra
from gpu_platform.node_identity import ResolvedPool

DRIVER = "gpu.nvidia.com"
"""The driver name its devices carry, and its attributes' domain."""
RESOURCE_API_VERSION = "resource.k8s.io/v1"
DEVICE_CLASS_SUFFIX = ".gpu-platform.io"

# What NVML calls each model (`nvmlDeviceGetName`, as `nvidia-smi --query-gpu=name` prints it),
# which the driver publishes as the attribute `productName` (cmd/gpu-kubelet-plugin/nvlib.go:
# `device.GetName()`; deviceinfo.go). Patterns rather than names, as the PCIe and SXM boards of a
# model are named apart ("NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB PCIe").
PRODUCT_NAMES: Mapping[str, str] = {
    # The T4G of Graviton g5g instances, which the platform counts as a T4, is "NVIDIA T4G".
    "t4": "^(Tesla T4|NVIDIA T4G)$",
    "l4": "^NVIDIA L4$",
    "a10g": "^NVIDIA A10G$",
    "l40s": "^NVIDIA L40S$",
    "v100": "^Tesla V100-",
    "p4": "^Tesla P4$",
    "p100": "^Tesla P100-",
    "a30": "^NVIDIA A30$",
    "a100-40gb": "^NVIDIA A100-(SXM4|PCIE)-40GB$",
    "a100-80gb": "^NVIDIA A100[- ].*80GB",
    "h100-80gb": "^NVIDIA H100 80GB HBM3$",
    "h100-mega-80gb": "^NVIDIA H100 80GB HBM3$",
    "h200-141gb": "^NVIDIA H200",
    "b200": "^NVIDIA B200$",
}


def device_class_name(accelerator: str) -> str:
    """The DeviceClass of one GPU model's whole GPUs: `l4.gpu-platform.io`."""
    return accelerator + DEVICE_CLASS_SUFFIX


def claim_template_name(accelerator: str) -> str:
    """The ResourceClaimTemplate in each tenant namespace that claims one GPU of a model:
    `gpu-l4`."""
    return f"gpu-{accelerator}"


def dra_claim(pool: ResolvedPool) -> dict[str, str]:
    """How a pod claims a GPU of a DRA pool, as the stack exports it: the DeviceClass of its
    model, and the ResourceClaimTemplate of one such GPU each tenant namespace has."""
    accelerator = pool.gpu.accelerator
    return {
        "deviceClass": device_class_name(accelerator),
        "resourceClaimTemplate": claim_template_name(accelerator),
    }


def device_class_selector(accelerator: str) -> str:
    """CEL selecting the driver's whole GPUs of one model: the chart's `gpu.nvidia.com` class
    (type `gpu`, not `mig`) narrowed by product name."""
    attributes = f"device.attributes['{DRIVER}']"
    return (
        f"device.driver == '{DRIVER}' && {attributes}.type == 'gpu' &&"
        f" {attributes}.productName.matches('{PRODUCT_NAMES[accelerator]}')"
    )


def dra_models(pools: Sequence[ResolvedPool]) -> list[str]:
    """The GPU models of the DRA pools, each once, sorted."""
    return sorted({pool.gpu.accelerator for pool in pools if pool.spec.allocation == "dra"})


def device_quota_key(device_class: str) -> str:
    """The ResourceQuota key capping the devices of a DeviceClass a namespace claims."""
    return f"{device_class}.deviceclass.resource.k8s.io/devices"


# The DeviceClasses the chart installs (templates/deviceclass-gpu.yaml, deviceclass-mig.yaml,
# deviceclass-vfio-gpu.yaml at v25.12.0), which select GPUs, MIG devices and GPUs for VM
# passthrough of every model: capped at 0 in every tenant namespace (gpu.nvidia.com from
# Kubernetes 1.36 aside, below), as a quota caps only the classes it names and a claim through
# them would take any model uncounted. Tenants claim through the classes of the models.
#
# Capped on every cluster that serves resource.k8s.io/v1, DRA pools or not: a driver the platform
# does not install may publish GPUs there, and a claim takes them outside `gpuQuota`, which
# counts `nvidia.com/gpu`. "EKS Auto Mode includes the NVIDIA DRA driver in the node runtime on
# Kubernetes version 1.36 and later. You do not install or manage the driver" (EKS user guide,
# "Use the NVIDIA DRA driver or device plugin on Amazon EKS"). AWS does not publish the
# DeviceClasses Auto Mode's driver installs: NVIDIA's chart's names are assumed. A quota key of a
# class that does not exist caps nothing and refuses nothing.
CHART_DEVICE_CLASSES = ("gpu.nvidia.com", "mig.nvidia.com", "vfio.gpu.nvidia.com")

# The chart's class `gpu.nvidia.com` maps the extended resource `nvidia.com/gpu`
# (templates/deviceclass-gpu.yaml at v25.12.0: `extendedResourceName: nvidia.com/gpu` wherever
# the chart's resource API is resource.k8s.io/v1; mig.nvidia.com and vfio.gpu.nvidia.com map
# none). Under the feature DRAExtendedResource, alpha and off from Kubernetes 1.34, beta and on
# by default from 1.36 (pkg/features/kube_features.go), the scheduler gives a pod asking for
# `nvidia.com/gpu` a node whose GPUs a DRA driver publishes, and creates for it a ResourceClaim
# through that class in the pod's namespace (KEP-5004). The quota evaluator charges every claim's
# devices to `<class>.deviceclass.resource.k8s.io/devices`, a generated claim as any other, and
# with the feature on charges a claim a tenant writes through a class mapping an extended
# resource to `requests.<resource>` too; a generated claim is not charged there when its pod
# asks for the resource itself, as the pod already counts it (pkg/quota/v1/evaluator/core/
# resource_claims.go, `setResourceQuantity`, and its test cases "explicit-extended-resource-
# claim" and "simple": read in kubernetes/kubernetes revisions with DRAExtendedResource, not at a
# release tag). So from 1.36 a cap of 0 there would refuse the claim of every GPU pod on a node
# whose GPUs a DRA driver manages, which Auto Mode's nodes may be; and every device of the class
# is counted as `nvidia.com/gpu`, by the claim or by its pod: capped at the namespace's figure of
# `nvidia.com/gpu`, the class refuses nothing that figure admits, and still caps claims through it
# where a class of that name maps nothing. Not verified: that Auto Mode's class is named and maps as
# the chart's (AWS publishes neither), and the behaviour on a running 1.36 cluster.
#
# Not on a stack with DRA pools, where the class is the platform's own chart's, whose kubelet
# plugin runs only on DRA pools' nodes: there tenants claim a model through its class, capped
# at `gpuQuota`, and the class that takes any model stays at 0, so a pod asking for
# `nvidia.com/gpu` that tolerates a DRA pool's taint is not given one of its GPUs in a tenant
# namespace (its claim is refused; it stays Pending, as before 1.36, where no node fits it).
#
# On an EKS Auto Mode stack the counted cap holds from 1.34, where resource.k8s.io/v1 is served:
# Auto Mode runs no DRA driver below 1.36 (the user guide's words above), so no class of that
# name exists there and the cap is inert, and a cluster upgraded to 1.36 outside the stack
# (its nodes then come up at 1.36 with the driver) does not refuse every GPU pod's claim until
# the stack is next applied. On other stacks without DRA pools the class stays at 0 below 1.36,
# against a driver someone installed, whose direct claims the quota charges to the class alone
# while DRAExtendedResource is off.
EXTENDED_RESOURCE_CLASS = "gpu.nvidia.com"
EXTENDED_RESOURCE_MIN_KUBERNETES = (1, 36)


def device_quota(
    gpu_quota: int,
    counted_gpus: str,
    models: Sequence[str],
    kubernetes_version: str,
    auto_mode: bool = False,
) -> dict[str, str]:
    """A tenant namespace's quota of DRA devices on a cluster at `kubernetes_version`: from
    Kubernetes 1.34, where resource.k8s.io/v1 is served, the chart's classes at 0 and, where the
    stack has DRA pools of `models`, each model's class at `gpu_quota` (its `gpuQuota`); from
    1.36 where the stack has none, and from 1.34 on an EKS Auto Mode stack (`auto_mode`), which
    has none, the chart's `gpu.nvidia.com` at `counted_gpus`, the namespace's cap of
    `nvidia.com/gpu`; before 1.34, nothing."""
    if not serves_dra(kubernetes_version):
        return {}
    hard = {device_quota_key(device_class_name(model)): str(gpu_quota) for model in models}
    hard.update(dict.fromkeys(map(device_quota_key, CHART_DEVICE_CLASSES), "0"))
    counted = auto_mode or kubernetes_minor(kubernetes_version) >= EXTENDED_RESOURCE_MIN_KUBERNETES
    if not models and counted:
        hard[device_quota_key(EXTENDED_RESOURCE_CLASS)] = counted_gpus
    return hard


CLAIM_REQUEST = "gpu"
"""The request of a claim template, which a container names in `resources.claims`."""


def claim_template_spec(accelerator: str) -> dict[str, Any]:
    """A ResourceClaimTemplate's spec: one GPU of the model, through its DeviceClass."""
    return {
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": CLAIM_REQUEST,
                        "exactly": {
                            "deviceClassName": device_class_name(accelerator),
                            "allocationMode": "ExactCount",
                            "count": 1,
                        },
                    }
                ]
            }
        }
    }
