"""What a stack exports for the teams that use it."""

import pytest

from gpu_platform_cli.offline import run_program
from tests.repository import PROJECT

POOL = "t4-shared"


def smoke_test_pod(plan) -> dict:
    (job,) = plan.of_type("kubernetes:batch/v1:Job")
    return job.inputs["spec"]["template"]["spec"]


def test_kubeconfig_is_exported_only_as_a_secret(dev_plan) -> None:
    assert "kubeconfig" in dev_plan.outputs and "kubeconfig" in dev_plan.secret_outputs


def test_gpu_operator_version_is_the_pinned_chart(dev_plan) -> None:
    release = dev_plan.named("gpu-operator", "kubernetes:helm.sh/v3:Release")

    assert dev_plan.outputs["gpuOperatorVersion"] == release.inputs["version"]


def test_prometheus_rule_names_are_the_alerts_deployed(dev_plan) -> None:
    (rule,) = dev_plan.of_type("kubernetes:monitoring.coreos.com/v1:PrometheusRule")
    deployed = [
        r["alert"] for g in rule.inputs["spec"]["groups"] for r in g["rules"] if "alert" in r
    ]

    assert dev_plan.outputs["prometheusRuleNames"] == deployed


def test_each_pool_exports_its_labels_and_taints(dev_plan) -> None:
    pool = dev_plan.outputs["pools"][POOL]

    assert pool["labels"]["gpu-platform.io/pool"] == POOL
    assert pool["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]


def test_exported_placement_is_what_the_smoke_test_pod_uses(dev_plan) -> None:
    workload = dev_plan.outputs["pools"][POOL]["workload"]
    pod = smoke_test_pod(dev_plan)

    assert workload["tolerations"] == pod["tolerations"]
    assert workload["affinity"] == pod["affinity"]
    assert workload["resource"] in pod["containers"][0]["resources"]["limits"]


def test_each_pool_exports_the_annotation_that_keeps_its_jobs_from_eviction(dev_plan) -> None:
    workload = dev_plan.outputs["pools"][POOL]["workload"]

    assert workload["annotations"] == {"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}


@pytest.mark.parametrize("stack", ["dev", "gke-dev", "prod"])
def test_helm_release_namespaces_are_where_the_stack_installs_releases(stack: str) -> None:
    # The namespaces in which a preview must read Secrets (Helm's release records); docs/ci.md
    # scopes the preview identity's Secret reads to them.
    plan = run_program(stack, project=PROJECT)
    releases = plan.of_type("kubernetes:helm.sh/v3:Release")

    assert plan.outputs["helmReleaseNamespaces"] == sorted(
        {r.inputs["namespace"] for r in releases}
    )
