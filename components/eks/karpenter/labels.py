"""The node labels Karpenter's NodePools select on and its nodes carry, spelt once for the
NodePools the program declares (`node_pool`, `controller`) and for the nodes `fit` plans from
them.

Karpenter's own are in kubernetes-sigs/karpenter `pkg/apis/v1/labels.go` and, under
`karpenter.k8s.aws/`, aws/karpenter-provider-aws `pkg/apis/v1/labels.go` (both v1.14.1); the
other two are Kubernetes' well-known labels, which Karpenter sets from the instance it launches.
"""

NODE_POOL_LABEL = "karpenter.sh/nodepool"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
AWS_LABEL_PREFIX = "karpenter.k8s.aws/"
"""The provider's labels: instance category, generation, GPU name and count, tenancy..."""
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
ZONE_LABEL = "topology.kubernetes.io/zone"
