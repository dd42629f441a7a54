"""Binary Authorization of the cluster the platform creates: GKE evaluates the project's policy
(container.v1 `BinaryAuthorization.evaluationMode: PROJECT_SINGLETON_POLICY_ENFORCE`, which
terraform-google-kubernetes-engine v44.2.0 `modules/safer-cluster/main.tf` always sets with
`enable_binary_authorization = true`), and the platform writes that policy unless told not to.
A project's policy with no rule admits every image, so evaluating it alone checks nothing. The
policy's fields are binaryauthorization.v1's (googleapiclient discovery revision 20260703):
`AdmissionRule.evaluationMode` ALWAYS_DENY, "This rule denies all pod creations";
`enforcementMode` DRYRUN_AUDIT_LOG_ONLY, "Dryrun mode: Audit logging only. This will allow the
pod creation as if the admission request had specified break-glass", and
ENFORCED_BLOCK_AND_AUDIT_LOG; `AdmissionWhitelistPattern.namePattern`, "`registry/path/to/
image`. This supports a trailing `*` wildcard ... This also supports a trailing `**` wildcard
which matches subdirectories"."""

from collections.abc import Callable
from typing import Any

import pytest

from gpu_platform.gke.new_cluster.break_glass import POLICY_NAME
from gpu_platform.offline.analyzer import PolicyPack
from gpu_platform.offline.program import Plan, PlannedResource
from tests.official_models import official_model_problems
from tests.test_configuration_sweep import pack_problems

from ..plans import on_ubuntu, problems_of
from .hardening_invariants import VALIDATING_POLICY
from .plans import cluster, with_gcp

Config = dict[str, Any]
POLICY = "gcp:binaryauthorization/policy:Policy"
VALIDATING_BINDING = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding"


def break_glass(plan: Plan, kind: str) -> list[PlannedResource]:
    """The break-glass refusal's objects of `kind`: node validation has an admission policy of
    its own."""
    return [r for r in plan.of_type(kind) if r.inputs["metadata"]["name"] == POLICY_NAME]


def policy(plan: Plan) -> PlannedResource:
    (found,) = plan.of_type(POLICY)
    return found


def admitted(image: str, patterns: list[str]) -> bool:
    """Whether an allowlist pattern exempts the image: a trailing `**` matches below, a trailing
    `*` within one level (it does not match `/`: binaryauthorization v1beta1 `namePattern`)."""
    for pattern in patterns:
        if pattern.endswith("**") and image.startswith(pattern[:-2]):
            return True
        if pattern.endswith("*") and not pattern.endswith("**"):
            rest = image.removeprefix(pattern[:-1])
            if rest != image and "/" not in rest:
                return True
        if image == pattern:
            return True
    return False


def images(node: Any, key: str | None = None) -> set[str]:
    """Every `image` a Kubernetes object of the plan names, however deep; in the GPU Operator
    chart's values, `{repository, image, version}` name one image together
    (deployments/gpu-operator/templates/_helpers.tpl at v26.7.0: `repository/image:version`),
    or `image` alone, a whole reference, where the other two are empty (internal/image/image.go
    `ImagePath`)."""
    if isinstance(node, dict):
        if {"repository", "image", "version"} <= node.keys():
            repository, image, version = node["repository"], node["image"], node["version"]
            reference = f"{repository}/{image}" if repository else image
            return {f"{reference}:{version}" if version else reference}
        return set().union(*(images(v, k) for k, v in node.items()))
    if isinstance(node, list):
        return set().union(*(images(v, key) for v in node))
    return {node} if key == "image" and isinstance(node, str) else set()


def test_by_default_the_cluster_audits_every_image_but_the_platforms(gke_new_plan: Plan) -> None:
    written = policy(gke_new_plan)

    assert cluster(gke_new_plan).inputs["binaryAuthorization"] == {
        "evaluationMode": "PROJECT_SINGLETON_POLICY_ENFORCE"
    }
    assert written.inputs["project"] == "ml-platform-dev"
    assert written.inputs["defaultAdmissionRule"] == {
        "evaluationMode": "ALWAYS_DENY",
        "enforcementMode": "DRYRUN_AUDIT_LOG_ONLY",
    }
    # Google's own system images, by Google's global policy.
    assert written.inputs["globalPolicyEvaluationMode"] == "ENABLE"
    # The cluster evaluates the written policy from its first pod on.
    assert written.urn in cluster(gke_new_plan).dependencies


def test_every_image_the_platform_deploys_is_admitted(gke_new_plan: Plan) -> None:
    patterns = [p["namePattern"] for p in policy(gke_new_plan).inputs["admissionWhitelistPatterns"]]
    deployed = set().union(*(images(r.inputs) for r in gke_new_plan.resources))

    assert "nvcr.io/nvidia/k8s/container-toolkit" in " ".join(deployed)  # the operands are read
    assert sorted(i for i in deployed if not admitted(i, patterns)) == []


# Images of the Prometheus stack's pods, as kube-prometheus-stack 88.5.3's values.yaml names them
# (prometheus-community/helm-charts, charts/kube-prometheus-stack/values.yaml at
# kube-prometheus-stack-88.5.3; the stored copy stops there, the pin is 93.4.1): the admission
# webhook's certificate job (`prometheusOperator.admissionWebhooks.patch.image`, moved from
# registry.k8s.io to ghcr.io by helm-charts #6406), the operator, its config reloader,
# Prometheus and Alertmanager; kube-state-metrics 8.4.0's and prometheus-node-exporter
# 4.56.1's `image`; Grafana 12.11.1's and its sidecar's (grafana-community/helm-charts
# charts/grafana/values.yaml at grafana-12.11.1).
PROMETHEUS_STACK_IMAGES = [
    "ghcr.io/jkroepke/kube-webhook-certgen",
    "quay.io/prometheus-operator/prometheus-operator",
    "quay.io/prometheus-operator/prometheus-config-reloader",
    "quay.io/prometheus/prometheus",
    "quay.io/prometheus/alertmanager",
    "registry.k8s.io/kube-state-metrics/kube-state-metrics",
    "quay.io/prometheus/node-exporter",
    "docker.io/grafana/grafana",
    "quay.io/kiwigrid/k8s-sidecar",
]


def test_every_image_of_the_prometheus_stack_is_admitted(gke_new_plan: Plan) -> None:
    patterns = [p["namePattern"] for p in policy(gke_new_plan).inputs["admissionWhitelistPatterns"]]

    # The charts join `registry/repository:tag` (or `@sha256:...` with `sha`): any tag.
    assert [i for i in PROMETHEUS_STACK_IMAGES if not admitted(f"{i}:1.8.7", patterns)] == []
    # Each repository exactly, not its whole registry.
    assert not admitted("ghcr.io/someone/miner:1", patterns)
    assert not admitted("quay.io/prometheus/other:1", patterns)


def test_the_cos_driver_installers_registry_images_are_admitted(gke_new_plan: Plan) -> None:
    # GoogleCloudPlatform/container-engine-accelerators nvidia-driver-installer/cos/
    # daemonset-preloaded.yaml: its partition-gpus init container (068b15a9, the stored copy)
    # and, at the pinned f2cf4197, its pause container moved to gke.gcr.io/pause:3.8
    # (gpu_platform/versions.py). Its installer, `cos-nvidia-installer:fixed`, names no registry:
    # no pattern admits it, which is why enforce is refused on COS.
    patterns = [p["namePattern"] for p in policy(gke_new_plan).inputs["admissionWhitelistPatterns"]]
    partition = (
        "gcr.io/gke-release/nvidia-partition-gpu@sha256:"
        "c54fd003948fac687c2a93a55ea6e4d47ffbd641278a9191e75e822fe72471c2"
    )

    assert admitted(partition, patterns)
    assert admitted("gke.gcr.io/pause:3.8", patterns)
    assert not admitted("cos-nvidia-installer:fixed", patterns)


def enforcing(config: Config) -> Config:
    """The config enforcing its policy, on Ubuntu nodes (enforce is refused on COS)."""
    return with_gcp(on_ubuntu(config), binaryAuthorization="enforce")


def test_enforce_refuses_what_audit_logs_and_break_glass(
    gke_new_config: Config, plan_for: Callable[[Config], Plan], policy_pack: PolicyPack
) -> None:
    plan = plan_for(enforcing(gke_new_config))

    assert policy(plan).inputs["defaultAdmissionRule"] == {
        "evaluationMode": "ALWAYS_DENY",
        "enforcementMode": "ENFORCED_BLOCK_AND_AUDIT_LOG",
    }
    # Binary Authorization admits a pod annotated `alpha.image-policy.k8s.io/break-glass`
    # whatever its images (Google's "Using breakglass", binaryauthorization.v1
    # `DRYRUN_AUDIT_LOG_ONLY`: "as if the admission request had specified break-glass"): refused
    # on every pod outside kube-system.
    (refusal,) = break_glass(plan, VALIDATING_POLICY)
    (binding,) = break_glass(plan, VALIDATING_BINDING)
    spec = refusal.inputs["spec"]
    assert spec["failurePolicy"] == "Fail"
    assert spec["matchConstraints"]["resourceRules"] == [
        {
            "apiGroups": [""],
            "apiVersions": ["v1"],
            "operations": ["CREATE", "UPDATE"],
            "resources": ["pods"],
        }
    ]
    assert [v["expression"] for v in spec["validations"]] == [
        "!has(object.metadata.annotations) || "
        "!('alpha.image-policy.k8s.io/break-glass' in object.metadata.annotations)"
    ]
    assert binding.inputs["spec"]["policyName"] == refusal.inputs["metadata"]["name"]
    assert binding.inputs["spec"]["validationActions"] == ["Deny"]
    assert binding.inputs["spec"]["matchResources"]["namespaceSelector"] == {
        "matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system"]}
        ]
    }
    assert pack_problems(policy_pack)(plan, gke_new_config) == []
    assert official_model_problems(plan, "1.33") == []


def test_audit_leaves_break_glass_to_the_policy(gke_new_plan: Plan) -> None:
    # In dry run every pod starts anyway: nothing to refuse.
    assert break_glass(gke_new_plan, VALIDATING_POLICY) == []


def test_further_images_are_admitted_by_their_key(
    gke_new_config: Config, plan_for: Callable[[Config], Plan]
) -> None:
    mine = ["us-docker.pkg.dev/acme-ml/training/**", "ghcr.io/acme/loader*"]

    plan = plan_for(with_gcp(gke_new_config, binaryAuthorizationAllowedImages=mine))

    patterns = [p["namePattern"] for p in policy(plan).inputs["admissionWhitelistPatterns"]]
    assert patterns[-2:] == mine


@pytest.mark.parametrize(
    ("mode", "evaluation"),
    [("project", "PROJECT_SINGLETON_POLICY_ENFORCE"), ("off", "DISABLED")],
)
def test_the_project_owners_policy_or_none_and_the_platform_writes_none(
    gke_new_config: Config, plan_for: Callable[[Config], Plan], mode: str, evaluation: str
) -> None:
    # container.v1 `BinaryAuthorization.evaluationMode`: DISABLED, "Disable BinaryAuthorization".
    # No Policy resource: a stack switched to them from audit or enforce deletes the one it
    # wrote, which resets the project's policy to Binary Authorization's default
    # (docs/create-cluster-gke.md says so before the switch).
    plan = plan_for(with_gcp(gke_new_config, binaryAuthorization=mode))

    assert cluster(plan).inputs["binaryAuthorization"] == {"evaluationMode": evaluation}
    assert plan.of_type(POLICY) == []


@pytest.mark.parametrize(
    ("gcp", "key", "expected"),
    [
        ({"binaryAuthorization": True}, "binaryAuthorization", "'audit', 'enforce', 'project'"),
        (
            {"binaryAuthorizationAllowedImages": ["*"]},
            "binaryAuthorizationAllowedImages[0]",
            "an image name pattern, registry/path/image",
        ),
        (
            {"binaryAuthorizationAllowedImages": ["nvcr.io/*/cuda"]},
            "binaryAuthorizationAllowedImages[0]",
            "an image name pattern, registry/path/image",
        ),
        (
            {"binaryAuthorization": "project", "binaryAuthorizationAllowedImages": ["ghcr.io/a/*"]},
            "binaryAuthorizationAllowedImages",
            "no value with binaryAuthorization project",
        ),
        # GKE's COS driver installer runs `image: cos-nvidia-installer:fixed`, no registry
        # (GoogleCloudPlatform/container-engine-accelerators, nvidia-driver-installer/cos/
        # daemonset-preloaded.yaml): no `registry/path/image` pattern admits it.
        (
            {"binaryAuthorization": "enforce"},
            "binaryAuthorization",
            "the COS driver installer's image (cos-nvidia-installer:fixed) names no registry",
        ),
    ],
    ids=[
        "a boolean",
        "no registry",
        "a wildcard mid-path",
        "with the project owner's policy",
        "enforce on COS",
    ],
)
def test_a_bad_binary_authorization_setting_is_refused_by_its_key(
    gke_new_config: Config,
    failed_plan_for: Callable[[Config], Plan],
    gcp: Config,
    key: str,
    expected: str,
) -> None:
    problems = problems_of(failed_plan_for(with_gcp(gke_new_config, **gcp)))

    assert expected in problems[f"gpu-platform:cluster.create.gcp.{key}"]
