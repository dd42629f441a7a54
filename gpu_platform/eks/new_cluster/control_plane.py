"""The EKS control plane of a cluster the platform creates: its IAM role, the KMS key that
encrypts its Secrets, the log group of its control-plane logs, the cluster, and the access
entries of its administrators.

As terraform-aws-eks does (main.tf, v21): `API` authentication mode, the creator's admin access
not bootstrapped by EKS (`bootstrapClusterCreatorAdminPermissions: false`, which EKS can never
take back) but given as an access entry like any other. Unlike terraform-aws-eks's
`cluster_creator` entry, which follows whoever applies (its issue #2911), the creator is the
identity that created the cluster, recorded in the stack's state (`creator.py`): botocore's
CreateAccessEntryRequest `principalArn` "can't be changed after access entry creation" and no
two entries may share one, so each entry is named from its principal, not its place in a list.
A KMS key with yearly rotation for envelope encryption of Secrets, the log group created
beforehand with a retention (EKS would create it keeping logs forever), and no self-managed
add-ons (`addons.py`). The private endpoint is always on; the public one only with
`access: public`, restricted to its CIDRs (EKS best practices guide, "Cluster access
management": "make the cluster endpoint private" or restrict the public one). EKS's cluster
security group admits only its members, the nodes; the networks and groups
`aws.privateEndpointCidrs` and `aws.privateEndpointSecurityGroupIds` name reach the private
endpoint through a security group of the control plane's own (`<name>-api`, always created,
as terraform-aws-eks creates its `aws_security_group.cluster` by default, main.tf), with an
ingress rule on 443 for each, as its `security_group_additional_rules`: never the cluster
security group, which the nodes carry too and which would open them to those networks.

Given an Auto Mode node role (`provisioner: eks-auto-mode`), the cluster is created with Auto
Mode on (`auto_mode.py`): the cluster role's Auto Mode policies, and its compute, storage and
load balancing settings.
"""

import json
from collections.abc import Mapping, Sequence

import pulumi
from pulumi_aws import cloudwatch, ec2, eks, iam, kms

from gpu_platform.administrators import administrator_resource_name
from gpu_platform.config import ClusterCreate, EksClusterCreate
from gpu_platform.eks.cluster import EksCluster
from gpu_platform.eks.iam_roles import role_name, unbounded_role
from gpu_platform.eks.new_cluster.auto_mode import (
    auto_mode_settings,
    cluster_role_policies,
)
from gpu_platform.eks.new_cluster.creator import (
    CONTROL_PLANE_TYPE,
    CREATOR_OUTPUT,
    LEGACY_CREATOR_TAG,
    Creator,
)

CLUSTER_POLICY = "AmazonEKSClusterPolicy"
ADMIN_POLICY = "AmazonEKSClusterAdminPolicy"
# The cluster role's trust (EKS user guide, "Amazon EKS cluster IAM role", cluster-iam-role.adoc).
EKS_TRUST_POLICY = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {"Service": "eks.amazonaws.com"},
            "Action": ["sts:AssumeRole", "sts:TagSession"],
        }
    ],
}
# What the cluster role needs of the Secrets key (terraform-aws-eks main.tf,
# `aws_iam_policy.cluster_encryption`).
KMS_ACTIONS = ("kms:Encrypt", "kms:Decrypt", "kms:ListGrants", "kms:DescribeKey")
KEY_DELETION_WINDOW_DAYS = 30
API_PORT = 443


def log_group_name(cluster_name: str) -> str:
    """Where EKS sends control-plane logs (EKS user guide, control-plane-logs.adoc)."""
    return f"/aws/eks/{cluster_name}/cluster"


def admin_policy_arn(partition: str) -> str:
    return f"arn:{partition}:eks::aws:cluster-access-policy/{ADMIN_POLICY}"


def api_security_group(
    name: str,
    cluster: EksCluster,
    aws: EksClusterCreate,
    vpc_id: pulumi.Input[str],
    tags: Mapping[str, str],
    opts: pulumi.ResourceOptions,
) -> ec2.SecurityGroup:
    """The control plane's group admitting `aws.privateEndpointCidrs` and
    `aws.privateEndpointSecurityGroupIds` to the API. There where neither names anything too:
    adding or removing the last source then changes the group's rules only, never the
    cluster's `vpcConfig.securityGroupIds`, which would otherwise go from one group to none."""
    sources: list[tuple[str | None, str | None]] = [
        *((cidr, None) for cidr in aws.private_endpoint_cidrs),
        *((None, group) for group in aws.private_endpoint_security_group_ids),
    ]
    rules = [
        ec2.SecurityGroupIngressArgs(
            protocol="tcp",
            from_port=API_PORT,
            to_port=API_PORT,
            description=f"Kubernetes API of EKS cluster {cluster.name}",
            cidr_blocks=[cidr] if cidr else None,
            security_groups=[group] if group else None,
        )
        for cidr, group in sources
    ]
    return ec2.SecurityGroup(
        f"{name}-api",
        description=f"Who reaches the Kubernetes API of EKS cluster {cluster.name} privately",
        vpc_id=vpc_id,
        # Always given, an empty list included: a group without `ingress` keeps whatever rules
        # it has (terraform-provider-aws issue #644, "no way to specify no ingress"; pulumi-eks
        # sets `[]` for this, pulumi/pulumi issue #2675), so the last source removed would stay.
        ingress=rules,
        tags={**tags, "Name": f"{cluster.name}-api"},
        region=cluster.region,
        opts=opts,
    )


class EksControlPlane(pulumi.ComponentResource):
    """The cluster and what it is created with."""

    cluster: eks.Cluster
    access: list[pulumi.Resource]
    """The access entries and their policy associations: the deployer's included, so the
    program's Kubernetes objects wait for them."""

    def __init__(
        self,
        name: str,
        planned: EksCluster,
        create: ClusterCreate,
        vpc_id: pulumi.Input[str],
        subnet_ids: Sequence[pulumi.Input[str]],
        creator: Creator,
        protect: bool,
        tags: Mapping[str, str],
        auto_mode_node_role: pulumi.Input[str] | None,
        auto_mode_node_policies: Sequence[pulumi.Resource],
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__(CONTROL_PLANE_TYPE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        aws = create.aws
        region = planned.region
        role, attachment = unbounded_role(
            f"{name}-role",
            f"Control plane of EKS cluster {planned.name}",
            EKS_TRUST_POLICY,
            CLUSTER_POLICY,
            planned,
            child,
            name=role_name(planned, "cluster"),
        )
        auto_mode = auto_mode_node_role is not None
        auto_mode_policies = (
            cluster_role_policies(f"{name}-role", role, planned, child) if auto_mode else []
        )
        key_arn: pulumi.Input[str]
        if aws.secrets_kms_key_arn is not None:
            key_arn = aws.secrets_kms_key_arn
        else:
            key = kms.Key(
                f"{name}-secrets",
                description=f"Envelope encryption of Secrets in EKS cluster {planned.name}",
                key_usage="ENCRYPT_DECRYPT",
                customer_master_key_spec="SYMMETRIC_DEFAULT",
                enable_key_rotation=True,
                deletion_window_in_days=KEY_DELETION_WINDOW_DAYS,
                tags=dict(tags),
                region=region,
                # Without the key, the cluster's Secrets cannot be read: it goes with the
                # cluster, and is protected with it.
                opts=pulumi.ResourceOptions(parent=self, protect=protect),
            )
            kms.Alias(
                f"{name}-secrets",
                name=f"alias/eks/{planned.name}",
                target_key_id=key.key_id,
                region=region,
                opts=child,
            )
            key_arn = key.arn
        key_policy = iam.RolePolicy(
            f"{name}-secrets-key",
            role=role.id,
            policy=pulumi.Output.from_input(key_arn).apply(
                lambda arn: json.dumps(
                    {
                        "Version": "2012-10-17",
                        "Statement": [
                            {"Effect": "Allow", "Action": list(KMS_ACTIONS), "Resource": arn}
                        ],
                    }
                )
            ),
            opts=child,
        )
        logs = cloudwatch.LogGroup(
            f"{name}-logs",
            name=log_group_name(planned.name),
            retention_in_days=aws.log_retention_days,
            tags=dict(tags),
            region=region,
            opts=child,
        )
        public = create.endpoint.access == "public"
        api = api_security_group(name, planned, aws, vpc_id, tags, child)
        self.cluster = eks.Cluster(
            name,
            name=planned.name,
            version=create.kubernetes_version,
            role_arn=role.arn,
            vpc_config=eks.ClusterVpcConfigArgs(
                subnet_ids=list(subnet_ids),
                security_group_ids=[api.id],
                endpoint_private_access=True,
                endpoint_public_access=public,
                public_access_cidrs=list(create.endpoint.public_cidrs) if public else None,
            ),
            access_config=eks.ClusterAccessConfigArgs(
                authentication_mode="API",
                bootstrap_cluster_creator_admin_permissions=False,
            ),
            bootstrap_self_managed_addons=False,
            encryption_config=eks.ClusterEncryptionConfigArgs(
                provider=eks.ClusterEncryptionConfigProviderArgs(key_arn=key_arn),
                resources=["secrets"],
            ),
            enabled_cluster_log_types=list(aws.control_plane_logs),
            # Set, as EKS's default is EXTENDED (botocore UpgradePolicyRequest `supportType`:
            # "The default value is EXTENDED ... Clusters in extended support have higher
            # costs").
            upgrade_policy=eks.ClusterUpgradePolicyArgs(support_type=aws.support_type),
            deletion_protection=protect,
            **(
                auto_mode_settings(auto_mode_node_role)._asdict()
                if auto_mode_node_role is not None
                else {}
            ),
            # The old tag stays until the state records the creator (`creator.py`): an update
            # that removed it and was interrupted before recording would leave neither.
            tags=dict(tags) if creator.recorded else {**tags, LEGACY_CREATOR_TAG: creator.arn},
            region=region,
            # The role's policies must outlive the cluster, or EKS cannot delete the network
            # interfaces and security groups it made (pulumi-aws eks.Cluster, `role_arn`); the
            # Auto Mode node role's too, which its nodes keep until the cluster is gone.
            opts=pulumi.ResourceOptions(
                parent=self,
                protect=protect,
                depends_on=[
                    attachment,
                    *auto_mode_policies,
                    *auto_mode_node_policies,
                    key_policy,
                    logs,
                ],
            ),
        )
        self.access = []
        creator_entry = [creator.arn] if aws.creator_access else []
        for principal in dict.fromkeys([*creator_entry, *create.administrators]):
            entry_name = administrator_resource_name(name, principal)
            entry = eks.AccessEntry(
                entry_name,
                cluster_name=self.cluster.name,
                principal_arn=principal,
                type="STANDARD",
                tags=dict(tags),
                region=region,
                opts=child,
            )
            association = eks.AccessPolicyAssociation(
                entry_name,
                cluster_name=self.cluster.name,
                principal_arn=entry.principal_arn,
                policy_arn=admin_policy_arn(planned.partition),
                access_scope=eks.AccessPolicyAssociationAccessScopeArgs(type="cluster"),
                region=region,
                opts=child,
            )
            self.access += [entry, association]
        # Kept in the stack's state for the next update to read back, encrypted with the
        # stack's secrets provider (`creator.py`).
        self.register_outputs(
            {"cluster": self.cluster.arn, CREATOR_OUTPUT: pulumi.Output.secret(creator.arn)}
        )
