"""Karpenter's node labels, spelt once for the NodePools the program declares (`node_pool`,
`controller`) and for the nodes `fit` plans from them: kubernetes-sigs/karpenter
`pkg/apis/v1/labels.go` and, under `karpenter.k8s.aws/`, aws/karpenter-provider-aws
`pkg/apis/v1/labels.go` (both v1.14.1). Karpenter also sets Kubernetes' well-known labels
(`gpu_platform.node_identity`) from the instance it launches.
"""

from dataclasses import dataclass

NODE_POOL_LABEL = "karpenter.sh/nodepool"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
AWS_LABEL_PREFIX = "karpenter.k8s.aws/"
"""The provider's labels: instance category, generation, GPU name and count, tenancy..."""
INSTANCE_FAMILY_LABEL = f"{AWS_LABEL_PREFIX}instance-family"
INSTANCE_CATEGORY_LABEL = f"{AWS_LABEL_PREFIX}instance-category"
INSTANCE_GPU_NAME_LABEL = f"{AWS_LABEL_PREFIX}instance-gpu-name"


@dataclass(frozen=True)
class InstanceLabels:
    """The labels a NodePool chooses its sizes by: a Karpenter provider's, or EKS Auto Mode's,
    which are the same under another prefix."""

    family: str
    category: str
    gpu_name: str


KARPENTER_INSTANCE_LABELS = InstanceLabels(
    INSTANCE_FAMILY_LABEL, INSTANCE_CATEGORY_LABEL, INSTANCE_GPU_NAME_LABEL
)

STACK_ANNOTATION = "gpu-platform.io/stack"
"""The annotation the platform's `karpenter-crd` release puts on the CRDs it owns (through the
chart's `additionalAnnotations`, which every template of charts/karpenter-crd at v1.14.1 writes
into its metadata), valued `stack_mark`. Upstream's own install uses the same release names and
namespace (getting-started `KARPENTER_NAMESPACE="kube-system"`, upgrade-guide `helm upgrade
--install karpenter-crd`), so only this mark tells the platform's CRDs from a by-the-book
installation's."""


def stack_mark(project: str, stack: str) -> str:
    """`<project>/<stack>`: the stack that installed the CRDs."""
    return f"{project}/{stack}"
