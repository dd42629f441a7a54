"""Karpenter's own AWS calls, replayed against the role the stack gives its controller: the
controller policy the stack attaches (`gpu_platform.eks.karpenter.controller`) within the
permissions boundary (docs/iam/eks-permissions-boundary.json). Every call Karpenter makes to
launch, tag and remove a node and its instance profile must be allowed, or Karpenter stops.

Each call is the one aws/karpenter-provider-aws v1.14.1 makes (file and line at that tag), with
the tags its code sends. Each request AWS authorizes for it carries only the condition keys the
Service Authorization Reference lists for that action and that resource type
(`tests.aws_service_reference.carries`): a launch's request tags are on what it creates, never on
the launch template, subnet or image it names. Where a call tags what it creates, AWS also
authorizes the tagging as its own action (EC2 user guide, "Grant permission to tag Amazon EC2
resources during creation": `ec2:CreateTags` with `ec2:CreateAction`; IAM user guide, "Tagging
IAM resources": creating a tagged instance profile needs `iam:TagInstanceProfile`).
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from gpu_platform.eks.cluster import EksCluster
from gpu_platform.eks.karpenter.controller import controller_policies
from tests.aws_service_reference import sent, takes_resource
from tests.iam_policy import Request, allowed
from tests.test_iam_documents import ACCOUNT, ADMIN, CLUSTER, ML_PROD_ROLE, VPC, boundary

REGION = "us-east-1"
EC2 = f"arn:aws:ec2:{REGION}:{ACCOUNT}"
NODE_ROLE = f"arn:aws:iam::{ACCOUNT}:role/{CLUSTER}.karpenter-nodes"
QUEUE = f"arn:aws:sqs:{REGION}:{ACCOUNT}:{CLUSTER}-karpenter"
NODE_CLASS = "a100"
# The instance profile Karpenter creates for an EC2NodeClass with `role`: under the path
# /karpenter/<region>/<cluster>/<nodeclass uid>/ (pkg/controllers/nodeclass/
# instanceprofile.go:84-91) and named `<cluster>_<hash>` (pkg/apis/v1/ec2nodeclass.go:616-618).
PROFILE = (
    f"arn:aws:iam::{ACCOUNT}:instance-profile/karpenter/{REGION}/{CLUSTER}/"
    f"5f1c0a3e-0000-4000-8000-000000000000/{CLUSTER}_1234567890"
)
LAUNCH_TEMPLATE = f"{EC2}:launch-template/lt-0123456789abcdef0"
INSTANCE = f"{EC2}:instance/i-0123456789abcdef0"
# The EC2NodeClass's `tags`: the platform's pool tags (`gpu_platform.eks.node_group.
# pool_resource_tags`), which Karpenter puts on everything it creates for the class.
NODE_CLASS_TAGS = {
    "Name": f"{CLUSTER}-{NODE_CLASS}",
    "gpu-platform.io/pool": NODE_CLASS,
    "gpu-platform.io/cluster": CLUSTER,
}
# pkg/apis/v1/ec2nodeclass.go:624-631 (InstanceProfileTags).
PROFILE_TAGS = NODE_CLASS_TAGS | {
    f"kubernetes.io/cluster/{CLUSTER}": "owned",
    "eks:eks-cluster-name": CLUSTER,
    "karpenter.k8s.aws/ec2nodeclass": NODE_CLASS,
    "topology.kubernetes.io/region": REGION,
}
# The stack tags the roles it creates and Karpenter's queue with their cluster.
NODE_ROLE_TAGS = {"gpu-platform.io/cluster": CLUSTER, "gpu-platform.io/vpc": VPC}
QUEUE_TAGS = {"gpu-platform.io/cluster": CLUSTER}


def launch_tags(nodepool: str) -> dict[str, str]:
    """pkg/utils/utils.go:100-123 (GetTags): the class's tags and four of Karpenter's, on the
    launch template, the fleet, the instances, volumes and network interfaces. The validation
    of an EC2NodeClass builds them from a NodeClaim with no labels
    (pkg/controllers/nodeclass/validation.go:157-164): its `karpenter.sh/nodepool` is empty."""
    return NODE_CLASS_TAGS | {
        f"kubernetes.io/cluster/{CLUSTER}": "owned",
        "karpenter.sh/nodepool": nodepool,
        "eks:eks-cluster-name": CLUSTER,
        "karpenter.k8s.aws/ec2nodeclass": NODE_CLASS,
    }


def asked(
    action: str,
    resource: str,
    *,
    resource_tags: Mapping[str, str] | None = None,
    request_tags: Mapping[str, str] | None = None,
    in_vpc: bool = False,
    keys: Mapping[str, str] | None = None,
) -> Request:
    """The request as AWS authorizes it: what holds of the resource and the call, cut to the
    condition keys the reference lists for the action and the resource's type."""
    facts: dict[str, Any] = {"aws:RequestedRegion": REGION, **ML_PROD_ROLE, **(keys or {})}
    if in_vpc:
        facts["ec2:Vpc"] = f"{EC2}:vpc/{VPC}"
    for key, value in (resource_tags or {}).items():
        facts[f"aws:ResourceTag/{key}"] = value
        if action == "iam:PassRole":
            facts[f"iam:ResourceTag/{key}"] = value
    if request_tags is not None:
        facts |= {f"aws:RequestTag/{key}": value for key, value in request_tags.items()}
        facts["aws:TagKeys"] = list(request_tags)
    return sent(action, resource, facts)


def tagged_at_creation(action: str, tags: Mapping[str, str], *resources: str) -> list[Request]:
    """The requests a creating call makes for what it creates and tags, and for the tagging."""
    made = []
    for resource in resources:
        made.append(asked(action, resource, request_tags=tags))
        if action.startswith("iam:"):
            # As upstream's policy has it: IAM's check sees the new profile with its tags.
            made.append(
                asked("iam:TagInstanceProfile", resource, resource_tags=tags, request_tags=tags)
            )
        else:
            created_by = {"ec2:CreateAction": action.removeprefix("ec2:")}
            made.append(asked("ec2:CreateTags", resource, request_tags=tags, keys=created_by))
    return made


def create_launch_template(nodepool: str) -> list[Request]:
    # pkg/providers/launchtemplate/launchtemplate.go:277-291 with the template's tags from
    # types.go:144-149.
    return tagged_at_creation(
        "ec2:CreateLaunchTemplate", launch_tags(nodepool), f"{EC2}:launch-template/lt-new"
    )


def launch(action: str, nodepool: str, creates: tuple[str, ...]) -> list[Request]:
    """A launch from one of Karpenter's launch templates into the cluster's subnet, with its
    security group and image, creating and tagging `creates`; and the node role passed to
    EC2 in the template's instance profile."""
    tags = launch_tags(nodepool)
    uses = [
        asked(action, LAUNCH_TEMPLATE, resource_tags=tags),
        asked(action, f"{EC2}:subnet/subnet-0123456789abcdef0", in_vpc=True),
        asked(action, f"arn:aws:ec2:{REGION}::image/ami-0123456789abcdef0"),
        asked("iam:PassRole", NODE_ROLE, resource_tags=NODE_ROLE_TAGS, keys=PASSED_TO_EC2),
    ]
    created = tagged_at_creation(action, tags, *(f"{EC2}:{kind}" for kind in creates))
    if action == "ec2:CreateFleet":
        return uses + created
    # The reference gives RunInstances, not CreateFleet, the security group and the network
    # interface: the one the instance gets, in the cluster's subnet, tagged as the template says.
    eni = f"{EC2}:network-interface/eni-new"
    return [
        *uses,
        asked(action, f"{EC2}:security-group/sg-0123456789abcdef0", in_vpc=True),
        *created,
        asked(action, eni, request_tags=tags, in_vpc=True),
        asked("ec2:CreateTags", eni, request_tags=tags, keys={"ec2:CreateAction": "RunInstances"}),
    ]


PASSED_TO_EC2 = {"iam:PassedToService": "ec2.amazonaws.com"}
FLEET_CREATES = ("fleet/fleet-new", "instance/i-new", "volume/vol-new")
# An EC2NodeClass's instance profile from an older Karpenter, named as LegacyInstanceProfileName
# gives it (pkg/apis/v1/ec2nodeclass.go:612-614) at the path `/`, and tagged as v1.0.0 tagged it
# already (v1.0.0 pkg/providers/instanceprofile/instanceprofile.go:63 with
# pkg/apis/v1/ec2nodeclass.go:469-475): the same tags as a profile of today's.
LEGACY_PROFILE = f"arn:aws:iam::{ACCOUNT}:instance-profile/{CLUSTER}_9876543210"


def delete_profile(profile: str, tags: Mapping[str, str]) -> list[Request]:
    """instanceprofile.go:188-214 (Delete): read the profile, take its role out, delete it."""
    return [
        asked(action, profile, resource_tags=tags)
        for action in (
            "iam:GetInstanceProfile",
            "iam:RemoveRoleFromInstanceProfile",
            "iam:DeleteInstanceProfile",
        )
    ]


def launch_with(resource: str) -> list[Request]:
    """What a launch from a template that names `resource` asks besides a plain launch's:
    CreateFleet for the fleet, and RunInstances for each instance (an instant fleet launches
    as its caller), each on `resource` where the reference lists its type for the action."""
    return [
        asked(action, resource)
        for action in ("ec2:CreateFleet", "ec2:RunInstances")
        if takes_resource(action, resource)
    ]


@dataclass(frozen=True)
class Call:
    """One of Karpenter's calls, where its code makes it, and the requests AWS authorizes."""

    name: str
    requests: list[Request]


CALLS = [
    # The EC2NodeClass's instance profile: created with its tags, given the node role (which
    # passes the role to EC2), read back (pkg/providers/instanceprofile/instanceprofile.go:
    # 95-143, 171-174).
    Call(
        "CreateInstanceProfile",
        tagged_at_creation("iam:CreateInstanceProfile", PROFILE_TAGS, PROFILE),
    ),
    Call(
        "AddRoleToInstanceProfile",
        [
            asked("iam:AddRoleToInstanceProfile", PROFILE, resource_tags=PROFILE_TAGS),
            asked("iam:PassRole", NODE_ROLE, resource_tags=NODE_ROLE_TAGS, keys=PASSED_TO_EC2),
            asked("iam:GetInstanceProfile", PROFILE, resource_tags=PROFILE_TAGS),
        ],
    ),
    # The class's validation: a launch template for one instance type, then dry runs of
    # CreateFleet and RunInstances from it (pkg/controllers/nodeclass/validation.go:241,
    # 275-283, 306-313), RunInstances tagging the instance, volume and network interface
    # (378-408). A dry run is authorized as the call itself is.
    Call("validation:CreateLaunchTemplate", create_launch_template("")),
    Call("validation:CreateFleet", launch("ec2:CreateFleet", "", FLEET_CREATES)),
    Call(
        "validation:RunInstances",
        launch("ec2:RunInstances", "", ("instance/i-new", "volume/vol-new")),
    ),
    # A node: its launch template (pkg/providers/instance/instance.go:468), then an instant
    # fleet tagging the fleet, instances and volumes (instance.go:375-391,
    # types.go:170-181). An instant fleet launches as its caller (EC2 user guide, "EC2 Fleet
    # prerequisites": only fleets of other types use EC2 Fleet's service-linked role), so each
    # instance is also a RunInstances of the caller's, whose network interface carries the
    # template's tags (launchtemplate/types.go:97-100).
    Call("CreateLaunchTemplate", create_launch_template("gpu")),
    Call(
        "CreateFleet",
        launch("ec2:CreateFleet", "gpu", FLEET_CREATES)
        + launch("ec2:RunInstances", "gpu", ("instance/i-new", "volume/vol-new")),
    ),
    # The node's name and NodeClaim on its instance; `Name` and `eks:eks-cluster-name` are left
    # out when the instance has them already, as the class's tags and GetTags give it
    # (pkg/controllers/nodeclaim/tagging/controller.go:105-127, instance.go:297-311).
    Call(
        "CreateTags",
        [
            asked(
                "ec2:CreateTags",
                INSTANCE,
                resource_tags=launch_tags("gpu"),
                request_tags={"karpenter.sh/nodeclaim": "gpu-x7k2p"},
            )
        ],
    ),
    Call(
        "TerminateInstances",  # instance.go:283
        [
            asked(
                "ec2:TerminateInstances",
                INSTANCE,
                resource_tags=launch_tags("gpu") | {"karpenter.sh/nodeclaim": "gpu-x7k2p"},
            )
        ],
    ),
    Call(
        "DeleteLaunchTemplate",  # launchtemplate.go:482, 525
        [asked("ec2:DeleteLaunchTemplate", LAUNCH_TEMPLATE, resource_tags=launch_tags("gpu"))],
    ),
    # A Spot node: the same instant fleet with `spot` as its capacity type
    # (instance.go:375-391); Karpenter tags no Spot request (types.go:170-181 tags the fleet,
    # instances and volumes). Upstream's policy lists `spot-instances-request` among what a
    # launch creates (cloudformation.yaml, AllowScopedEC2InstanceActionsWithTags), which the
    # reference's rows for CreateFleet and RunInstances do not: the request is made here as
    # that policy has it, carrying the launch's tags.
    Call(
        "CreateFleet:spot",
        launch("ec2:CreateFleet", "gpu", FLEET_CREATES)
        + launch("ec2:RunInstances", "gpu", ("instance/i-new", "volume/vol-new"))
        + [
            Request(
                "ec2:RunInstances",
                f"{EC2}:spot-instances-request/sir-new",
                {
                    **ML_PROD_ROLE,
                    **{f"aws:RequestTag/{k}": v for k, v in launch_tags("gpu").items()},
                }
                | {"aws:TagKeys": list(launch_tags("gpu"))},
            )
        ],
    ),
    # A reserved node: its launch template targets the Capacity Reservation
    # (launchtemplate/types.go:153-166); and one in a placement group, which the template
    # names (types.go:184-195).
    Call(
        "CreateFleet:capacity-reservation",
        launch_with(f"{EC2}:capacity-reservation/cr-0123456789abcdef0"),
    ),
    Call("CreateFleet:placement-group", launch_with(f"{EC2}:placement-group/pg-0123456789abcdef0")),
    # The EC2NodeClass's role changed: the profile's old role taken out before the new one is
    # added (instanceprofile.go:147-166, ensureRole).
    Call(
        "ensureRole:RemoveRoleFromInstanceProfile",
        [asked("iam:RemoveRoleFromInstanceProfile", PROFILE, resource_tags=PROFILE_TAGS)],
    ),
    # The EC2NodeClass deleted: its profiles listed under its path and deleted, then its
    # legacy profile (pkg/controllers/nodeclass/controller.go:175-202); the garbage collection
    # of profiles no class uses lists under the cluster's path and deletes the same way
    # (garbagecollection/controller.go:104-131). A failed deletion holds the class's finalizer,
    # or stops the collection.
    Call(
        "cleanupInstanceProfiles",
        [asked("iam:ListInstanceProfiles", "*"), *delete_profile(PROFILE, PROFILE_TAGS)],
    ),
    Call("cleanupLegacyInstanceProfile", delete_profile(LEGACY_PROFILE, PROFILE_TAGS)),
    Call(
        "interruption queue",  # pkg/providers/sqs/sqs.go:71, 101, 108
        [
            asked(action, QUEUE, resource_tags=QUEUE_TAGS)
            for action in ("sqs:GetQueueUrl", "sqs:ReceiveMessage", "sqs:DeleteMessage")
        ],
    ),
    Call(
        "discovery",  # cloudformation.yaml's KarpenterControllerResourceDiscoveryPolicy
        [
            *(
                asked(f"ec2:{read}", "*")
                for read in (
                    "DescribeCapacityReservations",
                    "DescribeImages",
                    "DescribeInstances",
                    "DescribeInstanceTypeOfferings",
                    "DescribeInstanceTypes",
                    "DescribeLaunchTemplates",
                    "DescribeSecurityGroups",
                    "DescribeSpotPriceHistory",
                    "DescribeSubnets",
                )
            ),
            asked(
                "ssm:GetParameter",
                f"arn:aws:ssm:{REGION}::parameter/aws/service/eks/optimized-ami/1.35/x",
            ),
            asked("pricing:GetProducts", "*"),
            asked("iam:ListInstanceProfiles", "*"),
            asked("eks:DescribeCluster", f"arn:aws:eks:{REGION}:{ACCOUNT}:cluster/{CLUSTER}"),
        ],
    ),
]


def controller_identity() -> list[dict[str, Any]]:
    cluster = EksCluster(
        name=CLUSTER,
        region=REGION,
        arn=f"arn:aws:eks:{REGION}:{ACCOUNT}:cluster/{CLUSTER}",
        endpoint="",
        certificate_authority="",
        version="1.35",
        status="ACTIVE",
        subnet_ids=(),
    )
    return list(controller_policies(cluster, NODE_ROLE, QUEUE).values())


@pytest.mark.parametrize("call", CALLS, ids=lambda c: c.name)
def test_karpenter_may_make_each_of_its_calls(call: Call) -> None:
    identity, bounds = controller_identity(), boundary()

    refused = [r for r in call.requests if not allowed(r, identity, bounds)]

    assert call.requests
    assert refused == [], [(r.action, r.resource, r.context) for r in refused]


def test_the_boundary_lets_an_instance_profile_be_created_tagged_however_iam_names_it() -> None:
    # Whether IAM's tagging check at creation sees the new profile's tags as its
    # `aws:ResourceTag` (upstream's policy allows iam:TagInstanceProfile only on a profile
    # tagged for the cluster) is not documented: the boundary allows it either way.
    untagged = asked("iam:TagInstanceProfile", PROFILE, request_tags=PROFILE_TAGS)

    assert "aws:ResourceTag/eks:eks-cluster-name" not in untagged.context
    assert allowed(untagged, [ADMIN], boundary())


@pytest.mark.parametrize("action", ["ec2:RunInstances", "ec2:CreateFleet"])
def test_the_use_of_karpenters_template_depends_on_no_tag_key_of_the_request(action: str) -> None:
    # Upstream keeps the template's use (AllowScopedEC2LaunchTemplateAccessActions) apart
    # from the retagging whose tag keys it limits (AllowScopedResourceTagging),
    # cloudformation.yaml at v1.14.1: were a request on the template ever to carry tag keys
    # (the reference lists them only on what a launch creates), its use would still turn on
    # the template's own tags alone.
    context = {
        **ML_PROD_ROLE,
        **{f"aws:ResourceTag/{key}": value for key, value in launch_tags("gpu").items()},
        "aws:RequestTag/team": "research",
        "aws:TagKeys": ["team"],
    }

    assert allowed(Request(action, LAUNCH_TEMPLATE, context), controller_identity(), boundary())
