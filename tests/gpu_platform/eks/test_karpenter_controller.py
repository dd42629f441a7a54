"""Karpenter on EKS (`provisioner: karpenter`) in the real program, for the karpenter-dev stack:
the controller's releases from the pinned charts, its interruption queue and EventBridge rules,
its IAM as upstream's getting-started CloudFormation template grants it, the node role and its
access entry, and a NodePool in place of each managed node group.

Upstream literals are from aws/karpenter-provider-aws at v1.14.1:
website/content/en/docs/getting-started/getting-started-with-karpenter/cloudformation.yaml ("the
template") and charts/karpenter/values.yaml, with the template's parameters and pseudo
parameters filled in for the stand-in cluster (ml-karpenter-dev, us-east-1, 123456789012).
"""

import copy
import json
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

from gpu_platform.eks.karpenter.controller import interruption_queue_name
from gpu_platform.kubernetes.chart_keys import KEY_LISTS_DIR, chart_key_paths, key_paths
from gpu_platform.offline.program import Plan, PlannedResource, run_program
from gpu_platform.stack_files import stack_config
from gpu_platform.versions import KARPENTER_CHART
from tests.iam_policy import Request, allowed
from tests.repository import PROJECT
from tests.shared_plans import shared_plan

from .aws_api import request_problems, service_model
from .plans import NODE_GROUP, RELEASE

Config = dict[str, Any]
PlanFor = Callable[[Config], Plan]
STACK = "karpenter-dev"
COMPONENT = "gpu-platform:eks:Karpenter"
POOL_COMPONENT = "gpu-platform:eks:KarpenterGpuNodePool"
NODE_POOL = "kubernetes:karpenter.sh/v1:NodePool"
NODE_CLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
QUEUE = "aws:sqs/queue:Queue"
QUEUE_POLICY = "aws:sqs/queuePolicy:QueuePolicy"
RULE = "aws:cloudwatch/eventRule:EventRule"
TARGET = "aws:cloudwatch/eventTarget:EventTarget"
ROLE = "aws:iam/role:Role"
POLICY = "aws:iam/rolePolicy:RolePolicy"
ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
ACCESS_ENTRY = "aws:eks/accessEntry:AccessEntry"
ASSOCIATION = "aws:eks/podIdentityAssociation:PodIdentityAssociation"

CLUSTER = "ml-karpenter-dev"
CLUSTER_ARN = "arn:aws:eks:us-east-1:123456789012:cluster/ml-karpenter-dev"
QUEUE_NAME = "ml-karpenter-dev-karpenter"
QUEUE_ARN = "arn:aws:sqs:us-east-1:123456789012:ml-karpenter-dev-karpenter"
# The stand-in names a role after its resource.
NODE_ROLE_ARN = "arn:aws:iam::123456789012:role/ml-karpenter-dev.karpenter-nodes"
POOLS = ("h100-block", "l4-reserved", "t4-spot", "l4-on-demand")
# Values maps whose entries are Kubernetes' (a container's resources), not the chart's keys.
OPAQUE_VALUES = {"controller.resources"}


@pytest.fixture(scope="module")
def plan() -> Plan:
    return shared_plan(STACK)


@pytest.fixture
def karpenter_config() -> Config:
    return copy.deepcopy(stack_config(STACK, PROJECT))


def release(plan: Plan, name: str = "karpenter") -> PlannedResource:
    return plan.named(name, RELEASE)


def values(plan: Plan) -> dict[str, Any]:
    return release(plan).inputs["values"]


def policies(plan: Plan) -> dict[str, dict[str, Any]]:
    """The controller's inline policies by resource name."""
    return {r.name: json.loads(r.inputs["policy"]) for r in plan.of_type(POLICY)}


def statements(plan: Plan) -> Iterator[dict[str, Any]]:
    for policy in policies(plan).values():
        yield from policy["Statement"]


def actions(statement: Mapping[str, Any]) -> list[str]:
    action = statement["Action"]
    return [action] if isinstance(action, str) else list(action)


# --- The releases ------------------------------------------------------------------------------


def test_both_charts_are_the_pinned_ones_from_awss_oci_registry(plan: Plan) -> None:
    charts = {
        r.name: (r.inputs["chart"], r.inputs["version"], r.inputs["namespace"])
        for r in (release(plan, "karpenter-crd"), release(plan))
    }

    assert KARPENTER_CHART.version == "1.14.1"
    assert charts == {
        "karpenter-crd": ("oci://public.ecr.aws/karpenter/karpenter-crd", "1.14.1", "kube-system"),
        "karpenter": ("oci://public.ecr.aws/karpenter/karpenter", "1.14.1", "kube-system"),
    }


def test_the_crd_chart_owns_the_crds_and_the_controller_chart_skips_its_copy(plan: Plan) -> None:
    assert release(plan).inputs["skipCrds"] is True
    assert not release(plan, "karpenter-crd").inputs.get("skipCrds")
    assert release(plan, "karpenter-crd").urn in release(plan).dependencies


def test_the_crd_chart_marks_the_crds_with_the_stack(plan: Plan) -> None:
    # charts/karpenter-crd/values.yaml at v1.14.1 has one value, `additionalAnnotations: {}`,
    # which every template there writes into its CRD's `metadata.annotations`.
    assert release(plan, "karpenter-crd").inputs["values"] == {
        "additionalAnnotations": {"gpu-platform.io/stack": "gpu-platform/karpenter-dev"}
    }


def test_releases_are_installed_through_the_clusters_provider(plan: Plan) -> None:
    (provider,) = plan.of_type("pulumi:providers:kubernetes")

    for name in ("karpenter-crd", "karpenter"):
        assert str(release(plan, name).provider).startswith(provider.urn + "::")


def test_the_controller_starts_with_its_credentials_queue_and_node_access_in_place(
    plan: Plan,
) -> None:
    (controller,) = plan.of_type(COMPONENT)
    kinds = (ASSOCIATION, POLICY, QUEUE_POLICY, TARGET, ACCESS_ENTRY, ATTACHMENT)
    needed = [r for r in plan.children_of(controller) if r.type in kinds]
    # The VPC CNI's role and association too: nodes the controller launches need it.
    (cni,) = plan.of_type("gpu-platform:eks:VpcCniIdentity")
    needed += plan.children_of(cni)

    assert len(needed) == 1 + 5 + 1 + 5 + 1 + 2 + 3
    assert {r.urn for r in needed} <= set(release(plan).dependencies)


def test_values_name_the_cluster_and_its_interruption_queue(plan: Plan) -> None:
    settings = values(plan)["settings"]

    assert settings["clusterName"] == CLUSTER
    assert (
        settings["interruptionQueue"]
        == QUEUE_NAME
        == plan.named("karpenter-interruption-queue", QUEUE).inputs["name"]
    )


def test_the_controller_runs_by_the_digest_of_the_pinned_release(plan: Plan) -> None:
    # aws/karpenter-provider-aws, charts/karpenter/values.yaml as the v1.14.1 release published
    # it (commit c88abbba, "Stable Release updates Release v1.14.1"): the chart renders
    # `repository:tag@digest` (templates/_helpers.tpl, karpenter.controller.image).
    assert values(plan)["controller"]["image"] == {
        "repository": "public.ecr.aws/karpenter/controller",
        "tag": "1.14.1",
        "digest": "sha256:445baefaaa689029cc12ac1f659b916b0b82fb14308ce536f8521fcf079116fa",
    }


def test_another_chart_version_runs_its_own_charts_image(
    karpenter_config: Config, plan_for: PlanFor
) -> None:
    karpenter_config["gpu-platform:karpenter"] = {"chartVersion": "1.14.0"}

    assert "image" not in values(plan_for(karpenter_config))["controller"]


def test_values_set_only_keys_the_pinned_chart_has(plan: Plan) -> None:
    unknown = set(key_paths(values(plan), opaque=OPAQUE_VALUES)) - chart_key_paths(
        KARPENTER_CHART.version, KARPENTER_CHART.name
    )

    assert not unknown, f"not in the karpenter {KARPENTER_CHART.version} chart: {sorted(unknown)}"


def test_the_committed_key_list_is_the_pinned_karpenter_charts() -> None:
    lists = sorted(KEY_LISTS_DIR.glob("karpenter-*.txt"))
    paths = chart_key_paths(KARPENTER_CHART.version, KARPENTER_CHART.name)

    assert [p.name for p in lists] == [f"karpenter-{KARPENTER_CHART.version}.txt"]
    # Keys of charts/karpenter/values.yaml at v1.14.1, and a misspelling of one.
    assert {
        "settings.clusterName",
        "settings.interruptionQueue",
        "serviceAccount.name",
        "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms",
    } <= paths
    assert "settings.interruptQueue" not in paths


def test_the_service_account_is_the_one_pod_identity_serves(plan: Plan) -> None:
    association = plan.named("karpenter-pod-identity", ASSOCIATION).inputs

    assert association["clusterName"] == CLUSTER
    assert association["namespace"] == release(plan).inputs["namespace"] == "kube-system"
    assert association["serviceAccount"] == values(plan)["serviceAccount"]["name"] == "karpenter"
    assert association["roleArn"] == "arn:aws:iam::123456789012:role/ml-karpenter-dev.karpenter"


def test_the_controller_runs_on_no_karpenter_node_and_no_gpu_node(plan: Plan) -> None:
    affinity = values(plan)["affinity"]

    # The chart's default term (karpenter.sh/nodepool DoesNotExist), and no GPU pool's node.
    assert affinity == {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "karpenter.sh/nodepool", "operator": "DoesNotExist"},
                            {"key": "gpu-platform.io/pool", "operator": "DoesNotExist"},
                        ]
                    }
                ]
            }
        }
    }
    # The chart's own tolerations stay: CriticalAddonsOnly, not the GPU taint.
    assert "tolerations" not in values(plan)


def test_the_controller_gets_the_resources_upstreams_install_gives_it(plan: Plan) -> None:
    # scripts/step08-apply-helm-chart.sh at v1.14.1.
    assert values(plan)["controller"]["resources"] == {
        "requests": {"cpu": "1", "memory": "1Gi"},
        "limits": {"cpu": "1", "memory": "1Gi"},
    }


def test_zonal_shift_stays_off_as_the_role_may_not_read_it(plan: Plan) -> None:
    assert values(plan)["settings"]["enableZonalShift"] is False
    assert not [a for s in statements(plan) for a in actions(s) if a.startswith("arc-zonal-shift")]


# --- The interruption queue and its rules ------------------------------------------------------


def test_the_queue_keeps_messages_five_minutes_encrypted_by_sqs(plan: Plan) -> None:
    queue = plan.named("karpenter-interruption-queue", QUEUE).inputs

    assert queue == {
        "name": QUEUE_NAME,
        "messageRetentionSeconds": 300,
        "sqsManagedSseEnabled": True,
        "region": "us-east-1",
        "tags": {"gpu-platform.io/cluster": "ml-karpenter-dev"},
    }


def test_a_long_cluster_name_still_makes_a_queue_name_sqs_takes() -> None:
    # CreateQueue takes names of up to 80 letters, digits, '-' and '_' (botocore's SQS model);
    # EKS cluster names run to 100.
    longest, other = "c" * 100, "c" * 99 + "d"

    name = interruption_queue_name(longest)

    assert len(name) <= 80 and name.endswith("-karpenter")
    assert name != interruption_queue_name(other)
    assert interruption_queue_name("ml") == "ml-karpenter"


RULE_ARNS = [
    f"arn:aws:events:us-east-1:123456789012:rule/ml-karpenter-dev.{event}"
    for event in (
        "scheduled-change",
        "spot-interruption",
        "rebalance",
        "instance-state-change",
        "capacity-reservation-interruption",
    )
]


def test_only_the_five_rules_may_send_to_the_queue_and_nothing_without_tls(plan: Plan) -> None:
    queue_policy = plan.named("karpenter-interruption-queue-policy", QUEUE_POLICY).inputs

    assert queue_policy["queueUrl"] == (
        "https://sqs.us-east-1.amazonaws.com/123456789012/ml-karpenter-dev-karpenter"
    )
    # The template's KarpenterInterruptionQueuePolicy, with `aws:SourceArn` on the rules and
    # without `sqs.amazonaws.com`.
    assert json.loads(queue_policy["policy"]) == {
        "Version": "2012-10-17",
        "Id": "EC2InterruptionPolicy",
        "Statement": [
            {
                "Sid": "TheClustersInterruptionRules",
                "Effect": "Allow",
                "Principal": {"Service": "events.amazonaws.com"},
                "Action": "sqs:SendMessage",
                "Resource": QUEUE_ARN,
                "Condition": {"ArnEquals": {"aws:SourceArn": RULE_ARNS}},
            },
            {
                "Sid": "DenyHTTP",
                "Effect": "Deny",
                "Action": "sqs:*",
                "Resource": QUEUE_ARN,
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                "Principal": "*",
            },
        ],
    }


@pytest.mark.parametrize(
    ("principal", "source", "sends"),
    [
        ("events.amazonaws.com", RULE_ARNS[1], True),
        # A rule anyone else creates, in this account or another, forging Spot interruptions.
        ("events.amazonaws.com", "arn:aws:events:us-east-1:123456789012:rule/forged", False),
        (
            "events.amazonaws.com",
            "arn:aws:events:us-east-1:999999999999:rule/ml-karpenter-dev.rebalance",
            False,
        ),
        ("events.amazonaws.com", None, False),
        ("sqs.amazonaws.com", None, False),
    ],
)
def test_who_may_send_interruptions_to_the_queue(
    plan: Plan, principal: str, source: str | None, sends: bool
) -> None:
    policy = json.loads(
        plan.named("karpenter-interruption-queue-policy", QUEUE_POLICY).inputs["policy"]
    )
    context = {"aws:SecureTransport": "true"} | ({"aws:SourceArn": source} if source else {})

    assert allowed(Request("sqs:SendMessage", QUEUE_ARN, context, principal), [policy]) is sends


def test_each_rule_of_the_template_matches_its_events(plan: Plan) -> None:
    patterns = [json.loads(r.inputs["eventPattern"]) for r in plan.of_type(RULE)]

    # ScheduledChangeRule, SpotInterruptionRule, RebalanceRule, InstanceStateChangeRule,
    # CapacityReservationInterruptionRule.
    assert patterns == [
        {"source": ["aws.health"], "detail-type": ["AWS Health Event"]},
        {"source": ["aws.ec2"], "detail-type": ["EC2 Spot Instance Interruption Warning"]},
        {"source": ["aws.ec2"], "detail-type": ["EC2 Instance Rebalance Recommendation"]},
        {"source": ["aws.ec2"], "detail-type": ["EC2 Instance State-change Notification"]},
        {
            "source": ["aws.ec2"],
            "detail-type": ["EC2 Capacity Reservation Instance Interruption Warning"],
        },
    ]


def test_each_rule_sends_its_events_to_the_queue(plan: Plan) -> None:
    rules = {r.name: r.inputs["name"] for r in plan.of_type(RULE)}
    targets = {r.name: r.inputs for r in plan.of_type(TARGET)}

    assert targets == {
        f"{rule}-target": {
            "rule": name,
            "arn": QUEUE_ARN,
            "targetId": "KarpenterInterruptionQueueTarget",
            "region": "us-east-1",
        }
        for rule, name in rules.items()
    }


# --- The controller's IAM ----------------------------------------------------------------------


def test_the_role_trusts_eks_pod_identity_for_this_cluster_only(plan: Plan) -> None:
    trust = json.loads(plan.named("karpenter-role", ROLE).inputs["assumeRolePolicy"])

    assert trust["Statement"] == [
        {
            "Effect": "Allow",
            "Principal": {"Service": "pods.eks.amazonaws.com"},
            "Action": ["sts:AssumeRole", "sts:TagSession"],
            "Condition": {
                "StringEquals": {
                    "aws:SourceAccount": "123456789012",
                    "aws:RequestTag/kubernetes-namespace": "kube-system",
                    "aws:RequestTag/kubernetes-service-account": "karpenter",
                },
                "ArnEquals": {"aws:SourceArn": CLUSTER_ARN},
            },
        }
    ]


def test_every_policy_is_on_the_controllers_role(plan: Plan) -> None:
    # The mock monitor gives a resource the id `<name>-id`.
    assert {r.inputs["role"] for r in plan.of_type(POLICY)} == {"karpenter-role-id"}


EC2 = "arn:aws:ec2:us-east-1"
# Where the template says any account (`*`), what the controller creates, tags and deletes is
# limited to the cluster's; only what a launch may use from another account stays open.
OWN = f"{EC2}:123456789012"
CREATED = [
    f"{OWN}:fleet/*",
    f"{OWN}:instance/*",
    f"{OWN}:volume/*",
    f"{OWN}:network-interface/*",
    f"{OWN}:launch-template/*",
    f"{OWN}:spot-instances-request/*",
]
PROFILES = "arn:aws:iam::123456789012:instance-profile/*"
OWNED = "kubernetes.io/cluster/ml-karpenter-dev"

# The template's controller policies, statement for statement; its ZonalShiftPolicy is not
# granted (settings.enableZonalShift is off).
UPSTREAM_POLICIES: dict[str, list[dict[str, Any]]] = {
    "karpenter-node-lifecycle": [
        {
            "Sid": "AllowScopedEC2InstanceAccessActions",
            "Effect": "Allow",
            "Resource": [
                f"{EC2}::image/*",
                f"{EC2}::snapshot/*",
                f"{EC2}:*:security-group/*",
                f"{EC2}:*:subnet/*",
                f"{EC2}:*:capacity-reservation/*",
                f"{EC2}:*:placement-group/*",
            ],
            "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
        },
        {
            "Sid": "AllowScopedEC2LaunchTemplateAccessActions",
            "Effect": "Allow",
            "Resource": f"{OWN}:launch-template/*",
            "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
            "Condition": {
                "StringEquals": {f"aws:ResourceTag/{OWNED}": "owned"},
                "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"},
            },
        },
        {
            "Sid": "AllowScopedEC2InstanceActionsWithTags",
            "Effect": "Allow",
            "Resource": CREATED,
            "Action": ["ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate"],
            "Condition": {
                "StringEquals": {
                    f"aws:RequestTag/{OWNED}": "owned",
                    "aws:RequestTag/eks:eks-cluster-name": CLUSTER,
                },
                "StringLike": {"aws:RequestTag/karpenter.sh/nodepool": "*"},
            },
        },
        {
            "Sid": "AllowScopedResourceCreationTagging",
            "Effect": "Allow",
            "Resource": CREATED,
            "Action": "ec2:CreateTags",
            "Condition": {
                "StringEquals": {
                    f"aws:RequestTag/{OWNED}": "owned",
                    "aws:RequestTag/eks:eks-cluster-name": CLUSTER,
                    "ec2:CreateAction": ["RunInstances", "CreateFleet", "CreateLaunchTemplate"],
                },
                "StringLike": {"aws:RequestTag/karpenter.sh/nodepool": "*"},
            },
        },
        {
            "Sid": "AllowScopedResourceTagging",
            "Effect": "Allow",
            "Resource": f"{OWN}:instance/*",
            "Action": "ec2:CreateTags",
            "Condition": {
                "StringEquals": {f"aws:ResourceTag/{OWNED}": "owned"},
                "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"},
                "StringEqualsIfExists": {"aws:RequestTag/eks:eks-cluster-name": CLUSTER},
                "ForAllValues:StringEquals": {
                    "aws:TagKeys": ["eks:eks-cluster-name", "karpenter.sh/nodeclaim", "Name"]
                },
            },
        },
        {
            "Sid": "AllowScopedDeletion",
            "Effect": "Allow",
            "Resource": [f"{OWN}:instance/*", f"{OWN}:launch-template/*"],
            "Action": ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"],
            "Condition": {
                "StringEquals": {f"aws:ResourceTag/{OWNED}": "owned"},
                "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"},
            },
        },
    ],
    "karpenter-iam-integration": [
        {
            "Sid": "AllowPassingInstanceRole",
            "Effect": "Allow",
            "Resource": NODE_ROLE_ARN,
            "Action": "iam:PassRole",
            "Condition": {
                "StringEquals": {
                    "iam:PassedToService": ["ec2.amazonaws.com", "ec2.amazonaws.com.cn"]
                }
            },
        },
        {
            "Sid": "AllowScopedInstanceProfileCreationActions",
            "Effect": "Allow",
            "Resource": PROFILES,
            "Action": ["iam:CreateInstanceProfile"],
            "Condition": {
                "StringEquals": {
                    f"aws:RequestTag/{OWNED}": "owned",
                    "aws:RequestTag/eks:eks-cluster-name": CLUSTER,
                    "aws:RequestTag/topology.kubernetes.io/region": "us-east-1",
                },
                "StringLike": {"aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*"},
            },
        },
        {
            "Sid": "AllowScopedInstanceProfileTagActions",
            "Effect": "Allow",
            "Resource": PROFILES,
            "Action": ["iam:TagInstanceProfile"],
            "Condition": {
                "StringEquals": {
                    f"aws:ResourceTag/{OWNED}": "owned",
                    "aws:ResourceTag/topology.kubernetes.io/region": "us-east-1",
                    f"aws:RequestTag/{OWNED}": "owned",
                    "aws:RequestTag/eks:eks-cluster-name": CLUSTER,
                    "aws:RequestTag/topology.kubernetes.io/region": "us-east-1",
                },
                "StringLike": {
                    "aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*",
                    "aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*",
                },
            },
        },
        {
            "Sid": "AllowScopedInstanceProfileActions",
            "Effect": "Allow",
            "Resource": PROFILES,
            "Action": [
                "iam:AddRoleToInstanceProfile",
                "iam:RemoveRoleFromInstanceProfile",
                "iam:DeleteInstanceProfile",
            ],
            "Condition": {
                "StringEquals": {
                    f"aws:ResourceTag/{OWNED}": "owned",
                    "aws:ResourceTag/topology.kubernetes.io/region": "us-east-1",
                },
                "StringLike": {"aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*"},
            },
        },
    ],
    "karpenter-eks-integration": [
        {
            "Sid": "AllowAPIServerEndpointDiscovery",
            "Effect": "Allow",
            "Resource": CLUSTER_ARN,
            "Action": "eks:DescribeCluster",
        }
    ],
    "karpenter-interruption": [
        {
            "Sid": "AllowInterruptionQueueActions",
            "Effect": "Allow",
            "Resource": QUEUE_ARN,
            "Action": ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"],
        }
    ],
    "karpenter-resource-discovery": [
        {
            "Sid": "AllowRegionalReadActions",
            "Effect": "Allow",
            "Resource": "*",
            "Action": [
                "ec2:DescribeCapacityReservations",
                "ec2:DescribeImages",
                "ec2:DescribeInstances",
                "ec2:DescribeInstanceStatus",
                "ec2:DescribeInstanceTypeOfferings",
                "ec2:DescribeInstanceTypes",
                "ec2:DescribeLaunchTemplates",
                "ec2:DescribePlacementGroups",
                "ec2:DescribeSecurityGroups",
                "ec2:DescribeSpotPriceHistory",
                "ec2:DescribeSubnets",
            ],
            "Condition": {"StringEquals": {"aws:RequestedRegion": "us-east-1"}},
        },
        {
            "Sid": "AllowSSMReadActions",
            "Effect": "Allow",
            "Resource": "arn:aws:ssm:us-east-1::parameter/aws/service/*",
            "Action": "ssm:GetParameter",
        },
        {
            "Sid": "AllowPricingReadActions",
            "Effect": "Allow",
            "Resource": "*",
            "Action": "pricing:GetProducts",
        },
        {
            "Sid": "AllowUnscopedInstanceProfileListAction",
            "Effect": "Allow",
            "Resource": "*",
            "Action": "iam:ListInstanceProfiles",
        },
        {
            "Sid": "AllowInstanceProfileReadActions",
            "Effect": "Allow",
            "Resource": PROFILES,
            "Action": "iam:GetInstanceProfile",
        },
    ],
}


@pytest.mark.parametrize("name", sorted(UPSTREAM_POLICIES))
def test_each_controller_policy_is_the_templates_statement_for_statement(
    plan: Plan, name: str
) -> None:
    assert policies(plan)[name] == {"Version": "2012-10-17", "Statement": UPSTREAM_POLICIES[name]}


def test_the_controller_has_only_the_templates_policies(plan: Plan) -> None:
    assert sorted(policies(plan)) == sorted(UPSTREAM_POLICIES)


def test_no_action_is_a_wildcard(plan: Plan) -> None:
    assert not [a for s in statements(plan) for a in actions(s) if "*" in a]


def test_what_any_resource_may_be_is_only_read(plan: Plan) -> None:
    unscoped = {a for s in statements(plan) if s["Resource"] == "*" for a in actions(s)}

    assert unscoped
    assert all(a.partition(":")[2].startswith(("Describe", "Get", "List")) for a in unscoped)


def test_the_controller_may_pass_the_node_role_and_no_other(plan: Plan) -> None:
    passes = [s for s in statements(plan) if "iam:PassRole" in actions(s)]

    assert [s["Resource"] for s in passes] == [NODE_ROLE_ARN]


# --- The node role -----------------------------------------------------------------------------


def test_the_node_role_trusts_ec2(plan: Plan) -> None:
    trust = json.loads(plan.named("karpenter-node-role", ROLE).inputs["assumeRolePolicy"])

    assert trust == {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "ec2.amazonaws.com"},
                "Action": "sts:AssumeRole",
            }
        ],
    }


def node_role_attachments(plan: Plan) -> list[PlannedResource]:
    (controller,) = plan.of_type(COMPONENT)
    return [r for r in plan.children_of(controller) if r.type == ATTACHMENT]


def attached_policies(plan: Plan) -> set[str]:
    return {r.inputs["policyArn"] for r in node_role_attachments(plan)}


def test_the_node_role_gets_what_a_node_needs_and_no_ssm_access(plan: Plan) -> None:
    # The VPC CNI's policy is on its own role (`cluster.vpcCniRole`), not on the nodes'.
    assert {r.inputs["role"] for r in node_role_attachments(plan)} == {
        "ml-karpenter-dev.karpenter-nodes"
    }
    assert attached_policies(plan) == {
        "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
        "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryPullOnly",
    }


def test_the_cni_policy_goes_on_the_node_role_only_when_asked(
    karpenter_config: Config, plan_for: PlanFor
) -> None:
    karpenter_config["gpu-platform:cluster"]["cniPolicyOnNodeRole"] = True

    assert "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy" in attached_policies(
        plan_for(karpenter_config)
    )


def test_the_node_role_joins_the_cluster_through_an_ec2_linux_access_entry(plan: Plan) -> None:
    entry = plan.named("karpenter-node-access-entry", ACCESS_ENTRY).inputs
    request = {
        "clusterName": entry["clusterName"],
        "principalArn": entry["principalArn"],
        "type": entry["type"],
    }
    documented = service_model("eks").operation_model("CreateAccessEntry").input_shape
    assert documented is not None

    assert request == {"clusterName": CLUSTER, "principalArn": NODE_ROLE_ARN, "type": "EC2_LINUX"}
    assert request_problems("eks", "CreateAccessEntry", request) == []
    # botocore's model: "If the principalArn is for an IAM role that's used for self-managed
    # Amazon EC2 nodes, specify EC2_LINUX or EC2_WINDOWS."
    assert "self-managed Amazon EC2 nodes, specify <code>EC2_LINUX</code>" in (
        documented.members["type"].documentation
    )


def test_each_node_class_launches_nodes_with_the_node_role(plan: Plan) -> None:
    assert [r.inputs["spec"]["role"] for r in plan.of_type(NODE_CLASS)] == [
        "ml-karpenter-dev.karpenter-nodes"
    ] * len(POOLS)


# --- Instead of node groups and the cluster autoscaler -----------------------------------------


def test_the_stack_has_no_node_group_and_no_cluster_autoscaler(plan: Plan) -> None:
    types = {r.type for r in plan.resources}
    releases = {r.inputs["chart"] for r in plan.of_type(RELEASE)}

    assert not types & {
        NODE_GROUP,
        "aws:ec2/launchTemplate:LaunchTemplate",
        "aws:autoscaling/tag:Tag",
        "gpu-platform:eks:GpuNodeGroup",
        "gpu-platform:eks:ClusterAutoscaler",
    }
    assert "cluster-autoscaler" not in releases


def test_each_pool_gets_one_node_pool_and_one_node_class(plan: Plan) -> None:
    def names(type_: str) -> Counter[str]:
        return Counter(r.inputs["metadata"]["name"] for r in plan.of_type(type_))

    assert names(NODE_POOL) == names(NODE_CLASS) == Counter(POOLS)
    assert [r.name for r in plan.of_type(POOL_COMPONENT)] == list(POOLS)


def test_node_pools_wait_for_the_controller_on_the_clusters_provider(plan: Plan) -> None:
    (provider,) = plan.of_type("pulumi:providers:kubernetes")
    controller = release(plan).urn

    for pool in plan.of_type(POOL_COMPONENT):
        assert controller in pool.dependencies
        for child in plan.children_of(pool):
            if child.type.startswith("kubernetes:"):
                assert str(child.provider).startswith(provider.urn + "::")


def test_the_controller_is_one_component_parenting_its_aws_side_and_releases(
    plan: Plan,
) -> None:
    (controller,) = plan.of_type(COMPONENT)
    children = Counter(r.type for r in plan.children_of(controller))

    assert children == {
        QUEUE: 1,
        QUEUE_POLICY: 1,
        RULE: 5,
        TARGET: 5,
        ROLE: 2,
        ATTACHMENT: 2,
        ACCESS_ENTRY: 1,
        POLICY: 5,
        ASSOCIATION: 1,
        RELEASE: 2,
    }


def test_every_regional_resource_goes_to_the_clusters_region(plan: Plan) -> None:
    (controller,) = plan.of_type(COMPONENT)
    regional = [
        r
        for r in plan.children_of(controller)
        if r.type.startswith("aws:") and r.type not in (ROLE, POLICY, ATTACHMENT)
    ]

    assert {r.inputs["region"] for r in regional} == {"us-east-1"}


def test_the_node_monitoring_agent_is_installed_as_with_node_groups(
    karpenter_config: Config, plan_for: PlanFor
) -> None:
    karpenter_config["gpu-platform:cluster"]["nodeMonitoringAgentVersion"] = "v1.7.0-eksbuild.1"

    (addon,) = plan_for(karpenter_config).of_type("aws:eks/addon:Addon")

    assert addon.inputs["addonName"] == "eks-node-monitoring-agent"


def test_a_namespace_of_its_own_is_where_the_releases_and_identity_go(
    karpenter_config: Config, plan_for: PlanFor
) -> None:
    karpenter_config["gpu-platform:karpenter"] = {"namespace": "karpenter"}

    plan = plan_for(karpenter_config)

    assert {r.inputs["namespace"] for r in plan.of_type(RELEASE) if "karpenter" in r.name} == {
        "karpenter"
    }
    assert plan.named("karpenter-pod-identity", ASSOCIATION).inputs["namespace"] == "karpenter"
    assert plan.outputs["helmReleaseNamespaces"] == ["gpu-operator", "karpenter"]


def test_protect_guards_both_releases_and_nothing_of_their_aws_side(
    karpenter_config: Config, plan_for: PlanFor
) -> None:
    karpenter_config["gpu-platform:protect"] = True

    plan = plan_for(karpenter_config)

    (controller,) = plan.of_type(COMPONENT)
    protected = {r.name for r in plan.children_of(controller) if r.protect}
    assert protected == {"karpenter-crd", "karpenter"}


# --- The AWS side as the APIs take it ---------------------------------------------------------


def test_the_interruption_queue_and_its_policy_are_requests_sqs_takes(plan: Plan) -> None:
    queue = plan.named("karpenter-interruption-queue", QUEUE).inputs
    policy = plan.of_type(QUEUE_POLICY)[0].inputs
    create = {
        "QueueName": queue["name"],
        "Attributes": {
            "MessageRetentionPeriod": str(int(queue["messageRetentionSeconds"])),
            "SqsManagedSseEnabled": str(queue["sqsManagedSseEnabled"]).lower(),
        },
    }

    assert request_problems("sqs", "CreateQueue", create) == []
    assert (
        request_problems(
            "sqs",
            "SetQueueAttributes",
            {"QueueUrl": policy["queueUrl"], "Attributes": {"Policy": policy["policy"]}},
        )
        == []
    )


def test_each_event_rule_and_target_is_a_request_eventbridge_takes(plan: Plan) -> None:
    targets = plan.of_type(TARGET)

    assert len(targets) == len(plan.of_type(RULE)) == 5
    for rule, target in zip(plan.of_type(RULE), targets, strict=True):
        put_rule = {
            "Name": target.inputs["rule"],
            "EventPattern": rule.inputs["eventPattern"],
            "Description": rule.inputs["description"],
        }
        put_targets = {
            "Rule": target.inputs["rule"],
            "Targets": [{"Id": target.inputs["targetId"], "Arn": target.inputs["arn"]}],
        }
        assert request_problems("events", "PutRule", put_rule) == []
        assert request_problems("events", "PutTargets", put_targets) == []


def test_the_roles_and_their_policies_are_requests_iam_takes(plan: Plan) -> None:
    for role in plan.of_type(ROLE):
        create = {
            "RoleName": role.name,
            "AssumeRolePolicyDocument": role.inputs["assumeRolePolicy"],
            "Description": role.inputs["description"],
        }
        assert request_problems("iam", "CreateRole", create) == []
    for policy in plan.of_type(POLICY):
        put = {
            "RoleName": policy.inputs["role"],
            "PolicyName": policy.name,
            "PolicyDocument": policy.inputs["policy"],
        }
        assert request_problems("iam", "PutRolePolicy", put) == []


def test_the_controllers_inline_policies_fit_iams_limit_for_the_longest_cluster_name(
    karpenter_config: Config,
) -> None:
    # IAM quotas: a role's inline policies together take at most 10,240 characters, whitespace
    # not counted. The policies name the cluster, whose name EKS allows up to 100 characters.
    karpenter_config["gpu-platform:cluster"]["name"] = "c" * 100
    plan = run_program(STACK, config=karpenter_config, project=PROJECT)
    sizes = Counter[str]()
    for policy in plan.of_type(POLICY):
        compact = json.dumps(json.loads(policy.inputs["policy"]), separators=(",", ":"))
        sizes[policy.inputs["role"]] += len(compact)

    assert sizes and max(sizes.values()) <= 10_240


# --- The stack's pools: which one a pod starts in, and EFA ---------------------------------------


def node_pool_specs(plan: Plan) -> dict[str, dict[str, Any]]:
    return {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in plan.of_type(NODE_POOL)}


def node_class_specs(plan: Plan) -> dict[str, dict[str, Any]]:
    return {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in plan.of_type(NODE_CLASS)}


def test_the_stacks_pools_are_weighted_block_reservation_on_demand_spot(plan: Plan) -> None:
    # Higher first, kubernetes-sigs/karpenter pkg/utils/nodepool/nodepool.go `OrderByWeight`.
    weights = {name: spec["weight"] for name, spec in node_pool_specs(plan).items()}

    assert weights == {"h100-block": 40, "l4-reserved": 30, "l4-on-demand": 20, "t4-spot": 10}


def test_prepaid_pools_keep_their_nodes_and_the_others_release_them(plan: Plan) -> None:
    after = {n: s["disruption"]["consolidateAfter"] for n, s in node_pool_specs(plan).items()}

    # l4-reserved falls back to on-demand, whose nodes would otherwise never go; the others
    # at karpenter.consolidateAfterMinutes' default of 9.
    assert after == {
        "h100-block": "Never",
        "l4-reserved": "9m",
        "t4-spot": "9m",
        "l4-on-demand": "9m",
    }


def test_the_capacity_block_pool_has_efa_on_all_32_cards_and_no_placement_group(
    plan: Plan,
) -> None:
    block = node_class_specs(plan)["h100-block"]
    (efa_group,) = [r for r in plan.of_type("aws:ec2/securityGroup:SecurityGroup")]

    assert block["networkInterfaces"][0] == {
        "networkCardIndex": 0,
        "deviceIndex": 0,
        "interfaceType": "interface",
    }
    assert [i["networkCardIndex"] for i in block["networkInterfaces"][1:]] == list(range(32))
    assert {i["interfaceType"] for i in block["networkInterfaces"][1:]} == {"efa-only"}
    assert efa_group.name == "h100-block-efa"
    assert len(block["securityGroupSelectorTerms"]) == 2
    assert "placementGroupSelector" not in block
    assert plan.of_type("aws:ec2/placementGroup:PlacementGroup") == []
    assert node_pool_specs(plan)["h100-block"]["limits"] == {
        "nvidia.com/gpu": "16",
        "cpu": "384",
        "nodes": "2",
    }


def test_an_on_demand_efa_pool_launches_into_its_placement_group(
    karpenter_config: Config, plan_for: PlanFor
) -> None:
    pools = karpenter_config["gpu-platform:pools"]
    block = next(p for p in pools if p["name"] == "h100-block")
    block["capacity"] = "on-demand"
    del block["aws"]["capacityReservationId"]

    plan = plan_for(karpenter_config)

    (placement,) = plan.of_type("aws:ec2/placementGroup:PlacementGroup")
    assert placement.inputs["strategy"] == "cluster"
    selector = node_class_specs(plan)["h100-block"]["placementGroupSelector"]
    assert selector == {"name": f"h100-block-placement-{selector['name'][-7:]}"}
    assert plan.of_type("gpu-platform:eks:EfaDevicePlugin")


def test_the_efa_device_plugin_is_installed_for_the_efa_pool(plan: Plan) -> None:
    assert len(plan.of_type("gpu-platform:eks:EfaDevicePlugin")) == 1


# --- An existing Karpenter (`karpenter.install: false`) ------------------------------------------

EXISTING_NODE_ROLE = "arn:aws:iam::123456789012:role/karpenter/KarpenterNodeRole-ml"


@pytest.fixture
def existing(karpenter_config: Config, plan_for: PlanFor) -> Plan:
    karpenter_config["gpu-platform:karpenter"] = {
        "install": False,
        "nodeRoleArn": EXISTING_NODE_ROLE,
    }
    return plan_for(karpenter_config)


def test_with_an_existing_karpenter_the_stack_installs_none_of_it(existing: Plan) -> None:
    types = {r.type for r in existing.resources}
    charts = {r.inputs["chart"] for r in existing.of_type(RELEASE)}

    assert not types & {COMPONENT, QUEUE, QUEUE_POLICY, RULE, TARGET, ACCESS_ENTRY}
    assert not any("karpenter" in chart for chart in charts)
    assert [r.inputs["serviceAccount"] for r in existing.of_type(ASSOCIATION)] == ["aws-node"]
    assert not any("karpenter" in r.name for r in existing.of_type(ROLE))
    assert existing.outputs["helmReleaseNamespaces"] == ["gpu-operator"]


def test_with_an_existing_karpenter_the_pools_launch_as_its_node_role(existing: Plan) -> None:
    # An EC2NodeClass names the role, from which Karpenter makes the instance profile.
    assert {s["role"] for s in node_class_specs(existing).values()} == {"KarpenterNodeRole-ml"}
    assert set(node_pool_specs(existing)) == set(POOLS)
