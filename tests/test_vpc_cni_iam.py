"""The VPC CNI's own AWS calls, replayed against the role the stack gives it
(`gpu_platform.eks.vpc_cni`: `AmazonEKS_CNI_Policy`) within the permissions boundary
(docs/iam/eks-permissions-boundary.json). Every call the CNI makes to give a node's pods
addresses must be allowed, or new pods get none.

Each call is the one aws/amazon-vpc-cni-k8s v1.21.1 (the `vpc-cni` add-on the platform pins,
gpu_platform/eks/new_cluster/addon_versions.json) makes, in pkg/awsutils/awsutils.go at that
tag, with the tags its code sends. Requests carry the condition keys the Service Authorization
Reference lists for the action and resource type (`tests.test_karpenter_iam.asked`); an
interface being created has no VPC of its own yet (the subnet and security groups it is created
with have one), so neither its creation nor the tagging of it at creation carries `ec2:Vpc`.
"""

import pytest

from tests.aws_managed_policies import MANAGED_POLICIES
from tests.iam_policy import Request, allowed
from tests.test_iam_documents import CLUSTER, boundary
from tests.test_karpenter_iam import EC2, asked

INSTANCE_ID = "i-0123456789abcdef0"
INSTANCE = f"{EC2}:instance/{INSTANCE_ID}"
SUBNET = f"{EC2}:subnet/subnet-0123456789abcdef0"
SECURITY_GROUP = f"{EC2}:security-group/sg-0123456789abcdef0"
NEW_ENI = f"{EC2}:network-interface/eni-new"
ENI = f"{EC2}:network-interface/eni-0123456789abcdef0"
# buildENITags (awsutils.go:1111-1126): the node's instance, and with a cluster name the
# cluster and the CNI as owner (the constants at awsutils.go:67-71).
ENI_TAGS = {
    "node.k8s.amazonaws.com/instance_id": INSTANCE_ID,
    "cluster.k8s.amazonaws.com/name": CLUSTER,
    "eks:eni:owner": "amazon-vpc-cni",
}
CREATED_AT = {"node.k8s.amazonaws.com/createdAt": "2026-01-01T00:00:00Z"}


def create_eni() -> list[Request]:
    """createENI (awsutils.go:973-1037): CreateNetworkInterface in the node's subnet with its
    security groups and the tags of createENITags (932-946) as TagSpecifications (948-956,
    1096), which EC2 also authorizes as CreateTags with `ec2:CreateAction` (EC2 user guide,
    "Grant permission to tag Amazon EC2 resources during creation")."""
    tags = ENI_TAGS | CREATED_AT
    return [
        asked("ec2:CreateNetworkInterface", SUBNET, in_vpc=True),
        asked("ec2:CreateNetworkInterface", SECURITY_GROUP, in_vpc=True),
        asked("ec2:CreateNetworkInterface", NEW_ENI, request_tags=tags),
        asked(
            "ec2:CreateTags",
            NEW_ENI,
            request_tags=tags,
            keys={"ec2:CreateAction": "CreateNetworkInterface"},
        ),
    ]


def on_eni(action: str, *, instance: bool = False) -> list[Request]:
    """`action` on an interface of the cluster's VPC, and on the node it is attached to."""
    requests = [asked(action, ENI, in_vpc=True)]
    return requests + ([asked(action, INSTANCE)] if instance else [])


CALLS = {
    "CreateNetworkInterface": create_eni(),
    # attachENI (awsutils.go:901-926), then DeleteOnTermination on the attachment (872-882).
    "AttachNetworkInterface": on_eni("ec2:AttachNetworkInterface", instance=True),
    "ModifyNetworkInterfaceAttribute": on_eni("ec2:ModifyNetworkInterfaceAttribute"),
    # AllocIPAddress, AllocIPAddresses (1654, 1819); DeallocIPAddresses and
    # DeallocPrefixAddresses (1948, 1975).
    "AssignPrivateIpAddresses": on_eni("ec2:AssignPrivateIpAddresses"),
    "UnassignPrivateIpAddresses": on_eni("ec2:UnassignPrivateIpAddresses"),
    # TagENI (1128-1160): the tags an existing interface lacks, at ipamd's start
    # (pkg/ipamd/ipamd.go:508) and on every reconcile (ipamd.go:1633).
    "TagENI": [asked("ec2:CreateTags", ENI, request_tags=ENI_TAGS, in_vpc=True)],
    # tagENIcreateTS (2017-2050): the leaked-interface cleanup's timestamp (2100, 2111).
    "tagENIcreateTS": [asked("ec2:CreateTags", ENI, request_tags=CREATED_AT, in_vpc=True)],
    # freeENI (1179-1231): detach, then deleteENI (1271-1299).
    "DetachNetworkInterface": on_eni("ec2:DetachNetworkInterface", instance=True),
    "DeleteNetworkInterface": on_eni("ec2:DeleteNetworkInterface"),
}


@pytest.mark.parametrize("requests", CALLS.values(), ids=CALLS.keys())
def test_the_vpc_cni_may_make_each_of_its_calls(requests: list[Request]) -> None:
    identity, bounds = [MANAGED_POLICIES["AmazonEKS_CNI_Policy"]], boundary()

    refused = [r for r in requests if not allowed(r, identity, bounds)]

    assert requests
    assert refused == [], [(r.action, r.resource, r.context) for r in refused]


def test_an_interface_being_created_carries_no_vpc_of_its_own() -> None:
    (*_, tagging) = create_eni()

    assert "ec2:Vpc" not in tagging.context
    assert tagging.context["ec2:CreateAction"] == "CreateNetworkInterface"
