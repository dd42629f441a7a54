"""What `gpu-platform preflight` finds of a GKE stack that creates its cluster (`cluster.create`):
that nothing of that name exists yet, that the APIs the creation calls are enabled in the project
(Cloud KMS's too where the stack creates the Secrets key, Binary Authorization's where the
cluster evaluates the project's policy), that GKE offers the version in the
release channel at the location, that the region's and project's quotas leave room for what is
created (the system nodes' vCPUs, Cloud NAT's external address, the network, subnet and router),
and how the deployer will reach a private control plane.

The APIs are named as Service Usage names them (`services.get`: `state` ENABLED or DISABLED,
serviceusage.v1 discovery document); the quotas are Compute Engine's `Quota` metrics
(compute.v1): `CPUS` and the machine family's own (`E2_CPUS`) per region, `IN_USE_ADDRESSES` per
region (Cloud NAT's automatically allocated address is in use as soon as it exists), and
`NETWORKS`, `SUBNETWORKS`, `ROUTERS` over the project."""

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from gpu_platform.config import ClusterCreate, StackConfig, key_path
from gpu_platform.gke.authorized_networks import authorized_after_update
from gpu_platform.gke.locations import zone_region
from gpu_platform.gke.policy_owner import policy_owner
from gpu_platform.preflight.created_endpoint import endpoint_finding
from gpu_platform.preflight.findings import Finding

REQUIRED_SERVICES = (
    ("container.googleapis.com", "the cluster and its node pools"),
    ("compute.googleapis.com", "the network, subnet, router and Cloud NAT"),
    ("iam.googleapis.com", "the nodes' service accounts"),
    ("cloudresourcemanager.googleapis.com", "the nodes' and administrators' project roles"),
)
"""Each API the creation calls, and what for."""
KMS_SERVICE = ("cloudkms.googleapis.com", "the key ring and key that encrypt the cluster's Secrets")
"""Called where the stack creates the Secrets key in the cluster's project; a key named in
`cluster.create.gcp.secretsKmsKeyName` exists already, its API enabled where it is."""
BINARY_AUTHORIZATION_SERVICE = (
    "binaryauthorization.googleapis.com",
    "Binary Authorization's checks of the cluster's images (gcp.binaryAuthorization)",
)
"""Called where the cluster evaluates the project's Binary Authorization policy: GKE reads the
policy from the project's Binary Authorization API."""
ENABLED = "ENABLED"
REGION_ZONES = 3
"""The zones GKE puts a regional cluster's nodes in by default."""
_FAMILY = re.compile(r"^(?P<family>[a-z]+\d+[a-z]?)-[a-z]+-(?P<cpus>\d+)$")


class CreationApis(Protocol):
    def cluster(self, location: str, name: str) -> dict[str, Any] | None: ...

    def service_state(self, service: str) -> str: ...

    def server_config(self, location: str) -> dict[str, Any]: ...

    def region_quotas(self, region: str) -> list[dict[str, Any]]: ...

    def project_quotas(self) -> list[dict[str, Any]]: ...

    def binary_authorization_policy(self) -> dict[str, Any]: ...


def creation_findings(config: StackConfig, apis: CreationApis) -> list[Finding]:
    spec = config.cluster
    create = spec.create
    assert create is not None and spec.location is not None and spec.project is not None
    region = zone_region(spec.location) or spec.location
    findings = [_existing_finding(config, apis)]
    existing = apis.cluster(spec.location, spec.name)
    # A public endpoint's deployer comes in through it, from endpoint.publicCidrs, which the
    # update keeps: only a deployer of the private endpoint can be shut out.
    private = create.endpoint.access == "private"
    if existing is not None and private and create.gcp.private_endpoint_enforcement:
        findings += _enforcement_findings(spec.name, create, existing)
    services = list(REQUIRED_SERVICES)
    if create.gcp.secrets_kms_key_name is None:
        services.append(KMS_SERVICE)
    if create.gcp.binary_authorization != "off":
        services.append(BINARY_AUTHORIZATION_SERVICE)
    findings += [_service_finding(spec.project, name, why, apis) for name, why in services]
    writes_policy = create.gcp.binary_authorization in ("audit", "enforce")
    if writes_policy and apis.service_state(BINARY_AUTHORIZATION_SERVICE[0]) == ENABLED:
        findings.append(_policy_finding(spec.project, apis.binary_authorization_policy()))
    findings.append(version_finding(create, spec.location, apis.server_config(spec.location)))
    findings += cpu_findings(create, spec.location, region, apis.region_quotas(region))
    if create.gcp.existing_network is None:
        findings += network_findings(region, apis.region_quotas(region), apis.project_quotas())
    findings.append(_endpoint_finding(create, spec.name))
    return findings


def _existing_finding(config: StackConfig, apis: CreationApis) -> Finding:
    spec = config.cluster
    assert spec.location is not None
    subject = f"cluster {spec.name}"
    found = apis.cluster(spec.location, spec.name)
    if found is None:
        return Finding(
            "ok",
            subject,
            f"No cluster {spec.name} in {spec.location} yet: `pulumi up` creates it.",
            "Nothing.",
        )
    return Finding(
        "warning",
        subject,
        f"A cluster {spec.name} exists in {spec.location}"
        f" ({found.get('status', 'status unknown')}): the stack's if an earlier `pulumi up`"
        " created it; otherwise creating it fails (409 already exists).",
        "Nothing, if this stack created it; otherwise name another in"
        f" {key_path('cluster', 'name')}, or attach to it by removing"
        f" {key_path('cluster', 'create')}.",
    )


def _enforcement_findings(
    name: str, create: ClusterCreate, cluster: Mapping[str, Any]
) -> list[Finding]:
    """A cluster created before the platform held its private endpoint to the authorized
    networks (container.v1 `MasterAuthorizedNetworksConfig.privateEndpointEnforcementEnabled`,
    false when absent): the next `up` turns it on, and whatever reached the private endpoint
    from outside them (a runner in another subnet, a peered network, a VPN) no longer does,
    including the `up` itself, which then fails on the cluster's Kubernetes objects."""
    authorized = cluster.get("masterAuthorizedNetworksConfig", {})
    if authorized.get("privateEndpointEnforcementEnabled") or create.gcp.dns_endpoint:
        return []
    allowed = authorized_after_update(create, authorized)
    networks, dns, enforcement = (
        key_path("cluster", "create", "gcp", key)
        for key in ("authorizedNetworks", "dnsEndpoint", "privateEndpointEnforcement")
    )
    return [
        Finding(
            "warning",
            f"cluster {name}",
            "Its private endpoint admits any address of its network and of networks connected"
            " to it; the next `pulumi up` holds it to the authorized networks"
            f" ({', '.join(allowed) or 'none'}), and a deployer outside them loses the API"
            " half-way through that update.",
            f"Run `pulumi up` from within them, or list the deployer's range in {networks},"
            f" or reach the cluster through {dns}; or keep the endpoint as it is with"
            f" {enforcement}: false.",
        )
    ]


def _policy_finding(project: str, policy: Mapping[str, Any]) -> Finding:
    """The project's Binary Authorization policy, which `up` overwrites and removing the
    platform's resets to Binary Authorization's default (pulumi-gcp
    `binaryauthorization.Policy`: one per project, its delete resets it)."""
    subject = f"Binary Authorization policy of {project}"
    mode = key_path("cluster", "create", "gcp", "binaryAuthorization")
    owner = policy_owner(policy)
    if owner == "platform":
        return Finding("ok", subject, "The platform's, written by an earlier `up`.", "Nothing.")
    if owner == "default":
        return Finding(
            "ok",
            subject,
            "Binary Authorization's default (every image admitted): `pulumi up` writes the"
            " platform's.",
            "Nothing.",
        )
    rule = policy.get("defaultAdmissionRule", {})
    return Finding(
        "warning",
        subject,
        f"Written by someone else ({policy.get('description') or 'no description'}; default"
        f" rule {rule.get('evaluationMode', 'unset')}): `pulumi up` replaces it for every"
        " cluster of the project, and removing the platform's later (`pulumi destroy`, or"
        f" {mode} project or off) resets it to Binary Authorization's default, not to this one.",
        f"Export it first (gcloud container binauthz policy export --project {project}), or keep"
        f" it with {mode}: project.",
    )


def _service_finding(project: str, service: str, why: str, apis: CreationApis) -> Finding:
    subject = f"API {service}"
    state = apis.service_state(service)
    if state == ENABLED:
        return Finding("ok", subject, f"Enabled, for {why}.", "Nothing.")
    return Finding(
        "blocking",
        subject,
        f"Not enabled in project {project} ({state}): creating {why} fails.",
        f"gcloud services enable {service} --project {project}",
    )


def version_finding(create: ClusterCreate, location: str, server: Mapping[str, Any]) -> Finding:
    """Whether GKE offers the version asked for, in the release channel asked for, at the
    location (`ServerConfig`, container.v1): creating a cluster at a version the channel no
    longer lists fails after the network exists."""
    gcp = create.gcp
    wanted = gcp.version or create.kubernetes_version
    if gcp.release_channel == "none":
        where = "outside a release channel"
        offered = list(server.get("validMasterVersions", []))
    else:
        channel = gcp.release_channel.upper()
        where = f"in the {gcp.release_channel} channel"
        offered = next(
            (
                list(c.get("validVersions", []))
                for c in server.get("channels", [])
                if c.get("channel") == channel
            ),
            [],
        )
    subject = f"Kubernetes {wanted}"
    if any(v == wanted or v.startswith(f"{wanted}.") for v in offered):
        return Finding("ok", subject, f"GKE offers it {where} in {location}.", "Nothing.")
    minors = sorted({".".join(v.split(".")[:2]) for v in offered})
    key = "gcp.version" if gcp.version else "kubernetesVersion"
    return Finding(
        "blocking",
        subject,
        f"GKE does not offer it {where} in {location} (it offers"
        f" {', '.join(minors) or 'none'}): creating the cluster would fail.",
        f"Set {key_path('cluster', 'create', *key.split('.'))} to a version GKE offers there,"
        f" or {key_path('cluster', 'create', 'gcp', 'releaseChannel')} to a channel that"
        " offers it.",
    )


def machine_cpus(machine_type: str) -> tuple[str, int] | None:
    """(family, vCPUs) of a predefined machine type such as `e2-standard-4`; None for shared-core
    and custom types, whose vCPUs the name does not give."""
    match = _FAMILY.match(machine_type)
    return (match["family"], int(match["cpus"])) if match else None


def cpu_findings(
    create: ClusterCreate, location: str, region: str, quotas: Iterable[Mapping[str, Any]]
) -> list[Finding]:
    """The system nodes' vCPUs against the region's `CPUS` quota (every family's vCPUs) and the
    family's own quota where the region lists one: at `minPerZone` GKE must start them
    (blocking), at `maxPerZone` the autoscaler may grow to them (warning)."""
    pool = create.gcp.system_node_pool
    subject = "system node pool"
    shape = machine_cpus(pool.machine_type)
    if shape is None:
        return [
            Finding(
                "warning",
                subject,
                f"The vCPUs of {pool.machine_type} are not known from its name: its CPU quota is"
                " not checked.",
                f"Check the CPU quotas of {region} in the console's Quotas page.",
            )
        ]
    family, cpus = shape
    zones = REGION_ZONES if region == location else 1
    at_min, at_max = cpus * pool.min_per_zone * zones, cpus * pool.max_per_zone * zones
    by_metric = {q["metric"]: q for q in quotas}
    findings = []
    for metric in ("CPUS", f"{family.upper()}_CPUS"):
        quota = by_metric.get(metric)
        if quota is None:
            continue
        free = quota["limit"] - quota["usage"]
        needs = f"{at_min} vCPUs at start, {at_max} at most ({pool.machine_type} x {zones} zones)"
        what = (
            f"{metric} in {region}: {free:g} free of {quota['limit']:g}; the system nodes need"
            f" {needs}"
        )
        fix = (
            f"Request more {metric} in {region} (console, IAM & Admin > Quotas), or a smaller"
            " machine type"
        )
        if free < at_min:
            findings.append(Finding("blocking", subject, what + ".", fix + "."))
        elif free < at_max:
            findings.append(
                Finding("warning", subject, what + ": they cannot all start.", fix + ".")
            )
        else:
            findings.append(Finding("ok", subject, what + ".", "Nothing."))
    return findings


def network_findings(
    region: str,
    regional: Iterable[Mapping[str, Any]],
    global_: Iterable[Mapping[str, Any]],
) -> list[Finding]:
    """Room for one more of each: Cloud NAT's address in the region; network, subnet, router
    over the project."""
    needs: Sequence[tuple[str, str, Iterable[Mapping[str, Any]]]] = (
        ("IN_USE_ADDRESSES", f"in {region}, for Cloud NAT's external address", regional),
        ("NETWORKS", "in the project, for the cluster's network", global_),
        ("SUBNETWORKS", "in the project, for the nodes' subnet", global_),
        ("ROUTERS", "in the project, for Cloud NAT's router", global_),
    )
    findings = []
    for metric, what, quotas in needs:
        quota = next((q for q in quotas if q["metric"] == metric), None)
        if quota is None:
            continue
        free = quota["limit"] - quota["usage"]
        subject = "network"
        said = f"{metric} {what}: {free:g} free of {quota['limit']:g}"
        if free < 1:
            findings.append(
                Finding(
                    "blocking",
                    subject,
                    said + ".",
                    f"Free one, request more {metric}, or use an existing network"
                    f" ({key_path('cluster', 'create', 'gcp', 'existingNetwork')}).",
                )
            )
        else:
            findings.append(Finding("ok", subject, said + ".", "Nothing."))
    return findings


def _endpoint_finding(create: ClusterCreate, name: str) -> Finding:
    """GKE's DNS-based endpoint, where on, answers from anywhere to identities IAM allows."""
    subject = f"cluster {name}"
    if create.gcp.dns_endpoint:
        return Finding(
            "ok",
            subject,
            "The control plane's DNS-based endpoint answers from anywhere, to Google identities"
            " IAM allows container.clusters.connect; the platform's kubeconfig uses it.",
            "Run `pulumi up` as such an identity (roles/container.admin, which the deploy"
            " roles of docs/iam/ hold, includes it).",
        )
    return endpoint_finding(
        create.endpoint,
        subject,
        api="The control plane",
        also_answers="and the nodes' subnet",
        private="The control plane has a private endpoint only: after creating the cluster,"
        " `pulumi up` installs the GPU Operator through it, and fails where it runs outside the"
        " cluster's network.",
        fix="Run `pulumi up` from inside the network (a VM or CI runner there, or through Cloud"
        " VPN or Interconnect listed in"
        f" {key_path('cluster', 'create', 'gcp', 'authorizedNetworks')});"
        f" or set {key_path('cluster', 'create', 'endpoint')} to public with your egress range"
        f" in publicCidrs, or {key_path('cluster', 'create', 'gcp', 'dnsEndpoint')}: true"
        " (docs/create-cluster-gke.md).",
    )
