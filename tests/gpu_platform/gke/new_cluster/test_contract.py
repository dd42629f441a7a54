"""Contract: every object the platform creates for a GKE cluster is one the GKE, Compute Engine and
Cloud KMS APIs accept, by their own discovery documents (`container.v1`, `compute.v1`,
`cloudkms.v1`, shipped in google-api-python-client), at every Kubernetes version the platform
supports and in each shape `cluster.create` can take."""

import copy
from collections.abc import Callable
from typing import Any

import pytest

from gpu_platform.driver_tables.cos import COS_DEFAULT_DRIVERS, CosDefault
from gpu_platform.offline.program import Plan
from gpu_platform.versions import SUPPORTED_KUBERNETES_VERSIONS

from ..gke_api import api_problems
from .api_bodies import (
    CLUSTER_DEPRECATED_SENT,
    problems_of_created,
    to_api_cluster,
    to_api_router_nat,
)
from .plans import (
    ROUTER_NAT,
    cluster,
    with_create,
    with_gcp,
    with_managed_prometheus,
)

Config = dict[str, Any]


def at_version(config: Config, version: str) -> Config:
    """`cluster.create` at `version`. Where GKE publishes COS's default driver for the pool's L4
    on that version (how-to/gpus: R535 on 1.31 to 1.33) the pool leaves the branch to COS, as
    the config refuses any other; elsewhere it states the branch (580), which it must."""
    pool = config["gpu-platform:pools"][0]
    if not isinstance(COS_DEFAULT_DRIVERS[version][pool["accelerator"]], CosDefault):
        pool.setdefault("gcp", {})["cosDriverBranch"] = 580
    return with_create(config, kubernetesVersion=version)


@pytest.mark.parametrize("version", SUPPORTED_KUBERNETES_VERSIONS)
def test_every_created_object_fits_the_apis_at_each_supported_version(
    gke_new_config: Config, plan_for: Callable[[Config], Plan], version: str
) -> None:
    plan = plan_for(at_version(gke_new_config, version))

    found = problems_of_created(plan)

    assert set(found) >= {
        "cluster",
        "cluster-system",
        "l4-shared",
        "ml-dev",
        "ml-dev_secrets",
        "cluster-secrets-key",
        "cluster-secrets-gke",
    }
    assert found == {key: [] for key in found}
    assert to_api_cluster("cluster", cluster(plan).inputs)["initialClusterVersion"] == version


VARIANTS: dict[str, Callable[[Config], Config]] = {
    "public endpoint for CIDRs, extra authorized networks": lambda c: with_gcp(
        with_create(c, endpoint={"access": "public", "publicCidrs": ["203.0.113.0/24"]}),
        authorizedNetworks=[{"cidr": "198.51.100.0/24", "displayName": "vpn"}],
    ),
    "existing network": lambda c: with_gcp(
        c,
        existingNetwork={
            "network": "shared",
            "subnetwork": "gke-us-central1",
            "podsRangeName": "gke-pods",
            "servicesRangeName": "gke-services",
        },
    ),
    "pinned version, no channel, exclusions": lambda c: with_gcp(
        c,
        releaseChannel="none",
        version="1.33.5-gke.1201000",
        maintenanceExclusions=[
            {
                "name": "launch",
                "start": "2026-12-01T00:00:00Z",
                "end": "2026-12-20T00:00:00Z",
                "scope": "no-upgrades",
            },
            {"name": "training", "start": "2027-01-01T00:00:00Z", "end": "2027-03-01T00:00:00Z"},
        ],
    ),
    "Managed Service for Prometheus": with_managed_prometheus,
    "extended channel, GPU nodes held until end of support": lambda c: with_gcp(
        c,
        releaseChannel="extended",
        maintenanceExclusions=[
            {"name": "gpu-hold", "start": "2027-01-01T00:00:00+01:00", "untilEndOfSupport": True}
        ],
    ),
    "administrators, weekend window, larger system pool": lambda c: with_gcp(
        with_create(c, administrators=["gke-admins@example.com", "sre@example.com"]),
        maintenanceWindow={"start": "22:00", "durationHours": 8, "days": ["SA", "SU"]},
        systemNodePool={"machineType": "n2-standard-8", "minPerZone": 2, "maxPerZone": 3},
        network={
            "subnetCidr": "172.16.0.0/20",
            "podsCidr": "172.20.0.0/14",
            "servicesCidr": "172.24.0.0/20",
        },
    ),
}


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_created_object_fits_the_apis_in_each_shape(
    gke_new_config: Config, plan_for: Callable[[Config], Plan], variant: str
) -> None:
    found = problems_of_created(plan_for(VARIANTS[variant](gke_new_config)))

    assert found and found == {key: [] for key in found}


# The translation and the documents catch what they must, or the tests above prove nothing.


@pytest.fixture
def cluster_body(gke_new_plan: Plan) -> dict[str, Any]:
    return copy.deepcopy(to_api_cluster("cluster", cluster(gke_new_plan).inputs))


def test_the_cluster_body_carries_the_hardening_to_the_api_fields(
    cluster_body: dict[str, Any],
) -> None:
    assert cluster_body["networkConfig"] == {
        "datapathProvider": "ADVANCED_DATAPATH",
        "defaultEnablePrivateNodes": True,
    }
    ip = cluster_body["controlPlaneEndpointsConfig"]["ipEndpointsConfig"]
    assert ip["enablePublicEndpoint"] is False
    assert ip["authorizedNetworksConfig"]["enabled"] is True
    assert cluster_body["shieldedNodes"] == {"enabled": True}
    assert cluster_body["ipAllocationPolicy"]["useIpAliases"] is True


def test_a_deprecated_cluster_field_the_provider_does_not_send_is_caught(
    cluster_body: dict[str, Any],
) -> None:
    # The old place of the authorized networks, which the provider no longer fills.
    cluster_body["masterAuthorizedNetworksConfig"] = {"enabled": True}
    assert api_problems(cluster_body, "Cluster", "container.v1", CLUSTER_DEPRECATED_SENT) == [
        "Cluster.masterAuthorizedNetworksConfig: deprecated by the API"
    ]


def test_a_bad_release_channel_is_caught(cluster_body: dict[str, Any]) -> None:
    cluster_body["releaseChannel"]["channel"] = "NONE"
    (problem,) = api_problems(cluster_body, "Cluster", "container.v1", CLUSTER_DEPRECATED_SENT)
    assert problem.startswith("Cluster.releaseChannel.channel: 'NONE' is not one of")


def test_a_misspelt_nat_field_is_caught(gke_new_plan: Plan) -> None:
    (nat,) = gke_new_plan.of_type(ROUTER_NAT)
    body = to_api_router_nat(nat.name, nat.inputs)
    body["sourceSubnetworkIpRangesToNats"] = body.pop("sourceSubnetworkIpRangesToNat")
    assert api_problems(body, "RouterNat", "compute.v1") == [
        "RouterNat.sourceSubnetworkIpRangesToNats: no such field in RouterNat"
    ]
