"""The existing EKS cluster: what a lookup says about it, and how the program reaches its API.

Access is built from the cluster itself (endpoint and CA) with exec authentication through
`aws eks get-token`, so the kubeconfig carries no credential: whoever runs `pulumi up` reaches
the cluster with their own AWS identity and the cluster's access entries decide what they may
do. It is still exported only as a secret, since it tells where the API server is.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pulumi_aws import ec2, eks

from components.cloud import ClusterConnection
from components.config import ClusterSpec
from components.kubernetes.provider import (
    connect_with_kubeconfig,
    connect_with_kubeconfig_context,
    exec_kubeconfig,
)

# The version the AWS CLI and client-go agree on for exec credentials.


@dataclass(frozen=True)
class EksCluster:
    """An EKS cluster as the lookup found it."""

    name: str
    region: str
    arn: str
    endpoint: str
    certificate_authority: str
    """Base64 PEM, as the kubeconfig takes it."""
    version: str
    """Kubernetes `major.minor`, such as `1.35`."""
    status: str
    subnet_ids: tuple[str, ...]
    vpc_id: str = ""
    security_group_id: str = ""
    """The cluster security group EKS creates, which lets nodes and control plane talk."""

    @property
    def partition(self) -> str:
        """`aws`, `aws-cn` or `aws-us-gov`, from the cluster ARN."""
        return self.arn.split(":")[1]

    @property
    def account_id(self) -> str:
        return self.arn.split(":")[4]


@dataclass(frozen=True)
class Subnet:
    id: str
    zone: str
    assigns_public_ip: bool


def look_up_cluster(spec: ClusterSpec) -> EksCluster:
    """The cluster named in the stack config; EKS answers with an error if it does not exist."""
    assert spec.region is not None  # config validation requires it on AWS
    found = eks.get_cluster(name=spec.name, region=spec.region)
    return EksCluster(
        name=found.name,
        region=spec.region,
        arn=found.arn,
        endpoint=found.endpoint,
        certificate_authority=found.certificate_authorities[0].data,
        version=found.version,
        status=found.status,
        subnet_ids=tuple(found.vpc_config.subnet_ids),
        vpc_id=found.vpc_config.vpc_id,
        security_group_id=found.vpc_config.cluster_security_group_id,
    )


def look_up_subnets(ids: Iterable[str], region: str) -> list[Subnet]:
    subnets = []
    for subnet_id in ids:
        found = ec2.get_subnet(id=subnet_id, region=region)
        subnets.append(Subnet(subnet_id, found.availability_zone, found.map_public_ip_on_launch))
    return subnets


def private_subnets(subnets: Sequence[Subnet]) -> list[Subnet]:
    """The subnets whose instances get no public IP address: where GPU nodes belong."""
    return [s for s in subnets if not s.assigns_public_ip]


def kubeconfig_for(cluster: EksCluster) -> str:
    """A kubeconfig for the cluster that gets its token from `aws eks get-token`."""
    return exec_kubeconfig(
        cluster.arn,
        cluster.endpoint,
        cluster.certificate_authority,
        {
            "command": "aws",
            "args": [
                "eks",
                "get-token",
                "--cluster-name",
                cluster.name,
                "--region",
                cluster.region,
                # Whatever output format the deployer's AWS CLI defaults to, client-go needs JSON.
                "--output",
                "json",
            ],
            "interactiveMode": "Never",
        },
    )


def connect(cluster: EksCluster, spec: ClusterSpec) -> ClusterConnection:
    """A Kubernetes provider for the cluster; `kubeconfigContext` in the config takes the
    deployer's own kubeconfig instead (for clusters reached through a bastion or proxy)."""
    if spec.kubeconfig_context is not None:
        return connect_with_kubeconfig_context(spec.kubeconfig_context)
    return connect_with_kubeconfig("eks", kubeconfig_for(cluster))
