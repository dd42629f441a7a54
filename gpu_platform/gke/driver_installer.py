"""Google's NVIDIA driver installer for GKE nodes on Container-Optimized OS.

On COS the GPU Operator does not build the driver: COS ships signed NVIDIA kernel modules, and
Google's installer DaemonSet (`kube-system/nvidia-driver-installer`) loads the one matching the
node's COS release into `/home/kubernetes/bin/nvidia`, where the operator's toolkit finds it.
The manifest is applied as published, from a pinned commit (`gpu_platform/versions.py`).

It runs on GPU nodes only: the manifest's node affinity requires the
`cloud.google.com/gke-accelerator` label, which GKE puts on every node with a GPU, and the
absence of `cloud.google.com/gke-gpu-driver-version`, which GKE puts only on nodes whose driver
it installs itself (the platform's pools set `gpu_driver_version=INSTALLATION_DISABLED`), and of
`cloud.google.com/gke-confidential-nodes-instance-type`. It tolerates every taint, the GPU taint
included.
"""

import pulumi
from pulumi_kubernetes.yaml.v2 import ConfigFile

from gpu_platform.versions import GKE_COS_DRIVER_INSTALLER_MANIFEST


class CosDriverInstaller(pulumi.ComponentResource):
    """The driver installer DaemonSet, applied from its pinned manifest."""

    def __init__(self, name: str, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:gke:CosDriverInstaller", name, None, opts)
        self.manifest = GKE_COS_DRIVER_INSTALLER_MANIFEST
        ConfigFile(
            name,
            file=self.manifest,
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.register_outputs({"manifest": self.manifest})
