"""Where a GPU node keeps container images and pod scratch space: on the instance's local NVMe
drives when they are large enough, else on the node group's gp3 volume.

GPU instances come with local NVMe drives (a p5.48xlarge has 8 of 3.8 TB) that are faster than
any EBS volume and cost nothing more, yet the AL2023 AMI leaves them unused unless told. Its
nodeadm formats them as one RAID0 array and mounts the kubelet's and containerd's directories
(and pod logs) on it when the launch template's user data holds a NodeConfig with
`instance.localStorage.strategy: RAID0` (amazon-eks-ami nodeadm/api/v1alpha1/nodeconfig_types.go;
EKS merges a managed node group's launch template user data, given as MIME multipart, with its
own). Bottlerocket does the same with two bootstrap commands in its TOML user data, which EKS
merges with its own settings: `apiclient ephemeral-storage init` (one RAID0 array of the local
drives) and `bind` of the same directories (bottlerocket.dev, "Bootstrap Commands: Configure
ephemeral disks", Bottlerocket 1.22.0 and later).

The platform does so where every instance type of the pool has at least `diskSizeGib` of them,
so that no node has less room for images than the volume would give.
"""

import base64
from collections.abc import Sequence

from gpu_platform.config import GpuPoolSpec
from gpu_platform.eks.instance_types import InstanceType

# What nodeadm's RAID0 strategy mounts on the array (amazon-eks-ami
# templates/al2023/runtime/bin/setup-local-disks); Bottlerocket binds the same.
_DIRECTORIES = ("/var/lib/containerd", "/var/lib/kubelet", "/var/log/pods")
_GIB = 2**30
_GB = 10**9
_BOUNDARY = "==GPU-PLATFORM=="
_RAID0_NODE_CONFIG = f"""MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="{_BOUNDARY}"

--{_BOUNDARY}
Content-Type: application/node.eks.aws

apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  instance:
    localStorage:
      strategy: RAID0

--{_BOUNDARY}--
"""


_BIND = ", ".join(
    f'"{d}"' for d in ("apiclient", "ephemeral-storage", "bind", "--dirs", *_DIRECTORIES)
)
_BOTTLEROCKET_EPHEMERAL_STORAGE = f"""[settings.bootstrap-commands.k8s-ephemeral-storage]
commands = [
    ["apiclient", "ephemeral-storage", "init"],
    [{_BIND}],
]
essential = true
mode = "always"
"""


def uses_instance_store(spec: GpuPoolSpec, instance_types: Sequence[InstanceType]) -> bool:
    """Whether the pool's nodes keep images and scratch space on their local NVMe drives."""
    # Bottlerocket has had bootstrap commands and `apiclient ephemeral-storage` since 1.22.0, and
    # only releases from 1.40 are accepted (their drivers are known, gpu_platform/drivers.py).
    if not spec.aws.local_nvme or not instance_types:
        return False
    smallest = min(t.instance_store_gb for t in instance_types)
    return smallest * _GB >= spec.disk_size_gib * _GIB


def kubelet_disk_gib(
    spec: GpuPoolSpec, instance_types: Sequence[InstanceType], node_image: str
) -> int:
    """The size of the filesystem the kubelet offers pods ephemeral storage from, in GiB."""
    if uses_instance_store(spec, instance_types):
        return min(t.instance_store_gb for t in instance_types) * _GB // _GIB
    return spec.disk_size_gib


def node_config_user_data(
    spec: GpuPoolSpec, instance_types: Sequence[InstanceType], node_image: str
) -> str | None:
    """The launch template's user data (base64), or None where the nodes need none."""
    if not uses_instance_store(spec, instance_types):
        return None
    user_data = (
        _BOTTLEROCKET_EPHEMERAL_STORAGE if node_image == "bottlerocket" else _RAID0_NODE_CONFIG
    )
    return base64.b64encode(user_data.encode()).decode()
