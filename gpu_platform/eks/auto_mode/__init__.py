"""EKS with `provisioner: eks-auto-mode`: the cluster's EKS Auto Mode launches the GPU nodes, one
NodePool and one NodeClass (`eks.amazonaws.com`) per pool, on its own AMIs with its own NVIDIA
driver and device plugin."""
