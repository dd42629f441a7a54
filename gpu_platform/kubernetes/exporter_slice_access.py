"""Read access to ResourceSlices for the GPU Operator's DCGM exporter, where a pool uses DRA.

The exporter looks up there the UUID of each GPU a DRA claim holds, to label the GPU's series
with the claiming pod (dcgm-exporter internal/pkg/transformation/dra.go, an informer listing and
watching them); the operator's own ClusterRole for it grants pods alone (gpu-operator v26.7.0
assets/state-dcgm-exporter/0210_clusterrole.yaml: "TODO: Add resourceSlices permissions").

The access exists before the operator's release, and so before any exporter starts: the
exporter builds its ResourceSlice informer once, at startup. At the image the operator pins,
4.6.0-4.8.3 (dcgm-exporter commit 7ad58324, its hack/versions.env), `NewDRAResourceSliceManager`
(internal/pkg/transformation/dra.go) reads `resource.k8s.io/v1`, falling back to v1beta1, and
gives up after 30 s if the informer cannot list them (`resourceSliceCacheSyncTimeout`, "check
RBAC"); `NewPodMapper` (kubernetes.go) then runs on without DRA pod labels for the pod's life,
on nodes a pool's `min` keeps.

gpu-operator after v26.7.0 (NVIDIA/gpu-operator#2697) grants the exporter this rule itself, and
sets `KUBERNETES_ENABLE_DRA`, with `dcgmExporter.enablePodLabels`: when GPU_OPERATOR_CHART moves
past it, this role and the platform's `KUBERNETES_ENABLE_DRA` (operator_values.py) are
redundant, and go.
"""

import pulumi
from pulumi_kubernetes import meta, rbac

DCGM_EXPORTER_SERVICE_ACCOUNT = "nvidia-dcgm-exporter"
"""The service account of the operator's exporter (gpu-operator v26.7.0
assets/state-dcgm-exporter/0800_daemonset.yaml, `serviceAccountName`)."""


def declare_exporter_slice_access(
    name: str, operator_namespace: pulumi.Input[str], parent: pulumi.Resource
) -> rbac.v1.ClusterRoleBinding:
    """The ClusterRole `nvidia-dcgm-exporter-resource-slices` and its binding to the exporter's
    service account in `operator_namespace`; what waits for the binding waits for both."""
    role_name = f"{DCGM_EXPORTER_SERVICE_ACCOUNT}-resource-slices"
    metadata = meta.v1.ObjectMetaArgs(name=role_name)
    role = rbac.v1.ClusterRole(
        f"{name}-exporter-resource-slices",
        metadata=metadata,
        rules=[
            rbac.v1.PolicyRuleArgs(
                api_groups=["resource.k8s.io"],
                resources=["resourceslices"],
                verbs=["get", "list", "watch"],
            )
        ],
        opts=pulumi.ResourceOptions(parent=parent),
    )
    return rbac.v1.ClusterRoleBinding(
        f"{name}-exporter-resource-slices",
        metadata=metadata,
        role_ref=rbac.v1.RoleRefArgs(
            api_group="rbac.authorization.k8s.io", kind="ClusterRole", name=role_name
        ),
        subjects=[
            rbac.v1.SubjectArgs(
                kind="ServiceAccount",
                name=DCGM_EXPORTER_SERVICE_ACCOUNT,
                namespace=operator_namespace,
            )
        ],
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[role]),
    )
