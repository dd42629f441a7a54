"""What an EKS GPU node looks like to Kubernetes: the platform's node identity plus AWS's
GPU label.

The cluster autoscaler's AWS provider treats a node as a GPU node by the label
`k8s.amazonaws.com/accelerator`: while a new node's device plugin is still starting and no GPU is
advertised yet, that label keeps the autoscaler from deciding the node was useless and
starting another. The node group sets it with the rest of the labels, the scale-from-zero hints
advertise it, and the fit check sees it.
"""

from dataclasses import replace

from components.accelerators import ACCELERATORS
from components.node_identity import NodeIdentity, ResolvedPool

AWS_ACCELERATOR_LABEL = "k8s.amazonaws.com/accelerator"


def aws_accelerator_label_value(accelerator: str) -> str:
    """`nvidia-tesla-t4`, `nvidia-a100-80gb`, `nvidia-a10g`: GKE's name for the GPU where GKE
    has the model, so a workload selects the same value on both clouds, and `nvidia-<name>`
    otherwise. The autoscaler only needs the label to exist; people read the value."""
    return ACCELERATORS[accelerator].gke_type or f"nvidia-{accelerator}"


def eks_node_identity(pool: ResolvedPool) -> NodeIdentity:
    """The pool's node identity with the AWS GPU label added."""
    labels = {
        **pool.identity.labels,
        AWS_ACCELERATOR_LABEL: aws_accelerator_label_value(pool.gpu.accelerator),
    }
    return replace(pool.identity, labels=labels)
