"""The Kubernetes cluster autoscaler on EKS: pinned chart, Pod Identity, least privilege.

It finds the node groups by their discovery tags, reads their scale-from-zero hints, and only
changes the size of Auto Scaling groups tagged as this cluster's. Its AWS identity comes from an
EKS Pod Identity association, which needs the cluster's EKS Pod Identity Agent add-on (the
pre-flight check looks for it).
"""

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi_aws import iam
from pulumi_kubernetes import core, helm

from gpu_platform.config import PLATFORM_NAMESPACE, ClusterAutoscalerSpec
from gpu_platform.eks.autoscaler_settings import autoscaler_args, expander_priorities
from gpu_platform.eks.autoscaler_tags import cluster_discovery_tag
from gpu_platform.eks.cluster import EksCluster
from gpu_platform.eks.pod_identity import pod_identity
from gpu_platform.kubernetes import helm_release
from gpu_platform.kubernetes.pod_security import pod_security_labels
from gpu_platform.lock.images import locked
from gpu_platform.node_identity import ResolvedPool
from gpu_platform.versions import (
    CLUSTER_AUTOSCALER_CHART,
    CLUSTER_AUTOSCALER_IMAGES,
    ContainerImage,
)

SERVICE_ACCOUNT = "cluster-autoscaler"
SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"

# What the autoscaler reads to discover groups and plan nodes: Auto Scaling groups and their
# tags, the instance types and launch templates behind them, and managed node groups' labels
# and taints (which it also reads for a group at zero).
_READ_ACTIONS = [
    "autoscaling:DescribeAutoScalingGroups",
    "autoscaling:DescribeAutoScalingInstances",
    "autoscaling:DescribeLaunchConfigurations",
    "autoscaling:DescribeScalingActivities",
    "autoscaling:DescribeTags",
    "ec2:DescribeImages",
    "ec2:DescribeInstanceTypes",
    "ec2:DescribeLaunchTemplateVersions",
    "ec2:GetInstanceTypesFromInstanceRequirements",
]
_SCALE_ACTIONS = [
    "autoscaling:SetDesiredCapacity",
    "autoscaling:TerminateInstanceInAutoScalingGroup",
]


@dataclass
class ClusterAutoscalerArgs:
    spec: ClusterAutoscalerSpec
    cluster: EksCluster
    image: ContainerImage
    """Matches the cluster's Kubernetes minor version (`autoscaler_image`)."""
    pools: Sequence[ResolvedPool]
    """The stack's GPU pools, ranked for the `priority` expander by what their capacity is."""


class ClusterAutoscaler(pulumi.ComponentResource):
    """The cluster autoscaler release, its IAM role and Pod Identity association, and in the
    default namespace the namespace itself."""

    def __init__(
        self, name: str, args: ClusterAutoscalerArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__("gpu-platform:eks:ClusterAutoscaler", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        cluster = args.cluster
        identity = pod_identity(
            name,
            description=f"Cluster autoscaler of EKS cluster {cluster.name}",
            cluster=cluster,
            namespace=args.spec.namespace,
            service_account=SERVICE_ACCOUNT,
            opts=child,
        )
        policy = iam.RolePolicy(
            f"{name}-policy",
            role=identity.role.id,
            policy=json.dumps(autoscaler_policy(cluster)),
            opts=child,
        )
        self.release = helm.v3.Release(
            name,
            name="cluster-autoscaler",
            chart=CLUSTER_AUTOSCALER_CHART.name,
            version=args.spec.chart_version,
            repository_opts=helm.v3.RepositoryOptsArgs(repo=CLUSTER_AUTOSCALER_CHART.repository),
            namespace=self._namespace(name, args.spec.namespace),
            values=autoscaler_values(args.spec, cluster, args.image, args.pools),
            **helm_release.CLUSTER_AUTOSCALER.release_args(),
            # Credentials must exist before the first pod asks for them, or it starts without.
            # A release in another namespace is a new release (pulumi-kubernetes replaces it on a
            # `namespace` change, helm_release.go), and by default the new one starts before the
            # old one goes. Two autoscalers would then resize the same groups at once: each holds
            # the leader lease of its own namespace (the chart passes `--namespace` the release's,
            # templates/deployment.yaml; cluster-autoscaler locks `cluster-autoscaler` there,
            # main.go), so neither waits for the other. The old one goes first.
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=[identity.association, policy],
                delete_before_replace=True,
            ),
        )
        self.register_outputs({"release": self.release.name, "role_arn": identity.role.arn})

    def _namespace(self, name: str, namespace: str) -> pulumi.Input[str]:
        """The platform's namespace, created here; any other is the user's, which exists."""
        if namespace != PLATFORM_NAMESPACE:
            return namespace
        created = core.v1.Namespace(
            name,
            metadata={"name": namespace, "labels": pod_security_labels("restricted")},
            opts=pulumi.ResourceOptions(parent=self),
        )
        # Taking the name from the Namespace makes the release wait for it.
        return created.metadata.apply(lambda _: namespace)


def autoscaler_policy(cluster: EksCluster) -> dict[str, Any]:
    """Read what it plans with; resize and shrink only this cluster's tagged groups."""
    nodegroups = (
        f"arn:{cluster.partition}:eks:{cluster.region}:{cluster.account_id}"
        f":nodegroup/{cluster.name}/*/*"
    )
    groups = (
        f"arn:{cluster.partition}:autoscaling:{cluster.region}:{cluster.account_id}"
        ":autoScalingGroup:*:autoScalingGroupName/*"
    )
    return {
        "Version": "2012-10-17",
        "Statement": [
            {"Sid": "Discover", "Effect": "Allow", "Action": _READ_ACTIONS, "Resource": "*"},
            {
                "Sid": "ReadNodeGroups",
                "Effect": "Allow",
                "Action": "eks:DescribeNodegroup",
                "Resource": nodegroups,
            },
            {
                "Sid": "ScaleOwnGroups",
                "Effect": "Allow",
                "Action": _SCALE_ACTIONS,
                "Resource": groups,
                "Condition": {
                    "StringEquals": {
                        f"aws:ResourceTag/{cluster_discovery_tag(cluster.name)}": "owned"
                    }
                },
            },
        ],
    }


def autoscaler_image(spec: ClusterAutoscalerSpec, kubernetes_version: str) -> ContainerImage | None:
    """The pinned image for the cluster's Kubernetes minor version, or the configured tag of the
    same repository, by the digest the lock holds for the tag; None if neither exists."""
    if spec.image_tag is None:
        pinned = CLUSTER_AUTOSCALER_IMAGES.get(kubernetes_version)
        return None if pinned is None else locked(pinned)
    repository = next(iter(CLUSTER_AUTOSCALER_IMAGES.values())).repository
    return locked(ContainerImage(repository, spec.image_tag))


def autoscaler_values(
    spec: ClusterAutoscalerSpec,
    cluster: EksCluster,
    image: ContainerImage,
    pools: Sequence[ResolvedPool],
) -> dict:
    """Chart values: auto-discovery by the cluster's tags, the expander, restricted pod."""
    # The chart renders `<repository>:<tag>` (templates/deployment.yaml): a digest goes after
    # the tag.
    tag = image.tag if image.digest is None else f"{image.tag}@{image.digest}"
    return {
        "cloudProvider": "aws",
        "awsRegion": cluster.region,
        # Discovers groups tagged `k8s.io/cluster-autoscaler/enabled` and
        # `k8s.io/cluster-autoscaler/<cluster>` (the chart's default `autoDiscovery.tags`).
        "autoDiscovery": {"clusterName": cluster.name},
        "image": {"repository": image.repository, "tag": tag},
        "rbac": {"serviceAccount": {"create": True, "name": SERVICE_ACCOUNT}},
        # The autoscaler never removes a node running a kube-system pod, itself included while it
        # ran there (`skip-nodes-with-system-pods`); in any other namespace only this annotation
        # keeps it from draining its own node mid-operation (cluster-autoscaler FAQ, "What types
        # of pods can prevent CA from removing a node?").
        "podAnnotations": {SAFE_TO_EVICT: "false"},
        "extraArgs": autoscaler_args(spec, [pool.spec for pool in pools]),
        **(
            {"expanderPriorities": expander_priorities([pool.spec for pool in pools])}
            if spec.expander == "priority"
            else {}
        ),
        "resources": {
            "requests": {"cpu": "100m", "memory": "600Mi"},
            "limits": {"memory": "600Mi"},
        },
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": 65534,
            "runAsGroup": 65534,
            "fsGroup": 65534,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containerSecurityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
    }
