"""Every Helm release the platform installs, in every stack's plan, undoes a failed install or
upgrade by itself: `atomic`, `cleanupOnFail`, a timeout sized for what it installs and a bounded
history (pulumi-kubernetes v4.34 provider/pkg/provider/helm_release.go: unset, `maxHistory` is
0, no limit, and `timeout` 300 s)."""

import pytest

from gpu_platform import versions
from gpu_platform.cli.offline import run_program
from gpu_platform.versions import HelmChart
from tests.repository import STACKS

RELEASE = "kubernetes:helm.sh/v3:Release"

# Each stack's releases by chart name, with the wait each gets (gpu_platform/kubernetes/
# helm_release.py says why each is sized so; the GPU Operator's is `operator.timeoutSeconds`).
RELEASES = {
    "dev": {"gpu-operator": 900, "cluster-autoscaler": 300},
    "prod": {"gpu-operator": 900, "cluster-autoscaler": 300, "aws-efa-k8s-device-plugin": 600},
    "gke-dev": {"gpu-operator": 900, "kube-prometheus-stack": 900},
    "karpenter-dev": {"gpu-operator": 900, "karpenter": 300, "karpenter-crd": 120},
}


def chart_name(chart: str) -> str:
    """`karpenter` from `oci://public.ecr.aws/karpenter/karpenter`."""
    return chart.rsplit("/", 1)[-1]


@pytest.mark.parametrize("stack", STACKS)
def test_every_release_rolls_a_failed_upgrade_back_by_itself(stack: str) -> None:
    releases = [r for r in run_program(stack).resources if r.type == RELEASE]

    assert {
        chart_name(r.inputs["chart"]): (
            r.inputs.get("atomic"),
            r.inputs.get("cleanupOnFail"),
            r.inputs.get("timeout"),
            r.inputs.get("maxHistory"),
        )
        for r in releases
    } == {chart: (True, True, timeout, 10) for chart, timeout in RELEASES[stack].items()}


def test_the_stacks_between_them_install_every_pinned_chart() -> None:
    pinned = {v.name for v in vars(versions).values() if isinstance(v, HelmChart)}

    assert set(RELEASES) == set(STACKS)
    assert {chart for charts in RELEASES.values() for chart in charts} == pinned
