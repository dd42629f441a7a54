"""The existing EKS cluster: what a lookup says about it, and how the program reaches its API.

Access is built from the cluster itself (endpoint and CA) with exec authentication through
`aws eks get-token`, so the kubeconfig carries no credential: whoever runs `pulumi up` reaches
the cluster with their own AWS identity and the cluster's access entries decide what they may
do. It is still exported only as a secret, since it tells where the API server is.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import pulumi
from pulumi_aws import ec2, eks
from pulumi_aws.get_caller_identity import get_caller_identity
from pulumi_aws.get_partition import get_partition

from gpu_platform.cluster_facts import EksClusterFacts
from gpu_platform.config import ClusterSpec
from gpu_platform.eks.subnets import Route, RouteTable, SubnetRouting, routing_of
from gpu_platform.instance import lookup_options
from gpu_platform.kubernetes.provider import (
    ClusterConnection,
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
    endpoint: pulumi.Input[str]
    certificate_authority: pulumi.Input[str]
    """Base64 PEM, as the kubeconfig takes it. Of a cluster the platform creates, both are
    outputs of the created cluster (`gpu_platform.eks.new_cluster`)."""
    version: str
    """Kubernetes `major.minor`, such as `1.35`."""
    status: str
    subnet_ids: tuple[str, ...]
    vpc_id: pulumi.Input[str] = ""
    security_group_id: pulumi.Input[str] = ""
    """The cluster security group EKS creates, which lets nodes and control plane talk."""
    exists: bool = True
    """False for a cluster the platform is about to create: there is nothing to look up in it
    yet (its node groups' live sizes)."""
    auto_mode_node_role_arn: pulumi.Input[str] | None = None
    """The node role of the cluster's EKS Auto Mode compute (`computeConfig.nodeRoleArn`), as
    EKS reports it; None where Auto Mode is off or has no role (no built-in node pools)."""
    name_as_given: pulumi.Input[str] | None = None
    """The name as the program gave it (`EksClusterFacts.name`, an output of the cluster it
    creates); None where the platform looked the cluster up or creates it."""

    @property
    def name_input(self) -> pulumi.Input[str]:
        """The name, for the properties that name the cluster (a node group's `clusterName`):
        given as the program's cluster's output, they wait for that cluster through it."""
        return self.name if self.name_as_given is None else self.name_as_given

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
    routing: SubnetRouting
    """Its route table, which makes it public or private (`gpu_platform.eks.subnets`)."""
    vpc_id: str = ""
    """Its VPC; empty for a subnet not created yet."""


def look_up_cluster(spec: ClusterSpec) -> EksCluster:
    """The cluster named in the stack config; EKS answers with an error if it does not exist."""
    assert spec.region is not None  # config validation requires it on AWS
    found = eks.get_cluster(name=spec.name, region=spec.region, opts=lookup_options("aws"))
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
        auto_mode_node_role_arn=next(
            (c.node_role_arn or None for c in found.compute_configs if c.enabled), None
        ),
    )


def given_cluster(spec: ClusterSpec, facts: EksClusterFacts) -> EksCluster:
    """The cluster as the program gave it; nothing about the cluster is looked up, as on a first
    `pulumi preview` of a program creating it there is nothing yet. The account and partition
    (of the ARNs the IAM documents name) are the deployer's, and whether the cluster exists yet
    comes from the region's list of clusters, which names no cluster in particular."""
    assert spec.region is not None  # config validation requires it on AWS
    account = get_caller_identity(opts=lookup_options("aws")).account_id
    partition = get_partition(opts=lookup_options("aws")).partition
    existing = eks.get_clusters(region=spec.region, opts=lookup_options("aws")).names
    return EksCluster(
        name=spec.name,
        region=spec.region,
        arn=f"arn:{partition}:eks:{spec.region}:{account}:cluster/{spec.name}",
        endpoint=facts.endpoint,
        certificate_authority=facts.certificate_authority,
        version=facts.kubernetes_version,
        status="ACTIVE",
        subnet_ids=tuple(facts.node_subnets),
        vpc_id=facts.vpc_id,
        security_group_id=facts.security_group_id,
        exists=spec.name in existing,
        name_as_given=facts.name,
    )


def look_up_subnets(ids: Iterable[str], region: str) -> list[Subnet]:
    """The subnets, in the order given, each with the route table it uses."""
    found = [
        (subnet_id, ec2.get_subnet(id=subnet_id, region=region, opts=lookup_options("aws")))
        for subnet_id in ids
    ]
    tables = _route_tables([(subnet_id, s.vpc_id) for subnet_id, s in found], region)
    return [
        Subnet(subnet_id, s.availability_zone, routing_of(subnet_id, s.vpc_id, tables), s.vpc_id)
        for subnet_id, s in found
    ]


def private_subnets(subnets: Sequence[Subnet]) -> list[Subnet]:
    """The subnets without a route to an internet gateway: where GPU nodes belong."""
    return [s for s in subnets if not s.routing.public]


def node_subnets_output(subnets: Sequence[Subnet]) -> dict[str, list[dict[str, str]]]:
    """What the stack exports as `nodeSubnets`: under `used` the subnets the GPU node groups
    take theirs from (each pool those in its zones), under `leftOut` the public ones, each with
    its zone and why; by zone, then id."""

    def listed(chosen: Iterable[Subnet]) -> list[dict[str, str]]:
        return [
            {"id": s.id, "zone": s.zone, "why": s.routing.explanation()}
            for s in sorted(chosen, key=lambda s: (s.zone, s.id))
        ]

    return {
        "used": listed(private_subnets(subnets)),
        "leftOut": listed(s for s in subnets if s.routing.public),
    }


def _route_tables(subnets: Sequence[tuple[str, str]], region: str) -> list[RouteTable]:
    """The route tables `(subnet id, VPC id)` use: the ones associated with them, and their VPC's
    main one where some subnet has none of its own.

    `ec2.get_route_tables` gives only ids, and gives none without failing where no table matches;
    `ec2.get_route_table` gives a table's routes and associations, and fails unless exactly one
    table matches (terraform-provider-aws, internal/service/ec2/vpc_route_tables_data_source.go
    and vpc_route_table_data_source.go)."""
    tables: list[RouteTable] = []
    for vpc_id in sorted({vpc_id for _, vpc_id in subnets}):
        ids = [subnet_id for subnet_id, vpc in subnets if vpc == vpc_id]
        associated = ec2.get_route_tables(
            vpc_id=vpc_id,
            filters=[{"name": "association.subnet-id", "values": ids}],
            region=region,
            opts=lookup_options("aws"),
        )
        own = [
            _route_table(
                ec2.get_route_table(
                    route_table_id=table_id, region=region, opts=lookup_options("aws")
                )
            )
            for table_id in sorted(associated.ids)
        ]
        tables += own
        if set(ids) - {subnet_id for table in own for subnet_id in table.subnet_ids}:
            main = ec2.get_route_table(
                vpc_id=vpc_id,
                filters=[{"name": "association.main", "values": ["true"]}],
                region=region,
                opts=lookup_options("aws"),
            )
            tables.append(_route_table(main))
    return tables


# Where the provider puts a route's target, one attribute for each kind; a route has one.
_ROUTE_TARGETS = (
    "gateway_id",
    "nat_gateway_id",
    "egress_only_gateway_id",
    "transit_gateway_id",
    "network_interface_id",
    "instance_id",
    "vpc_peering_connection_id",
    "vpc_endpoint_id",
    "local_gateway_id",
    "carrier_gateway_id",
    "core_network_arn",
    "odb_network_arn",
)


def _route_table(found: ec2.GetRouteTableResult) -> RouteTable:
    return RouteTable(
        id=found.route_table_id,
        vpc_id=found.vpc_id,
        main=any(a.main for a in found.associations),
        subnet_ids=tuple(a.subnet_id for a in found.associations if a.subnet_id),
        routes=tuple(
            Route(
                r.cidr_block or r.ipv6_cidr_block or r.destination_prefix_list_id,
                next((getattr(r, t) for t in _ROUTE_TARGETS if getattr(r, t)), ""),
            )
            for r in found.routes
        ),
    )


def kubeconfig_output(cluster: EksCluster) -> pulumi.Output[str]:
    """`kubeconfig_for`, of a cluster whose endpoint and CA may be outputs (one the platform
    creates)."""
    return pulumi.Output.all(
        cluster.endpoint, cluster.certificate_authority, cluster.name_input
    ).apply(lambda found: kubeconfig_for(replace(cluster, name=found[2]), found[0], found[1]))


def kubeconfig_for(
    cluster: EksCluster, endpoint: str | None = None, certificate_authority: str | None = None
) -> str:
    """A kubeconfig for the cluster that gets its token from `aws eks get-token`; `endpoint`
    and `certificate_authority` where the cluster's are outputs."""
    endpoint = endpoint if endpoint is not None else str(cluster.endpoint)
    if certificate_authority is None:
        certificate_authority = str(cluster.certificate_authority)
    return exec_kubeconfig(
        cluster.arn,
        endpoint,
        certificate_authority,
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


def connect(
    cluster: EksCluster, spec: ClusterSpec, opts: pulumi.ResourceOptions | None = None
) -> ClusterConnection:
    """A Kubernetes provider for the cluster; `kubeconfigContext` in the config takes the
    deployer's own kubeconfig instead (for clusters reached through a bastion or proxy)."""
    if spec.kubeconfig_context is not None:
        return connect_with_kubeconfig_context(spec.kubeconfig_context, opts)
    return connect_with_kubeconfig("eks", kubeconfig_output(cluster), opts)
