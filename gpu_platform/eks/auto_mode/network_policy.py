"""NetworkPolicy enforcement on an EKS Auto Mode cluster.

Auto Mode runs the VPC CNI's network policy agent on its nodes, but enforces NetworkPolicies
only once the ConfigMap `kube-system/amazon-vpc-cni` sets `enable-network-policy-controller` to
`"true"` (awsdocs/amazon-eks-user-guide latest/ug/automode/auto-net-pol.adoc, "Step 1: Enable
Network Policy Controller"); there is no `vpc-cni` add-on whose `enableNetworkPolicy` would do
it. Without it the platform's NetworkPolicies, which keep tenants from Prometheus and
Alertmanager, are accepted and do nothing.

The key is a switch for the whole cluster: it enforces every NetworkPolicy of every namespace,
and `destroy` of a server-side apply patch releases the key (pulumi-kubernetes
provider/pkg/await/await.go `Deletion`, provider/pkg/ssa/actions.go `Relinquish`), which turns
enforcement off again for everyone where the stack was its only manager. So the stack sets it
only on a cluster it creates; on a cluster it attaches to, preflight blocks where the key is not
`"true"` already and the stack declares NetworkPolicies.

The key is set by a server-side apply patch of that one key: the ConfigMap is created if the
cluster has none, any other key a cluster's owner keeps in it stays theirs, and a value another
field manager set (`"false"`, say) is a conflict that fails the update rather than being
overwritten.
"""

import pulumi
from pulumi_kubernetes import core, meta

from gpu_platform.eks.auto_mode.names import CONFIG_MAP, NAMESPACE, SETTING


def network_policy_controller(name: str, opts: pulumi.ResourceOptions) -> core.v1.ConfigMapPatch:
    """The patch that turns Auto Mode's network policy controller on. The options carry the
    Kubernetes provider."""
    return core.v1.ConfigMapPatch(
        name,
        metadata=meta.v1.ObjectMetaPatchArgs(name=CONFIG_MAP, namespace=NAMESPACE),
        data={SETTING: "true"},
        opts=opts,
    )
