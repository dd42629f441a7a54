"""`gpu-platform preflight` of a GKE stack that creates its cluster: no cluster of that name
yet, the APIs the creation calls enabled (Service Usage `services.get`, serviceusage.v1
discovery document), the region's CPU and address quotas and the project's network quotas
(Compute Engine `Quota.metric`, compute.v1), and how `pulumi up` reaches the control plane. The
fake answers only the APIs' GET methods, each answer checked against its response schema."""

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from gpu_platform.gke.preflight import checks as preflight_gke
from gpu_platform.gke.preflight.checks import GoogleApis
from gpu_platform.gke.preflight.create import (
    BINARY_AUTHORIZATION_SERVICE,
    KMS_SERVICE,
    REQUIRED_SERVICES,
    machine_cpus,
)
from gpu_platform.lock.lockfile import GKE_LISTED_VERSIONS, LOCK_PATH_VARIABLE, entry
from gpu_platform.preflight.findings import Finding
from tests.gpu_platform.gke.preflight.test_checks import (
    PROJECT,
    VERSION,
    FakeGoogle,
    lock_of,
    quota_list,
    stack,
)

Config = dict[str, Any]
ROOMY_REGION = {"CPUS": (24, 0), "E2_CPUS": (24, 0), "IN_USE_ADDRESSES": (8, 0)}
ROOMY_PROJECT = {"NETWORKS": (5, 1), "SUBNETWORKS": (100, 30), "ROUTERS": (10, 0)}


def creating(config: Config, **create: Any) -> None:
    config["gpu-platform:cluster"]["create"] = {"kubernetesVersion": "1.33", **create}
    config["gpu-platform:monitoring"] = {"installPrometheusStack": True}
    # The GPU quota check is the attach mode's; keep its pools out of the way.
    config["gpu-platform:pools"] = config["gpu-platform:pools"][:1]


DEFAULT_POLICY: dict[str, Any] = {
    "name": f"projects/{PROJECT}/policy",
    "globalPolicyEvaluationMode": "ENABLE",
    "defaultAdmissionRule": {
        "evaluationMode": "ALWAYS_ALLOW",
        "enforcementMode": "ENFORCED_BLOCK_AND_AUDIT_LOG",
    },
}
"""A project's policy no one wrote: Binary Authorization's default admits every image (Google's
"Binary Authorization policy" overview: the default policy allows all images)."""


class Project:
    """The fake project: APIs enabled or not, and its quotas."""

    def __init__(self) -> None:
        self.google = FakeGoogle()
        services = (*REQUIRED_SERVICES, KMS_SERVICE, BINARY_AUTHORIZATION_SERVICE)
        self.enable(*(name for name, _ in services))
        self.quotas(ROOMY_REGION, ROOMY_PROJECT)
        self.offers(STABLE=["1.34.1-gke.1829001", "1.33.5-gke.1201000"])
        self.google.identities(clusters=())
        self.policy(DEFAULT_POLICY)

    def policy(self, policy: dict[str, Any]) -> None:
        """The project's Binary Authorization policy (binaryauthorization.v1 `Policy`)."""
        self.google.answer(
            "binaryauthorization.projects.getPolicy", policy, name=f"projects/{PROJECT}/policy"
        )

    def offers(
        self,
        no_channel: Sequence[str] = (),
        defaults: Mapping[str, str] = {},
        **channels: Sequence[str],
    ) -> None:
        """The versions GKE offers in us-central1, per channel (and the channel's default,
        where `defaults` gives it) and outside one (container.v1 `ServerConfig`)."""
        self.google.answer(
            "container.projects.locations.getServerConfig",
            {
                "channels": [
                    {"channel": name, "validVersions": list(versions)}
                    | ({"defaultVersion": defaults[name]} if name in defaults else {})
                    for name, versions in channels.items()
                ],
                "validMasterVersions": list(no_channel),
            },
            name=f"projects/{PROJECT}/locations/us-central1",
        )

    def enable(self, *services: str, state: str = "ENABLED") -> None:
        for service in services:
            name = f"projects/{PROJECT}/services/{service}"
            self.google.answer(
                "serviceusage.services.get", {"name": name, "state": state}, name=name
            )

    def quotas(
        self, regional: Mapping[str, tuple[int, int]], global_: Mapping[str, tuple[int, int]]
    ) -> None:
        self.google.answer(
            "compute.regions.get",
            {"kind": "compute#region", "name": "us-central1", "quotas": quota_list(regional)},
            project=PROJECT,
            region="us-central1",
        )
        self.google.answer(
            "compute.projects.get",
            {"kind": "compute#project", "name": PROJECT, "quotas": quota_list(global_)},
            project=PROJECT,
        )

    def findings(self, change: Callable[[Config], Any] = lambda c: creating(c)) -> list[Finding]:
        apis = GoogleApis(self.google.session(), PROJECT)
        return preflight_gke.preflight(stack(change), apis)


@pytest.fixture
def project() -> Project:
    return Project()


def of(found: list[Finding], subject: str) -> list[Finding]:
    return [f for f in found if f.subject == subject]


def test_a_ready_project_blocks_nothing_and_says_the_endpoint_is_private(project: Project) -> None:
    found = project.findings()

    assert [f for f in found if f.severity == "blocking"] == []
    assert of(found, "cluster ml-dev")[0].severity == "ok"
    (endpoint,) = [f for f in of(found, "cluster ml-dev") if "private endpoint" in f.message]
    assert endpoint.severity == "warning" and "publicCidrs" in endpoint.action


def test_nothing_of_the_cluster_that_does_not_exist_yet_is_checked_but_its_name(
    project: Project,
) -> None:
    project.findings()

    assert "container.projects.locations.clusters.get" in project.google.calls
    assert project.google.calls.count("container.projects.locations.clusters.get") == 1


def test_a_disabled_api_blocks_with_the_command_that_enables_it(project: Project) -> None:
    project.enable("container.googleapis.com", state="DISABLED")

    (found,) = of(project.findings(), "API container.googleapis.com")

    assert found.severity == "blocking"
    assert found.action == f"gcloud services enable container.googleapis.com --project {PROJECT}"


def test_every_api_the_creation_calls_is_checked(project: Project) -> None:
    found = project.findings()

    assert {f.subject for f in found if f.subject.startswith("API ")} == {
        "API container.googleapis.com",
        "API compute.googleapis.com",
        "API iam.googleapis.com",
        "API cloudresourcemanager.googleapis.com",
        "API cloudkms.googleapis.com",
        "API binaryauthorization.googleapis.com",
    }


def test_a_disabled_kms_api_blocks_where_the_stack_creates_the_secrets_key(
    project: Project,
) -> None:
    project.enable("cloudkms.googleapis.com", state="DISABLED")

    (found,) = of(project.findings(), "API cloudkms.googleapis.com")

    assert found.severity == "blocking"
    assert "Secrets" in found.message


def test_with_a_key_of_the_users_the_kms_api_of_the_cluster_project_is_not_asked(
    project: Project,
) -> None:
    key = f"projects/{PROJECT}-keys/locations/us-central1/keyRings/gke/cryptoKeys/secrets"

    found = project.findings(lambda c: creating(c, gcp={"secretsKmsKeyName": key}))

    assert of(found, "API cloudkms.googleapis.com") == []


def test_a_disabled_binary_authorization_api_blocks_where_the_cluster_evaluates_its_policy(
    project: Project,
) -> None:
    project.enable("binaryauthorization.googleapis.com", state="DISABLED")

    (found,) = of(project.findings(), "API binaryauthorization.googleapis.com")

    assert found.severity == "blocking"
    assert found.action == (
        f"gcloud services enable binaryauthorization.googleapis.com --project {PROJECT}"
    )


def test_without_binary_authorization_its_api_is_not_asked(project: Project) -> None:
    found = project.findings(lambda c: creating(c, gcp={"binaryAuthorization": "off"}))

    assert of(found, "API binaryauthorization.googleapis.com") == []


def test_a_project_with_another_cluster_blocks_the_creation(project: Project) -> None:
    # Every cluster of a project shares its Workload Identity pool: the platform needs a project
    # of its own (docs/create-cluster-gke.md).
    project.google.identities(clusters=[("web", "us-east4")])

    (other, _) = of(project.findings(), f"project {PROJECT}")

    assert other.severity == "blocking"
    assert other.message.startswith("The project has other GKE clusters (web in us-east4):")


def test_system_nodes_past_the_regions_cpus_block(project: Project) -> None:
    # e2-standard-4, one per zone in three zones: 12 vCPUs at start, 24 at most.
    project.quotas({**ROOMY_REGION, "CPUS": (24, 16)}, ROOMY_PROJECT)

    (cpus, e2) = of(project.findings(), "system node pool")

    assert cpus.severity == "blocking" and cpus.message.startswith("CPUS in us-central1: 8 free")
    assert e2.severity == "ok"


def test_system_nodes_that_cannot_all_grow_are_a_warning(project: Project) -> None:
    project.quotas({**ROOMY_REGION, "E2_CPUS": (24, 8)}, ROOMY_PROJECT)

    (_, e2) = of(project.findings(), "system node pool")

    assert e2.severity == "warning" and "12 vCPUs at start, 24 at most" in e2.message


def test_no_address_left_for_cloud_nat_blocks(project: Project) -> None:
    project.quotas({**ROOMY_REGION, "IN_USE_ADDRESSES": (8, 8)}, ROOMY_PROJECT)

    blocking = [f for f in of(project.findings(), "network") if f.severity == "blocking"]

    assert [f.message.split(" ")[0] for f in blocking] == ["IN_USE_ADDRESSES"]


def test_no_network_left_in_the_project_blocks(project: Project) -> None:
    project.quotas(ROOMY_REGION, {**ROOMY_PROJECT, "NETWORKS": (5, 5)})

    blocking = [f for f in of(project.findings(), "network") if f.severity == "blocking"]

    assert [f.message.split(" ")[0] for f in blocking] == ["NETWORKS"]
    assert "existingNetwork" in blocking[0].action


def test_an_existing_network_needs_no_network_quota(project: Project) -> None:
    project.quotas(ROOMY_REGION, {**ROOMY_PROJECT, "NETWORKS": (5, 5)})
    existing = {
        "network": "shared",
        "subnetwork": "gke",
        "podsRangeName": "pods",
        "servicesRangeName": "services",
    }

    found = project.findings(lambda c: creating(c, gcp={"existingNetwork": existing}))

    assert of(found, "network") == []


def test_a_public_endpoint_says_where_pulumi_up_must_run_from(project: Project) -> None:
    endpoint = {"access": "public", "publicCidrs": ["203.0.113.0/24"]}

    found = project.findings(lambda c: creating(c, endpoint=endpoint))

    (said,) = [f for f in of(found, "cluster ml-dev") if "publicly" in f.message]
    assert said.severity == "ok" and "203.0.113.0/24" in said.message


def test_a_private_cluster_reached_through_its_dns_endpoint_is_no_warning(
    project: Project,
) -> None:
    found = project.findings(lambda c: creating(c, gcp={"dnsEndpoint": True}))

    (said,) = [f for f in of(found, "cluster ml-dev") if "DNS-based endpoint" in f.message]
    assert said.severity == "ok"


def test_a_version_the_channel_no_longer_offers_blocks(project: Project) -> None:
    project.offers(STABLE=["1.35.1-gke.1000000", "1.34.1-gke.1829001"])

    (found,) = of(project.findings(), "Kubernetes 1.33")

    assert found.severity == "blocking"
    assert "stable channel in us-central1 (it offers 1.34, 1.35)" in found.message
    assert "gpu-platform:cluster.create.kubernetesVersion" in found.action


def test_a_pinned_version_outside_a_channel_is_checked_against_the_versions_offered(
    project: Project,
) -> None:
    project.offers(no_channel=["1.33.5-gke.1201000"])
    pinned = {"releaseChannel": "none", "version": "1.33.4-gke.1000"}

    (found,) = of(project.findings(lambda c: creating(c, gcp=pinned)), "Kubernetes 1.33.4-gke.1000")

    assert found.severity == "blocking"
    assert "gpu-platform:cluster.create.gcp.version" in found.action


def test_a_cluster_of_that_name_already_there_is_a_warning(project: Project) -> None:
    project.google.cluster(status="RUNNING", currentMasterVersion="1.33.5-gke.1201000")

    (found, *_) = of(project.findings(), "cluster ml-dev")

    assert found.severity == "warning" and "409 already exists" in found.message


@pytest.mark.parametrize(
    ("machine_type", "expected"),
    [("e2-standard-4", ("e2", 4)), ("n2d-highmem-16", ("n2d", 16)), ("e2-medium", None)],
)
def test_a_machine_types_vcpus_come_from_its_name(machine_type: str, expected: Any) -> None:
    assert machine_cpus(machine_type) == expected


UNENFORCED = {
    "enabled": True,
    "cidrBlocks": [
        {"cidrBlock": "10.0.0.0/20", "displayName": "cluster nodes"},
        {"cidrBlock": "198.51.100.0/24", "displayName": "a VPN since removed from the stack"},
    ],
}
"""A cluster created before the platform held its private endpoint to the authorized networks:
container.v1 `MasterAuthorizedNetworksConfig` without `privateEndpointEnforcementEnabled`."""


def test_turning_private_endpoint_enforcement_on_for_an_existing_cluster_is_a_warning(
    project: Project,
) -> None:
    project.google.cluster(status="RUNNING", masterAuthorizedNetworksConfig=UNENFORCED)
    vpn = {"cidr": "192.0.2.0/24", "displayName": "vpn"}

    found = project.findings(lambda c: creating(c, gcp={"authorizedNetworks": [vpn]}))

    # The ranges the update leaves: the nodes' subnet and the configured ones, not the live
    # list's others, which the update removes.
    (enforcement,) = [f for f in found if "private endpoint admits" in f.message]

    assert enforcement == Finding(
        "warning",
        "cluster ml-dev",
        "Its private endpoint admits any address of its network and of networks connected to"
        " it; the next `pulumi up` holds it to the authorized networks (10.0.0.0/20,"
        " 192.0.2.0/24), and a"
        " deployer outside them loses the API half-way through that update.",
        "Run `pulumi up` from within them, or list the deployer's range in"
        " gpu-platform:cluster.create.gcp.authorizedNetworks, or reach the cluster through"
        " gpu-platform:cluster.create.gcp.dnsEndpoint; or keep the endpoint as it is with"
        " gpu-platform:cluster.create.gcp.privateEndpointEnforcement: false.",
    )


@pytest.mark.parametrize(
    ("authorized", "create"),
    [
        ({**UNENFORCED, "privateEndpointEnforcementEnabled": True}, {}),
        (UNENFORCED, {"gcp": {"privateEndpointEnforcement": False}}),
        (UNENFORCED, {"gcp": {"dnsEndpoint": True}}),
        # The deployer reaches a public endpoint from endpoint.publicCidrs, which the update
        # keeps authorized (container.v1 `MasterAuthorizedNetworksConfig`).
        (UNENFORCED, {"endpoint": {"access": "public", "publicCidrs": ["203.0.113.0/24"]}}),
    ],
    ids=[
        "already enforced",
        "kept open by its key",
        "reached through its DNS endpoint",
        "reached through its public endpoint",
    ],
)
def test_no_enforcement_warning_where_the_next_up_keeps_its_way_in(
    project: Project, authorized: dict[str, Any], create: dict[str, Any]
) -> None:
    project.google.cluster(status="RUNNING", masterAuthorizedNetworksConfig=authorized)

    found = project.findings(lambda c: creating(c, **create))

    assert [f for f in found if "private endpoint admits" in f.message] == []


POLICY_SUBJECT = f"Binary Authorization policy of {PROJECT}"


def policy_finding(found: list[Finding]) -> list[Finding]:
    return [f for f in found if f.subject == POLICY_SUBJECT]


def test_a_policy_someone_else_wrote_is_a_warning(project: Project) -> None:
    # pulumi-gcp `binaryauthorization.Policy` is one per project: `up` replaces it, and its
    # delete resets the project to Binary Authorization's default.
    project.policy(
        {
            **DEFAULT_POLICY,
            "description": "security team's policy",
            "defaultAdmissionRule": {
                "evaluationMode": "REQUIRE_ATTESTATION",
                "enforcementMode": "ENFORCED_BLOCK_AND_AUDIT_LOG",
                "requireAttestationsBy": [f"projects/{PROJECT}/attestors/built-by-ci"],
            },
        }
    )

    assert policy_finding(project.findings()) == [
        Finding(
            "warning",
            POLICY_SUBJECT,
            "Written by someone else (security team's policy; default rule"
            " REQUIRE_ATTESTATION): `pulumi up` replaces it for every cluster of the project,"
            " and removing the platform's later (`pulumi destroy`, or"
            " gpu-platform:cluster.create.gcp.binaryAuthorization project or off) resets it to"
            " Binary Authorization's default, not to this one.",
            f"Export it first (gcloud container binauthz policy export --project {PROJECT}), or"
            " keep it with gpu-platform:cluster.create.gcp.binaryAuthorization: project.",
        )
    ]


@pytest.mark.parametrize(
    "policy",
    [
        DEFAULT_POLICY,
        {
            **DEFAULT_POLICY,
            # What gpu_platform/gke/new_cluster/binary_authorization.py writes.
            "description": "Written by gpu-platform: the platform's images, and those allowed"
            " by cluster.create.gcp.binaryAuthorizationAllowedImages.",
            "defaultAdmissionRule": {
                "evaluationMode": "ALWAYS_DENY",
                "enforcementMode": "DRYRUN_AUDIT_LOG_ONLY",
            },
        },
    ],
    ids=["the default", "the platform's"],
)
def test_the_default_or_the_platforms_own_policy_is_fine(
    project: Project, policy: dict[str, Any]
) -> None:
    project.policy(policy)

    assert [f.severity for f in policy_finding(project.findings())] == ["ok"]


def test_the_policy_is_not_read_where_the_platform_writes_none(project: Project) -> None:
    project.google.answers.pop(
        (
            "binaryauthorization.projects.getPolicy",
            frozenset({("name", f"projects/{PROJECT}/policy")}),
        )
    )

    found = project.findings(lambda c: creating(c, gcp={"binaryAuthorization": "project"}))

    assert policy_finding(found) == []


# --- The lock ----------------------------------------------------------------------------------
# GKE creates a cluster asked for at a minor at its channel's default version
# (container.v1 `ReleaseChannelConfig.defaultVersion`, "The default version for newly created
# clusters on the channel"): the lock must have that patch, whose driver the pools' labels take
# once the cluster exists.

AT_1_35 = "1.35.7-gke.2000"
"""Another 1.35 patch than the lock's VERSION."""


@pytest.fixture
def locked_1_35(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A lock with L4's default on VERSION, the one 1.35 version the map lists."""
    path = tmp_path / "gpu-platform.lock"
    monkeypatch.setenv(LOCK_PATH_VARIABLE, str(path))
    listed = {"1.35": entry(VERSION, "https://map.test/", datetime(2026, 12, 1, tzinfo=UTC))}
    lock_of(path, {"l4": "580.95.05"}).with_entries(GKE_LISTED_VERSIONS, listed).save()


AT_1_35_NOT_LOCKED = Finding(
    "warning",
    "pool l4-shared",
    f"GKE {AT_1_35}, which its nodes run or will run, has no entry in gpu-platform.lock:"
    f' gke_cos_images["{AT_1_35}"]. The plan and every `pulumi up` stop at it until a'
    " refreshed lock is committed.",
    "Run `gpu-platform lock` and commit gpu-platform.lock (docs/lock.md).",
)


def at_1_35(config: Config) -> None:
    creating(config, kubernetesVersion="1.35")


def test_before_creation_the_channels_default_patch_the_lock_lacks_is_a_warning(
    project: Project, locked_1_35: None
) -> None:
    project.offers(defaults={"STABLE": AT_1_35}, STABLE=[AT_1_35, VERSION])

    assert of(project.findings(at_1_35), "pool l4-shared") == [AT_1_35_NOT_LOCKED]


def test_before_creation_a_default_patch_the_lock_has_is_no_finding(
    project: Project, locked_1_35: None
) -> None:
    project.offers(defaults={"STABLE": VERSION}, STABLE=[AT_1_35, VERSION])

    assert of(project.findings(at_1_35), "pool l4-shared") == []


def test_once_created_the_version_the_cluster_runs_is_checked_against_the_lock(
    project: Project, locked_1_35: None
) -> None:
    project.offers(defaults={"STABLE": VERSION}, STABLE=[VERSION])
    project.google.cluster(status="RUNNING", currentMasterVersion=AT_1_35)

    assert of(project.findings(at_1_35), "pool l4-shared") == [AT_1_35_NOT_LOCKED]
