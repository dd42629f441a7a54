"""Every condition of the EKS documents (docs/iam/eks-*.json) holds something: for each one, a
request that would move a role, a resource or a launch into another cluster or VPC (or past the
boundary) is denied as the documents stand, and allowed once that one condition is deleted.

Requests carry only the condition keys the IAM Service Authorization Reference lists for the
action and resource type (`tests.aws_service_reference.sent`; "Actions, resources, and condition
keys for Amazon EC2": `ec2:Vpc` on the subnet, security group and network interface of
RunInstances, on the subnet of CreateFleet, and on the network interface of CreateTags;
`aws:RequestTag/${TagKey}` and `aws:TagKeys` on what RunInstances, CreateFleet and
CreateLaunchTemplate create, never on the launch template a launch names; `ec2:CreateAction` on
CreateTags). Each request is
evaluated as the IAM User Guide's "Policy evaluation logic" does (tests/iam_policy.py): the deploy
policies for the deploy role, and AdministratorAccess within the boundary for a role the deploy
role creates, which may carry any policy.
"""

import copy
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.aws_service_reference import sent
from tests.iam_policy import Policy, Request, allowed, statements
from tests.test_iam_documents import (
    ACCOUNT,
    ADMIN,
    BOUNDARY_ARN,
    CLUSTER,
    DEPLOY_ROLE,
    IAM_DOCS,
    ML_PROD_ROLE,
    REGION,
    VPC,
)

BOUNDARY = "eks-permissions-boundary.json"
OTHER_CLUSTER = "ml-dev"
OTHER_VPC = "vpc-0database"
OTHER_REGION = "eu-west-1"


def _documents() -> dict[str, Policy]:
    return {p.name: json.loads(p.read_text()) for p in sorted(IAM_DOCS.glob("eks-*.json"))}


def evaluate(documents: dict[str, Policy], document: str, request: Request) -> bool:
    """Whether the request is allowed: by the deploy policies to the deploy role for a deploy
    document; for the boundary, by AdministratorAccess within it to a role the deploy role
    creates."""
    if document == BOUNDARY:
        principal = Request(request.action, request.resource, {**ML_PROD_ROLE, **request.context})
        return allowed(principal, [ADMIN], documents[BOUNDARY])
    deploy = [doc for name, doc in documents.items() if name.startswith("eks-deploy-")]
    return allowed(
        Request(request.action, request.resource, {**DEPLOY_ROLE, **request.context}), deploy
    )


def conditions(documents: dict[str, Policy]) -> Iterator[tuple[str, str, str, str]]:
    """(document, statement, operator, key) for every condition of every statement."""
    for name, document in documents.items():
        for statement in statements(document):
            for operator, block in statement.get("Condition", {}).items():
                for key in block:
                    yield name, statement["Sid"], operator, key


def without(
    documents: dict[str, Policy], document: str, sid: str, operator: str, key: str
) -> dict[str, Policy]:
    """The documents with one condition deleted."""
    changed = copy.deepcopy(documents)
    for statement in statements(changed[document]):
        if statement["Sid"] == sid:
            block = statement["Condition"][operator]
            del block[key]
            if not block:
                del statement["Condition"][operator]
    return changed


def arn(service: str, resource: str) -> str:
    region = "" if service == "iam" else REGION
    return f"arn:aws:{service}:{region}:{ACCOUNT}:{resource}"


def tags(kind: str, **values: str) -> dict[str, Any]:
    """Condition keys of tags (`cluster="x"` is `aws:RequestTag/gpu-platform.io/cluster`)."""
    names = {
        "cluster": "gpu-platform.io/cluster",
        "vpc": "gpu-platform.io/vpc",
        "region": "gpu-platform.io/region",
        "eks_cluster": "eks:eks-cluster-name",
        "nodepool": "karpenter.sh/nodepool",
        "nodeclass": "karpenter.k8s.aws/ec2nodeclass",
        "asg_cluster": "eks:cluster-name",
    }
    keyed = {names.get(k, k): v for k, v in values.items()}
    found = {f"aws:{kind}/{k}": v for k, v in keyed.items()}
    return found | ({"aws:TagKeys": list(keyed)} if kind == "RequestTag" else {})


def keys(*names: str) -> dict[str, Any]:
    return {"aws:TagKeys": list(names)}


def vpc(name: str) -> dict[str, str]:
    return {"ec2:Vpc": arn("ec2", f"vpc/{name}")}


@dataclass(frozen=True)
class Escalation:
    """A request one condition denies: `document`'s statement `sid`, `operator` on `key`."""

    document: str
    sid: str
    operator: str
    key: str
    request: Request

    @property
    def id(self) -> str:
        return f"{self.sid}:{self.key}"


def _e(document: str, sid: str, operator: str, key: str, *request: Any) -> Escalation:
    action, resource, context = request
    return Escalation(f"eks-{document}.json", sid, operator, key, sent(action, resource, context))


NODE_GROUP = arn("eks", f"nodegroup/{CLUSTER}/gpu/u")
OWN_ROLE = arn("iam", f"role/{CLUSTER}.karpenter")
QUEUE = arn("sqs", f"{CLUSTER}-karpenter")
RULE = arn("events", f"rule/{CLUSTER}.spot-interruption")
INSTANCE = arn("ec2", "instance/i-1")
ENI = arn("ec2", "network-interface/eni-1")
GROUP = arn("autoscaling", "autoScalingGroup:u:autoScalingGroupName/eks-gpu")
PROFILE = arn("iam", "instance-profile/ml_123")
TEMPLATE = arn("ec2", "launch-template/lt-1")
# Karpenter v1.14.1 creates an EC2NodeClass's instance profile under
# /karpenter/<region>/<cluster>/<nodeclass uid>/ (pkg/controllers/nodeclass/instanceprofile.go:
# 84-91): the path names the cluster.
OWN_PROFILE = arn("iam", f"instance-profile/karpenter/{REGION}/{CLUSTER}/u/{CLUSTER}_1")
BOUNDED = {"iam:PermissionsBoundary": BOUNDARY_ARN}
# What every launch of Karpenter's carries (karpenter-provider-aws v1.14.1 pkg/utils/utils.go
# GetTags), and what its own policy requires of it (cloudformation.yaml,
# AllowScopedEC2InstanceActionsWithTags).
LAUNCH = tags("RequestTag", eks_cluster=CLUSTER, nodepool="gpu")
KARPENTERS = tags("ResourceTag", eks_cluster=CLUSTER, nodepool="gpu")

ESCALATIONS = [
    # --- The deploy role: tags that would move what it manages into another cluster ---------
    _e(
        "deploy-cluster-policy",
        "CreateNodeGroupsPodIdentityAssociationsAndTheAddonInTheCluster",
        "StringEqualsIfExists",
        "aws:RequestTag/gpu-platform.io/cluster",
        "eks:CreateNodegroup",
        arn("eks", f"cluster/{CLUSTER}"),
        tags("RequestTag", cluster=OTHER_CLUSTER),
    ),
    _e(
        "deploy-cluster-policy",
        "TagWhatTheStackManagesInTheCluster",
        "StringEqualsIfExists",
        "aws:RequestTag/gpu-platform.io/cluster",
        "eks:TagResource",
        NODE_GROUP,
        tags("RequestTag", cluster=OTHER_CLUSTER),
    ),
    _e(
        "deploy-cluster-policy",
        "UntagWhatTheStackManagesInTheCluster",
        "ForAllValues:StringNotEquals",
        "aws:TagKeys",
        "eks:UntagResource",
        NODE_GROUP,
        keys("gpu-platform.io/cluster"),
    ),
    _e(
        "deploy-ec2-policy",
        "CreateLaunchTemplatesSecurityGroupsAndPlacementGroupsTaggedForTheCluster",
        "StringEquals",
        "aws:RequestTag/gpu-platform.io/cluster",
        "ec2:CreateLaunchTemplate",
        arn("ec2", "launch-template/x"),
        tags("RequestTag", cluster=OTHER_CLUSTER),
    ),
    # Another stack's launch template, tagged as this cluster's outside its creation: then the
    # deploy role could change its user data.
    _e(
        "deploy-ec2-policy",
        "TagWhatItCreates",
        "StringEquals",
        "ec2:CreateAction",
        "ec2:CreateTags",
        arn("ec2", "launch-template/lt-1"),
        tags("RequestTag", cluster=CLUSTER) | tags("ResourceTag", cluster=OTHER_CLUSTER),
    ),
    _e(
        "deploy-ec2-policy",
        "TagWhatItCreates",
        "StringEquals",
        "aws:RequestTag/gpu-platform.io/cluster",
        "ec2:CreateTags",
        arn("ec2", "launch-template/x"),
        {"ec2:CreateAction": "CreateLaunchTemplate"} | tags("RequestTag", cluster=OTHER_CLUSTER),
    ),
    _e(
        "deploy-ec2-policy",
        "TagWhatItCreates",
        "ForAllValues:StringNotLike",
        "aws:TagKeys",
        "ec2:CreateTags",
        arn("ec2", "security-group/x"),
        {"ec2:CreateAction": "CreateSecurityGroup"}
        | tags("RequestTag", cluster=CLUSTER, **{f"kubernetes.io/cluster/{OTHER_CLUSTER}": "1"}),
    ),
    _e(
        "deploy-ec2-policy",
        "ChangeOnlyTheClustersLaunchTemplatesSecurityGroupsAndPlacementGroups",
        "StringEquals",
        "aws:ResourceTag/gpu-platform.io/cluster",
        "ec2:ModifyLaunchTemplate",
        arn("ec2", "launch-template/lt-1"),
        tags("ResourceTag", cluster=OTHER_CLUSTER),
    ),
    _e(
        "deploy-ec2-policy",
        "RetagOnlyTheClustersLaunchTemplatesSecurityGroupsAndPlacementGroups",
        "StringEquals",
        "aws:ResourceTag/gpu-platform.io/cluster",
        "ec2:CreateTags",
        arn("ec2", "security-group/sg-1"),
        tags("ResourceTag", cluster=OTHER_CLUSTER) | tags("RequestTag", Name="web"),
    ),
    _e(
        "deploy-ec2-policy",
        "RetagOnlyTheClustersLaunchTemplatesSecurityGroupsAndPlacementGroups",
        "ForAllValues:StringNotLike",
        "aws:TagKeys",
        "ec2:CreateTags",
        arn("ec2", "security-group/sg-1"),
        tags("ResourceTag", cluster=CLUSTER)
        | tags("RequestTag", **{f"kubernetes.io/cluster/{OTHER_CLUSTER}": "owned"}),
    ),
    # IAM finds the tag key of `aws:RequestTag/<key>` whatever its case, but aws:TagKeys's
    # StringNotLike compares case-sensitively: a key spelled in other case passes the tag-key
    # condition, and only the request-tag condition stops it.
    _e(
        "deploy-ec2-policy",
        "RetagOnlyTheClustersLaunchTemplatesSecurityGroupsAndPlacementGroups",
        "StringEqualsIfExists",
        "aws:RequestTag/gpu-platform.io/cluster",
        "ec2:CreateTags",
        TEMPLATE,
        tags("ResourceTag", cluster=CLUSTER)
        | tags("RequestTag", **{"GPU-Platform.io/cluster": OTHER_CLUSTER}),
    ),
    _e(
        "deploy-ec2-policy",
        "TagOnlyTheClustersNodeGroupsForTheAutoscaler",
        "StringEquals",
        "aws:ResourceTag/eks:cluster-name",
        "autoscaling:CreateOrUpdateTags",
        GROUP,
        tags("ResourceTag", asg_cluster=OTHER_CLUSTER) | keys("k8s.io/cluster-autoscaler/enabled"),
    ),
    # EKS's own tag rewritten: the other cluster's roles could then resize the group.
    _e(
        "deploy-ec2-policy",
        "TagOnlyTheClustersNodeGroupsForTheAutoscaler",
        "ForAllValues:StringLike",
        "aws:TagKeys",
        "autoscaling:CreateOrUpdateTags",
        GROUP,
        tags("ResourceTag", asg_cluster=CLUSTER) | keys("eks:cluster-name"),
    ),
    _e(
        "deploy-ec2-policy",
        "ScheduleOnlyTheClustersNodeGroups",
        "StringEquals",
        "aws:ResourceTag/eks:cluster-name",
        "autoscaling:PutScheduledUpdateGroupAction",
        GROUP,
        tags("ResourceTag", asg_cluster=OTHER_CLUSTER),
    ),
    _e(
        "deploy-iam-policy",
        "CreateRolesOnlyUnderThePrefixAndWithinTheBoundary",
        "StringEquals",
        "iam:PermissionsBoundary",
        "iam:CreateRole",
        OWN_ROLE,
        {"iam:PermissionsBoundary": arn("iam", "policy/PowerUserAccess")}
        | tags("RequestTag", cluster=CLUSTER, vpc=VPC, region=REGION),
    ),
    _e(
        "deploy-iam-policy",
        "CreateRolesOnlyUnderThePrefixAndWithinTheBoundary",
        "StringEquals",
        "aws:RequestTag/gpu-platform.io/cluster",
        "iam:CreateRole",
        OWN_ROLE,
        BOUNDED | tags("RequestTag", cluster=OTHER_CLUSTER, vpc=VPC, region=REGION),
    ),
    _e(
        "deploy-iam-policy",
        "CreateRolesOnlyUnderThePrefixAndWithinTheBoundary",
        "StringEquals",
        "aws:RequestTag/gpu-platform.io/vpc",
        "iam:CreateRole",
        OWN_ROLE,
        BOUNDED | tags("RequestTag", cluster=CLUSTER, vpc=OTHER_VPC, region=REGION),
    ),
    # A role tagged with another region makes its profiles under another region's path, where
    # a cluster of the same name there keeps its own.
    _e(
        "deploy-iam-policy",
        "CreateRolesOnlyUnderThePrefixAndWithinTheBoundary",
        "StringEquals",
        "aws:RequestTag/gpu-platform.io/region",
        "iam:CreateRole",
        OWN_ROLE,
        BOUNDED | tags("RequestTag", cluster=CLUSTER, vpc=VPC, region=OTHER_REGION),
    ),
    # A role under the prefix made by hand, without the boundary.
    _e(
        "deploy-iam-policy",
        "ChangeOnlyTheStacksRolesWithinTheBoundary",
        "StringEquals",
        "iam:PermissionsBoundary",
        "iam:PutRolePolicy",
        arn("iam", f"role/{CLUSTER}.by-hand"),
        {},
    ),
    _e(
        "deploy-iam-policy",
        "AttachOnlyTheNodePolicies",
        "StringEquals",
        "iam:PermissionsBoundary",
        "iam:AttachRolePolicy",
        arn("iam", f"role/{CLUSTER}.by-hand"),
        {"iam:PolicyARN": "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy"},
    ),
    _e(
        "deploy-iam-policy",
        "AttachOnlyTheNodePolicies",
        "ArnEquals",
        "iam:PolicyARN",
        "iam:AttachRolePolicy",
        OWN_ROLE,
        BOUNDED | {"iam:PolicyARN": "arn:aws:iam::aws:policy/AdministratorAccess"},
    ),
    # The role's tags are what the boundary reads: retagged, the role would act in another
    # cluster or VPC.
    _e(
        "deploy-iam-policy",
        "TagTheStacksRolesButNeverMoveThemToAnotherCluster",
        "StringEqualsIfExists",
        "aws:RequestTag/gpu-platform.io/cluster",
        "iam:TagRole",
        OWN_ROLE,
        tags("RequestTag", cluster=OTHER_CLUSTER),
    ),
    _e(
        "deploy-iam-policy",
        "TagTheStacksRolesButNeverMoveThemToAnotherCluster",
        "StringEqualsIfExists",
        "aws:RequestTag/gpu-platform.io/vpc",
        "iam:TagRole",
        OWN_ROLE,
        tags("RequestTag", vpc=OTHER_VPC),
    ),
    _e(
        "deploy-iam-policy",
        "TagTheStacksRolesButNeverMoveThemToAnotherCluster",
        "StringEqualsIfExists",
        "aws:RequestTag/gpu-platform.io/region",
        "iam:TagRole",
        OWN_ROLE,
        tags("RequestTag", region=OTHER_REGION),
    ),
    _e(
        "deploy-iam-policy",
        "UntagTheStacksRolesButNeverOfTheirCluster",
        "ForAllValues:StringNotEquals",
        "aws:TagKeys",
        "iam:UntagRole",
        OWN_ROLE,
        keys("gpu-platform.io/vpc"),
    ),
    _e(
        "deploy-iam-policy",
        "PassTheNodeRolesToEksOnly",
        "StringEquals",
        "iam:PassedToService",
        "iam:PassRole",
        arn("iam", f"role/{CLUSTER}.pool-a100"),
        {"iam:PassedToService": "ec2.amazonaws.com"},
    ),
    _e(
        "deploy-iam-policy",
        "PassThePodIdentityRolesToEksPodIdentityOnly",
        "StringEquals",
        "iam:PassedToService",
        "iam:PassRole",
        OWN_ROLE,
        {"iam:PassedToService": "lambda.amazonaws.com"},
    ),
    _e(
        "deploy-iam-policy",
        "LetEksCreateItsNodeGroupRoleOnce",
        "StringEquals",
        "iam:AWSServiceName",
        "iam:CreateServiceLinkedRole",
        arn(
            "iam",
            "role/aws-service-role/eks-nodegroup.amazonaws.com/AWSServiceRoleForAmazonEKSNodegroup",
        ),
        {"iam:AWSServiceName": "elasticbeanstalk.amazonaws.com"},
    ),
    # A STANDARD entry can be given access policies: cluster-admin for whoever it names.
    _e(
        "deploy-karpenter-policy",
        "CreateOnlyTheKarpenterNodeRolesAccessEntry",
        "StringEquals",
        "eks:accessEntryType",
        "eks:CreateAccessEntry",
        arn("eks", f"cluster/{CLUSTER}"),
        {
            "eks:principalArn": arn("iam", f"role/{CLUSTER}.karpenter-nodes"),
            "eks:accessEntryType": "STANDARD",
        },
    ),
    _e(
        "deploy-karpenter-policy",
        "CreateOnlyTheKarpenterNodeRolesAccessEntry",
        "ArnEquals",
        "eks:principalArn",
        "eks:CreateAccessEntry",
        arn("eks", f"cluster/{CLUSTER}"),
        {"eks:principalArn": arn("iam", "role/admin"), "eks:accessEntryType": "EC2_LINUX"},
    ),
    # The queue retagged: the other cluster's Karpenter could read and delete its messages.
    _e(
        "deploy-karpenter-policy",
        "CreateAndTagKarpentersInterruptionQueue",
        "StringEqualsIfExists",
        "aws:RequestTag/gpu-platform.io/cluster",
        "sqs:TagQueue",
        QUEUE,
        tags("RequestTag", cluster=OTHER_CLUSTER),
    ),
    _e(
        "deploy-karpenter-policy",
        "UntagKarpentersInterruptionQueue",
        "ForAllValues:StringNotEquals",
        "aws:TagKeys",
        "sqs:UntagQueue",
        QUEUE,
        keys("gpu-platform.io/cluster"),
    ),
    _e(
        "deploy-karpenter-policy",
        "CreateAndTagKarpentersInterruptionRules",
        "StringEqualsIfExists",
        "aws:RequestTag/gpu-platform.io/cluster",
        "events:TagResource",
        RULE,
        tags("RequestTag", cluster=OTHER_CLUSTER),
    ),
    _e(
        "deploy-karpenter-policy",
        "UntagKarpentersInterruptionRules",
        "ForAllValues:StringNotEquals",
        "aws:TagKeys",
        "events:UntagResource",
        RULE,
        keys("gpu-platform.io/cluster"),
    ),
    _e(
        "deploy-karpenter-policy",
        "TargetOnlyTheInterruptionQueue",
        "ArnLike",
        "events:TargetArn",
        "events:PutTargets",
        RULE,
        {"events:TargetArn": arn("lambda", "function:x")},
    ),
    # --- A role the stack creates, whatever policy it carries: the boundary ------------------
    _e(
        "permissions-boundary",
        "EnisInVpc",
        "ArnLikeIfExists",
        "ec2:Vpc",
        "ec2:ModifyNetworkInterfaceAttribute",
        ENI,
        vpc(OTHER_VPC),
    ),
    _e(
        "permissions-boundary",
        "TagEnis",
        "ForAllValues:StringNotLike",
        "aws:TagKeys",
        "ec2:CreateTags",
        ENI,
        vpc(VPC) | tags("RequestTag", nodepool="gpu"),
    ),
    _e(
        "permissions-boundary",
        "TagEnis",
        "ArnLikeIfExists",
        "ec2:Vpc",
        "ec2:CreateTags",
        ENI,
        vpc(OTHER_VPC) | tags("RequestTag", Name="x"),
    ),
    _e(
        "permissions-boundary",
        "ScaleAsgs",
        "StringEquals",
        "aws:ResourceTag/eks:cluster-name",
        "autoscaling:SetDesiredCapacity",
        GROUP,
        tags("ResourceTag", asg_cluster=OTHER_CLUSTER),
    ),
    # A launch into another VPC's subnet, even tagged as the cluster's.
    _e(
        "permissions-boundary",
        "LaunchInVpc",
        "ArnLike",
        "ec2:Vpc",
        "ec2:RunInstances",
        arn("ec2", "subnet/subnet-1"),
        vpc(OTHER_VPC) | LAUNCH,
    ),
    _e(
        "permissions-boundary",
        "LaunchTagged",
        "StringEquals",
        "aws:RequestTag/eks:eks-cluster-name",
        "ec2:CreateFleet",
        INSTANCE,
        tags("RequestTag", eks_cluster=OTHER_CLUSTER, nodepool="gpu"),
    ),
    _e(
        "permissions-boundary",
        "LaunchTagged",
        "StringLike",
        "aws:RequestTag/karpenter.sh/nodepool",
        "ec2:RunInstances",
        INSTANCE,
        tags("RequestTag", eks_cluster=CLUSTER),
    ),
    _e(
        "permissions-boundary",
        "TagAtLaunch",
        "StringEquals",
        "aws:RequestTag/eks:eks-cluster-name",
        "ec2:CreateTags",
        INSTANCE,
        {"ec2:CreateAction": "RunInstances"}
        | tags("RequestTag", eks_cluster=OTHER_CLUSTER, nodepool="gpu"),
    ),
    _e(
        "permissions-boundary",
        "TagAtLaunch",
        "StringLike",
        "aws:RequestTag/karpenter.sh/nodepool",
        "ec2:CreateTags",
        INSTANCE,
        {"ec2:CreateAction": "RunInstances"} | tags("RequestTag", eks_cluster=CLUSTER),
    ),
    # Another cluster's instance retagged as this cluster's Karpenter's, outside a launch: the
    # role could then terminate it.
    _e(
        "permissions-boundary",
        "TagAtLaunch",
        "StringEquals",
        "ec2:CreateAction",
        "ec2:CreateTags",
        INSTANCE,
        tags("ResourceTag", eks_cluster=OTHER_CLUSTER, nodepool="gpu") | LAUNCH,
    ),
    # Another cluster's node, or a node of this cluster that Karpenter did not launch.
    _e(
        "permissions-boundary",
        "KarpentersOwn",
        "StringEquals",
        "aws:ResourceTag/eks:eks-cluster-name",
        "ec2:TerminateInstances",
        INSTANCE,
        tags("ResourceTag", eks_cluster=OTHER_CLUSTER, nodepool="gpu"),
    ),
    _e(
        "permissions-boundary",
        "KarpentersOwn",
        "StringLike",
        "aws:ResourceTag/karpenter.sh/nodepool",
        "ec2:TerminateInstances",
        INSTANCE,
        tags("ResourceTag", eks_cluster=CLUSTER),
    ),
    # Another cluster's launch template, whose user data joins nodes to that cluster.
    _e(
        "permissions-boundary",
        "KarpentersOwn",
        "StringEquals",
        "aws:ResourceTag/eks:eks-cluster-name",
        "ec2:CreateFleet",
        TEMPLATE,
        tags("ResourceTag", eks_cluster=OTHER_CLUSTER, nodepool="gpu"),
    ),
    # Another cluster's node retagged, or one of this cluster's that Karpenter did not launch.
    _e(
        "permissions-boundary",
        "RetagKarpenters",
        "StringEquals",
        "aws:ResourceTag/eks:eks-cluster-name",
        "ec2:CreateTags",
        INSTANCE,
        tags("ResourceTag", eks_cluster=OTHER_CLUSTER, nodepool="gpu")
        | tags("RequestTag", **{"karpenter.sh/nodeclaim": "gpu-x"}),
    ),
    _e(
        "permissions-boundary",
        "RetagKarpenters",
        "StringLike",
        "aws:ResourceTag/karpenter.sh/nodepool",
        "ec2:CreateTags",
        INSTANCE,
        tags("ResourceTag", eks_cluster=CLUSTER)
        | tags("RequestTag", **{"karpenter.sh/nodeclaim": "gpu-x"}),
    ),
    _e(
        "permissions-boundary",
        "RetagKarpenters",
        "StringEqualsIfExists",
        "aws:RequestTag/eks:eks-cluster-name",
        "ec2:CreateTags",
        INSTANCE,
        KARPENTERS | tags("RequestTag", eks_cluster=OTHER_CLUSTER),
    ),
    _e(
        "permissions-boundary",
        "RetagKarpenters",
        "ForAllValues:StringEquals",
        "aws:TagKeys",
        "ec2:CreateTags",
        INSTANCE,
        KARPENTERS | tags("RequestTag", **{f"kubernetes.io/cluster/{OTHER_CLUSTER}": "owned"}),
    ),
    _e(
        "permissions-boundary",
        "PassNodeRole",
        "StringEquals",
        "iam:PassedToService",
        "iam:PassRole",
        arn("iam", f"role/{CLUSTER}.karpenter-nodes"),
        {"iam:PassedToService": "lambda.amazonaws.com"}
        | {"iam:ResourceTag/gpu-platform.io/cluster": CLUSTER},
    ),
    _e(
        "permissions-boundary",
        "PassNodeRole",
        "StringEquals",
        "iam:ResourceTag/gpu-platform.io/cluster",
        "iam:PassRole",
        arn("iam", f"role/{OTHER_CLUSTER}.karpenter-nodes"),
        {
            "iam:PassedToService": "ec2.amazonaws.com",
            "iam:ResourceTag/gpu-platform.io/cluster": OTHER_CLUSTER,
        },
    ),
    _e(
        "permissions-boundary",
        "CreateProfiles",
        "StringLike",
        "aws:RequestTag/karpenter.k8s.aws/ec2nodeclass",
        "iam:CreateInstanceProfile",
        OWN_PROFILE,
        tags("RequestTag", eks_cluster=CLUSTER),
    ),
    _e(
        "permissions-boundary",
        "CreateProfiles",
        "StringEquals",
        "aws:RequestTag/eks:eks-cluster-name",
        "iam:TagInstanceProfile",
        OWN_PROFILE,
        tags("RequestTag", eks_cluster=OTHER_CLUSTER, nodeclass="gpu"),
    ),
    _e(
        "permissions-boundary",
        "ManageProfiles",
        "StringLike",
        "aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass",
        "iam:DeleteInstanceProfile",
        PROFILE,
        tags("ResourceTag", eks_cluster=CLUSTER),
    ),
    _e(
        "permissions-boundary",
        "ManageProfiles",
        "StringEquals",
        "aws:ResourceTag/eks:eks-cluster-name",
        "iam:AddRoleToInstanceProfile",
        PROFILE,
        tags("ResourceTag", eks_cluster=OTHER_CLUSTER, nodeclass="gpu"),
    ),
    _e(
        "permissions-boundary",
        "ReadQueue",
        "StringEquals",
        "aws:ResourceTag/gpu-platform.io/cluster",
        "sqs:ReceiveMessage",
        arn("sqs", f"{OTHER_CLUSTER}-karpenter"),
        tags("ResourceTag", cluster=OTHER_CLUSTER),
    ),
]


def _new_profile(action: str, path: str) -> tuple[str, Request]:
    """A role of this cluster creating or tagging the instance profile `path` tagged as its
    cluster's Karpenter tags one."""
    return BOUNDARY, sent(
        action,
        arn("iam", f"instance-profile/{path}"),
        tags("RequestTag", eks_cluster=CLUSTER, nodeclass="gpu"),
    )


def test_every_condition_of_the_documents_has_an_escalation_it_denies() -> None:
    covered = {(e.document, e.sid, e.operator, e.key) for e in ESCALATIONS}

    assert sorted(covered) == sorted(conditions(_documents()))


@pytest.mark.parametrize("escalation", ESCALATIONS, ids=lambda e: e.id)
def test_each_condition_is_what_denies_its_escalation(escalation: Escalation) -> None:
    documents = _documents()
    mutated = without(
        documents, escalation.document, escalation.sid, escalation.operator, escalation.key
    )

    assert not evaluate(documents, escalation.document, escalation.request)
    assert evaluate(mutated, escalation.document, escalation.request)


@pytest.mark.parametrize(
    ("document", "request_"),
    [
        # Another VPC's existing network interface or security group on a launch tagged as the
        # cluster's (CreateFleet's launches are authorized as RunInstances for these).
        (BOUNDARY, sent("ec2:RunInstances", ENI, vpc(OTHER_VPC) | LAUNCH)),
        (
            BOUNDARY,
            sent("ec2:RunInstances", arn("ec2", "security-group/sg-1"), vpc(OTHER_VPC) | LAUNCH),
        ),
        # A launch template that is not Karpenter's, even of the cluster: its user data is not
        # Karpenter's.
        (BOUNDARY, sent("ec2:CreateFleet", TEMPLATE, tags("ResourceTag", eks_cluster=CLUSTER))),
        # A launch template tagged at its creation only: a launch's request tags are on what it
        # creates, never on the template it names.
        (BOUNDARY, sent("ec2:RunInstances", TEMPLATE, LAUNCH)),
        # Another cluster's instance profile tagged as this cluster's, or one of no cluster's:
        # its role and instances would change hands.
        (
            BOUNDARY,
            sent(
                "iam:TagInstanceProfile",
                PROFILE,
                tags("ResourceTag", eks_cluster=OTHER_CLUSTER, nodeclass="gpu")
                | tags("RequestTag", eks_cluster=CLUSTER, nodeclass="gpu"),
            ),
        ),
        _new_profile("iam:TagInstanceProfile", f"karpenter/{REGION}/{OTHER_CLUSTER}/u/x"),
        # IAM's `*` matches `/` as well: a path that fixed only the cluster's name would let
        # this cluster's role nest a profile under another cluster's path, which that
        # cluster's Karpenter lists and fails on (karpenter-provider-aws v1.14.1:
        # pkg/controllers/nodeclass/garbagecollection/controller.go:115-131 returns on its
        # first failed deletion; pkg/controllers/nodeclass/controller.go:175-189 keeps the
        # EC2NodeClass's finalizer while one fails).
        _new_profile(
            "iam:CreateInstanceProfile", f"karpenter/{REGION}/{OTHER_CLUSTER}/{CLUSTER}/x"
        ),
        _new_profile("iam:CreateInstanceProfile", f"karpenter/{OTHER_REGION}/{CLUSTER}/u/x"),
        _new_profile("iam:CreateInstanceProfile", f"{CLUSTER}_1"),
        # The cluster itself is not the stack's to tag (the deploy policies name no cluster ARN
        # in a tagging statement).
        (
            "eks-deploy-cluster-policy.json",
            sent(
                "eks:TagResource",
                arn("eks", f"cluster/{CLUSTER}"),
                tags("RequestTag", cluster=OTHER_CLUSTER),
            ),
        ),
    ],
    ids=[
        "launch-with-another-vpcs-interface",
        "launch-with-another-vpcs-group",
        "launch-from-a-template-not-karpenters",
        "launch-from-a-template-by-request-tags",
        "profile-into-this-cluster",
        "profile-at-another-clusters-path",
        "profile-nested-under-another-clusters-path",
        "profile-at-another-regions-path",
        "profile-outside-the-clusters-path",
        "tag-cluster",
    ],
)
def test_what_no_document_allows_whatever_the_tags(document: str, request_: Request) -> None:
    assert not evaluate(_documents(), document, request_)


# --- Each value of a condition that lists what it refuses ---------------------------------


def listed_values(documents: dict[str, Policy]) -> Iterator[tuple[str, str, str, str, str]]:
    """(document, statement, operator, key, value) for each value of a condition that lists
    several. Deleting a value of a negated operator (`StringNotLike`, ...) widens what the
    statement allows; deleting one of any other operator only narrows it, and what needs those
    values is tested where they are used: the boundary's `ec2:CreateAction` values and
    `karpenter.sh/nodeclaim` by Karpenter's calls (tests/test_karpenter_iam.py; `Name` and
    `eks:eks-cluster-name` Karpenter adds only to an instance without them, which the
    platform's EC2NodeClass tags never launch, and are kept as upstream's policy has them),
    the deploy policies' by the requests of each stack's plan (tests/test_iam_documents.py)."""
    for name, document in documents.items():
        for statement in statements(document):
            for operator, block in statement.get("Condition", {}).items():
                for key, values in block.items():
                    if isinstance(values, list) and len(values) > 1:
                        for value in values:
                            yield name, statement["Sid"], operator, key, value


def _negated(operator: str) -> bool:
    return "Not" in operator.rpartition(":")[2]


def without_value(
    documents: dict[str, Policy], document: str, sid: str, operator: str, key: str, value: str
) -> dict[str, Policy]:
    changed = copy.deepcopy(documents)
    for statement in statements(changed[document]):
        if statement["Sid"] == sid:
            statement["Condition"][operator][key].remove(value)
    return changed


DEPLOY_TAGS_AT_CREATION = {"ec2:CreateAction": "CreateSecurityGroup"} | tags(
    "RequestTag", cluster=CLUSTER
)


def _at_creation(key: str) -> Request:
    """The deploy role creating a security group tagged for its cluster and with `key`."""
    context = DEPLOY_TAGS_AT_CREATION | tags("RequestTag", cluster=CLUSTER, **{key: "1"})
    return sent("ec2:CreateTags", arn("ec2", "security-group/x"), context)


def _retag(key: str) -> Request:
    """The deploy role retagging its cluster's security group with `key`."""
    context = tags("ResourceTag", cluster=CLUSTER) | tags("RequestTag", **{key: "1"})
    return sent("ec2:CreateTags", arn("ec2", "security-group/sg-1"), context)


def _tag_eni(key: str) -> Request:
    return sent("ec2:CreateTags", ENI, vpc(VPC) | tags("RequestTag", **{key: "1"}))


# Tag keys another cluster's controllers read (the AWS load balancer controller and cloud
# provider `kubernetes.io/cluster/<name>`, the cluster autoscaler
# `k8s.io/cluster-autoscaler/<name>`, Karpenter `karpenter.sh/` and `karpenter.k8s.aws/`, EKS
# and Karpenter `eks:`): each pattern a statement refuses, and a key it matches.
CONTROLLER_KEYS = (
    ("kubernetes.io/cluster/*", f"kubernetes.io/cluster/{OTHER_CLUSTER}"),
    ("k8s.io/cluster-autoscaler/*", f"k8s.io/cluster-autoscaler/{OTHER_CLUSTER}"),
    ("karpenter.sh/*", "karpenter.sh/nodepool"),
    ("karpenter.k8s.aws/*", "karpenter.k8s.aws/ec2nodeclass"),
    ("eks:*", "eks:eks-cluster-name"),
)
# Each value of a negated list, with a request only that value refuses: one of those keys, or
# the tag the role's boundary reads.
VALUE_ESCALATIONS = (
    {
        ("eks-deploy-ec2-policy.json", "TagWhatItCreates", value): _at_creation(key)
        for value, key in CONTROLLER_KEYS
    }
    | {
        (
            "eks-deploy-ec2-policy.json",
            "RetagOnlyTheClustersLaunchTemplatesSecurityGroupsAndPlacementGroups",
            value,
        ): _retag(key)
        for value, key in CONTROLLER_KEYS
    }
    | {
        ("eks-deploy-iam-policy.json", "UntagTheStacksRolesButNeverOfTheirCluster", tag): sent(
            "iam:UntagRole", OWN_ROLE, keys(tag)
        )
        for tag in ("gpu-platform.io/cluster", "gpu-platform.io/vpc", "gpu-platform.io/region")
    }
    | {
        (BOUNDARY, "TagEnis", value): _tag_eni(key)
        for value, key in CONTROLLER_KEYS
        if value != "eks:*"
    }
)
# Values no request needs: the request-tag condition beside it already refuses any other
# value of `gpu-platform.io/cluster`, in any case; the key is listed so that the statement
# reads as what it refuses.
REDUNDANT_VALUES = {
    (
        "eks-deploy-ec2-policy.json",
        "RetagOnlyTheClustersLaunchTemplatesSecurityGroupsAndPlacementGroups",
        "gpu-platform.io/cluster",
    )
}


def test_every_value_of_a_negated_list_has_an_escalation_it_denies() -> None:
    negated = {
        (document, sid, value)
        for document, sid, operator, _, value in listed_values(_documents())
        if _negated(operator)
    }

    assert sorted(set(VALUE_ESCALATIONS) | REDUNDANT_VALUES) == sorted(negated)


@pytest.mark.parametrize(
    ("where", "request_"),
    [pytest.param(w, r, id=f"{w[1]}:{w[2]}") for w, r in VALUE_ESCALATIONS.items()],
)
def test_each_value_is_what_denies_its_escalation(
    where: tuple[str, str, str], request_: Request
) -> None:
    documents = _documents()
    document, sid, value = where
    ((operator, key),) = {
        (o, k) for d, s, o, k, v in listed_values(documents) if (d, s, v) == where
    }

    assert not evaluate(documents, document, request_)
    assert evaluate(
        without_value(documents, document, sid, operator, key, value), document, request_
    )
