"""Each Pod Identity role can be taken by its association's service account only: EKS Pod
Identity assumes it with the session tags `kubernetes-namespace` and
`kubernetes-service-account` (EKS user guide, pod-id-abac.adoc), which the trust policy checks
(pod-id-role.adoc), so an association made for another service account gets nothing."""

import json

import pytest

from gpu_platform.offline.program import Plan
from tests.iam_policy import Request, allowed
from tests.shared_plans import shared_plan

ASSOCIATION = "aws:eks/podIdentityAssociation:PodIdentityAssociation"


@pytest.fixture(scope="module", params=["dev", "karpenter-dev"])
def plan(request: pytest.FixtureRequest) -> Plan:
    return shared_plan(request.param)


def _trust_of(plan: Plan, role_arn: str) -> dict:
    (role,) = [
        r
        for r in plan.of_type("aws:iam/role:Role")
        if role_arn.endswith(f":role/{r.inputs['name']}")
    ]
    return json.loads(role.inputs["assumeRolePolicy"])


def _assume(plan: Plan, namespace: str, service_account: str, role_arn: str) -> Request:
    cluster = plan.outputs["deployRoleTags"]["gpu-platform-cluster"]
    context = {
        "aws:SourceAccount": "123456789012",
        "aws:SourceArn": f"arn:aws:eks:us-east-1:123456789012:cluster/{cluster}",
        "aws:RequestTag/kubernetes-namespace": namespace,
        "aws:RequestTag/kubernetes-service-account": service_account,
    }
    return Request("sts:AssumeRole", role_arn, context, principal="pods.eks.amazonaws.com")


def test_only_the_associations_service_account_may_take_the_role(plan: Plan) -> None:
    associations = plan.of_type(ASSOCIATION)
    assert associations
    for association in associations:
        namespace, account = association.inputs["namespace"], association.inputs["serviceAccount"]
        role_arn = association.inputs["roleArn"]
        trust = _trust_of(plan, role_arn)

        assert allowed(_assume(plan, namespace, account, role_arn), [trust])
        assert not allowed(_assume(plan, namespace, "default", role_arn), [trust])
        assert not allowed(_assume(plan, "ml-team-a", account, role_arn), [trust])


def test_another_clusters_pod_identity_may_not_take_the_role(plan: Plan) -> None:
    (association, *_) = plan.of_type(ASSOCIATION)
    role_arn = association.inputs["roleArn"]
    request = _assume(
        plan, association.inputs["namespace"], association.inputs["serviceAccount"], role_arn
    )
    elsewhere = dict(request.context) | {
        "aws:SourceArn": "arn:aws:eks:us-east-1:123456789012:cluster/other"
    }

    assert not allowed(
        Request(request.action, role_arn, elsewhere, request.principal), [_trust_of(plan, role_arn)]
    )
