"""Pre-flight check of an EKS stack against the AWS account, before `pulumi up`.

Read-only AWS calls (credentials from the usual AWS environment or profile) answer what would
otherwise surface half-way through a deployment or, worse, as a GPU pool that never scales up:

- the cluster exists, is ACTIVE and runs a Kubernetes version the platform supports, and has
  the EKS Pod Identity Agent add-on the cluster autoscaler gets its credentials through;
- every pool's instance types are offered in the zones its nodes go to, and have EFA where the
  pool asks for it;
- the node subnets reach the internet, or have a VPC endpoint for every AWS API the nodes and
  the cluster autoscaler call (`gpu_platform_cli.reachability`);
- raising or lowering a pool's bounds past its running node group's size, which moves it;
- each Capacity Block pool against its reservation;
- the account's EC2 vCPU quotas for G/VT and P instances, on-demand and spot, cover every pool
  of that quota at its `max` together, beside the GPU instances running outside the stack;
- and, from the chart repository's index rather than AWS, that the GPU Operator chart version
  exists.

Each finding says what to do. Exits 1 if any finding blocks the deployment, 2 for a bad stack,
4 when it cannot check (no credentials, no way to AWS, a permission missing).
"""

import re
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import boto3
import typer
import yaml
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectTimeoutError,
    CredentialRetrievalError,
    EndpointConnectionError,
    NoCredentialsError,
    PartialCredentialsError,
    ReadTimeoutError,
)
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from components.config import (
    CONFIG_NAMESPACE,
    Cloud,
    ConfigError,
    GpuPoolSpec,
    StackConfig,
    key_path,
    load_stack_config,
)
from components.eks.node_group_names import is_node_group_of, zone_of, zone_share
from components.versions import GPU_OPERATOR_CHART, SUPPORTED_KUBERNETES_VERSIONS
from gpu_platform_cli.cli import fail, plain_console
from gpu_platform_cli.findings import Finding
from gpu_platform_cli.offline import StackFileError, plain_config, stack_config
from gpu_platform_cli.reachability import reachability_findings

EXIT_BLOCKED = 1
EXIT_BAD_STACK = 2
CHART_INDEX_TIMEOUT_SECONDS = 60
# NVIDIA's index lists every chart of its registry: parsed in C where PyYAML has it.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
EXIT_CANNOT_CHECK = 4
"""No usable credentials, no way to AWS, or a permission the check needs is missing."""

READ_ONLY_PERMISSIONS = (
    "eks:DescribeCluster",
    "eks:DescribeAddon",
    "eks:ListNodegroups",
    "eks:DescribeNodegroup",
    "ec2:DescribeSubnets",
    "ec2:DescribeInstanceTypeOfferings",
    "ec2:DescribeInstanceTypes",
    "ec2:DescribeCapacityReservations",
    "ec2:DescribeInstances",
    "ec2:DescribeRouteTables",
    "ec2:DescribeVpcEndpoints",
    "servicequotas:GetServiceQuota",
    "servicequotas:GetAWSDefaultServiceQuota",
)
"""Every AWS action the check calls; a test keeps it, and the README's list, equal to them."""
# What AWS answers for a caller it does not know, or does not let do something.
_REFUSALS = frozenset(
    {
        "AccessDenied",
        "AccessDeniedException",
        "UnauthorizedOperation",
        "UnrecognizedClientException",
        "InvalidClientTokenId",
        "ExpiredToken",
        "ExpiredTokenException",
        "AuthFailure",
    }
)

POD_IDENTITY_AGENT = "eks-pod-identity-agent"


@dataclass(frozen=True)
class Quota:
    """An EC2 vCPU quota in Service Quotas."""

    code: str
    name: str


# Service Quotas codes of the EC2 vCPU quotas GPU instances count against.
QUOTAS: Mapping[tuple[str, str], Quota] = {
    ("G and VT", "on-demand"): Quota("L-DB2E81BA", "Running On-Demand G and VT instances"),
    ("P", "on-demand"): Quota("L-417A185B", "Running On-Demand P instances"),
    ("G and VT", "spot"): Quota("L-3819A6DF", "All G and VT Spot Instance Requests"),
    ("P", "spot"): Quota("L-7212CCBC", "All P Spot Instance Requests"),
}
_QUOTA_FAMILIES = (("G and VT", re.compile(r"^(g|gr|vt)\d")), ("P", re.compile(r"^p\d")))


@dataclass(frozen=True)
class AwsClients:
    """The read-only clients the check uses, all in the cluster's region."""

    eks: Any
    ec2: Any
    service_quotas: Any

    @classmethod
    def for_region(cls, region: str) -> "AwsClients":
        session = boto3.Session(region_name=region)
        return cls(session.client("eks"), session.client("ec2"), session.client("service-quotas"))


def run(stack: str) -> None:
    """Check an EKS stack against its AWS account: cluster, instance type offerings, quotas."""
    console = plain_console()
    try:
        config = load_stack_config(*_gpu_platform_config(stack_config(stack)))
    except (FileNotFoundError, StackFileError) as unreadable:
        fail(str(unreadable), EXIT_BAD_STACK)
    except ConfigError as error:
        fail(error.report(), EXIT_BAD_STACK)
    if config.cloud is not Cloud.AWS:
        fail(f"Stack {stack} is on {config.cloud}: pre-flight checks EKS stacks.", EXIT_BAD_STACK)
    assert config.cluster.region is not None  # config validation requires it on AWS
    try:
        findings = preflight(config, AwsClients.for_region(config.cluster.region))
        findings += chart_findings(config)
    except (BotoCoreError, ClientError) as error:
        fail(f"Cannot check stack {stack}: {why_it_cannot_check(error)}", EXIT_CANNOT_CHECK)
    print_findings(findings, console)
    if any(f.blocking for f in findings):
        raise typer.Exit(EXIT_BLOCKED)


def preflight(config: StackConfig, clients: AwsClients) -> list[Finding]:
    """Every finding for the stack, in the order: cluster, pools' zones, what the node subnets
    reach, live node group sizes, Capacity Blocks, quotas."""
    cluster, findings = _cluster_findings(config, clients)
    subnets = node_subnets(config, clients.ec2, cluster)
    described = describe_instance_types(
        clients.ec2, sorted({name for pool in config.pools for name in pool.instance_types})
    )
    findings += _zone_findings(config, clients, subnets)
    findings += efa_findings(config, described)
    if subnets:
        findings += reachability_findings(config, clients.ec2, subnets)
    if cluster is not None:
        findings += size_change_findings(config, clients.eks)
    findings += capacity_block_findings(config, clients.ec2, datetime.now(UTC))
    findings += _quota_findings(config, clients, described)
    return findings


# --- Size changes on live node groups --------------------------------------------------------


def size_change_findings(config: StackConfig, eks: Any) -> list[Finding]:
    """Pools whose new bounds move their running node groups' sizes on the next update.

    The program sends a group's live desired size moved within its new bounds
    (`components.eks.live_scaling`): raising `min` above it starts nodes, lowering `max` below
    it removes running ones, jobs and all. A pool with a node group per zone shares its bounds
    out over the zones its groups run in."""
    names = _paginate(eks, "list_nodegroups", "nodegroups", clusterName=config.cluster.name)
    findings = []
    for i, pool in enumerate(config.pools):
        groups = sorted(n for n in names if is_node_group_of(pool.name, n))
        zonal = sorted((zone, n) for n in groups if (zone := zone_of(pool.name, n)))
        bounds = {n: (pool.min, pool.max, "") for n in groups}
        bounds |= {
            n: (
                zone_share(pool.min, len(zonal), k),
                zone_share(pool.max, len(zonal), k),
                f", {zone}'s share",
            )
            for k, (zone, n) in enumerate(zonal)
        }
        for name in groups:
            group = eks.describe_nodegroup(clusterName=config.cluster.name, nodegroupName=name)
            desired = group["nodegroup"]["scalingConfig"]["desiredSize"]
            finding = _size_change_finding(i, pool, name, desired, bounds[name])
            if finding is not None:
                findings.append(finding)
    return findings


def _size_change_finding(
    i: int, pool: GpuPoolSpec, group: str, desired: int, bounds: tuple[int, int, str]
) -> Finding | None:
    low, high, share = bounds
    if low <= desired <= high:
        return None
    if low > desired:
        return Finding(
            "warning",
            f"pool {pool.name}",
            f"{key_path('pools', i, 'min')} ({low}{share}) is above node group"
            f" {group}'s running size ({desired}): pulumi up starts {low - desired} more"
            " node(s), paid for while idle.",
            "Nothing to do if that is meant.",
        )
    return Finding(
        "warning",
        f"pool {pool.name}",
        f"{key_path('pools', i, 'max')} ({high}{share}) is below node group {group}'s"
        f" running size ({desired}): pulumi up removes {desired - high} running node(s), with"
        " the jobs on them.",
        "Update when the pool's jobs can be stopped, or keep max at the running size until"
        " they end.",
    )


def _paginate(client: Any, operation: str, key: str, **kwargs: Any) -> list[Any]:
    return [
        item for page in client.get_paginator(operation).paginate(**kwargs) for item in page[key]
    ]


# --- Capacity Blocks -------------------------------------------------------------------------


def capacity_block_findings(config: StackConfig, ec2: Any, now: datetime) -> list[Finding]:
    """Each capacity-block pool against its reservation: the block's zone, instance type and
    count, and its window (instances in a block are terminated when it ends)."""
    findings = []
    for i, pool in enumerate(config.pools):
        reservation_id = pool.aws.capacity_reservation_id
        if pool.capacity != "capacity-block" or reservation_id is None:
            continue
        found = ec2.describe_capacity_reservations(CapacityReservationIds=[reservation_id])
        (block,) = found["CapacityReservations"]
        findings.append(_capacity_block_finding(i, pool, block, now))
    return findings


def _capacity_block_finding(
    i: int, pool: GpuPoolSpec, block: Mapping[str, Any], now: datetime
) -> Finding:
    subject = f"pool {pool.name}"
    reservation = block["CapacityReservationId"]
    mismatches = [
        (key_path("pools", i, field), ours, theirs)
        for field, ours, theirs in (
            ("zones", pool.zones[:1], [block["AvailabilityZone"]]),
            ("instanceTypes", pool.instance_types, [block["InstanceType"]]),
        )
        if ours != theirs
    ]
    if mismatches:
        said = "; ".join(
            f"{key} is {ours}, the block's {theirs}" for key, ours, theirs in mismatches
        )
        return Finding(
            "blocking",
            subject,
            f"Capacity Block {reservation} does not match the pool: {said}.",
            "Set the pool's zones and instance type to the block's.",
        )
    if block["State"] in ("expired", "cancelled", "failed") or block["EndDate"] <= now:
        return Finding(
            "blocking",
            subject,
            f"Capacity Block {reservation} is {block['State']}"
            f" (it ends {block['EndDate']:%Y-%m-%d %H:%M} UTC).",
            "Buy a new block and set it in"
            f" {key_path('pools', i, 'aws', 'capacityReservationId')}.",
        )
    count = block["TotalInstanceCount"]
    if pool.max > count:
        return Finding(
            "blocking",
            subject,
            f"max ({pool.max}) is more than Capacity Block {reservation} holds ({count}).",
            f"Lower {key_path('pools', i, 'max')} to {count}.",
        )
    window = f"{block['StartDate']:%Y-%m-%d %H:%M} to {block['EndDate']:%Y-%m-%d %H:%M} UTC"
    if block["StartDate"] > now:
        return Finding(
            "warning",
            subject,
            f"Capacity Block {reservation} starts later ({window}): until then no node starts.",
            "Nothing, unless jobs are due before it starts.",
        )
    return Finding(
        "ok",
        subject,
        f"Capacity Block {reservation}: {count} x {block['InstanceType']} in"
        f" {block['AvailabilityZone']}, {window}; its instances end with it.",
        "Nothing; drain the pool before the block ends.",
    )


# --- The GPU Operator chart ------------------------------------------------------------------


def read_chart_index(repository: str) -> bytes:
    """The Helm repository's `index.yaml`, which Helm reads the chart's versions from."""
    url = f"{repository.rstrip('/')}/index.yaml"
    with urllib.request.urlopen(url, timeout=CHART_INDEX_TIMEOUT_SECONDS) as response:
        return bytes(response.read())


def chart_findings(config: StackConfig) -> list[Finding]:
    """Whether the repository serves the configured GPU Operator chart version: a version that
    does not exist is found by Helm only in the middle of `pulumi up`."""
    operator = config.operator
    chart = GPU_OPERATOR_CHART.name
    subject = f"chart {chart} {operator.chart_version}"
    where = f"{key_path('operator', 'chartVersion')} in {key_path('operator', 'repository')}"
    try:
        index = yaml.load(read_chart_index(operator.repository), Loader=_YAML_LOADER)
        entries = (index.get("entries") or {}).get(chart) or []
        versions = {str(entry.get("version")) for entry in entries}
    except (OSError, yaml.YAMLError, AttributeError) as error:  # URLError is an OSError
        return [
            Finding(
                "warning",
                subject,
                f"Could not read {operator.repository}/index.yaml: {error}.",
                f"Check that {where} exists before `pulumi up`.",
            )
        ]
    if operator.chart_version in versions:
        return [Finding("ok", subject, f"{operator.repository} serves it.", "")]
    return [
        Finding(
            "blocking",
            subject,
            f"{operator.repository} serves no {chart} {operator.chart_version}"
            f" ({len(versions)} other versions).",
            f"Set {key_path('operator', 'chartVersion')} to a version it serves, such as"
            f" {GPU_OPERATOR_CHART.version}, the one the platform's values are checked against.",
        )
    ]


def print_findings(findings: Sequence[Finding], console: Console) -> None:
    colours = {"blocking": "red", "warning": "yellow", "ok": "green"}
    table = Table(title="Pre-flight", title_justify="left")
    for column in ("", "subject", "finding", "what to do"):
        table.add_column(column)
    for f in findings:
        colour = colours[f.severity]
        table.add_row(
            f"[{colour}]{f.severity}[/{colour}]",
            escape(f.subject),
            escape(f.message),
            escape(f.action),
        )
    console.print(table)
    blocking = sum(f.blocking for f in findings)
    console.print(f"{blocking} blocking finding(s)." if blocking else "Nothing blocks `pulumi up`.")


# --- The cluster -----------------------------------------------------------------------------


def _cluster_findings(
    config: StackConfig, clients: AwsClients
) -> tuple[Mapping[str, Any] | None, list[Finding]]:
    name, region = config.cluster.name, config.cluster.region
    subject = f"cluster {name}"
    try:
        cluster = clients.eks.describe_cluster(name=name)["cluster"]
    except ClientError as error:
        if _error_code(error) != "ResourceNotFoundException":
            raise
        return None, [
            Finding(
                "blocking",
                subject,
                f"No EKS cluster {name} in {region}.",
                f"Check {key_path('cluster', 'name')} and {key_path('cluster', 'region')},"
                " or create the cluster first.",
            )
        ]
    findings = [_status_finding(subject, cluster)]
    if config.autoscaler.install:
        findings.append(_pod_identity_agent_finding(subject, name, clients))
    return cluster, findings


def _status_finding(subject: str, cluster: Mapping[str, Any]) -> Finding:
    status, version = cluster["status"], cluster["version"]
    if status != "ACTIVE":
        return Finding(
            "blocking",
            subject,
            f"The cluster is {status}, not ACTIVE.",
            "Wait until it is ACTIVE (aws eks wait cluster-active), or fix it if it FAILED.",
        )
    if version not in SUPPORTED_KUBERNETES_VERSIONS:
        return Finding(
            "blocking",
            subject,
            f"Kubernetes {version} is not one the platform supports"
            f" ({', '.join(SUPPORTED_KUBERNETES_VERSIONS)}).",
            "Upgrade the cluster to a supported version.",
        )
    return Finding("ok", subject, f"ACTIVE, Kubernetes {version}.", "Nothing.")


def _pod_identity_agent_finding(subject: str, name: str, clients: AwsClients) -> Finding:
    try:
        clients.eks.describe_addon(clusterName=name, addonName=POD_IDENTITY_AGENT)
    except ClientError as error:
        if _error_code(error) != "ResourceNotFoundException":
            raise
        return Finding(
            "blocking",
            subject,
            f"No {POD_IDENTITY_AGENT} add-on: the cluster autoscaler would get no AWS"
            " credentials and never scale a GPU pool up.",
            f"aws eks create-addon --cluster-name {name} --addon-name {POD_IDENTITY_AGENT}",
        )
    return Finding("ok", subject, f"The {POD_IDENTITY_AGENT} add-on is installed.", "Nothing.")


# --- Where the pools' instance types are offered ---------------------------------------------


def _zone_findings(
    config: StackConfig, clients: AwsClients, subnets: Sequence[Mapping[str, Any]] | None
) -> list[Finding]:
    subnet_zones = None if subnets is None else {s["AvailabilityZone"] for s in subnets}
    if subnet_zones == set():
        return [
            Finding(
                "blocking",
                f"cluster {config.cluster.name}",
                "Every subnet of the cluster assigns public IP addresses: no place for GPU nodes.",
                f"Name private subnets for them in {key_path('cluster', 'nodeSubnetIds')}.",
            )
        ]
    findings = []
    for i, pool in enumerate(config.pools):
        offered = _offered_zones(clients, pool.instance_types)
        wanted = set(pool.zones) or subnet_zones
        findings.append(_pool_zone_finding(i, pool, offered, wanted))
    return findings


def node_subnets(
    config: StackConfig, ec2: Any, cluster: Mapping[str, Any] | None
) -> list[dict[str, Any]] | None:
    """The subnets the node groups would use, as EC2 describes them; None if the cluster is
    unknown."""
    if config.cluster.node_subnet_ids:
        ids = config.cluster.node_subnet_ids
    elif cluster is not None:
        ids = cluster["resourcesVpcConfig"]["subnetIds"]
    else:
        return None
    subnets: list[dict[str, Any]] = ec2.describe_subnets(SubnetIds=list(ids))["Subnets"]
    if not config.cluster.node_subnet_ids:
        subnets = [s for s in subnets if not s.get("MapPublicIpOnLaunch")]
    return subnets


def _offered_zones(clients: AwsClients, instance_types: Sequence[str]) -> dict[str, set[str]]:
    zones: dict[str, set[str]] = {name: set() for name in instance_types}
    paginator = clients.ec2.get_paginator("describe_instance_type_offerings")
    for page in paginator.paginate(
        LocationType="availability-zone",
        Filters=[{"Name": "instance-type", "Values": list(instance_types)}],
    ):
        for offering in page["InstanceTypeOfferings"]:
            zones[offering["InstanceType"]].add(offering["Location"])
    return zones


def _pool_zone_finding(
    i: int, pool: GpuPoolSpec, offered: Mapping[str, set[str]], wanted: set[str] | None
) -> Finding:
    subject = f"pool {pool.name}"
    not_offered = [name for name, zones in offered.items() if not zones]
    if not_offered:
        return Finding(
            "blocking",
            subject,
            f"Not offered in this region at all: {', '.join(not_offered)}.",
            f"Choose instance types EC2 offers here in {key_path('pools', i, 'instanceTypes')}.",
        )
    if wanted is None:
        return Finding(
            "warning",
            subject,
            "Zones not checked: the cluster was not found.",
            "Fix the cluster finding and check again.",
        )
    usable = set.intersection(*offered.values()) & wanted
    where = "; ".join(
        f"{n} in {', '.join(sorted(z & wanted)) or 'none'}" for n, z in offered.items()
    )
    if not usable:
        field = "zones" if pool.zones else "instanceTypes"
        return Finding(
            "blocking",
            subject,
            f"No zone of {', '.join(sorted(wanted))} offers every instance type: {where}.",
            f"Change {key_path('pools', i, field)} so that one zone offers them all.",
        )
    skipped = sorted(wanted - usable)
    if skipped:
        return Finding(
            "warning",
            subject,
            f"Nodes can only launch in {', '.join(sorted(usable))}; {', '.join(skipped)} lack"
            f" some instance type ({where}).",
            "Nothing, unless the pool needs those zones: then choose instance types they offer.",
        )
    return Finding(
        "ok", subject, f"Every instance type is offered in {', '.join(sorted(usable))}.", "Nothing."
    )


# --- EFA pools -------------------------------------------------------------------------------


def efa_findings(config: StackConfig, described: Mapping[str, Mapping[str, Any]]) -> list[Finding]:
    """Each EFA pool's instance types against EC2's own description of their EFA support
    (`described`, from `describe_instance_types`; a type EC2 does not know is the zone
    check's to report)."""
    findings = []
    for i, pool in enumerate(config.pools):
        if not pool.aws.efa:
            continue
        interfaces = {}
        for name in (n for n in pool.instance_types if n in described):
            network = described[name].get("NetworkInfo", {})
            efa = network.get("EfaInfo", {}) if network.get("EfaSupported") else {}
            interfaces[name] = efa.get("MaximumEfaInterfaces", 0)
        findings.append(_efa_finding(i, pool, interfaces))
    return findings


def _efa_finding(i: int, pool: GpuPoolSpec, interfaces: Mapping[str, int]) -> Finding:
    subject = f"pool {pool.name}"
    without = sorted(name for name, count in interfaces.items() if not count)
    if without:
        return Finding(
            "blocking",
            subject,
            f"aws.efa is on, but EC2 gives {', '.join(without)} no EFA.",
            f"Choose instance types with EFA in {key_path('pools', i, 'instanceTypes')}, or turn"
            " aws.efa off.",
        )
    fewest = min(interfaces.values(), default=0)
    return Finding(
        "ok",
        subject,
        f"{fewest} EFA interface(s) a node, in one zone ({', '.join(pool.zones)}) and a cluster"
        " placement group, which may not find every node at once when capacity is short: a"
        " capacity reservation or Capacity Block secures them.",
        "Nothing.",
    )


# --- vCPU quotas -----------------------------------------------------------------------------


def quota_family(instance_type: str) -> str | None:
    """`G and VT`, `P`, or None for instance types outside the GPU vCPU quotas."""
    for family, pattern in _QUOTA_FAMILIES:
        if pattern.match(instance_type):
            return family
    return None


def _quota_findings(
    config: StackConfig, clients: AwsClients, described: Mapping[str, Mapping[str, Any]]
) -> list[Finding]:
    vcpus = _vcpus(described)
    needs: dict[Quota, list[tuple[GpuPoolSpec, int]]] = {}
    for pool in config.pools:
        if pool.capacity == "capacity-block":
            continue  # its block's size, checked above, limits it
        largest = max(pool.instance_types, key=lambda n: vcpus.get(n, 0))
        family = quota_family(largest)
        if family is None or largest not in vcpus:
            continue
        quota = QUOTAS[(family, pool.capacity)]
        needs.setdefault(quota, []).append((pool, vcpus[largest]))
    in_use = _vcpus_in_use_elsewhere(config, clients, described) if needs else {}
    return [
        _quota_finding(quota, pools, in_use.get(quota, 0), clients)
        for quota, pools in needs.items()
    ]


def _vcpus_in_use_elsewhere(
    config: StackConfig, clients: AwsClients, described: Mapping[str, Mapping[str, Any]]
) -> dict[Quota, int]:
    """The vCPUs of the region's pending and running GPU instances, per quota, but for the nodes
    of the stack's own node groups, which count within their pool's `max`. EKS tags a managed
    node group's instances with `eks:cluster-name` and `eks:nodegroup-name`."""
    instances = [
        instance
        for page in clients.ec2.get_paginator("describe_instances").paginate(
            Filters=[{"Name": "instance-state-name", "Values": ["pending", "running"]}]
        )
        for reservation in page["Reservations"]
        for instance in reservation["Instances"]
    ]
    counted = [
        (instance["InstanceType"], family, capacity)
        for instance in instances
        if (family := quota_family(instance["InstanceType"])) is not None
        # Spot requests and on-demand instances have quotas of their own; Capacity Blocks and
        # other reserved launches count against none of them.
        and (capacity := _QUOTA_LIFECYCLES.get(instance.get("InstanceLifecycle"))) is not None
        and not _is_stack_node(config, instance)
    ]
    others = sorted({name for name, _, _ in counted} - set(described))
    vcpus = _vcpus({**described, **describe_instance_types(clients.ec2, others)})
    in_use: dict[Quota, int] = {}
    for name, family, capacity in counted:
        quota = QUOTAS[(family, capacity)]
        in_use[quota] = in_use.get(quota, 0) + vcpus.get(name, 0)
    return in_use


# `InstanceLifecycle` as DescribeInstances gives it (absent for on-demand) -> the pool capacity
# whose quota the instance counts against.
_QUOTA_LIFECYCLES: Mapping[str | None, str] = {None: "on-demand", "spot": "spot"}


def _is_stack_node(config: StackConfig, instance: Mapping[str, Any]) -> bool:
    tags = {tag["Key"]: tag["Value"] for tag in instance.get("Tags", [])}
    group = tags.get("eks:nodegroup-name", "")
    return tags.get("eks:cluster-name") == config.cluster.name and any(
        is_node_group_of(pool.name, group) for pool in config.pools
    )


def describe_instance_types(ec2: Any, names: Sequence[str]) -> dict[str, dict[str, Any]]:
    """EC2's description of each instance type it knows among `names`."""
    described = {}
    for name in names:
        # One at a time: EC2 refuses the whole request if one type in it does not exist.
        try:
            found = ec2.describe_instance_types(InstanceTypes=[name])
        except ClientError as error:
            if _error_code(error) != "InvalidInstanceType":
                raise
            continue
        for instance in found["InstanceTypes"]:
            described[instance["InstanceType"]] = instance
    return described


def _vcpus(described: Mapping[str, Mapping[str, Any]]) -> dict[str, int]:
    return {name: int(d["VCpuInfo"]["DefaultVCpus"]) for name, d in described.items()}


def _quota_finding(
    quota: Quota, pools: Sequence[tuple[GpuPoolSpec, int]], in_use: int, clients: AwsClients
) -> Finding:
    needed = sum(pool.max * vcpus for pool, vcpus in pools)
    value = _quota_value(clients, quota)
    subject = f"quota {quota.code}"
    used_by = ", ".join(f"{pool.name} {pool.max} x {vcpus} vCPUs" for pool, vcpus in pools)
    others = f", and other instances use {in_use} now" if in_use else ""
    if needed + in_use > value:
        return Finding(
            "blocking",
            subject,
            f"{quota.name}: {value:g} vCPUs, but the pools need {needed} at their max"
            f" ({used_by}){others}.",
            "Request an increase to at least"
            f" {needed + in_use}: aws service-quotas request-service-quota-increase"
            f" --service-code ec2 --quota-code {quota.code} --desired-value {needed + in_use}"
            f" --region {clients.service_quotas.meta.region_name}",
        )
    return Finding(
        "ok",
        subject,
        f"{quota.name}: {value:g} vCPUs cover the {needed} the pools need at their max"
        f" ({used_by}){others or ', with no other instance using them now'}.",
        "Nothing.",
    )


def _quota_value(clients: AwsClients, quota: Quota) -> float:
    """The account's applied quota, or AWS's default where the account has never changed it."""
    try:
        answer = clients.service_quotas.get_service_quota(ServiceCode="ec2", QuotaCode=quota.code)
    except ClientError as error:
        if _error_code(error) != "NoSuchResourceException":
            raise
        answer = clients.service_quotas.get_aws_default_service_quota(
            ServiceCode="ec2", QuotaCode=quota.code
        )
    return float(answer["Quota"]["Value"])


def why_it_cannot_check(error: BotoCoreError | ClientError) -> str:
    """What stopped the check, and what to do about it."""
    if isinstance(error, NoCredentialsError | PartialCredentialsError | CredentialRetrievalError):
        return (
            f"no usable AWS credentials ({error}). Set AWS_PROFILE (after `aws sso login` where"
            " the profile uses SSO), or the AWS_ACCESS_KEY_ID family, and run it again."
        )
    if isinstance(error, EndpointConnectionError | ConnectTimeoutError | ReadTimeoutError):
        return (
            f"AWS could not be reached ({error}). Check the network and any proxy"
            " (HTTPS_PROXY), then run it again."
        )
    if isinstance(error, ClientError):
        operation = error.operation_name
        message = error.response.get("Error", {}).get("Message", "")
        code = _error_code(error)
        if code in _REFUSALS:
            return (
                f"AWS refused {operation} ({code}: {message}). The check needs, read-only: "
                + ", ".join(READ_ONLY_PERMISSIONS)
                + "."
            )
        return f"AWS answered {operation} with {code}: {message}. Run it again later."
    return f"{error}. Run it again later."


def _error_code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def _gpu_platform_config(values: Mapping[str, Any]) -> tuple[dict[str, Any], frozenset[str]]:
    """The stack file's `gpu-platform:` keys without the prefix, secure values replaced, and
    those of them set as secrets."""
    plain, secret_keys = plain_config(values)
    prefix = CONFIG_NAMESPACE + ":"
    return (
        {k.removeprefix(prefix): v for k, v in plain.items() if k.startswith(prefix)},
        frozenset(k.removeprefix(prefix) for k in secret_keys if k.startswith(prefix)),
    )
