"""`KarpenterController`: Karpenter on EKS (`provisioner: karpenter`), the controller that
launches and removes the GPU pools' nodes, and what it needs on the AWS side.

The AWS side is upstream's own, from the getting-started CloudFormation template
(website/content/en/docs/getting-started/getting-started-with-karpenter/cloudformation.yaml in
aws/karpenter-provider-aws at v1.14.1, "the template" below): the interruption queue and the
EventBridge rules that feed it, the controller's IAM policies with the template's scoping
conditions, and the node role. Where the template differs from what the platform does, the code
says so: the controller's identity comes from EKS Pod Identity, the node role reaches the
cluster through an EKS access entry rather than the `aws-auth` ConfigMap, and what the
controller is never asked to do is not granted.

Children: the queue, its policy, five EventBridge rules and their targets, the node role with its
managed policies and access entry, the controller's role with its policies and Pod Identity
association, and two Helm releases from AWS's OCI registry: `karpenter-crd`, which owns the
CRDs, then `karpenter`.
"""

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import pulumi
from pulumi_aws import cloudwatch, eks, iam, sqs
from pulumi_kubernetes import helm

from gpu_platform.config import KarpenterSpec
from gpu_platform.eks.cluster import EksCluster
from gpu_platform.eks.iam_roles import cluster_tags, name_prefix
from gpu_platform.eks.karpenter.labels import NODE_POOL_LABEL, STACK_ANNOTATION, stack_mark
from gpu_platform.eks.node_group import node_role
from gpu_platform.eks.pod_identity import pod_identity
from gpu_platform.kubernetes import helm_release
from gpu_platform.node_identity import POOL_LABEL
from gpu_platform.versions import KARPENTER_CHART, KARPENTER_CONTROLLER_IMAGE, KARPENTER_CRD_CHART

SERVICE_ACCOUNT = "karpenter"
NODE_ROLE_PURPOSE = "karpenter-nodes"
"""The node role is `<prefix>.karpenter-nodes` (`gpu_platform.eks.iam_roles`)."""

# The template's queue: messages older than five minutes are of no use to the controller, and
# SQS encrypts them at rest with its own keys.
QUEUE_RETENTION_SECONDS = 300

# The template's EventBridge rules (ScheduledChangeRule, SpotInterruptionRule, RebalanceRule,
# InstanceStateChangeRule, CapacityReservationInterruptionRule): resource name suffix -> the
# event's source and detail-type. Each targets the interruption queue.
INTERRUPTION_EVENTS: Mapping[str, tuple[str, str]] = {
    "scheduled-change": ("aws.health", "AWS Health Event"),
    "spot-interruption": ("aws.ec2", "EC2 Spot Instance Interruption Warning"),
    "rebalance": ("aws.ec2", "EC2 Instance Rebalance Recommendation"),
    "instance-state-change": ("aws.ec2", "EC2 Instance State-change Notification"),
    "capacity-reservation-interruption": (
        "aws.ec2",
        "EC2 Capacity Reservation Instance Interruption Warning",
    ),
}
_QUEUE_TARGET_ID = "KarpenterInterruptionQueueTarget"

# The node role's EKS access entry: `EC2_LINUX` is the type for the role of self-managed Linux
# nodes, which Karpenter's are to EKS; EKS maps it to `system:node:{{EC2PrivateDNSName}}` in
# the `system:nodes` group, as the template's `aws-auth` mapping does (EKS user guide,
# grant-k8s-access.adoc; botocore's EKS model, CreateAccessEntry `type`).
ACCESS_ENTRY_TYPE = "EC2_LINUX"


@dataclass
class KarpenterControllerArgs:
    spec: KarpenterSpec
    cluster: EksCluster
    cni_policy_on_node_role: bool
    """Attach `AmazonEKS_CNI_Policy` to the node role (`cluster.cniPolicyOnNodeRole`)."""
    protect: bool = False
    """Protect the two releases from deletion and replacement. Uninstalling `karpenter-crd`
    deletes the CRDs, and with them every NodePool and NodeClaim: Karpenter would terminate
    every node it launched. Their AWS side changes or is replaced by ordinary updates."""
    waits_for: Sequence[pulumi.Resource] = ()
    """What must exist before the controller launches a node: the VPC CNI's identity."""


class KarpenterController(pulumi.ComponentResource):
    """Karpenter's CRDs and controller, its interruption queue and IAM, and the node role."""

    def __init__(
        self, name: str, args: KarpenterControllerArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__("gpu-platform:eks:Karpenter", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        cluster = args.cluster
        queue = sqs.Queue(
            f"{name}-interruption-queue",
            name=interruption_queue_name(cluster.name),
            message_retention_seconds=QUEUE_RETENTION_SECONDS,
            sqs_managed_sse_enabled=True,
            region=cluster.region,
            tags=cluster_tags(cluster),
            opts=child,
        )
        rules = [
            _interruption_rule(name, event, source, detail_type, cluster, child)
            for event, (source, detail_type) in INTERRUPTION_EVENTS.items()
        ]
        queue_policy = sqs.QueuePolicy(
            f"{name}-interruption-queue-policy",
            queue_url=queue.url,
            policy=pulumi.Output.all(queue.arn, *(rule.arn for rule in rules)).apply(
                lambda arns: json.dumps(interruption_queue_policy(arns[0], arns[1:]))
            ),
            region=cluster.region,
            opts=child,
        )
        targets = [
            cloudwatch.EventTarget(
                f"{rule_name}-target",
                rule=rule.name,
                arn=queue.arn,
                target_id=_QUEUE_TARGET_ID,
                region=cluster.region,
                opts=child,
            )
            for rule_name, rule in zip(
                (f"{name}-{event}" for event in INTERRUPTION_EVENTS), rules, strict=True
            )
        ]
        # The template's KarpenterNodeRole with the policies of the managed node groups' roles
        # (the EKS user guide's node IAM role, create-node-role.adoc). The template also
        # attaches `AmazonSSMManagedInstanceCore`, which no node needs to join the cluster or
        # pull images: it lets whoever may use SSM's Run Command or Session Manager on an
        # instance run commands as root on the GPU nodes.
        node_iam_role, attachments = node_role(
            f"{name}-node-role",
            purpose=NODE_ROLE_PURPOSE,
            attachment_prefix=f"{name}-node",
            description=f"Nodes Karpenter launches for the GPU pools of EKS cluster {cluster.name}",
            cluster=cluster,
            cni_policy_on_node_role=args.cni_policy_on_node_role,
            opts=child,
        )
        access_entry = eks.AccessEntry(
            f"{name}-node-access-entry",
            cluster_name=cluster.name_input,
            principal_arn=node_iam_role.arn,
            type=ACCESS_ENTRY_TYPE,
            region=cluster.region,
            tags=cluster_tags(cluster),
            opts=child,
        )
        identity = pod_identity(
            name,
            description=f"Karpenter controller of EKS cluster {cluster.name}",
            cluster=cluster,
            namespace=args.spec.namespace,
            service_account=SERVICE_ACCOUNT,
            opts=child,
        )
        documents = pulumi.Output.all(node_iam_role.arn, queue.arn).apply(
            lambda arns: controller_policies(cluster, arns[0], arns[1])
        )
        policies = [
            iam.RolePolicy(
                f"{name}-{policy}",
                role=identity.role.id,
                policy=documents.apply(partial(_policy_json, policy)),
                opts=child,
            )
            for policy in CONTROLLER_POLICIES
        ]
        self.crd_release = helm.v3.Release(
            f"{name}-crd",
            name=KARPENTER_CRD_CHART.name,
            chart=oci_chart(KARPENTER_CRD_CHART.repository, KARPENTER_CRD_CHART.name),
            version=args.spec.chart_version,
            namespace=args.spec.namespace,
            values=crd_values(stack_mark(pulumi.get_project(), pulumi.get_stack())),
            **helm_release.KARPENTER_CRD.release_args(),
            opts=pulumi.ResourceOptions(parent=self, protect=args.protect),
        )
        self.release = helm.v3.Release(
            name,
            name=KARPENTER_CHART.name,
            chart=oci_chart(KARPENTER_CHART.repository, KARPENTER_CHART.name),
            version=args.spec.chart_version,
            namespace=args.spec.namespace,
            # The CRDs are the `karpenter-crd` release's: Helm would install the chart's own
            # copy once and never upgrade it.
            skip_crds=True,
            values=karpenter_values(cluster, queue.name, args.spec.chart_version),
            **helm_release.KARPENTER.release_args(),
            # The controller starts with its credentials and its queue in place, and the nodes
            # it launches can join the cluster: the NodePools, which wait for this release, are
            # deleted before any of it on the way down.
            opts=pulumi.ResourceOptions(
                parent=self,
                protect=args.protect,
                depends_on=[
                    self.crd_release,
                    identity.association,
                    *policies,
                    queue_policy,
                    *targets,
                    access_entry,
                    *attachments,
                    *args.waits_for,
                ],
            ),
        )
        self.node_role_name: pulumi.Output[str] = node_iam_role.name
        self.register_outputs(
            {
                "release": self.release.name,
                "role_arn": identity.role.arn,
                "node_role_name": node_iam_role.name,
                "interruption_queue": queue.name,
            }
        )


def interruption_queue_name(cluster_name: str) -> str:
    """`<prefix>-karpenter`, the stack's name prefix (`gpu_platform.eks.iam_roles`), which the
    deploy policy limits its SQS actions to; well within SQS's 80 characters. The template names
    the queue after the cluster alone; the suffix keeps it apart from a queue a cluster set up
    by hand that way already has."""
    return f"{name_prefix(cluster_name)}-karpenter"


def interruption_rule_name(cluster_name: str, event: str) -> str:
    """`<prefix>.<event>`: under the stack's name prefix, which the deploy policy limits its
    EventBridge actions to, and within EventBridge's 64 characters."""
    return f"{name_prefix(cluster_name)}.{event}"


def interruption_queue_policy(queue_arn: str, rule_arns: Sequence[str]) -> dict[str, Any]:
    """The template's KarpenterInterruptionQueuePolicy, narrowed: only the stack's five
    EventBridge rules may send to the queue, and nothing reaches it without TLS.

    The template lets `events.amazonaws.com` and `sqs.amazonaws.com` send with no condition, so
    any rule anyone in any account creates could target the queue and forge Spot interruptions
    that drain GPU nodes. EventBridge sends on behalf of a rule with the rule's ARN as
    `aws:SourceArn` (EventBridge user guide, "Using resource-based policies for Amazon
    EventBridge", Amazon SQS permissions). SQS sends nothing to a queue itself unless it is a
    dead-letter or redrive target, which this queue is not, so `sqs.amazonaws.com` is left
    out."""
    return {
        "Version": "2012-10-17",
        "Id": "EC2InterruptionPolicy",
        "Statement": [
            {
                "Sid": "TheClustersInterruptionRules",
                "Effect": "Allow",
                "Principal": {"Service": "events.amazonaws.com"},
                "Action": "sqs:SendMessage",
                "Resource": queue_arn,
                "Condition": {"ArnEquals": {"aws:SourceArn": list(rule_arns)}},
            },
            {
                "Sid": "DenyHTTP",
                "Effect": "Deny",
                "Action": "sqs:*",
                "Resource": queue_arn,
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                "Principal": "*",
            },
        ],
    }


def interruption_event_pattern(source: str, detail_type: str) -> dict[str, list[str]]:
    return {"source": [source], "detail-type": [detail_type]}


def _interruption_rule(
    name: str,
    event: str,
    source: str,
    detail_type: str,
    cluster: EksCluster,
    child: pulumi.ResourceOptions,
) -> cloudwatch.EventRule:
    return cloudwatch.EventRule(
        f"{name}-{event}",
        name=interruption_rule_name(cluster.name, event),
        description=f"{detail_type} events for Karpenter of EKS cluster {cluster.name}",
        event_pattern=json.dumps(interruption_event_pattern(source, detail_type)),
        region=cluster.region,
        tags=cluster_tags(cluster),
        opts=child,
    )


CONTROLLER_POLICIES = (
    "node-lifecycle",
    "iam-integration",
    "eks-integration",
    "interruption",
    "resource-discovery",
)
"""The controller's inline policies, one per managed policy of the template. Its ZonalShiftPolicy
is left out: the controller calls ARC zonal shift only with `settings.enableZonalShift`
(pkg/operator/operator.go at v1.14.1), which the platform leaves off."""


def controller_policies(
    cluster: EksCluster, node_role_arn: str, queue_arn: str
) -> dict[str, dict[str, Any]]:
    """The template's controller policies, statement for statement, for this cluster, region,
    node role and queue."""
    partition, region, account, name = (
        cluster.partition,
        cluster.region,
        cluster.account_id,
        cluster.name,
    )
    ec2 = f"arn:{partition}:ec2:{region}"
    # What the controller creates, tags and deletes is in the cluster's account; the template's
    # `*` account is kept only for what a launch may use from another account: subnets,
    # security groups, capacity reservations and placement groups shared through AWS RAM.
    own = f"{ec2}:{account}"
    profiles = f"arn:{partition}:iam::{account}:instance-profile/*"
    cluster_arn = f"arn:{partition}:eks:{region}:{account}:cluster/{name}"
    owned = {f"kubernetes.io/cluster/{name}": "owned"}
    tagged_for_nodepool = {"StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"}}
    created_resources = [
        f"{own}:{kind}/*"
        for kind in (
            "fleet",
            "instance",
            "volume",
            "network-interface",
            "launch-template",
            "spot-instances-request",
        )
    ]
    request_tags = {
        **_tags("aws:RequestTag", owned),
        "aws:RequestTag/eks:eks-cluster-name": name,
    }
    profile_tags = {
        **_tags("aws:ResourceTag", owned),
        "aws:ResourceTag/topology.kubernetes.io/region": region,
    }
    return {
        "node-lifecycle": _policy(
            {
                "Sid": "AllowScopedEC2InstanceAccessActions",
                "Effect": "Allow",
                "Resource": [
                    f"{ec2}::image/*",
                    f"{ec2}::snapshot/*",
                    f"{ec2}:*:security-group/*",
                    f"{ec2}:*:subnet/*",
                    f"{ec2}:*:capacity-reservation/*",
                    f"{ec2}:*:placement-group/*",
                ],
                "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
            },
            {
                "Sid": "AllowScopedEC2LaunchTemplateAccessActions",
                "Effect": "Allow",
                "Resource": f"{own}:launch-template/*",
                "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
                "Condition": {
                    "StringEquals": _tags("aws:ResourceTag", owned),
                    **tagged_for_nodepool,
                },
            },
            {
                "Sid": "AllowScopedEC2InstanceActionsWithTags",
                "Effect": "Allow",
                "Resource": created_resources,
                "Action": ["ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate"],
                "Condition": {
                    "StringEquals": request_tags,
                    "StringLike": {"aws:RequestTag/karpenter.sh/nodepool": "*"},
                },
            },
            {
                "Sid": "AllowScopedResourceCreationTagging",
                "Effect": "Allow",
                "Resource": created_resources,
                "Action": "ec2:CreateTags",
                "Condition": {
                    "StringEquals": {
                        **request_tags,
                        "ec2:CreateAction": ["RunInstances", "CreateFleet", "CreateLaunchTemplate"],
                    },
                    "StringLike": {"aws:RequestTag/karpenter.sh/nodepool": "*"},
                },
            },
            {
                "Sid": "AllowScopedResourceTagging",
                "Effect": "Allow",
                "Resource": f"{own}:instance/*",
                "Action": "ec2:CreateTags",
                "Condition": {
                    "StringEquals": _tags("aws:ResourceTag", owned),
                    **tagged_for_nodepool,
                    "StringEqualsIfExists": {"aws:RequestTag/eks:eks-cluster-name": name},
                    "ForAllValues:StringEquals": {
                        "aws:TagKeys": ["eks:eks-cluster-name", "karpenter.sh/nodeclaim", "Name"]
                    },
                },
            },
            {
                "Sid": "AllowScopedDeletion",
                "Effect": "Allow",
                "Resource": [f"{own}:instance/*", f"{own}:launch-template/*"],
                "Action": ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"],
                "Condition": {
                    "StringEquals": _tags("aws:ResourceTag", owned),
                    **tagged_for_nodepool,
                },
            },
        ),
        "iam-integration": _policy(
            {
                "Sid": "AllowPassingInstanceRole",
                "Effect": "Allow",
                "Resource": node_role_arn,
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
                "Resource": profiles,
                "Action": ["iam:CreateInstanceProfile"],
                "Condition": {
                    "StringEquals": {
                        **request_tags,
                        "aws:RequestTag/topology.kubernetes.io/region": region,
                    },
                    "StringLike": {"aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*"},
                },
            },
            {
                "Sid": "AllowScopedInstanceProfileTagActions",
                "Effect": "Allow",
                "Resource": profiles,
                "Action": ["iam:TagInstanceProfile"],
                "Condition": {
                    "StringEquals": {
                        **profile_tags,
                        **request_tags,
                        "aws:RequestTag/topology.kubernetes.io/region": region,
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
                "Resource": profiles,
                "Action": [
                    "iam:AddRoleToInstanceProfile",
                    "iam:RemoveRoleFromInstanceProfile",
                    "iam:DeleteInstanceProfile",
                ],
                "Condition": {
                    "StringEquals": profile_tags,
                    "StringLike": {"aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*"},
                },
            },
        ),
        "eks-integration": _policy(
            {
                "Sid": "AllowAPIServerEndpointDiscovery",
                "Effect": "Allow",
                "Resource": cluster_arn,
                "Action": "eks:DescribeCluster",
            }
        ),
        "interruption": _policy(
            {
                "Sid": "AllowInterruptionQueueActions",
                "Effect": "Allow",
                "Resource": queue_arn,
                "Action": ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"],
            }
        ),
        "resource-discovery": _policy(
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
                "Condition": {"StringEquals": {"aws:RequestedRegion": region}},
            },
            {
                "Sid": "AllowSSMReadActions",
                "Effect": "Allow",
                "Resource": f"arn:{partition}:ssm:{region}::parameter/aws/service/*",
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
                "Resource": profiles,
                "Action": "iam:GetInstanceProfile",
            },
        ),
    }


def _policy_json(name: str, documents: Mapping[str, Mapping[str, Any]]) -> str:
    return json.dumps(documents[name])


def _policy(*statements: Mapping[str, Any]) -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": list(statements)}


def _tags(prefix: str, tags: Mapping[str, str]) -> dict[str, str]:
    """Condition keys on tags: `{"aws:ResourceTag/<key>": value}`."""
    return {f"{prefix}/{key}": value for key, value in tags.items()}


def oci_chart(repository: str, chart: str) -> str:
    """A chart in an OCI registry, as Helm (and `helm.v3.Release`) names it: `oci://.../chart`."""
    return f"{repository}/{chart}"


# Upstream's getting-started install (scripts/step08-apply-helm-chart.sh at v1.14.1) sets these;
# the chart hands the CPU request and the memory limit to the controller, which sizes its Go
# runtime by them (CPU_REQUESTS, MEMORY_LIMIT in templates/deployment.yaml).
CONTROLLER_RESOURCES = {
    "requests": {"cpu": "1", "memory": "1Gi"},
    "limits": {"cpu": "1", "memory": "1Gi"},
}


def crd_values(mark: str) -> dict[str, Any]:
    """The `karpenter-crd` chart's values: the stack's mark on every CRD, which preflight reads
    to tell the platform's CRDs from another installation's under the same release name."""
    return {"additionalAnnotations": {STACK_ANNOTATION: mark}}


def karpenter_values(
    cluster: EksCluster, queue_name: pulumi.Input[str], chart_version: str
) -> dict[str, Any]:
    """Chart values: this cluster and its queue, the Pod Identity service account, and the
    controller on the cluster's own nodes, by its digest at the pinned chart version."""
    image = KARPENTER_CONTROLLER_IMAGE
    pinned = (
        {"image": {"repository": image.repository, "tag": image.tag, "digest": image.digest}}
        if chart_version == KARPENTER_CHART.version
        else {}
    )
    return {
        "settings": {
            "clusterName": cluster.name,
            # Without it the controller handles no interruption (settings.interruptionQueue in
            # the chart's values.yaml).
            "interruptionQueue": queue_name,
            # Its role is not granted ARC zonal shift (CONTROLLER_POLICIES).
            "enableZonalShift": False,
        },
        "serviceAccount": {"name": SERVICE_ACCOUNT},
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": controller_node_selector_terms()
                }
            }
        },
        "controller": {"resources": CONTROLLER_RESOURCES, **pinned},
    }


def controller_node_selector_terms() -> Sequence[Mapping[str, Any]]:
    """Where the controller's pods may run: on no node Karpenter launched, the chart's default
    (values.yaml `affinity`: a controller on a node it may remove could remove itself), and on
    no GPU pool's node, whichever launched it. The chart tolerates no taint but
    `CriticalAddonsOnly`, so the GPU taint keeps it off GPU nodes as well; what remains are the
    cluster's own nodes. Helm replaces a list in values whole, so the default term is repeated.
    """
    return [
        {
            "matchExpressions": [
                {"key": NODE_POOL_LABEL, "operator": "DoesNotExist"},
                {"key": POOL_LABEL, "operator": "DoesNotExist"},
            ]
        }
    ]
