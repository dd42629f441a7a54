"""The GKE cluster policies, through the real pack: node service accounts, control-plane access,
hardening, Secrets encryption, and node pools against the cluster's release channel. Each rule
rests on GKE's hardening guide (how-to/hardening-your-cluster) and
terraform-google-kubernetes-engine's `modules/safer-cluster/main.tf` ("We never use the default
service account for the cluster", `enable_private_nodes = true`, `identity_namespace`,
`enable_shielded_nodes`)."""

from dataclasses import replace
from typing import Any

import pytest

from gpu_platform.offline.analyzer import PACK_DIR, PolicyPack
from gpu_platform.offline.program import PlannedResource
from tests.gpu_platform.policy_pack.builders import (
    UNKNOWN,
    Analyze,
    Notes,
    gke_cluster,
    gke_node_pool,
    messages,
)

CLUSTER_POLICIES = (
    "gke-node-service-account",
    "gke-cluster-access",
    "gke-dns-endpoint",
    "gke-cluster-hardening",
    "gke-cluster-secrets-encryption",
    "gke-cluster-upgrades",
    "gke-node-pool-version",
)


def found(analyze: Analyze, policy: str, *resources: Any) -> list[str]:
    return messages(analyze(*resources), policy)


@pytest.mark.parametrize("policy", CLUSTER_POLICIES)
def test_the_platforms_cluster_and_pool_pass(analyze: Analyze, policy: str) -> None:
    assert found(analyze, policy, gke_cluster(), gke_node_pool()) == []


@pytest.mark.parametrize(
    "account", [None, "default", "123456789012-compute@developer.gserviceaccount.com"]
)
def test_a_node_pool_on_the_default_account_is_refused(analyze: Analyze, account: Any) -> None:
    pool = gke_node_pool()
    if account is None:
        del pool.inputs["nodeConfig"]["serviceAccount"]
    else:
        pool.inputs["nodeConfig"]["serviceAccount"] = account

    (message,) = found(analyze, "gke-node-service-account", pool)

    assert message.startswith("the node pool runs its nodes as the Compute Engine default")


def test_a_removed_default_pool_still_needs_its_own_account(analyze: Analyze) -> None:
    cluster = gke_cluster()
    del cluster.inputs["nodeConfig"]

    (message,) = found(analyze, "gke-node-service-account", cluster)

    assert "cluster's default node pool" in message and "nodeConfig.serviceAccount=null" in message


def test_inline_node_pools_are_judged_each(analyze: Analyze) -> None:
    cluster = gke_cluster()
    del cluster.inputs["nodeConfig"]
    cluster.inputs["nodePools"] = [
        {"name": "a", "nodeConfig": {"serviceAccount": "a@p.iam.gserviceaccount.com"}},
        {"name": "b", "nodeConfig": {"serviceAccount": "default"}},
    ]

    (message,) = found(analyze, "gke-node-service-account", cluster)

    assert 'nodePools[1].nodeConfig.serviceAccount="default"' in message


def test_public_nodes_are_refused(analyze: Analyze) -> None:
    cluster = gke_cluster()
    cluster.inputs["privateClusterConfig"]["enablePrivateNodes"] = False

    (message,) = found(analyze, "gke-cluster-access", cluster)

    assert message.startswith("the cluster's nodes have external addresses")


def test_a_public_endpoint_without_authorized_networks_is_refused(analyze: Analyze) -> None:
    cluster = gke_cluster()
    cluster.inputs["privateClusterConfig"]["enablePrivateEndpoint"] = False
    del cluster.inputs["masterAuthorizedNetworksConfig"]

    (message,) = found(analyze, "gke-cluster-access", cluster)

    assert message.startswith("the cluster's public endpoint answers every address")


def test_a_public_endpoint_for_authorized_networks_passes(analyze: Analyze) -> None:
    cluster = gke_cluster()
    cluster.inputs["privateClusterConfig"]["enablePrivateEndpoint"] = False
    cluster.inputs["masterAuthorizedNetworksConfig"]["cidrBlocks"].append(
        {"cidrBlock": "203.0.113.0/24"}
    )

    assert found(analyze, "gke-cluster-access", cluster) == []


def test_a_cluster_with_no_ip_endpoint_is_not_taken_for_a_public_one(analyze: Analyze) -> None:
    # container.v1 `IPEndpointsConfig.enabled`: false leaves the control plane no IP address.
    cluster = gke_cluster()
    cluster.inputs["privateClusterConfig"]["enablePrivateEndpoint"] = False
    del cluster.inputs["masterAuthorizedNetworksConfig"]
    cluster.inputs["controlPlaneEndpointsConfig"] = {"ipEndpointsConfig": {"enabled": False}}

    assert found(analyze, "gke-cluster-access", cluster) == []


def test_a_dns_endpoint_open_to_outside_traffic_is_reported(analyze: Analyze) -> None:
    # container.v1 `DNSEndpointConfig.allowExternalTraffic`.
    cluster = gke_cluster()
    cluster.inputs["controlPlaneEndpointsConfig"] = {
        "dnsEndpointConfig": {"allowExternalTraffic": True}
    }

    (message,) = found(analyze, "gke-dns-endpoint", cluster)

    assert "controlPlaneEndpointsConfig.dnsEndpointConfig.allowExternalTraffic=true" in message


def test_the_whole_internet_and_googles_ranges_are_refused(analyze: Analyze) -> None:
    cluster = gke_cluster()
    authorized = cluster.inputs["masterAuthorizedNetworksConfig"]
    authorized["cidrBlocks"].append({"cidrBlock": "0.0.0.0/0"})
    authorized["gcpPublicCidrsAccessEnabled"] = True

    problems = found(analyze, "gke-cluster-access", cluster)

    assert [p.split(" ")[0] for p in problems] == [
        "masterAuthorizedNetworksConfig.cidrBlocks[1]",
        "masterAuthorizedNetworksConfig.gcpPublicCidrsAccessEnabled",
    ]


def test_the_whole_internet_in_two_halves_is_refused(analyze: Analyze) -> None:
    cluster = gke_cluster()
    cluster.inputs["masterAuthorizedNetworksConfig"]["cidrBlocks"] = [
        {"cidrBlock": "0.0.0.0/1"},
        {"cidrBlock": "128.0.0.0/1"},
    ]

    problems = found(analyze, "gke-cluster-access", cluster)

    assert [p.split(" ")[0] for p in problems] == [
        "masterAuthorizedNetworksConfig.cidrBlocks[0]",
        "masterAuthorizedNetworksConfig.cidrBlocks[1]",
    ]


def test_a_private_slash_8_is_an_allowed_network(analyze: Analyze) -> None:
    cluster = gke_cluster()
    cluster.inputs["masterAuthorizedNetworksConfig"]["cidrBlocks"] = [{"cidrBlock": "10.0.0.0/8"}]

    assert found(analyze, "gke-cluster-access", cluster) == []


def test_a_cluster_without_workload_identity_or_shielded_nodes_is_refused(
    analyze: Analyze,
) -> None:
    cluster = gke_cluster()
    del cluster.inputs["workloadIdentityConfig"]
    cluster.inputs["enableShieldedNodes"] = False
    cluster.inputs["enableLegacyAbac"] = True

    problems = found(analyze, "gke-cluster-hardening", cluster)

    assert len(problems) == 3


@pytest.mark.parametrize(
    "encryption",
    [None, {"state": "DECRYPTED"}, {"state": "ENCRYPTED"}, {"state": "DECRYPTED", "keyName": "k"}],
)
def test_a_cluster_without_secrets_encrypted_by_a_kms_key_is_refused(
    analyze: Analyze, encryption: Any
) -> None:
    # GKE's how-to/encrypting-secrets: application-layer Secrets encryption is
    # `databaseEncryption` with state ENCRYPTED and the Cloud KMS key's name (container.v1
    # `DatabaseEncryption`).
    cluster = gke_cluster()
    if encryption is None:
        del cluster.inputs["databaseEncryption"]
    else:
        cluster.inputs["databaseEncryption"] = encryption

    (message,) = found(analyze, "gke-cluster-secrets-encryption", cluster)

    assert message.startswith("the GKE cluster does not encrypt Secrets with a Cloud KMS key")


def test_a_key_not_created_yet_is_not_taken_for_no_key(analyze: Analyze) -> None:
    cluster = gke_cluster()
    cluster.inputs["databaseEncryption"]["keyName"] = UNKNOWN

    assert found(analyze, "gke-cluster-secrets-encryption", cluster) == []


@pytest.mark.parametrize("channel", [{"channel": "STABLE"}, None])
def test_a_pool_without_auto_upgrade_in_a_release_channel_is_refused(
    analyze: Analyze, channel: Any
) -> None:
    # A cluster that names no channel is enrolled in REGULAR by GKE.
    cluster = gke_cluster()
    if channel is None:
        del cluster.inputs["releaseChannel"]
    pool = gke_node_pool()
    pool.inputs["management"] = {"autoUpgrade": False, "autoRepair": True}
    pool.inputs["version"] = "1.33.5-gke.1201000"

    (message,) = found(analyze, "gke-cluster-upgrades", cluster, pool)

    assert "turns auto-upgrade off" in message


HELD_UNTIL_END_OF_SUPPORT = [{"exclusionUntilEndOfSupports": [{"enabled": True}]}]
"""pulumi-gcp's container.NodePool `maintenancePolicies` (container.v1
`NodePool.maintenancePolicy.exclusionUntilEndOfSupport`), enabled."""


@pytest.mark.parametrize("management", [None, {"autoUpgrade": True}])
@pytest.mark.parametrize(
    "policies",
    [
        None,
        [],
        [{"exclusionUntilEndOfSupports": []}],
        [{"exclusionUntilEndOfSupports": [{"enabled": False}]}],
        [{"exclusionUntilEndOfSupports": [{}]}],
    ],
)
def test_a_pool_pinned_while_auto_upgrading_is_refused(
    analyze: Analyze, management: Any, policies: Any
) -> None:
    # pulumi-gcp container.NodePool `version`: "if this field and `auto_upgrade` are both
    # specified, they will fight each other for what the node version should be"; no enabled
    # exclusion holds the pool back. Absent (None) from a pool that does not ignore changes to
    # it, the inputs are what the program declares.
    pool = gke_node_pool()
    pool.inputs["version"] = "1.33.5-gke.1201000"
    if management is None:
        pool.inputs.pop("management", None)
    else:
        pool.inputs["management"] = management
    if policies is not None:
        pool.inputs["maintenancePolicies"] = policies

    (message,) = found(analyze, "gke-node-pool-version", pool)

    assert "fight" in message


@pytest.mark.parametrize("channel", ["REGULAR", "STABLE", None])
def test_a_pinned_pool_held_by_its_exclusion_until_end_of_support_passes(
    analyze: Analyze, channel: Any
) -> None:
    # container.v1 discovery document (google-api-python-client), `ReleaseChannel`: on a
    # channel node auto-upgrade "defaults to true and cannot be disabled"; pulumi-gcp
    # `NodePoolMaintenancePolicyExclusionUntilEndOfSupport.enabled`: "When true, the node pool
    # will not be automatically upgraded by GKE until the node pool version's end of support
    # date". So a pinned pool keeps auto-upgrade and is held by the exclusion.
    cluster = gke_cluster()
    if channel is None:
        del cluster.inputs["releaseChannel"]
    else:
        cluster.inputs["releaseChannel"] = {"channel": channel}
    pool = gke_node_pool()
    pool.inputs["version"] = "1.33.5-gke.1201000"
    pool.inputs["management"] = {"autoRepair": True, "autoUpgrade": True}
    pool.inputs["maintenancePolicies"] = HELD_UNTIL_END_OF_SUPPORT

    verdicts = analyze(cluster, pool)

    assert messages(verdicts, "gke-node-pool-version") == []
    assert messages(verdicts, "gke-cluster-upgrades") == []


IGNORED_BY_THE_PLATFORM = ("initialNodeCount", "nodeCount", "maintenancePolicies")
"""The changes the platform's node pools ignore (gpu_platform/gke/node_pool.py):
terraform-provider-google sends `maintenance_policy` only when it creates a pool."""


def pinned_pool_ignoring_maintenance_changes() -> PlannedResource:
    pool = replace(gke_node_pool(), ignore_changes=IGNORED_BY_THE_PLATFORM)
    pool.inputs["version"] = "1.33.5-gke.1201000"
    pool.inputs["management"] = {"autoRepair": True, "autoUpgrade": True}
    return pool


def test_a_pinned_pool_whose_ignored_maintenance_policies_are_absent_is_left_to_preflight(
    analyze: Analyze, new_notes: Notes
) -> None:
    # pulumi/pulumi v3.259.0 pkg/resource/deploy/step_generator.go, generateSteps: for a
    # resource that exists, `processIgnoreChanges` puts each ignored input back to its old
    # value before the analyzers see the inputs, and sdk/go/common/resource/properties_path.go
    # `Reset` deletes one the old inputs lack. A pool created unpinned and pinned later
    # therefore shows `version` and auto-upgrade but no `maintenancePolicies`, whatever GKE
    # holds for it.
    pool = pinned_pool_ignoring_maintenance_changes()

    assert found(analyze, "gke-node-pool-version", pool) == []
    assert new_notes() == [
        f'policy "gke-node-pool-version" cannot see the maintenance exclusion of {pool.urn}, '
        'pinned to "1.33.5-gke.1201000" with auto-upgrade on: its inputs ignore changes to '
        "maintenancePolicies and those stored when it was created have none. `gpu-platform "
        "preflight` checks the exclusion of the pool GKE runs."
    ]


@pytest.mark.parametrize("policies", [[], [{"exclusionUntilEndOfSupports": [{"enabled": False}]}]])
def test_a_pinned_pool_whose_ignored_maintenance_policies_lack_the_exclusion_is_refused(
    analyze: Analyze, policies: Any
) -> None:
    # Present, the property is what the pool was created with (or is being created with).
    pool = pinned_pool_ignoring_maintenance_changes()
    pool.inputs["maintenancePolicies"] = policies

    (message,) = found(analyze, "gke-node-pool-version", pool)

    assert "fight" in message


def test_an_exclusion_not_known_yet_skips_the_version_check(analyze: Analyze) -> None:
    pool = gke_node_pool()
    pool.inputs["version"] = "1.33.5-gke.1201000"
    pool.inputs["maintenancePolicies"] = [{"exclusionUntilEndOfSupports": [{"enabled": UNKNOWN}]}]

    assert found(analyze, "gke-node-pool-version", pool) == []


def test_the_version_gke_reports_for_a_pool_is_not_taken_for_a_pin() -> None:
    # At `pulumi up` the stack policies see each pool's outputs, whose `version` GKE always
    # fills (pulumi-gcp container.NodePool `version`: optional and computed).
    cluster = gke_cluster()
    pool = replace(gke_node_pool(), computed_outputs={"version": "1.33.5-gke.1201000"})

    with PolicyPack(PACK_DIR, preview=False) as pack:
        pack.configure({})
        verdicts = pack.analyze([cluster, pool])

    assert messages(verdicts, "gke-cluster-upgrades") == []
    assert messages(verdicts, "gke-node-pool-version") == []


def test_a_pinned_pool_of_a_cluster_without_a_channel_passes(analyze: Analyze) -> None:
    cluster = gke_cluster()
    cluster.inputs["releaseChannel"] = {"channel": "UNSPECIFIED"}
    pool = gke_node_pool()
    pool.inputs["management"] = {"autoUpgrade": False}
    pool.inputs["version"] = "1.33.5-gke.1201000"

    assert found(analyze, "gke-cluster-upgrades", cluster, pool) == []


def test_pools_of_a_cluster_the_stack_does_not_declare_are_left_alone(analyze: Analyze) -> None:
    pool = gke_node_pool()
    pool.inputs["management"] = {"autoUpgrade": False}

    assert found(analyze, "gke-cluster-upgrades", pool) == []


def test_a_channel_not_known_yet_skips_the_check(analyze: Analyze) -> None:
    cluster = gke_cluster()
    cluster.inputs["releaseChannel"] = UNKNOWN
    pool = gke_node_pool()
    pool.inputs["management"] = {"autoUpgrade": False}

    assert found(analyze, "gke-cluster-upgrades", cluster, pool) == []
