"""The VPC CNI's own identity (`cluster.vpcCniRole`): a role with `AmazonEKS_CNI_Policy` that
the `aws-node` service account takes through EKS Pod Identity.

The EKS user guide recommends it over the policy on the node role (create-node-role.adoc: "we
recommend that you assign the policy to a separate role that you use only for the Amazon VPC
CNI add-on"): on the node role, the permissions to create, attach and delete network interfaces
in the VPC reach any pod that can reach the instance's credentials. The CNI's pods take the
association's credentials when they start: restart `aws-node` once the association exists
(docs/iam/README.md).
"""

import pulumi
from pulumi_aws import iam

from gpu_platform.eks.cluster import EksCluster
from gpu_platform.eks.node_group import CNI_POLICY
from gpu_platform.eks.pod_identity import pod_identity

NAMESPACE = "kube-system"
SERVICE_ACCOUNT = "aws-node"
"""Where the VPC CNI add-on runs, and its service account (its DaemonSet's)."""


class VpcCniIdentity(pulumi.ComponentResource):
    """The role `<prefix>.vpc-cni`, its policy and its Pod Identity association."""

    def __init__(self, name: str, cluster: EksCluster, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:eks:VpcCniIdentity", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        identity = pod_identity(
            name,
            description=f"VPC CNI of EKS cluster {cluster.name}",
            cluster=cluster,
            namespace=NAMESPACE,
            service_account=SERVICE_ACCOUNT,
            opts=child,
        )
        iam.RolePolicyAttachment(
            f"{name}-{CNI_POLICY}",
            role=identity.role.name,
            policy_arn=f"arn:{cluster.partition}:iam::aws:policy/{CNI_POLICY}",
            opts=child,
        )
        self.register_outputs({"role_arn": identity.role.arn})
