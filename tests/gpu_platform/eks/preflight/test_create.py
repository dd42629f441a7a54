"""The EKS pre-flight check of a stack that creates its cluster (eks-new), before the cluster
exists, against moto's EC2, EKS and IAM, with Service Quotas answered by botocore's Stubber and
DescribeAddonVersions (which moto lacks) by a `before-call` hook: the quotas creation takes from,
the service-linked roles, the permissions boundary and the pinned add-on versions, each a
finding with its fix."""

import copy
import json
import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse
from botocore.compat import HTTPHeaders
from botocore.stub import Stubber
from moto import mock_aws

from gpu_platform.config import StackConfig, load_stack_config
from gpu_platform.deadline import Calls, Deadline
from gpu_platform.eks.new_cluster.addon_pins import CORE_ADDONS, addon_versions
from gpu_platform.eks.preflight import checks as preflight_eks
from gpu_platform.eks.preflight.checks import AwsClients
from gpu_platform.eks.preflight.create import CREATE_PERMISSIONS, SERVICE_LINKED_ROLES
from gpu_platform.preflight.findings import Finding
from gpu_platform.stack_files import stack_config
from tests.repository import ROOT

Config = dict[str, Any]
ON_DEMAND_G = "L-DB2E81BA"
# (service, code, value) in the order the check asks: the pool's GPU quota, then the cluster's,
# the system nodes' Standard vCPUs, then the new VPC's.
CREATION_QUOTAS = [
    ("eks", "L-1194D53C", 100.0),
    ("ec2", "L-1216C47A", 1152.0),
    ("vpc", "L-F678F1CE", 5.0),
    ("vpc", "L-A4707A72", 5.0),
    ("ec2", "L-0263D0A3", 5.0),
    ("vpc", "L-FE5A380F", 5.0),
]
# The check finds the boundary by name; moto's IAM refuses the real document's policy variables.
BOUNDARY_DOCUMENT = json.dumps(
    {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "ec2:Describe*", "Resource": "*"}],
    }
)


def stack(change: Callable[[Config], Any] = lambda c: None) -> StackConfig:
    values = copy.deepcopy(stack_config("eks-new"))
    change(values)
    return load_stack_config(
        {k.removeprefix("gpu-platform:"): v for k, v in values.items() if k.startswith("gpu-")}
    )


@pytest.fixture
def aws() -> Iterator[AwsClients]:
    """The command's clients, IAM's included, on a fresh moto account."""
    with mock_aws():
        yield AwsClients.for_region("us-east-1", Deadline(30), Calls(), with_iam=True)


@pytest.fixture
def quotas(aws: AwsClients) -> Iterator[Stubber]:
    with Stubber(aws.service_quotas) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()


def with_quotas(quotas: Stubber, creation: list[tuple[str, str, float]]) -> None:
    for service, code, value in [("ec2", ON_DEMAND_G, 64.0), *creation]:
        quotas.add_response(
            "get_service_quota",
            {"Quota": {"ServiceCode": service, "QuotaCode": code, "Value": value}},
            {"ServiceCode": service, "QuotaCode": code},
        )


def offered(aws: AwsClients, versions: dict[str, list[str]] | None = None) -> None:
    """DescribeAddonVersions listing, for Kubernetes 1.35, `versions` by add-on, else the pins."""
    pinned = addon_versions()["1.35"]
    listed = versions or {addon: [pinned[addon]] for addon in CORE_ADDONS}

    def respond(params: dict[str, Any], **_: Any) -> Any:
        query = params["query_string"]
        addon = query["addonName"]
        assert query["kubernetesVersion"] == "1.35"
        found = [
            {"addonVersion": v, "compatibilities": [{"clusterVersion": "1.35"}]}
            for v in listed[addon]
        ]
        return answer_for({"addons": [{"addonName": addon, "addonVersions": found}]})

    aws.eks.meta.events.register("before-call.eks.DescribeAddonVersions", respond)


def in_support(aws: AwsClients, status: str = "STANDARD_SUPPORT") -> None:
    """DescribeClusterVersions (which moto lacks) answering Kubernetes 1.35 in `status`."""

    def respond(params: dict[str, Any], **_: Any) -> Any:
        assert params["query_string"]["clusterVersions"] in (["1.35"], "1.35")
        return answer_for(
            {
                "clusterVersions": [
                    {
                        "clusterVersion": "1.35",
                        "versionStatus": status,
                        "endOfStandardSupportDate": datetime(2027, 3, 27, tzinfo=UTC),
                    }
                ]
            }
        )

    aws.eks.meta.events.register("before-call.eks.DescribeClusterVersions", respond)


def answer_for(parsed: dict[str, Any]) -> tuple[AWSResponse, dict[str, Any]]:
    return AWSResponse("https://DescribeAddonVersions", 200, HTTPHeaders(), None), parsed


def with_boundary(aws: AwsClients) -> None:
    aws.iam.create_policy(
        PolicyName="gpu-platform-permissions-boundary", PolicyDocument=BOUNDARY_DOCUMENT
    )


def with_service_linked_roles(aws: AwsClients) -> None:
    """The roles as IAM names them (`CreateServiceLinkedRole` makes them under this path)."""
    for role, service in SERVICE_LINKED_ROLES.items():
        aws.iam.create_role(
            RoleName=role,
            Path=f"/aws-service-role/{service}/",
            AssumeRolePolicyDocument=json.dumps(
                {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Effect": "Allow",
                            "Principal": {"Service": service},
                            "Action": "sts:AssumeRole",
                        }
                    ],
                }
            ),
        )


def with_quota(code: str, value: float) -> list[tuple[str, str, float]]:
    """CREATION_QUOTAS, quota `code` at `value`."""
    return [(service, c, value if c == code else v) for service, c, v in CREATION_QUOTAS]


def account(
    aws: AwsClients,
    quotas: Stubber,
    creation: list[tuple[str, str, float]] = CREATION_QUOTAS,
    boundary: bool = True,
    roles: bool = True,
    versions: dict[str, list[str]] | None = None,
) -> None:
    """An account with these quotas, add-on versions offered, and the boundary and
    service-linked roles where asked."""
    with_quotas(quotas, creation)
    offered(aws, versions)
    in_support(aws)
    if boundary:
        with_boundary(aws)
    if roles:
        with_service_linked_roles(aws)


def by_subject(findings: list[Finding]) -> dict[str, Finding]:
    return {f.subject: f for f in findings}


def test_an_account_ready_for_the_cluster_blocks_nothing(
    aws: AwsClients,
    quotas: Stubber,
) -> None:
    account(aws, quotas)

    findings = preflight_eks.preflight(stack(), aws)

    assert [f for f in findings if f.severity != "ok"] == []
    assert findings[0] == Finding(
        "ok",
        "cluster ml-new",
        "No EKS cluster ml-new in us-east-1 yet: `pulumi up` creates it"
        " (gpu-platform:cluster.create); what that needs follows.",
        "Nothing.",
    )
    subjects = by_subject(findings)
    assert {f"add-on {a}" for a in CORE_ADDONS} <= set(subjects)
    assert {f"quota {code}" for _, code, _ in CREATION_QUOTAS} <= set(subjects)


def on_auto_mode(config: Config) -> None:
    config["gpu-platform:provisioner"] = "eks-auto-mode"
    del config["gpu-platform:pools"][0]["aws"]["amiReleaseVersion"]


def test_an_auto_mode_cluster_to_create_needs_no_system_nodes_or_add_ons(
    aws: AwsClients,
    quotas: Stubber,
) -> None:
    # Auto Mode runs the nodes' networking, DNS, storage driver and Pod Identity agent itself,
    # and the platform's pods on its general-purpose NodePool (automode.adoc): no add-on pin
    # to check, and no system node group's Standard vCPUs asked of the quota.
    account(aws, quotas, [q for q in CREATION_QUOTAS if q[1] != "L-1216C47A"])

    findings = preflight_eks.preflight(stack(on_auto_mode), aws)

    assert [f for f in findings if f.severity != "ok"] == []
    assert not [f for f in findings if f.subject.startswith("add-on ")]
    assert "quota L-1216C47A" not in by_subject(findings)


def test_a_full_vpc_quota_blocks_with_the_request_that_raises_it(
    aws: AwsClients,
    quotas: Stubber,
) -> None:
    # moto's account holds its default VPC.
    account(aws, quotas, with_quota("L-F678F1CE", 1.0))

    finding = by_subject(preflight_eks.preflight(stack(), aws))["quota L-F678F1CE"]

    assert finding == Finding(
        "blocking",
        "quota L-F678F1CE",
        "VPCs per Region: 1, of which 1 are used; creating the cluster needs 1 more for the new"
        " VPC.",
        "Free some, or ask for 2: aws service-quotas request-service-quota-increase"
        " --service-code vpc --quota-code L-F678F1CE --desired-value 2 --region us-east-1",
    )


def test_system_nodes_past_the_standard_vcpu_quota_block_naming_their_setting(
    aws: AwsClients,
    quotas: Stubber,
) -> None:
    # New accounts start with few On-Demand Standard vCPUs (Service Quotas L-1216C47A); eks-new's
    # system nodes grow to 4 m7i.xlarge, 4 vCPUs each (DescribeInstanceTypes).
    account(aws, quotas, with_quota("L-1216C47A", 5.0))

    finding = by_subject(preflight_eks.preflight(stack(), aws))["quota L-1216C47A"]

    assert finding.severity == "blocking"
    assert finding.message == (
        "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances: 5, of which 0 are"
        " used; creating the cluster needs 16 more for the system node group at its max (4"
        " nodes of 4 vCPUs, gpu-platform:cluster.create.aws.systemNodes)."
    )
    assert "--quota-code L-1216C47A --desired-value 16" in finding.action


@pytest.mark.parametrize(("quota", "severity"), [(39.0, "warning"), (40.0, "ok")])
def test_system_nodes_that_fit_but_cannot_surge_for_an_update_are_a_warning(
    aws: AwsClients, quotas: Stubber, quota: float, severity: str
) -> None:
    # EKS user guide, managed-node-update-behavior ("Scale up phase"): an update grows the group
    # by up to twice its zones before draining. eks-new: 4 m7i.xlarge at max (16 vCPUs), and
    # 2 x 3 zones x 4 vCPUs = 24 more while an update runs.
    account(aws, quotas, with_quota("L-1216C47A", quota))

    finding = by_subject(preflight_eks.preflight(stack(), aws))["quota L-1216C47A"]

    assert finding.severity == severity
    if severity == "warning":
        assert "but not for 24 more for the up to 6 nodes (twice its 3 zones)" in finding.message
        assert "--desired-value 40" in finding.action


def existing_subnets(aws: AwsClients, zones: list[str]) -> list[str]:
    """Subnets of a new VPC in moto's account, one in each of `zones`."""
    vpc = aws.ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    return [
        aws.ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.0.{i}.0/24", AvailabilityZone=zone)[
            "Subnet"
        ]["SubnetId"]
        for i, zone in enumerate(zones)
    ]


@pytest.mark.parametrize(("quota", "severity"), [(31.0, "warning"), (32.0, "ok")])
def test_the_update_surge_counts_the_zones_of_existing_subnets_not_the_subnets(
    aws: AwsClients, quotas: Stubber, quota: float, severity: str
) -> None:
    # Three subnets in two zones: an update adds up to 2 x 2 nodes (managed-node-update-behavior),
    # 16 vCPUs beside the 16 of the group at its max.
    subnets = existing_subnets(aws, ["us-east-1a", "us-east-1a", "us-east-1b"])
    account(
        aws, quotas, [(s, c, quota if c == "L-1216C47A" else v) for s, c, v in CREATION_QUOTAS[:2]]
    )

    def existing(config: Config) -> None:
        config["gpu-platform:cluster"]["create"]["aws"] = {"subnetIds": subnets}

    findings = by_subject(preflight_eks.preflight(stack(existing), aws))

    assert findings["quota L-1216C47A"].severity == severity


def test_running_standard_instances_count_against_the_system_nodes_quota(
    aws: AwsClients,
    quotas: Stubber,
) -> None:
    account(aws, quotas, with_quota("L-1216C47A", 20.0))
    image = aws.ec2.register_image(Name="gpu-node")["ImageId"]
    aws.ec2.run_instances(ImageId=image, InstanceType="m5.xlarge", MinCount=2, MaxCount=2)
    aws.ec2.run_instances(ImageId=image, InstanceType="g5.xlarge", MinCount=1, MaxCount=1)

    finding = by_subject(preflight_eks.preflight(stack(), aws))["quota L-1216C47A"]

    # Two m5.xlarge (4 vCPUs each) count; the G instance has its own quota.
    assert finding.severity == "blocking"
    assert "20, of which 8 are used" in finding.message


def test_a_protected_stack_needs_an_address_for_each_zones_nat_gateway(
    aws: AwsClients,
    quotas: Stubber,
) -> None:
    account(aws, quotas, with_quota("L-0263D0A3", 2.0))

    findings = preflight_eks.preflight(
        stack(lambda c: c.update({"gpu-platform:protect": True})), aws
    )

    finding = by_subject(findings)["quota L-0263D0A3"]
    assert finding.severity == "blocking"
    assert "needs 3 more for 3 NAT gateway address(es)" in finding.message


def test_missing_service_linked_roles_are_warnings_with_the_command_that_creates_them(
    aws: AwsClients,
    quotas: Stubber,
) -> None:
    account(aws, quotas, roles=False)

    finding = by_subject(preflight_eks.preflight(stack(), aws))["role AWSServiceRoleForAmazonEKS"]

    assert finding.severity == "warning"
    assert finding.action == (
        "Create it once: aws iam create-service-linked-role --aws-service-name eks.amazonaws.com"
    )


def test_a_missing_permissions_boundary_blocks(aws: AwsClients, quotas: Stubber) -> None:
    account(aws, quotas, boundary=False)

    finding = by_subject(preflight_eks.preflight(stack(), aws))[
        "policy gpu-platform-permissions-boundary"
    ]

    assert finding.severity == "blocking"
    assert "file://docs/iam/eks-permissions-boundary.json" in finding.action


def test_a_pinned_addon_version_the_region_does_not_offer_blocks(
    aws: AwsClients,
    quotas: Stubber,
) -> None:
    pinned = addon_versions()["1.35"]
    offered_versions = {
        a: ["v9.9.9-eksbuild.1", "v1.0.0-eksbuild.3"] if a == "coredns" else [pinned[a]]
        for a in CORE_ADDONS
    }
    account(aws, quotas, versions=offered_versions)

    finding = by_subject(preflight_eks.preflight(stack(), aws))["add-on coredns"]

    assert finding.severity == "blocking"
    assert finding.message == (
        f"EKS does not offer coredns {pinned['coredns']}, the platform's pin, for Kubernetes 1.35"
        " in this region (its newest is v9.9.9-eksbuild.1)."
    )


def test_a_version_in_standard_support_is_ok(aws: AwsClients, quotas: Stubber) -> None:
    account(aws, quotas)

    finding = by_subject(preflight_eks.preflight(stack(), aws))["Kubernetes 1.35 on EKS"]

    assert (finding.severity, finding.message) == (
        "ok",
        "Kubernetes 1.35 is in standard support (standard support ends 2027-03-27).",
    )


@pytest.mark.parametrize(
    ("support_type", "severity"), [("STANDARD", "blocking"), ("EXTENDED", "warning")]
)
def test_a_version_in_extended_support_only_blocks_unless_extended_support_is_chosen(
    aws: AwsClients, quotas: Stubber, support_type: str, severity: str
) -> None:
    # EKS user guide, disable-extended-support.adoc: "You cannot disable extended support once
    # your cluster has entered it"; botocore EKS ClusterVersionInformation `versionStatus`.
    with_quotas(quotas, CREATION_QUOTAS)
    offered(aws)
    in_support(aws, "EXTENDED_SUPPORT")
    with_boundary(aws)
    with_service_linked_roles(aws)

    def extended(config: Config) -> None:
        config["gpu-platform:cluster"]["create"]["aws"] = {"supportType": support_type}

    finding = by_subject(preflight_eks.preflight(stack(extended), aws))["Kubernetes 1.35 on EKS"]

    assert finding.severity == severity


def private_endpoint(config: Config) -> None:
    create = config["gpu-platform:cluster"]["create"]
    create["endpoint"] = {"access": "private"}
    create.setdefault("aws", {})["privateEndpointCidrs"] = ["10.8.0.0/16"]


def test_a_private_endpoint_in_a_vpc_the_same_run_creates_blocks(
    aws: AwsClients, quotas: Stubber
) -> None:
    # EKS user guide, cluster-endpoint.adoc: with the public endpoint off, "All traffic to
    # your cluster API server must come from within your cluster's VPC or a connected network",
    # and neither exists before the run that creates the VPC.
    account(aws, quotas)

    finding = by_subject(preflight_eks.preflight(stack(private_endpoint), aws))[
        "endpoint of cluster ml-new"
    ]

    assert finding.severity == "blocking"
    assert finding.action == (
        "Set gpu-platform:cluster.create.endpoint.access: public with your egress range in"
        " gpu-platform:cluster.create.endpoint.publicCidrs for the first `pulumi up`; once a"
        " runner, VPN or peering reaches the VPC, name it in"
        " gpu-platform:cluster.create.aws.privateEndpointCidrs or"
        " gpu-platform:cluster.create.aws.privateEndpointSecurityGroupIds and set"
        " gpu-platform:cluster.create.endpoint.access: private (docs/create-cluster.md)."
    )


def test_a_private_endpoint_in_existing_subnets_names_who_reaches_it(
    aws: AwsClients, quotas: Stubber
) -> None:
    # cluster-endpoint.adoc: "You must ensure that your Amazon EKS control plane security group
    # contains rules to allow ingress traffic on port 443 from your connected network".
    subnets = existing_subnets(aws, ["us-east-1a", "us-east-1b"])
    account(aws, quotas, CREATION_QUOTAS[:2])

    def in_subnets(config: Config) -> None:
        private_endpoint(config)
        aws_create = config["gpu-platform:cluster"]["create"]["aws"]
        aws_create["subnetIds"] = subnets
        aws_create["privateEndpointSecurityGroupIds"] = ["sg-0123456789abcdef0"]

    finding = by_subject(preflight_eks.preflight(stack(in_subnets), aws))[
        "endpoint of cluster ml-new"
    ]

    assert (finding.severity, finding.message) == (
        "warning",
        "The API endpoint is private: after creating the cluster, `pulumi up` installs the GPU"
        " Operator and monitoring through it, which answers only 10.8.0.0/16,"
        " sg-0123456789abcdef0 (gpu-platform:cluster.create.aws.privateEndpointCidrs,"
        " gpu-platform:cluster.create.aws.privateEndpointSecurityGroupIds), in the VPC or a"
        " network connected to it.",
    )


def test_a_public_endpoint_names_the_ranges_pulumi_up_must_run_from(
    aws: AwsClients, quotas: Stubber
) -> None:
    account(aws, quotas)

    finding = by_subject(preflight_eks.preflight(stack(), aws))["endpoint of cluster ml-new"]

    assert (finding.severity, finding.message) == (
        "ok",
        "The API endpoint answers publicly only 203.0.113.0/24 (and privately only its nodes).",
    )


def test_the_readme_names_the_actions_creation_adds(aws: AwsClients, quotas: Stubber) -> None:
    with_quotas(quotas, CREATION_QUOTAS)
    offered(aws)
    in_support(aws)
    calls: set[str] = set()
    for client in (aws.eks, aws.ec2, aws.service_quotas, aws.resource_groups, aws.iam):
        client.meta.events.register(
            "before-parameter-build",
            lambda model, **_: calls.add(f"{model.service_model.signing_name}:{model.name}"),
            unique_id=f"record-{id(client)}",
        )

    preflight_eks.preflight(stack(), aws)

    text = (ROOT / "docs" / "getting-started.md").read_text()
    section = text.split("**Pre-flight of a cluster to create (EKS).**", 1)[1].split("\n\n", 1)[0]
    documented = set(re.findall(r"`([a-z0-9-]+:[A-Za-z]+)`", section))
    created = calls - set(preflight_eks.READ_ONLY_PERMISSIONS)
    assert (
        created == documented == set(CREATE_PERMISSIONS) - set(preflight_eks.READ_ONLY_PERMISSIONS)
    )
