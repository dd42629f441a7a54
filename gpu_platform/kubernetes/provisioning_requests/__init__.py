"""The cluster autoscaler's ProvisioningRequest API on EKS, which Kueue's provisioning admission
check creates requests of (`gpu_platform.kubernetes.kueue_provisioning`).

The `cluster-autoscaler` chart grants the autoscaler `provisioningrequests` and `podtemplates`
(templates/clusterrole.yaml, chart 9.59.0) but installs no CRD, and Kueue's chart installs none
of the autoscaler's either: the CRD here is
cluster-autoscaler/apis/config/crd/autoscaling.x-k8s.io_provisioningrequests.yaml at tag
cluster-autoscaler-1.36.1, whose schemas are those of 1.33.6, 1.34.5 and 1.35.2 (the four differ
in descriptions and controller-gen's version only), so it serves every pinned autoscaler.
GKE serves the API itself.
"""

from pathlib import Path
from typing import Any

import pulumi
import yaml
from pulumi_kubernetes import apiextensions

CRD_FILE = Path(__file__).parent / "autoscaling.x-k8s.io_provisioningrequests.yaml"


def provisioning_request_crd_manifest() -> dict[str, Any]:
    """The committed CRD."""
    manifest: dict[str, Any] = yaml.safe_load(CRD_FILE.read_text())
    return manifest


def provisioning_request_crd(name: str, opts: pulumi.ResourceOptions) -> pulumi.Resource:
    """The CRD as a resource of the stack, created once the API server serves it."""
    manifest = provisioning_request_crd_manifest()
    # Kueue looks the API up once, at its manager's start, which the CRD's creation triggers
    # (`ServerSupportsProvisioningRequest`, pkg/controller/admissionchecks/provisioning/
    # indexer.go at v0.19.2). pulumi-kubernetes has no awaiter of its own for a CRD and, unless
    # told, waits for nothing (provider/pkg/metadata/overrides.go `ReadyCondition`,
    # provider/pkg/await/awaiters.go): this makes it wait for `Established`.
    annotations = manifest["metadata"].setdefault("annotations", {})
    annotations["pulumi.com/waitFor"] = "condition=Established"
    return apiextensions.v1.CustomResourceDefinition(
        name, metadata=manifest["metadata"], spec=manifest["spec"], opts=opts
    )
