"""The Kubernetes side of a plan made before approval (docs/plan-identity.yaml): the plan's
identity may dry-run every change the stack makes and make none.

Kubernetes authorizes a dry run like the change itself (API concepts, "Dry-run authorization":
identical for dry-run and non-dry-run requests), runs admission for it with `request.dryRun`
set (the AdmissionRequest a policy's `request` holds), and exempts
admissionregistration.k8s.io objects from admission policies (apiserver
pkg/admission/plugin/policy/generic, `IsExemptAdmissionConfigurationResource`).
"""

from typing import Any

import pytest
import yaml

from gpu_platform.cli.offline import Plan, run_program
from tests.kubernetes_schemas import NOT_OBJECTS, validate
from tests.repository import PROJECT, ROOT

MANIFEST = ROOT / "docs" / "plan-identity.yaml"
GROUP = "gpu-platform:plan"
# Kubernetes API: each kind the stacks declare, as RBAC names it (API group, resource plural).
RESOURCES = {
    "core/v1:ConfigMap": ("", "configmaps"),
    "core/v1:LimitRange": ("", "limitranges"),
    "core/v1:Namespace": ("", "namespaces"),
    "core/v1:ResourceQuota": ("", "resourcequotas"),
    "core/v1:Service": ("", "services"),
    "core/v1:ServiceAccount": ("", "serviceaccounts"),
    "apps/v1:DaemonSet": ("apps", "daemonsets"),
    "apps/v1:Deployment": ("apps", "deployments"),
    "batch/v1:Job": ("batch", "jobs"),
    "networking.k8s.io/v1:NetworkPolicy": ("networking.k8s.io", "networkpolicies"),
    "monitoring.coreos.com/v1:PrometheusRule": ("monitoring.coreos.com", "prometheusrules"),
    "karpenter.sh/v1:NodePool": ("karpenter.sh", "nodepools"),
    "karpenter.k8s.aws/v1:EC2NodeClass": ("karpenter.k8s.aws", "ec2nodeclasses"),
    "rbac.authorization.k8s.io/v1:ClusterRole": ("rbac.authorization.k8s.io", "clusterroles"),
    "rbac.authorization.k8s.io/v1:ClusterRoleBinding": (
        "rbac.authorization.k8s.io",
        "clusterrolebindings",
    ),
}
DRY_RUN_VERBS = {"create", "update", "patch", "delete"}


def objects() -> dict[str, dict[str, Any]]:
    return {doc["kind"]: doc for doc in yaml.safe_load_all(MANIFEST.read_text())}


def granted() -> set[tuple[str, str, str]]:
    """(API group, resource, verb) the plan's ClusterRole grants."""
    return {
        (group, resource, verb)
        for rule in objects()["ClusterRole"]["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


@pytest.fixture(scope="module")
def approved_stack_plans() -> list[Plan]:
    # prod, the stack deployed after approval, and karpenter-dev, for the kinds a prod on
    # Karpenter declares.
    return [run_program(stack, project=PROJECT) for stack in ("prod", "karpenter-dev")]


def test_the_manifest_is_valid_kubernetes() -> None:
    for obj in objects().values():
        validate(obj)


def test_the_plan_may_dry_run_every_kind_the_stack_declares(
    approved_stack_plans: list[Plan],
) -> None:
    kinds = {
        r.type.removeprefix("kubernetes:")
        for plan in approved_stack_plans
        for r in plan.resources
        if r.type.startswith("kubernetes:") and r.type not in NOT_OBJECTS
    }

    assert kinds <= set(RESOURCES), kinds - set(RESOURCES)
    for kind in kinds:
        group, resource = RESOURCES[kind]
        assert {(group, resource, verb) for verb in DRY_RUN_VERBS} <= granted(), kind


def test_the_plan_is_granted_nothing_admission_policies_cannot_hold() -> None:
    rules = granted()

    assert {g for g, _, _ in rules} == {g for g, _ in RESOURCES.values()}
    assert "admissionregistration.k8s.io" not in {g for g, _, _ in rules}
    assert not {(g, r, v) for g, r, v in rules if "*" in (g, r, v)}
    assert "impersonate" not in {v for _, _, v in rules}
    assert "secrets" not in {r for _, r, _ in rules}


def test_the_group_is_bound_to_the_role() -> None:
    binding = objects()["ClusterRoleBinding"]

    assert binding["roleRef"]["name"] == objects()["ClusterRole"]["metadata"]["name"]
    assert binding["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": GROUP}
    ]


def test_every_change_of_the_group_but_a_dry_run_is_refused() -> None:
    policy = objects()["ValidatingAdmissionPolicy"]["spec"]
    binding = objects()["ValidatingAdmissionPolicyBinding"]["spec"]

    assert policy["failurePolicy"] == "Fail"
    assert policy["matchConstraints"]["resourceRules"] == [
        {
            "apiGroups": ["*"],
            "apiVersions": ["*"],
            "operations": ["CREATE", "UPDATE", "DELETE", "CONNECT"],
            "resources": ["*", "*/*"],
        }
    ]
    assert [c["expression"] for c in policy["matchConditions"]] == [
        f"'{GROUP}' in request.userInfo.groups"
    ]
    assert [v["expression"] for v in policy["validations"]] == [
        "has(request.dryRun) && request.dryRun == true"
    ]
    assert binding == {
        "policyName": objects()["ValidatingAdmissionPolicy"]["metadata"]["name"],
        "validationActions": ["Deny"],
    }
