"""The Helm policies: exact chart versions from secure repositories, the GPU Operator in its own
namespace, with DCGM, as a helm.v3.Release, and releases that undo a failed upgrade by
themselves."""

from typing import Any

import pytest

from gpu_platform import versions
from gpu_platform.offline.analyzer import PolicyConfigError, PolicyPack, reconcile_config
from gpu_platform.policy_pack.platform_releases import PLATFORM_RELEASES
from tests.gpu_platform.policy_pack.builders import (
    CHART,
    PLATFORM,
    RELEASE,
    ROLLS_BACK,
    UNKNOWN,
    Analyze,
    gpu_operator_release,
    messages,
    resource,
)
from tests.repository import STACKS
from tests.shared_plans import shared_plan

VISIBLE = "helm-release-workloads-visible"
MIRROR_ENTRY = "https://charts.example.com/nvidia/gpu-operator@v26.7.0"


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
        "./charts/../shared-charts/inference",
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


def local_chart(source: str) -> Any:
    local = chart(CHART, chart=source, repositoryOpts={})
    del local.inputs["version"]
    return local


def leaves_repository(source: str, root: str = ".") -> str:
    return (
        f'chart "{source}" leaves the repository, whose root is "{root}" from the program\'s '
        "directory (repositoryRoot), so what it installs is whatever sits beside the checkout "
        "on the deploying machine, which no review of the repository covers. Fix: keep the "
        "chart in the repository, or set repositoryRoot to where the repository's root is if "
        "the program is in a directory of it."
    )


@pytest.mark.parametrize("source", ["../shared-charts/inference", "./charts/../../inference"])
def test_a_chart_above_the_program_is_outside_the_repository_by_default(
    analyze: Analyze, source: str
) -> None:
    # By default the program's directory (Pulumi.yaml's) is the repository's root, as in this
    # project: a chart above it is on the deploying machine, beside the checkout.
    assert messages(analyze(local_chart(source)), "helm-chart-pinned") == [
        leaves_repository(source)
    ]


def test_a_chart_above_the_program_within_the_configured_root_passes(analyze: Analyze) -> None:
    config = {"helm-chart-pinned": {"repositoryRoot": ".."}}

    verdicts = analyze(local_chart("../charts/inference"), config=config)

    assert messages(verdicts, "helm-chart-pinned") == []


def test_a_chart_above_the_configured_root_is_reported(analyze: Analyze) -> None:
    config = {"helm-chart-pinned": {"repositoryRoot": ".."}}

    verdicts = analyze(local_chart("../../elsewhere/inference"), config=config)

    assert messages(verdicts, "helm-chart-pinned") == [
        leaves_repository("../../elsewhere/inference", "..")
    ]


@pytest.mark.parametrize("root", ["/srv/repo", "../charts", "..."])
def test_a_repository_root_that_is_not_a_directory_above_the_program_is_refused(
    policy_pack: PolicyPack, root: str
) -> None:
    with pytest.raises(PolicyConfigError) as refused:
        reconcile_config(policy_pack.policies, {"helm-chart-pinned": {"repositoryRoot": root}})

    pattern = r"^(\.|\.\.(/\.\.)*)$"
    assert refused.value.problems == (
        f"helm-chart-pinned.repositoryRoot: {root!r} does not match {pattern!r}",
    )


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
    verdicts = analyze(gpu_operator_release(), autoscaler_release(), chart(CHART))

    assert messages(verdicts, "helm-release-workloads-visible") == []


def test_a_reviewed_chart_of_another_repository_is_not_the_reviewed_one(analyze: Analyze) -> None:
    # A stack's own releases of charts named like reviewed ones, from somebody else's registry
    # or repository.
    config = {
        VISIBLE: {
            "reviewedCharts": [
                "oci://public.ecr.aws/karpenter/karpenter",
                "https://helm.ngc.nvidia.com/nvidia/gpu-operator",
            ]
        }
    }
    lookalike = chart(chart="oci://registry.example.com/anyone/karpenter", repositoryOpts={})
    mirror = chart(
        chart="gpu-operator", repositoryOpts={"repo": "https://charts.example.com/nvidia"}
    )

    verdicts = analyze(lookalike, mirror, config=config)

    assert [m.split(" is installed")[0] for m in messages(verdicts, VISIBLE)] == [
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


def test_a_stacks_own_release_of_a_chart_the_platform_installs_is_said_to_be_invisible(
    analyze: Analyze,
) -> None:
    # At another version than the platform pins (93.4.1), which no setting of the stack moves.
    verdicts = analyze(prometheus_stack_release(version="93.0.0"))

    assert messages(verdicts, "helm-release-workloads-visible") == [
        'chart "kube-prometheus-stack" is installed as a helm.v3.Release, whose workloads the '
        "policies never see: Helm creates them, not Pulumi, so no Pod Security or GPU rule "
        "checks them. Fix: install it with helm.v4.Chart, which registers every object it "
        "renders as a resource the policies check, or add "
        '"https://prometheus-community.github.io/helm-charts/kube-prometheus-stack" to '
        "reviewedCharts once its workloads are reviewed another way."
    ]


# --- Releases that undo a failed install or upgrade ------------------------------------------


def autoscaler_release(**inputs: Any) -> Any:
    """The cluster autoscaler as the platform's component declares it, with `inputs` added."""
    return resource(
        RELEASE,
        "cluster-autoscaler",
        {
            "name": "cluster-autoscaler",
            "namespace": "gpu-platform-system",
            "chart": "cluster-autoscaler",
            "version": "9.59.0",
            "repositoryOpts": {"repo": "https://kubernetes.github.io/autoscaler"},
            "values": {"cloudProvider": "aws"},
            **inputs,
        },
        parents=(PLATFORM, "gpu-platform:eks:ClusterAutoscaler"),
    )


def prometheus_stack_release(parents: tuple[str, ...] = (), **inputs: Any) -> Any:
    """kube-prometheus-stack, a chart the platform installs too, declared under `parents`: by
    default at the stack's root, by the stack's own program."""
    return resource(
        RELEASE,
        "monitoring",
        {
            "chart": "kube-prometheus-stack",
            "version": "93.4.1",
            "repositoryOpts": {"repo": "https://prometheus-community.github.io/helm-charts"},
            "values": {"grafana": {"sidecar": {"dashboards": {"enabled": True}}}},
            **inputs,
        },
        parents=parents,
    )


def rollback_verdicts(verdicts: list[Any]) -> list[tuple[str, str, str]]:
    return [
        (v.policy_name, v.enforcement_level, v.message)
        for v in verdicts
        if v.policy_name in ("platform-release-rollback", "helm-release-rollback")
    ]


def without_rollback(chart: str, level: str, policy: str) -> list[tuple[str, str, str]]:
    """What the rollback rules say of a release of `chart` that sets none of the settings."""
    return [
        (
            policy,
            level,
            f'chart "{chart}" is released without atomic, so a failed upgrade leaves the release '
            "on the half-applied new revision, not on the last one that worked, and a failed "
            "install stays installed. Fix: set atomic: true.",
        ),
        (
            policy,
            level,
            f'chart "{chart}" is released without cleanupOnFail, so what a failed upgrade created '
            "stays in the cluster beside the rolled-back release. Fix: set cleanupOnFail: true.",
        ),
        (
            policy,
            level,
            f'chart "{chart}" is released without a timeout, so Helm gives its workloads the '
            "provider's default 300 s to become ready, whatever they install, before it fails and "
            "rolls back the release. Fix: set timeout to the seconds they need.",
        ),
        (
            policy,
            level,
            f'chart "{chart}" keeps every revision of its release (no maxHistory), each a Secret '
            "in its namespace, piling up with every upgrade. Fix: set maxHistory, such as 10.",
        ),
    ]


def test_a_release_that_rolls_back_by_itself_passes(analyze: Analyze) -> None:
    verdicts = analyze(
        gpu_operator_release(), autoscaler_release(**ROLLS_BACK), chart(**ROLLS_BACK)
    )

    assert rollback_verdicts(verdicts) == []


def test_the_platforms_own_release_must_roll_back_by_itself(analyze: Analyze) -> None:
    verdicts = analyze(autoscaler_release())

    assert rollback_verdicts(verdicts) == without_rollback(
        "cluster-autoscaler", "mandatory", "platform-release-rollback"
    )


def test_another_release_is_advised_to_roll_back_by_itself(analyze: Analyze) -> None:
    verdicts = analyze(chart())

    assert rollback_verdicts(verdicts) == without_rollback(
        "ingress-nginx", "advisory", "helm-release-rollback"
    )


@pytest.mark.parametrize(
    "parents", [(), ("acme:monitoring:ClusterMonitoring",)], ids=["stack-root", "own-component"]
)
def test_a_stacks_own_release_of_a_chart_the_platform_also_installs_is_advised(
    analyze: Analyze, parents: tuple[str, ...]
) -> None:
    verdicts = analyze(prometheus_stack_release(parents, version="93.0.0"))

    assert rollback_verdicts(verdicts) == without_rollback(
        "kube-prometheus-stack", "advisory", "helm-release-rollback"
    )


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("chart", "nvidia-gpu-operator"),
        ("repositoryOpts", {"repo": "https://charts.example.com/nvidia"}),
        ("version", "v26.3.0"),
    ],
)
def test_a_release_off_the_platforms_pins_is_the_stacks_own(
    analyze: Analyze, field: str, value: Any
) -> None:
    # The platform's own table (gpu_platform/policy_pack/platform_releases.py) names the
    # chart (repository and name) and version; a release that differs in any is not it,
    # whatever its parents.
    release = gpu_operator_release()
    release.inputs[field] = value
    del release.inputs["atomic"]

    verdicts = analyze(release)

    assert [(p, level) for p, level, _ in rollback_verdicts(verdicts)] == [
        ("helm-release-rollback", "advisory")
    ]
    assert [v.policy_name for v in verdicts if v.policy_name == VISIBLE] == [VISIBLE]


@pytest.mark.parametrize(
    "parents", [(), ("acme:monitoring:ClusterMonitoring",)], ids=["stack-root", "own-component"]
)
def test_a_pinned_chart_is_the_platforms_whatever_its_name_namespace_or_parents(
    analyze: Analyze, parents: tuple[str, ...]
) -> None:
    # What the chart runs is the chart's at its version: a program names a release and picks
    # its namespace as freely as its parents, so none of them moves a verdict.
    release = prometheus_stack_release(parents, name="metrics", namespace="observability")

    verdicts = analyze(release, config={"all": "mandatory"})

    assert rollback_verdicts(verdicts) == without_rollback(
        "kube-prometheus-stack", "mandatory", "platform-release-rollback"
    )
    assert messages(verdicts, VISIBLE) == []


PRIVILEGED_DAEMONSET = {
    "apiVersion": "apps/v1",
    "kind": "DaemonSet",
    "metadata": {"name": "node-shell", "namespace": "kube-system"},
    "spec": {
        "selector": {"matchLabels": {"app": "node-shell"}},
        "template": {
            "metadata": {"labels": {"app": "node-shell"}},
            "spec": {
                "containers": [
                    {
                        "name": "shell",
                        "image": "busybox",
                        "securityContext": {"privileged": True},
                        "volumeMounts": [{"name": "root", "mountPath": "/host"}],
                    }
                ],
                "volumes": [{"name": "root", "hostPath": {"path": "/"}}],
            },
        },
    },
}


@pytest.mark.parametrize(
    ("inputs", "found"),
    [
        # cluster-autoscaler 9.59.0 renders each extraObjects entry as a manifest of its own
        # (charts/cluster-autoscaler/templates/extra-manifests.yaml, values.yaml `extraObjects`).
        ({"values": {"extraObjects": [PRIVILEGED_DAEMONSET]}}, "values.extraObjects[0]"),
        # A value the platform's release of the chart never sets, here kube-prometheus-stack
        # 93.4.1's, is the stack's whatever it holds (test_platform_values.py has the rest).
        (
            {"values": {"prometheus-node-exporter": {"extraManifests": ["kind: DaemonSet"]}}},
            "values.prometheus-node-exporter",
        ),
        # kube-prometheus-stack templates/extra-objects.yaml also takes a map of manifests.
        (
            {"values": {"extraManifests": {"shell": PRIVILEGED_DAEMONSET}}},
            "values.extraManifests",
        ),
        (
            {"values": {"alertmanager": {"extraResources": [PRIVILEGED_DAEMONSET]}}},
            "values.alertmanager",
        ),
        # pulumi-kubernetes 4.34.2 helm/v3 Release: "Postrender command to run".
        ({"postrender": "/bin/add-a-daemonset"}, "postrender"),
        ({"valueYamlFiles": [{"path": "values.yaml"}]}, "valueYamlFiles"),
    ],
    ids=[
        "extraObjects",
        "subchart-extraManifests",
        "extraManifests-map",
        "extraResources",
        "postrender",
        "valueYamlFiles",
    ],
)
def test_a_pinned_chart_running_more_than_its_templates_is_the_stacks_own(
    analyze: Analyze, inputs: dict[str, Any], found: str
) -> None:
    release = autoscaler_release(**inputs)

    verdicts = analyze(release, config={"all": "mandatory"})

    assert [(p, level) for p, level, _ in rollback_verdicts(verdicts)] == [
        ("helm-release-rollback", "mandatory")
    ] * 4
    assert messages(verdicts, VISIBLE) == [
        'chart "cluster-autoscaler" is installed as a helm.v3.Release, whose workloads the '
        "policies never see: Helm creates them, not Pulumi, so no Pod Security or GPU rule "
        "checks them. It installs the platform's chart at its version, but "
        f"{found} make it run what the platform's own release does not, so it is not the "
        "platform's; without them it would be. Fix: install it with helm.v4.Chart, which "
        "registers every object it renders as a resource the policies check, or add "
        '"https://kubernetes.github.io/autoscaler/cluster-autoscaler" to reviewedCharts once '
        "its workloads are reviewed another way."
    ]


# What the provider's Check adds to a Release's inputs before the pack sees them in a real
# preview: every field of its Release struct, the unset ones at their zero value
# (pulumi-kubernetes v4.32.0 provider/pkg/provider/helm_release.go, `NewPropertyMap(newRelease)`
# in Check; here the struct's fields the platform never sets).
CHECKED_ZERO_INPUTS = {
    "allowNullValues": False,
    "dependencyUpdate": False,
    "description": "",
    "devel": False,
    "disableCRDHooks": False,
    "disableWebhooks": False,
    "forceUpdate": False,
    "keyring": "",
    "lint": False,
    "postrender": "",
    "recreatePods": False,
    "renderSubchartNotes": False,
    "replace": False,
    "resetValues": False,
    "reuseValues": False,
    "verify": False,
    "manifest": None,
    "status": None,
}


def test_inputs_at_their_zero_value_leave_a_release_the_platforms(analyze: Analyze) -> None:
    verdicts = analyze(autoscaler_release(**ROLLS_BACK, **CHECKED_ZERO_INPUTS))

    assert rollback_verdicts(verdicts) == []
    assert messages(verdicts, VISIBLE) == []


@pytest.mark.parametrize(
    ("change", "platforms"),
    [
        ({}, True),
        ({"kind": "Secret"}, False),
        ({"data": {"metrics": '{{ "x" }}'}}, False),
        ({"metadata": {"name": "aws-auth", "namespace": "kube-system"}}, False),
    ],
    ids=["platforms-own", "secret", "template-expression", "other-name"],
)
def test_only_the_platforms_own_extra_object_keeps_the_operator_the_platforms(
    analyze: Analyze, change: dict[str, Any], platforms: bool
) -> None:
    # The one object the platform gives the GPU Operator chart
    # (gpu_platform/kubernetes/operator_values.py, dcgm_metrics_config_map).
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "gpu-platform-dcgm-metrics-0123456789", "namespace": "gpu-operator"},
        "data": {"metrics": "DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization (in %).\n"},
    }
    release = gpu_operator_release()
    release.inputs["values"] = {"extraObjects": [{**config_map, **change}]}

    verdicts = analyze(release, config={"all": "mandatory"})

    assert bool(messages(verdicts, VISIBLE)) is not platforms


def mirrored_operator(version: str = "v26.7.0") -> Any:
    release = gpu_operator_release()
    release.inputs["repositoryOpts"] = {"repo": "https://charts.example.com/nvidia"}
    release.inputs["version"] = version
    del release.inputs["atomic"]
    return release


DECLARED = {"platform-release-rollback": {"platformReleases": [MIRROR_ENTRY]}}


def test_a_release_the_policy_config_declares_is_the_platforms(analyze: Analyze) -> None:
    # A mirror in operator.repository, declared by whoever owns the stack's policy config.
    verdicts = analyze(mirrored_operator(), config={"all": "mandatory", **DECLARED})

    assert [(p, level) for p, level, _ in rollback_verdicts(verdicts)] == [
        ("platform-release-rollback", "mandatory")
    ]
    assert messages(verdicts, VISIBLE) == []


def test_a_declared_release_at_another_version_is_not_the_declared_one(analyze: Analyze) -> None:
    verdicts = analyze(mirrored_operator("v26.3.0"), config={"all": "mandatory", **DECLARED})

    assert [p for p, _, _ in rollback_verdicts(verdicts)] == ["helm-release-rollback"]
    assert messages(verdicts, VISIBLE) == [
        'chart "gpu-operator" is installed as a helm.v3.Release, whose workloads the policies '
        "never see: Helm creates them, not Pulumi, so no Pod Security or GPU rule checks them. "
        "Fix: install it with helm.v4.Chart, which registers every object it renders as a "
        'resource the policies check, or add "https://charts.example.com/nvidia/gpu-operator" '
        "to reviewedCharts once its workloads are reviewed another way; where a setting of the "
        "stack (operator.repository, operator.chartVersion) installs the platform's own release "
        "so, off its pin, declare it in the stack's policy config: add "
        '"https://charts.example.com/nvidia/gpu-operator@v26.3.0" to '
        "platform-release-rollback's platformReleases."
    ]


@pytest.mark.parametrize(
    ("release", "settings"),
    [
        (lambda: autoscaler_release(version="9.58.0"), "autoscaler.chartVersion"),
        (lambda: mirrored_operator(), "operator.repository"),
    ],
    ids=["trial-version", "mirror"],
)
def test_an_undeclared_move_names_the_setting_that_moved_it(
    analyze: Analyze, release: Any, settings: str
) -> None:
    (message,) = messages(analyze(release()), VISIBLE)

    assert f"where a setting of the stack ({settings}) installs the platform's own" in message


def test_a_lookalike_no_setting_could_install_is_not_told_to_declare_itself(
    analyze: Analyze,
) -> None:
    # karpenter.chartVersion moves the version, never the registry.
    lookalike = chart(chart="oci://registry.example.com/anyone/karpenter", repositoryOpts={})

    (message,) = messages(analyze(lookalike), VISIBLE)

    assert "platformReleases" not in message


@pytest.mark.parametrize(
    "entry",
    [
        "https://charts.example.com/nvidia/gpu-operator",
        "https://charts.example.com/nvidia/gpu-operator@^26.0.0",
        "gpu-operator@v26.7.0",
        "http://charts.example.com/nvidia/gpu-operator@v26.7.0",
        "https://charts.example.com/ingress-nginx@4.11.3",
    ],
    ids=["no-version", "range", "no-repository", "plain-http", "not-a-platform-chart"],
)
def test_a_declared_release_must_be_one_platform_chart_at_one_version(
    policy_pack: PolicyPack, entry: str
) -> None:
    # The engine checks each policy's config against its schema (pulumi
    # pkg/resource/analyzer/config.go, validatePolicyConfig); so does the offline plan.
    with pytest.raises(PolicyConfigError) as refused:
        reconcile_config(
            policy_pack.policies, {"platform-release-rollback": {"platformReleases": [entry]}}
        )

    (problem,) = refused.value.problems
    assert problem.startswith(f"platform-release-rollback.platformReleases.0: {entry!r} does not")


def test_a_forged_platform_parent_changes_no_verdict(analyze: Analyze) -> None:
    # pulumi sdk/go/common/resource/urn.go: a URN's type path is the types its parents were
    # registered with, which a program chooses: `gpu-platform:mine:Anything` is one.
    inputs = {
        "name": "root-daemonset",
        "chart": "oci://registry.example.com/charts/root-daemonset",
        "version": "1.0.0",
        "namespace": "gpu-operator",
    }
    forged = resource(RELEASE, "root", inputs, parents=("gpu-platform:mine:Anything",))
    plain = resource(RELEASE, "root", inputs)

    def judged(release: Any) -> list[tuple[str, str, str]]:
        return sorted(
            (v.policy_name, v.enforcement_level, v.message)
            for v in analyze(release, config={"all": "mandatory"})
        )

    assert judged(forged) == judged(plain)
    assert [p for p, _, _ in judged(forged)] == [
        "helm-release-rollback",
        "helm-release-rollback",
        "helm-release-rollback",
        "helm-release-rollback",
        VISIBLE,
    ]


def test_the_platforms_release_table_is_what_the_platform_pins() -> None:
    table = {(r.name, r.repository, r.version) for r in PLATFORM_RELEASES}
    pinned = {
        (chart.name, chart.repository, chart.version)
        for chart in (
            versions.GPU_OPERATOR_CHART,
            versions.EFA_DEVICE_PLUGIN_CHART,
            versions.DRA_DRIVER_CHART,
            versions.KUBE_PROMETHEUS_STACK_CHART,
            versions.CLUSTER_AUTOSCALER_CHART,
            versions.KARPENTER_CHART,
            versions.KARPENTER_CRD_CHART,
            versions.KUEUE_CHART,
        )
    }

    assert table == pinned


def test_a_zero_timeout_and_an_unlimited_history_are_reported(analyze: Analyze) -> None:
    release = autoscaler_release(**{**ROLLS_BACK, "timeout": 0, "maxHistory": 0})

    assert messages(analyze(release), "platform-release-rollback") == [
        'chart "cluster-autoscaler" has timeout 0, not a number of seconds above 0. Fix: set '
        "timeout to the seconds its workloads need to become ready.",
        'chart "cluster-autoscaler" keeps every revision of its release (maxHistory 0), each a '
        "Secret in its namespace, piling up with every upgrade. Fix: set maxHistory, such as 10.",
    ]


def test_a_timeout_not_known_at_preview_skips_only_its_own_check(analyze: Analyze) -> None:
    release = autoscaler_release(**{**ROLLS_BACK, "timeout": UNKNOWN, "atomic": False})

    assert messages(analyze(release), "platform-release-rollback") == [
        'chart "cluster-autoscaler" is released without atomic, so a failed upgrade leaves the '
        "release on the half-applied new revision, not on the last one that worked, and a failed "
        "install stays installed. Fix: set atomic: true."
    ]


@pytest.mark.parametrize("stack", STACKS)
def test_every_release_the_platform_installs_is_held_to_the_mandatory_rule(
    analyze: Analyze, stack: str
) -> None:
    releases = [r for r in shared_plan(stack).resources if r.type == RELEASE]
    for release in releases:
        del release.inputs["atomic"]

    verdicts = analyze(*releases)

    assert sorted(
        (v.urn, v.enforcement_level)
        for v in verdicts
        if v.policy_name == "platform-release-rollback"
    ) == sorted((r.urn, "mandatory") for r in releases)
