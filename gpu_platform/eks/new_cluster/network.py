"""The new VPC of a cluster the platform creates (`cluster.create.aws.vpc`): three zones, a
private subnet in each for every node and pod, a public subnet in each only for NAT gateways and
internet-facing load balancers.

The layout follows EKS's network requirements (EKS user guide, "View Amazon EKS networking
requirements for VPC and subnets", network-reqs.adoc, and "Create an Amazon VPC for your Amazon
EKS cluster", creating-a-vpc.adoc): DNS hostnames and resolution on (the private endpoint is
resolved inside the VPC), subnets in at least two zones, public subnets tagged
`kubernetes.io/role/elb` and private ones `kubernetes.io/role/internal-elb` for the load balancers
Services create. Private subnets route to the internet through NAT gateways; a public subnet
assigns no public address on launch, as nothing but NAT gateways and load balancers goes there.

An S3 gateway endpoint on the private route tables keeps S3 traffic off the NAT gateways: ECR
serves image layers from S3, so a GPU image of 10 GB or more pulled by every new node of a pool
that scales from zero, and model data read from S3, would otherwise pay NAT's per-GB processing.
Gateway endpoints cost nothing (VPC user guide, "Gateway endpoints for Amazon S3"; EKS best
practices guide, cost optimization, networking).
"""

from collections.abc import Mapping, Sequence

import pulumi
from pulumi_aws import ec2

from gpu_platform.config import EksNewVpc
from gpu_platform.eks.new_cluster.layout import subnet_plan

# Tags the AWS Load Balancer Controller and the in-tree service controller select subnets by
# (aws-load-balancer-controller docs, deploy/subnet_discovery.md), and Karpenter's discovery
# tag, which its getting-started guide selects subnets by (karpenter docs,
# getting-started-with-karpenter): the platform's own NodeClasses name subnets by id.
PUBLIC_ELB_TAG = "kubernetes.io/role/elb"
INTERNAL_ELB_TAG = "kubernetes.io/role/internal-elb"
KARPENTER_DISCOVERY_TAG = "karpenter.sh/discovery"


def cluster_ownership_tag(cluster: str) -> str:
    return f"kubernetes.io/cluster/{cluster}"


class EksNetwork(pulumi.ComponentResource):
    """The VPC, its subnets, internet gateway, NAT gateways and route tables."""

    private_subnet_ids: dict[str, pulumi.Output[str]]
    """By zone."""
    public_subnet_ids: dict[str, pulumi.Output[str]]
    vpc_id: pulumi.Output[str]
    egress: list[pulumi.Resource]
    """What the nodes reach the internet and S3 through: the NAT gateways, the route tables and
    their associations, the internet gateway, the S3 endpoint. Nodes need it from their start
    (the VPC CNI's image comes from ECR through NAT), and the controllers on them need it until
    their finalizers are done (Karpenter terminates instances and deletes instance profiles through
    EC2's and IAM's public endpoints), so what runs on the nodes depends on it and is deleted
    before it."""

    def __init__(
        self,
        name: str,
        cluster_name: str,
        region: str,
        vpc: EksNewVpc,
        zones: Sequence[str],
        one_nat_per_zone: bool,
        tags: Mapping[str, str],
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("gpu-platform:eks:Network", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)

        def tagged(what: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
            return {**tags, "Name": f"{cluster_name}-{what}", **(extra or {})}

        owned = {cluster_ownership_tag(cluster_name): "shared"}

        network = ec2.Vpc(
            f"{name}-vpc",
            cidr_block=vpc.cidr,
            enable_dns_hostnames=True,
            enable_dns_support=True,
            tags=tagged("vpc"),
            region=region,
            opts=child,
        )

        # The VPC's default security group lets every member reach every other and anything
        # out (EC2 user guide, default-security-group): a resource created without a group of
        # its own lands in it. Nothing the platform creates uses it; the provider removes all of
        # its rules when it takes it over (`aws_default_security_group`), as terraform-aws-vpc
        # does by default (`manage_default_security_group`) and AWS Security Hub asks (EC2.2).
        ec2.DefaultSecurityGroup(
            f"{name}-default-sg",
            vpc_id=network.id,
            ingress=[],
            egress=[],
            tags=tagged("default"),
            region=region,
            opts=child,
        )

        def routed_subnet(
            what: str, cidr: str, zone: str, extra: Mapping[str, str], table: ec2.RouteTable
        ) -> tuple[ec2.Subnet, ec2.RouteTableAssociation]:
            """A subnet that assigns no public address on launch, routed by `table`."""
            subnet = ec2.Subnet(
                f"{name}-{what}",
                vpc_id=network.id,
                cidr_block=cidr,
                availability_zone=zone,
                map_public_ip_on_launch=False,
                tags=tagged(what, extra),
                region=region,
                opts=child,
            )
            association = ec2.RouteTableAssociation(
                f"{name}-{what}",
                subnet_id=subnet.id,
                route_table_id=table.id,
                region=region,
                opts=child,
            )
            return subnet, association

        gateway = ec2.InternetGateway(
            f"{name}-igw", vpc_id=network.id, tags=tagged("igw"), region=region, opts=child
        )
        public_table = ec2.RouteTable(
            f"{name}-public",
            vpc_id=network.id,
            routes=[ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", gateway_id=gateway.id)],
            tags=tagged("public"),
            region=region,
            opts=child,
        )
        self.private_subnet_ids = {}
        self.public_subnet_ids = {}
        nats: list[ec2.NatGateway] = []
        self.egress = []
        private_tables: list[ec2.RouteTable] = []
        for plan in subnet_plan(vpc, zones):
            public, public_association = routed_subnet(
                f"public-{plan.zone}",
                plan.public_cidr,
                plan.zone,
                {PUBLIC_ELB_TAG: "1", **owned},
                public_table,
            )
            if one_nat_per_zone or not nats:
                address = ec2.Eip(
                    f"{name}-nat-{plan.zone}",
                    domain="vpc",
                    tags=tagged(f"nat-{plan.zone}"),
                    region=region,
                    opts=child,
                )
                nats.append(
                    ec2.NatGateway(
                        f"{name}-nat-{plan.zone}",
                        allocation_id=address.id,
                        subnet_id=public.id,
                        connectivity_type="public",
                        tags=tagged(f"nat-{plan.zone}"),
                        region=region,
                        # A NAT gateway needs the internet gateway attached (EC2 API reference,
                        # CreateNatGateway); nothing in its inputs says so.
                        opts=pulumi.ResourceOptions(parent=self, depends_on=[gateway]),
                    )
                )
            private_table = ec2.RouteTable(
                f"{name}-private-{plan.zone}",
                vpc_id=network.id,
                routes=[
                    ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", nat_gateway_id=nats[-1].id)
                ],
                tags=tagged(f"private-{plan.zone}"),
                region=region,
                opts=child,
            )
            private, association = routed_subnet(
                f"private-{plan.zone}",
                plan.private_cidr,
                plan.zone,
                {INTERNAL_ELB_TAG: "1", KARPENTER_DISCOVERY_TAG: cluster_name, **owned},
                private_table,
            )
            self.private_subnet_ids[plan.zone] = private.id
            self.public_subnet_ids[plan.zone] = public.id
            private_tables.append(private_table)
            self.egress += [private_table, association, public_association]
        # The endpoint adds its prefix-list route to each table; the provider leaves such
        # routes out of a route table's inline `routes` (terraform-provider-aws route_table.go
        # skips `vpce-` gateway routes), so the tables' own routes never remove it.
        s3 = ec2.VpcEndpoint(
            f"{name}-s3",
            vpc_id=network.id,
            service_name=f"com.amazonaws.{region}.s3",
            vpc_endpoint_type="Gateway",
            route_table_ids=[table.id for table in private_tables],
            tags=tagged("s3"),
            region=region,
            opts=child,
        )
        self.egress += [*nats, s3, public_table, gateway]
        self.vpc_id = network.id
        self.register_outputs({"vpc_id": network.id, "private_subnet_ids": self.private_subnet_ids})
