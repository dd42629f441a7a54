"""A Kubernetes provider from the local kubeconfig, for clusters reached that way."""

import pulumi_kubernetes as k8s

from components.cloud import ClusterConnection


def connect_with_kubeconfig_context(context: str) -> ClusterConnection:
    """Reach the cluster through `context` of the kubeconfig the deployer already has.

    The kubeconfig stays on the deployer's machine, so there is none to export.
    """
    provider = k8s.Provider(
        "kubernetes",
        context=context,
        # Server-side apply lets the GPU Operator and Helm share fields without conflicts.
        enable_server_side_apply=True,
    )
    return ClusterConnection(provider, kubeconfig=None)
