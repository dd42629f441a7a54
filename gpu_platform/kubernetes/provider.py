"""How the program reaches a cluster's API: a Kubernetes provider, from a kubeconfig that the
program builds from the cluster it looked up, or from the deployer's own kubeconfig."""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import yaml
from pulumi_kubernetes.provider import Provider

from gpu_platform.instance import part_name


@dataclass(frozen=True)
class ClusterConnection:
    """How the program reaches the cluster's API."""

    provider: pulumi.ProviderResource
    kubeconfig: pulumi.Output[str] | None
    """A secret output (it grants access to the cluster); None where the deployer's own
    kubeconfig is used."""


# The credential plugin protocol that `aws eks get-token` and `gke-gcloud-auth-plugin` speak.
EXEC_API_VERSION = "client.authentication.k8s.io/v1beta1"


def exec_kubeconfig(name: str, server: str, ca_data: str, exec_: Mapping[str, Any]) -> str:
    """A kubeconfig with one cluster, whose user gets its token from a credential plugin.

    It holds no credential itself: the plugin runs on the deployer's machine at each use.
    `ca_data` empty: the server's certificate is checked against the system's trust store.
    """
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": name,
                "cluster": {
                    "server": server,
                    # Empty where the server's certificate is a public CA's (GKE's DNS-based
                    # endpoint): the system's trust store checks it.
                    **({"certificate-authority-data": ca_data} if ca_data else {}),
                },
            }
        ],
        "users": [{"name": name, "user": {"exec": {"apiVersion": EXEC_API_VERSION, **exec_}}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": name,
    }
    return yaml.safe_dump(document, sort_keys=False)


def connect_with_kubeconfig(
    provider_name: str, kubeconfig: pulumi.Input[str], opts: pulumi.ResourceOptions | None = None
) -> ClusterConnection:
    """A provider for the cluster `kubeconfig` describes; the kubeconfig is kept as a secret."""
    secret = pulumi.Output.secret(kubeconfig)
    provider = Provider(
        part_name(provider_name),
        kubeconfig=secret,
        # Server-side apply lets the GPU Operator and Helm share fields without conflicts.
        enable_server_side_apply=True,
        opts=opts,
    )
    return ClusterConnection(provider, kubeconfig=secret)


def connect_with_kubeconfig_context(
    context: str, opts: pulumi.ResourceOptions | None = None
) -> ClusterConnection:
    """Reach the cluster through `context` of the kubeconfig the deployer already has.

    The kubeconfig stays on the deployer's machine, so there is none to export.
    """
    provider = Provider(
        part_name("kubernetes"), context=context, enable_server_side_apply=True, opts=opts
    )
    return ClusterConnection(provider, kubeconfig=None)
