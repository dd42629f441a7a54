"""The Kubernetes side of a plan made before approval (docs/plan-identity.yaml): the plan's
identity may dry-run every change the stack makes and make none.

Kubernetes authorizes a dry run like the change itself (API concepts, "Dry-run authorization":
identical for dry-run and non-dry-run requests), and runs admission for it with `request.dryRun`
set (the AdmissionRequest a policy's `request` holds). Admission policies skip their own kinds
and nothing else of admissionregistration.k8s.io (kubernetes/apiserver v0.33.13 to v0.36.3,
pkg/admission/plugin/policy/generic/plugin.go, `admissionResources`, which `shouldIgnoreResource`
checks; the webhook's `IsExemptAdmissionConfigurationResource` also exempts webhook
configurations, but only from webhooks).
"""

from typing import Any

import pytest
import yaml

from gpu_platform.offline.program import Plan, run_program
from gpu_platform.stack_files import stack_config
from tests.kubernetes_schemas import NOT_OBJECTS, validate
from tests.repository import PROJECT, ROOT
from tests.shared_plans import shared_plan
from tests.stack_variants import with_atomic_pool, with_gpu_quotas_fitting_its_pools

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
    "apiextensions.k8s.io/v1:CustomResourceDefinition": (
        "apiextensions.k8s.io",
        "customresourcedefinitions",
    ),
    "apps/v1:DaemonSet": ("apps", "daemonsets"),
    "apps/v1:Deployment": ("apps", "deployments"),
    "batch/v1:Job": ("batch", "jobs"),
    "networking.k8s.io/v1:NetworkPolicy": ("networking.k8s.io", "networkpolicies"),
    "monitoring.coreos.com/v1:PrometheusRule": ("monitoring.coreos.com", "prometheusrules"),
    "monitoring.googleapis.com/v1:ClusterPodMonitoring": (
        "monitoring.googleapis.com",
        "clusterpodmonitorings",
    ),
    "monitoring.googleapis.com/v1:ClusterRules": ("monitoring.googleapis.com", "clusterrules"),
    "karpenter.sh/v1:NodePool": ("karpenter.sh", "nodepools"),
    "karpenter.k8s.aws/v1:EC2NodeClass": ("karpenter.k8s.aws", "ec2nodeclasses"),
    "eks.amazonaws.com/v1:NodeClass": ("eks.amazonaws.com", "nodeclasses"),
    "kueue.x-k8s.io/v1beta2:AdmissionCheck": ("kueue.x-k8s.io", "admissionchecks"),
    "kueue.x-k8s.io/v1beta2:ClusterQueue": ("kueue.x-k8s.io", "clusterqueues"),
    "kueue.x-k8s.io/v1beta2:Cohort": ("kueue.x-k8s.io", "cohorts"),
    "kueue.x-k8s.io/v1beta2:LocalQueue": ("kueue.x-k8s.io", "localqueues"),
    "kueue.x-k8s.io/v1beta2:ProvisioningRequestConfig": (
        "kueue.x-k8s.io",
        "provisioningrequestconfigs",
    ),
    "kueue.x-k8s.io/v1beta2:ResourceFlavor": ("kueue.x-k8s.io", "resourceflavors"),
    "kueue.x-k8s.io/v1beta2:WorkloadPriorityClass": ("kueue.x-k8s.io", "workloadpriorityclasses"),
    "resource.k8s.io/v1:DeviceClass": ("resource.k8s.io", "deviceclasses"),
    "resource.k8s.io/v1:ResourceClaimTemplate": ("resource.k8s.io", "resourceclaimtemplates"),
    "rbac.authorization.k8s.io/v1:ClusterRole": ("rbac.authorization.k8s.io", "clusterroles"),
    "rbac.authorization.k8s.io/v1:ClusterRoleBinding": (
        "rbac.authorization.k8s.io",
        "clusterrolebindings",
    ),
    "rbac.authorization.k8s.io/v1:Role": ("rbac.authorization.k8s.io", "roles"),
    "rbac.authorization.k8s.io/v1:RoleBinding": ("rbac.authorization.k8s.io", "rolebindings"),
}
# The kinds the stacks declare that the plan identity may not dry-run: node validation's
# admission policy and binding, which no admission policy can hold to a dry run (POLICY_EXEMPT
# below); docs/plan-identity.yaml says so.
NOT_DRY_RUN = {
    "admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy",
    "admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding",
}
# What a pinned manifest applied whole holds: Google's COS driver installer is one DaemonSet
# (GoogleCloudPlatform/container-engine-accelerators nvidia-driver-installer/cos/
# daemonset-preloaded.yaml, at the commit gpu_platform/versions.py pins).
MANIFEST_KINDS = {"yaml/v2:ConfigFile": {"apps/v1:DaemonSet"}}
DRY_RUN_VERBS = {"create", "update", "patch", "delete"}
# The kinds no admission policy holds (generic/plugin.go `admissionResources`, above).
POLICY_EXEMPT = {
    ("admissionregistration.k8s.io", "validatingadmissionpolicies"),
    ("admissionregistration.k8s.io", "validatingadmissionpolicybindings"),
    ("admissionregistration.k8s.io", "mutatingadmissionpolicies"),
    ("admissionregistration.k8s.io", "mutatingadmissionpolicybindings"),
}


def documents() -> list[dict[str, Any]]:
    return list(yaml.safe_load_all(MANIFEST.read_text()))


def objects() -> dict[str, dict[str, Any]]:
    return {doc["kind"]: doc for doc in documents()}


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
def every_stack_plan(dev_plan_once: Plan) -> list[Plan]:
    # Any stack may wait for approval: every committed stack, gke-dev with Managed Service for
    # Prometheus, whose kinds no committed stack declares,
    stacks = sorted(path.name.split(".")[1] for path in ROOT.glob("Pulumi.*.yaml"))
    gke_dev = dict(stack_config("gke-dev", PROJECT))
    gke_dev["gpu-platform:monitoring"] = {
        **gke_dev["gpu-platform:monitoring"],
        "googleManagedPrometheus": True,
    }
    # and dev with a pool that scales up atomically, whose Kueue objects and ProvisioningRequest
    # CRD no committed stack declares.
    atomic = with_gpu_quotas_fitting_its_pools(with_atomic_pool(stack_config("dev", PROJECT)))
    return [
        dev_plan_once,
        shared_plan("dev", atomic),
        *(shared_plan(stack) for stack in stacks if stack != "dev"),
        run_program("gke-dev", config=gke_dev, project=PROJECT),
    ]


def test_the_manifest_is_valid_kubernetes() -> None:
    for obj in objects().values():
        validate(obj)


def test_the_plan_may_dry_run_every_kind_the_stack_declares(every_stack_plan: list[Plan]) -> None:
    declared = {
        r.type.removeprefix("kubernetes:")
        for plan in every_stack_plan
        for r in plan.resources
        if r.type.startswith("kubernetes:") and r.type not in NOT_OBJECTS
    }
    kinds = set().union(*(MANIFEST_KINDS.get(kind, {kind}) for kind in declared)) - NOT_DRY_RUN

    assert {"monitoring.googleapis.com/v1:ClusterPodMonitoring", "apps/v1:DaemonSet"} <= kinds

    assert kinds <= set(RESOURCES), kinds - set(RESOURCES)
    for kind in kinds:
        group, resource = RESOURCES[kind]
        assert {(group, resource, verb) for verb in DRY_RUN_VERBS} <= granted(), kind


def test_the_plan_is_granted_nothing_admission_policies_cannot_hold() -> None:
    rules = granted()

    assert {g for g, _, _ in rules} == {g for g, _ in RESOURCES.values()}
    assert not POLICY_EXEMPT & {(g, r) for g, r, _ in rules}
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


def test_the_policy_is_applied_before_the_role_it_holds() -> None:
    # kubectl apply -f creates a file's objects in order: the role's write verbs never exist
    # before the policy that refuses their real writes.
    assert [doc["kind"] for doc in documents()] == [
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "ClusterRole",
        "ClusterRoleBinding",
    ]
