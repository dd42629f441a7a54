"""An IAM role that the pods of one Kubernetes service account take through EKS Pod Identity:
the role, trusting Pod Identity for this cluster only, and the association that hands it to the
service account. Pod Identity needs the cluster's EKS Pod Identity Agent add-on (the pre-flight
check looks for it)."""

from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi_aws import eks, iam

from gpu_platform.eks.cluster import EksCluster
from gpu_platform.eks.iam_roles import platform_role


@dataclass(frozen=True)
class PodIdentity:
    role: iam.Role
    """`<name>-role`: attach the pods' policies to it."""
    association: eks.PodIdentityAssociation
    """`<name>-pod-identity`: what a release must wait for, or its first pods start without
    credentials."""


def pod_identity(
    name: str,
    description: str,
    cluster: EksCluster,
    namespace: str,
    service_account: str,
    opts: pulumi.ResourceOptions,
) -> PodIdentity:
    """The role `<name>-role` (`<prefix>.<name>` in IAM) for the service account
    `namespace`/`service_account` of `cluster`, and its association `<name>-pod-identity`."""
    trust = pod_identity_trust_policy(cluster, namespace, service_account)
    role = platform_role(f"{name}-role", name, cluster, description, trust, opts)
    association = eks.PodIdentityAssociation(
        f"{name}-pod-identity",
        cluster_name=cluster.name_input,
        namespace=namespace,
        service_account=service_account,
        role_arn=role.arn,
        region=cluster.region,
        opts=opts,
    )
    return PodIdentity(role, association)


def pod_identity_trust_policy(
    cluster: EksCluster, namespace: str, service_account: str
) -> dict[str, Any]:
    """EKS Pod Identity may assume the role for this cluster's `namespace`/`service_account`
    only.

    The association alone names the service account, and whoever may create associations in
    the cluster could hand the role to another; the trust policy checks the session tags Pod
    Identity sets on every assumption (EKS user guide, "Create IAM role with trust policy
    required by EKS Pod Identity", pod-id-role.adoc, and the tags of pod-id-abac.adoc)."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "pods.eks.amazonaws.com"},
                "Action": ["sts:AssumeRole", "sts:TagSession"],
                "Condition": {
                    "StringEquals": {
                        "aws:SourceAccount": cluster.account_id,
                        "aws:RequestTag/kubernetes-namespace": namespace,
                        "aws:RequestTag/kubernetes-service-account": service_account,
                    },
                    "ArnEquals": {"aws:SourceArn": cluster.arn},
                },
            }
        ],
    }
