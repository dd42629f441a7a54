"""Rules across the fields of `cluster.create`: what each cloud's cluster can be created with,
and how the rest of the stack must agree with a cluster that does not exist yet."""

import ipaddress
import itertools
import re
from collections.abc import Iterable, Iterator
from datetime import timedelta

from gpu_platform.config.cluster_create import (
    PRIVATE_ENDPOINT_RULES,
    STANDARD_INSTANCE_TYPE,
    SYSTEM_NODE_GROUP,
    VPC_CNI_NETWORK_POLICY,
    ClusterCreate,
    EksClusterCreate,
    GkeClusterCreate,
    GkeMaintenanceExclusion,
)
from gpu_platform.config.fields import GROUP_EMAIL, IAM_PRINCIPAL_ARN, Cloud
from gpu_platform.config.problems import (
    MISSING,
    ConfigProblem,
    key_path,
    set_field_problems,
)
from gpu_platform.config.stack import StackConfig

CREATE = ("cluster", "create")

# EKS's network requirements: a VPC of at most /16 whose subnets, in at least two zones, hold
# the control plane's network interfaces (EKS user guide, "View Amazon EKS networking
# requirements for VPC and subnets"). The platform spreads over three zones, and below /20 the
# VPC CNI, which gives each pod an address of its node's subnet, runs out of them.
EKS_VPC_PREFIXES = range(16, 21)
EKS_VPC_ZONES = 3
# GKE maintenance policy (GKE docs, "Maintenance windows and exclusions"): windows must give at
# least 48 hours in any 32 days, each at least 4 hours long; an exclusion of every upgrade
# (`no-upgrades`) lasts at most 30 days, and a cluster has at most three of them.
GKE_MIN_MAINTENANCE_HOURS_IN_32_DAYS = 48
GKE_NO_UPGRADES_MAX = timedelta(days=30)
GKE_NO_UPGRADES_EXCLUSIONS = 3
# Logs without which nobody can tell who did what on the cluster, or as which IAM identity.
REQUIRED_EKS_LOGS = ("audit", "authenticator")
GKE_CLUSTER_NAME = re.compile(r"[a-z]([-a-z0-9]{0,38}[a-z0-9])?")
"""What GKE creates a cluster under (container.v1 `Cluster.name`: "up to 40 characters with the
following restrictions: Lowercase letters, numbers, and hyphens only. Must start with a letter.
Must end with a number or a letter."). The Secrets key ring is created first and named after the
cluster, so a name GKE refuses would leave a ring behind that Cloud KMS never deletes."""
NARROWEST_PUBLIC_PREFIX = 8
"""The widest block `endpoint.publicCidrs` and `gcp.authorizedNetworks` take: an /8, a
sixteen-millionth of the internet."""


def cluster_create_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    create = config.cluster.create
    if create is None:
        return
    if config.cluster.kubeconfig_context is not None:
        yield ConfigProblem(
            key_path("cluster", "kubeconfigContext"),
            config.cluster.kubeconfig_context,
            "no value with cluster.create: the platform reaches the cluster it creates through"
            " the cluster's own endpoint and the deployer's cloud credentials",
        )
    if not config.monitoring.install_prometheus_stack:
        # A cluster created by the same `pulumi up` has no Prometheus Operator: its CRDs
        # (PrometheusRule, ServiceMonitor, which the GPU alerts and the DCGM exporter's scrape
        # are) and the monitoring namespace would be missing when the platform applies them.
        # Managed Service for Prometheus on GKE covers the scrape and the recording rules only.
        yield ConfigProblem(
            key_path("monitoring", "installPrometheusStack"),
            config.monitoring.install_prometheus_stack,
            "true with cluster.create: a cluster the platform creates runs no Prometheus"
            " Operator, whose PrometheusRule and ServiceMonitor kinds and monitoring namespace"
            " the GPU alerts and dashboard need",
        )
    yield from _endpoint_problems(create)
    yield from _administrator_problems(config.cloud, create)
    if config.cloud is Cloud.AWS:
        yield from _other_cloud_block(create, "gcp", Cloud.AWS)
        yield from _eks_problems(config, create.aws)
        yield from _private_endpoint_problems(create)
    else:
        yield from _other_cloud_block(create, "aws", Cloud.GCP)
        if not GKE_CLUSTER_NAME.fullmatch(config.cluster.name):
            yield ConfigProblem(
                key_path("cluster", "name"),
                config.cluster.name,
                "a name GKE creates a cluster under: up to 40 lowercase letters, digits and"
                " hyphens, beginning with a letter and ending with a letter or digit",
            )
        yield from _gke_problems(create, create.gcp)
        yield from _binary_authorization_problems(config, create.gcp)


def _other_cloud_block(create: ClusterCreate, block: str, cloud: Cloud) -> Iterator[ConfigProblem]:
    set_there = getattr(create, block).model_dump(mode="json", by_alias=True, exclude_unset=True)
    if set_there:
        yield ConfigProblem(
            key_path(*CREATE, block),
            set_there,
            f"no value when cloud is {cloud}: it holds the other cloud's cluster settings",
        )


def _endpoint_problems(create: ClusterCreate) -> Iterator[ConfigProblem]:
    endpoint = create.endpoint
    path = key_path(*CREATE, "endpoint", "publicCidrs")
    if endpoint.access == "public" and not endpoint.public_cidrs:
        yield ConfigProblem(
            path,
            MISSING,
            "the CIDR blocks the public endpoint answers (the deployers' and CI runners' egress)"
            " with access public; for no public endpoint, access private",
        )
    if endpoint.access == "private" and endpoint.public_cidrs:
        yield ConfigProblem(
            path,
            endpoint.public_cidrs,
            "no value with access private (the API has no public endpoint); set access public"
            " to open one to these blocks",
        )
    yield from _whole_internet_problems(
        ((*CREATE, "endpoint", "publicCidrs", i), cidr)
        for i, cidr in enumerate(endpoint.public_cidrs)
    )


def _whole_internet_problems(
    blocks: Iterable[tuple[tuple[str | int, ...], str]],
) -> Iterator[ConfigProblem]:
    """Blocks (each with its key path) that open the control plane to (nearly) the whole
    internet: two /1 blocks are all of it as much as 0.0.0.0/0 is."""
    for path, cidr in blocks:
        if ipaddress.IPv4Network(cidr).prefixlen < NARROWEST_PUBLIC_PREFIX:
            yield ConfigProblem(
                key_path(*path),
                cidr,
                f"a block narrower than the whole internet, /{NARROWEST_PUBLIC_PREFIX} or"
                " smaller: the deployers' own egress ranges",
            )


def _private_endpoint_problems(create: ClusterCreate) -> Iterator[ConfigProblem]:
    """Who reaches EKS's private endpoint: only the cluster security group's members (the
    nodes) unless the control plane has a group with rules for others (EKS user guide,
    cluster-endpoint.adoc: "You must ensure that your Amazon EKS control plane security group
    contains rules to allow ingress traffic on port 443")."""
    base = (*CREATE, "aws")
    cidrs, groups = (
        create.aws.private_endpoint_cidrs,
        create.aws.private_endpoint_security_group_ids,
    )
    if create.endpoint.access == "private" and not cidrs and not groups:
        yield ConfigProblem(
            key_path(*base, "privateEndpointCidrs"),
            MISSING,
            "the networks `pulumi up` reaches the private endpoint from (a VPN's, a peered VPC's,"
            " a CI runner's subnet), or aws.privateEndpointSecurityGroupIds, with endpoint.access"
            " private: EKS's cluster security group admits only its members, the cluster's"
            " nodes. Where `pulumi up` ran from the cluster's nodes (a runner pod) or an"
            " instance given that group, name the cluster security group"
            " (cluster.resourcesVpcConfig.clusterSecurityGroupId of `aws eks describe-cluster`)"
            " in aws.privateEndpointSecurityGroupIds; where a rule was added to it by hand, name"
            " its sources here. To create the cluster from outside its VPC, endpoint.access"
            " public with endpoint.publicCidrs (docs/create-cluster.md)",
        )
    for key, values in (
        ("privateEndpointCidrs", cidrs),
        ("privateEndpointSecurityGroupIds", groups),
    ):
        for i, value in enumerate(values):
            if value in values[:i]:
                yield ConfigProblem(key_path(*base, key, i), value, "each once")
    yield from _whole_internet_problems(
        ((*base, "privateEndpointCidrs", i), cidr) for i, cidr in enumerate(cidrs)
    )
    if len(cidrs) + len(groups) > PRIVATE_ENDPOINT_RULES:
        yield ConfigProblem(
            key_path(*base, "privateEndpointSecurityGroupIds"),
            groups,
            f"at most {PRIVATE_ENDPOINT_RULES} groups and privateEndpointCidrs together, each an"
            f" inbound rule of one security group ({len(cidrs)} blocks given)",
        )


def _administrator_problems(cloud: Cloud, create: ClusterCreate) -> Iterator[ConfigProblem]:
    pattern, what = (
        (IAM_PRINCIPAL_ARN, "an IAM role or user ARN such as arn:aws:iam::123456789012:role/admins")
        if cloud is Cloud.AWS
        else (GROUP_EMAIL, "a Google group e-mail such as gke-admins@example.com")
    )
    for i, admin in enumerate(create.administrators):
        if not pattern.match(admin):
            yield ConfigProblem(
                key_path(*CREATE, "administrators", i), admin, f"{what} when cloud is {cloud}"
            )
    for i, admin in enumerate(create.administrators):
        if admin in create.administrators[:i]:
            yield ConfigProblem(
                key_path(*CREATE, "administrators", i), admin, "each administrator once"
            )


def _eks_problems(config: StackConfig, aws: EksClusterCreate) -> Iterator[ConfigProblem]:
    base = (*CREATE, "aws")
    if aws.vpc is not None and aws.subnet_ids:
        yield ConfigProblem(
            key_path(*base, "subnetIds"),
            aws.subnet_ids,
            "no value beside aws.vpc: the cluster goes into a new VPC or into existing subnets",
        )
    if VPC_CNI_NETWORK_POLICY in aws.vpc_cni_configuration:
        yield ConfigProblem(
            key_path(*base, "vpcCniConfiguration", VPC_CNI_NETWORK_POLICY),
            aws.vpc_cni_configuration[VPC_CNI_NETWORK_POLICY],
            'no value: the platform sets it to "true", so that the NetworkPolicies keeping'
            " tenants from Prometheus and Alertmanager are enforced",
        )
    new_vpc = aws.subnet_ids == []
    if new_vpc and config.cluster.node_subnet_ids:
        yield ConfigProblem(
            key_path("cluster", "nodeSubnetIds"),
            config.cluster.node_subnet_ids,
            "no value with a new VPC (cluster.create.aws.vpc): GPU nodes go into its private"
            " subnets",
        )
    if len(set(aws.subnet_ids)) != len(aws.subnet_ids):
        yield ConfigProblem(key_path(*base, "subnetIds"), aws.subnet_ids, "each subnet once")
    elif len(aws.subnet_ids) == 1:
        yield ConfigProblem(
            key_path(*base, "subnetIds"),
            aws.subnet_ids,
            "at least two subnets, in different zones: EKS places the control plane's network"
            " interfaces in two zones or more",
        )
    vpc = aws.vpc
    if vpc is not None:
        prefix = ipaddress.IPv4Network(vpc.cidr).prefixlen
        if prefix not in EKS_VPC_PREFIXES:
            yield ConfigProblem(
                key_path(*base, "vpc", "cidr"),
                vpc.cidr,
                f"a block of /{EKS_VPC_PREFIXES[0]} to /{EKS_VPC_PREFIXES[-1]}: EC2 takes at most"
                " /16, and every pod takes an address of its node's subnet",
            )
        yield from _eks_zone_problems(config, vpc.zones)
    system = aws.system_nodes
    yield from _bounds_problems((*base, "systemNodes"), "min", system.min, "max", system.max)
    for i, instance_type in enumerate(system.instance_types):
        if not STANDARD_INSTANCE_TYPE.match(instance_type):
            yield ConfigProblem(
                key_path(*base, "systemNodes", "instanceTypes", i),
                instance_type,
                "a general-purpose type of the On-Demand Standard families (A, C, D, H, I, M, R,"
                " T, Z), such as m7i.xlarge: the system nodes run controllers, not GPU or"
                " accelerator work",
            )
    for log in REQUIRED_EKS_LOGS:
        if log not in aws.control_plane_logs:
            yield ConfigProblem(
                key_path(*base, "controlPlaneLogs"),
                aws.control_plane_logs,
                f"a list that includes {log}: without {log} logs nobody can tell who did what on"
                " the cluster, or as which IAM identity",
            )
    yield from _ami_release_problems(config)
    key = aws.secrets_kms_key_arn
    region = config.cluster.region
    # EKS user guide, enable-kms.adoc: the key must be "created in the same AWS Region as the
    # cluster"; an ARN names its region in its fourth field.
    if key is not None and region is not None and key.split(":")[3] != region:
        yield ConfigProblem(
            key_path(*base, "secretsKmsKeyArn"),
            key,
            f"a KMS key of the cluster's region, {region}, as EKS requires; this one is in"
            f" {key.split(':')[3]}",
        )
    for i, pool in enumerate(config.pools):
        if pool.name == SYSTEM_NODE_GROUP:
            yield ConfigProblem(
                key_path("pools", i, "name"),
                pool.name,
                f"a name other than {SYSTEM_NODE_GROUP} with cluster.create: the system node"
                " group's name begins with it, and would be taken for the pool's",
            )


def _bounds_problems(
    loc: tuple[str, ...], low_key: str, low: int, high_key: str, high: int
) -> Iterator[ConfigProblem]:
    """A node group's or pool's `high` bound below its `low` one."""
    if low > high:
        yield ConfigProblem(key_path(*loc, high_key), high, f"at least {loc[-1]}.{low_key} ({low})")


def _eks_zone_problems(config: StackConfig, zones: list[str]) -> Iterator[ConfigProblem]:
    path = key_path(*CREATE, "aws", "vpc", "zones")
    region = config.cluster.region or ""
    if zones and (len(set(zones)) != EKS_VPC_ZONES or len(zones) != EKS_VPC_ZONES):
        yield ConfigProblem(
            path,
            zones,
            f"exactly {EKS_VPC_ZONES} different zones, or none for the region's first three",
        )
    for i, zone in enumerate(zones):
        if region and not (zone.startswith(region) and len(zone) == len(region) + 1):
            yield ConfigProblem(
                key_path(*CREATE, "aws", "vpc", "zones", i),
                zone,
                f"a zone of the cluster's region {region}, such as {region}a",
            )
    if not zones:
        return
    for i, pool in enumerate(config.pools):
        outside = [zone for zone in pool.zones if zone not in zones]
        if outside:
            yield ConfigProblem(
                key_path("pools", i, "zones"),
                pool.zones,
                f"zones of the new VPC ({', '.join(zones)}): the pool's nodes go into its private"
                " subnets",
            )


def _ami_release_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    """An AL2023 AMI release names its Kubernetes version; EKS refuses a node group whose
    release is of another minor than the cluster's being created, but only at `pulumi up`.
    The system nodes always run AL2023; the pools where the stack's node image is."""
    create = config.cluster.create
    if create is None:
        return
    releases: list[tuple[tuple[str | int, ...], str | None]] = [
        (
            (*CREATE, "aws", "systemNodes", "amiReleaseVersion"),
            create.aws.system_nodes.ami_release_version,
        )
    ]
    if config.node_image == "al2023":
        releases += [
            (("pools", i, "aws", "amiReleaseVersion"), pool.aws.ami_release_version)
            for i, pool in enumerate(config.pools)
        ]
    version = create.kubernetes_version
    for path, release in releases:
        if release is not None and not release.startswith(version + "."):
            yield ConfigProblem(
                key_path(*path),
                release,
                f"an AL2023 release for Kubernetes {version}, the cluster's"
                f" (cluster.create.kubernetesVersion), such as {version}.6-20260714",
            )


def _gke_problems(create: ClusterCreate, gcp: GkeClusterCreate) -> Iterator[ConfigProblem]:
    base = (*CREATE, "gcp")
    if gcp.network is not None and gcp.existing_network is not None:
        yield ConfigProblem(
            key_path(*base, "existingNetwork"),
            gcp.existing_network.model_dump(mode="json", by_alias=True),
            "no value beside gcp.network: the cluster goes into a new network or an existing one",
        )
    if gcp.network is not None:
        ranges = {
            "subnetCidr": gcp.network.subnet_cidr,
            "podsCidr": gcp.network.pods_cidr,
            "servicesCidr": gcp.network.services_cidr,
        }
        for (a, cidr_a), (b, cidr_b) in itertools.combinations(ranges.items(), 2):
            if ipaddress.IPv4Network(cidr_a).overlaps(ipaddress.IPv4Network(cidr_b)):
                yield ConfigProblem(
                    key_path(*base, "network", b),
                    cidr_b,
                    f"a block that does not overlap network.{a} ({cidr_a})",
                )
    if gcp.release_channel != "none":
        yield from set_field_problems(
            gcp,
            {"version"},
            base,
            f"no value with releaseChannel {gcp.release_channel}: the channel picks the version;"
            " pin one with releaseChannel none",
        )
    if gcp.version is not None and not gcp.version.startswith(create.kubernetes_version + "."):
        yield ConfigProblem(
            key_path(*base, "version"),
            gcp.version,
            f"a GKE version of Kubernetes {create.kubernetes_version}"
            " (cluster.create.kubernetesVersion)",
        )
    yield from _maintenance_problems(gcp)
    # GKE adds these to the master authorized networks beside endpoint.publicCidrs: with a
    # public endpoint they open it as much.
    yield from _whole_internet_problems(
        ((*base, "authorizedNetworks", i, "cidr"), f"{network.cidr}")
        for i, network in enumerate(gcp.authorized_networks)
    )
    pool = gcp.system_node_pool
    yield from _bounds_problems(
        (*base, "systemNodePool"), "minPerZone", pool.min_per_zone, "maxPerZone", pool.max_per_zone
    )


def _binary_authorization_problems(
    config: StackConfig, gcp: GkeClusterCreate
) -> Iterator[ConfigProblem]:
    base = (*CREATE, "gcp")
    if gcp.binary_authorization_allowed_images and gcp.binary_authorization in ("project", "off"):
        yield ConfigProblem(
            key_path(*base, "binaryAuthorizationAllowedImages"),
            gcp.binary_authorization_allowed_images,
            f"no value with binaryAuthorization {gcp.binary_authorization}: only the policy the"
            " platform writes (audit, enforce) admits them",
        )
    if gcp.binary_authorization == "enforce" and config.node_image == "cos":
        # GKE's COS driver installer (container-engine-accelerators nvidia-driver-installer/cos/
        # daemonset-preloaded.yaml) runs `cos-nvidia-installer:fixed`, an image preloaded on the
        # node that names no registry: no allowlist pattern (`registry/path/image`) can admit
        # it, and nothing documents Google's global policy doing so. Refused, the GPU nodes
        # never get a driver.
        yield ConfigProblem(
            key_path(*base, "binaryAuthorization"),
            gcp.binary_authorization,
            "audit, project or off with cluster.nodeImage cos: the COS driver installer's image"
            " (cos-nvidia-installer:fixed) names no registry an allowlist could admit, so enforce"
            " could leave the GPU nodes without a driver; enforce needs nodeImage ubuntu",
        )


def _maintenance_problems(gcp: GkeClusterCreate) -> Iterator[ConfigProblem]:
    base = (*CREATE, "gcp")
    window = gcp.maintenance_window
    # Any 32 days hold every weekday at least four times.
    hours = len(set(window.days)) * window.duration_hours * 4
    if hours < GKE_MIN_MAINTENANCE_HOURS_IN_32_DAYS:
        yield ConfigProblem(
            key_path(*base, "maintenanceWindow", "days"),
            window.days,
            f"days enough that the window opens for at least {GKE_MIN_MAINTENANCE_HOURS_IN_32_DAYS}"
            f" hours in any 32 days, as GKE requires ({window.duration_hours} hours on these days"
            f" give {hours})",
        )
    no_upgrades = 0
    for i, exclusion in enumerate(gcp.maintenance_exclusions):
        loc = (*base, "maintenanceExclusions", i)
        yield from _exclusion_end_problems(exclusion, loc)
        if exclusion.scope == "no-upgrades":
            no_upgrades += 1
            if exclusion.end is not None and exclusion.end - exclusion.start > GKE_NO_UPGRADES_MAX:
                yield ConfigProblem(
                    key_path(*loc, "end"),
                    exclusion.end.isoformat(),
                    "at most 30 days after its start with scope no-upgrades; for longer, scope"
                    " no-minor-or-node-upgrades",
                )
            if no_upgrades > GKE_NO_UPGRADES_EXCLUSIONS:
                yield ConfigProblem(
                    key_path(*loc, "scope"),
                    exclusion.scope,
                    f"another scope: a cluster takes at most {GKE_NO_UPGRADES_EXCLUSIONS}"
                    " no-upgrades exclusions",
                )
        if any(other.name == exclusion.name for other in gcp.maintenance_exclusions[:i]):
            yield ConfigProblem(key_path(*loc, "name"), exclusion.name, "a name of its own")


def _exclusion_end_problems(
    exclusion: GkeMaintenanceExclusion, loc: tuple[str | int, ...]
) -> Iterator[ConfigProblem]:
    """An exclusion ends at `end` or when the version leaves support, which GKE allows only for
    the minor-version scopes (container.v1 `MaintenanceExclusionOptions.endTimeBehavior`)."""
    if exclusion.until_end_of_support:
        if exclusion.end is not None:
            yield ConfigProblem(
                key_path(*loc, "end"),
                exclusion.end.isoformat(),
                "no value with untilEndOfSupport: the exclusion ends when the version leaves"
                " support",
            )
        if exclusion.scope == "no-upgrades":
            yield ConfigProblem(
                key_path(*loc, "untilEndOfSupport"),
                True,
                "false with scope no-upgrades (at most 30 days); until end of support, scope"
                " no-minor-upgrades or no-minor-or-node-upgrades",
            )
    elif exclusion.end is None:
        yield ConfigProblem(
            key_path(*loc, "end"),
            MISSING,
            "the exclusion's end, ISO 8601 with its offset; or untilEndOfSupport: true",
        )
    elif exclusion.end <= exclusion.start:
        yield ConfigProblem(
            key_path(*loc, "end"), exclusion.end.isoformat(), "a time after its start"
        )
