"""With `karpenter.install: false`, the existing controller's role against what the pools need, and
its node role's way into the cluster:
EKS's Pod Identity association and IAM's policy simulator, answered by botocore's Stubber with
the answers' shapes from botocore's models. The actions and resources are those of upstream's
controller policy (aws/karpenter-provider-aws v1.14.1, website/content/en/docs/getting-started/
getting-started-with-karpenter/cloudformation.yaml) that the upgrade guide
(upgrading/upgrade-guide.md) tells roles made before v1.11.0 to add."""

from collections.abc import Iterator, Mapping
from typing import Any

import boto3
import pytest
import requests
import yaml
from botocore.stub import Stubber

from gpu_platform.config import StackConfig, load_stack_config
from gpu_platform.eks.preflight.karpenter import karpenter_findings
from gpu_platform.eks.preflight.karpenter_node_access import node_role_access_finding
from gpu_platform.eks.preflight.karpenter_permissions import (
    controller_permissions_finding,
    needed_permissions,
)
from gpu_platform.preflight.findings import Finding
from gpu_platform.stack_files import stack_config

NODE_ROLE = "arn:aws:iam::123456789012:role/KarpenterNodeRole-ml"
CONTROLLER_ROLE = "arn:aws:iam::123456789012:role/KarpenterControllerRole-ml"
CLUSTER_ARN = "arn:aws:eks:us-east-1:123456789012:cluster/ml-karpenter-dev"
CLUSTER: dict[str, Any] = {
    "name": "ml-karpenter-dev",
    "arn": CLUSTER_ARN,
    "accessConfig": {"authenticationMode": "API"},
}
SUBJECT = "cluster ml-karpenter-dev Karpenter controller role"
PLACEMENT_GROUPS = "arn:aws:ec2:us-east-1:123456789012:placement-group/*"
# karpenter-dev's reserved and Capacity Block pools' own reservations (Pulumi.karpenter-dev.yaml).
RESERVATIONS = [
    f"arn:aws:ec2:us-east-1:123456789012:capacity-reservation/{cr}"
    for cr in ("cr-0a1b2c3d4e5f60718", "cr-0b10c4e5a2f6d7890")
]


def existing_stack(efa_on_demand: bool = False) -> StackConfig:
    """karpenter-dev on an existing Karpenter, without its spot pool; with `efa_on_demand`, its
    on-demand pool on p5 with EFA, in a placement group of its own."""
    values = stack_config("karpenter-dev")
    values["gpu-platform:karpenter"] = {"install": False, "nodeRoleArn": NODE_ROLE}
    pools = [p for p in values["gpu-platform:pools"] if p.get("capacity") != "spot"]
    if efa_on_demand:
        pools[-1].update(instanceTypes=["p5.48xlarge"], accelerator="h100-80gb")
        pools[-1].update(zones=["us-east-1a"])
        pools[-1]["aws"]["efa"] = True
    values["gpu-platform:pools"] = pools
    return load_stack_config(
        {k.removeprefix("gpu-platform:"): v for k, v in values.items() if k.startswith("gpu-")}
    )


def stubbed(client: Any) -> Iterator[Stubber]:
    """`client` answered by the Stubber; every answer added must be asked for."""
    with Stubber(client) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()


@pytest.fixture
def eks() -> Iterator[Stubber]:
    yield from stubbed(boto3.client("eks", region_name="us-east-1"))


@pytest.fixture
def iam() -> Iterator[Stubber]:
    yield from stubbed(boto3.client("iam", region_name="us-east-1"))


def associated(eks: Stubber, service_account: str = "karpenter") -> None:
    eks.add_response(
        "list_pod_identity_associations",
        {"associations": [{"associationId": "a-0123456789abcdef0"}]},
        {
            "clusterName": "ml-karpenter-dev",
            "namespace": "kube-system",
            "serviceAccount": service_account,
        },
    )
    eks.add_response(
        "describe_pod_identity_association",
        {"association": {"roleArn": CONTROLLER_ROLE}},
        {"clusterName": "ml-karpenter-dev", "associationId": "a-0123456789abcdef0"},
    )


def simulated(
    iam: Stubber,
    stack: StackConfig,
    denied: set[tuple[str, str]],
    missing: Mapping[tuple[str, str], list[str]] | None = None,
) -> None:
    """IAM's answer for each permission the stack needs: `implicitDeny` for `denied`, and for
    those `missing` names, for want of those context keys (where IAM's answer lists them when
    given resource ARNs: `ResourceSpecificResults[].MissingContextValues`, botocore's iam
    model)."""
    missing = missing or {}
    for action, resource in needed_permissions(stack, CLUSTER_ARN):
        decision = "implicitDeny" if (action, resource) in denied | set(missing) else "allowed"
        iam.add_response(
            "simulate_principal_policy",
            {
                "EvaluationResults": [
                    {
                        "EvalActionName": action,
                        "EvalResourceName": resource,
                        "EvalDecision": decision,
                        "ResourceSpecificResults": [
                            {
                                "EvalResourceName": resource,
                                "EvalResourceDecision": decision,
                                "MissingContextValues": missing.get((action, resource), []),
                            }
                        ],
                    }
                ]
            },
        )


def test_an_on_demand_efa_pool_needs_placement_groups_and_reserved_ones_reservations() -> None:
    assert needed_permissions(existing_stack(efa_on_demand=True), CLUSTER_ARN) == [
        ("iam:PassRole", NODE_ROLE),
        ("ec2:DescribePlacementGroups", "*"),
        ("ec2:CreateFleet", PLACEMENT_GROUPS),
        ("ec2:RunInstances", PLACEMENT_GROUPS),
        ("ec2:DescribeCapacityReservations", "*"),
        ("ec2:CreateFleet", RESERVATIONS[0]),
        ("ec2:RunInstances", RESERVATIONS[0]),
        ("ec2:CreateFleet", RESERVATIONS[1]),
        ("ec2:RunInstances", RESERVATIONS[1]),
    ]


def test_a_capacity_block_efa_pool_needs_no_placement_group() -> None:
    # karpenter-dev's EFA pool is its Capacity Block, which launches into no placement group.
    needed = needed_permissions(existing_stack(), CLUSTER_ARN)

    assert ("ec2:DescribePlacementGroups", "*") not in needed


def test_a_role_allowing_upstreams_policy_is_ok(eks: Stubber, iam: Stubber) -> None:
    stack = existing_stack(efa_on_demand=True)
    associated(eks)
    simulated(iam, stack, denied=set())

    finding = controller_permissions_finding(stack, CLUSTER, eks.client, iam.client)

    assert finding == Finding(
        "ok", SUBJECT, f"{CONTROLLER_ROLE} may launch what the pools need.", "Nothing."
    )


def test_a_role_made_before_v1_11_blocks_an_efa_pool(eks: Stubber, iam: Stubber) -> None:
    stack = existing_stack(efa_on_demand=True)
    associated(eks)
    simulated(
        iam,
        stack,
        denied={
            ("ec2:DescribePlacementGroups", "*"),
            ("ec2:CreateFleet", PLACEMENT_GROUPS),
            ("ec2:RunInstances", PLACEMENT_GROUPS),
        },
    )

    finding = controller_permissions_finding(stack, CLUSTER, eks.client, iam.client)

    assert finding.severity == "blocking"
    assert finding.message == (
        f"{CONTROLLER_ROLE} may not: ec2:DescribePlacementGroups on *; ec2:CreateFleet on"
        f" {PLACEMENT_GROUPS}; ec2:RunInstances on {PLACEMENT_GROUPS}. Karpenter could not"
        " launch the pools' nodes there, and their pods would stay Pending."
    )


def test_a_role_that_may_not_pass_the_node_role_blocks(eks: Stubber, iam: Stubber) -> None:
    stack = existing_stack()
    associated(eks)
    simulated(iam, stack, denied={("iam:PassRole", NODE_ROLE)})

    finding = controller_permissions_finding(stack, CLUSTER, eks.client, iam.client)

    assert finding.severity == "blocking"
    assert f"iam:PassRole on {NODE_ROLE}" in finding.message


TAG_KEY = "aws:ResourceTag/karpenter.sh/discovery"


def untagged_finding(eks: Stubber, iam: Stubber, denied: set[tuple[str, str]]) -> Finding:
    """The finding for an EFA pool's role whose placement-group statement for ec2:CreateFleet
    is conditioned on a tag (`aws:ResourceTag/...`): the simulator has no tags to read,
    evaluates the condition as false and denies what a launch would be allowed; `denied` are
    denied outright."""
    stack = existing_stack(efa_on_demand=True)
    associated(eks)
    simulated(iam, stack, denied, missing={("ec2:CreateFleet", PLACEMENT_GROUPS): [TAG_KEY]})
    return controller_permissions_finding(stack, CLUSTER, eks.client, iam.client)


def test_a_denial_for_want_of_a_context_key_warns_instead_of_blocking(
    eks: Stubber, iam: Stubber
) -> None:
    finding = untagged_finding(eks, iam, denied=set())

    assert finding.severity == "warning"
    assert f"ec2:CreateFleet on {PLACEMENT_GROUPS} ({TAG_KEY})" in finding.message


def test_a_denial_without_missing_context_keys_still_blocks_beside_one_with(
    eks: Stubber, iam: Stubber
) -> None:
    finding = untagged_finding(eks, iam, denied={("ec2:RunInstances", PLACEMENT_GROUPS)})

    assert finding.severity == "blocking"
    assert f"ec2:RunInstances on {PLACEMENT_GROUPS}" in finding.message


def test_a_controller_without_a_pod_identity_association_warns(eks: Stubber) -> None:
    eks.add_response("list_pod_identity_associations", {"associations": []})

    finding = controller_permissions_finding(existing_stack(), CLUSTER, eks.client, None)

    assert finding.severity == "warning"
    assert finding.message.startswith(
        "No Pod Identity association for kube-system/karpenter: the check cannot tell"
    )


def test_the_role_is_that_of_the_service_account_the_controller_runs_as(
    eks: Stubber, iam: Stubber
) -> None:
    stack = existing_stack()
    deployment: dict[str, Any] = {
        "metadata": {"name": "karpenter", "namespace": "kube-system"},
        "spec": {
            "template": {
                "spec": {
                    "serviceAccountName": "karpenter-controller",
                    "containers": [
                        {
                            "name": "controller",
                            "image": "public.ecr.aws/karpenter/controller:1.14.1",
                        }
                    ],
                }
            }
        },
    }
    associated(eks, service_account="karpenter-controller")
    simulated(iam, stack, denied=set())
    access_entry(eks, "EC2_LINUX")

    found = karpenter_findings(
        stack, CLUSTER, iam.client, None, "", lambda: [deployment], None, eks.client
    )

    assert [f.severity for f in found if f.subject == SUBJECT] == ["ok"]
    assert [f.severity for f in found if f.subject == NODE_SUBJECT] == ["ok"]


def test_a_check_not_tagged_with_the_controllers_role_warns(eks: Stubber, iam: Stubber) -> None:
    # docs/iam/eks-preflight-policy.json lets the check simulate only the role its own role's
    # tag names; IAM answers any other with AccessDenied.
    associated(eks)
    iam.add_client_error("simulate_principal_policy", "AccessDenied", "not authorized")

    finding = controller_permissions_finding(existing_stack(), CLUSTER, eks.client, iam.client)

    assert finding == Finding(
        "warning",
        SUBJECT,
        f"IAM refused to simulate {CONTROLLER_ROLE}'s policies: docs/iam/eks-preflight-policy.json"
        " allows it only on the role the check's own role names in its tag"
        " gpu-platform-karpenter-controller-role, so that a preview learns no other role's"
        " permissions.",
        "Tag the role the check runs with"
        " gpu-platform-karpenter-controller-role=KarpenterControllerRole-ml"
        " (docs/iam/README.md), or check that the controller's role allows what upstream's"
        " v1.14.1 controller policy does.",
    )


# --- The node role's way into the cluster --------------------------------------------------------

NODE_SUBJECT = "cluster ml-karpenter-dev Karpenter node role"
# What a node that cannot join costs: Karpenter deletes its NodeClaim 15 minutes after launch
# (`registrationTimeout`, kubernetes-sigs/karpenter v1.14.1
# pkg/controllers/nodeclaim/lifecycle/liveness.go) and launches another.
NEVER_JOIN = (
    "its nodes would never register, and Karpenter deletes each 15 minutes after launch and"
    " launches another (liveness.go, registrationTimeout), every one paid for."
)
CREATE_ENTRY = (
    "aws eks create-access-entry --cluster-name ml-karpenter-dev --principal-arn"
    f" {NODE_ROLE} --type EC2_LINUX"
)


def access_entry(eks: Stubber, kind: str | None) -> None:
    """EKS's DescribeAccessEntry for the node role: an entry of type `kind`, or none."""
    expected = {"clusterName": "ml-karpenter-dev", "principalArn": NODE_ROLE}
    if kind is None:
        eks.add_client_error(
            "describe_access_entry", "ResourceNotFoundException", "", 404, expected_params=expected
        )
        return
    eks.add_response(
        "describe_access_entry",
        {
            "accessEntry": {
                "clusterName": "ml-karpenter-dev",
                "principalArn": NODE_ROLE,
                "type": kind,
            }
        },
        expected,
    )


def in_mode(mode: str) -> dict[str, Any]:
    return {**CLUSTER, "accessConfig": {"authenticationMode": mode}}


def aws_auth(*mapped: dict[str, Any]) -> Any:
    """kube-system's aws-auth ConfigMap mapping `mapped`, as the Kubernetes API returns it."""
    config_map = {"data": {"mapRoles": yaml.safe_dump(list(mapped))}}
    return lambda namespace, name: (
        config_map if (namespace, name) == ("kube-system", "aws-auth") else None
    )


def test_a_node_role_with_an_ec2_linux_access_entry_joins(eks: Stubber) -> None:
    access_entry(eks, "EC2_LINUX")

    finding = node_role_access_finding(existing_stack(), in_mode("API"), eks.client)

    assert finding.severity == "ok"


@pytest.mark.parametrize(
    ("kind", "what", "action"),
    [
        # A STANDARD entry serves no node: it is deleted and made again.
        (
            "STANDARD",
            "STANDARD, for people and tools, not EC2_LINUX, the type of self-managed Linux nodes",
            "An entry's type cannot be changed: aws eks delete-access-entry --cluster-name"
            f" ml-karpenter-dev --principal-arn {NODE_ROLE}, then {CREATE_ENTRY}.",
        ),
        # An EC2 entry serves EKS Auto Mode's nodes, which share the role: it is kept.
        (
            "EC2",
            "EC2, not EC2_LINUX, the type of self-managed Linux nodes (EC2 is EKS Auto Mode's)",
            "Give Karpenter's nodes a role of their own (gpu-platform:karpenter.nodeRoleArn) with"
            " an access entry of type EC2_LINUX: deleting this entry would cut off the nodes it"
            " is for.",
        ),
    ],
)
def test_a_node_role_whose_entry_is_of_another_type_blocks(
    eks: Stubber, kind: str, what: str, action: str
) -> None:
    # botocore's EKS model, CreateAccessEntryRequest `type`: EC2_LINUX for "an IAM role that's
    # used for self-managed Amazon EC2 nodes", EC2 "for EKS Auto Mode", STANDARD otherwise;
    # "You can't change this value once you've created the access entry".
    access_entry(eks, kind)

    finding = node_role_access_finding(existing_stack(), in_mode("API_AND_CONFIG_MAP"), eks.client)

    assert finding == Finding(
        "blocking",
        NODE_SUBJECT,
        f"{NODE_ROLE} (gpu-platform:karpenter.nodeRoleArn) has an access entry of type {what}: "
        + NEVER_JOIN,
        action,
    )


def test_a_node_role_of_windows_nodes_warns_without_deleting_their_entry(eks: Stubber) -> None:
    # botocore's EKS model, CreateAccessEntryRequest `type`: "If the principalArn is for an IAM
    # role that's used for self-managed Amazon EC2 nodes, specify EC2_LINUX or EC2_WINDOWS".
    access_entry(eks, "EC2_WINDOWS")

    finding = node_role_access_finding(existing_stack(), in_mode("API"), eks.client)

    assert finding.severity == "warning"
    assert "delete-access-entry" not in finding.action
    assert finding.action == (
        "Give Karpenter's nodes a role of their own (gpu-platform:karpenter.nodeRoleArn) with an"
        " access entry of type EC2_LINUX."
    )


def test_a_refused_access_entry_read_warns(eks: Stubber) -> None:
    eks.add_client_error("describe_access_entry", "AccessDeniedException", "", 403)

    finding = node_role_access_finding(existing_stack(), in_mode("API"), eks.client)

    assert (finding.severity, finding.message) == (
        "warning",
        f"Whether {NODE_ROLE} (gpu-platform:karpenter.nodeRoleArn) may join the cluster cannot"
        " be read: eks:DescribeAccessEntry was refused.",
    )


def test_a_node_role_without_an_entry_in_api_mode_blocks(eks: Stubber) -> None:
    access_entry(eks, None)

    finding = node_role_access_finding(existing_stack(), in_mode("API"), eks.client)

    assert finding == Finding(
        "blocking",
        NODE_SUBJECT,
        f"{NODE_ROLE} (gpu-platform:karpenter.nodeRoleArn) has no access entry, and in"
        " authentication mode API EKS reads no aws-auth ConfigMap: " + NEVER_JOIN,
        CREATE_ENTRY,
    )


# The mapping upstream's migration guide adds for Karpenter's node role (aws/karpenter-provider-aws
# v1.14.1, getting-started/migrating-from-cas/_index.md, "Update aws-auth ConfigMap").
NODE_MAPPING = {
    "groups": ["system:bootstrappers", "system:nodes"],
    "rolearn": NODE_ROLE,
    "username": "system:node:{{EC2PrivateDNSName}}",
}


def test_a_node_role_mapped_in_aws_auth_joins_where_the_mode_reads_it(eks: Stubber) -> None:
    access_entry(eks, None)

    finding = node_role_access_finding(
        existing_stack(), in_mode("API_AND_CONFIG_MAP"), eks.client, aws_auth(NODE_MAPPING)
    )

    assert finding.severity == "ok"


def test_a_node_role_mapped_without_the_nodes_groups_blocks(eks: Stubber) -> None:
    # CONFIG_MAP mode reads no access entry: none is asked for.
    mapping = {**NODE_MAPPING, "groups": ["system:masters"]}

    finding = node_role_access_finding(
        existing_stack(), in_mode("CONFIG_MAP"), eks.client, aws_auth(mapping)
    )

    assert finding == Finding(
        "blocking",
        NODE_SUBJECT,
        f"{NODE_ROLE} (gpu-platform:karpenter.nodeRoleArn) has no access entry, and its"
        " aws-auth mapping lacks system:bootstrappers or system:nodes: " + NEVER_JOIN,
        f"Map {NODE_ROLE} to the groups system:bootstrappers and system:nodes with username"
        " system:node:{{EC2PrivateDNSName}} in kube-system's aws-auth ConfigMap (kubectl -n"
        " kube-system edit configmap aws-auth)",
    )


def test_an_unread_or_unreadable_aws_auth_warns(eks: Stubber) -> None:
    def refused(namespace: str, name: str) -> Any:
        raise requests.HTTPError("403 Forbidden")

    access_entry(eks, None)
    unread = node_role_access_finding(existing_stack(), in_mode("API_AND_CONFIG_MAP"), eks.client)
    unreadable = node_role_access_finding(
        existing_stack(), in_mode("CONFIG_MAP"), eks.client, refused
    )
    not_yaml = node_role_access_finding(
        existing_stack(),
        in_mode("CONFIG_MAP"),
        eks.client,
        lambda namespace, name: {"data": {"mapRoles": "- rolearn: [unclosed"}},
    )

    assert unread.severity == unreadable.severity == not_yaml.severity == "warning"
    assert unread.message.endswith("and the aws-auth ConfigMap was not read.")
    assert unreadable.message.endswith("cannot be read: 403 Forbidden.")
    assert "the aws-auth ConfigMap's mapRoles is not YAML" in not_yaml.message


def test_a_node_role_mapped_in_aws_auth_by_an_arn_with_a_path_blocks(eks: Stubber) -> None:
    # "ARNs in aws-auth ConfigMap entries can't include a path" (EKS user guide, "Create access
    # entries"; kubernetes-sigs/aws-iam-authenticator#153): the mapping never matches.
    pathed = "arn:aws:iam::123456789012:role/ml/nodes/KarpenterNodeRole-ml"

    finding = node_role_access_finding(
        existing_stack(),
        in_mode("CONFIG_MAP"),
        eks.client,
        aws_auth({**NODE_MAPPING, "rolearn": pathed}),
    )

    assert finding == Finding(
        "blocking",
        NODE_SUBJECT,
        f"The aws-auth ConfigMap maps {NODE_ROLE} (gpu-platform:karpenter.nodeRoleArn) as {pathed},"
        " an ARN with a path, which EKS never matches (\"ARNs in aws-auth ConfigMap entries can't"
        ' include a path", EKS user guide, "Create access entries";'
        " kubernetes-sigs/aws-iam-authenticator#153): " + NEVER_JOIN,
        f"Map {NODE_ROLE} instead of {pathed} in kube-system's aws-auth ConfigMap (kubectl -n"
        " kube-system edit configmap aws-auth).",
    )


def test_a_node_role_mapped_both_with_and_without_a_path_joins(eks: Stubber) -> None:
    # EKS matches the entry without a path (EKS user guide, "Create access entries"): a pathed
    # one left beside it, before or after, keeps no node out.
    pathed = {**NODE_MAPPING, "rolearn": "arn:aws:iam::123456789012:role/ml/KarpenterNodeRole-ml"}

    for mapped in [(pathed, NODE_MAPPING), (NODE_MAPPING, pathed)]:
        finding = node_role_access_finding(
            existing_stack(), in_mode("CONFIG_MAP"), eks.client, aws_auth(*mapped)
        )

        assert finding.severity == "ok", mapped
