"""What a program tells `GpuPlatform` about its cluster instead of letting it look the cluster up.

Attached to an existing cluster, the platform looks it up by the name in the settings
(`cluster.name`) before anything is registered. A program that creates its cluster itself
(`aws.eks.Cluster`, pulumi-eks `eks.Cluster`, `gcp.container.Cluster`) has nothing to look up
on its first `pulumi preview`: the cluster does not exist yet, and its endpoint and CA are
unknown. It gives the platform the cluster's facts instead, `GpuPlatformArgs(cluster_facts=...)`,
and no lookup of the cluster runs.

The facts come in two kinds. Those that only flow into resource properties (the name as a
node group or node pool names its cluster, the endpoint and CA the Kubernetes provider reaches
it through, the security group, the VPC) are Pulumi Inputs: the cluster's outputs, and through
them every resource that takes one waits for the cluster. Those that shape the resources (the
Kubernetes version, which decides node images and drivers; the node subnets' zones, one node
group per zone) must be known before anything is created, and are given plainly and validated
like the settings, each problem naming its argument.
"""

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import pulumi

from gpu_platform.config import Cloud, ConfigProblem, StackConfig
from gpu_platform.versions import SUPPORTED_KUBERNETES_VERSIONS

ARGUMENT = "GpuPlatformArgs.cluster_facts"
"""How problems name the facts: as the program passes them."""

# EC2 subnet ids (the config's `SubnetId`), and zones of the cluster's region: `us-east-1a`, or
# a Local Zone's `us-east-1-bos-1a`.
_SUBNET_ID = re.compile(r"^subnet-([0-9a-f]{8}|[0-9a-f]{17})$")
_ZONE_SUFFIX = re.compile(r"^([a-z]|-[a-z0-9-]+[a-z])$")
# What GKE reports as a cluster's `currentMasterVersion` (`1.33.5-gke.1162000`), or the minor
# a cluster is created at.
_GKE_VERSION = re.compile(r"^([0-9]+\.[0-9]+)(\.[0-9]+-gke\.[0-9]+)?$")
# GKE's ReleaseChannel.Channel values (container.v1 discovery document), UNSPECIFIED aside.
GKE_RELEASE_CHANNELS = ("RAPID", "REGULAR", "STABLE", "EXTENDED")


@dataclass(frozen=True)
class EksClusterFacts:
    """An EKS cluster the program creates or knows, as `GpuPlatform` would otherwise look it up
    (`aws eks describe-cluster`): given, nothing about the cluster is looked up.

    From `aws.eks.Cluster` (docs/library.md shows a program): `name`, `endpoint`,
    `certificate_authority.data`, `vpc_config.cluster_security_group_id` and `vpc_config.vpc_id`.
    """

    name: pulumi.Input[str]
    """The cluster's name, as node groups, Pod Identity associations and add-ons name their
    cluster: they wait for it through this. It must be the settings' `cluster.name`, which
    the platform's own names (IAM roles, tags, node labels) take before anything exists."""
    endpoint: pulumi.Input[str]
    """The API server's URL (`https://...`), for the Kubernetes provider the platform makes."""
    certificate_authority: pulumi.Input[str]
    """The cluster's CA, base64 PEM (`certificateAuthority.data`)."""
    security_group_id: pulumi.Input[str]
    """The cluster security group EKS creates (`vpcConfig.clusterSecurityGroupId`), which
    Karpenter's and EFA nodes join to reach the control plane."""
    vpc_id: pulumi.Input[str]
    """The cluster's VPC (`vpcConfig.vpcId`), which the platform's IAM roles are bound to."""
    kubernetes_version: str
    """The cluster's Kubernetes version, `major.minor` (`1.35`): it picks the node AMIs, their
    drivers and the autoscaler's release, so it is given plainly."""
    node_subnets: Mapping[str, str]
    """The private subnets for the GPU nodes, each id with its zone (`{"subnet-...":
    "us-east-1a"}`): a node group per zone, so given plainly. They exist already, and are
    looked up as the settings' `cluster.nodeSubnetIds` are: a public one (its route table
    sending traffic to an internet gateway) or a zone other than EC2's is refused."""


@dataclass(frozen=True)
class GkeClusterFacts:
    """A GKE Standard cluster the program creates or knows, with Workload Identity Federation
    for GKE on, as `GpuPlatform` would otherwise look it up: given, nothing about the cluster
    is looked up.

    From `gcp.container.Cluster` (docs/library.md shows a program): `name`, `endpoint` and
    `master_auth.cluster_ca_certificate`.
    """

    name: pulumi.Input[str]
    """The cluster's name (or id), as the GPU node pools name their cluster: they wait for it
    through this. Its name must be the settings' `cluster.name`, which the pools' own names
    take before anything exists."""
    endpoint: pulumi.Input[str]
    """The API server's address (`endpoint`, an IP without a scheme), for the Kubernetes
    provider the platform makes."""
    ca_certificate: pulumi.Input[str]
    """The cluster's CA, base64 PEM (`masterAuth.clusterCaCertificate`)."""
    kubernetes_version: str
    """The version the control plane and new node pools run: a minor (`1.33`) or GKE's full
    version (`1.33.5-gke.1162000`). It picks the nodes' driver, so it is given plainly."""
    release_channel: str | None = "REGULAR"
    """The release channel the cluster is enrolled in (`RAPID`, `REGULAR`, `STABLE`,
    `EXTENDED`), None for none: on a channel GKE keeps node auto-upgrade on."""


ClusterFacts = EksClusterFacts | GkeClusterFacts


def cluster_facts_problems(facts: ClusterFacts, config: StackConfig) -> Iterator[ConfigProblem]:
    """What is wrong with the facts, or with them beside these settings."""
    expected = EksClusterFacts if config.cloud is Cloud.AWS else GkeClusterFacts
    if not isinstance(facts, expected):
        yield ConfigProblem(
            ARGUMENT,
            type(facts).__name__,
            f"{expected.__name__}, the facts of a cluster on the settings' cloud"
            f" ({config.cloud.value})",
        )
        return
    yield from own_problems(facts)
    if config.cluster.create is not None:
        yield ConfigProblem(
            ARGUMENT,
            type(facts).__name__,
            "no facts where the settings ask the platform to create the cluster"
            " (`cluster.create`): it knows what it creates",
        )
    if isinstance(facts.name, str) and facts.name != config.cluster.name:
        yield ConfigProblem(
            f"{ARGUMENT}.name",
            facts.name,
            f"{config.cluster.name}, the settings' cluster.name, which the platform's own names"
            " take",
        )
    if isinstance(facts, EksClusterFacts):
        yield from _eks_subnet_problems(facts, config)


def own_problems(facts: ClusterFacts) -> Iterator[ConfigProblem]:
    """What is wrong with the facts whatever the settings: reported beside the settings' own
    problems, in the same round."""
    if isinstance(facts, GkeClusterFacts):
        yield from _gke_problems(facts)
        return
    if facts.kubernetes_version not in SUPPORTED_KUBERNETES_VERSIONS:
        yield ConfigProblem(
            f"{ARGUMENT}.kubernetes_version",
            facts.kubernetes_version,
            "one of the Kubernetes versions the platform supports: "
            + ", ".join(SUPPORTED_KUBERNETES_VERSIONS),
        )
    if not isinstance(facts.node_subnets, Mapping) or not facts.node_subnets:
        yield ConfigProblem(
            f"{ARGUMENT}.node_subnets",
            facts.node_subnets,
            "at least one private subnet for the GPU nodes, each id with its zone"
            ' ({"subnet-0a1b2c3d4e5f60017": "us-east-1a"})',
        )
        return
    for subnet_id in facts.node_subnets:
        if not isinstance(subnet_id, str) or not _SUBNET_ID.match(subnet_id):
            yield ConfigProblem(
                f"{ARGUMENT}.node_subnets",
                subnet_id,
                "a subnet id known before anything is created (`subnet-` and 8 or 17 hex digits)",
            )


def _eks_subnet_problems(facts: EksClusterFacts, config: StackConfig) -> Iterator[ConfigProblem]:
    if config.cluster.node_subnet_ids:
        yield ConfigProblem(
            f"{ARGUMENT}.node_subnets",
            facts.node_subnets,
            "the node subnets in one place: the facts' node_subnets, or the settings'"
            " cluster.nodeSubnetIds, not both",
        )
    if not isinstance(facts.node_subnets, Mapping):
        return
    region = config.cluster.region or ""
    for subnet_id, zone in facts.node_subnets.items():
        if not isinstance(zone, str) or not (
            zone.startswith(region) and _ZONE_SUFFIX.match(zone.removeprefix(region))
        ):
            yield ConfigProblem(
                f"{ARGUMENT}.node_subnets[{subnet_id!r}]",
                zone,
                f"a zone of {region}, the settings' cluster.region ({region}a, say)",
            )


def _gke_problems(facts: GkeClusterFacts) -> Iterator[ConfigProblem]:
    version = facts.kubernetes_version
    found = _GKE_VERSION.match(version) if isinstance(version, str) else None
    if found is None or found.group(1) not in SUPPORTED_KUBERNETES_VERSIONS:
        yield ConfigProblem(
            f"{ARGUMENT}.kubernetes_version",
            version,
            "a minor the platform supports ("
            + ", ".join(SUPPORTED_KUBERNETES_VERSIONS)
            + ") or GKE's full version of one (1.33.5-gke.1162000)",
        )
    if facts.release_channel is not None and facts.release_channel not in GKE_RELEASE_CHANNELS:
        yield ConfigProblem(
            f"{ARGUMENT}.release_channel",
            facts.release_channel,
            f"one of {', '.join(GKE_RELEASE_CHANNELS)}, or None for no channel",
        )
