"""`cluster.create`: the cluster the platform creates, where the stack has none to attach to.

Absent, the stack attaches to the existing cluster `cluster.name` names, as always. Present,
the platform creates that cluster (and on EKS its VPC, or in the subnets given), secure by
default: Secrets encrypted, the API reachable only privately or from the CIDRs given, audit
logs on, a small system node group or pool for the controllers, and the administrators given
cluster access. The common settings come first; `aws` and `gcp` hold each cloud's own, only the
stack's cloud's may be set (docs/create-cluster.md).
"""

import ipaddress
import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, AwareDatetime, BeforeValidator, Field, WithJsonSchema
from pydantic_core import PydanticCustomError

from gpu_platform.config.fields import (
    AmiRelease,
    CloudKmsKeyName,
    DnsLabel,
    Ec2InstanceType,
    GceMachineType,
    GkeNodeVersion,
    ImageNamePattern,
    KmsKeyArn,
    Model,
    NotBlank,
    SecurityGroupId,
    SubnetId,
    TimeOfDay,
)
from gpu_platform.versions import SUPPORTED_KUBERNETES_VERSIONS


def _cidr(value: str) -> str:
    """An IPv4 CIDR block written as its network address, as EC2 and Compute Engine take it."""
    try:
        network = ipaddress.IPv4Network(value, strict=True)
    except ValueError:
        raise PydanticCustomError(
            "ipv4_cidr",
            "an IPv4 CIDR block such as 10.0.0.0/16, its address the block's first (no host bits"
            " set)",
        ) from None
    if "/" not in value:
        raise PydanticCustomError("ipv4_cidr", "an IPv4 CIDR block with its prefix, such as /16")
    return str(network)


Ipv4Cidr = Annotated[
    str, AfterValidator(_cidr), WithJsonSchema({"type": "string", "format": "ipv4-cidr"})
]


def _version_string(value: Any) -> Any:
    """`kubernetesVersion: 1.35` without quotes reaches the program as a number."""
    return str(value) if isinstance(value, float) else value


def _supported_version(value: str) -> str:
    if value not in SUPPORTED_KUBERNETES_VERSIONS:
        raise PydanticCustomError(
            "kubernetes_version",
            "one of the Kubernetes versions the platform supports: {allowed}",
            {"allowed": ", ".join(SUPPORTED_KUBERNETES_VERSIONS)},
        )
    return value


KubernetesVersion = Annotated[
    str,
    BeforeValidator(_version_string),
    AfterValidator(_supported_version),
    WithJsonSchema({"type": "string", "enum": list(SUPPORTED_KUBERNETES_VERSIONS)}),
]


class EndpointAccess(Model):
    """Who reaches the cluster's Kubernetes API."""

    access: Literal["private", "public"] = "private"
    """`private`: the API answers only inside the network (the VPC, peered networks, a VPN or
    a bastion there), so `pulumi up`, which installs the platform through it right after
    creating the cluster, must run there too. On EKS only from the networks and security
    groups `aws.privateEndpointCidrs` and `aws.privateEndpointSecurityGroupIds` name, and never
    for the first `pulumi up` into a new VPC, which nothing reaches yet: create the cluster
    with `public`, then switch (docs/create-cluster.md, "First `pulumi up` on EKS").
    `public`: it also answers on the internet, but only to `publicCidrs`. Either way requests
    still need the cluster's credentials; this is the layer in front of them."""
    public_cidrs: list[Ipv4Cidr] = Field(default_factory=list, max_length=40)
    """With `access: public`, the only addresses the public endpoint answers: the deployers'
    and CI runners' egress ranges. Required there, and none wider than a /8 (`0.0.0.0/0`, or
    its halves, would let the whole internet reach the API server). EKS takes at most 40
    blocks (`publicAccessCidrs`), GKE's master authorized networks at most 50 (100 with a
    private endpoint)."""


class EksNewVpc(Model):
    """A new VPC for the cluster: private subnets for every node, public ones only for NAT
    gateways and internet-facing load balancers, in three zones."""

    cidr: Ipv4Cidr = "10.0.0.0/16"
    """The VPC's IPv4 block, /16 to /20. The VPC CNI gives every pod an address of its node's
    subnet, so the private subnets take three quarters of it (a quarter each); the public
    subnets share what is left."""
    zones: list[NotBlank] = Field(default_factory=list)
    """Exactly three zones of the region (`us-east-1a`), or none: then the region's first three
    in which EKS can place a control plane (EKS refuses use1-az3, usw1-az2 and cac1-az3).
    GPU pools take theirs from these (`pools[].zones` must be among them): name the zones
    where your GPU instance types are offered."""
    nat_gateways: Literal["one-per-zone", "single"] | None = None
    """`one-per-zone`: each zone's private subnet reaches the internet through a NAT gateway in
    the same zone, so that losing a zone leaves the other zones' nodes able to pull images.
    `single`: one NAT gateway for all zones, costing a third, but a single point of failure and
    cross-zone traffic. Unset: `one-per-zone` where `protect` is on (the production setting),
    else `single`."""


PRIVATE_ENDPOINT_RULES = 60
"""EC2's default quota of inbound rules per security group (Amazon VPC user guide, "Amazon VPC
quotas": "Inbound or outbound rules per security group", 60)."""

STANDARD_INSTANCE_TYPE = re.compile(r"^(a|c|d|h|i|im|is|m|r|t|z)\d")
"""Instance types of the On-Demand Standard quota (EC2 user guide, "Amazon EC2 On-Demand
Instance quotas": the A, C, D, H, I, M, R, T and Z families; Inf, DL, Trn, HPC, Mac, X, G, VT and
P have quotas of their own)."""

SYSTEM_NODE_GROUP = "system"
"""What the system node group's name begins with (`system-`, and the provider's suffix), as a
pool's node groups begin with the pool's name: no pool may take it."""


class EksSystemNodes(Model):
    """The small on-demand node group where the platform's controllers run: CoreDNS, the
    cluster autoscaler or Karpenter, the GPU Operator's controllers, Prometheus. It is not
    tainted: everything the platform runs outside GPU nodes lands there without tolerations,
    while the GPU nodes' own taint keeps it off them."""

    instance_types: list[Ec2InstanceType] = Field(
        default_factory=lambda: ["m7i.xlarge"], min_length=1, max_length=20
    )
    """On-demand, general-purpose instance types of one size (4 vCPU and 16 GiB each for
    `m7i.xlarge`): Prometheus and the controllers fit on two with room to spare. Only types of
    the On-Demand Standard quota (A, C, D, H, I, M, R, T, Z families), which preflight checks:
    a GPU, accelerator or high-memory type would spend another quota on controllers."""
    min: int = Field(default=2, ge=2, le=100)
    """At least two, so that the controllers survive a node's replacement; the group is spread
    over the zones."""
    max: int = Field(default=4, ge=2, le=100)
    """The most nodes the cluster autoscaler may grow the group to."""
    disk_size_gib: int = Field(default=50, ge=20, le=16384)
    """Each node's root volume (gp3, encrypted)."""
    ami_release_version: AmiRelease | None = None
    """The EKS-optimized AL2023 release the nodes run (`1.35.6-20260714`), of the cluster's
    Kubernetes version. Unset, each `pulumi up` takes the newest release EKS publishes for the
    version (its public SSM parameter), and the group rolls onto it one node at a time: the
    nodes that run the controllers get kernel and kubelet patches without anyone pinning them.
    Pin it to decide when they change."""


EksLogType = Literal["api", "audit", "authenticator", "controllerManager", "scheduler"]
DEFAULT_EKS_LOG_TYPES: tuple[EksLogType, ...] = ("audit", "api", "authenticator")


VPC_CNI_NETWORK_POLICY = "enableNetworkPolicy"
"""The VPC CNI add-on's configuration value the platform sets on every cluster it creates."""


class EksClusterCreate(Model):
    """What only an EKS cluster the platform creates has."""

    vpc: EksNewVpc | None = None
    """The new VPC. Unset with `subnetIds` unset: a new VPC with these defaults."""
    subnet_ids: list[SubnetId] = Field(default_factory=list)
    """Instead of a new VPC: existing private subnets, in at least two zones (EKS's minimum),
    for the control plane's network interfaces and every node. Each must route to the internet
    through a NAT gateway (or reach ECR, S3, EKS and STS through VPC endpoints) and carry the
    tag `kubernetes.io/role/internal-elb: 1`; the public subnets of internet-facing load
    balancers need `kubernetes.io/role/elb: 1`."""
    system_nodes: EksSystemNodes = Field(default_factory=EksSystemNodes)
    """The system node group. Not set with `provisioner: eks-auto-mode`, whose cluster runs the
    platform's own pods on Auto Mode's built-in `general-purpose` NodePool."""
    control_plane_logs: list[EksLogType] = Field(
        default_factory=lambda: list(DEFAULT_EKS_LOG_TYPES)
    )
    """The control plane logs EKS sends to CloudWatch Logs, of `api`, `audit`,
    `authenticator`, `controllerManager` and `scheduler`; `audit` and `authenticator` are
    required (who did what, as whom). The default leaves out the controller manager's and
    scheduler's, as terraform-aws-eks does: on GPU batch clusters with many short pods they are
    the most voluminous, and CloudWatch bills every GB ingested."""
    log_retention_days: Literal[
        30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653
    ] = 90
    """How long CloudWatch keeps them (the values CloudWatch Logs accepts, from 30 days)."""
    support_type: Literal["STANDARD", "EXTENDED"] = "STANDARD"
    """EKS's support policy for the cluster's Kubernetes version (`upgradePolicy.supportType`).
    `STANDARD`: when the version's standard support ends, EKS upgrades the control plane to the
    next version itself; plan your upgrades before that. `EXTENDED`: the cluster may stay on
    the version for another 12 months, but from the end of standard support EKS bills the
    cluster at the extended support rate, six times the standard one (EKS pricing: $0.60 an
    hour instead of $0.10). EKS's own default is `EXTENDED`; the platform's is `STANDARD`, so
    that a cluster never starts costing more without anyone choosing it."""
    secrets_kms_key_arn: KmsKeyArn | None = None
    """An existing symmetric KMS key to encrypt Secrets with, instead of the key the platform
    creates for the cluster (rotated yearly, 30 days' deletion window)."""
    private_endpoint_cidrs: list[Ipv4Cidr] = Field(
        default_factory=list, max_length=PRIVATE_ENDPOINT_RULES
    )
    """The networks allowed to reach the private API endpoint on port 443: a VPN's or Direct
    Connect's range, a peered VPC's, the subnet of a CI runner or bastion in the VPC. EKS's own
    cluster security group admits only the cluster's nodes, so anything else, `pulumi up`
    included, times out there without a rule. Each block becomes an ingress rule of the
    security group the platform adds to the control plane (`<name>-api`), as terraform-aws-eks
    does; none wider than a /8. With `endpoint.access: private` this or
    `privateEndpointSecurityGroupIds` is required."""
    private_endpoint_security_group_ids: list[SecurityGroupId] = Field(
        default_factory=list, max_length=PRIVATE_ENDPOINT_RULES
    )
    """Security groups whose members may reach the private API endpoint on port 443: a CI
    runner's or a bastion's, in the cluster's VPC or a VPC peered with it in the same region;
    for a runner on the cluster's own nodes, the cluster security group EKS made
    (`clusterSecurityGroupId` of `aws eks describe-cluster`). Together with
    `privateEndpointCidrs` at most 60 (EC2's default inbound rules per security group)."""
    vpc_cni_configuration: dict[str, Any] = Field(default_factory=dict)
    """More configuration values of the `vpc-cni` add-on, such as
    `env: {ENABLE_PREFIX_DELEGATION: "true", WARM_PREFIX_TARGET: "1"}` (EKS user guide,
    cni-increase-ip-addresses.adoc), sent with the platform's `enableNetworkPolicy: "true"`,
    which may not be set here. They are the add-on's whole configuration: EKS replaces what the
    add-on had with them at each update, so settings made by hand (`aws eks update-addon`)
    are lost unless listed here. EKS checks them against the add-on version's schema (`aws eks
    describe-addon-configuration --addon-name vpc-cni --addon-version <version>`) and refuses
    the update otherwise."""
    creator_access: bool = True
    """Whether the identity that created the cluster keeps its cluster-admin access entry, as
    terraform-aws-eks's `enable_cluster_creator_admin_permissions`. `false` deletes that entry
    at the next `pulumi up`, unless the creator is among `administrators`: the way to retire
    the identity that created the cluster. The identity running `pulumi up` must then be among
    `administrators`, as the platform installs through the cluster's API with its access."""


class GkeNewNetwork(Model):
    """A new VPC network and subnet for the cluster, VPC-native: pods and Services take their
    addresses from the subnet's secondary ranges."""

    subnet_cidr: Ipv4Cidr = "10.0.0.0/20"
    """The nodes' range (4,096 addresses)."""
    pods_cidr: Ipv4Cidr = "10.16.0.0/14"
    """The pods' secondary range: each node takes a /24 of it (110 pods), so a /14 serves
    1,024 nodes."""
    services_cidr: Ipv4Cidr = "10.20.0.0/20"
    """The Services' secondary range."""
    flow_log_sampling: float = Field(default=0.5, ge=0, le=1)
    """The share of the subnet's flows VPC Flow Logs records (every 5 seconds, with all
    metadata), 0 to turn them off. Cloud Logging bills what they write: a record per
    connection and interval, so many short-lived connections (not bulk bytes such as NCCL's
    few long ones) make them cost. 0.5 is what Google Cloud enables them with; CIS Google Cloud
    Foundations asks for them on every subnet."""


class GkeExistingNetwork(Model):
    """An existing VPC network and subnet, with the secondary ranges for pods and Services."""

    network: NotBlank
    """The network's name (or self link)."""
    subnetwork: NotBlank
    """The subnet's name, in the cluster's region; it must have Private Google Access on and a
    route to the internet through Cloud NAT for the nodes."""
    pods_range_name: NotBlank
    """Its secondary range for pods."""
    services_range_name: NotBlank
    """Its secondary range for Services."""


Weekday = Literal["MO", "TU", "WE", "TH", "FR", "SA", "SU"]
WEEKDAYS: tuple[Weekday, ...] = ("MO", "TU", "WE", "TH", "FR", "SA", "SU")


class GkeMaintenanceWindow(Model):
    """When GKE may upgrade the control plane and the nodes: a weekly recurring window."""

    start: TimeOfDay = "03:00"
    """The window's start, `HH:MM` in UTC."""
    duration_hours: int = Field(default=4, ge=4, le=24)
    """Its length; GKE needs at least 4 contiguous hours."""
    days: list[Weekday] = Field(default_factory=lambda: list(WEEKDAYS), min_length=1)
    """The days it opens on (RRULE `BYDAY`). GKE needs at least 48 hours of windows in any 32
    days, which every day at the default 4 hours gives."""


class GkeMaintenanceExclusion(Model):
    """A time in which GKE does not upgrade the cluster (a launch, a training run)."""

    name: DnsLabel
    start: AwareDatetime
    """Its start, ISO 8601 with its offset."""
    end: AwareDatetime | None = None
    """Its end; at most 30 days after `start` with scope `no-upgrades`. Required unless
    `untilEndOfSupport`."""
    until_end_of_support: bool = False
    """Instead of `end`: until the cluster's current minor version leaves support (GKE's
    `endTimeBehavior: UNTIL_END_OF_SUPPORT`), with scope `no-minor-upgrades` or
    `no-minor-or-node-upgrades`. With the latter on a release channel (`extended` gives the
    longest support), GPU nodes stay on their version for the life of the minor: the supported
    way to hold them, where `releaseChannel: none` relies on a value the API has deprecated."""
    scope: Literal["no-upgrades", "no-minor-upgrades", "no-minor-or-node-upgrades"] = (
        "no-minor-or-node-upgrades"
    )
    """What it holds back: `no-upgrades` every upgrade (at most 30 days, three such in a
    cluster); `no-minor-upgrades` minor versions of control plane and nodes;
    `no-minor-or-node-upgrades` minor versions and every node upgrade, so that GPU nodes
    are not replaced while it lasts, while the control plane still gets patches."""


class GkeAuthorizedNetwork(Model):
    """A network allowed to reach the control plane's endpoint."""

    cidr: Ipv4Cidr
    display_name: NotBlank | None = None


class GkeSystemNodePool(Model):
    """The small node pool where the platform's controllers run, untainted for the same reason
    as on EKS (`aws.systemNodes`)."""

    machine_type: GceMachineType = "e2-standard-4"
    """Its machine type (4 vCPU, 16 GiB)."""
    min_per_zone: int = Field(default=1, ge=1, le=100)
    """Nodes kept in each zone of the cluster's region (three zones: three nodes)."""
    max_per_zone: int = Field(default=2, ge=1, le=100)
    """The most nodes the autoscaler may grow each zone to."""
    disk_size_gib: int = Field(default=50, ge=20, le=65536)


class GkeClusterCreate(Model):
    """What only a GKE cluster the platform creates has."""

    network: GkeNewNetwork | None = None
    """The new network. Unset with `existingNetwork` unset: a new one with these defaults."""
    existing_network: GkeExistingNetwork | None = None
    """Instead of a new network: an existing one."""
    release_channel: Literal["rapid", "regular", "stable", "extended", "none"] = "stable"
    """The release channel GKE upgrades the cluster on. `none` keeps the version pinned in
    `version` (GKE still upgrades it when that version leaves support); the API has deprecated
    it (`ReleaseChannel.channel: UNSPECIFIED`), so prefer a channel with a
    `no-minor-or-node-upgrades` exclusion `untilEndOfSupport`. GPU pools pinned with
    `gcp.nodeVersion` stay on their version until it leaves support; maintenance exclusions
    hold back the rest."""
    version: GkeNodeVersion | None = None
    """With `releaseChannel: none`: the exact GKE version of the control plane
    (`1.35.1-gke.1234000`), of `kubernetesVersion`'s minor. Unset, GKE picks the channel's
    default of that minor."""
    maintenance_window: GkeMaintenanceWindow = Field(default_factory=GkeMaintenanceWindow)
    """When GKE may upgrade."""
    maintenance_exclusions: list[GkeMaintenanceExclusion] = Field(
        default_factory=list, max_length=20
    )
    """When it may not."""
    authorized_networks: list[GkeAuthorizedNetwork] = Field(default_factory=list, max_length=50)
    """Further networks (a VPN's, a bastion's) allowed to reach the control plane, besides the
    cluster's own subnet and `endpoint.publicCidrs` (GKE's master authorized networks)."""
    dns_endpoint: bool = False
    """Open GKE's DNS-based control-plane endpoint (`<id>.<region>.gke.goog`) to traffic from
    outside Google Cloud, and have the platform's kubeconfig use it. It answers any address but
    only Google identities that IAM allows `container.clusters.connect`, so a private cluster
    (`endpoint.access: private`) is deployable from a laptop or a CI runner with no route into
    the network. Off by default: the IP endpoints, as `endpoint` says, are then the only way
    in."""
    private_endpoint_enforcement: bool = True
    """Hold the private endpoint, too, to the cluster's subnet, `endpoint.publicCidrs` and
    `authorizedNetworks` (`masterAuthorizedNetworksConfig.privateEndpointEnforcementEnabled`,
    as terraform-google-kubernetes-engine's safer-cluster sets for a private endpoint). Without
    it any address of the network, of a peered network, or reached through a VPN or
    interconnect reaches the private endpoint. With it, a runner, bastion or Cloud Build private
    pool outside the cluster's subnet must be listed in `authorizedNetworks`, or reach the
    cluster through `dnsEndpoint`; `false` is for a stack that cannot list them yet
    (docs/create-cluster-gke.md)."""
    binary_authorization: Literal["audit", "enforce", "project", "off"] = "audit"
    """Binary Authorization of the cluster's images (GKE checks each pod's images against the
    project's policy before admitting it, `evaluationMode: PROJECT_SINGLETON_POLICY_ENFORCE`, as
    terraform-google-kubernetes-engine's safer-cluster sets). `audit`: the platform writes the
    project's policy, whose default rule denies every image but the platform's own and
    `binaryAuthorizationAllowedImages`, in dry run (`DRYRUN_AUDIT_LOG_ONLY`: the pod starts,
    Cloud Logging records it); `enforce`: the same policy refusing such pods
    (`ENFORCED_BLOCK_AND_AUDIT_LOG`), only with `nodeImage: ubuntu` (COS's driver installer
    runs an image that names no registry, which no allowlist pattern admits); `project`: GKE
    evaluates the policy the project's owner writes, which admits every image until written;
    `off`: no check. The policy is one per
    project, for every cluster in it: `audit` and `enforce` replace it, for a project of the
    platform's own (docs/create-cluster-gke.md). Needs the Binary Authorization API
    (`binaryauthorization.googleapis.com`) enabled in the project, unless `off`."""
    binary_authorization_allowed_images: list[ImageNamePattern] = Field(default_factory=list)
    """Image name patterns the platform's policy admits besides the platform's own images
    (`admissionWhitelistPatterns`): `registry/path/image`, with a trailing `*` (one level) or
    `**` (every level below), such as your workloads' registry or a mirror of NVIDIA's."""
    system_node_pool: GkeSystemNodePool = Field(default_factory=GkeSystemNodePool)
    """The system node pool."""
    secrets_kms_key_name: CloudKmsKeyName | None = None
    """An existing Cloud KMS key to encrypt Secrets with (GKE's application-layer Secrets
    encryption), instead of the key ring and key the platform creates in the cluster's region
    (rotated every 90 days): its resource name,
    `projects/<project>/locations/<the cluster's region>/keyRings/<ring>/cryptoKeys/<key>`.
    The GKE service agent of the cluster's project,
    `service-<project number>@container-engine-robot.iam.gserviceaccount.com`, must hold
    `roles/cloudkms.cryptoKeyEncrypterDecrypter` on it before the cluster is created
    (docs/create-cluster-gke.md). Changing it later re-encrypts every Secret with the new key."""


class ClusterCreate(Model):
    """A cluster the platform creates (`cluster.create`)."""

    kubernetes_version: KubernetesVersion
    """The Kubernetes minor version, one the platform supports (quote it: `"1.35"`). Raising it
    upgrades the control plane in place, then the system nodes; the GPU pools follow their own
    pins (`aws.amiReleaseVersion`, `gcp.nodeVersion`). EKS and GKE upgrade one minor at a time."""
    endpoint: EndpointAccess = Field(default_factory=EndpointAccess)
    """Who reaches the Kubernetes API."""
    administrators: list[NotBlank] = Field(default_factory=list)
    """Who gets cluster-admin. On EKS, besides the identity that created the cluster (its access
    entry fixed at creation, whoever runs `pulumi up` later), IAM role or user ARNs (an access
    entry each, with `AmazonEKSClusterAdminPolicy`; docs/create-cluster.md). On GKE, besides the
    identity running `pulumi up`, Google group e-mails of one domain (a ClusterRoleBinding to
    cluster-admin through Google Groups for RBAC, whose `gke-security-groups@<domain>` must
    contain them, and `roles/container.clusterViewer` on the project to fetch credentials;
    docs/create-cluster-gke.md)."""
    aws: EksClusterCreate = Field(default_factory=EksClusterCreate)
    """EKS-only settings."""
    gcp: GkeClusterCreate = Field(default_factory=GkeClusterCreate)
    """GKE-only settings."""
