"""The chart values the platform's releases set (gpu_platform/policy_pack/platform_values.py):
the table holds every key path the program sets and no other, and a release of a pinned chart
setting anything else is the stack's own."""

import copy
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

from gpu_platform.kubernetes.chart_images.prometheus_stack import PINNED
from gpu_platform.kubernetes.chart_keys import chart_components
from gpu_platform.kubernetes.gpu_operator import RELEASE_NAME
from gpu_platform.offline.program import Plan
from gpu_platform.policy_pack.platform_values import PLATFORM_VALUES, KeyPath, matching
from gpu_platform.versions import GPU_OPERATOR_CHART
from tests.conftest import Config, dev_stack_config, gke_stack_config
from tests.gpu_platform.policy_pack.builders import (
    RELEASE,
    ROLLS_BACK,
    Analyze,
    gpu_operator_release,
    messages,
    resource,
)
from tests.repository import STACKS
from tests.shared_plans import shared_plan
from tests.stack_variants import with_atomic_pool

VISIBLE = "helm-release-workloads-visible"
PROD = {"all": "mandatory"}


def _chart(release: Any) -> str:
    return str(release.inputs["chart"]).rsplit("/", 1)[-1]


def _key_paths(values: Any, path: KeyPath = ()) -> Iterator[tuple[KeyPath, Any]]:
    """(key path, value) of each leaf of a values tree: a scalar, a list, an empty map."""
    if isinstance(values, Mapping) and values:
        for key, value in values.items():
            yield from _key_paths(value, (*path, key))
    elif path:
        yield path, values


def _releases(plan: Plan) -> list[Any]:
    return [r for r in plan.resources if r.type == RELEASE]


def _every_optional_release(dev: Config) -> list[Config]:
    """Configs beside the committed stacks that turn on what they leave off: GKE Ubuntu (the
    operator's per-pool drivers) with the Prometheus stack moved, and EKS with the Prometheus
    stack, an EFA pool, the priority expander and a pool that scales up atomically (the
    autoscaler's `enable-provisioning-requests`)."""
    ubuntu = gke_stack_config(copy.deepcopy(dev))
    ubuntu["gpu-platform:cluster"]["nodeImage"] = "ubuntu"
    ubuntu["gpu-platform:pools"][0]["sharing"] = {"mode": "exclusive"}
    ubuntu["gpu-platform:monitoring"] = {"installPrometheusStack": True, "namespace": "metrics"}
    eks = with_atomic_pool(dev)
    eks["gpu-platform:monitoring"] = {"installPrometheusStack": True}
    eks["gpu-platform:autoscaler"] = {"expander": "priority"}
    return [ubuntu, eks]


@pytest.fixture(scope="module")
def planned(shared_plan_for: Callable[[Config], Plan]) -> list[Any]:
    plans = [shared_plan(stack) for stack in STACKS]
    plans += [shared_plan_for(config) for config in _every_optional_release(dev_stack_config())]
    return [release for plan in plans for release in _releases(plan)]


def test_every_value_the_program_sets_is_in_its_charts_table(planned: list[Any]) -> None:
    outside = sorted(
        (_chart(release), path)
        for release in planned
        for path, _ in _key_paths(release.inputs.get("values", {}))
        if not PLATFORM_VALUES[_chart(release)].sets(path)
    )

    assert outside == []


def test_every_value_the_program_sets_is_one_its_path_allows(planned: list[Any]) -> None:
    # The constraints are no stricter than the program: each value it sets, at each path.
    refused = sorted(
        (_chart(release), path, str(value))
        for release in planned
        for path, value in _key_paths(release.inputs.get("values", {}))
        if not PLATFORM_VALUES[_chart(release)]
        .allowed(path)
        .holds(value, release.inputs.get("namespace"))
    )

    assert refused == []


def test_the_table_holds_no_path_the_program_never_sets(planned: list[Any]) -> None:
    set_ = {
        (_chart(release), path)
        for release in planned
        for path, _ in _key_paths(release.inputs.get("values", {}))
    }
    # The Prometheus stack's digests, set where the lock holds one (no lock in the tests).
    set_ |= {("kube-prometheus-stack", (*p.path.split("."), p.key)) for p in PINNED}

    assert {
        (chart, path) for chart, table in PLATFORM_VALUES.items() for path in table.paths
    } <= set_


def test_the_operators_components_are_the_pinned_charts() -> None:
    # Every top-level component `operator.overrides` may name (the config loader checks names
    # against the pinned chart's key list, gpu_platform/kubernetes/chart_keys/).
    assert PLATFORM_VALUES["gpu-operator"].components == chart_components(
        GPU_OPERATOR_CHART.version
    )


def test_the_platforms_releases_of_every_config_are_its_own(
    analyze: Analyze, planned: list[Any]
) -> None:
    assert messages(analyze(*planned, config=PROD), VISIBLE) == []


def autoscaler(values: Mapping[str, Any]) -> Any:
    """cluster-autoscaler 9.59.0 from its pinned repository, as a stack's program may release
    it, with the platform's image and `values` beside it."""
    return resource(
        RELEASE,
        "autoscaler",
        {
            "chart": "cluster-autoscaler",
            "version": "9.59.0",
            "repositoryOpts": {"repo": "https://kubernetes.github.io/autoscaler"},
            **ROLLS_BACK,
            "values": {
                "image": {"repository": "registry.k8s.io/autoscaling/cluster-autoscaler"},
                **values,
            },
        },
    )


def prometheus_stack(values: Mapping[str, Any]) -> Any:
    return resource(
        RELEASE,
        "metrics",
        {
            "chart": "kube-prometheus-stack",
            "version": "93.4.1",
            "repositoryOpts": {"repo": "https://prometheus-community.github.io/helm-charts"},
            "namespace": "monitoring",
            **ROLLS_BACK,
            "values": values,
        },
    )


def foreign(found: str) -> str:
    return (
        "It installs the platform's chart at its version, but "
        f"{found} make it run what the platform's own release does not"
    )


# The one object the platform gives a chart, the GPU Operator's
# (gpu_platform/kubernetes/operator_values.py, dcgm_metrics_config_map).
METRICS_CONFIG_MAP = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "gpu-platform-dcgm-metrics-0123456789", "namespace": "kube-system"},
    "data": {"metrics": "DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization (in %).\n"},
}
PRIVILEGED_CONTAINER = {
    "name": "shell",
    "image": "busybox",
    "securityContext": {"privileged": True},
}


@pytest.mark.parametrize(
    ("release", "found"),
    [
        # cluster-autoscaler 9.59.0 values.yaml `initContainers`, `hostNetwork`,
        # `extraVolumes`, `image.repository`, `resources`, rendered by
        # charts/cluster-autoscaler/templates/deployment.yaml into its Deployment.
        (autoscaler({"initContainers": [PRIVILEGED_CONTAINER]}), "values.initContainers"),
        (autoscaler({"hostNetwork": True}), "values.hostNetwork"),
        # The GPU Operator's object is the platform's in that chart's values alone.
        (autoscaler({"extraObjects": [METRICS_CONFIG_MAP]}), "values.extraObjects[0]"),
        (
            autoscaler({"extraVolumes": [{"name": "root", "hostPath": {"path": "/"}}]}),
            "values.extraVolumes",
        ),
        (
            autoscaler({"image": {"repository": "evil/x"}}),
            "values.image.repository (the platform's release sets only \"registry.k8s.io/"
            'autoscaling/cluster-autoscaler")',
        ),
        (
            autoscaler({"resources": {"limits": {"nvidia.com/gpu": 64}}}),
            'values.resources.limits["nvidia.com/gpu"]',
        ),
        # prometheus-node-exporter (kube-prometheus-stack 93.4.1's subchart) renders its
        # objects in `namespaceOverride` where set (templates/_helpers.tpl,
        # `prometheus-node-exporter.namespace`); kube-state-metrics likewise.
        (
            prometheus_stack({"kube-state-metrics": {"namespaceOverride": "kube-system"}}),
            "values.kube-state-metrics.namespaceOverride",
        ),
        (prometheus_stack({"namespaceOverride": "kube-system"}), "values.namespaceOverride"),
        (
            prometheus_stack(
                {
                    "prometheus-node-exporter": {
                        "namespaceOverride": "monitoring-node-exporter",
                        "image": {"repository": "evil/x"},
                    }
                }
            ),
            "values.prometheus-node-exporter.image.repository",
        ),
        (
            prometheus_stack({"prometheus-node-exporter": {"extraManifests": ["kind: Pod"]}}),
            "values.prometheus-node-exporter.extraManifests[0]",
        ),
    ],
    ids=[
        "initContainers",
        "hostNetwork",
        "operators-object",
        "hostPath-extraVolumes",
        "image-repository",
        "gpus",
        "subchart-namespaceOverride",
        "namespaceOverride",
        "node-exporter-image",
        "subchart-extraManifests",
    ],
)
def test_a_pinned_chart_with_values_the_platform_does_not_set_is_the_stacks_own(
    analyze: Analyze, release: Any, found: str
) -> None:
    (message,) = messages(analyze(release, config=PROD), VISIBLE)

    assert foreign(found) in message


# A second container, privileged, as a line break in a value the chart writes unescaped makes
# one: cluster-autoscaler 9.59.0 templates/deployment.yaml renders the container list's
# `image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"` (line 63) and
# `- --{{ $key }}={{ $value }}` for each of `extraArgs` (line 138), at this indentation.
INJECTED = (
    "\n        - name: evil\n          image: evil/x\n          securityContext: {privileged: true}"
)
DIGEST = "@sha256:" + "0" * 64


def karpenter(values: Mapping[str, Any]) -> Any:
    return resource(
        RELEASE,
        "karpenter",
        {
            "chart": "oci://public.ecr.aws/karpenter/karpenter",
            "version": "1.14.1",
            **ROLLS_BACK,
            "values": values,
        },
    )


@pytest.mark.parametrize(
    ("release", "found"),
    [
        (
            autoscaler({"extraArgs": {"expander": f"priority{INJECTED}"}}),
            "values.extraArgs.expander (the platform's release sets one of priority,least-waste, "
            "least-waste, most-pods, random)",
        ),
        # Ending in a digest, as the platform's own tag does (`<tag>@sha256:<digest>`).
        (
            autoscaler(
                {"image": {"tag": f'v1.35.2"{INJECTED}\n          workingDir: "/x{DIGEST}'}}
            ),
            "values.image.tag (the platform's release sets an image tag, @sha256:<digest> after "
            "it)",
        ),
        # Karpenter 1.14.1 charts/karpenter/templates/_helpers.tpl `karpenter.controller.image`
        # writes the tag unquoted into the Deployment's `image:`.
        (
            karpenter({"controller": {"image": {"tag": f"1.14.1{INJECTED}"}}}),
            "values.controller.image.tag (the platform's release sets an image tag, "
            "@sha256:<digest> after it)",
        ),
        # The same templates' `securityContext` and `containerSecurityContext` (toYaml): the
        # platform's values are the restricted ones (gpu_platform/eks/cluster_autoscaler.py).
        (
            autoscaler({"securityContext": {"runAsUser": 0}}),
            "values.securityContext.runAsUser (the platform's release sets only 65534)",
        ),
        (
            autoscaler({"securityContext": {"seccompProfile": {"type": "Unconfined"}}}),
            "values.securityContext.seccompProfile.type (the platform's release sets only "
            '"RuntimeDefault")',
        ),
        (
            autoscaler({"containerSecurityContext": {"allowPrivilegeEscalation": True}}),
            "values.containerSecurityContext.allowPrivilegeEscalation (the platform's release "
            "sets only false)",
        ),
        (
            autoscaler({"containerSecurityContext": {"capabilities": {"drop": []}}}),
            "values.containerSecurityContext.capabilities.drop (the platform's release sets "
            'only ["ALL"])',
        ),
        # prometheus-node-exporter (kube-prometheus-stack 93.4.1's subchart)
        # templates/_helpers.tpl `prometheus-node-exporter.namespace`: its DaemonSet, on the
        # host's network and PID namespace, lands in `namespaceOverride`.
        (
            prometheus_stack({"prometheus-node-exporter": {"namespaceOverride": "kube-system"}}),
            "values.prometheus-node-exporter.namespaceOverride (the platform's release sets the "
            "namespace the platform gives node-exporter: the release's own namespace followed "
            "by -node-exporter)",
        ),
    ],
    ids=[
        "expander-injection",
        "tag-injection-ending-in-a-digest",
        "karpenter-tag-injection",
        "runAsUser-0",
        "seccomp-Unconfined",
        "allowPrivilegeEscalation",
        "capabilities-kept",
        "node-exporter-in-kube-system",
    ],
)
def test_a_value_the_platform_never_sets_at_its_path_makes_the_release_the_stacks(
    analyze: Analyze, release: Any, found: str
) -> None:
    (message,) = messages(analyze(release, config=PROD), VISIBLE)

    assert foreign(found) in message


@pytest.mark.parametrize(
    "value",
    ["a\nb", "a\rb", "a\x85b", "a\u2028b", "a\u2029b", 'a"b', "a\\", "a{{ .Values.x }}b", "a---b"],
)
def test_no_pattern_lets_a_value_write_yaml_of_its_own(value: str) -> None:
    # Whatever a path's pattern, a line break, a quote, a template or a document marker is
    # refused: the charts write the value unescaped (UNSAFE_TEXT's comment has the lines).
    assert not matching(r".+", "any line").holds(value, "monitoring")


NODE_LABELS = (
    "nodes=[gpu-platform.io/validation,gpu-platform.io/validation-failed-check,"
    "gpu-platform.io/validated-driver,gpu-platform.io/validated-release,gpu-platform.io/pool]"
)


@pytest.mark.parametrize(
    "team", ["namespaces=[team],pods=[*]", "namespaces=[team] --v=10", "namespaces=[*]"]
)
def test_a_kube_state_metrics_allowlist_entry_of_more_than_one_label_is_the_stacks(
    analyze: Analyze, team: str
) -> None:
    # The kube-state-metrics chart joins the entries unquoted into one argument: an entry that
    # closes its label list opens another resource's, or another flag.
    release = prometheus_stack(
        {"kube-state-metrics": {"metricLabelsAllowlist": [NODE_LABELS, team]}}
    )

    (message,) = messages(analyze(release, config=PROD), VISIBLE)

    assert "kube-state-metrics.metricLabelsAllowlist" in message


def test_the_platforms_own_values_of_a_pinned_chart_leave_it_the_platforms(
    analyze: Analyze,
) -> None:
    # kube-prometheus-stack with node-exporter in the namespace the platform gives it
    # (gpu_platform/kubernetes/monitoring.py, `prometheus_stack_values`).
    release = prometheus_stack(
        {"prometheus-node-exporter": {"namespaceOverride": "monitoring-node-exporter"}}
    )

    assert messages(analyze(release, autoscaler({}), config=PROD), VISIBLE) == []


@pytest.mark.parametrize(
    ("values", "platforms"),
    [
        # What `operator.overrides` may merge in: any key of a top-level component.
        ({"driver": {"repository": "registry.example.com/nvidia"}}, True),
        ({"toolkit": {"env": [{"name": "CONTAINERD_SOCKET", "value": "/run/c.sock"}]}}, True),
        # node-feature-discovery 0.19.0 (the operator's subchart) values.yaml `namespaceOverride`.
        ({"node-feature-discovery": {"namespaceOverride": "kube-system"}}, False),
        ({"hostNetwork": True}, False),
        # v26.7.0 templates/clusterpolicy.yaml writes `repository: {{ .Values.driver.repository
        # }}` unquoted at an indentation of 4: the line break ends the scalar and the rest is
        # the driver's own `image`.
        ({"driver": {"repository": "nvcr.io/nvidia\n    image: evil/driver"}}, False),
        ({"operator": {"imagePullSecrets": ['a"\n      - name: b']}}, False),
        # ... and renders `toolkit.env` (`env: {{ toYaml .Values.toolkit.env | nindent 6 }}`)
        # and, in templates/plugin_config.yaml, `devicePlugin.config.data` with toYaml.
        ({"toolkit": {"env": [{"name": "A", "value": 'x\n"y"\n---'}]}}, True),
        ({"devicePlugin": {"config": {"data": {"a": "version: v1\nflags: {}\n"}}}}, True),
    ],
    ids=[
        "driver-repository",
        "toolkit-env",
        "nfd-namespaceOverride",
        "top-level-key",
        "driver-repository-line-break",
        "range-rendered-list",
        "to-yaml-env",
        "device-plugin-configs",
    ],
)
def test_the_operators_values_are_its_components(
    analyze: Analyze, values: dict[str, Any], platforms: bool
) -> None:
    release = gpu_operator_release()
    release.inputs["values"] = values

    assert bool(messages(analyze(release, config=PROD), VISIBLE)) is not platforms


def test_a_line_break_in_an_operator_scalar_is_judged_by_its_key(analyze: Analyze) -> None:
    release = gpu_operator_release()
    release.inputs["values"] = {"driver": {"repository": "nvcr.io/nvidia\n    image: evil/x"}}

    (message,) = messages(analyze(release, config=PROD), VISIBLE)

    assert (
        "but values.driver.repository (the platform's release sets no line break, '\"', '\\',"
        " '{{' or '---' where the chart writes the value into its YAML as it is (any key but"
        " those it renders with toYaml)) make it run what the platform's own release does not"
    ) in message


def test_the_operators_toyaml_paths_are_the_pinned_charts() -> None:
    # The list is derived from the chart version gpu_platform/versions.py pins.
    assert GPU_OPERATOR_CHART.version == "v26.7.0"
    assert ("driver", "env") in PLATFORM_VALUES["gpu-operator"].whole
    assert ("driver", "repository") not in PLATFORM_VALUES["gpu-operator"].whole


def test_the_operators_release_name_is_the_one_the_platform_gives_it() -> None:
    assert PLATFORM_VALUES["gpu-operator"].release == RELEASE_NAME


@pytest.mark.parametrize(
    ("name", "namespace"),
    [("my-operator", "gpu-operator"), ("gpu-operator", "team-a")],
    ids=["another-name", "another-namespace"],
)
def test_a_stacks_own_operator_release_has_no_component_taken_wholesale(
    analyze: Analyze, name: str, namespace: str
) -> None:
    # The chart's ClusterRole `gpu-operator` (v26.7.0 templates/clusterrole.yaml) goes to
    # whichever release installs first: a stack's own release of the chart, named and placed
    # otherwise than the platform's, is judged by the table's key paths like any chart.
    release = gpu_operator_release()
    release.inputs.update(
        name=name, namespace=namespace, values={"driver": {"repository": "evil.example.com"}}
    )

    (message,) = messages(analyze(release, config=PROD), VISIBLE)

    assert foreign("values.driver") in message


# go-yaml's `is_break` (the libyaml port Helm and Kubernetes parse with) breaks a line at NEL,
# LS and PS as well as at CR and LF: gpu-operator v26.7.0 templates/operator.yaml writes
# `priorityClassName: {{ .Values.operator.priorityClassName }}` unquoted, so what follows any of
# them is YAML of the value's own.
@pytest.mark.parametrize("line_break", ["\r", "\x85", "\u2028", "\u2029"])
def test_any_line_break_yaml_knows_in_an_operator_scalar_makes_the_release_the_stacks(
    analyze: Analyze, line_break: str
) -> None:
    release = gpu_operator_release()
    injected = line_break.join(["system-node-critical", "      hostPID: true"])
    release.inputs["values"] = {"operator": {"priorityClassName": injected}}

    (message,) = messages(analyze(release, config=PROD), VISIBLE)

    assert "values.operator.priorityClassName" in message


@pytest.mark.parametrize("line_break", ["\r", "\x85", "\u2028", "\u2029"])
def test_a_line_break_other_than_lf_in_the_expander_priorities_is_the_stacks(
    analyze: Analyze, line_break: str
) -> None:
    # cluster-autoscaler 9.59.0 templates/priority-expander-configmap.yaml writes it with
    # `indent 4`, which indents after "\n" alone: any other line break ends the block scalar.
    release = autoscaler({"expanderPriorities": f"10:\n  - .*{line_break}  evil: key"})

    (message,) = messages(analyze(release, config=PROD), VISIBLE)

    assert "values.expanderPriorities" in message


def test_a_pinned_chart_released_without_openapi_validation_is_the_stacks(
    analyze: Analyze,
) -> None:
    release = autoscaler({})
    release.inputs["disableOpenapiValidation"] = True

    (message,) = messages(analyze(release, config=PROD), VISIBLE)

    assert foreign("disableOpenapiValidation") in message


@pytest.mark.parametrize("setting", ["takeOwnership", "reuseValues", "disableOpenapiValidation"])
def test_an_operator_release_not_named_as_the_platforms_with_a_helm_switch_is_the_stacks(
    analyze: Analyze, setting: str
) -> None:
    # takeOwnership: Helm's pkg/action/validate.go (requireAdoption) adopts the ClusterRole,
    # ClusterRoleBinding and ClusterPolicy gpu-operator v26.7.0 names whatever the release
    # (templates/clusterrole.yaml, clusterrolebinding.yaml, clusterpolicy.yaml); reuseValues:
    # Helm's upgrade renders the last revision's stored values under the ones sent.
    release = gpu_operator_release()
    release.inputs.update({"name": "other", "namespace": "team-a", setting: True})

    (message,) = messages(analyze(release, config=PROD), VISIBLE)

    assert setting in message


@pytest.mark.parametrize(
    "release",
    [gpu_operator_release, lambda: karpenter({"settings": {"clusterName": "gpu-dev"}})],
    ids=["gpu-operator", "karpenter"],
)
def test_a_platform_named_release_adopting_objects_is_the_stacks(
    analyze: Analyze, release: Callable[[], Any]
) -> None:
    # The platform's own name and namespace: Helm's pkg/action/validate.go (requireAdoption)
    # adopts whatever object of the chart's names exists, whoever owns it.
    adopting = release()
    adopting.inputs["takeOwnership"] = True

    (message,) = messages(analyze(adopting, config=PROD), VISIBLE)

    assert foreign("takeOwnership") in message


def test_a_release_creating_its_namespace_is_the_stacks(analyze: Analyze) -> None:
    # Helm creates the namespace with no Pod Security labels, where privileged pods are admitted.
    release = gpu_operator_release()
    release.inputs["createNamespace"] = True

    (message,) = messages(analyze(release, config=PROD), VISIBLE)

    assert foreign("createNamespace") in message


@pytest.mark.parametrize("values", [{}, None], ids=["empty", "absent"])
def test_a_release_sending_no_values_is_the_stacks(
    analyze: Analyze, values: dict[str, Any] | None
) -> None:
    # Helm v3 pkg/action/upgrade.go (reuseValues): with no values sent, the upgrade renders
    # the last revision's stored ones whole.
    release = autoscaler({})
    release.inputs["values"] = values

    (message,) = messages(analyze(release, config=PROD), VISIBLE)

    assert foreign("values (none sent)") in message


# The inputs of helm.v3.Release (pulumi-kubernetes 4.34.2, pulumi_kubernetes/helm/v3/
# _inputs.py ReleaseArgs) that the platform sets.
PLATFORM_RELEASE_INPUTS = {
    "chart", "version", "repositoryOpts", "name", "namespace", "values", "atomic",
    "cleanupOnFail", "timeout", "maxHistory", "skipAwait", "waitForJobs", "compat", "skipCrds",
    "createNamespace", "disableOpenapiValidation",
}  # fmt: skip


def test_every_release_input_the_program_sets_is_allowed(
    analyze: Analyze, planned: list[Any]
) -> None:
    # Every input of every release the program plans is one of the platform's, so the list
    # cannot fall behind the program; and each is the platform's with all of them set.
    assert {key for release in planned for key in release.inputs} <= PLATFORM_RELEASE_INPUTS
    assert {key for release in planned for key in release.inputs} >= {
        "createNamespace",
        "disableOpenapiValidation",
        "skipCrds",
        "compat",
    }
    assert messages(analyze(*planned, config=PROD), VISIBLE) == []
