"""GKE clusters and their node pools, as the platform creates them and as GKE's hardening guide
(https://cloud.google.com/kubernetes-engine/docs/how-to/hardening-your-cluster) and
terraform-google-kubernetes-engine's safer-cluster module have them:

- `gke-node-service-account`: every node pool, and a cluster's default node pool (even one
  removed right after creation, `removeDefaultNodePool`), names a service account of its own;
  never the Compute Engine default account, which holds Editor on the project in many projects.
- `gke-cluster-access`: private nodes, and a control plane reached privately or only from
  authorized networks that are neither the internet nor Google Cloud's public ranges.
- `gke-dns-endpoint` (advisory): the DNS-based endpoint open to traffic from outside Google
  Cloud, which only IAM guards. pulumi-gcp states private nodes, the private endpoint and the
  authorized networks in `privateClusterConfig` and `masterAuthorizedNetworksConfig`, which the
  provider sends as container.v1's `networkConfig.defaultEnablePrivateNodes` and
  `controlPlaneEndpointsConfig.ipEndpointsConfig` (terraform-provider-google
  `expandControlPlaneEndpointsConfig`): the rules read the inputs a program gives.
- `gke-cluster-hardening`: Workload Identity Federation, shielded nodes, no legacy ABAC.
- `gke-cluster-secrets-encryption`: application-layer Secrets encryption with a Cloud KMS key
  (how-to/encrypting-secrets; container.v1 `DatabaseEncryption`: `state` ENCRYPTED and
  `keyName` `projects/*/locations/*/keyRings/*/cryptoKeys/*`), as EKS clusters encrypt theirs
  (`eks-cluster-secrets-encryption`).
- `gke-cluster-upgrades`: in a release channel, where GKE keeps every node pool's auto-upgrade
  on (concepts/release-channels: only a cluster not enrolled in one may turn it off for
  selected node pools), no node pool of the stack's clusters turns auto-upgrade off.
- `gke-node-pool-version`: a node pool that pins `version` is held from GKE's upgrades
  (pulumi-gcp `container.NodePool.version`: "if this field and `auto_upgrade` are both
  specified, they will fight each other"): auto-upgrade off, or, where a release channel keeps
  it on (container.v1 `ReleaseChannel`: node auto-upgrade "defaults to true and cannot be
  disabled"), the node pool's maintenance exclusion until end of support enabled (container.v1
  `NodePool.maintenancePolicy.exclusionUntilEndOfSupport`; pulumi-gcp: "the node pool will not
  be automatically upgraded by GKE until the node pool version's end of support date").
  Judged on the pool's inputs: its outputs always hold the version GKE runs, which a stack
  policy, seeing outputs, would take for a pin. A pool whose inputs ignore changes to
  `maintenancePolicies` (the platform's: the provider cannot update them) and were stored
  without one, created before it was pinned, shows none to the pack whatever GKE holds: the
  rule logs a note and leaves its exclusion to `gpu-platform preflight`.
"""

import re
from collections.abc import Iterator, Sequence
from functools import partial
from typing import Any

import pulumi
from checks import Findings, resource_policy
from gpu_pools import CLUSTER_TYPE, NODE_POOL_TYPE, linked_resource
from networks import WIDEST, wider_than_allowed
from props import Step, any_of, elements, field_path, flag, mapping, shown, text, value_at
from pulumi_policy import (
    EnforcementLevel,
    PolicyResource,
    ReportViolation,
    ResourceValidationArgs,
    StackValidationArgs,
    StackValidationPolicy,
)

DEFAULT_ACCOUNT = re.compile(r"^(default|\d+-compute@developer\.gserviceaccount\.com)$")
"""The Compute Engine default service account, by GKE's name for it or its e-mail."""
NO_CHANNEL = "UNSPECIFIED"
ENCRYPTED = "ENCRYPTED"
UPGRADES = "gke-cluster-upgrades"
PINNED_VERSION = "gke-node-pool-version"
MAINTENANCE_POLICIES = "maintenancePolicies"


def _account_problems(subject: str, node_config: Any, path: Sequence[Step]) -> Iterator[str]:
    account = text(node_config, "serviceAccount")
    field = field_path(*path, "serviceAccount")
    if account is None or DEFAULT_ACCOUNT.match(account):
        yield (
            f"the {subject} runs its nodes as the Compute Engine default service account "
            f"({field}={shown(account)}), which holds broad roles in many projects, so that any "
            "pod that reaches the node's credentials acts with them. Fix: set it to a service "
            "account of the nodes' own holding only roles/container.defaultNodeServiceAccount."
        )


def node_service_account_problems(args: ResourceValidationArgs) -> Iterator[str]:
    props = args.props
    if args.resource_type == NODE_POOL_TYPE:
        yield from _account_problems("node pool", mapping(props, "nodeConfig"), ("nodeConfig",))
        return
    if flag(props, "enableAutopilot") is True:
        return
    pools = elements(props, "nodePools")
    if not pools:
        # The default node pool, which GKE creates with the cluster even where the program
        # removes it at once.
        yield from _account_problems(
            "cluster's default node pool", mapping(props, "nodeConfig"), ("nodeConfig",)
        )
    for index, pool in enumerate(pools):
        yield from _account_problems(
            f"node pool nodePools[{index}]",
            mapping(pool, "nodeConfig"),
            ("nodePools", index, "nodeConfig"),
        )


def private_nodes_problems(args: ResourceValidationArgs) -> Iterator[str]:
    field = ("privateClusterConfig", "enablePrivateNodes")
    if flag(args.props, *field) is not True:
        yield (
            f"the cluster's nodes have external addresses ({field_path(*field)} is not true), "
            "so each node is reachable from the internet as far as its firewall lets it. Fix: "
            "set it to true, and give the nodes Cloud NAT for egress."
        )


def control_plane_problems(args: ResourceValidationArgs) -> Iterator[str]:
    props = args.props
    authorized = mapping(props, "masterAuthorizedNetworksConfig")
    blocks = elements(authorized, "cidrBlocks") if authorized is not None else []
    private = flag(props, "privateClusterConfig", "enablePrivateEndpoint") is True
    # With the IP endpoints off (container.v1 `IPEndpointsConfig.enabled`), the control plane
    # has no address at all: only the DNS-based endpoint, judged by `gke-dns-endpoint`.
    no_ip = flag(props, "controlPlaneEndpointsConfig", "ipEndpointsConfig", "enabled") is False
    if not private and not no_ip and not blocks:
        yield (
            "the cluster's public endpoint answers every address (no "
            "masterAuthorizedNetworksConfig.cidrBlocks), so the API server is one stolen "
            "credential away from anyone. Fix: set privateClusterConfig.enablePrivateEndpoint "
            "to true, or list the deployers' ranges in masterAuthorizedNetworksConfig."
        )
    for index, block in enumerate(blocks):
        cidr = value_at(block, "cidrBlock")
        if wider_than_allowed(cidr):
            yield (
                f"masterAuthorizedNetworksConfig.cidrBlocks[{index}] is {cidr}, wider than "
                f"{WIDEST}: the whole internet, or a share of it no deployer needs. Fix: "
                "list only the deployers' and CI runners' ranges."
            )
    if authorized is not None and flag(authorized, "gcpPublicCidrsAccessEnabled") is True:
        yield (
            "masterAuthorizedNetworksConfig.gcpPublicCidrsAccessEnabled is true: every Compute "
            "Engine VM, anyone's, reaches the control plane. Fix: set it to false."
        )


def dns_endpoint_problems(args: ResourceValidationArgs) -> Iterator[str]:
    field = ("controlPlaneEndpointsConfig", "dnsEndpointConfig", "allowExternalTraffic")
    if flag(args.props, *field) is True:
        yield (
            f"the control plane's DNS-based endpoint takes traffic from anywhere "
            f"({field_path(*field)}=true): no network rule stands between the internet and the "
            "API server, only IAM (container.clusters.connect) and RBAC. Keep it where the "
            "deployers have no route into the network; otherwise set it to false and reach "
            "the IP endpoint."
        )


def hardening_problems(args: ResourceValidationArgs) -> Iterator[str]:
    props = args.props
    if not text(props, "workloadIdentityConfig", "workloadPool"):
        yield (
            "the cluster has no Workload Identity (workloadIdentityConfig.workloadPool), so pods "
            "that need Google APIs use the node's service account. Fix: set it to "
            '"<project>.svc.id.goog".'
        )
    if flag(props, "enableShieldedNodes") is False:
        yield (
            "the cluster turns shielded nodes off (enableShieldedNodes=false), so a node's "
            "identity is not verified when it joins. Fix: set it to true."
        )
    if flag(props, "enableLegacyAbac") is True:
        yield (
            "the cluster turns legacy ABAC on (enableLegacyAbac=true), which grants rights "
            "outside RBAC. Fix: set it to false."
        )


def secrets_encryption_problems(args: ResourceValidationArgs) -> Iterator[str]:
    state = text(args.props, "databaseEncryption", "state")
    key = text(args.props, "databaseEncryption", "keyName")
    if state != ENCRYPTED or not key:
        yield (
            "the GKE cluster does not encrypt Secrets with a Cloud KMS key of its own "
            f"(databaseEncryption.state={shown(state)}, keyName={shown(key)}), so a copy of the "
            "cluster's database holds them under Google's default encryption only. Fix: set "
            'databaseEncryption to {state: "ENCRYPTED", keyName: "projects/<project>/locations/'
            "<the cluster's region>/keyRings/<ring>/cryptoKeys/<key>\"}, a key the GKE service "
            "agent may encrypt and decrypt with."
        )


# --- node pools of a cluster in a release channel -------------------------------------------


def in_release_channel(cluster: PolicyResource) -> bool:
    """GKE enrolls a new cluster that names no channel in REGULAR."""
    return text(cluster.props, "releaseChannel", "channel") != NO_CHANNEL


def pinned_pool_problems(pool: PolicyResource, cluster: PolicyResource) -> Iterator[str]:
    channel = text(cluster.props, "releaseChannel", "channel") or "REGULAR (GKE's default)"
    subject = f'node pool "{pool.name}" of cluster "{cluster.name}", which is in release channel'
    if flag(pool.props, "management", "autoUpgrade") is False:
        yield (
            f"{subject} {channel}, turns auto-upgrade off (management.autoUpgrade=false), which "
            "GKE keeps on in every node pool of a cluster in a release channel. Fix: create the "
            'cluster with releaseChannel.channel "UNSPECIFIED" to pin node pools, or hold node '
            "upgrades back with a maintenance exclusion of scope NO_MINOR_OR_NODE_UPGRADES."
        )


def _held_until_end_of_support(pool: Any) -> bool:
    """Whether the pool's maintenance exclusion until end of support is enabled: pulumi-gcp
    states container.v1's one `maintenancePolicy.exclusionUntilEndOfSupport` as lists of at most
    one."""
    exclusions = [
        exclusion
        for policy in elements(pool, "maintenancePolicies")
        for exclusion in elements(policy, "exclusionUntilEndOfSupports")
    ]
    return any_of(exclusions, lambda exclusion: flag(exclusion, "enabled") is True)


def version_fight_problems(args: ResourceValidationArgs) -> Iterator[str]:
    props = args.props
    version = text(props, "version")
    if version is None or flag(props, "management", "autoUpgrade") is False:
        return
    if MAINTENANCE_POLICIES not in props and MAINTENANCE_POLICIES in args.opts.ignore_changes:
        # The engine puts an ignored input of an existing resource back to its stored value
        # before the analyzers see it (pulumi/pulumi v3.259.0 pkg/resource/deploy/
        # step_generator.go, generateSteps: processIgnoreChanges, then Analyze), and deletes
        # one the stored inputs lack (sdk/go/common/resource/properties_path.go, Reset). A pool
        # created unpinned and pinned later shows no maintenance policy here, whatever GKE
        # holds for it.
        pulumi.log.info(
            f'policy "{PINNED_VERSION}" cannot see the maintenance exclusion of {args.urn}, '
            f"pinned to {shown(version)} with auto-upgrade on: its inputs ignore changes to "
            f"{MAINTENANCE_POLICIES} and those stored when it was created have none. "
            "`gpu-platform preflight` checks the exclusion of the pool GKE runs."
        )
        return
    if not _held_until_end_of_support(props):
        yield (
            f"the node pool pins version {shown(version)} while auto-upgrade is on "
            "(management.autoUpgrade is not false) and no maintenance exclusion holds it "
            "(maintenancePolicies[0].exclusionUntilEndOfSupports[0].enabled is not true): the "
            "two fight over the nodes' version. Fix: remove the version; or on a cluster in a "
            "release channel, where auto-upgrade stays on, enable the node pool's exclusion "
            "until end of support; or turn auto-upgrade off on a cluster in no release channel "
            '(releaseChannel.channel "UNSPECIFIED").'
        )


def validate_upgrades(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    clusters = [r for r in args.resources if r.resource_type == CLUSTER_TYPE]
    pools = [r for r in args.resources if r.resource_type == NODE_POOL_TYPE]
    with Findings(UPGRADES, "the stack", report_violation) as findings:
        for pool in pools:
            what = f"the cluster of {pool.urn}"
            cluster = findings.known(what, partial(_cluster_of, pool, clusters))
            if cluster is None or not findings.known(what, partial(in_release_channel, cluster)):
                continue
            findings.check(what, partial(pinned_pool_problems, pool, cluster), urn=pool.urn)


def _cluster_of(pool: PolicyResource, clusters: Sequence[PolicyResource]) -> PolicyResource | None:
    """The cluster the pool joins: the one its `cluster` input is computed from, else the one
    of that name."""
    return linked_resource(pool, ("cluster",), CLUSTER_TYPE, clusters, ("name",))


POLICIES = [
    resource_policy(
        "gke-node-service-account",
        "GKE node pools, and a cluster's default node pool, run as a service account of their "
        "own, never the Compute Engine default one.",
        node_service_account_problems,
        resource_types=(NODE_POOL_TYPE, CLUSTER_TYPE),
    ),
    resource_policy(
        "gke-cluster-access",
        "GKE clusters have private nodes, and a control plane reached privately or only from "
        "authorized networks.",
        (private_nodes_problems, control_plane_problems),
        resource_types=(CLUSTER_TYPE,),
    ),
    resource_policy(
        "gke-dns-endpoint",
        "A GKE cluster's DNS-based control-plane endpoint taking traffic from outside Google "
        "Cloud is reported: IAM alone guards it.",
        dns_endpoint_problems,
        resource_types=(CLUSTER_TYPE,),
        enforcement_level=EnforcementLevel.ADVISORY,
    ),
    resource_policy(
        "gke-cluster-hardening",
        "GKE clusters use Workload Identity and shielded nodes, and no legacy ABAC.",
        hardening_problems,
        resource_types=(CLUSTER_TYPE,),
    ),
    resource_policy(
        "gke-cluster-secrets-encryption",
        "A GKE cluster encrypts its Secrets with a Cloud KMS key (application-layer Secrets "
        "encryption).",
        secrets_encryption_problems,
        resource_types=(CLUSTER_TYPE,),
    ),
    StackValidationPolicy(
        name=UPGRADES,
        description="No node pool of a GKE cluster in a release channel turns auto-upgrade off.",
        validate=validate_upgrades,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    resource_policy(
        PINNED_VERSION,
        "A GKE node pool that pins its version is held from GKE's upgrades: auto-upgrade off, "
        "or its maintenance exclusion until end of support enabled.",
        version_fight_problems,
        resource_types=(NODE_POOL_TYPE,),
    ),
]
