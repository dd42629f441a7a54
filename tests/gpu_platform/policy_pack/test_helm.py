"""The Helm policies: exact chart versions from secure repositories, and the GPU Operator in
its own namespace, with DCGM, as a helm.v3.Release."""

from typing import Any

import pytest

from gpu_platform.cli.analyzer import PolicyConfigError, PolicyPack, reconcile_config
from gpu_platform.versions import (
    CLUSTER_AUTOSCALER_CHART,
    EFA_DEVICE_PLUGIN_CHART,
    GPU_OPERATOR_CHART,
    KARPENTER_CHART,
    KARPENTER_CRD_CHART,
    KUBE_PROMETHEUS_STACK_CHART,
)
from tests.gpu_platform.policy_pack.builders import (
    CHART,
    RELEASE,
    Analyze,
    gpu_operator_release,
    messages,
    resource,
)

VISIBLE = "helm-release-workloads-visible"


def chart(type_: str = RELEASE, **inputs: Any) -> Any:
    return resource(
        type_,
        "ingress",
        {
            "chart": "ingress-nginx",
            "version": "4.11.3",
            "repositoryOpts": {"repo": "https://kubernetes.github.io/ingress-nginx"},
            **inputs,
        },
    )


@pytest.mark.parametrize("policy", ["helm-chart-pinned", "gpu-operator-release"])
def test_the_platforms_gpu_operator_release_passes(analyze: Analyze, policy: str) -> None:
    assert messages(analyze(gpu_operator_release()), policy) == []


@pytest.mark.parametrize("version", ["4.11.3", "v26.7.0", "1.0.0-rc.1", "2.3.4+build.5"])
def test_exact_versions_pass(analyze: Analyze, version: str) -> None:
    assert messages(analyze(chart(version=version)), "helm-chart-pinned") == []


@pytest.mark.parametrize("version", ["", "latest", "^4.11.0", "~4.11", "4.11", "4.x", ">=4.0.0"])
def test_ranges_and_missing_versions_are_reported(analyze: Analyze, version: str) -> None:
    assert messages(analyze(chart(version=version)), "helm-chart-pinned") == [
        f'chart "ingress-nginx" has version "{version}", not one exact release, so each '
        "deployment may install a different chart. Fix: set version to an exact release such "
        'as "1.2.3".'
    ]


def test_a_chart_without_a_version_is_reported_for_both_kinds(analyze: Analyze) -> None:
    release = chart()
    del release.inputs["version"]
    v4_chart = chart(CHART)
    del v4_chart.inputs["version"]

    assert len(messages(analyze(release, v4_chart), "helm-chart-pinned")) == 2


def test_the_repository_must_be_https_or_oci(analyze: Analyze) -> None:
    insecure = chart(repositoryOpts={"repo": "http://charts.example.com"})
    local = chart(chart="nvidia/gpu-operator", repositoryOpts={})

    assert messages(analyze(insecure, local), "helm-chart-pinned") == [
        'chart "ingress-nginx" comes from "http://charts.example.com", neither an https nor an '
        "oci repository, so it can be altered on the way. Fix: use the repository's https or "
        "oci:// address.",
        'chart "nvidia/gpu-operator" names no repository (repositoryOpts.repo), so it comes from '
        "whatever Helm repositories the deploying machine has configured. Fix: set "
        "repositoryOpts.repo to the chart's https repository, or name the chart by its oci:// "
        "reference.",
    ]


@pytest.mark.parametrize(
    "source",
    [
        "./charts/inference",
        "../shared-charts/inference",
        "charts/inference-0.3.1.tgz",
        "https://charts.example.com/releases/ingress-nginx-4.11.3.tgz",
    ],
)
def test_charts_fixed_by_the_repository_or_a_versioned_url_pass(
    analyze: Analyze, source: str
) -> None:
    local = chart(CHART, chart=source, repositoryOpts={})
    del local.inputs["version"]

    assert messages(analyze(local), "helm-chart-pinned") == []


@pytest.mark.parametrize("source", ["/opt/charts/inference", "~/charts/inference", "~ci/charts"])
def test_a_chart_on_the_deploying_machine_outside_the_repository_is_reported(
    analyze: Analyze, source: str
) -> None:
    # Helm reads an absolute or home path from the machine that runs the deploy (a CI runner),
    # whatever the repository holds.
    local = chart(CHART, chart=source, repositoryOpts={})
    del local.inputs["version"]

    assert messages(analyze(local), "helm-chart-pinned") == [
        f'chart "{source}" is read from the deploying machine\'s own files, outside the '
        "repository, so what it installs is whatever that machine holds. Fix: keep the chart in "
        'the repository and name it by a relative path ("./charts/app"), or install a released '
        "version from an https or oci repository."
    ]


def test_an_unversioned_or_plain_http_archive_is_reported(analyze: Analyze) -> None:
    latest = chart(chart="https://charts.example.com/inference-latest.tgz", repositoryOpts={})
    plain = chart(chart="http://charts.example.com/inference-1.0.0.tgz", repositoryOpts={})

    assert messages(analyze(latest, plain), "helm-chart-pinned") == [
        'chart "https://charts.example.com/inference-latest.tgz" is not a versioned chart '
        "archive (name-1.2.3.tgz), so the same address may serve a different chart tomorrow. "
        "Fix: point it at one release's archive.",
        'chart "http://charts.example.com/inference-1.0.0.tgz" is fetched over plain http, so it '
        "can be altered on the way. Fix: fetch it over https.",
    ]


def test_an_oci_chart_needs_no_repository(analyze: Analyze) -> None:
    oci = chart(CHART, chart="oci://registry.example.com/charts/app", repositoryOpts={})

    assert messages(analyze(oci), "helm-chart-pinned") == []


def test_the_gpu_operator_needs_its_own_namespace(analyze: Analyze) -> None:
    in_default = gpu_operator_release()
    del in_default.inputs["namespace"]
    in_kube_system = gpu_operator_release("system-operator")
    in_kube_system.inputs["namespace"] = "kube-system"

    assert messages(analyze(in_default, in_kube_system), "gpu-operator-release") == [
        'the GPU Operator is installed in namespace "default", which it would share with other '
        "workloads while it needs Pod Security privileged. Fix: install it in its own "
        'namespace, e.g. "gpu-operator", labelled privileged.',
        'the GPU Operator is installed in namespace "kube-system", which it would share with '
        "other workloads while it needs Pod Security privileged. Fix: install it in its own "
        'namespace, e.g. "gpu-operator", labelled privileged.',
    ]


def test_the_gpu_operator_keeps_its_dcgm_exporter(analyze: Analyze) -> None:
    release = gpu_operator_release()
    release.inputs["values"]["dcgmExporter"] = {"enabled": False}

    assert messages(analyze(release), "gpu-operator-release") == [
        "the GPU Operator's DCGM exporter is off (values.dcgmExporter.enabled=false), so there "
        "are no GPU metrics to watch or alert on. Fix: remove the value or set it to true."
    ]


def test_the_gpu_operator_is_not_installed_as_a_v4_chart(analyze: Analyze) -> None:
    release = gpu_operator_release()
    v4_chart = resource(CHART, "gpu-operator", dict(release.inputs))

    assert messages(analyze(v4_chart), "gpu-operator-release") == [
        "the GPU Operator is installed with helm.v4.Chart, which creates a chart's hook "
        "resources as ordinary resources and does not run them as Helm hooks, so the operator's "
        "CRD upgrade Job (operator.upgradeCRD), a pre-upgrade hook, is not run before the "
        "upgrade it is for. Fix: install it with helm.v3.Release."
    ]


def test_other_charts_are_not_held_to_the_operators_rules(analyze: Analyze) -> None:
    assert messages(analyze(chart(namespace="default")), "gpu-operator-release") == []


def test_a_tenants_release_is_said_to_be_invisible_to_the_policies(analyze: Analyze) -> None:
    verdicts = [v for v in analyze(chart()) if v.policy_name == "helm-release-workloads-visible"]

    assert [(v.enforcement_level, v.message) for v in verdicts] == [
        (
            "advisory",
            'chart "ingress-nginx" is installed as a helm.v3.Release, whose workloads the '
            "policies never see: Helm creates them, not Pulumi, so no Pod Security or GPU rule "
            "checks them. Fix: install it with helm.v4.Chart, which registers every object it "
            "renders as a resource the policies check, or add "
            '"https://kubernetes.github.io/ingress-nginx/ingress-nginx" to reviewedCharts once '
            "its workloads are reviewed another way.",
        )
    ]


def test_the_platforms_own_releases_and_v4_charts_are_not_flagged(analyze: Analyze) -> None:
    verdicts = analyze(gpu_operator_release(), chart(CHART))

    assert messages(verdicts, "helm-release-workloads-visible") == []


def test_a_reviewed_chart_of_another_repository_is_not_the_reviewed_one(analyze: Analyze) -> None:
    # An oci chart named like the platform's Karpenter, from somebody else's registry.
    lookalike = chart(chart="oci://registry.example.com/anyone/karpenter", repositoryOpts={})
    mirror = gpu_operator_release()
    mirror.inputs["repositoryOpts"]["repo"] = "https://charts.example.com/nvidia"

    assert [m.split(" is installed")[0] for m in messages(analyze(lookalike, mirror), VISIBLE)] == [
        'chart "oci://registry.example.com/anyone/karpenter"',
        'chart "gpu-operator"',
    ]


def test_a_release_named_in_reviewed_charts_by_repository_and_chart_is_not_flagged(
    analyze: Analyze,
) -> None:
    config = {
        VISIBLE: {"reviewedCharts": ["https://kubernetes.github.io/ingress-nginx/ingress-nginx"]}
    }

    assert messages(analyze(chart(), config=config), VISIBLE) == []


@pytest.mark.parametrize(
    "entry", ["karpenter", "nvidia/gpu-operator", "http://charts.example.com/app"]
)
def test_a_reviewed_chart_entry_without_its_repository_is_refused(
    policy_pack: PolicyPack, entry: str
) -> None:
    # The engine checks each policy's config against its schema (pulumi
    # pkg/resource/analyzer/config.go, validatePolicyConfig); so does the offline plan.
    with pytest.raises(PolicyConfigError) as refused:
        reconcile_config(policy_pack.policies, {VISIBLE: {"reviewedCharts": [entry]}})

    pattern = r"^(https|oci)://[^\s]+/[^/\s]+$"
    assert refused.value.problems == (
        f"{VISIBLE}.reviewedCharts.0: {entry!r} does not match {pattern!r}",
    )


def test_the_reviewed_charts_are_the_platforms_own_where_it_installs_them_from(
    policy_pack: PolicyPack,
) -> None:
    (visible,) = [p for p in policy_pack.policies if p.name == VISIBLE]
    charts = (
        GPU_OPERATOR_CHART,
        KUBE_PROMETHEUS_STACK_CHART,
        CLUSTER_AUTOSCALER_CHART,
        EFA_DEVICE_PLUGIN_CHART,
        KARPENTER_CHART,
        KARPENTER_CRD_CHART,
    )

    assert visible.config_schema["reviewedCharts"]["default"] == [
        f"{chart.repository}/{chart.name}" for chart in charts
    ]
