"""`NewEksCluster`, the cluster `cluster.create` describes, created; `plan_new_cluster`, the
same cluster as known before anything is created."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import pulumi
from pulumi_aws import ec2, eks, iam
from pulumi_aws.get_availability_zones import get_availability_zones
from pulumi_aws.get_caller_identity import get_caller_identity
from pulumi_aws.get_partition import get_partition

from gpu_platform.config import (
    ClusterCreate,
    ConfigError,
    ConfigProblem,
    EksNewVpc,
    StackConfig,
    key_path,
)
from gpu_platform.eks.cluster import EksCluster, Subnet, look_up_subnets
from gpu_platform.eks.iam_roles import cluster_tags
from gpu_platform.eks.instance_lookups import look_up_instance_type
from gpu_platform.eks.new_cluster.addon_pins import AFTER_NODES, BEFORE_NODES
from gpu_platform.eks.new_cluster.addons import addons, ebs_csi_role
from gpu_platform.eks.new_cluster.auto_mode import auto_mode_node_role, node_role_arn
from gpu_platform.eks.new_cluster.control_plane import EksControlPlane
from gpu_platform.eks.new_cluster.creator import LEGACY_CREATOR_TAG, Creator, existing_creator
from gpu_platform.eks.new_cluster.layout import (
    EKS_UNSUPPORTED_ZONE_IDS,
    NEW_VPC_ZONES,
    nat_per_zone,
)
from gpu_platform.eks.new_cluster.network import EksNetwork
from gpu_platform.eks.new_cluster.system_nodes import EksSystemNodeGroup
from gpu_platform.eks.placement import NodeGroupPlacement
from gpu_platform.eks.subnets import Route, SubnetRouting
from gpu_platform.eks.vpc_cni import VpcCniIdentity
from gpu_platform.instance import lookup_options, part_name

PLANNED_SUBNET_PREFIX = "planned-private-"
"""The id a new VPC's private subnet has until it is created: `planned-private-<zone>`."""
NEW_SUBNET_ROUTING = SubnetRouting(
    table_id="(the zone's private route table)",
    implicit=False,
    internet_route=None,
    default_routes=(Route("0.0.0.0/0", "a NAT gateway"),),
)


@dataclass(frozen=True)
class NewClusterPlan:
    cluster: EksCluster
    """As it will be: endpoint, CA and security group come with `NewEksCluster`."""
    subnets: list[Subnet]
    """The node subnets: the new VPC's private ones (ids `planned-private-<zone>`), or the
    existing ones given."""
    creator: Creator
    """The IAM role or user that created the cluster, which keeps an admin access entry whoever
    runs the program later: on the first run the one running it, afterwards the one the stack's
    state recorded (`creator.py`), never a tag anyone may rewrite in the cloud."""
    system_architecture: str | None
    """The system node group's; None on Auto Mode, which has none."""


def plan_new_cluster(config: StackConfig) -> NewClusterPlan:
    """The cluster `cluster.create` describes; ConfigError where the account cannot have it."""
    create = config.cluster.create
    region = config.cluster.region
    assert create is not None and region is not None  # config validation requires them
    caller = get_caller_identity(opts=lookup_options("aws"))
    partition = get_partition(opts=lookup_options("aws")).partition
    # An assumed role's session ARN names the session, not the role an access entry needs.
    deployer = iam.get_session_context(arn=caller.arn, opts=lookup_options("aws")).issuer_arn
    existing = eks.get_clusters(region=region, opts=lookup_options("aws")).names
    live = (
        eks.get_cluster(name=config.cluster.name, region=region, opts=lookup_options("aws"))
        if config.cluster.name in existing
        else None
    )
    creator = (
        Creator(deployer, recorded=False)
        if live is None
        else existing_creator(
            config.cluster.name,
            live.arn,
            deployer,
            create.administrators,
            (live.tags or {}).get(LEGACY_CREATOR_TAG),
        )
    )
    planned = EksCluster(
        name=config.cluster.name,
        region=region,
        arn=f"arn:{partition}:eks:{region}:{caller.account_id}:cluster/{config.cluster.name}",
        endpoint="",
        certificate_authority="",
        version=create.kubernetes_version,
        status="CREATING",
        subnet_ids=(),
        exists=live is not None,
    )
    if config.uses_auto_mode:
        planned = replace(planned, auto_mode_node_role_arn=node_role_arn(planned))
    problems: list[ConfigProblem] = []
    if not create.aws.creator_access and deployer not in create.administrators:
        problems.append(_deployer_without_access_problem(deployer))
    if live is not None:
        problems += _version_problems(create.kubernetes_version, live.version)
    elif not create.aws.subnet_ids and create.endpoint.access == "private":
        problems.append(_unreachable_first_run_problem())
    if create.aws.subnet_ids:
        subnets = look_up_subnets(create.aws.subnet_ids, region)
        problems += _existing_subnet_problems(subnets)
    else:
        zones = _zones(config, region, live)
        subnets = [Subnet(PLANNED_SUBNET_PREFIX + zone, zone, NEW_SUBNET_ROUTING) for zone in zones]
    # Auto Mode's clusters have no system node group (`auto_mode.py`).
    architecture = None if config.uses_auto_mode else _system_architecture(create, region, problems)
    if problems:
        raise ConfigError(problems)
    return NewClusterPlan(planned, subnets, creator, architecture)


def _system_architecture(
    create: ClusterCreate, region: str, problems: list[ConfigProblem]
) -> str | None:
    """The system node group's architecture, with a problem in `problems` where its instance
    types have none or more than one."""
    architectures = {
        look_up_instance_type(name, region).architecture
        for name in create.aws.system_nodes.instance_types
    }
    if len(architectures) == 1 and None not in architectures:
        return str(architectures.pop())
    problems.append(
        ConfigProblem(
            key_path("cluster", "create", "aws", "systemNodes", "instanceTypes"),
            create.aws.system_nodes.instance_types,
            "instance types of one architecture (x86_64 or arm64): a node group runs one AMI type",
        )
    )
    return None


def _deployer_without_access_problem(deployer: str) -> ConfigProblem:
    """Without the creator's entry, the one running `pulumi up` has the access administrators
    have, or none: the program installs the platform through the cluster's API."""
    return ConfigProblem(
        key_path("cluster", "create", "aws", "creatorAccess"),
        False,
        f"true, or {deployer}, who runs this update, among administrators: without the"
        " creator's access entry it has no access to the cluster's API, through which the"
        " platform is installed",
    )


def _unreachable_first_run_problem() -> ConfigProblem:
    """The run that creates a new VPC installs the platform through the cluster's endpoint right
    after creating it: no runner, VPN or peering reaches a private endpoint in a VPC that did
    not exist before the run, so it would fail halfway, the cluster built and the platform
    not."""
    return ConfigProblem(
        key_path("cluster", "create", "endpoint", "access"),
        "private",
        "public, with endpoint.publicCidrs, for the first `pulumi up`, which creates the VPC that"
        " nothing reaches privately yet; once a runner, VPN or peering reaches the VPC (named in"
        " aws.privateEndpointCidrs or aws.privateEndpointSecurityGroupIds), set it to private"
        " (docs/create-cluster.md)",
    )


def _version_problems(wanted: str, running: str) -> list[ConfigProblem]:
    """EKS upgrades a control plane one minor version at a time and never downgrades it (EKS user
    guide, update-cluster.adoc: "you can update only one minor version at a time", "You cannot
    downgrade the Kubernetes of an Amazon EKS cluster"): refused here, before anything changes,
    rather than by EKS in the middle of `pulumi up`."""
    major, minor = (int(part) for part in running.split(".")[:2])
    allowed = [f"{major}.{minor}", f"{major}.{minor + 1}"]
    if wanted in allowed:
        return []
    return [
        ConfigProblem(
            key_path("cluster", "create", "kubernetesVersion"),
            wanted,
            f"{' or '.join(allowed)}: the cluster runs Kubernetes {running}, and EKS upgrades"
            " one minor version at a time and never downgrades",
        )
    ]


def _zones(config: StackConfig, region: str, live: eks.GetClusterResult | None) -> list[str]:
    create = config.cluster.create
    assert create is not None
    chosen = create.aws.vpc.zones if create.aws.vpc is not None else []
    if chosen:
        return list(chosen)
    if live is not None:
        # Once created, the VPC's zones are those of the subnets the cluster was created in,
        # whatever state EC2 reports for a zone now: choosing again from the zones
        # `available` today (EC2 AvailabilityZoneState: available, information, impaired,
        # unavailable) would move subnets, NAT gateways and node groups during a zone's outage.
        return sorted(
            {
                ec2.get_subnet(
                    id=subnet_id, region=region, opts=lookup_options("aws")
                ).availability_zone
                for subnet_id in live.vpc_config.subnet_ids
            }
        )
    found = get_availability_zones(
        state="available",
        exclude_zone_ids=list(EKS_UNSUPPORTED_ZONE_IDS),
        filters=[{"name": "opt-in-status", "values": ["opt-in-not-required"]}],
        region=region,
        opts=lookup_options("aws"),
    ).names
    if len(found) < NEW_VPC_ZONES:
        raise ConfigError(
            [
                ConfigProblem(
                    key_path("cluster", "create", "aws", "vpc", "zones"),
                    [],
                    f"zones named: region {region} has {len(found)} zones EKS can use"
                    f" ({', '.join(found)}), fewer than {NEW_VPC_ZONES}",
                )
            ]
        )
    return sorted(found)[:NEW_VPC_ZONES]


def _existing_subnet_problems(subnets: Sequence[Subnet]) -> list[ConfigProblem]:
    problems = [
        ConfigProblem(
            key_path("cluster", "create", "aws", "subnetIds", i),
            subnet.id,
            "a private subnet (nodes and the control plane's interfaces must not sit in a public"
            f" one), but its {subnet.routing.reason}",
        )
        for i, subnet in enumerate(subnets)
        if subnet.routing.public
    ]
    if len({s.zone for s in subnets}) < 2:
        problems.append(
            ConfigProblem(
                key_path("cluster", "create", "aws", "subnetIds"),
                [s.id for s in subnets],
                "subnets in at least two zones: EKS places the control plane's network"
                f" interfaces in two or more (these are all in {subnets[0].zone})",
            )
        )
    return problems


class NewEksCluster(pulumi.ComponentResource):
    """The cluster, its network and what its nodes need, created."""

    cluster: EksCluster
    """The cluster as the rest of the platform reads it, endpoint and CA now outputs."""
    subnet_ids: Mapping[str, pulumi.Input[str]]
    """The node subnets' ids by the id they were planned with."""
    ready: list[pulumi.Resource]
    """What Kubernetes objects wait for: the cluster, access entries, system nodes, add-ons."""
    cni: list[pulumi.Resource]
    """The VPC CNI's identity, which the nodes' CNI needs before it starts."""

    def __init__(
        self,
        name: str,
        config: StackConfig,
        plan: NewClusterPlan,
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("gpu-platform:eks:NewCluster", name, None, opts)
        create = config.cluster.create
        assert create is not None
        planned = plan.cluster
        tags = cluster_tags(planned)
        child = pulumi.ResourceOptions(parent=self)
        if create.aws.subnet_ids:
            self.subnet_ids = {s.id: s.id for s in plan.subnets}
            # EKS requires the cluster's subnets to be of one VPC.
            vpc_id: pulumi.Input[str] = plan.subnets[0].vpc_id
            egress: list[pulumi.Resource] = []
        else:
            vpc = create.aws.vpc or EksNewVpc()
            network = EksNetwork(
                f"{name}-network",
                planned.name,
                planned.region,
                vpc,
                [s.zone for s in plan.subnets],
                nat_per_zone(vpc, config.protect),
                tags,
                child,
            )
            self.subnet_ids = {
                PLANNED_SUBNET_PREFIX + zone: subnet_id
                for zone, subnet_id in network.private_subnet_ids.items()
            }
            vpc_id = network.vpc_id
            egress = network.egress
        # The roles within the platform's boundary carry their VPC as a tag, the only VPC whose
        # network interfaces the boundary lets them touch (`ec2:Vpc`): an empty tag matches no
        # VPC, and the VPC CNI could then give no pod an address.
        in_vpc = replace(planned, vpc_id=vpc_id)
        node_role, node_policies = (
            auto_mode_node_role(f"{name}-auto-mode-nodes", in_vpc, tags, child)
            if config.uses_auto_mode
            else (None, [])
        )
        control_plane = EksControlPlane(
            name,
            planned,
            create,
            vpc_id,
            list(self.subnet_ids.values()),
            plan.creator,
            config.protect,
            tags,
            node_role.arn if node_role is not None else None,
            node_policies,
            child,
        )
        created = control_plane.cluster
        self.cni = []
        nodes: list[pulumi.Resource]
        if node_role is not None:
            # Auto Mode runs the nodes' networking, DNS, storage driver and Pod Identity agent
            # itself, and its built-in NodePool the platform's own pods (`auto_mode.py`).
            in_vpc = replace(in_vpc, auto_mode_node_role_arn=node_role.arn)
            nodes = [*node_policies]
        else:
            nodes = self._nodes(name, config, plan, in_vpc, control_plane, egress)
        self.cluster = replace(
            in_vpc,
            endpoint=created.endpoint,
            certificate_authority=created.certificate_authority.data,
            security_group_id=created.vpc_config.cluster_security_group_id,
        )
        # Everything on the nodes waits for their egress, and is deleted before it.
        self.ready = [created, *control_plane.access, *nodes, *egress]
        self.register_outputs({"cluster": created.arn})

    def _nodes(
        self,
        name: str,
        config: StackConfig,
        plan: NewClusterPlan,
        in_vpc: EksCluster,
        control_plane: EksControlPlane,
        egress: Sequence[pulumi.Resource],
    ) -> list[pulumi.Resource]:
        """The system node group and the add-ons its nodes and their pods need."""
        create = config.cluster.create
        assert create is not None and plan.system_architecture is not None
        planned = plan.cluster
        created = control_plane.cluster
        child = pulumi.ResourceOptions(parent=self)
        on_cluster = pulumi.ResourceOptions(parent=self, depends_on=[created])
        self.cni = (
            [VpcCniIdentity(part_name("vpc-cni"), in_vpc, on_cluster)]
            if config.cluster.vpc_cni_role
            else []
        )
        before = addons(
            f"{name}-addon",
            planned,
            BEFORE_NODES,
            on_cluster,
            vpc_cni_configuration=create.aws.vpc_cni_configuration,
        )
        system = EksSystemNodeGroup(
            f"{name}-system",
            in_vpc,
            created.name,
            create.aws.system_nodes,
            plan.system_architecture,
            list(self.subnet_ids.values()),
            config.cluster.cni_policy_on_node_role,
            cluster_tags(planned),
            after=[*before, *self.cni, *control_plane.access, *egress],
            opts=child,
        )
        ebs_role, ebs_policy = ebs_csi_role(f"{name}-ebs-csi", planned, child)
        after = addons(
            f"{name}-addon",
            planned,
            AFTER_NODES,
            pulumi.ResourceOptions(parent=self, depends_on=[system, ebs_policy]),
            pod_identities={
                "aws-ebs-csi-driver": eks.AddonPodIdentityAssociationArgs(
                    role_arn=ebs_role.arn, service_account="ebs-csi-controller-sa"
                )
            },
        )
        return [system, *before, *after]


def with_created_subnets(
    placement: NodeGroupPlacement, created: Mapping[str, pulumi.Input[str]]
) -> NodeGroupPlacement:
    """`placement` with the planned subnets' ids replaced by the created subnets'."""
    return replace(
        placement,
        subnet_ids=tuple(created.get(str(s), s) for s in placement.subnet_ids),
        subnets_by_zone=tuple(
            (zone, tuple(created.get(str(s), s) for s in ids))
            for zone, ids in placement.subnets_by_zone
        ),
    )
