"""The cluster the platform creates: hardened as GKE's hardening guide
(https://cloud.google.com/kubernetes-engine/docs/how-to/hardening-your-cluster) and
terraform-google-kubernetes-engine's `modules/safer-cluster/main.tf` have it, and reached as
`cluster.create.endpoint` says."""

import copy
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from gpu_platform.offline.program import Plan
from gpu_platform.offline.stand_ins import gcp as stand_in

from ..plans import problems_of
from .plans import (
    CRYPTO_KEY,
    KEY_RING,
    SERVICE_ACCOUNT,
    cluster,
    with_create,
    with_gcp,
)
from .plans import (
    IAM_MEMBER as IAM_MEMBER_TYPE,
)

# Its tests plan the same configs again and again, and change the program only through the
# stand-ins' answers.
pytestmark = pytest.mark.shared_plans

Config = dict[str, Any]


def test_nodes_are_private(gke_new_plan: Plan) -> None:
    assert cluster(gke_new_plan).inputs["privateClusterConfig"]["enablePrivateNodes"] is True


def test_the_endpoint_is_private_by_default(gke_new_plan: Plan) -> None:
    inputs = cluster(gke_new_plan).inputs
    assert inputs["privateClusterConfig"]["enablePrivateEndpoint"] is True
    # The DNS-based endpoint, which would answer from anywhere to Google identities, is closed.
    dns = inputs["controlPlaneEndpointsConfig"]["dnsEndpointConfig"]
    assert dns == {"allowExternalTraffic": False}


def test_authorized_networks_hold_on_the_private_endpoint_too(gke_new_plan: Plan) -> None:
    # container.v1 `MasterAuthorizedNetworksConfig.privateEndpointEnforcementEnabled`: "Whether
    # master authorized networks is enforced on private endpoint or not", off unless sent
    # (pulumi-gcp 10.2.0 `ClusterMasterAuthorizedNetworksConfigArgs`: "Defaults to false").
    authorized = cluster(gke_new_plan).inputs["masterAuthorizedNetworksConfig"]

    assert authorized["privateEndpointEnforcementEnabled"] is True
    assert [block["cidrBlock"] for block in authorized["cidrBlocks"]] == ["10.0.0.0/20"]


def test_authorized_networks_leave_the_private_endpoint_open_by_its_key(
    gke_new_config: Config, plan_for: Callable[[Config], Plan]
) -> None:
    # For a stack whose deployers reach the private endpoint from outside the authorized
    # networks (a peered network, a VPN) until it lists them.
    plan = plan_for(with_gcp(gke_new_config, privateEndpointEnforcement=False))

    authorized = cluster(plan).inputs["masterAuthorizedNetworksConfig"]
    assert authorized["privateEndpointEnforcementEnabled"] is False
    assert authorized["gcpPublicCidrsAccessEnabled"] is False


def test_the_kubeconfig_of_a_private_cluster_names_its_private_endpoint(gke_new_plan: Plan) -> None:
    kubeconfig = yaml.safe_load(gke_new_plan.outputs["kubeconfig"])
    server = kubeconfig["clusters"][0]["cluster"]["server"]
    assert server == f"https://{stand_in.STAND_IN_PRIVATE_ENDPOINT}"


def test_the_dns_endpoint_reaches_a_private_cluster_with_no_ca_of_the_clusters(
    gke_new_config: Config, plan_for: Callable[[Config], Plan]
) -> None:
    plan = plan_for(with_gcp(gke_new_config, dnsEndpoint=True))

    inputs = cluster(plan).inputs
    # Still no public IP endpoint; the DNS-based endpoint takes outside traffic (container.v1
    # `DNSEndpointConfig.allowExternalTraffic`).
    assert inputs["privateClusterConfig"]["enablePrivateEndpoint"] is True
    assert inputs["controlPlaneEndpointsConfig"]["dnsEndpointConfig"] == {
        "allowExternalTraffic": True
    }
    # google-github-actions/get-gke-credentials `createKubeConfig`: a DNS-based endpoint's
    # kubeconfig carries no cluster CA, its certificate being a public CA's.
    (entry,) = yaml.safe_load(plan.outputs["kubeconfig"])["clusters"]
    assert entry["cluster"] == {"server": f"https://{stand_in.STAND_IN_DNS_ENDPOINT}"}


def test_a_public_endpoint_answers_only_the_cidrs_given_and_the_nodes(
    gke_new_config: Config, plan_for: Callable[[Config], Plan]
) -> None:
    config = with_create(
        gke_new_config, endpoint={"access": "public", "publicCidrs": ["203.0.113.0/24"]}
    )
    config = with_gcp(
        config, authorizedNetworks=[{"cidr": "198.51.100.0/24", "displayName": "vpn"}]
    )

    plan = plan_for(config)

    inputs = cluster(plan).inputs
    assert inputs["privateClusterConfig"]["enablePrivateEndpoint"] is False
    authorized = inputs["masterAuthorizedNetworksConfig"]
    assert [block["cidrBlock"] for block in authorized["cidrBlocks"]] == [
        "10.0.0.0/20",
        "203.0.113.0/24",
        "198.51.100.0/24",
    ]
    # Google Cloud's public ranges hold anyone's VMs.
    assert authorized["gcpPublicCidrsAccessEnabled"] is False
    server = yaml.safe_load(plan.outputs["kubeconfig"])["clusters"][0]["cluster"]["server"]
    assert server == f"https://{stand_in.STAND_IN_ENDPOINT}"


def test_workload_identity_uses_the_projects_pool(gke_new_plan: Plan) -> None:
    assert cluster(gke_new_plan).inputs["workloadIdentityConfig"] == {
        "workloadPool": "ml-platform-dev.svc.id.goog"
    }


def test_nodes_are_shielded_and_dataplane_v2_is_on(gke_new_plan: Plan) -> None:
    inputs = cluster(gke_new_plan).inputs
    assert inputs["enableShieldedNodes"] is True
    assert inputs["datapathProvider"] == "ADVANCED_DATAPATH"
    assert inputs["networkingMode"] == "VPC_NATIVE"
    assert inputs["enableLegacyAbac"] is False


def test_the_default_node_pool_is_removed_and_never_runs_as_the_default_account(
    gke_new_plan: Plan,
) -> None:
    # pulumi-gcp container.Cluster: "the recommended way ... is to create the smallest possible
    # default node pool and immediately delete it" (remove_default_node_pool, initial_node_count).
    inputs = cluster(gke_new_plan).inputs
    (account,) = [a for a in gke_new_plan.of_type(SERVICE_ACCOUNT) if a.name.startswith("cluster")]
    assert inputs["removeDefaultNodePool"] is True
    assert inputs["initialNodeCount"] == 1
    assert inputs["nodeConfig"]["serviceAccount"] == account.computed_outputs["email"]
    assert "nodePools" not in inputs


def test_the_removed_default_pools_settings_cannot_replace_the_cluster(gke_new_plan: Plan) -> None:
    assert set(cluster(gke_new_plan).ignore_changes) == {"nodeConfig", "initialNodeCount"}


def test_a_stable_channel_and_the_minor_by_default(gke_new_plan: Plan) -> None:
    inputs = cluster(gke_new_plan).inputs
    assert inputs["releaseChannel"] == {"channel": "STABLE"}
    assert inputs["minMasterVersion"] == "1.33"


def test_no_channel_pins_the_version_given(
    gke_new_config: Config, plan_for: Callable[[Config], Plan]
) -> None:
    config = with_gcp(gke_new_config, releaseChannel="none", version="1.33.5-gke.1201000")

    inputs = cluster(plan_for(config)).inputs

    assert inputs["releaseChannel"] == {"channel": "UNSPECIFIED"}
    assert inputs["minMasterVersion"] == "1.33.5-gke.1201000"


def test_a_pool_pinned_to_a_version_needs_a_cluster_without_a_channel(
    gke_new_config: Config, failed_plan_for: Callable[[Config], Plan]
) -> None:
    # GKE: "If you don't enroll your Standard cluster in a release channel, you can disable
    # node auto-upgrades for selected node pools" (concepts/release-channels); a pinned pool
    # turns auto-upgrade off.
    gke_new_config["gpu-platform:pools"][0]["gcp"] = {"nodeVersion": "1.33.5-gke.1201000"}

    problems = problems_of(failed_plan_for(gke_new_config))

    assert "releaseChannel none" in problems["gpu-platform:pools[0].gcp.nodeVersion"]


def test_a_pinned_pool_of_the_clusters_minor_is_accepted_without_a_channel(
    gke_new_config: Config, plan_for: Callable[[Config], Plan]
) -> None:
    gke_new_config["gpu-platform:pools"][0]["gcp"] = {"nodeVersion": "1.33.5-gke.1201000"}
    config = with_gcp(gke_new_config, releaseChannel="none")

    assert plan_for(config).error is None


def test_a_pinned_pool_of_a_later_minor_than_the_cluster_is_refused(
    gke_new_config: Config, failed_plan_for: Callable[[Config], Plan]
) -> None:
    gke_new_config["gpu-platform:pools"][0]["gcp"] = {
        "nodeVersion": "1.34.1-gke.1829001",
        "cosDriverBranch": 580,
    }
    config = with_gcp(gke_new_config, releaseChannel="none")

    problems = problems_of(failed_plan_for(config))

    assert problems["gpu-platform:pools[0].gcp.nodeVersion"].startswith("at most 1.33")


def test_the_maintenance_window_recurs_weekly_on_the_days_given(
    gke_new_config: Config, plan_for: Callable[[Config], Plan]
) -> None:
    config = with_gcp(
        gke_new_config,
        maintenanceWindow={"start": "22:30", "durationHours": 8, "days": ["SA", "SU"]},
    )

    window = cluster(plan_for(config)).inputs["maintenancePolicy"]["recurringWindow"]

    # Crossing midnight: 22:30 to 06:30 the next day.
    assert window == {
        "startTime": "2025-01-06T22:30:00Z",
        "endTime": "2025-01-07T06:30:00Z",
        "recurrence": "FREQ=WEEKLY;BYDAY=SA,SU",
    }


def test_maintenance_exclusions_carry_their_scope(
    gke_new_config: Config, plan_for: Callable[[Config], Plan]
) -> None:
    config = with_gcp(
        gke_new_config,
        maintenanceExclusions=[
            {"name": "training", "start": "2027-01-01T00:00:00Z", "end": "2027-03-01T00:00:00Z"}
        ],
    )

    policy = cluster(plan_for(config)).inputs["maintenancePolicy"]

    assert policy["maintenanceExclusions"] == [
        {
            "exclusionName": "training",
            "startTime": "2027-01-01T00:00:00Z",
            "endTime": "2027-03-01T00:00:00Z",
            "exclusionOptions": {"scope": "NO_MINOR_OR_NODE_UPGRADES"},
        }
    ]


def test_exclusion_times_given_with_an_offset_are_sent_in_utc_zulu(
    gke_new_config: Config, plan_for: Callable[[Config], Plan]
) -> None:
    # pulumi-gcp `ClusterMaintenancePolicyMaintenanceExclusionArgs`: times in RFC 3339 "Zulu"
    # format, as GKE returns them; an offset would read back different and show a diff.
    config = with_gcp(
        gke_new_config,
        maintenanceExclusions=[
            {
                "name": "launch",
                "start": "2027-01-01T02:00:00+02:00",
                "end": "2027-01-10T18:30:00-05:00",
            }
        ],
    )

    (exclusion,) = cluster(plan_for(config)).inputs["maintenancePolicy"]["maintenanceExclusions"]

    assert (exclusion["startTime"], exclusion["endTime"]) == (
        "2027-01-01T00:00:00Z",
        "2027-01-10T23:30:00Z",
    )


def test_an_exclusion_until_end_of_support_has_no_end_and_gkes_end_time_behavior(
    gke_new_config: Config, plan_for: Callable[[Config], Plan]
) -> None:
    config = with_gcp(
        gke_new_config,
        releaseChannel="extended",
        maintenanceExclusions=[
            {"name": "gpu-hold", "start": "2027-01-01T00:00:00Z", "untilEndOfSupport": True}
        ],
    )

    (exclusion,) = cluster(plan_for(config)).inputs["maintenancePolicy"]["maintenanceExclusions"]

    # container.v1 `MaintenanceExclusionOptions.endTimeBehavior`; pulumi-gcp: "One and only one
    # of end_time_behavior and end_time should be specified".
    assert "endTime" not in exclusion
    assert exclusion["exclusionOptions"] == {
        "scope": "NO_MINOR_OR_NODE_UPGRADES",
        "endTimeBehavior": "UNTIL_END_OF_SUPPORT",
    }


@pytest.mark.parametrize("protect", [True, False])
def test_the_cluster_and_its_secrets_key_are_protected_where_the_stack_is(
    gke_new_config: Config, plan_for: Callable[[Config], Plan], protect: bool
) -> None:
    gke_new_config["gpu-platform:protect"] = protect

    plan = plan_for(gke_new_config)

    created = cluster(plan)
    assert created.protect is protect
    assert created.inputs["deletionProtection"] is protect
    # Losing the key loses every Secret it encrypts.
    key_ring_and_key = [*plan.of_type(KEY_RING), *plan.of_type(CRYPTO_KEY)]
    assert [r.protect for r in key_ring_and_key] == [protect, protect]


def test_administrator_groups_get_cluster_admin_through_google_groups_for_rbac(
    gke_new_config: Config, plan_for: Callable[[Config], Plan]
) -> None:
    config = with_create(gke_new_config, administrators=["gke-admins@example.com"])

    plan = plan_for(config)

    assert cluster(plan).inputs["authenticatorGroupsConfig"] == {
        "securityGroup": "gke-security-groups@example.com"
    }
    binding = plan.named("cluster-administrators")
    assert binding.inputs["roleRef"]["name"] == "cluster-admin"
    assert binding.inputs["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "gke-admins@example.com"}
    ]
    (grant,) = [r for r in plan.of_type(IAM_MEMBER_TYPE) if r.inputs["member"].startswith("group:")]
    assert grant.inputs == {
        "project": "ml-platform-dev",
        "role": "roles/container.clusterViewer",
        "member": "group:gke-admins@example.com",
        "condition": {
            "title": "gpu-platform cluster ml-dev in us-central1",
            "description": "Administrators of GKE cluster ml-dev",
            "expression": 'resource.service == "container.googleapis.com"',
        },
    }


def test_two_clusters_in_one_project_give_the_same_group_separate_bindings(
    gke_new_config: Config, plan_for: Callable[[Config], Plan]
) -> None:
    # A project binding is role + member + condition (IAM "Policy" reference, conditional role
    # bindings): with equal conditions, destroying one stack's grant would revoke the other's.
    def condition(cluster_name: str) -> Any:
        config = with_create(copy.deepcopy(gke_new_config), administrators=["a@example.com"])
        config["gpu-platform:cluster"]["name"] = cluster_name
        plan = plan_for(config)
        (grant,) = [
            r for r in plan.of_type(IAM_MEMBER_TYPE) if r.inputs["member"] == "group:a@example.com"
        ]
        return grant.inputs["condition"]

    assert condition("ml-dev") != condition("ml-staging")


def test_an_administrators_grant_is_named_by_its_group_not_its_place_in_the_list(
    gke_new_config: Config, plan_for: Callable[[Config], Plan]
) -> None:
    # Deleting a non-authoritative project IAM member removes its member from the role, whoever
    # else states it (terraform-provider-google `google_project_iam_member`): a grant that moved
    # to another group on removing the first would take the role from the groups after it.
    groups = ["a@example.com", "b@example.com", "c@example.com"]

    def grants(administrators: list[str]) -> dict[str, str]:
        plan = plan_for(with_create(copy.deepcopy(gke_new_config), administrators=administrators))
        viewers = [
            r
            for r in plan.of_type(IAM_MEMBER_TYPE)
            if r.inputs["role"] == "roles/container.clusterViewer"
        ]
        return {r.inputs["member"]: r.urn for r in viewers}

    before, after = grants(groups), grants(groups[1:])

    assert set(after) == {"group:b@example.com", "group:c@example.com"}
    assert {member: before[member] for member in after} == after


def test_administrators_of_two_domains_are_refused(
    gke_new_config: Config, failed_plan_for: Callable[[Config], Plan]
) -> None:
    config = with_create(gke_new_config, administrators=["a@example.com", "b@example.org"])

    problems = problems_of(failed_plan_for(config))

    assert "one domain" in problems["gpu-platform:cluster.create.administrators"]
