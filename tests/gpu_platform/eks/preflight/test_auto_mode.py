"""Preflight of a stack on EKS Auto Mode: the cluster must run Auto Mode's compute with a node
role, as DescribeCluster reports it in `computeConfig` (botocore's eks model at the installed
version: `Cluster.computeConfig`, shape `ComputeConfigResponse`), against moto's EKS with that
answer put in place."""

import dataclasses
from typing import Any

import boto3
import botocore.session
import pytest
import requests
from botocore.model import StructureShape
from botocore.stub import Stubber

from gpu_platform.config import StackConfig, load_stack_config
from gpu_platform.eks.auto_mode.names import SETTING
from gpu_platform.eks.preflight import checks as preflight_eks
from gpu_platform.eks.preflight.auto_mode import (
    network_policy_controller_finding,
    open_reservation_finding,
)
from gpu_platform.eks.preflight.checks import AwsClients
from gpu_platform.eks.preflight.karpenter import karpenter_findings
from gpu_platform.preflight.findings import Finding
from tests.gpu_platform.eks.preflight.test_checks import (  # noqa: F401
    SPOT_G,
    answer,
    aws,
    cluster,
    quota,
    quotas,
    run_spot_instance,
)

ROLE = "arn:aws:iam::123456789012:role/ml-dev-auto-mode-node"
SUBJECT = "cluster ml-dev"


WITH_PROMETHEUS = {"monitoring": {"installPrometheusStack": True}}


def auto_mode_stack(**settings: Any) -> StackConfig:
    return load_stack_config(
        {
            "cloud": "aws",
            "cluster": {"name": "ml-dev", "region": "us-east-1"},
            "provisioner": "eks-auto-mode",
            "pools": [
                {"name": "t4", "instanceTypes": ["g4dn.xlarge"], "max": 2, "capacity": "spot"}
            ],
            **settings,
        }
    )


def created_auto_mode_stack() -> StackConfig:
    return auto_mode_stack(
        cluster={
            "name": "ml-dev",
            "region": "us-east-1",
            "create": {
                "kubernetesVersion": "1.34",
                "endpoint": {"access": "public", "publicCidrs": ["203.0.113.0/24"]},
            },
        },
        **WITH_PROMETHEUS,
    )


def test_compute_config_is_botocores_shape() -> None:
    model = botocore.session.get_session().get_service_model("eks")
    described, compute = model.shape_for("Cluster"), model.shape_for("ComputeConfigResponse")
    assert isinstance(described, StructureShape) and isinstance(compute, StructureShape)
    assert described.members["computeConfig"].name == "ComputeConfigResponse"
    assert set(compute.members) == {
        "enabled",
        "nodePools",
        "nodeRoleArn",
    }


@pytest.mark.parametrize(
    ("compute", "expected"),
    [
        (
            {"enabled": True, "nodePools": ["general-purpose", "system"], "nodeRoleArn": ROLE},
            Finding(
                "ok",
                SUBJECT,
                f"EKS Auto Mode's compute is on, its nodes running as {ROLE}.",
                "Nothing.",
            ),
        ),
        (
            None,
            Finding(
                "blocking",
                SUBJECT,
                "EKS Auto Mode's compute is off on the cluster, and gpu-platform:provisioner is"
                " eks-auto-mode: nothing would launch the pools' NodePools.",
                "Turn Auto Mode on for the cluster (aws eks update-cluster-config --compute-config"
                " enabled=true with its storage and load balancing), or choose another"
                " provisioner.",
            ),
        ),
        (
            {"enabled": True, "nodePools": []},
            Finding(
                "blocking",
                SUBJECT,
                "EKS Auto Mode's compute is on without a node role (computeConfig.nodeRoleArn),"
                " which the pools' NodeClasses run their nodes as.",
                "Give the cluster's Auto Mode a node role (with its built-in node pools, or"
                " update-cluster-config --compute-config nodeRoleArn=...).",
            ),
        ),
        (
            {"enabled": True, "nodePools": ["system"], "nodeRoleArn": ROLE},
            Finding(
                "warning",
                SUBJECT,
                f"EKS Auto Mode's compute is on, its nodes running as {ROLE}, without the"
                " built-in general-purpose NodePool (computeConfig.nodePools): the platform's"
                " own pods tolerate neither the GPU pools' taint nor the system NodePool's, and"
                " stay Pending unless another NodePool or node group gives them untainted nodes.",
                "Turn the built-in general-purpose NodePool on (aws eks update-cluster-config"
                " with computeConfig.nodePools including general-purpose: EKS user guide,"
                " set-builtin-node-pools.adoc), or make sure the cluster has untainted nodes.",
            ),
        ),
    ],
    ids=["on", "off", "no role", "no general-purpose pool"],
)
def test_the_clusters_auto_mode_compute_is_checked(
    aws: AwsClients,  # noqa: F811
    quotas: Stubber,  # noqa: F811
    compute: dict[str, Any] | None,
    expected: Finding,
) -> None:
    cluster(aws)
    quota(quotas, SPOT_G, 32)
    described = aws.eks.describe_cluster(name="ml-dev")["cluster"]
    if compute is not None:
        described = {**described, "computeConfig": compute}
    answer(aws.eks, "DescribeCluster", 200, {"cluster": described})

    findings = preflight_eks.preflight(auto_mode_stack(), aws)

    assert findings[1] == expected


NETWORK_POLICIES = "cluster ml-dev network policies"


def auto_mode_findings(
    aws: AwsClients,  # noqa: F811
    quotas: Stubber,  # noqa: F811
    config: StackConfig | None = None,
    **clients: Any,
) -> list[Finding]:
    """The Auto Mode stack's preflight findings on moto's cluster, with `clients` changed."""
    cluster(aws)
    quota(quotas, SPOT_G, 32)
    return preflight_eks.preflight(config or auto_mode_stack(), dataclasses.replace(aws, **clients))


def test_an_auto_mode_cluster_is_not_sent_to_the_aws_node_daemon_set(
    aws: AwsClients,  # noqa: F811
    quotas: Stubber,  # noqa: F811
) -> None:
    # Auto Mode has no vpc-cni add-on and no aws-node DaemonSet: the ConfigMap key turns
    # enforcement on (auto-net-pol.adoc, Step 1).
    findings = auto_mode_findings(
        aws,
        quotas,
        auto_mode_stack(**WITH_PROMETHEUS),
        config_maps=lambda _: lambda namespace, name: None,
    )

    [finding] = [f for f in findings if f.subject == NETWORK_POLICIES]
    assert "kube-system/amazon-vpc-cni" in finding.message
    assert not any("aws-node" in f.action for f in findings)


@pytest.mark.parametrize(
    ("created", "data", "severity"),
    [
        (True, None, "ok"),
        (True, {"other": "x"}, "ok"),
        (True, {SETTING: "true"}, "ok"),
        (True, {SETTING: "false"}, "blocking"),
        (False, None, "blocking"),
        (False, {"other": "x"}, "blocking"),
        (False, {SETTING: "true"}, "ok"),
        (False, {SETTING: "false"}, "blocking"),
    ],
    ids=[
        "created, no config map",
        "created, other keys",
        "created, on",
        "created, turned off by its owner",
        "attached, no config map",
        "attached, other keys",
        "attached, on",
        "attached, off",
    ],
)
def test_network_policy_enforcement_is_set_on_a_created_cluster_and_needed_on_an_attached_one(
    created: bool, data: dict[str, str] | None, severity: str
) -> None:
    # The stack patches the switch on a cluster it creates, where a value another field
    # manager set is a server-side apply conflict; an attached cluster's switch, which
    # enforces every NetworkPolicy of the cluster (auto-net-pol.adoc), must be on already for
    # the NetworkPolicies of the Prometheus stack.
    def config_maps(namespace: str, name: str) -> dict[str, Any] | None:
        assert (namespace, name) == ("kube-system", "amazon-vpc-cni")
        return None if data is None else {"data": data}

    config = created_auto_mode_stack() if created else auto_mode_stack(**WITH_PROMETHEUS)

    finding = network_policy_controller_finding(config, NETWORK_POLICIES, config_maps)

    assert finding is not None and finding.severity == severity


def test_an_attached_stack_without_network_policies_leaves_the_switch_unchecked() -> None:
    def config_maps(namespace: str, name: str) -> dict[str, Any] | None:
        raise AssertionError("not read")

    assert (
        network_policy_controller_finding(auto_mode_stack(), NETWORK_POLICIES, config_maps) is None
    )


@pytest.mark.parametrize(
    ("manager", "advice"),
    [
        ("eks", 'Set the vpc-cni add-on\'s configurationValues enableNetworkPolicy: "true"'),
        (
            "kubectl-edit",
            'Set enable-network-policy-controller: "true" in kube-system/amazon-vpc-cni',
        ),
    ],
    ids=["the vpc-cni add-on's", "someone else's"],
)
def test_a_key_the_vpc_cni_add_on_writes_is_turned_on_through_the_add_on(
    manager: str, advice: str
) -> None:
    # A field an EKS add-on writes is managed by `eks` (EKS user guide,
    # kubernetes-field-management.adoc), and the vpc-cni add-on writes this key from its
    # `enableNetworkPolicy` value (aws/amazon-vpc-cni-k8s
    # charts/aws-vpc-cni/templates/configmap.yaml): an edit by hand is undone at its update.
    config_map = {
        "metadata": {
            "managedFields": [
                {
                    "manager": manager,
                    "operation": "Apply" if manager == "eks" else "Update",
                    "fieldsV1": {"f:data": {f"f:{SETTING}": {}, "f:enable-windows-ipam": {}}},
                }
            ]
        },
        "data": {SETTING: "false"},
    }

    finding = network_policy_controller_finding(
        auto_mode_stack(**WITH_PROMETHEUS), NETWORK_POLICIES, lambda namespace, name: config_map
    )

    assert finding is not None and finding.action.startswith(advice)


def test_an_auto_mode_clusters_node_pools_are_read(
    aws: AwsClients,  # noqa: F811
    quotas: Stubber,  # noqa: F811
) -> None:
    findings = auto_mode_findings(aws, quotas, node_pools=lambda _: lambda: [])

    assert "cluster ml-dev NodePools" in [f.subject for f in findings]


@pytest.mark.parametrize(
    ("labels", "clash"),
    [({}, True), ({"gpu-platform.io/pool": "t4"}, False)],
    ids=["another installation's", "the pool's own"],
)
def test_a_node_class_named_like_a_pool_that_is_not_the_platforms_blocks(
    aws: AwsClients,  # noqa: F811
    quotas: Stubber,  # noqa: F811
    labels: dict[str, str],
    clash: bool,
) -> None:
    # pulumi-kubernetes creates a NodeClass it has not got in its state, and does not adopt a
    # live one (provider/pkg/await/await.go `Creation`): `up` would fail with AlreadyExists.
    node_classes = [
        {"metadata": {"name": "t4", "labels": labels}},
        {"metadata": {"name": "default"}},
    ]

    findings = auto_mode_findings(
        aws, quotas, auto_mode_node_classes=lambda _: lambda: node_classes
    )

    found = [f for f in findings if f.subject == "cluster ml-dev NodeClass names"]
    assert [(f.severity, f.message) for f in found] == (
        [
            (
                "blocking",
                "The cluster has NodeClasses of another installation named like the pools: t4."
                " pulumi up would fail creating the pools' own, or take those over.",
            )
        ]
        if clash
        else []
    )


def test_unreadable_node_classes_warn(
    aws: AwsClients,  # noqa: F811
    quotas: Stubber,  # noqa: F811
) -> None:
    # Without them the name clash above cannot be checked, and no other check reads them.
    def refused() -> list[dict[str, Any]]:
        raise requests.HTTPError("403 Forbidden")

    findings = auto_mode_findings(aws, quotas, auto_mode_node_classes=lambda _: refused)

    found = [f for f in findings if f.subject == "cluster ml-dev NodeClass names"]
    assert [(f.severity, f.message, f.action) for f in found] == [
        (
            "warning",
            "Cannot read the cluster's NodeClasses: 403 Forbidden.",
            "Check that no NodeClass of another installation is named like a pool: t4"
            " (kubectl get nodeclasses.eks.amazonaws.com).",
        )
    ]


def auto_mode_node_pool(name: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"template": {"spec": {}}, **spec}}


def test_auto_mode_node_pools_are_checked_as_karpenters_and_nothing_else() -> None:
    # Auto Mode's NodePools are karpenter.sh/v1 ones, tried by descending weight as Karpenter's
    # (`OrderByWeight`, kubernetes-sigs/karpenter pkg/utils/nodepool/nodepool.go at v1.14.1);
    # the controller, its CRDs and the Spot role (the stack's pool is spot) are AWS's.
    found = karpenter_findings(
        auto_mode_stack(),
        {"name": "ml-dev"},
        None,
        lambda name: None,
        "",
        None,
        lambda: [
            auto_mode_node_pool("t4"),
            auto_mode_node_pool("general-purpose"),
            auto_mode_node_pool("system"),
            auto_mode_node_pool("batch", weight=10),
        ],
    )

    assert [(f.subject, f.severity) for f in found] == [
        ("cluster ml-dev NodePools", "warning"),
        ("cluster ml-dev NodePool names", "blocking"),
    ]
    # Auto Mode's built-in pools (set-builtin-node-pools.adoc) are EKS's to weigh: the GPU taint
    # guards them.
    assert "general-purpose" not in found[0].message and "system" not in found[0].message
    assert "batch (weight 10)" in found[0].message


def test_auto_modes_own_nodes_count_within_their_pools_max(
    aws: AwsClients,  # noqa: F811
    quotas: Stubber,  # noqa: F811
) -> None:
    # The cluster and NodePool tags Auto Mode launches with: the request tags its cluster
    # role's policies require (awsdocs/amazon-eks-user-guide latest/ug/automode/
    # auto-learn-iam.adoc, "Custom AWS tags for EKS Auto resources").
    run_spot_instance(
        aws,
        "g4dn.2xlarge",
        {"eks:eks-cluster-name": "ml-dev", "eks:kubernetes-node-pool-name": "t4"},
    )

    findings = auto_mode_findings(aws, quotas)

    assert findings[-1].severity == "ok"
    assert findings[-1].message.endswith("with no other instance using them now.")


RESERVED_POOL = {
    "name": "h100",
    "instanceTypes": ["p5.48xlarge"],
    "accelerator": "h100-80gb",
    "gpusPerNode": 8,
    "zones": ["us-east-1a"],
    "max": 2,
    "capacity": "reserved",
    "aws": {"capacityReservationId": "cr-0123456789abcdef0"},
}


@pytest.mark.parametrize(
    ("open_ids", "severity"),
    [
        (["cr-0123456789abcdef0"], "ok"),
        (["cr-0123456789abcdef0", "cr-0fedcba987654321f"], "warning"),
    ],
    ids=["only the pools own", "another"],
)
def test_a_reserved_pool_warns_of_the_open_reservations_auto_mode_stops_using(
    open_ids: list[str], severity: str
) -> None:
    # auto-odcr.adoc (awsdocs/amazon-eks-user-guide latest/ug/automode/), WARNING: with
    # capacityReservationSelectorTerms on any NodeClass, Auto Mode uses no open ODCR for any.
    config = auto_mode_stack(pools=[RESERVED_POOL])
    ec2 = boto3.client("ec2", region_name="us-east-1")
    with Stubber(ec2) as stub:
        stub.add_response(
            "describe_capacity_reservations",
            {
                "CapacityReservations": [
                    {"CapacityReservationId": i, "InstanceType": "p5.48xlarge"} for i in open_ids
                ]
            },
            {
                "Filters": [
                    {"Name": "instance-match-criteria", "Values": ["open"]},
                    {"Name": "state", "Values": ["active"]},
                ]
            },
        )
        finding = open_reservation_finding(config, ec2)

    assert finding is not None and finding.severity == severity
    if severity == "warning":
        assert "cr-0fedcba987654321f (p5.48xlarge" in finding.message


def test_open_reservations_that_cannot_be_listed_are_a_warning() -> None:
    config = auto_mode_stack(pools=[RESERVED_POOL])
    ec2 = boto3.client("ec2", region_name="us-east-1")
    with Stubber(ec2) as stub:
        stub.add_client_error(
            "describe_capacity_reservations", "UnauthorizedOperation", http_status_code=403
        )
        finding = open_reservation_finding(config, ec2)

    assert finding is not None and finding.severity == "warning"
    assert "cannot be listed (UnauthorizedOperation)" in finding.message


def test_no_reserved_pool_asks_for_no_open_reservations() -> None:
    assert open_reservation_finding(auto_mode_stack(), None) is None
