"""The EKS side of `gpu-platform preflight`: an EKS stack against its AWS account.

Read-only AWS calls (credentials from the usual AWS environment or profile) check that:
- the cluster exists, is ACTIVE and runs a Kubernetes version the platform supports, and has
  the EKS Pod Identity Agent add-on the cluster autoscaler, Karpenter and the VPC CNI get their
  credentials through;
- every pool's instance types are offered in the zones its nodes go to, and have EFA where the
  pool asks for it, and the `vpc-cni` add-on ignores the EFA-only interfaces of such nodes
  (`gpu_platform.eks.preflight.vpc_cni`);
- the `vpc-cni` add-on's network policy agent is on where the platform's NetworkPolicies keep
  tenants from the Prometheus stack it installs (`gpu_platform.eks.preflight.vpc_cni`);
- which subnets the GPU nodes use, private by their route tables, and why the others are left
  out (`gpu_platform.eks.subnets`);
- the node subnets reach the internet, or have a VPC endpoint for every AWS API the nodes and
  the cluster autoscaler call (`gpu_platform.eks.preflight.reachability`);
- raising or lowering a pool's bounds past its running node group's size, which moves it;
- each reserved or Capacity Block pool against its reservations;
- the account's EC2 vCPU quotas for G/VT and P instances, on-demand and spot, cover every pool
  of that quota at its `max` together, beside the GPU instances running outside the stack;
- where the stack installs no cluster autoscaler, the one the cluster runs, from its Deployment
  through the cluster's Kubernetes API (`gpu_platform.eks.preflight.running_autoscaler`):
  a release that keeps empty nodes at a threshold of 0, or made for another Kubernetes minor, is
  a warning; and its flags and priority ConfigMap against what the GPU pools rely on
  (`gpu_platform.eks.preflight.autoscaler_settings`);
- under Karpenter, the cluster's authentication mode, the Spot service-linked role and
  Karpenter's CRDs in the cluster (`gpu_platform.eks.preflight.karpenter`);
- the GPU pods Kueue will not manage in a tenant namespace whose queue the next `up` turns on,
  and the unfinished Workloads of one whose queue it turns off, through the cluster's Kubernetes
  API (`gpu_platform.preflight.queue_changes`).
"""

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache, partial
from typing import Any, TypeVar

import boto3
import requests
from botocore.config import Config
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
from botocore.retries.standard import RetryEventAdapter, ThrottlingErrorDetector

from gpu_platform.config import (
    DRIFT_BUDGET_PERCENT,
    EC2_RESERVED_CAPACITIES,
    GpuPoolSpec,
    StackConfig,
    key_path,
)
from gpu_platform.deadline import MAX_ATTEMPTS, Call, Calls, Deadline, DeadlinePassed
from gpu_platform.eks.instance_types import (
    different_efa_counts,
    pool_instance_type_names,
    pool_sizes,
    sizes_key,
)
from gpu_platform.eks.karpenter.labels import NODE_POOL_LABEL, stack_mark
from gpu_platform.eks.node_group_names import is_node_group_of, zone_of, zone_share
from gpu_platform.eks.preflight.arm64_repair import arm64_repair_findings
from gpu_platform.eks.preflight.auto_mode import (
    auto_mode_finding,
    network_policy_controller_finding,
    open_reservation_finding,
)
from gpu_platform.eks.preflight.autoscaler_settings import autoscaler_settings_findings
from gpu_platform.eks.preflight.create import (
    CREATE_PERMISSIONS,
    creation_findings,
    new_vpc_zones,
)
from gpu_platform.eks.preflight.karpenter import (
    CustomResourceDefinitions,
    NodeClasses,
    NodePools,
    eks_auto_mode_node_classes,
    eks_crds,
    eks_node_classes,
    eks_node_pools,
    karpenter_findings,
    node_class_clash_finding,
)
from gpu_platform.eks.preflight.node_repair_threshold import leftover_threshold_finding
from gpu_platform.eks.preflight.reachability import reachability_findings
from gpu_platform.eks.preflight.running_autoscaler import (
    ConfigMaps,
    Deployments,
    autoscaler_containers,
    eks_config_maps,
    eks_deployments,
    eks_get,
    image_tag,
    running_autoscaler_finding,
)
from gpu_platform.eks.preflight.vpc_cni import network_policy_findings, vpc_cni_findings
from gpu_platform.eks.subnets import Route, RouteTable, SubnetRouting, routing_of
from gpu_platform.preflight.cannot_check import CannotCheck
from gpu_platform.preflight.findings import Finding
from gpu_platform.preflight.queue_changes import KubeGet, queue_change_findings
from gpu_platform.project import Project
from gpu_platform.versions import SUPPORTED_KUBERNETES_VERSIONS

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
    "resource-groups:ListGroupResources",
    "iam:GetRole",
    "eks:ListPodIdentityAssociations",
    "eks:DescribePodIdentityAssociation",
    "iam:SimulatePrincipalPolicy",
    "eks:DescribeAccessEntry",
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
        # AWS Resource Groups' own (its API reference, "Errors": "Check permissions").
        "ForbiddenException",
    }
)

_T = TypeVar("_T")
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
    resource_groups: Any
    deployments: Callable[[Mapping[str, Any]], Deployments] | None = None
    """The Deployments of a cluster (as DescribeCluster returns it), through its Kubernetes API;
    None leaves the running autoscaler unchecked."""
    iam: Any = None
    """IAM, global: read only by Karpenter stacks (`gpu_platform.eks.preflight.karpenter`) and
    stacks that create their cluster (`create`)."""
    crds: Callable[[Mapping[str, Any]], CustomResourceDefinitions] | None = None
    """The CRDs of a cluster (as DescribeCluster returns it), through its Kubernetes API; None
    leaves Karpenter's unchecked."""
    config_maps: Callable[[Mapping[str, Any]], ConfigMaps] | None = None
    """The ConfigMaps of a cluster, likewise; None leaves the running autoscaler's priorities
    and flags unchecked."""
    node_pools: Callable[[Mapping[str, Any]], NodePools] | None = None
    """The NodePools of a cluster, through its Kubernetes API; None leaves them unchecked."""
    node_classes: Callable[[Mapping[str, Any]], NodeClasses] | None = None
    """The EC2NodeClasses of a cluster, likewise; None leaves the EFA pools' unchecked."""
    kube: Callable[[Mapping[str, Any]], KubeGet] | None = None
    """GETs of a cluster's Kubernetes API, for the tenant namespaces' pods and Workloads
    (`gpu_platform.preflight.queue_changes`); None leaves them unchecked."""
    auto_mode_node_classes: Callable[[Mapping[str, Any]], NodeClasses] | None = None
    """The EKS Auto Mode NodeClasses of a cluster, likewise; None leaves their names
    unchecked."""

    @classmethod
    def for_region(
        cls, region: str, deadline: Deadline, calls: Calls, with_iam: bool = False
    ) -> "AwsClients":
        """Clients that give up on a connection or a read within the deadline's timeouts, and
        retry in botocore's `standard` mode, which AWS recommends for throttled APIs: it backs
        off exponentially, more for throttling than for other errors (ThrottlingException,
        EC2's RequestLimitExceeded and the rest of `ThrottledRetryableChecker`, a 429, an
        error the service models as throttling), longer by up to 5 s where an answer's
        `x-amz-retry-after` header asks, and retries transient errors and timeouts too
        (botocore/retries/standard.py). Credentials are looked for first, as a step of their
        own. Each attempt is reported to `calls`."""
        session = boto3.Session(region_name=region)
        # Registered on the session, the handlers reach every client made from it, the ones
        # botocore makes itself to fetch credentials (STS, SSO) included.
        session.events.register("before-send", partial(_sent, calls))
        session.events.register("needs-retry", partial(_answered, calls))
        _look_for_credentials(session, calls)
        # Each client loads its API's model and endpoint rules from disk: seconds on a busy
        # machine, which are not the credentials' nor the network's.
        calls.step("loading the AWS clients' API models", local=True)
        config = Config(
            connect_timeout=deadline.connect_timeout,
            read_timeout=deadline.read_timeout,
            # `total_max_attempts` counts the first attempt; `max_attempts` here would count
            # retries only, one attempt more (botocore/config.py, Config's `retries`).
            retries={"mode": "standard", "total_max_attempts": MAX_ATTEMPTS},
        )
        return cls(
            session.client("eks", config=config),
            session.client("ec2", config=config),
            session.client("service-quotas", config=config),
            session.client("resource-groups", config=config),
            lambda cluster: eks_deployments(session, region, cluster),
            # Only Karpenter stacks and stacks that create their cluster read IAM: the others
            # load no IAM model, seconds on a busy machine.
            session.client("iam", config=config) if with_iam else None,
            lambda cluster: eks_crds(session, region, cluster),
            lambda cluster: eks_config_maps(session, region, cluster),
            lambda cluster: eks_node_pools(session, region, cluster),
            lambda cluster: eks_node_classes(session, region, cluster),
            # Within the preflight's one deadline, as the AWS clients: the API may be out of
            # reach (a private endpoint, `publicAccessCidrs`), which `queue_change_findings`
            # then says once.
            lambda cluster: eks_get(
                session,
                region,
                cluster,
                timeout=(deadline.connect_timeout, deadline.read_timeout),
            ),
            lambda cluster: eks_auto_mode_node_classes(session, region, cluster),
        )


CREDENTIALS_STEP = (
    "looking for AWS credentials (a credential_process, an SSO token or an assumed role that"
    " does not come back holds it; `aws sts get-caller-identity` with the same profile shows"
    " which)"
)


def _look_for_credentials(session: boto3.Session, calls: Calls) -> None:
    """Resolve the credentials now, as a step of its own: botocore's chain may run a
    `credential_process` or ask the instance metadata service, neither an AWS call reported
    as one, and resolves an assumed role or SSO credentials only when first used
    (botocore/credentials.py, DeferredRefreshableCredentials), which `get_frozen_credentials`
    forces. Without credentials, the first call says so."""
    calls.step(CREDENTIALS_STEP)
    credentials = session.get_credentials()
    if credentials is not None:
        credentials.get_frozen_credentials()


_THROTTLING = ThrottlingErrorDetector(RetryEventAdapter())
"""botocore's own test of an answer for throttling, as its standard retry mode backs off."""


def _sent(calls: Calls, request: Any, event_name: str, **_: Any) -> None:
    # `before-send.<service>.<Operation>`, once for each attempt, numbered in the context.
    service, operation = event_name.split(".")[1:]
    attempt = request.context.get("retries", {}).get("attempt", 1)
    calls.sent(f"{service} {operation}", request.url, attempt)


def _answered(calls: Calls, **kwargs: Any) -> None:
    # `needs-retry` follows every attempt, answered or not: with `response` None, none came.
    if kwargs["response"] is not None:
        calls.answered(throttled=_THROTTLING.is_throttling_error(**kwargs))


def check(stack: str, config: StackConfig, deadline: Deadline) -> list[Finding]:
    """Every finding for an EKS stack; CannotCheck for a cluster it cannot check, or an account
    that does not answer by the deadline."""
    region = config.cluster.region
    assert region is not None  # config validation requires it on AWS
    calls = Calls()
    try:
        # The clients too: botocore looks for credentials as it makes them, which may call out.
        return deadline.run(
            lambda: preflight(
                config,
                AwsClients.for_region(
                    region,
                    deadline,
                    calls,
                    with_iam=config.uses_karpenter or config.cluster.create is not None,
                ),
                stack_mark(Project.find().name, stack),
            ),
            calls,
        )
    except DeadlinePassed as passed:
        raise CannotCheck(f"Cannot check stack {stack}: {passed.explain('AWS')}") from passed
    except (BotoCoreError, ClientError) as error:
        reason = why_it_cannot_check(error, calls.last)
        raise CannotCheck(f"Cannot check stack {stack}: {reason}") from error


def preflight(config: StackConfig, clients: AwsClients, mark: str = "") -> list[Finding]:
    """Every finding for the stack, in the order: cluster, pools' zones, which subnets the GPU
    nodes use and why, what those subnets reach, live node group sizes, Karpenter's, tenant
    namespaces moving into or out of the queues, reservations, quotas. `mark`: the stack's
    `stack_mark`, which Karpenter's CRDs carry where the stack installed them."""
    cluster, findings = _cluster_findings(config, clients)
    to_create = config.cluster.create is not None and cluster is None
    candidates = node_subnets(config, clients.ec2, cluster)
    private = None if candidates is None else [(s, r) for s, r in candidates if not r.public]
    subnets = None if private is None else [s for s, _ in private]
    if to_create and subnets is None:
        zones = new_vpc_zones(config, clients.ec2)
        subnets = None if zones is None else [{"AvailabilityZone": zone} for zone in zones]
    described = describe_instance_types(
        clients.ec2,
        sorted({name for pool in config.pools for name in pool_instance_type_names(pool)}),
    )
    findings += _zone_findings(config, clients, subnets, described)
    findings += efa_findings(config, described)
    findings += arm64_repair_findings(config, described)
    if cluster is not None:
        findings += vpc_cni_findings(config, clients.eks, described)
        if config.uses_auto_mode:
            enforced = network_policy_controller_finding(
                config,
                f"cluster {config.cluster.name} network policies",
                _read(clients.config_maps, cluster),
            )
            findings += [] if enforced is None else [enforced]
        else:
            findings += network_policy_findings(config, clients.eks)
    if candidates is not None:
        findings.append(node_subnet_finding(config, candidates))
    if private:
        findings += reachability_findings(config, clients.ec2, private)
    if cluster is not None:
        findings += live_node_group_findings(config, clients.eks)
        findings += _running_autoscaler_findings(config, clients, cluster)
    crds = _read(clients.crds, cluster)
    # The running controller is read only where the stack relies on one it did not install.
    reads_controller = config.uses_karpenter and not config.karpenter_installed
    deployments = _read(clients.deployments, cluster, reads_controller)
    node_pools = _read(clients.node_pools, cluster, config.uses_node_pools)
    config_maps = _read(clients.config_maps, cluster, reads_controller)
    node_classes = _read(clients.node_classes, cluster, config.uses_karpenter)
    findings += karpenter_findings(
        config,
        cluster,
        clients.iam,
        crds,
        mark,
        deployments,
        node_pools,
        clients.eks,
        config_maps,
        node_classes,
    )
    kube = _read(clients.kube, cluster, bool(config.namespaces))
    if kube is not None:
        findings += queue_change_findings(config, kube)
    findings += reservation_findings(config, clients, datetime.now(UTC))
    auto_mode_node_classes = _read(clients.auto_mode_node_classes, cluster, config.uses_auto_mode)
    if auto_mode_node_classes is not None:
        clash = node_class_clash_finding(config, auto_mode_node_classes)
        findings += [] if clash is None else [clash]
    if config.uses_auto_mode and cluster is not None:
        open_reservations = open_reservation_finding(config, clients.ec2)
        if open_reservations is not None:
            findings.append(open_reservations)
    findings += _quota_findings(config, clients, described)
    if to_create:
        findings += creation_findings(config, clients)
    return findings


# --- Size changes and leftover repair thresholds on live node groups ---------------------------


def _read(
    reader: Callable[[Mapping[str, Any]], _T] | None,
    cluster: Mapping[str, Any] | None,
    wanted: bool = True,
) -> _T | None:
    """The cluster's reader of some Kubernetes objects, where there is a cluster, the clients
    have the reader, and the stack needs the objects; else None, which leaves them unchecked."""
    return reader(cluster) if cluster is not None and reader is not None and wanted else None


def live_node_group_findings(config: StackConfig, eks: Any) -> list[Finding]:
    """Pools whose new bounds move their running node groups' sizes on the next update, and
    node groups whose repair still stops at a percentage of unhealthy nodes
    (`leftover_threshold_finding`).

    The program sends a group's live desired size moved within its new bounds
    (`gpu_platform.eks.live_scaling`): raising `min` above it starts nodes, lowering `max` below
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
            leftover = leftover_threshold_finding(config.cluster.name, i, pool, group["nodegroup"])
            findings += [f for f in (finding, leftover) if f is not None]
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


# --- Capacity reservations and Capacity Blocks -----------------------------------------------

# Reservation states (`CapacityReservation.State`, botocore's EC2 model): instances launch into
# an `active` one; these others may become active later. Any other state is over, or failed.
_LATER_STATES = frozenset({"scheduled", "pending", "payment-pending", "assessing", "delayed"})
_RESERVATION = "AWS::EC2::CapacityReservation"
# What EKS's AL2023 and Bottlerocket AMIs run as, for a reservation's matching (EC2 user guide,
# "Launch instances into an existing Capacity Reservation": instance type, platform, zone and
# tenancy must match).
_NODE_PLATFORM = "Linux/UNIX"
_NODE_TENANCY = "default"
_GROUP_MEMBER_UNUSABLE = (
    "Nothing for the pool, which launches into the group's other reservations (the group's"
    " finding says how many); remove it from the group if it is of no use."
)


def reservation_findings(config: StackConfig, clients: AwsClients, now: datetime) -> list[Finding]:
    """Each reserved and capacity-block pool against its reservations: that they exist, match
    the pool (zone, instance type, platform, tenancy, no placement group), are or will be
    active, and hold the pool's `max`, with how many instances are free; for a Capacity Block,
    its start against `aws.capacityBlockStart`. A pool on a resource group gets one finding per
    reservation in it and one for the group."""
    findings = []
    for i, pool in enumerate(config.pools):
        if pool.capacity not in EC2_RESERVED_CAPACITIES:
            continue
        group = pool.aws.capacity_reservation_resource_group_arn
        if group is not None:
            findings += _group_findings(i, pool, clients, group, now)
            continue
        reservation_id = pool.aws.capacity_reservation_id
        assert reservation_id is not None  # config validation requires it without a group
        found = _describe_reservation(clients.ec2, reservation_id)
        findings.append(_reservation_finding(i, pool, reservation_id, found, now, in_group=False))
    return findings


def _describe_reservation(ec2: Any, reservation_id: str) -> Mapping[str, Any] | None:
    try:
        found = ec2.describe_capacity_reservations(CapacityReservationIds=[reservation_id])
    except ClientError as error:
        if _error_code(error) != "InvalidCapacityReservationId.NotFound":
            raise
        return None
    (reservation,) = found["CapacityReservations"]
    return dict(reservation)


def _reservation_finding(
    i: int,
    pool: GpuPoolSpec,
    reservation_id: str,
    reservation: Mapping[str, Any] | None,
    now: datetime,
    in_group: bool,
) -> Finding:
    """One reservation against the pool. In a resource group, what would block a pool on this
    reservation alone is a warning: the pool launches into the group's others."""
    subject = f"pool {pool.name}"
    where = key_path("pools", i, "aws", "capacityReservationId")
    noun = "Capacity Block" if pool.capacity == "capacity-block" else "Capacity reservation"
    name = f"{noun} {reservation_id}"

    def unusable(message: str, action: str) -> Finding:
        if in_group:
            return Finding("warning", subject, message, _GROUP_MEMBER_UNUSABLE)
        return Finding("blocking", subject, message, action)

    if reservation is None:
        return unusable(
            f"EC2 knows no {noun.lower()} {reservation_id} in this account and region.",
            f"Check {where}.",
        )
    mismatches = _mismatches(i, pool, reservation, noun)
    if mismatches:
        return unusable(
            f"{name} does not match the pool: {'; '.join(mismatches)}.",
            f"Set the pool's zones and instance type to the {noun.lower()}'s, or name another"
            f" in {where}.",
        )
    state, start, end = (
        reservation["State"],
        reservation.get("StartDate"),
        reservation.get("EndDate"),
    )
    if (state != "active" and state not in _LATER_STATES) or (end is not None and end <= now):
        return unusable(
            f"{name} is {state}{f' (it ends {end:%Y-%m-%d %H:%M} UTC)' if end else ''}.",
            f"Get a new one and set it in {where}.",
        )
    block_start = pool.aws.capacity_block_start
    if block_start is not None and start is not None and block_start != start:
        return Finding(
            "blocking",
            subject,
            f"{key_path('pools', i, 'aws', 'capacityBlockStart')} is"
            f" {block_start.isoformat()}, but {name} starts {start.isoformat()}: the node group"
            " would grow at another time.",
            f"Set {key_path('pools', i, 'aws', 'capacityBlockStart')} to {start.isoformat()}.",
        )
    total = reservation["TotalInstanceCount"]
    if not in_group and pool.max > total and not pool.aws.on_demand_fallback:
        return Finding(
            "blocking",
            subject,
            f"max ({pool.max}) is more than {name} holds ({total}).",
            f"Lower {key_path('pools', i, 'max')} to {total}.",
        )
    held = (
        f"{total} x {reservation['InstanceType']} in {reservation['AvailabilityZone']}"
        f" ({reservation.get('AvailableInstanceCount', 0)} free)"
    )
    if start is not None and start > now:
        return Finding(
            "warning",
            subject,
            f"{name} starts later ({held}, {_window(start, end)}): until then no node starts"
            " in it.",
            _before_start_action(i, pool, start),
        )
    if state != "active":
        return Finding(
            "warning",
            subject,
            f"{name} is {state} ({held}): no node starts in it until it is active.",
            "Nothing, unless jobs are due before it is.",
        )
    if pool.capacity == "capacity-block":
        return Finding(
            "ok",
            subject,
            f"{name}: {held}, {_window(start, end)}; its instances end with it.",
            "Nothing; drain the pool before the block ends.",
        )
    return Finding("ok", subject, f"{name}: {held}, active {_window(None, end)}.", "Nothing.")


def _mismatches(i: int, pool: GpuPoolSpec, reservation: Mapping[str, Any], noun: str) -> list[str]:
    """How the reservation differs from the instances the pool launches, which it does not
    take then."""
    theirs = f"the {noun.lower()}'s"
    found = []
    zone, instance_type = reservation["AvailabilityZone"], reservation["InstanceType"]
    if pool.zones and zone not in pool.zones:
        found.append(f"{key_path('pools', i, 'zones')} is {pool.zones}, {theirs} [{zone!r}]")
    if instance_type not in pool.instance_types:
        found.append(
            f"{key_path('pools', i, 'instanceTypes')} is {pool.instance_types}, {theirs}"
            f" [{instance_type!r}]"
        )
    platform = reservation.get("InstancePlatform", _NODE_PLATFORM)
    if platform != _NODE_PLATFORM:
        found.append(f"{theirs} platform is {platform}, the nodes' {_NODE_PLATFORM}")
    tenancy = reservation.get("Tenancy", _NODE_TENANCY)
    if tenancy != _NODE_TENANCY:
        found.append(f"{theirs} tenancy is {tenancy}, the nodes' {_NODE_TENANCY}")
    # An instance matches a reservation made in a cluster placement group only when it launches
    # into that group (EC2 user guide, "Capacity Reservations in cluster placement groups"),
    # which no pool's nodes do.
    if reservation.get("PlacementGroupArn"):
        found.append(f"it is in placement group {reservation['PlacementGroupArn']}")
    return found


def _window(start: datetime | None, end: datetime | None) -> str:
    begins = f"{start:%Y-%m-%d %H:%M} " if start is not None else ""
    return f"{begins}to {end:%Y-%m-%d %H:%M} UTC" if end is not None else f"{begins}with no end"


def _before_start_action(i: int, pool: GpuPoolSpec, start: datetime | None) -> str:
    block_start = key_path("pools", i, "aws", "capacityBlockStart")
    if (
        pool.capacity == "capacity-block"
        and pool.aws.capacity_block_start is None
        and start is not None
    ):
        return (
            f"Set {block_start} to {start.isoformat()} to grow the node group then (managed node"
            " groups), or leave it to the autoscaler to start nodes for pending pods."
        )
    return "Nothing, unless jobs are due before it starts."


def _group_findings(
    i: int, pool: GpuPoolSpec, clients: AwsClients, group: str, now: datetime
) -> list[Finding]:
    """A finding for each reservation of the resource group, then one for the group: how much
    of it the pool can launch into now, and whether past it nodes launch on-demand or fail."""
    subject = f"pool {pool.name}"
    where = key_path("pools", i, "aws", "capacityReservationResourceGroupArn")
    try:
        members = _paginate(
            clients.resource_groups,
            "list_group_resources",
            "Resources",
            Group=group,
            Filters=[{"Name": "resource-type", "Values": [_RESERVATION]}],
        )
    except ClientError as error:
        if _error_code(error) != "NotFoundException":
            raise
        return [Finding("blocking", subject, f"No resource group {group}.", f"Check {where}.")]
    ids = [member["Identifier"]["ResourceArn"].rpartition("/")[2] for member in members]
    reservations = {rid: _describe_reservation(clients.ec2, rid) for rid in ids}
    findings = [
        _reservation_finding(i, pool, rid, reservation, now, in_group=True)
        for rid, reservation in reservations.items()
    ]
    usable = [
        r
        for r in reservations.values()
        if r is not None
        and not _mismatches(i, pool, r, "reservation")
        and r["State"] == "active"
        and (r.get("EndDate") is None or r["EndDate"] > now)
    ]
    held = sum(r["TotalInstanceCount"] for r in usable)
    free = sum(r.get("AvailableInstanceCount", 0) for r in usable)
    fallback = pool.aws.on_demand_fallback
    past = "on-demand" if fallback else "not at all (aws.onDemandFallback is off)"
    if not usable:
        findings.append(
            Finding(
                "warning" if fallback else "blocking",
                subject,
                f"Resource group {group} holds no active reservation the pool's nodes match"
                f" ({len(ids)} reservation(s)): they launch {past}.",
                f"Add a matching reservation to the group, or name another in {where}.",
            )
        )
    elif held < pool.max and not fallback:
        findings.append(
            Finding(
                "warning",
                subject,
                f"Resource group {group}: the reservations the pool's nodes match hold {held},"
                f" fewer than max ({pool.max}), {free} free; past them nodes fail to launch.",
                f"Lower {key_path('pools', i, 'max')} to {held}, or add reservations to the group.",
            )
        )
    else:
        findings.append(
            Finding(
                "ok",
                subject,
                f"Resource group {group}: {len(usable)} reservation(s) the pool's nodes match,"
                f" {free} of {held} instances free; past them nodes launch {past}.",
                "Nothing.",
            )
        )
    return findings


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
        if config.cluster.create is not None:
            return None, [
                Finding(
                    "ok",
                    subject,
                    f"No EKS cluster {name} in {region} yet: `pulumi up` creates it"
                    f" ({key_path('cluster', 'create')}); what that needs follows.",
                    "Nothing.",
                )
            ]
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
    if config.uses_auto_mode:
        findings.append(auto_mode_finding(config, subject, cluster))
    credentialed = _pod_identity_user(config)
    if credentialed is not None:
        findings.append(_pod_identity_agent_finding(subject, name, credentialed, clients))
    return cluster, findings


def _running_autoscaler_findings(
    config: StackConfig, clients: AwsClients, cluster: Mapping[str, Any]
) -> list[Finding]:
    """The autoscaler the cluster runs itself, where the stack installs none."""
    if config.provisioner != "cluster-autoscaler" or config.autoscaler.install:
        return []
    if clients.deployments is None:
        return []
    # Read once for both checks.
    deployments = cache(clients.deployments(cluster))
    findings = [running_autoscaler_finding(config, cluster["version"], deployments)]
    if clients.config_maps is None:
        return findings
    try:
        running = autoscaler_containers(deployments())
    except requests.RequestException:
        return findings  # the finding above says it could not read them
    config_maps = clients.config_maps(cluster)
    for _, container in running:
        _, release = image_tag(container["image"])
        findings += autoscaler_settings_findings(config, container, release, config_maps)
    return findings


def _pod_identity_user(config: StackConfig) -> str | None:
    """What the stack sets up that gets its AWS credentials through EKS Pod Identity, and what
    it would fail to do without them."""
    if config.provisioner == "karpenter":
        return "Karpenter would get no AWS credentials and never scale a GPU pool up"
    if config.autoscaler_installed:
        return "the cluster autoscaler would get no AWS credentials and never scale a GPU pool up"
    if config.cluster.vpc_cni_role and not config.uses_auto_mode:
        return (
            "the VPC CNI would get no AWS credentials of its own (cluster.vpcCniRole) and new"
            " nodes no pod addresses"
        )
    return None


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


def _pod_identity_agent_finding(subject: str, name: str, user: str, clients: AwsClients) -> Finding:
    try:
        clients.eks.describe_addon(clusterName=name, addonName=POD_IDENTITY_AGENT)
    except ClientError as error:
        if _error_code(error) != "ResourceNotFoundException":
            raise
        return Finding(
            "blocking",
            subject,
            f"No {POD_IDENTITY_AGENT} add-on: {user}.",
            f"aws eks create-addon --cluster-name {name} --addon-name {POD_IDENTITY_AGENT}",
        )
    return Finding("ok", subject, f"The {POD_IDENTITY_AGENT} add-on is installed.", "Nothing.")


# --- Where the pools' instance types are offered ---------------------------------------------


def _zone_findings(
    config: StackConfig,
    clients: AwsClients,
    subnets: Sequence[Mapping[str, Any]] | None,
    described: Mapping[str, Mapping[str, Any]],
) -> list[Finding]:
    subnet_zones = None if subnets is None else {s["AvailabilityZone"] for s in subnets}
    if subnet_zones == set():
        return []  # no private subnet: the node subnet finding blocks
    findings = []
    for i, pool in enumerate(config.pools):
        wanted = set(pool.zones) or subnet_zones
        if pool.aws.flexible:
            findings.append(_flexible_zone_finding(i, pool, clients, described, wanted))
            continue
        offered = _offered_zones(clients, pool.instance_types)
        findings.append(_pool_zone_finding(i, pool, offered, wanted))
    return findings


def _zones_not_checked(subject: str) -> Finding:
    return Finding(
        "warning",
        subject,
        "Zones not checked: the cluster was not found.",
        "Fix the cluster finding and check again.",
    )


def _flexible_zone_finding(
    i: int,
    pool: GpuPoolSpec,
    clients: AwsClients,
    described: Mapping[str, Mapping[str, Any]],
    wanted: set[str] | None,
) -> Finding:
    """A pool of instance families or categories: Karpenter launches whichever of its sizes EC2
    offers in a zone, so it needs one size offered in one of its zones."""
    subject = f"pool {pool.name}"
    if wanted is None:
        return _zones_not_checked(subject)
    sizes = pool_sizes(pool, described)
    offered = _offered_zones(clients, sizes) if sizes else {}
    zones = set().union(*offered.values()) & wanted
    if not zones:
        field = "aws.instanceFamilies" if pool.aws.instance_families else "aws.instanceCategories"
        return Finding(
            "blocking",
            subject,
            f"No size of {pool.accelerator} in these families or categories is offered in"
            f" {', '.join(sorted(wanted))}.",
            f"Change {key_path('pools', i, field)} or {key_path('pools', i, 'zones')}.",
        )
    launchable = sorted(name for name, where in offered.items() if where & wanted)
    return Finding(
        "ok",
        subject,
        f"Sizes offered in {', '.join(sorted(zones))}: {', '.join(launchable)}.",
        "Nothing.",
    )


def node_subnets(
    config: StackConfig, ec2: Any, cluster: Mapping[str, Any] | None
) -> list[tuple[dict[str, Any], SubnetRouting]] | None:
    """`cluster.nodeSubnetIds`, else the cluster's subnets, as EC2 describes them, each with the
    route table that makes it public or private, as the program decides
    (`gpu_platform.eks.subnets`); None if the cluster is unknown."""
    create = config.cluster.create
    if config.cluster.node_subnet_ids:
        ids = config.cluster.node_subnet_ids
    elif create is not None and create.aws.subnet_ids:
        ids = create.aws.subnet_ids
    elif cluster is not None:
        ids = cluster["resourcesVpcConfig"]["subnetIds"]
    else:
        return None
    subnets: list[dict[str, Any]] = ec2.describe_subnets(SubnetIds=list(ids))["Subnets"]
    tables = _route_tables(ec2, {s["VpcId"] for s in subnets})
    return [(s, routing_of(s["SubnetId"], s["VpcId"], tables)) for s in subnets]


def node_subnet_finding(
    config: StackConfig, subnets: Sequence[tuple[Mapping[str, Any], SubnetRouting]]
) -> Finding:
    """Which subnets the GPU nodes use and which are left out, each with why: blocking where
    `cluster.nodeSubnetIds` names a public subnet (the program refuses it), or where none is
    private. Subnets by zone, then id."""
    subject = f"cluster {config.cluster.name} subnets"
    setting = key_path("cluster", "nodeSubnetIds")
    ordered = sorted(subnets, key=lambda sr: (sr[0]["AvailabilityZone"], sr[0]["SubnetId"]))
    private = [(s, r) for s, r in ordered if not r.public]
    public = [(s, r) for s, r in ordered if r.public]
    if config.cluster.node_subnet_ids and public:
        return Finding(
            "blocking",
            subject,
            f"{setting} names public subnets, where GPU nodes must not sit: {_listed(public)}.",
            f"Name only private subnets in {setting}: ones whose route table sends nothing to"
            " an internet gateway.",
        )
    if not private:
        return Finding(
            "blocking",
            subject,
            f"Every subnet of the cluster is public: no place for GPU nodes. {_listed(public)}.",
            f"Name private subnets for them in {setting}.",
        )
    source = setting if config.cluster.node_subnet_ids else "the cluster's subnets"
    left_out = f" Left out: {_listed(public)}." if public else ""
    return Finding(
        "ok",
        subject,
        f"GPU nodes use the private ones of {source}: {_listed(private)}.{left_out}",
        "Nothing.",
    )


def _listed(subnets: Sequence[tuple[Mapping[str, Any], SubnetRouting]]) -> str:
    return "; ".join(
        f"{s['SubnetId']} ({s['AvailabilityZone']}), {r.explanation()}" for s, r in subnets
    )


def _route_tables(ec2: Any, vpcs: set[str]) -> list[RouteTable]:
    """Every route table of the VPCs: the subnets' own and the main ones."""
    filters = [{"Name": "vpc-id", "Values": sorted(vpcs)}]
    tables = _paginate(ec2, "describe_route_tables", "RouteTables", Filters=filters)
    return [_route_table(table) for table in tables]


# Where EC2 puts a route's target, one member for each kind (`Route`, EC2 API Reference).
_ROUTE_TARGETS = (
    "GatewayId",
    "NatGatewayId",
    "EgressOnlyInternetGatewayId",
    "TransitGatewayId",
    "NetworkInterfaceId",
    "InstanceId",
    "VpcPeeringConnectionId",
    "LocalGatewayId",
    "CarrierGatewayId",
    "CoreNetworkArn",
    "OdbNetworkArn",
)


def _route_table(table: Mapping[str, Any]) -> RouteTable:
    associations = table.get("Associations", [])
    return RouteTable(
        id=table["RouteTableId"],
        vpc_id=table["VpcId"],
        main=any(a.get("Main") for a in associations),
        subnet_ids=tuple(a["SubnetId"] for a in associations if a.get("SubnetId")),
        routes=tuple(
            Route(
                route.get("DestinationCidrBlock")
                or route.get("DestinationIpv6CidrBlock")
                or route.get("DestinationPrefixListId", ""),
                next((route[t] for t in _ROUTE_TARGETS if route.get(t)), ""),
                active=route.get("State", "active") == "active",
            )
            for route in table.get("Routes", [])
        ),
    )


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
        return _zones_not_checked(subject)
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
        for name in (n for n in pool_sizes(pool, described) if n in described):
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
            f"Choose instance types with EFA in {sizes_key(pool, i)[0]}, or turn aws.efa off.",
        )
    mixed = different_efa_counts(interfaces)
    if mixed is not None:
        return Finding(
            "blocking",
            subject,
            "aws.efa is on, but its instance types take different numbers of EFA interfaces"
            f" ({mixed}), and every node of a pool launches with the same ones.",
            f"Give {sizes_key(pool, i)[0]} instance types of one number, and make a pool for"
            " each other number.",
        )
    count = next(iter(interfaces.values()), 0)
    if pool.capacity in EC2_RESERVED_CAPACITIES:
        where = (
            "placed by EC2 in the reservation, with no placement group of the stack's (a"
            " launch into one matches only reservations made in it)."
        )
    else:
        where = (
            "and a cluster placement group, which may not find every node at once when"
            " capacity is short: a capacity reservation or Capacity Block secures them."
        )
    return Finding(
        "ok",
        subject,
        f"{count} EFA interface(s) a node, in one zone ({', '.join(pool.zones)}), {where}",
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
        sizes = pool_sizes(pool, described)
        if not sizes:
            continue  # a pool of families without a size of its GPU: the plan refuses it
        largest = max(sizes, key=lambda n: vcpus.get(n, 0))
        family = quota_family(largest)
        if family is None or largest not in vcpus:
            continue
        for capacity in quota_capacities(pool):
            needs.setdefault(QUOTAS[(family, capacity)], []).append((pool, vcpus[largest]))
    in_use = _vcpus_in_use_elsewhere(config, clients, described) if needs else {}
    return [
        _quota_finding(quota, pools, in_use.get(quota, 0), clients, config.uses_karpenter)
        for quota, pools in needs.items()
    ]


def drift_surge(pool: GpuPoolSpec) -> int:
    """The nodes a Karpenter pool at `max` runs above it while drift replaces its nodes: its
    Drifted budget, rounded up (`GetAllowedDisruptions`, kubernetes-sigs/karpenter
    pkg/apis/v1/nodepool.go). Karpenter plans a replacement without the drifted node
    (`SimulateScheduling`, pkg/controllers/disruption/helpers.go), launches it first, and counts
    no node marked for deletion against the limits (state/cluster.go, v1.14.1)."""
    percent = pool.aws.max_unavailable_percent or DRIFT_BUDGET_PERCENT
    return math.ceil(pool.max * percent / 100)


def quota_capacities(pool: GpuPoolSpec) -> tuple[str, ...]:
    """The vCPU quotas (`on-demand`, `spot`) the pool's nodes count against at its `max`.

    A Capacity Block's size, checked with the block, limits its pool. A capacity reservation
    counts toward the on-demand quota while it is active, used or not (EC2 user guide, "On-Demand
    Capacity Reservations", Limitations), and was within it when it was made; only the nodes
    that fall back to on-demand need more. Counting such a pool at its `max` counts its
    reservation, which no running instance stands for while it is unused, and the nodes past it.
    """
    fallback = ("on-demand",) if pool.aws.on_demand_fallback else ()
    if pool.capacity == "capacity-block":
        return ()
    if pool.capacity == "reserved":
        return fallback
    if pool.capacity == "spot":
        return ("spot", *fallback)
    return ("on-demand",)


def _vcpus_in_use_elsewhere(
    config: StackConfig, clients: AwsClients, described: Mapping[str, Mapping[str, Any]]
) -> dict[Quota, int]:
    """The vCPUs of the region's pending and running GPU instances, per quota, but for the nodes
    of the stack's own node groups, which count within their pool's `max`. EKS tags a managed
    node group's instances with `eks:cluster-name` and `eks:nodegroup-name`."""
    filters = [{"Name": "instance-state-name", "Values": ["pending", "running"]}]
    reservations = _paginate(clients.ec2, "describe_instances", "Reservations", Filters=filters)
    instances = [instance for reservation in reservations for instance in reservation["Instances"]]
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
    if config.provisioner == "karpenter":
        # Karpenter tags every instance with its NodePool, under its node label's key, and its
        # cluster (karpenter-provider-aws v1.14.1, pkg/utils/utils.go GetTags); a pool's
        # NodePool is named after it.
        return tags.get("eks:eks-cluster-name") == config.cluster.name and tags.get(
            NODE_POOL_LABEL
        ) in {pool.name for pool in config.pools}
    if config.uses_auto_mode:
        # Auto Mode tags its instances with the cluster and the NodePool, the tag keys
        # AmazonEKSComputePolicy lets it launch with (awsdocs/amazon-eks-user-guide
        # latest/ug/automode/auto-learn-iam.adoc, "Custom AWS tags for EKS Auto resources"); a
        # pool's NodePool is named after it.
        return tags.get("eks:eks-cluster-name") == config.cluster.name and tags.get(
            "eks:kubernetes-node-pool-name"
        ) in {pool.name for pool in config.pools}
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
    quota: Quota,
    pools: Sequence[tuple[GpuPoolSpec, int]],
    in_use: int,
    clients: AwsClients,
    karpenter: bool = False,
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
    surge = sum(drift_surge(pool) * vcpus for pool, vcpus in pools) if karpenter else 0
    if needed + surge + in_use > value:
        return Finding(
            "warning",
            subject,
            f"{quota.name}: {value:g} vCPUs cover the {needed} the pools need at their max"
            f" ({used_by}){others}, but not the {surge} more that drift's replacements take"
            " while the old nodes drain: an AMI rollout of full pools would stall.",
            f"Request an increase to {needed + surge + in_use}, or lower the pools'"
            " aws.maxUnavailablePercent (docs/karpenter.md, Limits).",
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


def why_it_cannot_check(error: BotoCoreError | ClientError, last: Call | None = None) -> str:
    """What stopped the check, and what to do about it; `last` is the last call made, which
    says whether the error was the last of a throttled call's answers."""
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
                + "; and for a stack that creates its cluster, also: "
                + ", ".join(p for p in CREATE_PERMISSIONS if p not in READ_ONLY_PERMISSIONS)
                + "."
            )
        if last is not None and last.last_throttled and last.api.endswith(f" {operation}"):
            return (
                f"AWS throttled {last.api} ({code}: {message}) {last.throttled} time(s) in"
                f" {last.attempts} attempts, backing off between them: the account's request"
                " rate for it is used up, by this check or other callers. Run it again later."
            )
        return f"AWS answered {operation} with {code}: {message}. Run it again later."
    return f"{error}. Run it again later."


def _error_code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))
