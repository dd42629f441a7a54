"""On a cluster the platform creates (eks-new), every custom resource it applies has its CRD by
the time `pulumi up` applies it, installed by a Helm release of the same plan: a new EKS cluster
has no CRDs of these groups. The offline plan cannot ask an API server, so a missing CRD would
only show as "no matches for kind" after the VPC, cluster and nodes exist.

The kinds each chart installs, at the pins (gpu_platform/versions.py):
- kube-prometheus-stack 93.4.1: `charts/kube-prometheus-stack/charts/crds/crds/crd-*.yaml`
  (prometheus-community/helm-charts), group `monitoring.coreos.com`;
- gpu-operator v26.7.0: `deployments/gpu-operator/crds/` (NVIDIA/gpu-operator), `nvidia.com`;
- karpenter-crd 1.14.1: `charts/karpenter-crd/templates/` (kubernetes-sigs/karpenter and
  aws/karpenter-provider-aws), `karpenter.sh` and `karpenter.k8s.aws`.
"""

from typing import Any

import pytest

from gpu_platform.cli.offline import Plan, run_program
from tests.repository import PROJECT
from tests.test_kubernetes_schemas import is_custom_resource, kubernetes_objects, manifest

from .test_new_cluster import eks_new, on_karpenter

CHART_KINDS: dict[str, set[tuple[str, str]]] = {
    "kube-prometheus-stack": {
        ("monitoring.coreos.com", kind)
        for kind in (
            "Alertmanager",
            "AlertmanagerConfig",
            "PodMonitor",
            "Probe",
            "Prometheus",
            "PrometheusAgent",
            "PrometheusRule",
            "ScrapeConfig",
            "ServiceMonitor",
            "ThanosRuler",
        )
    },
    "gpu-operator": {("nvidia.com", "ClusterPolicy"), ("nvidia.com", "NVIDIADriver")},
    "karpenter-crd": {
        ("karpenter.sh", "NodePool"),
        ("karpenter.sh", "NodeClaim"),
        ("karpenter.k8s.aws", "EC2NodeClass"),
    },
}
RELEASE = "kubernetes:helm.sh/v3:Release"


def installed_kinds(plan: Plan) -> set[tuple[str, str]]:
    kinds: set[tuple[str, str]] = set()
    for release in plan.of_type(RELEASE):
        kinds |= CHART_KINDS.get(release.inputs["chart"].rpartition("/")[2], set())
    return kinds


def required_kinds(plan: Plan) -> set[tuple[str, str]]:
    """The custom kinds the plan applies, itself or through a chart's values (the GPU
    Operator's DCGM exporter ServiceMonitor)."""
    required = set()
    for resource in kubernetes_objects(plan):
        obj = manifest(resource)
        if is_custom_resource(obj["apiVersion"]):
            required.add((obj["apiVersion"].rpartition("/")[0], obj["kind"]))
    for release in plan.of_type(RELEASE):
        values: dict[str, Any] = release.inputs.get("values", {})
        if values.get("dcgmExporter", {}).get("serviceMonitor", {}).get("enabled"):
            required.add(("monitoring.coreos.com", "ServiceMonitor"))
    return required


@pytest.mark.parametrize("provisioner", ["cluster-autoscaler", "karpenter"])
def test_every_custom_resource_has_its_crd_installed_in_the_same_plan(provisioner: str) -> None:
    config = eks_new()
    if provisioner == "karpenter":
        on_karpenter(config)
    plan = run_program("eks-new", config=config, project=PROJECT)
    required = required_kinds(plan)

    assert ("monitoring.coreos.com", "PrometheusRule") in required
    assert required - installed_kinds(plan) == set()
