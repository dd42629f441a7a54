"""`DraDriver`: NVIDIA's DRA driver for GPUs on the DRA pools' nodes (`allocation: dra`), and a
DeviceClass for each GPU model those pools offer.

The chart (NVIDIA/k8s-dra-driver-gpu deployments/helm/nvidia-dra-driver-gpu at v25.12.0) runs a
kubelet plugin DaemonSet that publishes each GPU of its node as a device of the driver
`gpu.nvidia.com` in a ResourceSlice, and installs the DeviceClasses `gpu.nvidia.com` (whole GPUs)
and `mig.nvidia.com` (MIG devices) (templates/deviceclass-gpu.yaml, deviceclass-mig.yaml). What
the platform sets, and why:
- `resources.gpus.enabled` is the chart's default, but its templates/validation.yaml refuses to
  render it without `gpuResourcesEnabledOverride`, as the driver must not share a node with the
  device plugin: the pools' nodes are labelled to keep the GPU Operator's device plugin off
  (`nvidia.com/gpu.deploy.device-plugin=false`, gpu_platform/node_identity.py).
- `resources.computeDomains.enabled` off: ComputeDomains are multi-node NVLink (GB200 NVL72),
  which no instance type a pool can have offers; with them go the chart's controller Deployment
  (templates/controller.yaml renders only with them) and the kubelet plugin's compute-domain
  container.
- The kubelet plugin only on DRA pools' nodes (its affinity replaces the chart's, which is every
  node with an NVIDIA PCI device), tolerating every taint those nodes carry: the GPU taint, the
  pools' own and the platform's startup taints, as a node it misses publishes no GPU and its
  claims never start.
- `nvidiaDriverRoot` stays `/`, the chart's default: the EKS AL2023 NVIDIA AMI has its driver
  and container toolkit on the host, and the GPU Operator installs neither there
  (gpu_platform/kubernetes/operator_values.py).
- Its containers are privileged with host paths (templates/kubeletplugin.yaml): its namespace is
  Pod Security `privileged`, like the operator's.

The DCGM exporter's read access to the ResourceSlices the driver publishes is the GPU
Operator's component's (gpu_platform/kubernetes/exporter_slice_access.py), as it must exist
before the operator starts its exporters.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field

import pulumi
from pulumi_kubernetes import core, helm, meta
from pulumi_kubernetes import resource as dra

from gpu_platform.kubernetes import helm_release
from gpu_platform.kubernetes.dra_devices import (
    RESOURCE_API_VERSION,
    device_class_name,
    device_class_selector,
    dra_models,
)
from gpu_platform.kubernetes.dra_names import DRA_DRIVER_NAMESPACE
from gpu_platform.kubernetes.operator_values import gpu_node_tolerations
from gpu_platform.kubernetes.pod_security import pod_security_labels
from gpu_platform.lock.images import pinned_version
from gpu_platform.node_identity import POOL_LABEL, ResolvedPool
from gpu_platform.platform_images import DRA_DRIVER_IMAGE
from gpu_platform.versions import DRA_DRIVER_CHART


def dra_driver_values(pools: Sequence[ResolvedPool]) -> dict[str, object]:
    """The chart's values for the DRA pools `pools`."""
    return {
        # The chart renders `repository:tag` (templates/_helpers.tpl `fullimage`): the digest
        # the lock holds follows the tag.
        "image": {
            "repository": DRA_DRIVER_IMAGE.repository,
            "tag": pinned_version(DRA_DRIVER_IMAGE),
        },
        "resourceApiVersion": RESOURCE_API_VERSION,
        "gpuResourcesEnabledOverride": True,
        "resources": {"gpus": {"enabled": True}, "computeDomains": {"enabled": False}},
        "kubeletPlugin": {
            # The chart rolls the plugin on every node at once (values.yaml at v25.12.0,
            # `maxUnavailable: "100%"`): a new image, or a DRA pool added to the affinity, would
            # stop claims being prepared on every DRA node together.
            "updateStrategy": helm_release.daemonset_update_strategy(),
            "tolerations": gpu_node_tolerations(pools),
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {
                                        "key": POOL_LABEL,
                                        "operator": "In",
                                        "values": sorted(pool.spec.name for pool in pools),
                                    }
                                ]
                            }
                        ]
                    }
                }
            },
        },
    }


@dataclass
class DraDriverArgs:
    pools: Sequence[ResolvedPool] = field(default_factory=list)
    """The DRA pools: where the kubelet plugin runs, and the models given a DeviceClass."""
    protect: bool = False


class DraDriver(pulumi.ComponentResource):
    """The DRA driver's namespace and pinned release, and a DeviceClass per GPU model."""

    def __init__(self, name: str, args: DraDriverArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:kubernetes:DraDriver", name, None, opts)
        namespace = core.v1.Namespace(
            name,
            metadata=meta.v1.ObjectMetaArgs(
                name=DRA_DRIVER_NAMESPACE, labels=pod_security_labels("privileged")
            ),
            opts=pulumi.ResourceOptions(parent=self, protect=args.protect),
        )
        self.release = helm.v3.Release(
            name,
            name=DRA_DRIVER_CHART.name,
            chart=DRA_DRIVER_CHART.name,
            version=DRA_DRIVER_CHART.version,
            repository_opts=helm.v3.RepositoryOptsArgs(repo=DRA_DRIVER_CHART.repository),
            namespace=namespace.metadata.name,
            values=dra_driver_values(args.pools),
            **helm_release.Rollout.with_daemonset(
                helm_release.DRA_DRIVER_BASE_SECONDS,
                helm_release.most_nodes(pool.spec for pool in args.pools),
            ).release_args(),
            opts=pulumi.ResourceOptions(parent=self, protect=args.protect),
        )
        self.device_classes = [
            dra.v1.DeviceClass(
                f"{name}-{accelerator}",
                metadata=meta.v1.ObjectMetaArgs(name=device_class_name(accelerator)),
                spec=dra.v1.DeviceClassSpecArgs(
                    selectors=[
                        dra.v1.DeviceSelectorArgs(
                            cel=dra.v1.CELDeviceSelectorArgs(
                                expression=device_class_selector(accelerator)
                            )
                        )
                    ]
                ),
                opts=pulumi.ResourceOptions(parent=self),
            )
            for accelerator in dra_models(args.pools)
        ]
        self.register_outputs({"release": self.release.name})
