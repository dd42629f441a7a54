"""The EKS pre-flight check of a stack that creates its cluster (`cluster.create`), before the
cluster exists: what creating it needs of the account.

- room under the regional quotas for what the stack creates: an EKS cluster, and for a new VPC
  a VPC, an internet gateway, one Elastic IP and NAT gateway per zone or one in all
  (`natGateways`), each beside what the region holds already;
- the service-linked roles EKS, managed node groups and Auto Scaling act through (and EC2 Spot
  for spot pools): EKS creates them on first use where the deployer may
  (`iam:CreateServiceLinkedRole`), so a missing one is a warning with the command that creates
  it;
- the permissions boundary every node and controller role the stack creates carries
  (`gpu_platform.eks.iam_roles`), without which creating them fails;
- each core add-on version the platform pins for the Kubernetes version, as EKS lists them in
  the region (`DescribeAddonVersions`);
- whether EKS still gives the Kubernetes version standard support (`DescribeClusterVersions`),
  which `supportType: STANDARD` needs;
- where `pulumi up` must run from to reach the endpoint of the cluster it creates.

Each finding says what to do about it.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from gpu_platform.config import ClusterCreate, EksNewVpc, StackConfig, key_path
from gpu_platform.config.cluster_create import STANDARD_INSTANCE_TYPE
from gpu_platform.eks.new_cluster.addon_pins import CORE_ADDONS, addon_versions
from gpu_platform.eks.new_cluster.layout import (
    EKS_UNSUPPORTED_ZONE_IDS,
    NEW_VPC_ZONES,
    nat_per_zone,
)
from gpu_platform.eks.permissions_boundary import PERMISSIONS_BOUNDARY
from gpu_platform.preflight.created_endpoint import endpoint_finding
from gpu_platform.preflight.findings import Finding
from gpu_platform.version_order import version_key

CREATE_PERMISSIONS = (
    "ec2:DescribeVpcs",
    "ec2:DescribeInternetGateways",
    "ec2:DescribeAddresses",
    "ec2:DescribeNatGateways",
    "ec2:DescribeAvailabilityZones",
    "eks:ListClusters",
    "eks:DescribeAddonVersions",
    "eks:DescribeClusterVersions",
    "iam:GetRole",
    "iam:ListPolicies",
    "servicequotas:GetServiceQuota",
    "servicequotas:GetAWSDefaultServiceQuota",
)
"""What the check calls beyond an existing cluster's checks, before the cluster exists."""


@dataclass(frozen=True)
class RegionalQuota:
    """A quota in Service Quotas that creating the cluster takes from."""

    service: str
    code: str
    name: str


# Service Quotas' codes (`aws service-quotas list-service-quotas --service-code vpc|ec2|eks`).
VPCS = RegionalQuota("vpc", "L-F678F1CE", "VPCs per Region")
INTERNET_GATEWAYS = RegionalQuota("vpc", "L-A4707A72", "Internet gateways per Region")
NAT_GATEWAYS_PER_ZONE = RegionalQuota("vpc", "L-FE5A380F", "NAT gateways per Availability Zone")
ELASTIC_IPS = RegionalQuota("ec2", "L-0263D0A3", "EC2-VPC Elastic IPs")
CLUSTERS = RegionalQuota("eks", "L-1194D53C", "Clusters")
STANDARD_VCPUS = RegionalQuota(
    "ec2", "L-1216C47A", "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances"
)
"""In vCPUs; new accounts start with few. The system node group's on-demand instances count
against it."""
UPDATE_SURGE_PER_ZONE = 2
"""A managed node group's update first grows its Auto Scaling group by up to twice the number of
its zones (or by `maxUnavailable`, if larger: 1 for the system group) before it drains the old
nodes (EKS user guide, managed-node-update-behavior, "Scale up phase")."""

# The service-linked roles creating the cluster and its node groups acts through (IAM user guide,
# "AWS services that work with IAM"; EKS user guide, using-service-linked-roles-eks.adoc and
# using-service-linked-roles-eks-nodegroups.adoc).
SERVICE_LINKED_ROLES = {
    "AWSServiceRoleForAmazonEKS": "eks.amazonaws.com",
    "AWSServiceRoleForAmazonEKSNodegroup": "eks-nodegroup.amazonaws.com",
    "AWSServiceRoleForAutoScaling": "autoscaling.amazonaws.com",
}
SPOT_ROLE = ("AWSServiceRoleForEC2Spot", "spot.amazonaws.com")
# NAT gateways that hold an address and count against the quota (EC2 API reference,
# DescribeNatGateways: `pending`, `available`; `deleting` ones count until deleted).
_COUNTED_NAT_STATES = ("pending", "available", "deleting")


def new_vpc_zones(config: StackConfig, ec2: Any) -> list[str] | None:
    """The zones of the new VPC, chosen as the program chooses them
    (`gpu_platform.eks.new_cluster`); None where the cluster goes into existing subnets."""
    create = config.cluster.create
    assert create is not None
    if create.aws.subnet_ids:
        return None
    if create.aws.vpc is not None and create.aws.vpc.zones:
        return list(create.aws.vpc.zones)
    found = ec2.describe_availability_zones(
        Filters=[
            {"Name": "state", "Values": ["available"]},
            {"Name": "opt-in-status", "Values": ["opt-in-not-required"]},
        ]
    )["AvailabilityZones"]
    names = [z["ZoneName"] for z in found if z["ZoneId"] not in EKS_UNSUPPORTED_ZONE_IDS]
    return sorted(names)[:NEW_VPC_ZONES]


def creation_findings(config: StackConfig, clients: Any) -> list[Finding]:
    """What creating the stack's cluster needs; `clients` as `checks.AwsClients`."""
    create = config.cluster.create
    assert create is not None
    # A cluster created with EKS Auto Mode on has neither a system node group nor add-ons
    # (gpu_platform/eks/new_cluster/auto_mode.py).
    auto_mode = config.uses_auto_mode
    findings = [_cluster_quota_finding(clients)]
    if not auto_mode:
        findings.append(_system_nodes_quota_finding(create, clients))
    if not create.aws.subnet_ids:
        findings += _network_findings(config, clients)
    findings += _service_linked_role_findings(config, clients.iam)
    findings.append(_boundary_finding(clients.iam))
    if not auto_mode:
        findings += addon_version_findings(create.kubernetes_version, clients.eks)
    findings.append(support_finding(create, clients.eks))
    findings.append(_endpoint_finding(create, config.cluster.name))
    return findings


def support_finding(create: ClusterCreate, eks: Any) -> Finding:
    """The Kubernetes version's support status in EKS. A minor has 14 months of standard
    support, then 12 of extended support billed at the extended rate (EKS user guide,
    kubernetes-versions.adoc), which a cluster cannot leave once in it
    (disable-extended-support.adoc)."""
    version = create.kubernetes_version
    key = key_path("cluster", "create", "kubernetesVersion")
    subject = f"Kubernetes {version} on EKS"
    listed = eks.describe_cluster_versions(clusterVersions=[version], includeAll=True)
    status = {v["clusterVersion"]: v for v in listed.get("clusterVersions", [])}.get(version)
    if status is None or status.get("versionStatus") == "UNSUPPORTED":
        return Finding(
            "blocking",
            subject,
            f"EKS does not offer Kubernetes {version} for new clusters in this region.",
            f"Choose another {key}.",
        )
    standard_end = status.get("endOfStandardSupportDate")
    until = f" (standard support ends {standard_end:%Y-%m-%d})" if standard_end else ""
    if status.get("versionStatus") == "STANDARD_SUPPORT":
        return Finding(
            "ok", subject, f"Kubernetes {version} is in standard support{until}.", "Nothing."
        )
    if create.aws.support_type == "EXTENDED":
        return Finding(
            "warning",
            subject,
            f"Kubernetes {version} is in extended support only: the cluster is billed at the"
            " extended support rate from its first hour.",
            f"Choose a {key} in standard support to pay the standard rate.",
        )
    return Finding(
        "blocking",
        subject,
        f"Kubernetes {version} is past standard support, and the stack asks for standard"
        f" support only ({key_path('cluster', 'create', 'aws', 'supportType')}: STANDARD).",
        f"Choose a {key} in standard support, or set"
        f" {key_path('cluster', 'create', 'aws', 'supportType')}: EXTENDED and pay the extended"
        " support rate.",
    )


def _endpoint_finding(create: ClusterCreate, name: str) -> Finding:
    """EKS's private endpoint answers only inside the VPC and the networks connected to it,
    and there only those its security groups admit (EKS user guide, cluster-endpoint.adoc:
    "You must ensure that your Amazon EKS control plane security group contains rules to allow
    ingress traffic on port 443")."""
    subject = f"endpoint of cluster {name}"
    aws = create.aws
    cidrs_key = key_path("cluster", "create", "aws", "privateEndpointCidrs")
    groups_key = key_path("cluster", "create", "aws", "privateEndpointSecurityGroupIds")
    access_key = key_path("cluster", "create", "endpoint", "access")
    public_cidrs_key = key_path("cluster", "create", "endpoint", "publicCidrs")
    if create.endpoint.access == "private" and not aws.subnet_ids:
        return Finding(
            "blocking",
            subject,
            "The API endpoint is private, in a VPC the same `pulumi up` creates: nothing reaches"
            " it from outside yet, and that run installs the GPU Operator and monitoring through"
            " it.",
            f"Set {access_key}: public with your egress range in {public_cidrs_key} for the first"
            " `pulumi up`; once a runner, VPN or peering reaches the VPC, name it in"
            f" {cidrs_key} or {groups_key} and set {access_key}: private (docs/create-cluster.md).",
        )
    sources = ", ".join([*aws.private_endpoint_cidrs, *aws.private_endpoint_security_group_ids])
    return endpoint_finding(
        create.endpoint,
        subject,
        api="The API endpoint",
        also_answers=f"and privately {sources}" if sources else "and privately only its nodes",
        private="The API endpoint is private: after creating the cluster, `pulumi up` installs"
        f" the GPU Operator and monitoring through it, which answers only {sources} ({cidrs_key},"
        f" {groups_key}), in the VPC or a network connected to it.",
        fix="Run `pulumi up` from an address in those ranges, or an instance in those groups.",
    )


def _cluster_quota_finding(clients: Any) -> Finding:
    used = len(_paginated(clients.eks, "list_clusters", "clusters"))
    return _quota_finding(CLUSTERS, 1, used, clients, "an EKS cluster")


def _system_nodes_quota_finding(create: ClusterCreate, clients: Any) -> Finding:
    """The system node group at its `max`, on its largest instance type, beside the region's
    running on-demand Standard instances; and the nodes an update of the group adds for a while
    (`UPDATE_SURGE_PER_ZONE`), which it cannot start beyond the quota."""
    nodes = create.aws.system_nodes
    filters = [{"Name": "instance-state-name", "Values": ["pending", "running"]}]
    reservations = _paginated(clients.ec2, "describe_instances", "Reservations", Filters=filters)
    running = [
        instance["InstanceType"]
        for reservation in reservations
        for instance in reservation["Instances"]
        # Spot instances count against the Spot quotas.
        if "InstanceLifecycle" not in instance
        and STANDARD_INSTANCE_TYPE.match(instance["InstanceType"])
    ]
    vcpus = _vcpus(clients.ec2, [*nodes.instance_types, *running])
    per_node = max(vcpus.get(name, 0) for name in nodes.instance_types)
    zones = NEW_VPC_ZONES
    if create.aws.subnet_ids:
        described = clients.ec2.describe_subnets(SubnetIds=list(create.aws.subnet_ids))
        zones = len({subnet["AvailabilityZone"] for subnet in described["Subnets"]})
    surge = UPDATE_SURGE_PER_ZONE * zones
    return _quota_finding(
        STANDARD_VCPUS,
        nodes.max * per_node,
        sum(vcpus.get(name, 0) for name in running),
        clients,
        f"the system node group at its max ({nodes.max} nodes of {per_node} vCPUs,"
        f" {key_path('cluster', 'create', 'aws', 'systemNodes')})",
        during_updates=(
            surge * per_node,
            f"the up to {surge} nodes (twice its {zones} zones) an update of the group starts"
            " before it drains the old ones: node image and Kubernetes version updates stall",
        ),
    )


def _vcpus(ec2: Any, names: Sequence[str]) -> dict[str, int]:
    """Each instance type's default vCPUs, as EC2 describes it."""
    described = _paginated(
        ec2, "describe_instance_types", "InstanceTypes", InstanceTypes=sorted(set(names))
    )
    return {t["InstanceType"]: t["VCpuInfo"]["DefaultVCpus"] for t in described}


def _network_findings(config: StackConfig, clients: Any) -> list[Finding]:
    create = config.cluster.create
    assert create is not None
    zones = NEW_VPC_ZONES if nat_per_zone(create.aws.vpc or EksNewVpc(), config.protect) else 1
    ec2 = clients.ec2
    vpcs = len(_paginated(ec2, "describe_vpcs", "Vpcs"))
    gateways = len(_paginated(ec2, "describe_internet_gateways", "InternetGateways"))
    addresses = len(
        ec2.describe_addresses(Filters=[{"Name": "domain", "Values": ["vpc"]}])["Addresses"]
    )
    nats = _paginated(
        ec2,
        "describe_nat_gateways",
        "NatGateways",
        Filters=[{"Name": "state", "Values": list(_COUNTED_NAT_STATES)}],
    )
    busiest_zone = max(_per_zone(ec2, nats).values(), default=0)
    return [
        _quota_finding(VPCS, 1, vpcs, clients, "the new VPC"),
        _quota_finding(INTERNET_GATEWAYS, 1, gateways, clients, "its internet gateway"),
        _quota_finding(ELASTIC_IPS, zones, addresses, clients, f"{zones} NAT gateway address(es)"),
        _quota_finding(
            NAT_GATEWAYS_PER_ZONE,
            1,
            busiest_zone,
            clients,
            "a NAT gateway in a zone (the busiest zone of the region counted)",
        ),
    ]


def _per_zone(ec2: Any, nats: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    subnet_ids = sorted({nat["SubnetId"] for nat in nats})
    if not subnet_ids:
        return {}
    zones = {
        s["SubnetId"]: s["AvailabilityZone"]
        for s in ec2.describe_subnets(SubnetIds=subnet_ids)["Subnets"]
    }
    counts: dict[str, int] = {}
    for nat in nats:
        zone = zones.get(nat["SubnetId"], "?")
        counts[zone] = counts.get(zone, 0) + 1
    return counts


def _quota_finding(
    quota: RegionalQuota,
    needed: int,
    used: int,
    clients: Any,
    what: str,
    during_updates: tuple[int, str] | None = None,
) -> Finding:
    """Blocking where what the creation needs does not fit; a warning where it fits but
    `during_updates` (more for a while, and what then fails) does not."""
    value = _quota_value(clients.service_quotas, quota)
    subject = f"quota {quota.code}"
    region = clients.service_quotas.meta.region_name
    if used + needed > value:
        return Finding(
            "blocking",
            subject,
            f"{quota.name}: {value:g}, of which {used} are used; creating the cluster needs"
            f" {needed} more for {what}.",
            f"Free some, or ask for {used + needed}: aws service-quotas"
            f" request-service-quota-increase --service-code {quota.service} --quota-code"
            f" {quota.code} --desired-value {used + needed} --region {region}",
        )
    if during_updates is not None and used + needed + during_updates[0] > value:
        more, consequence = during_updates
        return Finding(
            "warning",
            subject,
            f"{quota.name}: {value:g}, {used} used, room for the {needed} {what} needs, but not"
            f" for {more} more for {consequence}.",
            f"Ask for {used + needed + more}: aws service-quotas request-service-quota-increase"
            f" --service-code {quota.service} --quota-code {quota.code} --desired-value"
            f" {used + needed + more} --region {region}",
        )
    return Finding(
        "ok",
        subject,
        f"{quota.name}: {value:g}, {used} used, room for the {needed} {what} needs.",
        "Nothing.",
    )


def _quota_value(service_quotas: Any, quota: RegionalQuota) -> float:
    """The account's applied quota, or AWS's default where the account never changed it."""
    try:
        answer = service_quotas.get_service_quota(ServiceCode=quota.service, QuotaCode=quota.code)
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") != "NoSuchResourceException":
            raise
        answer = service_quotas.get_aws_default_service_quota(
            ServiceCode=quota.service, QuotaCode=quota.code
        )
    return float(answer["Quota"]["Value"])


def _service_linked_role_findings(config: StackConfig, iam: Any) -> list[Finding]:
    roles = dict(SERVICE_LINKED_ROLES)
    if any(pool.capacity == "spot" for pool in config.pools):
        roles[SPOT_ROLE[0]] = SPOT_ROLE[1]
    findings = []
    for role, service in roles.items():
        subject = f"role {role}"
        try:
            iam.get_role(RoleName=role)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "NoSuchEntity":
                raise
            findings.append(
                Finding(
                    "warning",
                    subject,
                    f"The service-linked role {role} does not exist yet; AWS creates it on first"
                    " use only where the deployer may (iam:CreateServiceLinkedRole).",
                    f"Create it once: aws iam create-service-linked-role --aws-service-name"
                    f" {service}",
                )
            )
            continue
        findings.append(
            Finding("ok", subject, f"The service-linked role {role} exists.", "Nothing.")
        )
    return findings


def _boundary_finding(iam: Any) -> Finding:
    subject = f"policy {PERMISSIONS_BOUNDARY}"
    local = _paginated(iam, "list_policies", "Policies", Scope="Local")
    if any(policy["PolicyName"] == PERMISSIONS_BOUNDARY for policy in local):
        return Finding(
            "ok", subject, f"The permissions boundary {PERMISSIONS_BOUNDARY} exists.", "Nothing."
        )
    return Finding(
        "blocking",
        subject,
        f"No policy {PERMISSIONS_BOUNDARY}: every node and controller role the stack creates"
        " carries it as its permissions boundary, and IAM refuses a role whose boundary does not"
        " exist.",
        f"Create it once: aws iam create-policy --policy-name {PERMISSIONS_BOUNDARY}"
        " --policy-document file://docs/iam/eks-permissions-boundary.json",
    )


def addon_version_findings(kubernetes_version: str, eks: Any) -> list[Finding]:
    """Each pinned core add-on version against the versions EKS lists for the minor."""
    pinned = addon_versions()[kubernetes_version]
    findings = []
    for addon in CORE_ADDONS:
        subject = f"add-on {addon}"
        listed = _listed_versions(eks, addon, kubernetes_version)
        version = pinned[addon]
        if version in listed:
            findings.append(
                Finding(
                    "ok",
                    subject,
                    f"{version}, pinned, is offered for Kubernetes {kubernetes_version}.",
                    "Nothing.",
                )
            )
            continue
        newest = max(listed, key=version_key) if listed else None
        findings.append(
            Finding(
                "blocking",
                subject,
                f"EKS does not offer {addon} {version}, the platform's pin, for Kubernetes"
                f" {kubernetes_version} in this region"
                + (f" (its newest is {newest})." if newest else " (it lists none)."),
                "Re-derive the pins (gpu_platform/eks/new_cluster/derive.py) from `aws eks"
                f" describe-addon-versions --kubernetes-version {kubernetes_version}`, or choose"
                f" another {key_path('cluster', 'create', 'kubernetesVersion')}.",
            )
        )
    return findings


def _listed_versions(eks: Any, addon: str, kubernetes_version: str) -> list[str]:
    answers = _paginated(
        eks,
        "describe_addon_versions",
        "addons",
        addonName=addon,
        kubernetesVersion=kubernetes_version,
    )
    return [
        version["addonVersion"]
        for found in answers
        if found.get("addonName") == addon
        for version in found.get("addonVersions", [])
    ]


def _paginated(client: Any, operation: str, key: str, **kwargs: Any) -> list[Any]:
    items: list[Any] = []
    for page in client.get_paginator(operation).paginate(**kwargs):
        items += page.get(key, [])
    return items
