"""Stand-in answers for the GKE side's lookups in the offline plan.

The program looks up its cluster (`gcp:container/getCluster`; a stack that creates its cluster is
planned as on its first run, the lookup failing as the provider's does for a cluster not created
yet), the zones of the cluster's region (`gcp:compute/getZones`), per zone, whether it offers a
pool's machine type (`gcp:compute/getMachineTypes`) and, creating its cluster, the project's number
(`gcp:organizations/getProject`), which names the GKE service agent, and an existing subnet's
primary range (`gcp:compute/getSubnetwork`). The answers here have the
API's shape and plausible values: an endpoint in a documentation address range, a CA that is not
one, and a few regions whose zones offer GPU machine types the way Compute Engine's GPU zone table
shows them (one zone of us-central1-f without G2, for instance). Any other region answers with
three zones offering every GPU machine type. None of it comes from an account."""

import base64
import hashlib
import re
from collections.abc import Callable, Mapping
from typing import Any

import pulumi

from gpu_platform.accelerators import ACCELERATORS
from gpu_platform.gke.locations import zone_region
from gpu_platform.gke.machine_types import fixed_series_of
from gpu_platform.offline.stand_ins import CREATED_CLUSTERS, LookupFailed

STAND_IN_ENDPOINT = "203.0.113.10"
STAND_IN_CA = base64.b64encode(
    b"-----BEGIN CERTIFICATE-----\nstand-in, not a certificate\n-----END CERTIFICATE-----\n"
).decode()
STAND_IN_MASTER_VERSION = "1.33.5-gke.1201000"
STAND_IN_DNS_ENDPOINT = "gke-0123456789abcdef-000000000000.us-central1.gke.goog"
"""A created cluster's DNS-based endpoint, of GKE's `gke-<id>.<region>.gke.goog` shape."""
STAND_IN_SUBNET_RANGE = "10.128.0.0/20"
"""An existing subnet's primary range: us-central1's in an auto mode network."""

_EVERY_SERIES = ("n1-", "a2-", "a3-", "a4-", "g2-")
# Zone -> the machine type prefixes it offers.
ZONE_OFFERINGS: Mapping[str, tuple[str, ...]] = {
    "us-central1-a": ("n1-", "a2-highgpu-", "a2-ultragpu-", "a3-highgpu-", "a3-megagpu-", "g2-"),
    "us-central1-b": ("n1-", "a2-highgpu-", "a3-highgpu-", "g2-"),
    "us-central1-c": ("n1-", "a2-highgpu-", "a2-ultragpu-", "a3-highgpu-", "g2-"),
    "us-central1-f": ("n1-", "a2-highgpu-"),
    "us-east4-a": ("n1-", "a2-ultragpu-", "a3-highgpu-", "a3-megagpu-", "g2-"),
    "us-east4-b": ("n1-", "a3-ultragpu-", "g2-"),
    "us-east4-c": ("n1-", "a2-ultragpu-", "a3-highgpu-", "a3-megagpu-"),
    "europe-west4-a": ("n1-", "a2-highgpu-", "a2-ultragpu-", "a3-highgpu-", "g2-"),
    "europe-west4-b": ("n1-", "a2-highgpu-", "a3-highgpu-", "a3-megagpu-", "g2-"),
    "europe-west4-c": ("n1-", "a2-highgpu-", "a3-highgpu-", "g2-"),
}
_NAME_FILTER = re.compile(r'^name = "(?P<name>[^"]+)"$')


def region_zones(region: str) -> list[str]:
    known = sorted(zone for zone in ZONE_OFFERINGS if zone_region(zone) == region)
    return known or [f"{region}-{letter}" for letter in "abc"]


def get_cluster(args: dict[str, Any]) -> dict[str, Any]:
    project, location, name = args["project"], args["location"], args["name"]
    if name in CREATED_CLUSTERS or "create" in (
        pulumi.Config("gpu-platform").get_object("cluster") or {}
    ):
        # The plan of a stack, or a program, that creates its cluster shows its first run: no
        # cluster yet, which the provider's lookup says as terraform-provider-google's data
        # source does.
        raise LookupFailed(f"projects/{project}/locations/{location}/clusters/{name} not found")
    return existing_cluster(args)


def existing_cluster(args: dict[str, Any]) -> dict[str, Any]:
    """The lookup's answer of a cluster that exists."""
    project, location, name = args["project"], args["location"], args["name"]
    region = zone_region(location) or location
    return {
        "id": f"projects/{project}/locations/{location}/clusters/{name}",
        "project": project,
        "location": location,
        "name": name,
        "endpoint": STAND_IN_ENDPOINT,
        "masterAuths": [{"clusterCaCertificate": STAND_IN_CA}],
        "masterVersion": STAND_IN_MASTER_VERSION,
        "enableAutopilot": False,
        # GKE enrolls a new cluster in the REGULAR channel unless told otherwise.
        "releaseChannels": [{"channel": "REGULAR"}],
        "workloadIdentityConfigs": [{"workloadPool": f"{project}.svc.id.goog"}],
        "nodeLocations": region_zones(region)[:3] if region == location else [location],
    }


def get_subnetwork(args: dict[str, Any]) -> dict[str, Any]:
    """An existing subnet (`cluster.create.gcp.existingNetwork`): its primary range."""
    region, name = args["region"], args["name"]
    return {
        "id": f"projects/{args['project']}/regions/{region}/subnetworks/{name}",
        "name": name,
        "region": region,
        "ipCidrRange": STAND_IN_SUBNET_RANGE,
    }


def get_zones(args: dict[str, Any]) -> dict[str, Any]:
    region = args["region"]
    return {
        "id": f"projects/{args['project']}/regions/{region}",
        "project": args["project"],
        "region": region,
        "status": args.get("status"),
        "names": region_zones(region),
    }


def get_machine_types(args: dict[str, Any]) -> dict[str, Any]:
    zone = args["zone"]
    wanted = _NAME_FILTER.match(args.get("filter") or "")
    if wanted is None:
        raise ValueError(f'the stand-in answers only `name = "..."` filters, not {args}')
    machine_type = wanted.group("name")
    offered = ZONE_OFFERINGS.get(zone, _EVERY_SERIES)
    found = [_machine_type(machine_type)] if machine_type.startswith(offered) else []
    return {
        "id": f"projects/{args['project']}/zones/{zone}/machineTypes",
        "project": args["project"],
        "zone": zone,
        "filter": args["filter"],
        "machineTypes": found,
    }


def _machine_type(name: str) -> dict[str, Any]:
    series = fixed_series_of(name)
    accelerators = []
    if series is not None:
        gke_type = ACCELERATORS[series.accelerator].gke_type
        accelerators = [
            {"guestAcceleratorType": gke_type, "guestAcceleratorCount": series.gpus[name]}
        ]
    return {"name": name, "accelerators": accelerators}


def service_account_outputs(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    email = f"{inputs['accountId']}@{inputs['project']}.iam.gserviceaccount.com"
    return {
        "email": email,
        "member": f"serviceAccount:{email}",
        "name": f"projects/{inputs['project']}/serviceAccounts/{email}",
    }


def node_pool_outputs(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    # Pulumi names an unnamed node pool after the resource, with a random suffix.
    suffix = hashlib.sha256(name.encode()).hexdigest()[:7]
    return {"name": inputs.get("name") or f"{name}-{suffix}", "version": STAND_IN_MASTER_VERSION}


STAND_IN_PRIVATE_ENDPOINT = "10.0.15.2"
"""Where a created cluster's private endpoint would answer: in its nodes' subnet (private
address space, as GKE gives it)."""


def cluster_outputs(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """A created cluster's endpoints and CA: the looked-up stand-in's."""
    private = {
        **inputs.get("privateClusterConfig", {}),
        "privateEndpoint": STAND_IN_PRIVATE_ENDPOINT,
    }
    endpoints = inputs.get("controlPlaneEndpointsConfig", {})
    dns = {**endpoints.get("dnsEndpointConfig", {}), "endpoint": STAND_IN_DNS_ENDPOINT}
    return {
        "endpoint": STAND_IN_ENDPOINT,
        "masterAuth": {"clusterCaCertificate": STAND_IN_CA},
        "privateClusterConfig": private,
        "controlPlaneEndpointsConfig": {**endpoints, "dnsEndpointConfig": dns},
        "masterVersion": STAND_IN_MASTER_VERSION,
        "selfLink": _self_link("locations", inputs, "clusters", inputs.get("name", name)),
    }


def _self_link(scope: str, inputs: dict[str, Any], kind: str, name: str) -> str:
    where = inputs.get("location") or inputs.get("region")
    path = f"projects/{inputs.get('project')}/{scope}/{where}/{kind}/{name}"
    if scope == "global":
        path = f"projects/{inputs.get('project')}/global/{kind}/{name}"
    return f"https://www.googleapis.com/compute/v1/{path}"


def _named_outputs(scope: str, kind: str) -> Callable[[str, dict[str, Any]], dict[str, Any]]:
    """Pulumi names a resource without a name after it, with a random suffix."""

    def outputs(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
        suffix = hashlib.sha256(name.encode()).hexdigest()[:7]
        named = inputs.get("name") or f"{name}-{suffix}"
        return {"name": named, "selfLink": _self_link(scope, inputs, kind, named)}

    return outputs


def get_project(args: dict[str, Any]) -> dict[str, Any]:
    """A project's number: twelve digits, stable for its id."""
    number = str(int(hashlib.sha256(args["projectId"].encode()).hexdigest(), 16))[:12]
    return {"id": f"projects/{args['projectId']}", "projectId": args["projectId"], "number": number}


def key_ring_outputs(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """A key ring's name (Pulumi's, with a random suffix) and id, its resource name."""
    named = _named_outputs("locations", "keyRings")(name, inputs)["name"]
    path = f"projects/{inputs['project']}/locations/{inputs['location']}/keyRings/{named}"
    return {"name": named, "id": path}


def crypto_key_outputs(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """A key's id: its resource name, under its ring's."""
    return {"id": f"{inputs['keyRing']}/cryptoKeys/{inputs['name']}"}


INVOKES: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "gcp:organizations/getProject:getProject": get_project,
    "gcp:container/getCluster:getCluster": get_cluster,
    "gcp:compute/getZones:getZones": get_zones,
    "gcp:compute/getSubnetwork:getSubnetwork": get_subnetwork,
    "gcp:compute/getMachineTypes:getMachineTypes": get_machine_types,
}
OUTPUTS: dict[str, Callable[[str, dict[str, Any]], dict[str, Any]]] = {
    "gcp:serviceaccount/account:Account": service_account_outputs,
    "gcp:container/nodePool:NodePool": node_pool_outputs,
    "gcp:container/cluster:Cluster": cluster_outputs,
    "gcp:compute/network:Network": _named_outputs("global", "networks"),
    "gcp:compute/subnetwork:Subnetwork": _named_outputs("regions", "subnetworks"),
    "gcp:compute/router:Router": _named_outputs("regions", "routers"),
    "gcp:kms/keyRing:KeyRing": key_ring_outputs,
    "gcp:kms/cryptoKey:CryptoKey": crypto_key_outputs,
}
