"""Karpenter's node labels, spelt once for the NodePools the program declares (`node_pool`,
`controller`) and for the nodes `fit` plans from them: kubernetes-sigs/karpenter
`pkg/apis/v1/labels.go` and, under `karpenter.k8s.aws/`, aws/karpenter-provider-aws
`pkg/apis/v1/labels.go` (both v1.14.1). Karpenter also sets Kubernetes' well-known labels
(`gpu_platform.node_identity`) from the instance it launches.
"""

NODE_POOL_LABEL = "karpenter.sh/nodepool"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
AWS_LABEL_PREFIX = "karpenter.k8s.aws/"
"""The provider's labels: instance category, generation, GPU name and count, tenancy..."""
