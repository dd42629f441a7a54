"""Every Helm release the platform installs, in every stack's plan, undoes a failed install or
upgrade by itself: `atomic`, `cleanupOnFail`, a timeout sized for what it installs and a bounded
history (pulumi-kubernetes v4.34 provider/pkg/provider/helm_release.go: unset, `maxHistory` is
0, no limit, and `timeout` 300 s). A release with a DaemonSet rolls it a quarter of its nodes at
a time, and waits longer the more nodes it can run on."""

import copy
from functools import cache
from typing import Any

import kubernetes_validate
import pytest

from gpu_platform import versions
from gpu_platform.kubernetes.helm_release import daemonset_update_strategy
from gpu_platform.kubernetes.operator_values import deep_merge
from gpu_platform.offline.program import Plan, run_program
from gpu_platform.stack_files import stack_config
from gpu_platform.versions import HelmChart
from tests.repository import PROJECT, STACKS
from tests.shared_plans import shared_plan

RELEASE = "kubernetes:helm.sh/v3:Release"

# Each stack's releases by chart name, with the wait each gets. A release with a DaemonSet waits
# a base and 5 s more for each node the DaemonSet can run on, as many as the pools it runs on
# have at their `max`, at most 3600 s (gpu_platform/kubernetes/helm_release.py):
# - gpu-operator: 900 s + node-feature-discovery's worker on every GPU node: dev 3 (t4-shared),
#   dra-dev 3 (l4), prod 5 (h100-training 2, a100-inference 2, a100-canary 1), gke-dev 3
#   (l4-shared), karpenter-dev 9 (h100-block 2, l4-reserved 2, t4-spot 3, l4-on-demand 2),
#   auto-dev 4 (l4-reserved 2, l40s 2);
# - aws-efa-k8s-device-plugin: 300 s + its DaemonSet on the EFA pools' nodes: prod 2
#   (h100-training), karpenter-dev 2 (h100-block);
# - kube-prometheus-stack: 900 s + node-exporter on every GPU node: gke-dev 3, eks-new 2 (l4),
#   gke-new 2, dra-dev 3 (l4);
# - kueue: 300 s, one Deployment on the cluster's own nodes: dev, gke-dev;
# - nvidia-dra-driver-gpu: 300 s + its kubelet plugin on the DRA pools' nodes: dra-dev 3 (l4).
RELEASES = {
    "dev": {"gpu-operator": 915, "cluster-autoscaler": 300, "kueue": 300},
    "auto-dev": {"gpu-operator": 920},
    "eks-new": {"gpu-operator": 910, "cluster-autoscaler": 300, "kube-prometheus-stack": 910},
    "dra-dev": {
        "gpu-operator": 915,
        "cluster-autoscaler": 300,
        "kube-prometheus-stack": 915,
        "nvidia-dra-driver-gpu": 315,
    },
    "prod": {"gpu-operator": 925, "cluster-autoscaler": 300, "aws-efa-k8s-device-plugin": 310},
    "gke-dev": {"gpu-operator": 915, "kube-prometheus-stack": 915, "kueue": 300},
    "gke-new": {"gpu-operator": 910, "kube-prometheus-stack": 910},
    "karpenter-dev": {
        "gpu-operator": 945,
        "karpenter": 300,
        "karpenter-crd": 120,
        "aws-efa-k8s-device-plugin": 310,
    },
}


def chart_name(chart: str) -> str:
    """`karpenter` from `oci://public.ecr.aws/karpenter/karpenter`."""
    return chart.rsplit("/", 1)[-1]


def releases(plan: Plan) -> dict[str, dict[str, Any]]:
    """The plan's releases' inputs by chart name."""
    return {chart_name(r.inputs["chart"]): r.inputs for r in plan.resources if r.type == RELEASE}


@cache
def stack_releases(stack: str) -> dict[str, dict[str, Any]]:
    """The stack's releases' inputs by chart name, planned once: tests read them only."""
    return releases(shared_plan(stack))


@pytest.mark.parametrize("stack", STACKS)
def test_every_release_rolls_a_failed_upgrade_back_by_itself(stack: str) -> None:
    assert {
        chart: (
            inputs.get("atomic"),
            inputs.get("cleanupOnFail"),
            inputs.get("timeout"),
            inputs.get("maxHistory"),
        )
        for chart, inputs in stack_releases(stack).items()
    } == {chart: (True, True, timeout, 10) for chart, timeout in RELEASES[stack].items()}


def test_the_stacks_between_them_install_every_pinned_chart() -> None:
    pinned = {v.name for v in vars(versions).values() if isinstance(v, HelmChart)}

    assert set(RELEASES) == set(STACKS)
    assert {chart for charts in RELEASES.values() for chart in charts} == pinned


def with_pool_max(stack: str, pool: str, most: int) -> dict[str, Any]:
    """The stack's config with one pool's `max` raised."""
    config = copy.deepcopy(stack_config(stack, PROJECT))
    next(p for p in config["gpu-platform:pools"] if p["name"] == pool)["max"] = most
    return config


@pytest.mark.parametrize(
    ("stack", "pool", "most", "timeouts"),
    [
        # EFA: 300 + 5 x 400; the operator: 900 + 5 x 403 (400 + 2 + 1 GPU nodes).
        (
            "prod",
            "h100-training",
            400,
            {"gpu-operator": 2915, "cluster-autoscaler": 300, "aws-efa-k8s-device-plugin": 2300},
        ),
        # 900 + 5 x 1000 for both, over the 3600 s ceiling.
        (
            "gke-dev",
            "l4-shared",
            1000,
            {"gpu-operator": 3600, "kube-prometheus-stack": 3600, "kueue": 300},
        ),
    ],
    ids=["prod-400-efa-nodes", "gke-dev-1000-nodes"],
)
def test_a_large_fleet_waits_longer_up_to_an_hour(
    stack: str, pool: str, most: int, timeouts: dict[str, int]
) -> None:
    plan = run_program(stack, config=with_pool_max(stack, pool, most), project=PROJECT)

    assert {chart: inputs["timeout"] for chart, inputs in releases(plan).items()} == timeouts


# Where each release's values set its DaemonSet's updateStrategy.
STRATEGIES = {
    "gpu-operator": ("node-feature-discovery", "worker", "updateStrategy"),
    "aws-efa-k8s-device-plugin": ("updateStrategy",),
    "kube-prometheus-stack": ("prometheus-node-exporter", "updateStrategy"),
}
QUARTER_AT_A_TIME = {"rollingUpdate": {"maxUnavailable": "25%"}}


@pytest.mark.parametrize("stack", ["prod", "gke-dev"])
def test_every_daemonset_a_release_waits_for_rolls_a_quarter_of_its_nodes_at_a_time(
    stack: str,
) -> None:
    # Helm v3.21 pkg/kube/ready.go, daemonSetReady: a DaemonSet is ready once its new pod is on
    # every node and ready on all but maxUnavailable of them; at the charts' default of 1 one
    # NotReady node fails both the upgrade and its rollback (pkg/action/upgrade.go,
    # failRelease: the rollback waits, with the same timeout).
    found = stack_releases(stack)

    strategies = {}
    for chart, path in STRATEGIES.items():
        if chart in found:
            value: Any = found[chart]["values"]
            for key in path:
                value = value[key]
            strategies[chart] = value

    assert (
        strategies
        == {
            "prod": {
                "gpu-operator": QUARTER_AT_A_TIME,
                "aws-efa-k8s-device-plugin": QUARTER_AT_A_TIME,
            },
            "gke-dev": {
                "gpu-operator": QUARTER_AT_A_TIME,
                "kube-prometheus-stack": QUARTER_AT_A_TIME,
            },
        }[stack]
    )


def daemonset(strategy: dict[str, Any]) -> dict[str, Any]:
    labels = {"app": "agent"}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent"},
        "spec": {
            "selector": {"matchLabels": labels},
            "updateStrategy": strategy,
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "agent", "image": "registry.example.com/a:1"}]},
            },
        },
    }


# Each chart's own `updateStrategy`, which Helm merges the platform's over: aws/eks-charts
# stable/aws-efa-k8s-device-plugin v0.5.30 values.yaml (rendered whole by templates/
# daemonset.yaml), prometheus-community prometheus-node-exporter 4.56.1 values.yaml, and
# node-feature-discovery 0.19.0 values.yaml `worker.updateStrategy`, as the GPU Operator
# v26.7.0 chart bundles it (without a type: Kubernetes defaults it to RollingUpdate).
@pytest.mark.parametrize(
    ("chart_default", "rendered"),
    [
        (
            {"type": "RollingUpdate"},
            {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%"}},
        ),
        (
            {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
            {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%"}},
        ),
        (
            {"rollingUpdate": {"maxUnavailable": "10%"}},
            {"rollingUpdate": {"maxUnavailable": "25%"}},
        ),
    ],
    ids=["efa-device-plugin", "node-exporter", "nfd-worker"],
)
@pytest.mark.parametrize("minor", versions.SUPPORTED_KUBERNETES_VERSIONS)
def test_the_strategy_over_each_charts_default_is_a_daemonsets(
    chart_default: dict[str, Any], rendered: dict[str, Any], minor: str
) -> None:
    merged = deep_merge(chart_default, daemonset_update_strategy())

    assert merged == rendered
    kubernetes_validate.validate(daemonset(merged), f"{minor}.0", strict=True)
