"""EKS with `provisioner: karpenter`: Karpenter launches the GPU nodes, one NodePool and one
EC2NodeClass per pool, instead of managed node groups scaled by the cluster autoscaler."""
