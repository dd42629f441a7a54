"""The VPC CNI's own role (`cluster.vpcCniRole`): `AmazonEKS_CNI_Policy` on a role the CNI's
service account takes through EKS Pod Identity, instead of on the node roles (EKS user guide,
create-node-role.adoc: "we recommend that you assign the policy to a separate role that you use
only for the Amazon VPC CNI add-on"; the add-on runs as `kube-system/aws-node`,
cni-iam-role.adoc)."""

from collections.abc import Callable
from typing import Any

from gpu_platform.offline.program import Plan

from .plans import with_cluster

Config = dict[str, Any]
PlanFor = Callable[[Config], Plan]
ROLE = "aws:iam/role:Role"
ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
ASSOCIATION = "aws:eks/podIdentityAssociation:PodIdentityAssociation"
COMPONENT = "gpu-platform:eks:VpcCniIdentity"


def test_the_cni_takes_its_own_role_through_pod_identity(dev_plan: Plan) -> None:
    association = dev_plan.named("vpc-cni-pod-identity", ASSOCIATION).inputs

    assert (association["namespace"], association["serviceAccount"]) == ("kube-system", "aws-node")
    assert association["roleArn"] == "arn:aws:iam::123456789012:role/ml-dev.vpc-cni"
    assert dev_plan.named("vpc-cni-AmazonEKS_CNI_Policy", ATTACHMENT).inputs == {
        "role": "ml-dev.vpc-cni",
        "policyArn": "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
    }


def test_node_groups_start_once_the_cni_has_its_role(dev_plan: Plan) -> None:
    (cni,) = dev_plan.of_type(COMPONENT)
    (node_group,) = dev_plan.of_type("aws:eks/nodeGroup:NodeGroup")

    assert {r.urn for r in dev_plan.children_of(cni)} <= set(node_group.dependencies)


def test_a_cluster_whose_cni_has_an_identity_gets_no_role(
    dev_config: Config, plan_for: PlanFor
) -> None:
    with_cluster(dev_config, vpcCniRole=False)

    plan = plan_for(dev_config)

    assert plan.of_type(COMPONENT) == []
    assert "aws-node" not in {a.inputs["serviceAccount"] for a in plan.of_type(ASSOCIATION)}
