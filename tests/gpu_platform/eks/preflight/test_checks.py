"""The EKS pre-flight check against moto's EKS and EC2 (instance types and zone offerings from
EC2's real data), with Service Quotas and the add-on lookup, which moto lacks, answered by
botocore's Stubber and a `before-call` hook. Findings are asserted exactly."""

import base64
import copy
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any, NamedTuple
from unittest.mock import ANY

import boto3
import botocore.endpoint
import pytest
import requests
from botocore.awsrequest import AWSResponse
from botocore.compat import HTTPHeaders
from botocore.stub import Stubber
from moto import mock_aws
from typer.testing import CliRunner

from gpu_platform.cli.app import app
from gpu_platform.cli.preflight_exit_codes import EXIT_CANNOT_CHECK
from gpu_platform.config import GpuPoolSpec, StackConfig, load_stack_config
from gpu_platform.deadline import Calls, Deadline
from gpu_platform.eks.preflight import checks as preflight_eks
from gpu_platform.eks.preflight import karpenter as preflight_karpenter
from gpu_platform.eks.preflight.arm64_repair import arm64_repair_findings
from gpu_platform.eks.preflight.checks import AwsClients
from gpu_platform.eks.preflight.karpenter_node_access import node_role_access_finding
from gpu_platform.eks.preflight.karpenter_permissions import controller_permissions_finding
from gpu_platform.eks.preflight.node_repair_threshold import leftover_threshold_finding
from gpu_platform.preflight.cannot_check import CannotCheck
from gpu_platform.preflight.check import check_stack
from gpu_platform.preflight.findings import Finding
from gpu_platform.stack_files import stack_config
from tests.preflight_calls import CONTROLLER_ROLE_NAME
from tests.repository import ROOT
from tests.stack_variants import (
    AL2023_RELEASE,
    ODCR,
    ODCR_GROUP,
    with_gpu_quotas_fitting_its_pools,
    with_quota_for_any_pool,
    with_whole_gpu_quota,
)

REGION = "us-east-1"
FOR_REGION = AwsClients.for_region
"""The real one, kept before a test replaces it."""
DEADLINE_MARGIN_SECONDS = 2
"""How long past its deadline the command may take to say so: starting and printing."""
Config = dict[str, Any]
SPOT_G = "L-3819A6DF"
ROLE = "arn:aws:iam::123456789012:role/KarpenterNodeRole-ml"
ON_DEMAND_P = "L-417A185B"


@pytest.fixture
def aws() -> Iterator[AwsClients]:
    """The command's clients (its timeouts, standard retries) on a fresh moto account."""
    with mock_aws():
        # The cluster's Kubernetes API is not moto's: Karpenter's CRDs are read in
        # test_preflight_karpenter.py, and so are its NodePools; the tenant namespaces in
        # test_queue_changes.py.
        clients = AwsClients.for_region(REGION, Deadline(30), Calls(), with_iam=True)
        yield replace(
            clients,
            crds=None,
            node_pools=None,
            node_classes=None,
            kube=None,
            auto_mode_node_classes=None,
        )


@pytest.fixture
def quotas(aws: AwsClients) -> Iterator[Stubber]:
    """Service Quotas answered by the Stubber: every answer added must be asked for."""
    with Stubber(aws.service_quotas) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()


def quota(quotas: Stubber, code: str, value: float) -> None:
    quotas.add_response(
        "get_service_quota",
        {"Quota": {"ServiceCode": "ec2", "QuotaCode": code, "Value": value}},
        {"ServiceCode": "ec2", "QuotaCode": code},
    )


def answer(client: Any, operation: str, status: int, parsed: dict[str, Any]) -> None:
    """Answer one operation moto does not implement, on every call."""

    def respond(**_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        return AWSResponse(f"https://{operation}", status, HTTPHeaders(), None), parsed

    service = client.meta.service_model.service_id.hyphenize()
    client.meta.events.register(f"before-call.{service}.{operation}", respond)


def pod_identity_agent(clients: AwsClients, installed: bool = True) -> None:
    if installed:
        answer(
            clients.eks, "DescribeAddon", 200, {"addon": {"addonName": "eks-pod-identity-agent"}}
        )
    else:
        error = {"Code": "ResourceNotFoundException", "Message": "No addon"}
        answer(clients.eks, "DescribeAddon", 404, {"Error": error})


class Network(NamedTuple):
    """The ids of what `cluster` creates."""

    vpc: str
    private: list[str]
    """The private subnets in us-east-1a, b and e."""
    public: str
    private_table: str
    public_table: str
    gateway: str
    nat: str | None


def cluster(
    clients: AwsClients, version: str = "1.35", name: str = "ml-dev", nat: bool = True
) -> Network:
    """A cluster with private subnets in us-east-1a, b and e, and a public one in a, routed to
    an internet gateway; the private ones reach the internet through a NAT gateway there (or,
    without `nat`, not at all)."""
    ec2 = clients.ec2
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnets = []
    for i, (zone, public) in enumerate(
        [("us-east-1a", False), ("us-east-1b", False), ("us-east-1e", False), ("us-east-1a", True)]
    ):
        subnet = ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.0.{i}.0/24", AvailabilityZone=zone)
        subnet_id = subnet["Subnet"]["SubnetId"]
        ec2.modify_subnet_attribute(SubnetId=subnet_id, MapPublicIpOnLaunch={"Value": public})
        subnets.append(subnet_id)
    *private, public_subnet = subnets
    gateway = ec2.create_internet_gateway()["InternetGateway"]["InternetGatewayId"]
    ec2.attach_internet_gateway(InternetGatewayId=gateway, VpcId=vpc)
    public_table = ec2.create_route_table(VpcId=vpc)["RouteTable"]["RouteTableId"]
    ec2.create_route(RouteTableId=public_table, DestinationCidrBlock="0.0.0.0/0", GatewayId=gateway)
    ec2.associate_route_table(RouteTableId=public_table, SubnetId=public_subnet)
    private_table = ec2.create_route_table(VpcId=vpc)["RouteTable"]["RouteTableId"]
    nat_gateway = None
    if nat:
        address = ec2.allocate_address(Domain="vpc")["AllocationId"]
        created = ec2.create_nat_gateway(SubnetId=public_subnet, AllocationId=address)
        nat_gateway = created["NatGateway"]["NatGatewayId"]
        ec2.create_route(
            RouteTableId=private_table, DestinationCidrBlock="0.0.0.0/0", NatGatewayId=nat_gateway
        )
    for subnet_id in private:
        ec2.associate_route_table(RouteTableId=private_table, SubnetId=subnet_id)
    clients.eks.create_cluster(
        name=name,
        version=version,
        roleArn="arn:aws:iam::123456789012:role/ml-dev-cluster",
        resourcesVpcConfig={"subnetIds": subnets},
    )
    return Network(vpc, private, public_subnet, private_table, public_table, gateway, nat_gateway)


def stack(change: Callable[[Config], Any] = lambda c: None) -> StackConfig:
    """The dev stack's config with a second instance type on its pool, so that every check sees
    more than one (preflight checks each type; the program refuses types of different shapes,
    which is not preflight's to repeat), changed by `change` (keys as in the stack file)."""
    values = with_quota_for_any_pool(copy.deepcopy(stack_config("dev")))
    values["gpu-platform:pools"][0]["instanceTypes"] = ["g4dn.xlarge", "g4dn.2xlarge"]
    change(values)
    with_gpu_quotas_fitting_its_pools(values)
    return load_stack_config(
        {k.removeprefix("gpu-platform:"): v for k, v in values.items() if k.startswith("gpu-")}
    )


def pools(config: Config) -> list[dict[str, Any]]:
    return config["gpu-platform:pools"]


CLUSTER_OK = Finding("ok", "cluster ml-dev", "ACTIVE, Kubernetes 1.35.", "Nothing.")
AGENT_OK = Finding(
    "ok", "cluster ml-dev", "The eks-pod-identity-agent add-on is installed.", "Nothing."
)
# The dev pool's g4dn types are offered in us-east-1a and b, not in us-east-1e.
DEV_POOL_ZONES = Finding(
    "warning",
    "pool t4-shared",
    "Nodes can only launch in us-east-1a, us-east-1b; us-east-1e lack some instance type"
    " (g4dn.xlarge in us-east-1a, us-east-1b; g4dn.2xlarge in us-east-1a, us-east-1b).",
    "Nothing, unless the pool needs those zones: then choose instance types they offer.",
)


def node_subnets_ok(network: Network) -> Finding:
    """The subnet finding for `cluster`'s network: its private subnets used, its public one
    left out."""
    a, b, e = network.private
    private = f"private: route table {network.private_table} sends 0.0.0.0/0 to {network.nat}"
    return Finding(
        "ok",
        "cluster ml-dev subnets",
        f"GPU nodes use the private ones of the cluster's subnets: {a} (us-east-1a), {private};"
        f" {b} (us-east-1b), {private}; {e} (us-east-1e), {private}. Left out: {network.public}"
        f" (us-east-1a), public: route table {network.public_table} sends 0.0.0.0/0 to"
        f" {network.gateway}.",
        "Nothing.",
    )


def ready(network: Network) -> list[Finding]:
    """The findings for `cluster`'s network with the Pod Identity agent and 32 spot G vCPUs."""
    return [
        CLUSTER_OK,
        AGENT_OK,
        DEV_POOL_ZONES,
        node_subnets_ok(network),
        NODE_SUBNETS_REACH_OUT,
        Finding(
            "ok",
            f"quota {SPOT_G}",
            "All G and VT Spot Instance Requests: 32 vCPUs cover the 24 the pools need at their"
            " max (t4-shared 3 x 8 vCPUs), with no other instance using them now.",
            "Nothing.",
        ),
    ]


def test_a_ready_account_blocks_nothing(aws: AwsClients, quotas: Stubber) -> None:
    network = cluster(aws)
    pod_identity_agent(aws)
    quota(quotas, SPOT_G, 32)

    findings = preflight_eks.preflight(stack(), aws)

    assert findings == ready(network)


def test_an_attached_cluster_whose_cni_leaves_network_policies_unenforced_is_warned_of(
    aws: AwsClients, quotas: Stubber
) -> None:
    cluster(aws)
    # Every add-on answered as installed with no configuration values: EKS's default, the
    # VPC CNI's network policy agent off (EKS user guide, cni-network-policy-configure.adoc).
    pod_identity_agent(aws)
    quota(quotas, SPOT_G, 32)

    def with_prometheus(config: Config) -> None:
        config["gpu-platform:monitoring"] = {"installPrometheusStack": True}

    findings = preflight_eks.preflight(stack(with_prometheus), aws)

    assert [
        (f.severity, f.message.split(",")[0])
        for f in findings
        if f.subject == "cluster ml-dev network policies"
    ] == [
        (
            "warning",
            "The vpc-cni add-on's network policy agent is off (enableNetworkPolicy not true)",
        )
    ]


def test_max_above_the_quota_is_a_blocking_finding_not_a_crash(
    aws: AwsClients, quotas: Stubber
) -> None:
    cluster(aws)
    pod_identity_agent(aws)
    quota(quotas, SPOT_G, 16)

    findings = preflight_eks.preflight(stack(), aws)

    assert findings[-1] == Finding(
        "blocking",
        f"quota {SPOT_G}",
        "All G and VT Spot Instance Requests: 16 vCPUs, but the pools need 24 at their max"
        " (t4-shared 3 x 8 vCPUs).",
        "Request an increase to at least 24: aws service-quotas request-service-quota-increase"
        f" --service-code ec2 --quota-code {SPOT_G} --desired-value 24 --region us-east-1",
    )


def run_spot_instance(aws: AwsClients, instance_type: str, tags: dict[str, str]) -> None:
    image = aws.ec2.register_image(Name="gpu-node")["ImageId"]
    aws.ec2.run_instances(
        ImageId=image,
        InstanceType=instance_type,
        MinCount=1,
        MaxCount=1,
        InstanceMarketOptions={"MarketType": "spot"},
        TagSpecifications=[
            {"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}
        ],
    )


def test_gpu_instances_running_outside_the_stack_count_against_the_quota(
    aws: AwsClients, quotas: Stubber
) -> None:
    cluster(aws)
    pod_identity_agent(aws)
    quota(quotas, SPOT_G, 32)
    run_spot_instance(aws, "g4dn.4xlarge", {"team": "research"})  # 16 vCPUs

    findings = preflight_eks.preflight(stack(), aws)

    assert findings[-1] == Finding(
        "blocking",
        f"quota {SPOT_G}",
        "All G and VT Spot Instance Requests: 32 vCPUs, but the pools need 24 at their max"
        " (t4-shared 3 x 8 vCPUs), and other instances use 16 now.",
        "Request an increase to at least 40: aws service-quotas request-service-quota-increase"
        f" --service-code ec2 --quota-code {SPOT_G} --desired-value 40 --region us-east-1",
    )


def test_the_stacks_own_nodes_count_within_their_pools_max(
    aws: AwsClients, quotas: Stubber
) -> None:
    cluster(aws)
    pod_identity_agent(aws)
    quota(quotas, SPOT_G, 32)
    node_tags = {"eks:cluster-name": "ml-dev", "eks:nodegroup-name": LIVE_GROUP}
    run_spot_instance(aws, "g4dn.2xlarge", node_tags)

    findings = preflight_eks.preflight(stack(), aws)

    assert findings[-1].severity == "ok"
    assert findings[-1].message.endswith("with no other instance using them now.")


def add_spot_l4_pool(c: Config) -> None:
    """A second pool of the spot G quota: 4 g6.xlarge of 4 vCPUs."""
    pools(c).append(
        {
            "name": "l4",
            "instanceTypes": ["g6.xlarge"],
            "max": 4,
            "capacity": "spot",
            "aws": {"amiReleaseVersion": AL2023_RELEASE},
        }
    )


def test_pools_of_one_quota_are_counted_together_and_each_quota_once(
    aws: AwsClients, quotas: Stubber
) -> None:
    cluster(aws)
    pod_identity_agent(aws)
    quota(quotas, SPOT_G, 64)
    quota(quotas, ON_DEMAND_P, 96)

    def more_pools(c: Config) -> None:
        add_spot_l4_pool(c)
        pools(c).append(
            {
                "name": "h100",
                "instanceTypes": ["p5.48xlarge"],
                "max": 1,
                "aws": {"amiReleaseVersion": AL2023_RELEASE},
            }
        )
        # Three pools of `nvidia.com/gpu` under one quota, which queues want split between
        # them (gpu_platform/config/queue_rules.py).
        c["gpu-platform:queues"] = {"enabled": False}

    findings = preflight_eks.preflight(stack(more_pools), aws)

    quota_findings = [f for f in findings if f.subject.startswith("quota ")]
    assert [(f.severity, f.subject) for f in quota_findings] == [
        ("ok", f"quota {SPOT_G}"),
        ("blocking", f"quota {ON_DEMAND_P}"),
    ]
    assert "the 40 the pools need at their max (t4-shared 3 x 8 vCPUs, l4 4 x 4 vCPUs)" in (
        quota_findings[0].message
    )
    assert "96 vCPUs, but the pools need 192" in quota_findings[1].message


def test_a_quota_the_account_never_changed_is_read_from_the_aws_default(
    aws: AwsClients, quotas: Stubber
) -> None:
    cluster(aws)
    pod_identity_agent(aws)
    quotas.add_client_error(
        "get_service_quota", service_error_code="NoSuchResourceException", http_status_code=404
    )
    quotas.add_response(
        "get_aws_default_service_quota",
        {"Quota": {"ServiceCode": "ec2", "QuotaCode": SPOT_G, "Value": 0.0}},
        {"ServiceCode": "ec2", "QuotaCode": SPOT_G},
    )

    findings = preflight_eks.preflight(stack(), aws)

    assert findings[-1].severity == "blocking"
    assert findings[-1].message.startswith("All G and VT Spot Instance Requests: 0 vCPUs")


def test_a_missing_cluster_blocks_and_its_zones_go_unchecked(
    aws: AwsClients, quotas: Stubber
) -> None:
    quota(quotas, SPOT_G, 32)

    findings = preflight_eks.preflight(stack(), aws)

    assert findings[:2] == [
        Finding(
            "blocking",
            "cluster ml-dev",
            "No EKS cluster ml-dev in us-east-1.",
            "Check gpu-platform:cluster.name and gpu-platform:cluster.region, or create the"
            " cluster first.",
        ),
        Finding(
            "warning",
            "pool t4-shared",
            "Zones not checked: the cluster was not found.",
            "Fix the cluster finding and check again.",
        ),
    ]


def test_an_unsupported_kubernetes_version_blocks(aws: AwsClients, quotas: Stubber) -> None:
    cluster(aws, version="1.29")
    pod_identity_agent(aws)
    quota(quotas, SPOT_G, 32)

    findings = preflight_eks.preflight(stack(), aws)

    assert findings[0] == Finding(
        "blocking",
        "cluster ml-dev",
        "Kubernetes 1.29 is not one the platform supports (1.33, 1.34, 1.35, 1.36).",
        "Upgrade the cluster to a supported version.",
    )


def test_a_cluster_that_is_not_active_blocks(aws: AwsClients, quotas: Stubber) -> None:
    cluster(aws)
    pod_identity_agent(aws)
    quota(quotas, SPOT_G, 32)
    described = aws.eks.describe_cluster(name="ml-dev")["cluster"]
    answer(aws.eks, "DescribeCluster", 200, {"cluster": {**described, "status": "UPDATING"}})

    findings = preflight_eks.preflight(stack(), aws)

    assert findings[0] == Finding(
        "blocking",
        "cluster ml-dev",
        "The cluster is UPDATING, not ACTIVE.",
        "Wait until it is ACTIVE (aws eks wait cluster-active), or fix it if it FAILED.",
    )


def test_without_the_pod_identity_agent_the_autoscaler_would_be_stuck(
    aws: AwsClients, quotas: Stubber
) -> None:
    cluster(aws)
    pod_identity_agent(aws, installed=False)
    quota(quotas, SPOT_G, 32)

    findings = preflight_eks.preflight(stack(), aws)

    assert findings[1] == Finding(
        "blocking",
        "cluster ml-dev",
        "No eks-pod-identity-agent add-on: the cluster autoscaler would get no AWS credentials"
        " and never scale a GPU pool up.",
        "aws eks create-addon --cluster-name ml-dev --addon-name eks-pod-identity-agent",
    )


def test_without_the_pod_identity_agent_the_vpc_cni_would_have_no_credentials(
    aws: AwsClients, quotas: Stubber
) -> None:
    # A cluster that runs its own autoscaler: the VPC CNI's role is then the stack's only
    # Pod Identity role.
    cluster(aws)
    pod_identity_agent(aws, installed=False)
    quota(quotas, SPOT_G, 32)

    findings = preflight_eks.preflight(
        stack(lambda c: c.update({"gpu-platform:autoscaler": {"install": False}})), aws
    )

    assert findings[1].severity == "blocking"
    assert findings[1].message == (
        "No eks-pod-identity-agent add-on: the VPC CNI would get no AWS credentials of its own"
        " (cluster.vpcCniRole) and new nodes no pod addresses."
    )


def on_karpenter(config: Config) -> None:
    """The dev stack's pools under Karpenter, which takes whole GPUs and no minimum."""
    config["gpu-platform:provisioner"] = "karpenter"
    config.pop("gpu-platform:autoscaler", None)
    for pool in pools(config):
        pool.pop("sharing", None)
        pool["min"] = 0
    with_whole_gpu_quota(config)


def on_existing_karpenter(config: Config) -> None:
    on_karpenter(config)
    config["gpu-platform:karpenter"] = {"install": False, "nodeRoleArn": ROLE}


def test_without_the_pod_identity_agent_karpenter_would_be_stuck(
    aws: AwsClients, quotas: Stubber
) -> None:
    cluster(aws)
    pod_identity_agent(aws, installed=False)
    quota(quotas, SPOT_G, 32)

    findings = preflight_eks.preflight(stack(on_karpenter), aws)

    assert findings[1] == Finding(
        "blocking",
        "cluster ml-dev",
        "No eks-pod-identity-agent add-on: Karpenter would get no AWS credentials and never"
        " scale a GPU pool up.",
        "aws eks create-addon --cluster-name ml-dev --addon-name eks-pod-identity-agent",
    )


@pytest.mark.parametrize(
    ("change", "reads_config_maps"), [(on_karpenter, False), (on_existing_karpenter, True)]
)
def test_karpenter_checks_get_the_clusters_node_classes_and_on_an_existing_karpenter_aws_auth(
    aws: AwsClients,
    quotas: Stubber,
    monkeypatch: pytest.MonkeyPatch,
    change: Callable[[Config], None],
    reads_config_maps: bool,
) -> None:
    # aws-auth is read only to find the node role of a Karpenter the stack did not install
    # (karpenter_node_access); the EC2NodeClasses of any Karpenter stack (karpenter_efa_layout).
    cluster(aws)
    pod_identity_agent(aws)
    quota(quotas, SPOT_G, 32)
    readers: dict[str, Any] = {}

    def reader(kind: str) -> Callable[[Any], Any]:
        def for_cluster(described: Any) -> Any:
            assert described["name"] == "ml-dev"
            readers[kind] = lambda *_: []
            return readers[kind]

        return for_cluster

    passed: dict[str, Any] = {}

    def spy(*args: Any) -> list[Finding]:
        passed.update(config_maps=args[8], node_classes=args[9])
        return []

    monkeypatch.setattr(preflight_eks, "karpenter_findings", spy)
    clients = replace(
        aws,
        deployments=lambda _: lambda: [],
        config_maps=reader("config_maps"),
        node_classes=reader("node_classes"),
    )

    preflight_eks.preflight(stack(change), clients)

    assert passed["node_classes"] is readers["node_classes"]
    assert passed["config_maps"] is readers.get("config_maps")
    assert ("config_maps" in readers) is reads_config_maps


def test_karpenters_own_nodes_count_within_their_pools_max(
    aws: AwsClients, quotas: Stubber
) -> None:
    cluster(aws)
    pod_identity_agent(aws)
    quota(quotas, SPOT_G, 32)
    # The tags Karpenter puts on every instance it launches (karpenter-provider-aws v1.14.1,
    # pkg/utils/utils.go GetTags).
    run_spot_instance(
        aws,
        "g4dn.2xlarge",
        {"eks:eks-cluster-name": "ml-dev", "karpenter.sh/nodepool": "t4-shared"},
    )

    findings = preflight_eks.preflight(stack(on_karpenter), aws)

    assert findings[-1].severity == "ok"
    assert findings[-1].message.endswith("with no other instance using them now.")


def test_the_agent_is_not_required_where_the_stack_makes_no_pod_identity_role(
    aws: AwsClients, quotas: Stubber
) -> None:
    cluster(aws)
    quota(quotas, SPOT_G, 32)

    def neither(config: Config) -> None:
        config["gpu-platform:autoscaler"] = {"install": False}
        config["gpu-platform:cluster"]["vpcCniRole"] = False

    config = stack(neither)
    findings = preflight_eks.preflight(config, aws)

    assert "eks-pod-identity-agent" not in " ".join(f.message for f in findings)


def test_zones_that_offer_none_of_the_instance_types_block(
    aws: AwsClients, quotas: Stubber
) -> None:
    cluster(aws)
    pod_identity_agent(aws)
    quota(quotas, SPOT_G, 32)

    findings = preflight_eks.preflight(
        stack(lambda c: pools(c)[0].update(zones=["us-east-1e"])), aws
    )

    assert findings[2] == Finding(
        "blocking",
        "pool t4-shared",
        "No zone of us-east-1e offers every instance type: g4dn.xlarge in none;"
        " g4dn.2xlarge in none.",
        "Change gpu-platform:pools[0].zones so that one zone offers them all.",
    )


def test_an_instance_type_the_region_does_not_offer_blocks(
    aws: AwsClients, quotas: Stubber
) -> None:
    cluster(aws)
    pod_identity_agent(aws)

    def p3(c: Config) -> None:
        pools(c)[0].update(instanceTypes=["p3.2xlarge"], accelerator="v100", gpusPerNode=1)

    findings = preflight_eks.preflight(stack(p3), aws)

    assert findings[2] == Finding(
        "blocking",
        "pool t4-shared",
        "Not offered in this region at all: p3.2xlarge.",
        "Choose instance types EC2 offers here in gpu-platform:pools[0].instanceTypes.",
    )


NOW = datetime(2026, 11, 23, 12, tzinfo=UTC)


def capacity_block(**changes: Any) -> dict[str, Any]:
    """A Capacity Block of 2 p5.48xlarge in us-east-1a for a day, begun an hour ago, as EC2's
    DescribeCapacityReservations describes it."""
    return {
        "CapacityReservationId": "cr-0123456789abcdef0",
        "InstanceType": "p5.48xlarge",
        "InstancePlatform": "Linux/UNIX",
        "AvailabilityZone": "us-east-1a",
        "Tenancy": "default",
        "TotalInstanceCount": 2,
        "AvailableInstanceCount": 2,
        "State": "active",
        "ReservationType": "capacity-block",
        "StartDate": NOW - timedelta(hours=1),
        "EndDate": NOW + timedelta(days=1),
        **changes,
    }


def on_demand_reservation(reservation_id: str = ODCR, **changes: Any) -> dict[str, Any]:
    """An active on-demand capacity reservation of 2 p5.48xlarge in us-east-1a, with no end, one
    instance of it in use."""
    block = capacity_block(
        CapacityReservationId=reservation_id,
        ReservationType="default",
        InstanceMatchCriteria="targeted",
        EndDateType="unlimited",
        AvailableInstanceCount=1,
    )
    del block["EndDate"]
    return {**block, **changes}


def block_pool(c: Config, **changes: Any) -> None:
    pools(c)[0].update(
        {
            "capacity": "capacity-block",
            "instanceTypes": ["p5.48xlarge"],
            "accelerator": "h100-80gb",
            "gpusPerNode": 8,
            "zones": ["us-east-1a"],
            "max": 2,
            **changes,
        }
    )
    pools(c)[0]["aws"]["capacityReservationId"] = "cr-0123456789abcdef0"


def reserved_pool(c: Config, **aws: Any) -> None:
    """The dev stack's pool on p5.48xlarge in us-east-1a in capacity reservation ODCR, or in
    what `aws` says instead."""
    block_pool(c, capacity="reserved")
    pools(c)[0]["aws"].update(capacityReservationId=ODCR, **aws)


def on_group(c: Config, **aws: Any) -> None:
    """The reserved pool on the resource group ODCR_GROUP instead."""
    reserved_pool(c, capacityReservationResourceGroupArn=ODCR_GROUP, **aws)
    del pools(c)[0]["aws"]["capacityReservationId"]


def stubbed() -> AwsClients:
    """Clients whose answers the tests give through botocore's Stubber, which checks each
    request and answer against the service's model (moto has neither EC2's capacity
    reservations nor Resource Groups' ListGroupResources)."""
    return AwsClients(
        boto3.client("eks", region_name=REGION),
        boto3.client("ec2", region_name=REGION),
        boto3.client("service-quotas", region_name=REGION),
        boto3.client("resource-groups", region_name=REGION),
    )


def described(ec2: Stubber, reservation: dict[str, Any]) -> None:
    ec2.add_response(
        "describe_capacity_reservations",
        {"CapacityReservations": [reservation]},
        {"CapacityReservationIds": [reservation["CapacityReservationId"]]},
    )


def group_holds(groups: Stubber, *reservation_ids: str) -> None:
    arns = [
        f"arn:aws:ec2:us-east-1:123456789012:capacity-reservation/{rid}" for rid in reservation_ids
    ]
    groups.add_response(
        "list_group_resources",
        {
            "Resources": [
                {
                    "Identifier": {
                        "ResourceArn": arn,
                        "ResourceType": "AWS::EC2::CapacityReservation",
                    }
                }
                for arn in arns
            ]
        },
        {
            "Group": ODCR_GROUP,
            "Filters": [{"Name": "resource-type", "Values": ["AWS::EC2::CapacityReservation"]}],
        },
    )


def reservation_findings(
    change: Callable[[Config], Any], answer: Callable[[Stubber, Stubber], Any]
) -> list[Finding]:
    """The findings for the dev stack changed by `change`, EC2 and Resource Groups answering as
    `answer` has them answer, every answer asked for."""
    clients = stubbed()
    with Stubber(clients.ec2) as ec2, Stubber(clients.resource_groups) as groups:
        answer(ec2, groups)
        found = preflight_eks.reservation_findings(stack(change), clients, NOW)
        ec2.assert_no_pending_responses()
        groups.assert_no_pending_responses()
    return found


def block_findings(block: dict[str, Any], **pool_changes: Any) -> list[Finding]:
    """The findings for a capacity-block pool, EC2 answering with `block`."""
    return reservation_findings(
        lambda c: block_pool(c, **pool_changes), lambda ec2, _: described(ec2, block)
    )


def test_a_capacity_block_that_matches_its_pool_is_reported_with_its_window() -> None:
    assert block_findings(capacity_block(AvailableInstanceCount=1)) == [
        Finding(
            "ok",
            "pool t4-shared",
            "Capacity Block cr-0123456789abcdef0: 2 x p5.48xlarge in us-east-1a (1 free),"
            " 2026-11-23 11:00 to 2026-11-24 12:00 UTC; its instances end with it.",
            "Nothing; drain the pool before the block ends.",
        )
    ]


def test_a_capacity_block_in_another_zone_or_of_another_type_blocks() -> None:
    (finding,) = block_findings(capacity_block(AvailabilityZone="us-east-1b"))

    assert finding == Finding(
        "blocking",
        "pool t4-shared",
        "Capacity Block cr-0123456789abcdef0 does not match the pool: gpu-platform:pools[0].zones"
        " is ['us-east-1a'], the capacity block's ['us-east-1b'].",
        "Set the pool's zones and instance type to the capacity block's, or name another in"
        " gpu-platform:pools[0].aws.capacityReservationId.",
    )


def test_a_pool_larger_than_its_capacity_block_blocks() -> None:
    (finding,) = block_findings(capacity_block(TotalInstanceCount=1))

    assert (finding.severity, finding.message) == (
        "blocking",
        "max (2) is more than Capacity Block cr-0123456789abcdef0 holds (1).",
    )


def scheduled_block() -> dict[str, Any]:
    """The Capacity Block, bought for a day that starts in two days."""
    return capacity_block(
        State="scheduled", StartDate=NOW + timedelta(days=2), EndDate=NOW + timedelta(days=3)
    )


def test_an_ended_capacity_block_blocks() -> None:
    ended = capacity_block(State="expired", EndDate=NOW - timedelta(hours=2))

    (finding,) = block_findings(ended)

    assert (finding.severity, finding.message) == (
        "blocking",
        "Capacity Block cr-0123456789abcdef0 is expired (it ends 2026-11-23 10:00 UTC).",
    )


def test_a_capacity_block_yet_to_start_asks_for_its_start_in_config() -> None:
    later = scheduled_block()

    (finding,) = block_findings(later)

    assert finding == Finding(
        "warning",
        "pool t4-shared",
        "Capacity Block cr-0123456789abcdef0 starts later (2 x p5.48xlarge in us-east-1a (2 free),"
        " 2026-11-25 12:00 to 2026-11-26 12:00 UTC): until then no node starts in it.",
        "Set gpu-platform:pools[0].aws.capacityBlockStart to 2026-11-25T12:00:00+00:00 to grow"
        " the node group then (managed node groups), or leave it to the autoscaler to start nodes"
        " for pending pods.",
    )


def with_block_start(c: Config, start: str) -> None:
    block_pool(c)
    pools(c)[0]["aws"]["capacityBlockStart"] = start


def test_a_capacity_block_starting_when_config_says_is_a_warning_until_it_starts() -> None:
    later = scheduled_block()

    (finding,) = reservation_findings(
        # The same instant, written with another offset.
        lambda c: with_block_start(c, "2026-11-25T13:00:00+01:00"),
        lambda ec2, _: described(ec2, later),
    )

    assert (finding.severity, finding.action) == (
        "warning",
        "Nothing, unless jobs are due before it starts.",
    )


def test_a_capacity_block_starting_at_another_time_than_config_says_blocks() -> None:
    later = scheduled_block()

    (finding,) = reservation_findings(
        lambda c: with_block_start(c, "2026-11-25T11:30:00+00:00"),
        lambda ec2, _: described(ec2, later),
    )

    assert finding == Finding(
        "blocking",
        "pool t4-shared",
        "gpu-platform:pools[0].aws.capacityBlockStart is 2026-11-25T11:30:00+00:00, but Capacity"
        " Block cr-0123456789abcdef0 starts 2026-11-25T12:00:00+00:00: the node group would grow"
        " at another time.",
        "Set gpu-platform:pools[0].aws.capacityBlockStart to 2026-11-25T12:00:00+00:00.",
    )


def test_a_capacity_block_pool_is_checked_against_its_block_not_a_vcpu_quota(
    aws: AwsClients, quotas: Stubber
) -> None:
    cluster(aws)
    pod_identity_agent(aws)
    answer(
        aws.ec2,
        "DescribeCapacityReservations",
        200,
        {"CapacityReservations": [capacity_block(EndDate=datetime(2099, 1, 1, tzinfo=UTC))]},
    )

    findings = preflight_eks.preflight(stack(block_pool), aws)

    assert [f.subject for f in findings].count("pool t4-shared") == 2  # its zones, its block
    assert "Capacity Block cr-0123456789abcdef0: 2 x p5.48xlarge" in findings[-1].message


def test_a_reservation_that_matches_its_pool_is_reported_with_what_is_free() -> None:
    findings = reservation_findings(
        reserved_pool, lambda ec2, _: described(ec2, on_demand_reservation())
    )

    assert findings == [
        Finding(
            "ok",
            "pool t4-shared",
            f"Capacity reservation {ODCR}: 2 x p5.48xlarge in us-east-1a (1 free), active with no"
            " end.",
            "Nothing.",
        )
    ]


def test_a_reservation_ec2_does_not_know_blocks() -> None:
    def unknown(ec2: Stubber, _: Stubber) -> None:
        ec2.add_client_error(
            "describe_capacity_reservations",
            service_error_code="InvalidCapacityReservationId.NotFound",
            expected_params={"CapacityReservationIds": [ODCR]},
        )

    (finding,) = reservation_findings(reserved_pool, unknown)

    assert finding == Finding(
        "blocking",
        "pool t4-shared",
        f"EC2 knows no capacity reservation {ODCR} in this account and region.",
        "Check gpu-platform:pools[0].aws.capacityReservationId.",
    )


@pytest.mark.parametrize(
    ("changes", "mismatch"),
    [
        (
            {"InstancePlatform": "Red Hat Enterprise Linux"},
            "the capacity reservation's platform is Red Hat Enterprise Linux, the nodes'"
            " Linux/UNIX",
        ),
        (
            {"Tenancy": "dedicated"},
            "the capacity reservation's tenancy is dedicated, the nodes' default",
        ),
        (
            {"PlacementGroupArn": "arn:aws:ec2:us-east-1:123456789012:placement-group/train"},
            "it is in placement group arn:aws:ec2:us-east-1:123456789012:placement-group/train",
        ),
    ],
)
def test_a_reservation_the_nodes_cannot_match_blocks(
    changes: dict[str, str], mismatch: str
) -> None:
    # EC2 launches an instance into a reservation only where instance type, platform, zone and
    # tenancy match, and into one made in a placement group only from that group.
    (finding,) = reservation_findings(
        reserved_pool, lambda ec2, _: described(ec2, on_demand_reservation(**changes))
    )

    assert finding.severity == "blocking"
    assert finding.message == f"Capacity reservation {ODCR} does not match the pool: {mismatch}."


OTHER = "cr-0f1e2d3c4b5a69788"


def test_each_reservation_of_a_resource_group_is_checked_and_the_group_summed_up() -> None:
    def answer(ec2: Stubber, groups: Stubber) -> None:
        group_holds(groups, ODCR, OTHER)
        described(ec2, on_demand_reservation())
        described(ec2, on_demand_reservation(OTHER, InstanceType="p4d.24xlarge"))

    findings = reservation_findings(on_group, answer)

    assert findings == [
        Finding(
            "ok",
            "pool t4-shared",
            f"Capacity reservation {ODCR}: 2 x p5.48xlarge in us-east-1a (1 free), active with no"
            " end.",
            "Nothing.",
        ),
        Finding(
            "warning",
            "pool t4-shared",
            f"Capacity reservation {OTHER} does not match the pool:"
            " gpu-platform:pools[0].instanceTypes is ['p5.48xlarge'], the capacity reservation's"
            " ['p4d.24xlarge'].",
            "Nothing for the pool, which launches into the group's other reservations (the"
            " group's finding says how many); remove it from the group if it is of no use.",
        ),
        Finding(
            "ok",
            "pool t4-shared",
            f"Resource group {ODCR_GROUP}: 1 reservation(s) the pool's nodes match, 1 of 2"
            " instances free; past them nodes launch not at all (aws.onDemandFallback is off).",
            "Nothing.",
        ),
    ]


@pytest.mark.parametrize(
    ("fallback", "severity", "past"),
    [
        (False, "blocking", "not at all (aws.onDemandFallback is off)"),
        (True, "warning", "on-demand"),
    ],
)
def test_a_resource_group_with_nothing_the_pool_can_use_blocks_unless_it_falls_back(
    fallback: bool, severity: str, past: str
) -> None:
    def answer(ec2: Stubber, groups: Stubber) -> None:
        group_holds(groups, ODCR)
        described(ec2, on_demand_reservation(State="cancelled"))

    *_, group = reservation_findings(lambda c: on_group(c, onDemandFallback=fallback), answer)

    assert (group.severity, group.message) == (
        severity,
        f"Resource group {ODCR_GROUP} holds no active reservation the pool's nodes match"
        f" (1 reservation(s)): they launch {past}.",
    )


def test_a_resource_group_that_does_not_exist_blocks() -> None:
    def answer(ec2: Stubber, groups: Stubber) -> None:
        groups.add_client_error(
            "list_group_resources", service_error_code="NotFoundException", http_status_code=404
        )

    assert reservation_findings(on_group, answer) == [
        Finding(
            "blocking",
            "pool t4-shared",
            f"No resource group {ODCR_GROUP}.",
            "Check gpu-platform:pools[0].aws.capacityReservationResourceGroupArn.",
        )
    ]


@pytest.mark.parametrize(
    ("capacity", "fallback", "quotas"),
    [
        ("on-demand", False, ("on-demand",)),
        ("spot", False, ("spot",)),
        # Karpenter's NodePool may start every node on either.
        ("spot", True, ("spot", "on-demand")),
        # A reservation counts toward the on-demand quota from when it is made, used or not.
        ("reserved", False, ()),
        ("reserved", True, ("on-demand",)),
        ("capacity-block", False, ()),
    ],
)
def test_a_pool_counts_against_the_vcpu_quotas_of_what_it_may_launch(
    capacity: str, fallback: bool, quotas: tuple[str, ...]
) -> None:
    pool = GpuPoolSpec.model_validate(
        {
            "name": "h100",
            "instanceTypes": ["p5.48xlarge"],
            "max": 2,
            "capacity": capacity,
            "aws": {"onDemandFallback": fallback},
        }
    )

    assert preflight_eks.quota_capacities(pool) == quotas


def test_preflight_makes_read_only_calls_only(aws: AwsClients, quotas: Stubber) -> None:
    cluster(aws)
    pod_identity_agent(aws)
    quota(quotas, SPOT_G, 32)
    calls: list[str] = []
    for client in (aws.eks, aws.ec2, aws.service_quotas):
        client.meta.events.register(
            "before-call", lambda model, **_: calls.append(model.name), unique_id=id(client)
        )

    preflight_eks.preflight(stack(), aws)

    assert calls
    assert all(call.startswith(("Describe", "Get", "List")) for call in calls), calls


# --- Which subnets the GPU nodes use: private by their route tables -----------------------------


def routing(aws: AwsClients, config: StackConfig | None = None) -> dict[str, str]:
    """Subnet id -> why preflight finds it public or private."""
    described = aws.eks.describe_cluster(name="ml-dev")["cluster"]
    found = preflight_eks.node_subnets(config or stack(), aws.ec2, described)
    assert found is not None
    return {s["SubnetId"]: r.explanation() for s, r in found}


def main_table(aws: AwsClients, vpc: str) -> str:
    found = aws.ec2.describe_route_tables(
        Filters=[
            {"Name": "vpc-id", "Values": [vpc]},
            {"Name": "association.main", "Values": ["true"]},
        ]
    )
    (table,) = found["RouteTables"]
    return str(table["RouteTableId"])


def test_a_subnet_without_a_table_of_its_own_follows_the_vpcs_main_table(
    aws: AwsClients,
) -> None:
    network = cluster(aws)
    _, b, _ = network.private
    (association,) = [
        a["RouteTableAssociationId"]
        for t in aws.ec2.describe_route_tables(RouteTableIds=[network.private_table])["RouteTables"]
        for a in t["Associations"]
        if a.get("SubnetId") == b
    ]
    aws.ec2.disassociate_route_table(AssociationId=association)
    main = main_table(aws, network.vpc)
    aws.ec2.create_route(
        RouteTableId=main, DestinationCidrBlock="0.0.0.0/0", GatewayId=network.gateway
    )

    assert routing(aws)[b] == (
        f"public: route table {main} (the VPC's main) sends 0.0.0.0/0 to {network.gateway}"
    )


def test_a_subnet_that_assigns_public_ips_is_private_where_its_routes_reach_no_gateway(
    aws: AwsClients,
) -> None:
    network = cluster(aws)
    a, _, _ = network.private
    aws.ec2.modify_subnet_attribute(SubnetId=a, MapPublicIpOnLaunch={"Value": True})

    assert routing(aws)[a] == (
        f"private: route table {network.private_table} sends 0.0.0.0/0 to {network.nat}"
    )


def test_ipv6_through_an_egress_only_gateway_keeps_a_subnet_private(aws: AwsClients) -> None:
    network = cluster(aws)
    created = aws.ec2.create_egress_only_internet_gateway(VpcId=network.vpc)
    egress_only = created["EgressOnlyInternetGateway"]["EgressOnlyInternetGatewayId"]
    aws.ec2.create_route(
        RouteTableId=network.private_table,
        DestinationIpv6CidrBlock="::/0",
        EgressOnlyInternetGatewayId=egress_only,
    )

    assert routing(aws)[network.private[0]] == (
        f"private: route table {network.private_table} sends 0.0.0.0/0 to {network.nat},"
        f" ::/0 to {egress_only}"
    )


def test_route_tables_are_read_page_by_page(aws: AwsClients) -> None:
    network = cluster(aws)
    tables = aws.ec2.describe_route_tables()["RouteTables"]
    public = [t for t in tables if t["RouteTableId"] == network.public_table]
    pages = [
        {"RouteTables": [t for t in tables if t not in public], "NextToken": "2"},
        {"RouteTables": public},
    ]
    aws.ec2.meta.events.register_first(
        "before-call.ec2.DescribeRouteTables",
        lambda **_: (AWSResponse("https://page", 200, HTTPHeaders(), None), pages.pop(0)),
    )

    found = routing(aws)

    assert pages == []
    assert found[network.public].startswith("public: ")


def test_a_public_subnet_named_in_node_subnet_ids_blocks(aws: AwsClients) -> None:
    network = cluster(aws)
    a, _, _ = network.private
    config = stack(lambda c: c["gpu-platform:cluster"].update(nodeSubnetIds=[a, network.public]))
    described = aws.eks.describe_cluster(name="ml-dev")["cluster"]
    found = preflight_eks.node_subnets(config, aws.ec2, described)
    assert found is not None

    assert preflight_eks.node_subnet_finding(config, found) == Finding(
        "blocking",
        "cluster ml-dev subnets",
        f"gpu-platform:cluster.nodeSubnetIds names public subnets, where GPU nodes must not sit:"
        f" {network.public} (us-east-1a), public: route table {network.public_table} sends"
        f" 0.0.0.0/0 to {network.gateway}.",
        "Name only private subnets in gpu-platform:cluster.nodeSubnetIds: ones whose route"
        " table sends nothing to an internet gateway.",
    )


def test_a_cluster_whose_every_subnet_is_public_blocks_and_leaves_its_zones_unchecked(
    aws: AwsClients, quotas: Stubber
) -> None:
    network = cluster(aws)
    pod_identity_agent(aws)
    quota(quotas, SPOT_G, 32)
    aws.ec2.replace_route(
        RouteTableId=network.private_table,
        DestinationCidrBlock="0.0.0.0/0",
        GatewayId=network.gateway,
    )

    findings = preflight_eks.preflight(stack(), aws)

    (finding,) = [f for f in findings if f.subject == "cluster ml-dev subnets"]
    assert (finding.severity, finding.action) == (
        "blocking",
        "Name private subnets for them in gpu-platform:cluster.nodeSubnetIds.",
    )
    assert finding.message.startswith(
        "Every subnet of the cluster is public: no place for GPU nodes. "
    )
    for subnet, zone in zip(
        network.private, ("us-east-1a", "us-east-1b", "us-east-1e"), strict=True
    ):
        assert (
            f"{subnet} ({zone}), public: route table {network.private_table} sends 0.0.0.0/0 to"
            f" {network.gateway}"
        ) in finding.message
    assert [f.subject for f in findings if f.subject.startswith("pool ")] == []
    assert reachability(findings) == []


NODE_SUBNETS_REACH_OUT = Finding(
    "ok",
    "cluster ml-dev node subnets",
    "Every node subnet reaches the internet through a default route.",
    "Nothing.",
)


def private_subnet_ids(aws: AwsClients) -> list[str]:
    subnets = aws.ec2.describe_subnets()["Subnets"]
    return sorted(s["SubnetId"] for s in subnets if not s["MapPublicIpOnLaunch"])


def reachability(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.subject == "cluster ml-dev node subnets"]


@pytest.fixture
def closed_account(aws: AwsClients, quotas: Stubber) -> AwsClients:
    """A ready account whose node subnets have no route to the internet."""
    cluster(aws, nat=False)
    pod_identity_agent(aws)
    quota(quotas, SPOT_G, 32)
    return aws


def test_node_subnets_without_a_way_out_need_an_endpoint_for_every_aws_api(
    closed_account: AwsClients,
) -> None:
    # Their route table has no 0.0.0.0/0 route: only the public subnet's reaches the internet
    # gateway.
    aws = closed_account

    blocking, registries = reachability(preflight_eks.preflight(stack(), aws))

    assert blocking.severity == "blocking"
    for service in ("ec2", "ecr.api", "ecr.dkr", "s3", "sts", "eks-auth", "eks", "autoscaling"):
        assert f"{service} (" in blocking.message
        assert f"--service-name com.amazonaws.us-east-1.{service} " in blocking.action
    assert registries.severity == "warning"
    assert "images from nvcr.io, registry.k8s.io" in registries.message


def test_endpoints_for_every_aws_api_leave_only_the_public_images(
    closed_account: AwsClients,
) -> None:
    aws = closed_account
    subnets = private_subnet_ids(aws)
    vpc = aws.ec2.describe_subnets(SubnetIds=subnets)["Subnets"][0]["VpcId"]
    for service in ("ec2", "ecr.api", "ecr.dkr", "sts", "eks-auth", "eks", "autoscaling"):
        aws.ec2.create_vpc_endpoint(
            VpcId=vpc,
            ServiceName=f"com.amazonaws.us-east-1.{service}",
            VpcEndpointType="Interface",
            SubnetIds=subnets,
            PrivateDnsEnabled=True,
        )
    aws.ec2.create_vpc_endpoint(
        VpcId=vpc, ServiceName="com.amazonaws.us-east-1.s3", VpcEndpointType="Gateway"
    )

    endpoints, registries = reachability(preflight_eks.preflight(stack(), aws))

    assert endpoints.severity == "ok"
    assert registries.severity == "warning"


def test_an_interface_endpoint_without_private_dns_does_not_count(
    closed_account: AwsClients,
) -> None:
    aws = closed_account
    subnets = private_subnet_ids(aws)
    vpc = aws.ec2.describe_subnets(SubnetIds=subnets)["Subnets"][0]["VpcId"]
    aws.ec2.create_vpc_endpoint(
        VpcId=vpc,
        ServiceName="com.amazonaws.us-east-1.eks",
        VpcEndpointType="Interface",
        SubnetIds=subnets,
        PrivateDnsEnabled=False,
    )

    blocking, _ = reachability(preflight_eks.preflight(stack(), aws))

    assert "eks (the nodes joining" in blocking.message


def test_a_default_route_to_a_deleted_nat_gateway_is_no_way_out(
    aws: AwsClients, quotas: Stubber
) -> None:
    # EC2 keeps the route as a `blackhole` (EC2 API Reference, `Route`); moto keeps it active.
    network = cluster(aws)
    pod_identity_agent(aws)
    quota(quotas, SPOT_G, 32)
    tables = aws.ec2.describe_route_tables()["RouteTables"]
    for route in (r for t in tables for r in t["Routes"] if r.get("NatGatewayId")):
        route["State"] = "blackhole"
    answer(aws.ec2, "DescribeRouteTables", 200, {"RouteTables": tables})

    blocking, _ = reachability(preflight_eks.preflight(stack(), aws))

    assert blocking.severity == "blocking"
    assert all(subnet in blocking.message for subnet in network.private)


def test_preflight_reads_the_route_tables_once(aws: AwsClients, quotas: Stubber) -> None:
    cluster(aws, nat=False)
    pod_identity_agent(aws)
    quota(quotas, SPOT_G, 32)
    reads: list[str] = []
    aws.ec2.meta.events.register(
        "before-call.ec2.DescribeRouteTables", lambda **_: reads.append("DescribeRouteTables")
    )

    findings = preflight_eks.preflight(stack(), aws)

    assert [f.severity for f in reachability(findings)] == ["blocking", "warning"]
    assert reads == ["DescribeRouteTables"]


def documented_permissions() -> set[str]:
    """The IAM actions the docs say preflight needs (docs/deploy.md)."""
    text = (ROOT / "docs" / "deploy.md").read_text()
    section = text.split("**Pre-flight (EKS).**", 1)[1].split("from your usual", 1)[0]
    return set(re.findall(r"`([a-z0-9-]+:[A-Za-z]+)`", section))


def test_the_docs_name_exactly_the_actions_preflight_calls(
    aws: AwsClients, quotas: Stubber
) -> None:
    # Every branch that reaches AWS: node subnets without a way out, a live node group, a
    # Capacity Block pool, a pool on a resource group of reservations, a spot pool whose quota
    # the account never changed (read from the AWS default), instances in use.
    cluster(aws, nat=False)
    pod_identity_agent(aws)
    live_node_group(aws, desired=0)
    run_spot_instance(aws, "g4dn.xlarge", {"team": "research"})
    answer(
        aws.ec2,
        "DescribeCapacityReservations",
        200,
        {"CapacityReservations": [capacity_block(EndDate=datetime(2099, 1, 1, tzinfo=UTC))]},
    )
    arn = f"arn:aws:ec2:us-east-1:123456789012:capacity-reservation/{ODCR}"
    answer(
        aws.resource_groups,
        "ListGroupResources",
        200,
        {"Resources": [{"Identifier": {"ResourceArn": arn}}]},
    )
    quotas.add_client_error(
        "get_service_quota", service_error_code="NoSuchResourceException", http_status_code=404
    )
    quotas.add_response(
        "get_aws_default_service_quota",
        {"Quota": {"ServiceCode": "ec2", "QuotaCode": SPOT_G, "Value": 64.0}},
        {"ServiceCode": "ec2", "QuotaCode": SPOT_G},
    )
    calls: set[str] = set()
    for client in (aws.eks, aws.ec2, aws.service_quotas, aws.resource_groups, aws.iam):
        # Emitted for every call, before a stand-in answer or the Stubber takes it.
        client.meta.events.register(
            "before-parameter-build",
            lambda model, **_: calls.add(f"{model.service_model.signing_name}:{model.name}"),
            unique_id=f"record-{id(client)}",
        )

    def pools_of_every_kind(c: Config) -> None:
        block_pool(c)
        add_spot_l4_pool(c)
        pools(c).append(
            {
                "name": "h100-reserved",
                "instanceTypes": ["p5.48xlarge"],
                "max": 2,
                "capacity": "reserved",
                "aws": {
                    "amiReleaseVersion": AL2023_RELEASE,
                    "capacityReservationResourceGroupArn": ODCR_GROUP,
                },
            }
        )
        # Pools of `nvidia.com/gpu` under one quota, which queues want split between them
        # (gpu_platform/config/queue_rules.py).
        c["gpu-platform:queues"] = {"enabled": False}

    preflight_eks.preflight(stack(pools_of_every_kind), aws)
    # A Karpenter stack with a spot pool reads the Spot service-linked role; one on an existing
    # Karpenter, its controller's role (EKS Pod Identity and IAM's simulator, which moto lacks).
    preflight_karpenter.karpenter_findings(stack(on_karpenter), None, aws.iam)
    with Stubber(aws.eks) as eks, Stubber(aws.iam) as iam:
        eks.add_response(
            "list_pod_identity_associations", {"associations": [{"associationId": "a"}]}
        )
        eks.add_response(
            "describe_pod_identity_association",
            {"association": {"roleArn": f"arn:aws:iam::123456789012:role/{CONTROLLER_ROLE_NAME}"}},
        )
        iam.add_response("simulate_principal_policy", {"EvaluationResults": []})
        eks.add_response("describe_access_entry", {"accessEntry": {"type": "EC2_LINUX"}})
        existing = {
            "name": "ml-dev",
            "arn": "arn:aws:eks:us-east-1:123456789012:cluster/ml-dev",
            "accessConfig": {"authenticationMode": "API"},
        }
        controller_permissions_finding(stack(on_existing_karpenter), existing, aws.eks, aws.iam)
        node_role_access_finding(stack(on_existing_karpenter), existing, aws.eks)

    assert calls == documented_permissions()
    # The refusal message names the same actions.
    assert set(preflight_eks.READ_ONLY_PERMISSIONS) == calls


# --- The command ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spot_g_quota", "exit_code", "last_line"),
    # The dev stack needs 12 spot G vCPUs: 3 g4dn.xlarge of 4 each.
    [(8, 1, "1 blocking finding(s)."), (16, 0, "Nothing blocks `pulumi up`.")],
)
def test_the_command_exits_non_zero_on_a_blocking_finding(
    aws: AwsClients,
    quotas: Stubber,
    monkeypatch: pytest.MonkeyPatch,
    spot_g_quota: int,
    exit_code: int,
    last_line: str,
) -> None:
    cluster(aws)
    pod_identity_agent(aws)
    quota(quotas, SPOT_G, spot_g_quota)
    monkeypatch.setattr(AwsClients, "for_region", classmethod(lambda cls, *_, **__: aws))

    result = CliRunner().invoke(app, ["preflight", "dev"])

    assert result.exit_code == exit_code, result.output
    assert result.output.rstrip().endswith(last_line)


def test_a_program_checks_a_stack_and_reads_its_findings(
    aws: AwsClients, quotas: Stubber, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`check_stack`, as a program (Automation API, a test harness) calls it: the findings are
    returned, nothing is printed and nothing exits."""
    cluster(aws)
    pod_identity_agent(aws)
    # The dev stack needs 12 spot G vCPUs: 3 g4dn.xlarge of 4 each.
    quota(quotas, SPOT_G, 8)
    monkeypatch.setattr(AwsClients, "for_region", classmethod(lambda cls, *_, **__: aws))

    report = check_stack("dev", timeout_seconds=30)

    assert report.stack == "dev"
    assert CLUSTER_OK in report.findings
    # The chart index the `chart_repository` fixture serves (tests/preflight_fixtures.py).
    assert Finding("ok", "chart gpu-operator v26.7.0", ANY, "") in report.findings
    (blocking,) = report.blocking
    assert (blocking.severity, blocking.subject) == ("blocking", f"quota {SPOT_G}")


# --- When it cannot check --------------------------------------------------------------------


@pytest.fixture
def no_aws_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> pytest.MonkeyPatch:
    """No credentials, profile or endpoint from this machine's environment or files."""
    for name in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_ENDPOINT_URL",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return monkeypatch


def test_a_program_is_told_it_cannot_check_without_credentials(
    no_aws_settings: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(CannotCheck, match="Cannot check stack dev: no usable AWS credentials"):
        check_stack("dev", timeout_seconds=30)


def test_without_credentials_it_says_it_cannot_check_and_how_to_fix_it(
    no_aws_settings: pytest.MonkeyPatch,
) -> None:
    result = CliRunner().invoke(app, ["preflight", "dev"])

    assert result.exit_code == EXIT_CANNOT_CHECK
    assert "Cannot check stack dev: no usable AWS credentials" in result.output
    assert "AWS_PROFILE" in result.output
    assert "Traceback" not in result.output


def test_without_a_way_to_aws_it_says_it_cannot_check(no_aws_settings: pytest.MonkeyPatch) -> None:
    no_aws_settings.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE")
    no_aws_settings.setenv("AWS_SECRET_ACCESS_KEY", "example")
    # Nothing listens on the discard port of this machine's loopback.
    no_aws_settings.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    no_aws_settings.setenv("AWS_MAX_ATTEMPTS", "1")

    result = CliRunner().invoke(app, ["preflight", "dev"])

    assert result.exit_code == EXIT_CANNOT_CHECK
    assert "AWS could not be reached" in result.output


def test_a_credential_lookup_that_never_ends_is_named_at_the_deadline(
    no_aws_settings: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    # A profile whose credentials come from a program that does not finish by the deadline, as
    # a credential_process waiting on a hardware key or a browser login does (botocore's
    # ProcessProvider runs it and waits). It ends a second past the deadline, so that the lookup
    # the deadline gave up on ends with the test (tests/abandoned_work.py).
    config = tmp_path / "config"
    config.write_text("[default]\ncredential_process = sleep 3\n")
    no_aws_settings.setenv("AWS_CONFIG_FILE", str(config))

    started = time.monotonic()
    result = CliRunner().invoke(app, ["preflight", "dev", "--timeout", "2"])
    took = time.monotonic() - started

    assert result.exit_code == EXIT_CANNOT_CHECK
    assert (
        "Cannot check stack dev: the 2 s deadline passed while looking for AWS credentials (a"
        " credential_process, an SSO token or an assumed role that does not come back holds it;"
        " `aws sts get-caller-identity` with the same profile shows which)." in result.output
    )
    assert 2 <= took < 2 + DEADLINE_MARGIN_SECONDS


def test_a_refused_permission_is_named_with_what_the_check_needs(
    aws: AwsClients, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(AwsClients, "for_region", classmethod(lambda cls, *_, **__: aws))

    with Stubber(aws.eks) as eks:
        eks.add_client_error(
            "describe_cluster",
            service_error_code="AccessDeniedException",
            service_message="User is not authorized to perform: eks:DescribeCluster",
        )
        result = CliRunner().invoke(app, ["preflight", "dev"])

    assert result.exit_code == EXIT_CANNOT_CHECK
    assert "AWS refused DescribeCluster (AccessDeniedException" in result.output
    assert "eks:DescribeCluster, eks:DescribeAddon" in result.output


# --- Throttling and a network that never answers ---------------------------------------------

# What AWS answers a caller over its request rate, in each service's protocol: EC2's query API
# answers RequestLimitExceeded ("Request throttling for the Amazon EC2 API"); Service Quotas, a
# JSON API, its own TooManyRequestsException (its model's GetServiceQuota errors), or
# ThrottlingException as AWS's JSON APIs do. botocore's legacy retry mode retries none of
# TooManyRequestsException (botocore/data/_retry.json: a 429 only).
EC2_THROTTLED = (
    503,
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error>'
    b"<Code>RequestLimitExceeded</Code><Message>Request limit exceeded.</Message>"
    b"</Error></Errors><RequestID>5c8e1e8a-throttled</RequestID></Response>",
)
JSON_THROTTLED = (400, b'{"__type": "ThrottlingException", "message": "Rate exceeded"}')
TOO_MANY_REQUESTS = (
    400,
    b'{"__type": "TooManyRequestsException", "Message": "Due to throttling, the request was'
    b' denied."}',
)
SPOT_G_32 = (
    200,
    f'{{"Quota": {{"ServiceCode": "ec2", "QuotaCode": "{SPOT_G}", "Value": 32.0}}}}'.encode(),
)


def answer_over_http(client: Any, operation: str, answers: list[tuple[int, bytes]]) -> list[str]:
    """Answer `operation`'s attempts with `answers` in turn, as the service would over HTTP:
    inside botocore's retries, which run after `before-send` (botocore/endpoint.py). The
    Stubber answers at `before-call`, ahead of them, and would never see a retry. Attempts past
    the answers are left to moto. Lists the attempts answered, each by the `amz-sdk-request`
    header it was sent with (`attempt=1; max=5`)."""
    answered: list[str] = []

    def respond(request: Any, **_: Any) -> AWSResponse | None:
        if len(answered) == len(answers):
            return None
        status, body = answers[len(answered)]
        answered.append(request.headers["amz-sdk-request"].decode())
        return AWSResponse(request.url, status, HTTPHeaders(), RawBody(body))

    service = client.meta.service_model.service_id.hyphenize()
    client.meta.events.register(f"before-send.{service}.{operation}", respond)
    return answered


class RawBody:
    """A urllib3 response's body as botocore reads it (`AWSResponse.content`)."""

    def __init__(self, body: bytes):
        self._body = body

    def stream(self, *_: Any, **__: Any) -> Iterator[bytes]:
        yield self._body


@pytest.fixture
def backoffs(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The waits botocore's retries ask for, recorded instead of slept, so that a test sees the
    backoff without waiting it out."""
    waits: list[float] = []
    monkeypatch.setattr(botocore.endpoint, "time", SimpleNamespace(sleep=waits.append))
    return waits


@pytest.mark.parametrize(
    ("client", "operation", "answers"),
    [
        ("ec2", "DescribeInstanceTypeOfferings", [EC2_THROTTLED, EC2_THROTTLED]),
        ("service_quotas", "GetServiceQuota", [JSON_THROTTLED, JSON_THROTTLED, SPOT_G_32]),
        ("service_quotas", "GetServiceQuota", [TOO_MANY_REQUESTS, TOO_MANY_REQUESTS, SPOT_G_32]),
    ],
    ids=["ec2-request-limit", "service-quotas-throttling", "service-quotas-too-many-requests"],
)
def test_a_throttled_call_is_retried_with_backoff_until_it_is_answered(
    aws: AwsClients,
    backoffs: list[float],
    client: str,
    operation: str,
    answers: list[tuple[int, bytes]],
) -> None:
    network = cluster(aws)
    pod_identity_agent(aws)
    throttled = answer_over_http(getattr(aws, client), operation, answers)
    if client != "service_quotas":
        answer_over_http(aws.service_quotas, "GetServiceQuota", [SPOT_G_32])

    findings = preflight_eks.preflight(stack(), aws)

    assert findings == ready(network)
    # Standard mode states the attempts it allows from the first attempt on
    # (botocore/retries/standard.py, MaxAttemptsSeeder); legacy mode only once it retries, so
    # that its first attempt goes out as `attempt=1` (botocore/retryhandler.py,
    # MaxAttemptsDecorator).
    assert throttled == ["attempt=1; max=5", "attempt=2; max=5", "attempt=3; max=5"][: len(answers)]
    assert getattr(aws, client).meta.config.retries == {"mode": "standard", "total_max_attempts": 5}
    # Two retries, each after a random share of botocore's throttling backoff: at most 1 s, then
    # 2 s (botocore/retries/standard.py, ExponentialBackoff: base 1 s for throttling errors).
    assert len(backoffs) == 2
    assert backoffs[0] <= 1 and backoffs[1] <= 2


def test_a_call_throttled_on_every_attempt_ends_in_exit_4_naming_the_api(
    aws: AwsClients, backoffs: list[float], monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster(aws)
    pod_identity_agent(aws)

    def always_throttled(
        cls: Any, region: str, deadline: Deadline, calls: Calls, with_iam: bool = False
    ) -> AwsClients:
        clients = FOR_REGION(region, deadline, calls, with_iam)
        pod_identity_agent(clients)
        answer_over_http(clients.service_quotas, "GetServiceQuota", [JSON_THROTTLED] * 10)
        return clients

    monkeypatch.setattr(AwsClients, "for_region", classmethod(always_throttled))

    result = CliRunner().invoke(app, ["preflight", "dev"])

    assert result.exit_code == EXIT_CANNOT_CHECK
    assert (
        "Cannot check stack dev: AWS throttled service-quotas GetServiceQuota (ThrottlingException:"
        " Rate exceeded) 5 time(s) in 5 attempts, backing off between them" in result.output
    )
    assert len(backoffs) == 4


@pytest.mark.parametrize(
    ("seconds", "timeouts"), [(30, (5, 15)), (3, (3, 3))], ids=["default", "short"]
)
def test_every_client_gives_up_within_its_timeouts_and_retries_in_standard_mode(
    seconds: int, timeouts: tuple[float, float]
) -> None:
    clients = AwsClients.for_region(REGION, Deadline(seconds), Calls())

    assert [
        (c.meta.config.connect_timeout, c.meta.config.read_timeout, c.meta.config.retries)
        for c in (clients.eks, clients.ec2, clients.service_quotas, clients.resource_groups)
    ] == [(*timeouts, {"mode": "standard", "total_max_attempts": 5})] * 4


def test_the_tenant_namespaces_are_read_at_the_clusters_endpoint_within_the_deadlines_timeouts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # An endpoint out of reach (a private one, `publicAccessCidrs`) costs one connect timeout of
    # the deadline's, not a 30 s one of its own: one read then says so for every namespace.
    sent: list[tuple[str, Any, str]] = []

    def get(self: requests.Session, url: str, **kwargs: Any) -> requests.Response:
        sent.append((url, kwargs["timeout"], kwargs["headers"]["Authorization"][:18]))
        response = requests.Response()
        response.status_code = 404
        return response

    monkeypatch.setattr(requests.Session, "get", get)
    described = {
        "name": "ml-dev",
        "endpoint": "https://ABC.gr7.us-east-1.eks.amazonaws.com",
        "certificateAuthority": {"data": base64.b64encode(b"CA PEM").decode()},
    }
    with mock_aws():
        clients = AwsClients.for_region(REGION, Deadline(10), Calls())
        assert clients.kube is not None

        assert clients.kube(described)("/api/v1/namespaces/ml-sandbox") is None

    assert sent == [
        (
            "https://ABC.gr7.us-east-1.eks.amazonaws.com/api/v1/namespaces/ml-sandbox",
            (5, 10),
            "Bearer k8s-aws-v1.",
        )
    ]


def test_the_command_checks_karpenters_crds_for_the_project_and_stacks_mark(
    no_aws_settings: pytest.MonkeyPatch,
) -> None:
    no_aws_settings.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE")
    no_aws_settings.setenv("AWS_SECRET_ACCESS_KEY", "example")
    marks: list[str] = []

    def checked(config: StackConfig, clients: AwsClients, mark: str) -> list[Finding]:
        marks.append(mark)
        return []

    no_aws_settings.setattr(preflight_eks, "preflight", checked)

    CliRunner().invoke(app, ["preflight", "karpenter-dev", "--timeout", "60"])

    # What the karpenter-crd release writes (test_karpenter_controller): Pulumi.yaml's name.
    assert marks == ["gpu-platform/karpenter-dev"]


def test_the_command_gives_every_client_the_timeouts_of_the_deadline_it_was_given(
    no_aws_settings: pytest.MonkeyPatch,
) -> None:
    no_aws_settings.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE")
    no_aws_settings.setenv("AWS_SECRET_ACCESS_KEY", "example")
    made: list[AwsClients] = []
    done = threading.Event()

    def checked(config: StackConfig, clients: AwsClients, mark: str) -> list[Finding]:
        made.append(clients)
        done.set()
        return []

    no_aws_settings.setattr(preflight_eks, "preflight", checked)

    CliRunner().invoke(app, ["preflight", "dev", "--timeout", "4"])

    # On a busy machine the clients may take longer to load than the 4 s: they are made all
    # the same, after the command has given up on them.
    assert done.wait(60)
    (clients,) = made
    # (connect, read): each the smaller of 5 s and 15 s and the 4 s deadline.
    assert [
        (c.meta.config.connect_timeout, c.meta.config.read_timeout, c.meta.config.retries)
        for c in (clients.eks, clients.ec2, clients.service_quotas, clients.resource_groups)
    ] == [(4, 4, {"mode": "standard", "total_max_attempts": 5})] * 4


def test_on_a_network_that_never_answers_it_exits_4_by_the_deadline_naming_the_endpoint(
    no_aws_settings: pytest.MonkeyPatch, silent_endpoint: str
) -> None:
    no_aws_settings.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE")
    no_aws_settings.setenv("AWS_SECRET_ACCESS_KEY", "example")
    no_aws_settings.setenv("AWS_ENDPOINT_URL", silent_endpoint)

    started = time.monotonic()
    result = CliRunner().invoke(app, ["preflight", "dev", "--timeout", "3"])
    took = time.monotonic() - started

    assert result.exit_code == EXIT_CANNOT_CHECK
    assert (
        f"Cannot check stack dev: {silent_endpoint} did not answer eks DescribeCluster within"
        " the 3 s deadline." in result.output
    )
    assert 3 <= took < 3 + DEADLINE_MARGIN_SECONDS


# --- Size changes on live node groups ------------------------------------------------------------

# As the AWS provider names the pool's node group from its prefix (Terraform's unique suffix).
LIVE_GROUP = "t4-shared-2026112312000000000000000a"


def live_node_group(aws: AwsClients, desired: int, name: str = LIVE_GROUP) -> None:
    aws.eks.create_nodegroup(
        clusterName="ml-dev",
        nodegroupName=name,
        nodeRole="arn:aws:iam::123456789012:role/t4-shared-nodes",
        subnets=aws.eks.describe_cluster(name="ml-dev")["cluster"]["resourcesVpcConfig"][
            "subnetIds"
        ][:1],
        scalingConfig={"minSize": 0, "maxSize": 3, "desiredSize": desired},
    )


def test_raising_min_above_the_running_size_warns_of_the_nodes_it_starts(
    aws: AwsClients,
) -> None:
    # The update sends the live desired size moved within the new bounds
    # (gpu_platform/eks/live_scaling.py), so EKS accepts it; preflight says what it costs.
    cluster(aws)
    live_node_group(aws, desired=0)

    findings = preflight_eks.live_node_group_findings(
        stack(lambda c: pools(c)[0].update(min=2)), aws.eks
    )

    assert findings == [
        Finding(
            "warning",
            "pool t4-shared",
            f"gpu-platform:pools[0].min (2) is above node group {LIVE_GROUP}'s running size (0):"
            " pulumi up starts 2 more node(s), paid for while idle.",
            "Nothing to do if that is meant.",
        )
    ]


def test_lowering_max_below_the_running_size_warns_of_the_nodes_it_removes(
    aws: AwsClients,
) -> None:
    cluster(aws)
    live_node_group(aws, desired=3)

    (finding,) = preflight_eks.live_node_group_findings(
        stack(lambda c: pools(c)[0].update(max=2)), aws.eks
    )

    assert finding.severity == "warning"
    assert finding.message.endswith("pulumi up removes 1 running node(s), with the jobs on them.")


def test_per_zone_groups_are_held_to_their_zones_share_of_the_bounds(aws: AwsClients) -> None:
    cluster(aws)
    for zone in ("us-east-1a", "us-east-1b"):
        live_node_group(aws, desired=0, name=f"t4-shared-{zone}-2026112312000000000000000a")

    findings = preflight_eks.live_node_group_findings(
        stack(lambda c: pools(c)[0].update(min=3)), aws.eks
    )

    assert [f.message.split(" is above")[0] for f in findings] == [
        "gpu-platform:pools[0].min (2, us-east-1a's share)",
        "gpu-platform:pools[0].min (1, us-east-1b's share)",
    ]


def test_sizes_the_live_group_admits_and_other_groups_are_left_alone(aws: AwsClients) -> None:
    cluster(aws)
    live_node_group(aws, desired=1)
    live_node_group(aws, desired=0, name="t4-shared-by-hand")

    assert preflight_eks.live_node_group_findings(stack(), aws.eks) == []


def test_a_live_group_that_kept_the_old_repair_threshold_is_reported_with_its_fix(
    aws: AwsClients,
) -> None:
    # A node group made by an earlier release, which sent a 20 % threshold. EKS answers it in
    # DescribeNodegroup (botocore's EKS model: Nodegroup.nodeRepairConfig, NodeRepairConfig's
    # members); moto 5.2.5 keeps it but leaves it out of its answer, so it is added there.
    cluster(aws)
    live_node_group(aws, desired=1)
    old = {
        "enabled": True,
        "maxParallelNodesRepairedCount": 1,
        "maxUnhealthyNodeThresholdPercentage": 20,
    }

    def with_old_repair(parsed: dict[str, Any], **_: Any) -> None:
        parsed["nodegroup"]["nodeRepairConfig"] = old

    aws.eks.meta.events.register("after-call.eks.DescribeNodegroup", with_old_repair)

    (finding,) = preflight_eks.live_node_group_findings(stack(), aws.eks)

    # EKS user guide, node-repair: repair stops while the unhealthy share is above the
    # percentage; one node of four is 25 %, of five 20 %.
    assert (finding.severity, finding.subject, finding.message) == (
        "warning",
        "pool t4-shared",
        f"Node group {LIVE_GROUP} keeps maxUnhealthyNodeThresholdPercentage 20 from an earlier"
        " release of the platform: EKS stops repairing while more than 20% of its nodes are"
        " unhealthy, so with up to 4 node(s) one unhealthy node is never repaired. The program"
        " sends no percentage (a count only where"
        " gpu-platform:pools[0].aws.nodeRepairMaxUnhealthyNodes is set), and whether an update"
        " that omits it clears it is unverified.",
    )
    # botocore's EKS model (1.44.5), NodeRepairConfig: of the count and the percentage "you
    # cannot also set" one with the other, and a PercentCapacity is 1 to 100. The first route
    # sends 100 in the percentage's own member, the second turns repair off and on.
    command = (
        f"aws eks update-nodegroup-config --cluster-name ml-dev --nodegroup-name {LIVE_GROUP}"
        " --node-repair-config"
    )
    first, sent, between, off, after = finding.action.split("'")
    assert first == (
        "Replace it in place (maxUnhealthyNodeThresholdPercentage 100, which no share of"
        " unhealthy nodes is above, in the same member, so that no count sits beside it):"
        f" {command} "
    )
    assert between == (
        ". The API takes no count beside a percentage, and whether an update merges into the"
        " stored configuration is unverified: if EKS refuses that or the percentage stays, turn"
        f" repair off and on again: {command} "
    )
    assert json.loads(off) == {"enabled": False}
    assert after == (
        ", then the first command again without maxUnhealthyNodeThresholdPercentage (whether"
        " turning repair off drops the stored threshold is unverified too). Then check that"
        " maxUnhealthyNodeThresholdPercentage is 100 or gone: aws eks describe-nodegroup"
        f" --cluster-name ml-dev --nodegroup-name {LIVE_GROUP} --query nodegroup.nodeRepairConfig."
        " To stop repair above a number of unhealthy nodes instead, set"
        " gpu-platform:pools[0].aws.nodeRepairMaxUnhealthyNodes, which `up` then sends (a count"
        " you raise with `max` yourself: one printed here from `max` would go stale when it"
        " grows), and take the second route with maxUnhealthyNodeThresholdCount in place of the"
        " percentage."
    )
    repair = json.loads(sent)
    # No count from the pool's max (3): it would go stale when max grows.
    assert "maxUnhealthyNodeThresholdCount" not in repair
    assert (
        repair["enabled"],
        repair["maxParallelNodesRepairedCount"],
        repair["maxUnhealthyNodeThresholdPercentage"],
    ) == (True, 1, 100)
    # XID 13 is an application's fault (NVIDIA's XID catalog): no repair, as the program sends.
    assert {
        "nodeMonitoringCondition": "AcceleratedHardwareReady",
        "nodeUnhealthyReason": "NvidiaXID13Error",
        "minRepairWaitTimeMins": 10,
        "repairAction": "NoAction",
    } in repair["nodeRepairConfigOverrides"]


def old_threshold(percentage: int) -> dict[str, Any]:
    """A DescribeNodegroup `nodegroup` of the dev pool repairing up to `percentage`."""
    return {
        "nodegroupName": LIVE_GROUP,
        "nodeRepairConfig": {"enabled": True, "maxUnhealthyNodeThresholdPercentage": percentage},
    }


def test_a_leftover_threshold_sends_the_pools_own_count_in_its_place() -> None:
    def with_count(c: Config) -> None:
        pools(c)[0]["aws"]["nodeRepairMaxUnhealthyNodes"] = 2

    finding = leftover_threshold_finding("ml-dev", 0, stack(with_count).pools[0], old_threshold(20))

    assert finding is not None
    first, sent, _, off, after = finding.action.split("'")
    assert first.startswith(
        "Replace it in place (the count gpu-platform:pools[0].aws.nodeRepairMaxUnhealthyNodes"
        " sets, which `up` sends too): aws eks update-nodegroup-config"
    )
    assert "maxUnhealthyNodeThresholdPercentage" not in json.loads(sent)
    assert json.loads(sent)["maxUnhealthyNodeThresholdCount"] == 2
    assert json.loads(off) == {"enabled": False}
    assert after.startswith(", then the first command again (whether turning repair off")
    assert after.endswith("--query nodegroup.nodeRepairConfig.")


def test_a_leftover_threshold_is_no_finding_without_repair_or_where_one_node_is_below_it() -> None:
    def without_repair(c: Config) -> None:
        pools(c)[0]["aws"]["nodeRepair"] = False

    # One unhealthy node of any group is at most 100 %, never above a threshold of 100.
    assert leftover_threshold_finding("ml-dev", 0, stack().pools[0], old_threshold(100)) is None
    # With repair off no threshold stops anything.
    assert (
        leftover_threshold_finding("ml-dev", 0, stack(without_repair).pools[0], old_threshold(20))
        is None
    )


def efa_pool(c: Config, instance_type: str = "p5.48xlarge") -> None:
    pools(c)[0].update(
        instanceTypes=[instance_type],
        accelerator=None,
        gpusPerNode=None,
        zones=["us-east-1a"],
    )
    pools(c)[0]["aws"]["efa"] = True


def test_an_efa_pool_is_told_its_adapters_from_ec2s_own_description(aws: AwsClients) -> None:
    described = preflight_eks.describe_instance_types(aws.ec2, ["p5.48xlarge"])

    (finding,) = preflight_eks.efa_findings(stack(efa_pool), described)

    assert finding.severity == "ok"
    assert finding.message.startswith("32 EFA interface(s) a node, in one zone (us-east-1a)")


def test_an_efa_pool_outside_a_reservation_is_told_of_its_placement_group(
    aws: AwsClients,
) -> None:
    described = preflight_eks.describe_instance_types(aws.ec2, ["p5.48xlarge"])

    (finding,) = preflight_eks.efa_findings(stack(efa_pool), described)

    assert "and a cluster placement group" in finding.message


def test_an_efa_capacity_block_pool_is_told_ec2_places_it_without_a_placement_group(
    aws: AwsClients,
) -> None:
    def block(c: Config) -> None:
        efa_pool(c)
        pools(c)[0].update(capacity="capacity-block", min=0)
        pools(c)[0]["aws"]["capacityReservationId"] = "cr-0123456789abcdef0"

    described = preflight_eks.describe_instance_types(aws.ec2, ["p5.48xlarge"])

    (finding,) = preflight_eks.efa_findings(stack(block), described)

    assert finding.message == (
        "32 EFA interface(s) a node, in one zone (us-east-1a), placed by EC2 in the reservation,"
        " with no placement group of the stack's (a launch into one matches only reservations"
        " made in it)."
    )


def arm64_pool(c: Config) -> None:
    pools(c)[0].update(instanceTypes=["g5g.xlarge"], accelerator="t4", gpusPerNode=1)


def test_an_arm64_pool_that_repairs_its_nodes_is_told_no_gpu_fault_repairs_them(
    aws: AwsClients,
) -> None:
    # The agent turns NVIDIA monitoring off on arm64 (aws/eks-node-monitoring-agent v1.7.0
    # monitors/nvidia/monitor.go), and EC2 describes g5g.xlarge as arm64.
    described = preflight_eks.describe_instance_types(aws.ec2, ["g5g.xlarge"])

    (finding,) = arm64_repair_findings(stack(arm64_pool), described)

    assert (finding.severity, finding.subject, finding.message) == (
        "warning",
        "pool t4-shared",
        "g5g.xlarge run arm64, where the EKS node monitoring agent watches no GPU: node repair"
        " acts on the kubelet's and the agent's other conditions, never on an XID, ECC or NVLink"
        " error.",
    )
    assert "gpu-platform:pools[0].aws.nodeRepair" in finding.action


def test_amd64_pools_and_arm64_pools_without_repair_are_not_warned(aws: AwsClients) -> None:
    def without_repair(c: Config) -> None:
        arm64_pool(c)
        pools(c)[0]["aws"]["nodeRepair"] = False

    described = preflight_eks.describe_instance_types(
        aws.ec2, ["g4dn.xlarge", "g4dn.2xlarge", "g5g.xlarge"]
    )

    assert arm64_repair_findings(stack(), described) == []
    assert arm64_repair_findings(stack(without_repair), described) == []


def test_an_efa_pool_of_an_instance_type_without_efa_blocks(aws: AwsClients) -> None:
    config = stack(lambda c: efa_pool(c, "g4dn.xlarge"))

    described = preflight_eks.describe_instance_types(aws.ec2, ["g4dn.xlarge"])

    (finding,) = preflight_eks.efa_findings(config, described)

    assert (finding.severity, finding.message) == (
        "blocking",
        "aws.efa is on, but EC2 gives g4dn.xlarge no EFA.",
    )


def test_an_efa_pool_of_instance_types_with_other_efa_counts_blocks(aws: AwsClients) -> None:
    # Every node of a pool launches with one list of interfaces (aws/karpenter-provider-aws
    # v1.14.1 pkg/providers/launchtemplate/launchtemplate.go `generateNetworkInterfaces`; a
    # node group's launch template likewise); EC2 gives p5.4xlarge 1 EFA, p5.48xlarge 32.
    def mixed(c: Config) -> None:
        efa_pool(c)
        pools(c)[0]["instanceTypes"] = ["p5.4xlarge", "p5.48xlarge"]

    described = preflight_eks.describe_instance_types(aws.ec2, ["p5.4xlarge", "p5.48xlarge"])

    (finding,) = preflight_eks.efa_findings(stack(mixed), described)

    assert (finding.severity, finding.message, finding.action) == (
        "blocking",
        "aws.efa is on, but its instance types take different numbers of EFA interfaces"
        " (p5.4xlarge 1, p5.48xlarge 32), and every node of a pool launches with the same ones.",
        "Give gpu-platform:pools[0].instanceTypes instance types of one number, and make a pool"
        " for each other number.",
    )


def own_autoscaler(config: Config) -> None:
    config["gpu-platform:autoscaler"] = {"install": False}


OLD_AUTOSCALER = {
    "metadata": {"namespace": "kube-system", "name": "cluster-autoscaler"},
    "spec": {
        "template": {
            "spec": {
                "containers": [
                    {"image": "registry.k8s.io/autoscaling/cluster-autoscaler:v1.35.0"},
                ]
            }
        }
    },
}


def test_the_autoscaler_a_cluster_runs_itself_is_read_from_its_deployment(
    aws: AwsClients, quotas: Stubber
) -> None:
    cluster(aws)
    # The VPC CNI's own role reaches it through Pod Identity, installed autoscaler or not.
    pod_identity_agent(aws)
    quota(quotas, SPOT_G, 32)
    asked: list[str] = []

    def deployments(described: Any) -> Callable[[], list[Any]]:
        asked.append(described["name"])
        return lambda: [OLD_AUTOSCALER]

    findings = preflight_eks.preflight(stack(own_autoscaler), replace(aws, deployments=deployments))

    assert asked == ["ml-dev"]
    assert (
        Finding(
            "ok",
            "cluster ml-dev autoscaler",
            "kube-system/cluster-autoscaler runs"
            " registry.k8s.io/autoscaling/cluster-autoscaler:v1.35.0.",
            "Nothing.",
        )
        in findings
    )


def test_a_tenant_namespace_moving_into_the_queues_is_read_through_the_clusters_api(
    aws: AwsClients, quotas: Stubber
) -> None:
    cluster(aws)
    pod_identity_agent(aws)
    quota(quotas, SPOT_G, 32)
    asked: list[tuple[str, str]] = []

    def kube(described: Any) -> Callable[[str], Any]:
        def get(path: str) -> Any:
            asked.append((described["name"], path))
            if path == "/api/v1/namespaces/ml-sandbox":
                return {"metadata": {"name": "ml-sandbox", "labels": {}}}
            return {"items": []}

        return get

    findings = preflight_eks.preflight(stack(), replace(aws, kube=kube))

    assert asked == [
        ("ml-dev", "/api/v1/namespaces/ml-sandbox"),
        ("ml-dev", "/api/v1/namespaces/ml-sandbox/pods"),
    ]
    assert (
        Finding(
            "ok",
            "namespace ml-sandbox",
            "Its queue comes with this update, and no GPU pod runs there outside Kueue.",
            "Nothing.",
        )
        in findings
    )


def test_a_stack_that_installs_the_autoscaler_does_not_read_the_clusters(
    aws: AwsClients, quotas: Stubber
) -> None:
    cluster(aws)
    pod_identity_agent(aws)
    quota(quotas, SPOT_G, 32)

    def deployments(described: Any) -> Callable[[], list[Any]]:
        raise AssertionError("the stack's own autoscaler needs no reading")

    findings = preflight_eks.preflight(stack(), replace(aws, deployments=deployments))

    assert not any(f.subject.endswith("autoscaler") for f in findings)


def test_the_running_autoscalers_flags_and_priorities_are_read_from_its_namespace(
    aws: AwsClients, quotas: Stubber
) -> None:
    cluster(aws)
    pod_identity_agent(aws)
    quota(quotas, SPOT_G, 32)
    autoscaler: dict[str, Any] = copy.deepcopy(OLD_AUTOSCALER)
    # As the chart renders it (templates/deployment.yaml, chart 9.59.0): the ConfigMap is read
    # in `--namespace` (`configNamespace`, expander/factory/expander_factory.go, 1.35.2).
    autoscaler["spec"]["template"]["spec"]["containers"][0]["command"] = [
        "./cluster-autoscaler",
        "--namespace=autoscaling",
        "--expander=priority,least-waste",
    ]
    asked: list[tuple[str, str]] = []

    def config_maps(described: Any) -> Callable[[str, str], None]:
        def read(namespace: str, name: str) -> None:
            asked.append((namespace, name))

        return read

    findings = preflight_eks.preflight(
        stack(own_autoscaler),
        replace(aws, deployments=lambda _: lambda: [autoscaler], config_maps=config_maps),
    )

    assert asked == [("autoscaling", "cluster-autoscaler-priority-expander")]
    settings = [f for f in findings if f.subject == "cluster ml-dev autoscaler settings"]
    assert [f.severity for f in settings] == ["warning"] * 3


def on_g6_family(config: Config) -> None:
    """The dev stack's pool under Karpenter as every g6 size: L4s, 4 to 192 vCPUs."""
    on_karpenter(config)
    pool = pools(config)[0]
    del pool["instanceTypes"]
    pool.update(accelerator="l4", max=2)
    pool["aws"]["instanceFamilies"] = ["g6"]


def test_a_family_pool_needs_the_vcpus_of_its_largest_size_at_max(
    aws: AwsClients, quotas: Stubber
) -> None:
    cluster(aws)
    pod_identity_agent(aws)
    quota(quotas, SPOT_G, 256)

    findings = preflight_eks.preflight(stack(on_g6_family), aws)

    # EC2: the g6.48xlarge has 192 vCPUs.
    assert findings[-1].severity == "blocking"
    assert findings[-1].message == (
        "All G and VT Spot Instance Requests: 256 vCPUs, but the pools need 384 at their max"
        " (t4-shared 2 x 192 vCPUs)."
    )


def test_a_family_pool_launches_in_the_zones_that_offer_any_of_its_sizes(
    aws: AwsClients, quotas: Stubber
) -> None:
    cluster(aws)
    pod_identity_agent(aws)
    quota(quotas, SPOT_G, 384)

    findings = preflight_eks.preflight(stack(on_g6_family), aws)

    (zones,) = [f for f in findings if f.subject == "pool t4-shared"]
    assert zones == Finding(
        "ok",
        "pool t4-shared",
        "Sizes offered in us-east-1a, us-east-1b: g6.12xlarge, g6.16xlarge, g6.24xlarge,"
        " g6.2xlarge, g6.48xlarge, g6.4xlarge, g6.8xlarge, g6.xlarge.",
        "Nothing.",
    )


def test_a_karpenter_quota_of_exactly_max_warns_that_drift_would_stall(
    aws: AwsClients, quotas: Stubber
) -> None:
    cluster(aws)
    pod_identity_agent(aws)
    quota(quotas, SPOT_G, 24)

    findings = preflight_eks.preflight(stack(on_karpenter), aws)

    # The Drifted budget, 10% of 3 nodes rounded up (GetAllowedDisruptions, kubernetes-sigs/
    # karpenter pkg/apis/v1/nodepool.go at v1.14.1), is one more g4dn.2xlarge of 8 vCPUs.
    assert findings[-1] == Finding(
        "warning",
        f"quota {SPOT_G}",
        "All G and VT Spot Instance Requests: 24 vCPUs cover the 24 the pools need at their max"
        " (t4-shared 3 x 8 vCPUs), but not the 8 more that drift's replacements take while the"
        " old nodes drain: an AMI rollout of full pools would stall.",
        "Request an increase to 32, or lower the pools' aws.maxUnavailablePercent"
        " (docs/karpenter.md, Limits).",
    )


def test_a_node_group_quota_of_exactly_max_is_enough(aws: AwsClients, quotas: Stubber) -> None:
    cluster(aws)
    pod_identity_agent(aws)
    quota(quotas, SPOT_G, 24)

    findings = preflight_eks.preflight(stack(), aws)

    assert findings[-1].severity == "ok"
