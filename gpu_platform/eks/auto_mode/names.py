"""The names of the EKS Auto Mode objects that both the program declares and
`gpu-platform preflight` reads in the cluster: plain constants, so that preflight loads no Pulumi
SDK.

- Auto Mode's NodeClass kind (`eks.amazonaws.com/v1`), one per pool (`node_pool.py`).
- The prefix of its well-known node labels, which `gpu-platform fit` puts on a pool's node
  templates too.
- Its NetworkPolicy switch: the key of the ConfigMap `kube-system/amazon-vpc-cni` that turns Auto
  Mode's network policy controller on (awsdocs/amazon-eks-user-guide
  latest/ug/automode/auto-net-pol.adoc, "Step 1: Enable Network Policy Controller"), which the
  stack sets on a cluster it creates (`network_policy.py`).
"""

NODE_CLASS_GROUP = "eks.amazonaws.com"
NODE_CLASS_API_VERSION = f"{NODE_CLASS_GROUP}/v1"
NODE_CLASS_KIND = "NodeClass"
AUTO_MODE_LABEL_PREFIX = "eks.amazonaws.com/"
"""Auto Mode's well-known node labels (create-node-pool.adoc, "EKS Auto Mode Supported
Labels")."""

CONFIG_MAP = "amazon-vpc-cni"
NAMESPACE = "kube-system"
SETTING = "enable-network-policy-controller"
