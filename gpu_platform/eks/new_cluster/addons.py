"""The core EKS add-ons of a cluster the platform creates, each pinned to a version for the
cluster's Kubernetes minor (addon_versions.json, written by derive.py from EKS's
DescribeAddonVersions; `gpu-platform preflight` checks each pin against the region).

The cluster is created without EKS's self-managed add-ons (`bootstrapSelfManagedAddons: false`,
as terraform-aws-eks does, main.tf), so that every one of them is an EKS add-on of a known
version. Those the nodes need to become Ready come before the system node group (the VPC CNI,
kube-proxy, and the Pod Identity agent that gives the CNI its credentials); those that run as
Deployments after it, as they only turn ACTIVE once their pods run (terraform-aws-eks's
`before_compute`, main.tf `aws_eks_addon.before_compute`).

The VPC CNI runs with its network policy agent on (`ADDON_CONFIGURATION`), which EKS leaves off:
without it the NetworkPolicies that keep tenants away from Prometheus and Alertmanager are
accepted and do nothing. The user's `aws.vpcCniConfiguration` goes in the same document: EKS
replaces an add-on's whole configuration with what an update sends, and the platform sends it
with `OVERWRITE`, so anything set on the add-on by hand is lost unless listed there.
"""

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
from pulumi_aws import eks, iam

from gpu_platform.config.cluster_create import VPC_CNI_NETWORK_POLICY
from gpu_platform.eks.cluster import EksCluster
from gpu_platform.eks.iam_roles import role_name, unbounded_role
from gpu_platform.eks.new_cluster.addon_pins import addon_versions
from gpu_platform.eks.pod_identity import pod_identity_trust_policy

# The EBS CSI driver's controller and the policy AWS manages for it (EKS user guide,
# "Store Kubernetes volumes with Amazon EBS", ebs-csi.adoc).
EBS_CSI_SERVICE_ACCOUNT = ("kube-system", "ebs-csi-controller-sa")
EBS_CSI_POLICY = "service-role/AmazonEBSCSIDriverPolicy"
EBS_CSI_PURPOSE = "ebs-csi"
ADDON_CONFIGURATION: Mapping[str, Mapping[str, str]] = {
    # EKS user guide, cni-network-policy-configure.adoc: the add-on's configuration value
    # `"enableNetworkPolicy": "true"` (a string, as the add-on's chart declares it,
    # aws/amazon-vpc-cni-k8s charts/aws-vpc-cni/values.yaml, default "false"), from
    # v1.14.0-eksbuild.3; it passes `--enable-network-policy` to the node agent container
    # and turns on EKS's network policy controller (the chart's `amazon-vpc-cni` ConfigMap,
    # `enable-network-policy-controller`). The agent enforces through eBPF on the node: no IAM
    # permission, kernel 5.10 or later and the BPF file system, which EKS's AL2023 and the
    # accelerated AMIs have.
    "vpc-cni": {VPC_CNI_NETWORK_POLICY: "true"},
}
"""Each core add-on's configuration values, where the platform sets any."""
VPC_CNI = "vpc-cni"


def addons(
    name: str,
    cluster: EksCluster,
    names: Sequence[str],
    opts: pulumi.ResourceOptions,
    pod_identities: Mapping[str, eks.AddonPodIdentityAssociationArgs] | None = None,
    vpc_cni_configuration: Mapping[str, Any] | None = None,
) -> list[eks.Addon]:
    """`vpc_cni_configuration`: the user's `aws.vpcCniConfiguration`, sent with the platform's
    own values in one document, as EKS takes an add-on's whole configuration at each update
    (botocore EKS UpdateAddonRequest `configurationValues`), overwriting what it had."""
    versions = addon_versions()[cluster.version]
    configuration = {
        addon: {**(vpc_cni_configuration or {}), **values} if addon == VPC_CNI else values
        for addon, values in ADDON_CONFIGURATION.items()
    }
    return [
        eks.Addon(
            f"{name}-{addon}",
            cluster_name=cluster.name,
            addon_name=addon,
            addon_version=versions[addon],
            # The platform owns these add-ons' settings: a change made in the cluster is
            # overwritten, not kept in conflict.
            resolve_conflicts_on_create="OVERWRITE",
            resolve_conflicts_on_update="OVERWRITE",
            configuration_values=(
                json.dumps(configuration[addon]) if addon in configuration else None
            ),
            pod_identity_associations=(
                [pod_identities[addon]] if pod_identities and addon in pod_identities else None
            ),
            region=cluster.region,
            opts=opts,
        )
        for addon in names
    ]


def ebs_csi_role(
    name: str, cluster: EksCluster, opts: pulumi.ResourceOptions
) -> tuple[iam.Role, iam.RolePolicyAttachment]:
    """The EBS CSI controller's role, taken through Pod Identity. It carries no permissions
    boundary: AWS's policy for the driver creates and attaches volumes, which the platform's
    boundary (for node and controller roles) does not allow; its trust admits the controller's
    service account of this cluster only. Named under the stack's prefix like every role the
    stack creates (`<prefix>.ebs-csi`)."""
    namespace, service_account = EBS_CSI_SERVICE_ACCOUNT
    return unbounded_role(
        f"{name}-role",
        f"EBS CSI driver of EKS cluster {cluster.name}",
        pod_identity_trust_policy(cluster, namespace, service_account),
        EBS_CSI_POLICY,
        cluster,
        opts,
        name=role_name(cluster, EBS_CSI_PURPOSE),
    )
