"""EKS Auto Mode on a cluster the platform creates (`provisioner: eks-auto-mode`): the node role
Auto Mode gives its instances, the policies the cluster role needs for Auto Mode to launch
nodes, volumes and load balancers, and the cluster's three Auto Mode settings.

Sources are the EKS user guide's Auto Mode pages (awsdocs/amazon-eks-user-guide,
`latest/ug/automode/`): automode-get-started-cli.adoc ("IAM Roles for EKS Auto Mode Clusters":
the cluster role's `AmazonEKSComputePolicy`, `AmazonEKSBlockStoragePolicy`,
`AmazonEKSLoadBalancingPolicy`, `AmazonEKSNetworkingPolicy` beside `AmazonEKSClusterPolicy`, its
trust with `sts:TagSession`; the node role's `AmazonEKSWorkerNodeMinimalPolicy` and
`AmazonEC2ContainerRegistryPullOnly`), auto-enable-existing.adoc ("The compute, block storage,
and load balancing capabilities must all be enabled or disabled in the same request") and
set-builtin-node-pools.adoc (the built-in `system` NodePool is tainted `CriticalAddonsOnly`,
`general-purpose` is not).

The cluster has no system node group: without the VPC CNI and kube-proxy add-ons, which Auto
Mode's nodes do not need (automode.adoc, "Managed Components": Pod IP address assignment, local
DNS, EBS CSI storage; "You do not have to install the EKS Pod Identity Agent"), a managed node
group's nodes would never become Ready. The platform's own pods (the GPU Operator's controllers,
Kueue, Prometheus) run on Auto Mode's built-in `general-purpose` NodePool instead, untainted as
the system node group is; the `system` pool's taint would keep them off it, so it is left off.
"""

from collections.abc import Mapping
from typing import NamedTuple

import pulumi
from pulumi_aws import eks, iam

from gpu_platform.eks.cluster import EksCluster
from gpu_platform.eks.iam_roles import managed_policy_attachments, role_name
from gpu_platform.eks.node_group import node_role

CLUSTER_POLICIES = (
    "AmazonEKSComputePolicy",
    "AmazonEKSBlockStoragePolicy",
    "AmazonEKSLoadBalancingPolicy",
    "AmazonEKSNetworkingPolicy",
)
"""What the cluster role needs beyond `AmazonEKSClusterPolicy` for Auto Mode."""
NODE_POLICIES = ("AmazonEKSWorkerNodeMinimalPolicy", "AmazonEC2ContainerRegistryPullOnly")
"""The Auto Mode node role's: Pod Identity's `eks-auth:AssumeRoleForPodIdentity` and ECR pulls,
both within the platform's permissions boundary."""
NODE_ROLE_PURPOSE = "auto-mode-nodes"
BUILT_IN_NODE_POOLS = ("general-purpose",)
"""The built-in NodePools turned on: where the platform's own pods run."""


def node_role_arn(cluster: EksCluster) -> str:
    """The node role's ARN, known before it is created: its name is fixed (`role_name`)."""
    name = role_name(cluster, NODE_ROLE_PURPOSE)
    return f"arn:{cluster.partition}:iam::{cluster.account_id}:role/{name}"


def auto_mode_node_role(
    name: str, cluster: EksCluster, tags: Mapping[str, str], opts: pulumi.ResourceOptions
) -> tuple[iam.Role, list[iam.RolePolicyAttachment]]:
    """The role Auto Mode gives the instances it launches (`computeConfig.nodeRoleArn`). EKS
    makes its access entry when the cluster is created with it (create-node-class.adoc: only a
    NodeClass of another role needs one made), and it cannot change once Auto Mode is on
    (botocore EKS ComputeConfigRequest `nodeRoleArn`)."""
    return node_role(
        name,
        purpose=NODE_ROLE_PURPOSE,
        attachment_prefix=name,
        description=f"EKS Auto Mode nodes of EKS cluster {cluster.name}",
        cluster=cluster,
        cni_policy_on_node_role=False,
        opts=opts,
        tags=tags,
        node_policies=NODE_POLICIES,
    )


def cluster_role_policies(
    name: str, role: iam.Role, cluster: EksCluster, opts: pulumi.ResourceOptions
) -> list[iam.RolePolicyAttachment]:
    return managed_policy_attachments(name, role, CLUSTER_POLICIES, cluster, opts)


class AutoModeSettings(NamedTuple):
    """The cluster's arguments that turn Auto Mode on: compute, block storage and load
    balancing together, as EKS requires."""

    compute_config: eks.ClusterComputeConfigArgs
    kubernetes_network_config: eks.ClusterKubernetesNetworkConfigArgs
    storage_config: eks.ClusterStorageConfigArgs


def auto_mode_settings(node_role: pulumi.Input[str]) -> AutoModeSettings:
    return AutoModeSettings(
        compute_config=eks.ClusterComputeConfigArgs(
            enabled=True, node_pools=list(BUILT_IN_NODE_POOLS), node_role_arn=node_role
        ),
        kubernetes_network_config=eks.ClusterKubernetesNetworkConfigArgs(
            elastic_load_balancing=eks.ClusterKubernetesNetworkConfigElasticLoadBalancingArgs(
                enabled=True
            )
        ),
        storage_config=eks.ClusterStorageConfigArgs(
            block_storage=eks.ClusterStorageConfigBlockStorageArgs(enabled=True)
        ),
    )
