"""The EKS pre-flight check against moto's EKS and EC2 (instance types and zone offerings from
EC2's real data), with Service Quotas and the add-on lookup, which moto lacks, answered by
botocore's Stubber and a `before-call` hook. Findings are asserted exactly."""

import copy
import http.server
import re
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from botocore.compat import HTTPHeaders
from botocore.stub import Stubber
from moto import mock_aws
from typer.testing import CliRunner

from components.config import StackConfig, load_stack_config
from gpu_platform_cli import preflight
from gpu_platform_cli.app import app
from gpu_platform_cli.offline import stack_config
from gpu_platform_cli.preflight import AwsClients, Finding
from tests.repository import ROOT
from tests.stack_variants import AL2023_RELEASE

REGION = "us-east-1"
Config = dict[str, Any]
SPOT_G = "L-3819A6DF"
ON_DEMAND_P = "L-417A185B"


@pytest.fixture
def aws() -> Iterator[AwsClients]:
    """Clients on a fresh moto account."""
    with mock_aws():
        yield AwsClients(
            boto3.client("eks", region_name=REGION),
            boto3.client("ec2", region_name=REGION),
            boto3.client("service-quotas", region_name=REGION),
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


def cluster(
    clients: AwsClients, version: str = "1.35", name: str = "ml-dev", nat: bool = True
) -> None:
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
    if nat:
        address = ec2.allocate_address(Domain="vpc")["AllocationId"]
        nat_gateway = ec2.create_nat_gateway(SubnetId=public_subnet, AllocationId=address)
        ec2.create_route(
            RouteTableId=private_table,
            DestinationCidrBlock="0.0.0.0/0",
            NatGatewayId=nat_gateway["NatGateway"]["NatGatewayId"],
        )
    for subnet_id in private:
        ec2.associate_route_table(RouteTableId=private_table, SubnetId=subnet_id)
    clients.eks.create_cluster(
        name=name,
        version=version,
        roleArn="arn:aws:iam::123456789012:role/ml-dev-cluster",
        resourcesVpcConfig={"subnetIds": subnets},
    )


def stack(change: Callable[[Config], Any] = lambda c: None) -> StackConfig:
    """The dev stack's config with a second instance type on its pool, so that every check sees
    more than one (preflight checks each type; the program refuses types of different shapes,
    which is not preflight's to repeat), changed by `change` (keys as in the stack file)."""
    values = copy.deepcopy(stack_config("dev"))
    values["gpu-platform:pools"][0]["instanceTypes"] = ["g4dn.xlarge", "g4dn.2xlarge"]
    change(values)
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


def test_a_ready_account_blocks_nothing(aws: AwsClients, quotas: Stubber) -> None:
    cluster(aws)
    pod_identity_agent(aws)
    quota(quotas, SPOT_G, 32)

    findings = preflight.preflight(stack(), aws)

    assert findings == [
        CLUSTER_OK,
        AGENT_OK,
        DEV_POOL_ZONES,
        NODE_SUBNETS_REACH_OUT,
        Finding(
            "ok",
            f"quota {SPOT_G}",
            "All G and VT Spot Instance Requests: 32 vCPUs cover the 24 the pools need at their"
            " max (t4-shared 3 x 8 vCPUs), with no other instance using them now.",
            "Nothing.",
        ),
    ]


def test_max_above_the_quota_is_a_blocking_finding_not_a_crash(
    aws: AwsClients, quotas: Stubber
) -> None:
    cluster(aws)
    pod_identity_agent(aws)
    quota(quotas, SPOT_G, 16)

    findings = preflight.preflight(stack(), aws)

    assert findings[-1] == Finding(
        "blocking",
        f"quota {SPOT_G}",
        "All G and VT Spot Instance Requests: 16 vCPUs, but the pools need 24 at their max"
        " (t4-shared 3 x 8 vCPUs).",
        "Request an increase to at least 24: aws service-quotas request-service-quota-increase"
        f" --service-code ec2 --quota-code {SPOT_G} --desired-value 24 --region us-east-1",
    )


def run_spot_instance(aws: AwsClients, instance_type: str, tags: dict[str, str]) -> None:
    image = aws.ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
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

    findings = preflight.preflight(stack(), aws)

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

    findings = preflight.preflight(stack(), aws)

    assert findings[-1].severity == "ok"
    assert findings[-1].message.endswith("with no other instance using them now.")


def test_pools_of_one_quota_are_counted_together_and_each_quota_once(
    aws: AwsClients, quotas: Stubber
) -> None:
    cluster(aws)
    pod_identity_agent(aws)
    quota(quotas, SPOT_G, 64)
    quota(quotas, ON_DEMAND_P, 96)

    def more_pools(c: Config) -> None:
        pools(c).append(
            {
                "name": "l4",
                "instanceTypes": ["g6.xlarge"],
                "max": 4,
                "capacity": "spot",
                "aws": {"amiReleaseVersion": AL2023_RELEASE},
            }
        )
        pools(c).append(
            {
                "name": "h100",
                "instanceTypes": ["p5.48xlarge"],
                "max": 1,
                "aws": {"amiReleaseVersion": AL2023_RELEASE},
            }
        )

    findings = preflight.preflight(stack(more_pools), aws)

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

    findings = preflight.preflight(stack(), aws)

    assert findings[-1].severity == "blocking"
    assert findings[-1].message.startswith("All G and VT Spot Instance Requests: 0 vCPUs")


def test_a_missing_cluster_blocks_and_its_zones_go_unchecked(
    aws: AwsClients, quotas: Stubber
) -> None:
    quota(quotas, SPOT_G, 32)

    findings = preflight.preflight(stack(), aws)

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

    findings = preflight.preflight(stack(), aws)

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

    findings = preflight.preflight(stack(), aws)

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

    findings = preflight.preflight(stack(), aws)

    assert findings[1] == Finding(
        "blocking",
        "cluster ml-dev",
        "No eks-pod-identity-agent add-on: the cluster autoscaler would get no AWS credentials"
        " and never scale a GPU pool up.",
        "aws eks create-addon --cluster-name ml-dev --addon-name eks-pod-identity-agent",
    )


def test_the_agent_is_not_required_where_the_stack_installs_no_autoscaler(
    aws: AwsClients, quotas: Stubber
) -> None:
    cluster(aws)
    quota(quotas, SPOT_G, 32)

    config = stack(lambda c: c.update({"gpu-platform:autoscaler": {"install": False}}))
    findings = preflight.preflight(config, aws)

    assert "eks-pod-identity-agent" not in " ".join(f.message for f in findings)


def test_zones_that_offer_none_of_the_instance_types_block(
    aws: AwsClients, quotas: Stubber
) -> None:
    cluster(aws)
    pod_identity_agent(aws)
    quota(quotas, SPOT_G, 32)

    findings = preflight.preflight(stack(lambda c: pools(c)[0].update(zones=["us-east-1e"])), aws)

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

    findings = preflight.preflight(stack(p3), aws)

    assert findings[2] == Finding(
        "blocking",
        "pool t4-shared",
        "Not offered in this region at all: p3.2xlarge.",
        "Choose instance types EC2 offers here in gpu-platform:pools[0].instanceTypes.",
    )


NOW = datetime(2026, 11, 23, 12, tzinfo=UTC)


def capacity_block(**changes: Any) -> dict[str, Any]:
    """A Capacity Block of 2 p5.48xlarge in us-east-1a for a day, begun an hour ago."""
    return {
        "CapacityReservationId": "cr-0123456789abcdef0",
        "InstanceType": "p5.48xlarge",
        "AvailabilityZone": "us-east-1a",
        "TotalInstanceCount": 2,
        "State": "active",
        "ReservationType": "capacity-block",
        "StartDate": NOW - timedelta(hours=1),
        "EndDate": NOW + timedelta(days=1),
        **changes,
    }


def block_pool(c: Config, **changes: Any) -> None:
    pools(c)[0].update(
        capacity="capacity-block",
        instanceTypes=["p5.48xlarge"],
        accelerator="h100-80gb",
        gpusPerNode=8,
        zones=["us-east-1a"],
        max=2,
        **changes,
    )
    pools(c)[0]["aws"]["capacityReservationId"] = "cr-0123456789abcdef0"


def block_findings(block: dict[str, Any], **pool_changes: Any) -> list[Finding]:
    """The findings for a capacity-block pool, EC2 answering with `block` through botocore's
    Stubber, which checks the request and the answer against EC2's service model."""
    ec2 = boto3.client("ec2", region_name="us-east-1")
    with Stubber(ec2) as stubber:
        stubber.add_response(
            "describe_capacity_reservations",
            {"CapacityReservations": [block]},
            {"CapacityReservationIds": ["cr-0123456789abcdef0"]},
        )
        config = stack(lambda c: block_pool(c, **pool_changes))
        found = preflight.capacity_block_findings(config, ec2, NOW)
        stubber.assert_no_pending_responses()
    return found


def test_a_capacity_block_that_matches_its_pool_is_reported_with_its_window() -> None:
    assert block_findings(capacity_block()) == [
        Finding(
            "ok",
            "pool t4-shared",
            "Capacity Block cr-0123456789abcdef0: 2 x p5.48xlarge in us-east-1a, 2026-11-23 11:00"
            " to 2026-11-24 12:00 UTC; its instances end with it.",
            "Nothing; drain the pool before the block ends.",
        )
    ]


def test_a_capacity_block_in_another_zone_or_of_another_type_blocks() -> None:
    (finding,) = block_findings(capacity_block(AvailabilityZone="us-east-1b"))

    assert finding == Finding(
        "blocking",
        "pool t4-shared",
        "Capacity Block cr-0123456789abcdef0 does not match the pool: gpu-platform:pools[0].zones"
        " is ['us-east-1a'], the block's ['us-east-1b'].",
        "Set the pool's zones and instance type to the block's.",
    )


def test_a_pool_larger_than_its_capacity_block_blocks() -> None:
    (finding,) = block_findings(capacity_block(TotalInstanceCount=1))

    assert (finding.severity, finding.message) == (
        "blocking",
        "max (2) is more than Capacity Block cr-0123456789abcdef0 holds (1).",
    )


def test_an_ended_capacity_block_blocks() -> None:
    ended = capacity_block(State="expired", EndDate=NOW - timedelta(hours=2))

    (finding,) = block_findings(ended)

    assert (finding.severity, finding.message) == (
        "blocking",
        "Capacity Block cr-0123456789abcdef0 is expired (it ends 2026-11-23 10:00 UTC).",
    )


def test_a_capacity_block_yet_to_start_is_a_warning() -> None:
    later = capacity_block(StartDate=NOW + timedelta(days=2), EndDate=NOW + timedelta(days=3))

    (finding,) = block_findings(later)

    assert (finding.severity, finding.message) == (
        "warning",
        "Capacity Block cr-0123456789abcdef0 starts later (2026-11-25 12:00 to 2026-11-26 12:00"
        " UTC): until then no node starts.",
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

    findings = preflight.preflight(stack(block_pool), aws)

    assert [f.subject for f in findings].count("pool t4-shared") == 2  # its zones, its block
    assert "Capacity Block cr-0123456789abcdef0: 2 x p5.48xlarge" in findings[-1].message


def test_preflight_makes_read_only_calls_only(aws: AwsClients, quotas: Stubber) -> None:
    cluster(aws)
    pod_identity_agent(aws)
    quota(quotas, SPOT_G, 32)
    calls: list[str] = []
    for client in (aws.eks, aws.ec2, aws.service_quotas):
        client.meta.events.register(
            "before-call", lambda model, **_: calls.append(model.name), unique_id=id(client)
        )

    preflight.preflight(stack(), aws)

    assert calls
    assert all(call.startswith(("Describe", "Get", "List")) for call in calls), calls


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
    # Their only 0.0.0.0/0 route would be the public subnet's internet gateway, which does
    # nothing for nodes without public addresses.
    aws = closed_account

    blocking, registries = reachability(preflight.preflight(stack(), aws))

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

    endpoints, registries = reachability(preflight.preflight(stack(), aws))

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

    blocking, _ = reachability(preflight.preflight(stack(), aws))

    assert "eks (the nodes joining" in blocking.message


def documented_permissions() -> set[str]:
    """The IAM actions the README says preflight needs."""
    text = (ROOT / "README.md").read_text()
    section = text.split("**Pre-flight (EKS).**", 1)[1].split("from your usual", 1)[0]
    return set(re.findall(r"`([a-z0-9]+:[A-Za-z]+)`", section))


def test_the_readme_names_exactly_the_actions_preflight_calls(
    aws: AwsClients, quotas: Stubber
) -> None:
    # Every branch that reaches AWS: node subnets without a way out, a live node group, a
    # Capacity Block pool, a spot pool whose quota the account never changed (read from the AWS
    # default), instances in use.
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
    quotas.add_client_error(
        "get_service_quota", service_error_code="NoSuchResourceException", http_status_code=404
    )
    quotas.add_response(
        "get_aws_default_service_quota",
        {"Quota": {"ServiceCode": "ec2", "QuotaCode": SPOT_G, "Value": 64.0}},
        {"ServiceCode": "ec2", "QuotaCode": SPOT_G},
    )
    calls: set[str] = set()
    for client in (aws.eks, aws.ec2, aws.service_quotas):
        # Emitted for every call, before a stand-in answer or the Stubber takes it.
        client.meta.events.register(
            "before-parameter-build",
            lambda model, **_: calls.add(f"{model.service_model.signing_name}:{model.name}"),
            unique_id=f"record-{id(client)}",
        )

    def pools_of_both_kinds(c: Config) -> None:
        block_pool(c)
        pools(c).append(
            {
                "name": "l4",
                "instanceTypes": ["g6.xlarge"],
                "max": 4,
                "capacity": "spot",
                "aws": {"amiReleaseVersion": AL2023_RELEASE},
            }
        )

    preflight.preflight(stack(pools_of_both_kinds), aws)

    assert calls == documented_permissions()
    # The refusal message names the same actions.
    assert set(preflight.READ_ONLY_PERMISSIONS) == calls


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
    monkeypatch.setattr(AwsClients, "for_region", classmethod(lambda cls, region: aws))

    result = CliRunner().invoke(app, ["preflight", "dev"])

    assert result.exit_code == exit_code, result.output
    assert result.output.rstrip().endswith(last_line)


def test_the_command_refuses_a_stack_that_is_not_on_eks(monkeypatch: pytest.MonkeyPatch) -> None:
    gke = {
        "gpu-platform:cloud": "gcp",
        "gpu-platform:cluster": {"name": "ml", "project": "p", "location": "us-central1"},
        "gpu-platform:pools": [
            {
                "name": "l4",
                "instanceTypes": ["g2-standard-8"],
                "accelerator": "l4",
                "gpusPerNode": 1,
                "max": 1,
            }
        ],
    }
    monkeypatch.setattr(preflight, "stack_config", lambda stack: gke)

    result = CliRunner().invoke(app, ["preflight", "gke"])

    assert result.exit_code == 2
    assert "pre-flight checks EKS stacks" in result.output


def test_the_command_reports_a_bad_stack_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(preflight, "stack_config", lambda stack: {"gpu-platform:cloud": "aws"})

    result = CliRunner().invoke(app, ["preflight", "broken"])

    assert result.exit_code == 2
    assert "gpu-platform:cluster" in result.output


def test_a_bad_value_that_looks_like_markup_is_printed_as_written(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stack = {"gpu-platform:cloud": "aws", "gpu-platform:cluster": {"name": "ml", "regio": "[/red]"}}
    monkeypatch.setattr(preflight, "stack_config", lambda stack_name: stack)

    result = CliRunner().invoke(app, ["preflight", "dev"])

    assert result.exit_code == 2
    assert 'gpu-platform:cluster.regio: got "[/red]"' in result.output


def test_a_secret_keys_bad_value_is_not_printed(monkeypatch: pytest.MonkeyPatch) -> None:
    stack = {
        "gpu-platform:cloud": "aws",
        "gpu-platform:cluster": {"name": "ml", "region": {"secure": "v1:ciphertext"}, "x": 1},
    }
    monkeypatch.setattr(preflight, "stack_config", lambda stack_name: stack)

    result = CliRunner().invoke(app, ["preflight", "dev"])

    assert result.exit_code == 2
    assert "gpu-platform:cluster.x" in result.output
    assert "offline-plan-secret" not in result.output and "ciphertext" not in result.output


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


def test_without_credentials_it_says_it_cannot_check_and_how_to_fix_it(
    no_aws_settings: pytest.MonkeyPatch,
) -> None:
    result = CliRunner().invoke(app, ["preflight", "dev"])

    assert result.exit_code == preflight.EXIT_CANNOT_CHECK
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

    assert result.exit_code == preflight.EXIT_CANNOT_CHECK
    assert "AWS could not be reached" in result.output


def test_a_refused_permission_is_named_with_what_the_check_needs(
    aws: AwsClients, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(AwsClients, "for_region", classmethod(lambda cls, region: aws))

    with Stubber(aws.eks) as eks:
        eks.add_client_error(
            "describe_cluster",
            service_error_code="AccessDeniedException",
            service_message="User is not authorized to perform: eks:DescribeCluster",
        )
        result = CliRunner().invoke(app, ["preflight", "dev"])

    assert result.exit_code == preflight.EXIT_CANNOT_CHECK
    assert "AWS refused DescribeCluster (AccessDeniedException" in result.output
    assert "eks:DescribeCluster, eks:DescribeAddon" in result.output


# --- The GPU Operator chart ------------------------------------------------------------------

# The real reader, kept before the fixture below replaces it in every test.
READ_CHART_INDEX = preflight.read_chart_index
# An excerpt of a Helm repository index (`helm repo index` writes this shape).
CHART_INDEX = b"""apiVersion: v1
entries:
  gpu-operator:
  - name: gpu-operator
    version: v26.7.0
    urls: [https://helm.ngc.nvidia.com/nvidia/charts/gpu-operator-v26.7.0.tgz]
  - name: gpu-operator
    version: v25.10.1
    urls: [https://helm.ngc.nvidia.com/nvidia/charts/gpu-operator-v25.10.1.tgz]
  network-operator:
  - name: network-operator
    version: v26.1.0
generated: "2026-11-01T00:00:00Z"
"""


@pytest.fixture(autouse=True)
def chart_repository(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The chart index as the repository would serve it; no test reaches a real repository.
    Lists the repositories read."""
    read: list[str] = []

    def index(repository: str) -> bytes:
        read.append(repository)
        return CHART_INDEX

    monkeypatch.setattr(preflight, "read_chart_index", index)
    return read


def operator_chart(version: str) -> StackConfig:
    values = copy.deepcopy(stack_config("dev"))
    values["gpu-platform:operator"] = {"chartVersion": version}
    prefix = "gpu-platform:"
    return load_stack_config(
        {k.removeprefix(prefix): v for k, v in values.items() if k.startswith(prefix)}
    )


def test_a_chart_version_the_repository_serves_is_fine(chart_repository: list[str]) -> None:
    (finding,) = preflight.chart_findings(operator_chart("v25.10.1"))

    assert finding.severity == "ok"
    assert chart_repository == ["https://helm.ngc.nvidia.com/nvidia"]


def test_a_chart_version_the_repository_does_not_serve_blocks() -> None:
    (finding,) = preflight.chart_findings(operator_chart("v26.9.0"))

    assert finding.blocking
    assert "serves no gpu-operator v26.9.0 (2 other versions)" in finding.message
    assert "gpu-platform:operator.chartVersion" in finding.action


def test_an_unreadable_index_is_a_warning_not_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    def unreachable(repository: str) -> bytes:
        raise OSError("Connection refused")

    monkeypatch.setattr(preflight, "read_chart_index", unreachable)

    (finding,) = preflight.chart_findings(operator_chart("v26.7.0"))

    assert finding.severity == "warning"
    assert "Connection refused" in finding.message


def test_the_index_is_read_from_the_repository_as_helm_reads_it() -> None:
    class Index(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = CHART_INDEX if self.path == "/charts/index.yaml" else b""
            self.send_response(200 if body else 404)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Index)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        served = READ_CHART_INDEX(f"http://127.0.0.1:{server.server_port}/charts/")
    finally:
        server.shutdown()

    assert served == CHART_INDEX


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
    # (components/eks/live_scaling.py), so EKS accepts it; preflight says what it costs.
    cluster(aws)
    live_node_group(aws, desired=0)

    findings = preflight.size_change_findings(stack(lambda c: pools(c)[0].update(min=2)), aws.eks)

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

    (finding,) = preflight.size_change_findings(stack(lambda c: pools(c)[0].update(max=2)), aws.eks)

    assert finding.severity == "warning"
    assert finding.message.endswith("pulumi up removes 1 running node(s), with the jobs on them.")


def test_per_zone_groups_are_held_to_their_zones_share_of_the_bounds(aws: AwsClients) -> None:
    cluster(aws)
    for zone in ("us-east-1a", "us-east-1b"):
        live_node_group(aws, desired=0, name=f"t4-shared-{zone}-2026112312000000000000000a")

    findings = preflight.size_change_findings(stack(lambda c: pools(c)[0].update(min=3)), aws.eks)

    assert [f.message.split(" is above")[0] for f in findings] == [
        "gpu-platform:pools[0].min (2, us-east-1a's share)",
        "gpu-platform:pools[0].min (1, us-east-1b's share)",
    ]


def test_sizes_the_live_group_admits_and_other_groups_are_left_alone(aws: AwsClients) -> None:
    cluster(aws)
    live_node_group(aws, desired=1)
    live_node_group(aws, desired=0, name="t4-shared-by-hand")

    assert preflight.size_change_findings(stack(), aws.eks) == []


def efa_pool(c: Config, instance_type: str = "p5.48xlarge") -> None:
    pools(c)[0].update(
        instanceTypes=[instance_type],
        accelerator=None,
        gpusPerNode=None,
        zones=["us-east-1a"],
    )
    pools(c)[0]["aws"]["efa"] = True


def test_an_efa_pool_is_told_its_adapters_from_ec2s_own_description(aws: AwsClients) -> None:
    described = preflight.describe_instance_types(aws.ec2, ["p5.48xlarge"])

    (finding,) = preflight.efa_findings(stack(efa_pool), described)

    assert finding.severity == "ok"
    assert finding.message.startswith("32 EFA interface(s) a node, in one zone (us-east-1a)")


def test_an_efa_pool_of_an_instance_type_without_efa_blocks(aws: AwsClients) -> None:
    config = stack(lambda c: efa_pool(c, "g4dn.xlarge"))

    described = preflight.describe_instance_types(aws.ec2, ["g4dn.xlarge"])

    (finding,) = preflight.efa_findings(config, described)

    assert (finding.severity, finding.message) == (
        "blocking",
        "aws.efa is on, but EC2 gives g4dn.xlarge no EFA.",
    )
