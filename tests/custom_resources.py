"""What a plan applies of custom resources, and which of their CRDs its Helm releases install:
for the tests that a cluster the platform creates, which has no CRDs of these groups, gets every
CRD by the time `pulumi up` applies the objects. The offline plan cannot ask an API server, so a
missing CRD would only show as "no matches for kind" after the cluster exists.

The kinds each chart installs, at the pins (gpu_platform/versions.py):
- kube-prometheus-stack 93.4.1: `charts/kube-prometheus-stack/charts/crds/crds/crd-*.yaml`
  (prometheus-community/helm-charts), group `monitoring.coreos.com`;
- gpu-operator v26.7.0: `deployments/gpu-operator/crds/` (NVIDIA/gpu-operator), `nvidia.com`;
- karpenter-crd 1.14.1: `charts/karpenter-crd/templates/` (kubernetes-sigs/karpenter and
  aws/karpenter-provider-aws), `karpenter.sh` and `karpenter.k8s.aws`;
- kueue 0.19.2: `charts/kueue/templates/crd/` (kubernetes-sigs/kueue), `kueue.x-k8s.io`.
"""

from typing import Any

from gpu_platform.offline.program import Plan
from tests.kubernetes_schemas import is_custom_resource, kubernetes_objects, manifest

Kind = tuple[str, str]
"""A custom resource's API group and kind."""
CHART_KINDS: dict[str, set[Kind]] = {
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
    "kueue": {
        ("kueue.x-k8s.io", kind)
        for kind in (
            "AdmissionCheck",
            "ClusterQueue",
            "Cohort",
            "LocalQueue",
            "MultiKueueCluster",
            "MultiKueueConfig",
            "ProvisioningRequestConfig",
            "ResourceFlavor",
            "Topology",
            "WorkloadPriorityClass",
            "Workload",
        )
    },
    "karpenter-crd": {
        ("karpenter.sh", "NodePool"),
        ("karpenter.sh", "NodeClaim"),
        ("karpenter.k8s.aws", "EC2NodeClass"),
    },
}
RELEASE = "kubernetes:helm.sh/v3:Release"


def release_kinds(plan: Plan) -> set[Kind]:
    """The custom kinds the plan's Helm releases install; a chart named by its OCI or repository
    path counts by its last part."""
    kinds: set[Kind] = set()
    for release in plan.of_type(RELEASE):
        kinds |= CHART_KINDS.get(release.inputs["chart"].rpartition("/")[2], set())
    return kinds


def required_kinds(plan: Plan) -> set[Kind]:
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
