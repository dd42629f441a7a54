"""The GKE Standard cluster a stack runs on, and how the program reaches its API.

An existing cluster is looked up (one the platform creates is planned from the config:
`gpu_platform.gke.new_cluster`): its endpoint and CA give a Kubernetes provider that
authenticates with `gke-gcloud-auth-plugin`, the deployer's own Google credentials, so the
kubeconfig holds no token. It is still exported only as a secret.
"""

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
from pulumi_gcp import container

from gpu_platform.cluster_facts import GkeClusterFacts
from gpu_platform.config import ClusterSpec, ConfigProblem, key_path
from gpu_platform.gke.locations import zone_region
from gpu_platform.instance import lookup_options
from gpu_platform.kubernetes.provider import (
    ClusterConnection,
    connect_with_kubeconfig,
    exec_kubeconfig,
)

POOL_RESOURCE_LABEL = "gpu-platform-pool"
"""Compute Engine label on a pool's VMs and disks, for billing reports per pool; it also finds
the pool among the cluster's node pools."""
AUTH_PLUGIN = "gke-gcloud-auth-plugin"
_AUTH_PLUGIN_INSTALL_HINT = (
    "Install gke-gcloud-auth-plugin (`gcloud components install gke-gcloud-auth-plugin`): "
    "https://cloud.google.com/kubernetes-engine/docs/how-to/cluster-access-for-kubectl"
)


@dataclass(frozen=True)
class GkeCluster:
    """What the platform needs to know about the cluster, as the GKE API reports it."""

    project: str
    location: str
    """A region (regional cluster) or a zone (zonal cluster)."""
    name: str
    endpoint: pulumi.Input[str]
    ca_certificate: pulumi.Input[str]
    """Base64-encoded PEM, as `certificate-authority-data` takes it. Of a cluster the platform
    creates, both are outputs of the created cluster."""
    master_version: str
    autopilot: bool
    workload_pool: str | None
    """`<project>.svc.id.goog` when Workload Identity Federation for GKE is on."""
    release_channel: str | None = None
    """The release channel the cluster is enrolled in (`REGULAR`, ...), None when none: GKE's
    ReleaseChannel (container.v1 discovery document): "When a cluster is subscribed to a release
    channel, Google maintains both the master version and the node version. Node auto-upgrade
    defaults to true and cannot be disabled." Its `UNSPECIFIED` (no channel) is deprecated."""
    pool_versions: Mapping[str, str] = field(default_factory=dict)
    """The GKE version the nodes of each of the platform's existing node pools run, by the
    pool's name in the stack config. An unpinned pool's nodes stay on it until GKE upgrades
    them, after the control plane."""
    exists: bool = True
    """False for a cluster the platform is about to create; its `master_version` is then the
    version it is created at (a minor, where the release channel picks its patch)."""
    name_as_given: pulumi.Input[str] | None = None
    """The name (or id) as the program gave it (`GkeClusterFacts.name`, an output of the
    cluster it creates); None where the platform looked the cluster up or creates it."""

    @property
    def name_input(self) -> pulumi.Input[str]:
        """The name, for the properties that name the cluster (a node pool's `cluster`): given
        as the program's cluster's output, they wait for that cluster through it."""
        return self.name if self.name_as_given is None else self.name_as_given

    @property
    def region(self) -> str:
        return zone_region(self.location) or self.location

    @property
    def is_regional(self) -> bool:
        return self.region == self.location

    @property
    def context_name(self) -> str:
        # The name `gcloud container clusters get-credentials` gives it, so that the exported
        # kubeconfig and the deployer's own name the cluster alike.
        return f"gke_{self.project}_{self.location}_{self.name}"


def lookup_cluster(spec: ClusterSpec) -> GkeCluster:
    """The cluster named in the stack config (`gpu-platform:cluster`)."""
    assert spec.project is not None and spec.location is not None
    # With its node pools: an existing pool's version is what its nodes run, and with it their
    # driver on COS.
    found = container.get_cluster(
        project=spec.project,
        location=spec.location,
        name=spec.name,
        opts=lookup_options("gcp"),
    )
    workload_identity = found.workload_identity_configs
    return GkeCluster(
        project=spec.project,
        location=spec.location,
        name=spec.name,
        endpoint=found.endpoint,
        ca_certificate=found.master_auths[0].cluster_ca_certificate,
        master_version=found.master_version,
        autopilot=bool(found.enable_autopilot),
        workload_pool=(workload_identity[0].workload_pool or None) if workload_identity else None,
        release_channel=release_channel_of(found.release_channels),
        pool_versions={
            config.resource_labels[POOL_RESOURCE_LABEL]: pool.version
            for pool in found.node_pools or []
            for config in pool.node_configs[:1]
            if POOL_RESOURCE_LABEL in (config.resource_labels or {})
        },
    )


def given_cluster(spec: ClusterSpec, facts: GkeClusterFacts) -> GkeCluster:
    """The cluster as the program gave it. Before it exists (a first `pulumi preview` of a
    program creating it), it and its node pools are taken to run the version given. Once it
    does, the versions are read back, as of a cluster the platform creates: GKE upgrades the
    control plane and the pools itself, and the given version, plain, stays what it was."""
    assert spec.project is not None and spec.location is not None
    found = existing_cluster(spec)
    return GkeCluster(
        project=spec.project,
        location=spec.location,
        name=spec.name,
        endpoint=facts.endpoint,
        ca_certificate=facts.ca_certificate,
        master_version=facts.kubernetes_version if found is None else found.master_version,
        autopilot=False,
        workload_pool=f"{spec.project}.svc.id.goog",
        release_channel=facts.release_channel if found is None else found.release_channel,
        pool_versions={} if found is None else found.pool_versions,
        exists=found is not None,
        name_as_given=facts.name,
    )


def release_channel_of(channels: Sequence[Any] | None) -> str | None:
    """The channel `get_cluster` reports, None for no channel (none, or `UNSPECIFIED`)."""
    channel = channels[0].channel if channels else None
    return None if channel in (None, "", "UNSPECIFIED") else str(channel)


def existing_cluster(spec: ClusterSpec) -> GkeCluster | None:
    """The cluster the platform or the program creates, on the runs after the first: GKE
    upgrades its control plane and node pools itself (container.v1 `ReleaseChannel`: "Node
    auto-upgrade defaults to true and cannot be disabled"), so the versions the nodes' drivers
    follow are read back as in attach mode. None before it exists: pulumi-gcp's lookup then
    fails with "projects/<p>/locations/<l>/clusters/<n> not found" (terraform-provider-google
    `datasourceContainerClusterRead`)."""
    try:
        return lookup_cluster(spec)
    except Exception as error:
        if (
            f"projects/{spec.project}/locations/{spec.location}/clusters/{spec.name} not found"
            in str(error)
        ):
            return None
        raise


def cluster_problems(cluster: GkeCluster) -> Iterator[ConfigProblem]:
    """Why the platform cannot attach to this cluster, if it cannot."""
    path = key_path("cluster", "name")
    if cluster.autopilot:
        yield ConfigProblem(
            path,
            cluster.name,
            "a GKE Standard cluster (this one is Autopilot, which manages GPU nodes, drivers"
            " and device plugins itself and does not admit the GPU Operator)",
        )
    elif cluster.workload_pool is None:
        yield ConfigProblem(
            path,
            cluster.name,
            "a cluster with Workload Identity Federation for GKE enabled (the GPU node pools"
            " run the GKE metadata server, which hides the node's credentials from pods):"
            f" gcloud container clusters update {cluster.name} --location {cluster.location}"
            f" --workload-pool {cluster.project}.svc.id.goog",
        )


def kubeconfig_output(cluster: GkeCluster) -> pulumi.Output[str]:
    """`kubeconfig_for`, of a cluster whose endpoint and CA may be outputs (one the platform
    creates)."""
    return pulumi.Output.all(cluster.endpoint, cluster.ca_certificate).apply(
        lambda found: kubeconfig_for(cluster, found[0], found[1])
    )


def kubeconfig_for(
    cluster: GkeCluster, endpoint: str | None = None, ca_certificate: str | None = None
) -> str:
    """A kubeconfig for the cluster that authenticates with the deployer's Google credentials;
    `endpoint` and `ca_certificate` where the cluster's are outputs."""
    return exec_kubeconfig(
        cluster.context_name,
        f"https://{endpoint if endpoint is not None else cluster.endpoint}",
        ca_certificate if ca_certificate is not None else str(cluster.ca_certificate),
        {
            "command": AUTH_PLUGIN,
            "installHint": _AUTH_PLUGIN_INSTALL_HINT,
            "provideClusterInfo": True,
        },
    )


def connect_to(
    cluster: GkeCluster, opts: pulumi.ResourceOptions | None = None
) -> ClusterConnection:
    """A Kubernetes provider for the cluster, and its kubeconfig as a secret."""
    return connect_with_kubeconfig("kubernetes", kubeconfig_output(cluster), opts)
