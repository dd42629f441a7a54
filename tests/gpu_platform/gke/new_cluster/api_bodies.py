"""The request bodies GKE and Compute Engine receive for the created cluster's resources, from
their pulumi-gcp inputs, for the discovery documents to judge (`..gke_api.api_problems`).

How the provider turns a cluster's inputs into the API's fields is read from
terraform-provider-google, `google/services/container/resource_container_cluster.go`
(`resourceContainerClusterCreate`, `expandControlPlaneEndpointsConfig`,
`expandDefaultEnablePrivateNodes`, `expandMasterAuthorizedNetworksConfig`,
`expandMaintenancePolicy`, `expandAuthenticatorGroupsConfig`, `expandMonitoringConfig`):
`min_master_version` is sent as `initialClusterVersion`; `networking_mode = VPC_NATIVE` as
`ipAllocationPolicy.useIpAliases`; `datapath_provider` and
`private_cluster_config.enable_private_nodes` inside `networkConfig`
(`defaultEnablePrivateNodes`); `enable_private_endpoint` as
`controlPlaneEndpointsConfig.ipEndpointsConfig.enablePublicEndpoint` (negated) and
`master_authorized_networks_config` as its `authorizedNetworksConfig`, with `enabled: true`;
`enable_shielded_nodes` as `shieldedNodes.enabled`; `enable_legacy_abac` as `legacyAbac`; the
maintenance policy's recurring window and exclusions inside `window`; `monitoring_config`'s
`enable_components` as `componentConfig.enableComponents` and `managed_prometheus` as
`managedPrometheusConfig`.
`remove_default_node_pool` and `deletion_protection` never reach the API (the provider deletes
the default pool itself, and refuses `destroy`).
"""

from collections.abc import Callable, Mapping
from typing import Any

from gpu_platform.offline.program import Plan
from tests.gpu_platform.gke.gke_api import api_problems, to_api_node_pool
from tests.gpu_platform.gke.new_cluster.plans import (
    CLUSTER,
    CRYPTO_KEY,
    KEY_MEMBER,
    KEY_RING,
    NETWORK,
    NODE_POOL,
    ROUTER,
    ROUTER_NAT,
    SUBNETWORK,
)

CLUSTER_DEPRECATED_SENT = frozenset({"Cluster.initialNodeCount", "Cluster.nodeConfig"})
"""Fields the API has deprecated for node pools' own, which the provider still fills from
`initial_node_count` and `node_config` (the default node pool's): the API still takes them."""

_CLUSTER_PROVIDER_ONLY = frozenset(
    {"project", "location", "removeDefaultNodePool", "deletionProtection", "networkingMode"}
)
_CLUSTER_RENAMES = {"minMasterVersion": "initialClusterVersion"}


def to_api_cluster(name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {"name": inputs.get("name", name)}
    network_config: dict[str, Any] = {}
    endpoints = {**inputs.get("controlPlaneEndpointsConfig", {})}
    ip_endpoints: dict[str, Any] = {"enabled": True, **endpoints.get("ipEndpointsConfig", {})}
    for key, value in inputs.items():
        if key in _CLUSTER_PROVIDER_ONLY or key in ("name", "controlPlaneEndpointsConfig"):
            continue
        if key == "datapathProvider":
            network_config["datapathProvider"] = value
        elif key == "privateClusterConfig":
            network_config["defaultEnablePrivateNodes"] = value.get("enablePrivateNodes", False)
            if "enablePrivateEndpoint" in value:
                ip_endpoints["enablePublicEndpoint"] = not value["enablePrivateEndpoint"]
        elif key == "masterAuthorizedNetworksConfig":
            ip_endpoints["authorizedNetworksConfig"] = {"enabled": True, **value}
        elif key == "enableShieldedNodes":
            body["shieldedNodes"] = {"enabled": value}
        elif key == "enableLegacyAbac":
            body["legacyAbac"] = {"enabled": value}
        elif key == "authenticatorGroupsConfig":
            body[key] = {"enabled": True, **value}
        elif key == "maintenancePolicy":
            body[key] = _maintenance_policy(value)
        elif key == "monitoringConfig":
            body[key] = _monitoring_config(value)
        elif key == "nodeConfig":
            body[key] = to_api_node_pool("default-pool", {"nodeConfig": value})["config"]
        else:
            body[_CLUSTER_RENAMES.get(key, key)] = value
    body["networkConfig"] = network_config
    body["controlPlaneEndpointsConfig"] = {**endpoints, "ipEndpointsConfig": ip_endpoints}
    if inputs.get("networkingMode") == "VPC_NATIVE":
        body["ipAllocationPolicy"] = {**body.get("ipAllocationPolicy", {}), "useIpAliases": True}
    return body


def _monitoring_config(config: Mapping[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {
        "componentConfig": {"enableComponents": config.get("enableComponents", [])}
    }
    if "managedPrometheus" in config:
        body["managedPrometheusConfig"] = {"enabled": config["managedPrometheus"]["enabled"]}
    return body


def _maintenance_policy(policy: Mapping[str, Any]) -> dict[str, Any]:
    window: dict[str, Any] = {}
    recurring = policy.get("recurringWindow")
    if recurring:
        window["recurringWindow"] = {
            "window": {"startTime": recurring["startTime"], "endTime": recurring["endTime"]},
            "recurrence": recurring["recurrence"],
        }
    exclusions = policy.get("maintenanceExclusions")
    if exclusions:
        window["maintenanceExclusions"] = {
            exclusion["exclusionName"]: {
                "startTime": exclusion["startTime"],
                **({"endTime": exclusion["endTime"]} if "endTime" in exclusion else {}),
                "maintenanceExclusionOptions": exclusion["exclusionOptions"],
            }
            for exclusion in exclusions
        }
    return {"window": window}


def to_api_network(name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {"name": inputs.get("name", name)}
    for key, value in inputs.items():
        if key == "routingMode":
            body["routingConfig"] = {"routingMode": value}
        elif key not in ("project", "name"):
            body[key] = value
    return body


def to_api_subnetwork(name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {"name": inputs.get("name", name)}
    for key, value in inputs.items():
        if key == "logConfig":
            body[key] = {"enable": True, **value}
        elif key not in ("project", "name"):
            body[key] = value
    return body


def to_api_router(name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "name": inputs.get("name", name),
        "network": inputs["network"],
        "region": inputs["region"],
    }


def to_api_router_nat(name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """A NAT is an entry of its router's `nats` (`RouterNat`); `router`, `region` and
    `project` say which router."""
    body: dict[str, Any] = {"name": inputs.get("name", name)}
    for key, value in inputs.items():
        if key == "subnetworks":
            body[key] = [
                {"name": s["name"], "sourceIpRangesToNat": s["sourceIpRangesToNats"]} for s in value
            ]
        elif key not in ("project", "name", "router", "region"):
            body[key] = value
    return body


# Cloud KMS (cloudkms.v1), as terraform-provider-google's `google/services/kms` sends it: a key
# ring's `project`, `location` and `name` are the path and `keyRingId` of `keyRings.create`, its
# body empty; a key's `keyRing` and `name` are the parent and `cryptoKeyId`, and with
# `rotation_period` the provider also sends `nextRotationTime`, now plus the period
# (`kms_utils.go`, `kmsCryptoKeyNextRotation`; the API requires both or neither); an IAM member
# is a binding the provider adds to the key's policy (`setIamPolicy`).
_KEY_PATH_INPUTS = frozenset({"project", "location", "name", "keyRing"})


def to_api_key_ring(name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in inputs.items() if key not in _KEY_PATH_INPUTS}


def to_api_crypto_key(name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    body = {key: value for key, value in inputs.items() if key not in _KEY_PATH_INPUTS}
    if "rotationPeriod" in body:
        body["nextRotationTime"] = "2026-01-01T00:00:00Z"
    return body


def to_api_key_iam_policy(name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    binding = {"role": inputs["role"], "members": [inputs["member"]]}
    return {"policy": {"bindings": [binding]}}


# Resource type -> (API, schema, translation).
CREATED: dict[str, tuple[str, str, Callable[[str, dict[str, Any]], dict[str, Any]]]] = {
    CLUSTER: ("container.v1", "Cluster", to_api_cluster),
    NODE_POOL: ("container.v1", "NodePool", to_api_node_pool),
    NETWORK: ("compute.v1", "Network", to_api_network),
    SUBNETWORK: ("compute.v1", "Subnetwork", to_api_subnetwork),
    ROUTER: ("compute.v1", "Router", to_api_router),
    ROUTER_NAT: ("compute.v1", "RouterNat", to_api_router_nat),
    KEY_RING: ("cloudkms.v1", "KeyRing", to_api_key_ring),
    CRYPTO_KEY: ("cloudkms.v1", "CryptoKey", to_api_crypto_key),
    KEY_MEMBER: ("cloudkms.v1", "SetIamPolicyRequest", to_api_key_iam_policy),
}


def problems_of_created(plan: Plan) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for resource in plan.resources:
        if resource.type not in CREATED:
            continue
        api, schema, translate = CREATED[resource.type]
        body = translate(resource.name, resource.inputs)
        deprecated = CLUSTER_DEPRECATED_SENT if schema == "Cluster" else frozenset()
        found[resource.name] = api_problems(body, schema, api, deprecated)
    return found
