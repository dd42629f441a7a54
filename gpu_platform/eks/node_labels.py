"""What an EKS GPU node looks like to Kubernetes: the platform's node identity plus AWS's
GPU label, and on EFA pools their EFA label and resource.

The cluster autoscaler's AWS provider treats a node as a GPU node by the label
`k8s.amazonaws.com/accelerator`: while a new node's device plugin is still starting and no GPU is
advertised yet, that label keeps the autoscaler from deciding the node was useless and
starting another. The node group sets it with the rest of the labels, the scale-from-zero hints
advertise it, and the fit check sees it.

MIG pools and DRA pools (`allocation: dra`) go without it. The autoscaler holds a node with the
label and no non-zero allocatable `nvidia.com/gpu` (or another vendor's GPU resource) unready,
however old the node is (`processors/customresources/gpu_processor.go`, cluster-autoscaler 1.33
to 1.36; kubernetes/autoscaler#8095, fix unmerged), unless its GPUs are DRA devices to the cloud
provider, which the AWS provider never says (`GetNodeGpuConfig`, cloudprovider/aws/
aws_cloud_provider.go at 1.34.5 to 1.36.1, leaves `DraDriverName` empty; only the GCE provider
sets it). A partitioned node advertises `nvidia.com/mig-*` and `nvidia.com/gpu: 0`, a DRA node no
`nvidia.com/gpu` at all, so with the label either would count as unready for good once its 15
minutes of start-up are over, and past 3 such nodes (and 45% of the cluster) the autoscaler
stops scaling the whole cluster. Without it, a new MIG node is Ready to the autoscaler as soon as
its kubelet is, before the MIG manager has partitioned it: a pod waiting for a slice in that
window can have the autoscaler start one more node, which scales away after the pool's idle
time.
"""

from dataclasses import replace

from gpu_platform.accelerators import ACCELERATORS
from gpu_platform.config import MigSharing
from gpu_platform.node_identity import NodeIdentity, ResolvedPool

AWS_ACCELERATOR_LABEL = "k8s.amazonaws.com/accelerator"
EFA_LABEL = "gpu-platform.io/efa"
EFA_RESOURCE = "vpc.amazonaws.com/efa"


def aws_accelerator_label_value(accelerator: str) -> str:
    """`nvidia-tesla-t4`, `nvidia-a100-80gb`, `nvidia-a10g`: GKE's name for the GPU where GKE
    has the model, so a workload selects the same value on both clouds, and `nvidia-<name>`
    otherwise. The autoscaler only needs the label to exist; people read the value."""
    return ACCELERATORS[accelerator].gke_type or f"nvidia-{accelerator}"


def eks_node_identity(pool: ResolvedPool, efa_interfaces: int = 0) -> NodeIdentity:
    """The pool's node identity with the AWS GPU label added, unless its GPUs are MIG slices or
    DRA devices;
    on an EFA pool, with the label the EFA device plugin selects its nodes by and the
    `vpc.amazonaws.com/efa` devices it advertises (one per interface), which the cluster
    autoscaler's template needs to scale the pool up from zero for a pod that asks for them."""
    labels = dict(pool.identity.labels)
    resources = dict(pool.identity.resources)
    if not isinstance(pool.spec.sharing, MigSharing) and pool.spec.allocation != "dra":
        labels[AWS_ACCELERATOR_LABEL] = aws_accelerator_label_value(pool.gpu.accelerator)
    if pool.spec.aws.efa and efa_interfaces:
        labels[EFA_LABEL] = "true"
        resources[EFA_RESOURCE] = efa_interfaces
    return replace(pool.identity, labels=labels, resources=resources)
