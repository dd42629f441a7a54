"""The component package's inputs: the config model's fields as the schema shows them.

Generated from `gpu_platform.config` by `python -m gpu_platform.package.inputs_generator`; do not
edit (`gpu_platform/package/inputs_generator.py` says why the types are plain).
"""

from typing import Any, Required, TypedDict

import pulumi


class EndpointAccessArgs(TypedDict, total=False):
    """Who reaches the cluster's Kubernetes API."""

    access: str
    """`private`: the API answers only inside the network (the VPC, peered networks, a VPN or
a bastion there), so `pulumi up`, which installs the platform through it right after
creating the cluster, must run there too. On EKS only from the networks and security
groups `aws.privateEndpointCidrs` and `aws.privateEndpointSecurityGroupIds` name, and never
for the first `pulumi up` into a new VPC, which nothing reaches yet: create the cluster
with `public`, then switch (docs/create-cluster.md, "First `pulumi up` on EKS").
`public`: it also answers on the internet, but only to `publicCidrs`. Either way requests
still need the cluster's credentials; this is the layer in front of them."""
    public_cidrs: list[str]
    """With `access: public`, the only addresses the public endpoint answers: the deployers'
and CI runners' egress ranges. Required there, and none wider than a /8 (`0.0.0.0/0`, or
its halves, would let the whole internet reach the API server). EKS takes at most 40
blocks (`publicAccessCidrs`), GKE's master authorized networks at most 50 (100 with a
private endpoint)."""


class EksNewVpcArgs(TypedDict, total=False):
    """A new VPC for the cluster: private subnets for every node, public ones only for NAT
    gateways and internet-facing load balancers, in three zones."""

    cidr: str
    """The VPC's IPv4 block, /16 to /20. The VPC CNI gives every pod an address of its node's
subnet, so the private subnets take three quarters of it (a quarter each); the public
subnets share what is left."""
    zones: list[str]
    """Exactly three zones of the region (`us-east-1a`), or none: then the region's first three
in which EKS can place a control plane (EKS refuses use1-az3, usw1-az2 and cac1-az3).
GPU pools take theirs from these (`pools[].zones` must be among them): name the zones
where your GPU instance types are offered."""
    nat_gateways: str
    """`one-per-zone`: each zone's private subnet reaches the internet through a NAT gateway in
the same zone, so that losing a zone leaves the other zones' nodes able to pull images.
`single`: one NAT gateway for all zones, costing a third, but a single point of failure and
cross-zone traffic. Unset: `one-per-zone` where `protect` is on (the production setting),
else `single`."""


class EksSystemNodesArgs(TypedDict, total=False):
    """The small on-demand node group where the platform's controllers run: CoreDNS, the
    cluster autoscaler or Karpenter, the GPU Operator's controllers, Prometheus. It is not
    tainted: everything the platform runs outside GPU nodes lands there without tolerations,
    while the GPU nodes' own taint keeps it off them."""

    instance_types: list[str]
    """On-demand, general-purpose instance types of one size (4 vCPU and 16 GiB each for
`m7i.xlarge`): Prometheus and the controllers fit on two with room to spare. Only types of
the On-Demand Standard quota (A, C, D, H, I, M, R, T, Z families), which preflight checks:
a GPU, accelerator or high-memory type would spend another quota on controllers."""
    min: int
    """At least two, so that the controllers survive a node's replacement; the group is spread
over the zones."""
    max: int
    """The most nodes the cluster autoscaler may grow the group to."""
    disk_size_gib: int
    """Each node's root volume (gp3, encrypted)."""
    ami_release_version: str
    """The EKS-optimized AL2023 release the nodes run (`1.35.6-20260714`), of the cluster's
Kubernetes version. Unset, each `pulumi up` takes the newest release EKS publishes for the
version (its public SSM parameter), and the group rolls onto it one node at a time: the
nodes that run the controllers get kernel and kubelet patches without anyone pinning them.
Pin it to decide when they change."""


class EksClusterCreateArgs(TypedDict, total=False):
    """What only an EKS cluster the platform creates has."""

    vpc: EksNewVpcArgs
    """The new VPC. Unset with `subnetIds` unset: a new VPC with these defaults."""
    subnet_ids: list[str]
    """Instead of a new VPC: existing private subnets, in at least two zones (EKS's minimum),
for the control plane's network interfaces and every node. Each must route to the internet
through a NAT gateway (or reach ECR, S3, EKS and STS through VPC endpoints) and carry the
tag `kubernetes.io/role/internal-elb: 1`; the public subnets of internet-facing load
balancers need `kubernetes.io/role/elb: 1`."""
    system_nodes: EksSystemNodesArgs
    """The system node group. Not set with `provisioner: eks-auto-mode`, whose cluster runs the
platform's own pods on Auto Mode's built-in `general-purpose` NodePool."""
    control_plane_logs: list[str]
    """The control plane logs EKS sends to CloudWatch Logs, of `api`, `audit`,
`authenticator`, `controllerManager` and `scheduler`; `audit` and `authenticator` are
required (who did what, as whom). The default leaves out the controller manager's and
scheduler's, as terraform-aws-eks does: on GPU batch clusters with many short pods they are
the most voluminous, and CloudWatch bills every GB ingested."""
    log_retention_days: int
    """How long CloudWatch keeps them (the values CloudWatch Logs accepts, from 30 days)."""
    support_type: str
    """EKS's support policy for the cluster's Kubernetes version (`upgradePolicy.supportType`).
`STANDARD`: when the version's standard support ends, EKS upgrades the control plane to the
next version itself; plan your upgrades before that. `EXTENDED`: the cluster may stay on
the version for another 12 months, but from the end of standard support EKS bills the
cluster at the extended support rate, six times the standard one (EKS pricing: $0.60 an
hour instead of $0.10). EKS's own default is `EXTENDED`; the platform's is `STANDARD`, so
that a cluster never starts costing more without anyone choosing it."""
    secrets_kms_key_arn: str
    """An existing symmetric KMS key to encrypt Secrets with, instead of the key the platform
creates for the cluster (rotated yearly, 30 days' deletion window)."""
    private_endpoint_cidrs: list[str]
    """The networks allowed to reach the private API endpoint on port 443: a VPN's or Direct
Connect's range, a peered VPC's, the subnet of a CI runner or bastion in the VPC. EKS's own
cluster security group admits only the cluster's nodes, so anything else, `pulumi up`
included, times out there without a rule. Each block becomes an ingress rule of the
security group the platform adds to the control plane (`<name>-api`), as terraform-aws-eks
does; none wider than a /8. With `endpoint.access: private` this or
`privateEndpointSecurityGroupIds` is required."""
    private_endpoint_security_group_ids: list[str]
    """Security groups whose members may reach the private API endpoint on port 443: a CI
runner's or a bastion's, in the cluster's VPC or a VPC peered with it in the same region;
for a runner on the cluster's own nodes, the cluster security group EKS made
(`clusterSecurityGroupId` of `aws eks describe-cluster`). Together with
`privateEndpointCidrs` at most 60 (EC2's default inbound rules per security group)."""
    vpc_cni_configuration: dict[str, Any]
    """More configuration values of the `vpc-cni` add-on, such as
`env: {ENABLE_PREFIX_DELEGATION: "true", WARM_PREFIX_TARGET: "1"}` (EKS user guide,
cni-increase-ip-addresses.adoc), sent with the platform's `enableNetworkPolicy: "true"`,
which may not be set here. They are the add-on's whole configuration: EKS replaces what the
add-on had with them at each update, so settings made by hand (`aws eks update-addon`)
are lost unless listed here. EKS checks them against the add-on version's schema (`aws eks
describe-addon-configuration --addon-name vpc-cni --addon-version <version>`) and refuses
the update otherwise."""
    creator_access: bool
    """Whether the identity that created the cluster keeps its cluster-admin access entry, as
terraform-aws-eks's `enable_cluster_creator_admin_permissions`. `false` deletes that entry
at the next `pulumi up`, unless the creator is among `administrators`: the way to retire
the identity that created the cluster. The identity running `pulumi up` must then be among
`administrators`, as the platform installs through the cluster's API with its access."""


class GkeNewNetworkArgs(TypedDict, total=False):
    """A new VPC network and subnet for the cluster, VPC-native: pods and Services take their
    addresses from the subnet's secondary ranges."""

    subnet_cidr: str
    """The nodes' range (4,096 addresses)."""
    pods_cidr: str
    """The pods' secondary range: each node takes a /24 of it (110 pods), so a /14 serves
1,024 nodes."""
    services_cidr: str
    """The Services' secondary range."""
    flow_log_sampling: float
    """The share of the subnet's flows VPC Flow Logs records (every 5 seconds, with all
metadata), 0 to turn them off. Cloud Logging bills what they write: a record per
connection and interval, so many short-lived connections (not bulk bytes such as NCCL's
few long ones) make them cost. 0.5 is what Google Cloud enables them with; CIS Google Cloud
Foundations asks for them on every subnet."""


class GkeExistingNetworkArgs(TypedDict, total=False):
    """An existing VPC network and subnet, with the secondary ranges for pods and Services."""

    network: Required[str]
    """The network's name (or self link)."""
    subnetwork: Required[str]
    """The subnet's name, in the cluster's region; it must have Private Google Access on and a
route to the internet through Cloud NAT for the nodes."""
    pods_range_name: Required[str]
    """Its secondary range for pods."""
    services_range_name: Required[str]
    """Its secondary range for Services."""


class GkeMaintenanceWindowArgs(TypedDict, total=False):
    """When GKE may upgrade the control plane and the nodes: a weekly recurring window."""

    start: str
    """The window's start, `HH:MM` in UTC."""
    duration_hours: int
    """Its length; GKE needs at least 4 contiguous hours."""
    days: list[str]
    """The days it opens on (RRULE `BYDAY`). GKE needs at least 48 hours of windows in any 32
days, which every day at the default 4 hours gives."""


class GkeMaintenanceExclusionArgs(TypedDict, total=False):
    """A time in which GKE does not upgrade the cluster (a launch, a training run)."""

    name: Required[str]
    start: Required[str]
    """Its start, ISO 8601 with its offset."""
    end: str
    """Its end; at most 30 days after `start` with scope `no-upgrades`. Required unless
`untilEndOfSupport`."""
    until_end_of_support: bool
    """Instead of `end`: until the cluster's current minor version leaves support (GKE's
`endTimeBehavior: UNTIL_END_OF_SUPPORT`), with scope `no-minor-upgrades` or
`no-minor-or-node-upgrades`. With the latter on a release channel (`extended` gives the
longest support), GPU nodes stay on their version for the life of the minor: the supported
way to hold them, where `releaseChannel: none` relies on a value the API has deprecated."""
    scope: str
    """What it holds back: `no-upgrades` every upgrade (at most 30 days, three such in a
cluster); `no-minor-upgrades` minor versions of control plane and nodes;
`no-minor-or-node-upgrades` minor versions and every node upgrade, so that GPU nodes
are not replaced while it lasts, while the control plane still gets patches."""


class GkeAuthorizedNetworkArgs(TypedDict, total=False):
    """A network allowed to reach the control plane's endpoint."""

    cidr: Required[str]
    display_name: str


class GkeSystemNodePoolArgs(TypedDict, total=False):
    """The small node pool where the platform's controllers run, untainted for the same reason
    as on EKS (`aws.systemNodes`)."""

    machine_type: str
    """Its machine type (4 vCPU, 16 GiB)."""
    min_per_zone: int
    """Nodes kept in each zone of the cluster's region (three zones: three nodes)."""
    max_per_zone: int
    """The most nodes the autoscaler may grow each zone to."""
    disk_size_gib: int


class GkeClusterCreateArgs(TypedDict, total=False):
    """What only a GKE cluster the platform creates has."""

    network: GkeNewNetworkArgs
    """The new network. Unset with `existingNetwork` unset: a new one with these defaults."""
    existing_network: GkeExistingNetworkArgs
    """Instead of a new network: an existing one."""
    release_channel: str
    """The release channel GKE upgrades the cluster on. `none` keeps the version pinned in
`version` (GKE still upgrades it when that version leaves support); the API has deprecated
it (`ReleaseChannel.channel: UNSPECIFIED`), so prefer a channel with a
`no-minor-or-node-upgrades` exclusion `untilEndOfSupport`. GPU pools pinned with
`gcp.nodeVersion` stay on their version until it leaves support; maintenance exclusions
hold back the rest."""
    version: str
    """With `releaseChannel: none`: the exact GKE version of the control plane
(`1.35.1-gke.1234000`), of `kubernetesVersion`'s minor. Unset, GKE picks the channel's
default of that minor."""
    maintenance_window: GkeMaintenanceWindowArgs
    """When GKE may upgrade."""
    maintenance_exclusions: list[GkeMaintenanceExclusionArgs]
    """When it may not."""
    authorized_networks: list[GkeAuthorizedNetworkArgs]
    """Further networks (a VPN's, a bastion's) allowed to reach the control plane, besides the
cluster's own subnet and `endpoint.publicCidrs` (GKE's master authorized networks)."""
    dns_endpoint: bool
    """Open GKE's DNS-based control-plane endpoint (`<id>.<region>.gke.goog`) to traffic from
outside Google Cloud, and have the platform's kubeconfig use it. It answers any address but
only Google identities that IAM allows `container.clusters.connect`, so a private cluster
(`endpoint.access: private`) is deployable from a laptop or a CI runner with no route into
the network. Off by default: the IP endpoints, as `endpoint` says, are then the only way
in."""
    private_endpoint_enforcement: bool
    """Hold the private endpoint, too, to the cluster's subnet, `endpoint.publicCidrs` and
`authorizedNetworks` (`masterAuthorizedNetworksConfig.privateEndpointEnforcementEnabled`,
as terraform-google-kubernetes-engine's safer-cluster sets for a private endpoint). Without
it any address of the network, of a peered network, or reached through a VPN or
interconnect reaches the private endpoint. With it, a runner, bastion or Cloud Build private
pool outside the cluster's subnet must be listed in `authorizedNetworks`, or reach the
cluster through `dnsEndpoint`; `false` is for a stack that cannot list them yet
(docs/create-cluster-gke.md)."""
    binary_authorization: str
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
    binary_authorization_allowed_images: list[str]
    """Image name patterns the platform's policy admits besides the platform's own images
(`admissionWhitelistPatterns`): `registry/path/image`, with a trailing `*` (one level) or
`**` (every level below), such as your workloads' registry or a mirror of NVIDIA's."""
    system_node_pool: GkeSystemNodePoolArgs
    """The system node pool."""
    secrets_kms_key_name: str
    """An existing Cloud KMS key to encrypt Secrets with (GKE's application-layer Secrets
encryption), instead of the key ring and key the platform creates in the cluster's region
(rotated every 90 days): its resource name,
`projects/<project>/locations/<the cluster's region>/keyRings/<ring>/cryptoKeys/<key>`.
The GKE service agent of the cluster's project,
`service-<project number>@container-engine-robot.iam.gserviceaccount.com`, must hold
`roles/cloudkms.cryptoKeyEncrypterDecrypter` on it before the cluster is created
(docs/create-cluster-gke.md). Changing it later re-encrypts every Secret with the new key."""


class ClusterCreateArgs(TypedDict, total=False):
    """A cluster the platform creates (`cluster.create`)."""

    kubernetes_version: Required[str]
    """The Kubernetes minor version, one the platform supports (quote it: `"1.35"`). Raising it
upgrades the control plane in place, then the system nodes; the GPU pools follow their own
pins (`aws.amiReleaseVersion`, `gcp.nodeVersion`). EKS and GKE upgrade one minor at a time."""
    endpoint: EndpointAccessArgs
    """Who reaches the Kubernetes API."""
    administrators: list[str]
    """Who gets cluster-admin. On EKS, besides the identity that created the cluster (its access
entry fixed at creation, whoever runs `pulumi up` later), IAM role or user ARNs (an access
entry each, with `AmazonEKSClusterAdminPolicy`; docs/create-cluster.md). On GKE, besides the
identity running `pulumi up`, Google group e-mails of one domain (a ClusterRoleBinding to
cluster-admin through Google Groups for RBAC, whose `gke-security-groups@<domain>` must
contain them, and `roles/container.clusterViewer` on the project to fetch credentials;
docs/create-cluster-gke.md)."""
    aws: EksClusterCreateArgs
    """EKS-only settings."""
    gcp: GkeClusterCreateArgs
    """GKE-only settings."""


class ClusterSpecArgs(TypedDict, total=False):
    """The cluster the stack runs on: an existing one it attaches to, or, with `create`, one
    the platform creates."""

    name: Required[str]
    """The cluster's name: the existing cluster's, or the one `create` gives the new cluster. A
GKE cluster the stack creates takes GKE's names: up to 40 lowercase letters, digits and
hyphens, beginning with a letter and ending with a letter or digit."""
    create: ClusterCreateArgs
    """Create the cluster (and on EKS its VPC) instead of attaching to an existing one
(docs/create-cluster.md). Unset: attach to the cluster `name` names."""
    region: str
    """AWS region of the EKS cluster: one of the `aws` partition, whose ARNs the IAM documents
in docs/iam/ name (not `cn-*` or `us-gov-*`)."""
    project: str
    """GCP project of the GKE cluster."""
    location: str
    """GKE cluster location: a region (regional cluster) or a zone (zonal cluster)."""
    node_image: str
    """GPU node OS: `al2023` (default) or `bottlerocket` on EKS; `cos` (default) or `ubuntu`
on GKE. It decides who installs the driver, so it holds for every pool of the stack."""
    kubeconfig_context: str
    """Use this context of the local kubeconfig instead of building access from the cluster."""
    node_subnet_ids: list[str]
    """EKS: subnets for the GPU nodes, used as given; each must be private, its route table
sending nothing to an internet gateway. Empty means the cluster's own private subnets."""
    cni_policy_on_node_role: bool
    """EKS: attach `AmazonEKS_CNI_Policy` to the node roles the stack creates, as EKS does by
default. Off: on a node role its network-interface permissions reach every pod that can
reach the instance's credentials (a hostNetwork pod, for one); the VPC CNI gets them from
its own role instead (`vpcCniRole`)."""
    vpc_cni_role: bool
    """EKS: give the VPC CNI (`kube-system/aws-node`) its own role, `<prefix>.vpc-cni` with
`AmazonEKS_CNI_Policy`, through a Pod Identity association the stack creates. It serves
every node's CNI, not only the GPU nodes'. Turn it off where the cluster gives the CNI its
identity otherwise (IRSA, or the add-on's own Pod Identity association): EKS takes one
association per service account (docs/iam/README.md)."""
    node_monitoring_agent_version: str
    """EKS: the version of the `eks-node-monitoring-agent` add-on (`aws eks
describe-addon-versions --addon-name eks-node-monitoring-agent` lists them), instead of the
one the platform pins. The agent is installed wherever a node group repairs its nodes
(`aws.nodeRepair`), with its DCGM server tolerating every taint, so that repair also acts
on nodes whose GPUs fail while the kubelet stays Ready; with Karpenter, only when this is
set. It runs its own DCGM host engine beside the GPU Operator's exporter, which AWS does not
support reusing (docs/gpu-health.md)."""


class TaintSpecArgs(TypedDict, total=False):
    """An extra Kubernetes taint, spelled as Kubernetes spells it."""

    key: Required[str]
    value: str
    effect: Required[str]
    """Kubernetes spelling; each cloud component translates it."""


class GpuPoolSpecSharingArgs(TypedDict, total=False):
    """One of: `exclusive`; `time-slicing`, `replicas`; `mps`, `replicas`; `mig`, `strategy`,
    `profile`."""

    mode: Required[str]
    """One of `exclusive`, `time-slicing`, `mps`, `mig`."""
    replicas: int
    """`time-slicing`: Containers per GPU; each node advertises GPUs x replicas `nvidia.com/gpu`. At
most 48 on GKE, whose own device plugin shares the GPUs there.
`mps`: Containers per GPU, each with an equal share of its memory."""
    strategy: str
    """`mixed`, which advertises slices as `nvidia.com/mig-<slice>`. `single` is refused: it
advertises slices as `nvidia.com/gpu`, the name a new node's whole GPUs carry until the MIG
manager has partitioned them, so a pod can get a whole GPU (gpu-operator#2670)."""
    profile: str
    """A uniform MIG manager profile such as `all-1g.10gb`."""


class PoolValidationArgs(TypedDict, total=False):
    """How each new node of the pool proves itself whole before work lands on it
    (docs/node-validation.md)."""

    enabled: bool
    """Every new node joins with the validation taint, and only a node whose validation passed
takes the pool's GPU pods. Off, a node takes them as soon as its device plugin advertises
GPUs, however broken it joined."""
    dcgm_diag_level: int
    """The DCGM diagnostic's level: 1 takes seconds; 2 about two minutes more per node, and
finds faults (PCIe, memory bandwidth) that level 1 does not."""
    skip_checks: list[str]
    """Checks not to run on this pool's nodes: `gpu-count`, `driver`, `ecc`, `memory`, `pcie`,
`nvlink`, `dcgm-diag`, `nccl-bandwidth`, `efa`."""
    expected_bus_bandwidth_gbps: float
    """The all-reduce bus bandwidth in GB/s (nccl-tests' `busbw`) a whole node of the pool's
type reaches across its GPUs: set, the NCCL check runs on the pool's nodes of more than one
GPU. Unset, it does not: neither NVIDIA nor the clouds publish such a figure for any GPU
model, so there is no default to hold a node to (docs/node-validation.md). The test's image
is built on CUDA 12.8: the pool's driver must be of branch 570 or later."""
    bus_bandwidth_share: float
    """The share of `expectedBusBandwidthGbps` a multi-GPU node must reach in the NCCL check."""
    replacements_per_hour: int
    """How many of the pool's nodes that failed validation may be replaced in any hour: the
failed Node is deleted, and Karpenter terminates its instance and launches another. Beyond
it a failed node stays, tainted, until someone looks (a bad release must not churn the
fleet); 0 never replaces. Karpenter pools only (`provisioner: karpenter`), where it is 2
unless set: nothing terminates a node group's or GKE node pool's instance for a deleted
Node (docs/node-validation.md)."""


class DriftWindowArgs(TypedDict, total=False):
    """A recurring window, in UTC, in which Auto Mode may start replacing the pool's drifted
    nodes, whatever drifted them (a new Auto Mode AMI, the stack's change to the pool's NodePool
    or NodeClass); outside it none is started (a drain begun inside it runs to its end). Expiry
    is not drift: a node still leaves 21 days after it started, window or not."""

    schedule: Required[str]
    """When the window opens, in cron's `minute hour * * day-of-week` (UTC, day 0 is Sunday):
`0 2 * * 6` each Saturday at 02:00, `0 2 * * *` each day at 02:00."""
    duration: Required[str]
    """How long the window stays open, in hours and minutes (`4h`, `90m`, `1h30m`): more than
none and less than the day or week it recurs in."""


class EksPoolOptionsArgs(TypedDict, total=False):
    """Settings that only an EKS managed node group has."""

    ami_release_version: str
    """The EKS-optimized NVIDIA AMI release the pool's nodes run, required on EKS:
`1.35.6-20260714` on AL2023 (the cluster's Kubernetes version, then the build date),
`1.54.0-0d4a7f31` on Bottlerocket. It decides the NVIDIA driver, and so the newest CUDA the
pool's pods may use: the platform knows the driver of every release in its tables
(gpu_platform/drivers.py). Moving it replaces the pool's nodes within
`maxUnavailablePercent`; move a pool's `canaryOf` pool first."""
    node_role_arn: str
    """An existing node IAM role to use instead of creating one for the pool."""
    metadata_hop_limit: int
    """IMDSv2 hop limit: 1 keeps pods from reaching the node's credentials; 2 only for
workloads that must call IMDS through an extra network hop (no IRSA or Pod Identity)."""
    capacity_reservation_id: str
    """The EC2 capacity reservation (`cr-...`) the pool launches into: the Capacity Block of a
`capacity-block` pool, or the on-demand capacity reservation of a `reserved` pool (or
`capacityReservationResourceGroupArn`). Name its zone in `zones`."""
    capacity_reservation_resource_group_arn: str
    """A `reserved` pool on managed node groups: the resource group of on-demand capacity
reservations it launches into, instead of one `capacityReservationId`."""
    capacity_block_start: str
    """A `capacity-block` pool: when the block starts (ISO 8601 with its offset, as EC2 reports
it), so that its node group grows to `max` then, while the block is still ahead; `preflight`
checks it against the block."""
    on_demand_fallback: bool
    """A `spot` or `reserved` pool: launch on-demand nodes when no spot or reserved capacity is
to be had, instead of leaving pods pending. Off by default, so that a pool never costs more
than was planned for it. Managed node groups can do so only for a `reserved` pool on a
resource group (docs/capacity-reservations.md). Under Karpenter a reserved pool's fallback
launches its own sizes on demand, ahead of the on-demand and spot pools, spot pools of the
same sizes included: the plan refuses it beside an on-demand pool with a size of the same GPU
model, of fewer GPUs, vCPUs or memory, that the pool does not list, and beside a spot pool
with any size of that model up to the pool's largest, whose own `onDemandFallback` falls back
after spot instead (docs/karpenter.md, Reservations and Capacity Blocks)."""
    max_unavailable_percent: int
    """Replace up to this share of the pool's nodes at once on an update (a new AMI release,
launch template or labels); unset replaces one node at a time. EKS drains each node first,
waiting up to 15 minutes for its pods' disruption budgets before it fails the update. Under
Karpenter it is the budget of drifted nodes, 10% (rounded up) where unset
(docs/karpenter.md, Disruption budgets)."""
    empty_nodes_budget_percent: int
    """Karpenter: the share of the pool's nodes it may remove at once for being empty. All of
them by default, so that a large teardown is not paced one node at a time and a node that
stays NotReady (Karpenter counts it against every budget of its pool) does not keep the
idle ones running."""
    consolidate_after_minutes: Any
    """Karpenter: how long one of the pool's nodes must have been empty before Karpenter
removes it, or `never`. Unset, `never` for a `capacity-block` pool and a `reserved` pool
without `onDemandFallback` (their capacity is paid for whether a node runs on it or not),
else `karpenter.consolidateAfterMinutes`."""
    drift_window: DriftWindowArgs
    """EKS Auto Mode: when the pool's nodes may be replaced for drift, which Auto Mode's own AMI
releases (about weekly) cause, as do the stack's changes to the pool's NodePool (its labels,
taints, startup taints, requirements, `terminationGracePeriod`, `expireAfter`) or NodeClass:
`{schedule: "0 2 * * 6", duration: "4h"}` starts them only in that window, each Saturday
from 02:00 UTC, `maxUnavailablePercent` at a time. After a Kubernetes version upgrade of the
control plane, AWS says Auto Mode replaces nodes as they expire; whether it drifts them too,
which a window would hold, is not published. Unset, no drifted node is ever replaced: the
pool's nodes leave only as they expire, 21 days after they start, paced by no disruption
budget (nodes started together leave together), or, where the pool consolidates, once
empty; `gpu-platform plan` warns. A node being replaced has its pods,
`karpenter.sh/do-not-disrupt` ones included, deleted `karpenter.terminationGracePeriodHours`
later, window or not (docs/eks-auto-mode.md, Node updates)."""
    node_repair: bool
    """Have EKS replace or reboot the pool's nodes that turn unhealthy (kubelet `NotReady`, and
through the node monitoring agent, `AcceleratedHardwareReady=False`: GPU XIDs, double-bit
ECC and NVLink errors), one node at a time. XIDs that NVIDIA's catalog answers with an
application restart or no action (13, 31, 43, 45, 94, ...) take no repair: they end one
tenant's process, not the node of every tenant on it (docs/gpu-health.md). On arm64 pools
(`g5g`) the agent watches no GPU: only the kubelet's and its other conditions repair."""
    node_repair_max_unhealthy_nodes: int
    """Stop repairing while more than this many of a node group's nodes are unhealthy, which
points at a cause no replacement fixes (counted per node group, so per zone with
`nodeGroupPerZone`). Unset sets no threshold: EKS then pauses repairs only in a node group
of more than five nodes with more than a fifth of them unhealthy, so one bad node of a small
pool is always repaired."""
    update_strategy: str
    """How EKS replaces the pool's nodes on an update: `minimal` terminates each old node before
its replacement starts, so the pool never holds more GPU instances than its size;
`default` starts replacements first (up to two extra nodes per zone), which needs spare
capacity that scarce or reserved GPU types rarely have (the update fails with
NodeCreationFailure), but keeps the pool's capacity during the update."""
    volume_throughput_mibps: int
    """Throughput of the gp3 volume that holds the container images, in MiB/s (gp3: 125 to
1000, at most a quarter of the IOPS)."""
    volume_iops: int
    """IOPS of that volume (gp3: 3000 to 16000)."""
    efa: bool
    """A pool for training across nodes: its nodes get one Elastic Fabric Adapter per network
card (the first also carrying the node's ordinary traffic, the others EFA-only), a security
group that lets EFA traffic flow between them, and a `cluster` placement group, so that they
start close together in the pool's one zone (`zones` must name exactly one). A
`capacity-block` or `reserved` pool gets no placement group: EC2 places a Capacity Block's
instances close together itself, and matches a launch into a placement group only to
reservations made in that group (docs/karpenter.md, EFA). Pods ask for
`vpc.amazonaws.com/efa`, which the EFA device plugin (installed with the first such pool)
advertises. Every instance type must support EFA, and all must take the same number of EFA
interfaces (a pool's nodes launch with one list of them). Changing it replaces the launch
template and rolls the pool's nodes."""
    node_group_per_zone: bool
    """One node group per zone of the pool instead of one across them. The cluster autoscaler
gives a group's scale-from-zero template one zone, its Auto Scaling group's first, so a pod
bound to another zone (a zonal volume, a zone selector) never scales a multi-zone group up, and
EC2's AZ rebalancing moves nodes between zones without draining them. Per zone, each group
has its own zone in its template, and `balance-similar-node-groups` spreads scale-ups over
them; `min` and `max` are shared out over the zones (the pool's `max` stays its total, so
each zone can grow only to its share). Changing it replaces the pool's node groups."""
    atomic_scale_up: bool
    """Bring up the nodes of a queued job all together or none (docs/queues.md, All-or-nothing
scale-up): with `queues.enabled`, a job Kueue admits on this pool waits until a
ProvisioningRequest of the cluster autoscaler's `best-effort-atomic-scale-up` class has
scaled the pool up for all its pods, and the autoscaler runs with
`--enable-provisioning-requests`. The cluster autoscaler only: Karpenter has no
ProvisioningRequests. Not with `nodeGroupPerZone`, whose zonal node groups the autoscaler
would split one job's nodes over; give the pool one zone (`zones`) to keep a job's nodes
in it."""
    instance_families: list[str]
    """Karpenter: instead of `instanceTypes`, every size of these EC2 instance families (`g6`,
`g6e`) that has the pool's `accelerator`, which must then be given. The NodePool requires
`karpenter.k8s.aws/instance-family` In them and `karpenter.k8s.aws/instance-gpu-name` In the
GPU's EC2 name, as data-on-eks writes its GPU NodePools, so Karpenter picks the size per
pending pod. The sizes, and from the largest the pool's limits, come from the platform's
table of GPU instance types (gpu_platform/eks/max_pods), checked against EC2 in the region;
a family it has no GPU instance type of is refused (docs/karpenter.md, Flexible pools)."""
    instance_categories: list[str]
    """Karpenter: as `instanceFamilies`, by EC2 instance category (`g`, `p`): the NodePool
requires `karpenter.k8s.aws/instance-category` In them. Not beside `instanceFamilies`."""
    local_nvme: bool
    """Keep container images and pod scratch space on the instance's local NVMe drives (one
RAID0 array) where every instance type has at least `diskSizeGib` of them: on AL2023, and
on Bottlerocket from release 1.22.0."""


class GkePoolOptionsArgs(TypedDict, total=False):
    """Settings that only a GKE node pool has."""

    service_account: str
    """An existing node service account e-mail instead of the one created for the pool (which
holds only `roles/container.defaultNodeServiceAccount`)."""
    autoscaling_scope: str
    """Whether `min`/`max` count nodes across all zones of the pool or in each zone."""
    disk_type: str
    """Boot disk type; unset is `pd-balanced`, or `hyperdisk-balanced` on A3 Ultra and A4
machine types, which take no Persistent Disk. N1, A2 and G2 take no Hyperdisk."""
    max_surge: int
    """Extra nodes GKE adds while it surge-upgrades the pool: each is another GPU machine that
must be available to start. Unset: 1, but 0 on a `reservation: specific` pool, as GKE counts
surge nodes against the reservation, which holds none beyond the pool's own, and keeps
retrying the upgrade while it has no room. Set it there only where the reservation holds
spare VMs, which `gpu-platform preflight` checks."""
    max_unavailable: int
    """Nodes GKE takes out of service at once to surge-upgrade them in place. Unset: 1 where
`maxSurge` is 0, else 0. One of the two must be above 0."""
    upgrade_strategy: str
    """How GKE upgrades the pool's nodes. `surge` replaces them a few at a time
(`maxSurge`, `maxUnavailable`), honouring PodDisruptionBudgets for at most an hour before it
evicts. `blue-green` starts a new node for every old one, cordons the old ones, drains them
a node at a time as soon as the new ones are up, and keeps them for `blueGreenSoakHours`
before deleting them, so that a bad version can be rolled back onto nodes that still exist,
on capacity that can double for the length of an upgrade; with `blueGreenDrainWaitHours`,
GKE's autoscaled blue-green instead (in Preview), which waits that long for the old nodes'
jobs to end before it drains them: for pools of long training jobs. Not on a `reservation:
specific` pool, nor with `flexStart` or `queuedProvisioning`, whose nodes GKE replaces as
they end. Changing it does not replace the pool."""
    blue_green_drain_wait_hours: int
    """`upgradeStrategy: blue-green` only: take GKE's autoscaled blue-green rollout (in Preview),
which cordons the old nodes, lets the autoscaler start new ones as pods need them, and waits
this long before it drains the old nodes, evicting the jobs still running there (the API's
`waitForDrainDuration`). Set it above the longest job. Unset: the standard rollout, which
drains the old nodes as soon as the new ones are up."""
    blue_green_soak_hours: int
    """`upgradeStrategy: blue-green` only: how long GKE keeps the drained old nodes before it
deletes them (the API's `nodePoolSoakDuration`); unset, GKE's default."""
    node_version: str
    """The GKE version of the pool's nodes (`1.34.1-gke.1829001`), and with it, on COS, the
NVIDIA driver GKE's installer loads; unset follows the cluster's version. Pin it on a
`canaryOf` pool to try a new version there first. GKE still upgrades a pinned pool when its
version leaves support, and clusters on a release channel when auto-upgrade runs, unless a
maintenance exclusion holds it."""
    cos_driver_branch: int
    """COS only: the NVIDIA driver branch (`580`) COS loads for the pool's GPU on its nodes' GKE
version, for a version whose default the lock does not have yet (`gpu-platform lock`,
docs/lock.md: GKE 1.34 and later, B200). At least 550 for H200 and 570 for B200; where the
lock or the hand table (gpu_platform/driver_tables/cos.py) gives COS's default, only that
branch (Google's installer loads it whatever the pool says). The smoke test checks it on the
pool it runs on."""
    driver_version: str
    """Ubuntu only: the NVIDIA driver the GPU Operator builds on this pool's nodes (its own
NVIDIADriver resource), instead of `operator.driverVersion`. Set it on a `canaryOf` pool
to try a new driver there first; the other pool may not run one newer than its canary.
Changing it reloads the driver on the pool's nodes within the `operator.driverUpgrade...`
settings."""
    reservation: str
    """Which Compute Engine reservations the pool's nodes consume. Unset leaves it to Compute
Engine, whose default consumes any matching reservation open to all VMs of the project
(GKE marks the setting as replacing the pool, so a pool is never replaced for not stating
it); flex-start and queued pools consume none. `none` takes no reservation meant for other
workloads; `any` matching reservation, and on-demand
capacity once none has room; or only the one named in `reservationName`, with no on-demand
fallback: while it is full, no node starts. Not with Spot, flex-start or queued
provisioning. Changing it replaces the node pool (docs/gke-capacity.md)."""
    reservation_name: str
    """The reservation of a `reservation: specific` pool: its name, in the cluster's project, or
`projects/<owner>/reservations/<name>` for a reservation another project shares with the
cluster's (a central capacity project's). Reservations are zonal: name its zone, and only
that one, in `zones`. `preflight` checks it where it can read it."""
    flex_start: bool
    """Obtain the nodes as flex-start VMs (Dynamic Workload Scheduler): GPUs at its discounted
prices, started when capacity is found, each removed after `maxRunHours`. Needs a cluster
and nodes on GKE 1.32.2-gke.1652000 or later, on-demand capacity, no reservation and `min`
0; their node auto-repair is off, as in GKE's guides."""
    queued_provisioning: bool
    """Nodes come only through a ProvisioningRequest, all of a request's nodes at once, and
carry the `cloud.google.com/gke-queued` taint (docs/gke-capacity.md). Needs `min` 0 and no
reservation; GKE's guide pairs it with `flexStart`."""
    max_run_hours: int
    """A `flexStart` pool: how long each node may run before GKE removes it, at most 168 hours
(7 days, also GKE's default). A queued pool's requests set theirs with the
ProvisioningRequest's `maxRunDurationSeconds`."""


class GpuPoolSpecArgs(TypedDict, total=False):
    """One pool of GPU nodes, described once for every cloud."""

    name: Required[str]
    """Names the pool's node group or node pool and its `gpu-platform.io/pool` node label."""
    instance_types: list[str]
    """EC2 instance types, or one GCE machine type; required unless a Karpenter pool names
`aws.instanceFamilies` or `aws.instanceCategories` instead. On managed node groups several
EC2 types must share one shape (GPUs, vCPUs, memory, architecture): the cluster autoscaler
plans a node group's nodes from zero as its first type. Under Karpenter they may be sizes of
one GPU model and architecture (`g6.xlarge`, `g6.12xlarge`): Karpenter picks one per pending
pod."""
    accelerator: str
    """The GPU model. Read from the machine when left out: on EKS from the instance type, on GKE
from accelerator-optimized machine types (A2, A3, A4, G2); N1 pools must state it."""
    gpus_per_node: int
    """GPUs per node, read from the machine like `accelerator` when left out."""
    min: int
    """Nodes kept when idle. Every node above zero bills around the clock."""
    max: Required[int]
    """The most nodes the autoscaler may start: the pool's cost ceiling. Under Karpenter, limits
of `max` nodes and of `max` times the GPUs and vCPUs of the pool's largest instance type,
which a fast scale-out can pass by a node or two, and drift by its Drifted budget's nodes
while the old ones drain (docs/karpenter.md, Limits)."""
    capacity: str
    """How the nodes are bought: `reserved` consumes EC2 on-demand capacity reservations
(`aws.capacityReservationId` or `aws.capacityReservationResourceGroupArn`), `capacity-block`
an EC2 Capacity Block (docs/capacity-reservations.md); GKE reservations are
`gcp.reservation`."""
    zones: list[str]
    """Zones to place nodes in, kept only where every instance type is offered. Empty means
every zone of the cluster's node subnets (EKS) or of its region that offers the machine
type (GKE); GKE N1 pools with attached GPUs must list theirs."""
    disk_size_gib: int
    """Root disk; CUDA and framework images run to tens of GiB before any model weights."""
    labels: dict[str, str]
    """Extra node labels; the platform's own (`nvidia.com/`, `gpu-platform.io/`) are reserved."""
    taints: list[TaintSpecArgs]
    """Extra taints, on top of `nvidia.com/gpu=present:NoSchedule` that every pool has."""
    sharing: GpuPoolSpecSharingArgs
    """How workloads share a GPU: `exclusive`, `time-slicing`, `mps` (EKS only) or `mig`. On
GKE with `nodeImage: cos`, GKE's own device plugin shares `time-slicing` and `mig` pools,
and `exclusive` pools keep the operator's; a stack may mix them, each kind of node with a
DCGM exporter that finds its pods (docs/gpu-sharing.md)."""
    canary_of: str
    """Makes this pool the canary of another pool of the same GPUs and sharing mode: a new AMI
release (EKS), node version (GKE) or, on GKE Ubuntu, driver (`gcp.driverVersion`) goes here
first, and the other pool may not run one newer than its canary. Its nodes carry
`gpu-platform.io/canary-of` and are meant for pods that select the canary by its pool label
(a smoke test, a team's canary job): the cluster autoscaler and Karpenter rank every canary
below every other GPU pool, whatever its capacity, so that a pod that selects no canary
starts a canary node only while no other pool it fits can grow (at its `max`, or out of
capacity). The other pool's nodes (and, on GKE Ubuntu, its NVIDIADriver) are updated
only after the canary's: whenever the canary's driver or what pins it changes, `pulumi up`
first runs a gate Job on a canary node of the new release (on a validated canary, once the
node has passed validation with the new driver; then `nvidia-smi` and the driver check, and
`canarySoakMinutes` of `nvidia-smi` every minute), and a gate that fails stops the update
before the other pool changes, a failed validation with the check's name
(docs/upgrades.md). The gate is a plain pod, so a
canary may not be on capacity that never starts a node for one: not `capacity-block` (EKS),
nor `gcp.queuedProvisioning` (GKE, nodes only for a ProvisioningRequest), nor only the
targeted reservation of the pool it leads, which that pool fills at its `max` (without
`aws.onDemandFallback`; a `gcp.reservation: specific` of the same name)."""
    canary_soak_minutes: int
    """A `canaryOf` pool: how long its gate Job keeps checking the canary's GPU, every minute,
after its node passed validation (where the canary validates its nodes) and the driver
check, before the pool it leads is updated. The gate's deadline allows for it on top of the
node's start and validation."""
    allocation: str
    """How pods get the pool's GPUs. `device-plugin`: the GPU Operator's device plugin (or, on
GKE COS, GKE's) advertises them as `nvidia.com/gpu`, and a pod asks for a count. `dra`:
NVIDIA's DRA driver publishes each GPU as a device, and a pod claims GPUs of a model through
a ResourceClaim (Kubernetes 1.34 and later; EKS with the cluster autoscaler only, `min` at
least 1, `exclusive` sharing, no canary, smoke test or queue, and every GPU pool of the stack
`dra` or none: docs/dra.md)."""
    validation: PoolValidationArgs
    """How each new node proves itself before the pool's GPU pods land on it."""
    aws: EksPoolOptionsArgs
    """EKS-only settings."""
    gcp: GkePoolOptionsArgs
    """GKE-only settings."""


class OperatorSpecArgs(TypedDict, total=False):
    """The NVIDIA GPU Operator release."""

    chart_version: str
    """The `gpu-operator` chart version. The values the platform sets are checked against the
pinned version's keys only: another version is for trying an upgrade in one environment,
whose policy config declares the release (`platform-release-rollback`'s
`platformReleases`: docs/upgrades.md). Not beside a DRA pool, whose premises were read at the
pinned version (docs/dra.md)."""
    repository: str
    """The Helm repository serving the chart, for a mirror of NVIDIA's; the stack's policy
config declares the mirrored release (`platform-release-rollback`'s `platformReleases`:
docs/upgrades.md)."""
    namespace: str
    """The operator's own namespace, which the platform runs as Pod Security `privileged`: the
drivers, toolkit and device plugin need the host. The only other is node-exporter's, where
the platform installs the Prometheus stack."""
    timeout_seconds: int
    """How long Helm waits for the release to be ready (its CRD upgrade Job, the operator, and
node-feature-discovery's worker on every node), and then for a rollback of a failed
upgrade as long again. Unset: 900 s and 5 s more for each node the GPU pools can have
together at their `max`, at most 3600 s. The drivers, toolkit and device plugin the
operator starts are not waited for."""
    critical_pod_quota: int
    """GKE only: how many `system-node-critical`/`system-cluster-critical` pods the operator's
namespace may hold. GKE admits them outside kube-system only under a quota, and the chart's
node-feature-discovery worker runs on every node of the cluster, GPU or not, beside about
eight operator pods on each GPU node: keep it above all of those together."""
    driver_version: str
    """GKE Ubuntu: the NVIDIA driver the operator builds on the nodes of every pool that sets
no `gcp.driverVersion`, pinned so that a chart upgrade does not move it. A new one rolls out
through the operator's upgrade controller, pool by pool within
`driverUpgradeMaxUnavailablePercent`."""
    driver_upgrade_max_unavailable_percent: int
    """GKE Ubuntu: the most nodes of a pool the operator takes out of service at once to load a
new driver (at most one node of a pool at a time is upgraded, whatever the share)."""
    driver_upgrade_job_wait_minutes: int
    """GKE Ubuntu: how long the operator waits for the Jobs' pods on a node to finish before it
deletes the GPU pods left and loads the new driver there; 0 waits for ever (not with a
`canaryOf` pool, whose gate waits for the new driver on a canary node)."""
    overrides: dict[str, dict[str, Any]]
    """Chart values per top-level component (`dcgmExporter`, `driver`, ...), deep-merged over
the platform's own values last: maps key by key, lists replaced whole, except
`dcgmExporter.env`, merged by `name` into the platform's (an entry of a name the platform
sets takes its place). Its entries need a `name`, and none may be
`DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE`, which the platform sets from each exporter's device
plugin. Component names are checked against the chart's. An operand's image is its
`repository`, `image` (a name, with no tag, digest or port) and `version` together, or
`image` alone as the whole reference (`registry/name:tag[@sha256:digest]`) with
`repository: ""` and `version: ""` set too, as the operator reads them; `validator`'s and
`nodeStatusExporter`'s only the first, as the chart renders their empty `version` as its
own. The ClusterPolicy is the chart's custom resource:
`clusterPolicy.deployCR` other than true and `gpuCluster.deployCR` other than false are
refused (docs/dra.md). With pools GKE shares, `dcgm.enabled`, `cdi.nriPluginEnabled` and
`dcgmExporter.hpcJobMapping.enabled` are refused, which the exporter on those nodes cannot
follow (docs/gpu-sharing.md); with DRA pools, `devicePlugin.enabled` other than false, a
`dcgmExporter.env` entry `KUBERNETES_ENABLE_DRA`, a `dcgmExporter.args` flag
`--kubernetes-enable-dra` and an exporter image older than the pinned chart's
(docs/dra.md). `namespaceOverride`
and `extraObjects`, `extraManifests` or `extraResources` are refused at any depth: they
would make the release one the policy pack takes for the stack's own (docs/concepts.md,
"Helm releases"). The pack judges no other value set here, but on GKE Ubuntu
`driver.repository` and `driver.image`: every pool's NVIDIADriver runs the image they name,
which the stack's policy config lists as `<repository>/<image>` in
`gpu-operator-resources`' `driverImages` (a mirror of NVIDIA's driver), or the pack refuses
those NVIDIADrivers; `gpu-platform plan` says so by key (docs/upgrades.md, "A mirror of the
driver on GKE Ubuntu")."""


class MonitoringSpecArgs(TypedDict, total=False):
    """GPU metrics, alerts and dashboards."""

    namespace: str
    """Where the GPU alert rules and dashboard go, and the Prometheus stack when installed; not
the operator's namespace. The platform creates it only with `installPrometheusStack`;
otherwise it must already exist and be one the cluster's Prometheus reads rules from and its
Grafana reads dashboards from."""
    install_prometheus_stack: bool
    """Install a pinned kube-prometheus-stack; leave off where the cluster already runs the
Prometheus Operator. Required with `cluster.create`: a created cluster has none. Its
namespace enforces Pod Security `baseline`; its node-exporter, which needs the host, runs in
`<namespace>-node-exporter`, `privileged`."""
    service_monitor_labels: dict[str, str]
    """Labels the cluster's Prometheus selects ServiceMonitors and PrometheusRules by. With
`installPrometheusStack` they must include `release: kube-prometheus-stack`, the installed
stack's selector."""
    idle_gpu_minutes: int
    """How long a GPU held by a pod may stay idle before the alert fires."""
    idle_gpu_utilization_percent: int
    """GPU utilisation, in percent, below which a GPU held by a pod counts as idle."""
    framebuffer_full_percent: int
    """GPU memory use, in percent of used plus free, above which a pod's GPU counts as nearly
full."""
    team_label: str
    """The namespace label whose value names the team a namespace belongs to: GPU-hours are
recorded per namespace and per team, and `teamIdleGpuPercent` judges each team
(docs/gpu-hours.md). kube-state-metrics must export it on `kube_namespace_labels`, and the
pool label `gpu-platform.io/pool` on `kube_node_labels`: the installed Prometheus stack's
does; another must allow both (`--metric-labels-allowlist`)."""
    team_idle_gpu_percent: int
    """The share, in percent, of the GPU-hours a team's namespaces held in the last hour that
did no work, above which (for an hour) the team's idle alert fires. 50 keeps a job's start
quiet unless its GPUs idle for more than half of its first hour."""
    google_managed_prometheus: bool
    """GKE only: also have Google Cloud Managed Service for Prometheus scrape the DCGM exporters
(the operator's, and on nodes whose GPUs GKE shares the platform's), under the job
`nvidia-dcgm-exporter` the rules select, and evaluate the recording rules
(ClusterRules), which a query frontend as `prometheusUrl` then answers from. Its GPU series
keep the `pod`, `namespace` and `container` of the workload holding each GPU, as on
Prometheus (not `exported_pod`). The alert rules and the dashboard remain Prometheus
Operator and Grafana objects, so the cluster still needs the Prometheus Operator's CRDs (or
`installPrometheusStack`). On a cluster the platform creates, it also turns on GKE's managed
collection, which installs the Managed Service's CRDs."""
    prometheus_url: str
    """Where the enforcer of `namespaces[].gpuIdleMinutes` queries Prometheus's HTTP API, with
no credentials: a Service of the cluster's Prometheus, such as
`http://prometheus-operated.monitoring.svc:9090` (the Prometheus Operator's), or a query
frontend of a managed one. By default, the Prometheus of `installPrometheusStack`."""


class TenantQueueSpecArgs(TypedDict, total=False):
    """Whether a tenant's jobs go through Kueue, and how much of its GPU quota its ClusterQueue
    borrows and lends within the cohort."""

    enabled: bool
    """With `queues.enabled`: give the namespace its queue. `false` leaves it out of Kueue: no
ClusterQueue or LocalQueue, and Kueue's webhooks, the policy pack's queue rule and the
cluster's admission policy for queued GPU pods leave its workloads alone; its GPU pods
start as the scheduler and its ResourceQuota allow. The place for GPU services
(Deployments, StatefulSets, notebooks), which Kueue does not queue and whose GPUs, in a
queued namespace, Kueue would not count (docs/queues.md)."""
    borrowing_limit: int
    """The most GPUs (or replicas, or slices) of each pool beyond its quota that the tenant may
borrow from the cohort; 0, none. The namespace's ResourceQuota allows that many more of
each GPU resource for each pool that hands it out (Kueue holds the limit on each pool
apart), so that what Kueue lends it can run: a pod outside Kueue's jobs (the cluster's
admission policy catches mistakes, not intent) may then take the quota and this many on
each pool, so keep it small where many pools hand out one resource. Lower it only once
the tenant borrows nothing on any pool (docs/queues.md)."""
    lending_limit: int
    """The most of its quota of each pool the tenant lends to the cohort while it does not use
it; unset, all of it, 0 none. At most the namespace's quota of each pool, its share where
`poolQuotas` splits a quota (Kueue refuses a larger one): one value for every pool, so a
share of 0 allows none above 0."""
    pool_quotas: dict[str, int]
    """Where two or more pools hand out the GPU resource one of the namespace's quotas caps (two
exclusive pools, both `nvidia.com/gpu` under `gpuQuota`; two pools of one MIG slice): that
quota split between them, by pool, in its unit (GPUs, replicas or slices), as
`{h100: 12, a100: 4}` of a `gpuQuota: 16`. Kueue holds a tenant's quota on each pool apart
and the ResourceQuota one over them all: each pool's share is the ClusterQueue's quota
there. The shares of one quota name every pool that hands out its resource (canaries
aside, which Kueue admits nothing on) and add up to at most the quota (`plan` warns of
less, which leaves the rest unused: the middle step of moving quota between pools).
Required for such pools unless the quota is 0; no entry for a pool whose resource no other
pool hands out, whose quota is the namespace's whole. A job whose pod sets may run on
either pool should select one with `gpu-platform.io/pool` (docs/queues.md)."""


class TenantNamespaceSpecArgs(TypedDict, total=False):
    """A namespace where teams run GPU workloads."""

    name: Required[str]
    """A namespace of the team's own: none of Kubernetes' (`kube-system`, `kube-public`,
`kube-node-lease`, `default`) and none the operator, monitoring or autoscaler run in."""
    gpu_quota: int
    """Whole GPUs of exclusive pools the namespace's pods may request at once
(`requests.nvidia.com/gpu`). Kubernetes names shared GPUs' replicas and GKE's MIG partitions
`nvidia.com/gpu` too, and cannot tell them from whole GPUs: in a stack with exclusive and
shared pools this caps both, each replica counted as a GPU, so that pods never take more
whole GPUs than it allows. Where pools allocate through DRA (`allocation: dra`), it caps the
GPUs the namespace's ResourceClaims take of each of their models too, each model on its own
(docs/dra.md)."""
    shared_gpu_quota: int
    """Replicas of time-sliced and MPS pools' GPUs, and MIG partitions GKE makes, the namespace's
pods may request at once: each is one `nvidia.com/gpu` to Kubernetes. In a stack with
exclusive pools as well, `gpuQuota` caps whole GPUs and replicas together, and this must be
left out: replicas cannot be capped apart from whole GPUs there."""
    mig_quota: dict[str, int]
    """MIG slices of each profile the namespace's pods may request at once, by slice
(`1g.10gb: 56` caps `requests.nvidia.com/mig-1g.10gb`, `1g.10gb.me` the profile with media
engines), on pools whose slices the operator's MIG manager makes (EKS). Every slice of every
GPU the platform knows that this leaves out is capped at 0, whatever the stack's pools;
GKE's partitions are `nvidia.com/gpu`, which `sharedGpuQuota` caps (`gpuQuota` where the
stack has exclusive pools too)."""
    pod_security: str
    """Pod Security level enforced, audited and warned about; `privileged` is reserved for the
GPU Operator. `baseline` is for images that cannot run as a non-root user."""
    smoke_test_pool: str
    """Run a `nvidia-smi` Job on this pool after deployment to prove the GPU path works; when
the Job fails, so does `pulumi up`."""
    smoke_test_deadline_seconds: int
    """How long the smoke test may take, scaling its pool up from zero and the GPU Operator
preparing the new node included; past it the Job fails, and `pulumi up` with it. On a pool
whose nodes are validated (`pools[].validation`) the deadline grows by the longest a new
node's validation may take, every check at its timeout (docs/node-validation.md). On GKE
Ubuntu the smoke test also waits for its pool's new driver, and the deadline grows by the
longest the operator may keep a node on the old one (`operator.driverUpgradeJobWaitMinutes`
and 5 minutes) and three times 11 minutes for the node's relabelling and the Job's backoff
between retries."""
    gpu_idle_minutes: int
    """Opt in to ending idle GPU pods: the longest a GPU pod here may hold GPUs that do no work
(below `monitoring.idleGpuUtilizationPercent`), in minutes. A pod may ask for less with the
annotation `gpu-platform.io/max-idle-minutes`. Past it, the pod is warned or ended
(`gpuIdleAction`). Needs `monitoring.prometheusUrl` or `installPrometheusStack`, whose
Prometheus evaluates the platform's recording rules (docs/idle-gpu-pods.md)."""
    gpu_idle_action: str
    """What happens to a GPU pod idle past `gpuIdleMinutes`: `warn` only marks it, with the
annotation `gpu-platform.io/idle-gpu` and a Warning Event, so that a namespace sees what
would end before anything does; `end` deletes a bare pod and scales a Deployment or
StatefulSet to zero (Jobs are left to end on their own)."""
    queue: TenantQueueSpecArgs
    """With `queues.enabled`: whether the namespace has a queue, and how much of its GPU quota
the queue borrows from the other tenants' and lends to them (docs/queues.md)."""


class ClusterAutoscalerSpecArgs(TypedDict, total=False):
    """EKS: the Kubernetes cluster autoscaler, which scales the GPU node groups (from zero too)."""

    install: bool
    """Install it; turn off where the cluster already runs one (two would fight over the same
node groups). The node groups carry its discovery and scale-from-zero tags either way."""
    namespace: str
    """Where it runs: `gpu-platform-system`, which the platform creates (Pod Security
`restricted`), or a namespace that exists, and no tenant's. Its pod is marked so that it
never removes the node it runs on, wherever it runs. Changing it replaces the release: the
old autoscaler is removed before the new one starts (docs/upgrades.md)."""
    chart_version: str
    """The `cluster-autoscaler` chart version; another than the pinned one is declared in the
stack's policy config (`platform-release-rollback`'s `platformReleases`:
docs/upgrades.md)."""
    image_tag: str
    """The autoscaler image tag; by default the pinned release for the cluster's Kubernetes
minor version, which it must match. An exact version that is an image tag too: no SemVer
build (`+...`), which no image reference can hold."""
    gpu_node_idle_minutes: int
    """How long a GPU node may sit unneeded before it is removed. Shorter saves idle GPU time;
longer keeps a node warm between jobs instead of paying its startup again. The default
keeps an empty node billing at most ten minutes after its last pod, the autoscaler's loops
included, unless the cluster keeps scaling up (`gpu-platform plan` shows each pool's
figure, and warns past ten minutes for on-demand and spot pools: docs/idle-billing.md).
The autoscaler's cooldown after a scale-up (`--scale-down-delay-after-add`, 10 minutes
upstream), which holds every removal in the cluster, is shortened to it where it is
shorter: for every node group, CPU ones and those of a cluster's own autoscaler
included."""
    balance_similar_node_groups: bool
    """Spread scale-ups evenly over node groups that offer the same nodes, the zonal node groups
of one pool included (`aws.nodeGroupPerZone`: the label `nodegroup-name` that tells them
apart is ignored)."""
    expander: str
    """Which node group to grow when several fit: `priority` ranks every other node group of the
cluster first, so that a CPU pod that tolerates the GPU taint grows a CPU group, and a GPU
pool only where no CPU group can grow (at its maximum, or backed off), then capacity-block
pools, reserved, on-demand and spot ones (capacity already paid for first, capacity that can
be taken back last; a `canaryOf` pool below every GPU pool, so that it grows for other
pods only where no pool they fit can), and among those `least-waste`; a group whose
launches fail is backed off and the next one grown. `least-waste` alone picks the one left
with the least idle CPU and memory, which may be a GPU node for a CPU pod that tolerates the
GPU taint."""


class KarpenterSpecArgs(TypedDict, total=False):
    """EKS with `provisioner: karpenter`: the Karpenter controller that launches the GPU nodes."""

    install: bool
    """Install Karpenter: its CRDs and controller, interruption queue and IAM roles. Turn off
where the cluster already runs Karpenter (installing its CRDs there fails on Helm's
ownership metadata, and two controllers would launch nodes for the same pods): the stack
then declares only the pools' NodePools and EC2NodeClasses, whose nodes run as
`nodeRoleArn`. `preflight` checks that the cluster's Karpenter CRDs have every field the
platform sets and that its running controller's release and feature gates act on them, and
blocks turning it off on a stack that installed Karpenter, which would uninstall its CRDs
with every NodePool of the cluster (docs/karpenter.md, An existing Karpenter)."""
    node_role_arn: str
    """With `install: false`, required: the node role of the existing Karpenter's nodes, which
its controller may pass to EC2 and whose access entry (or `aws-auth` mapping) lets the
nodes join the cluster."""
    namespace: str
    """Where the controller runs (or, with `install: false`, already runs): a namespace that
exists, and no tenant's. In `kube-system`, as
upstream installs it, the API server's default FlowSchemas give its calls the priority of
the cluster's own controllers; elsewhere, give it a FlowSchema of its own."""
    chart_version: str
    """The `karpenter` and `karpenter-crd` chart version (the two move together); another than
the pinned one is declared, both charts, in the stack's policy config
(`platform-release-rollback`'s `platformReleases`: docs/upgrades.md)."""
    consolidate_after_minutes: int
    """How long a GPU node must have been empty before Karpenter removes it, for pools that do
not set their own (`aws.consolidateAfterMinutes`). Karpenter never consolidates a GPU node
that still runs a pod. The default keeps an empty node billing at most ten minutes after
its last pod, Karpenter's disruption loop included (`gpu-platform plan` shows each pool's
figure, and warns past ten minutes for on-demand and spot pools: docs/idle-billing.md)."""
    termination_grace_period_hours: int
    """How long Karpenter may take to drain a GPU node it is removing (a drifted node: a new
AMI release, a changed node class) before it deletes the pods left on it, those marked
`karpenter.sh/do-not-disrupt` and those a PodDisruptionBudget protects included. It also
makes drift act on nodes that run such pods, which it otherwise never replaces. It bounds
each node's drain, not a rollout: a pool drifts `maxUnavailablePercent` of its nodes at a
time (10% by default, at least one), each round taking up to this long, so a rollout takes
up to ceil(nodes / budget) x this bound (ten rounds at most by default), and only where a
replacement node can launch: a full Capacity Block or reservation blocks drift of its busy
nodes. Changing it replaces the pools' nodes (drift)."""


class QueuesSpecArgs(TypedDict, total=False):
    """Kueue, installed from its pinned chart: a ResourceFlavor per pool, a ClusterQueue per
    tenant namespace whose GPU quotas are the namespace's own (`gpuQuota`, `sharedGpuQuota`,
    `migQuota`), in one cohort, and a LocalQueue named `default` in each tenant namespace
    (docs/queues.md)."""

    enabled: bool
    """Install Kueue and give every tenant namespace its queue, those with
`queue.enabled: false` excepted. Off by default: Kueue's admission webhooks then hold every Job,
JobSet, RayJob, PyTorchJob... of the queued namespaces in the namespace's queue until its
quota has room for all of its pods, and the policy pack and an admission policy on the
cluster refuse there the GPU pods of workloads Kueue does not queue; turning it on is a
change in how teams run work, to be announced to them first. Where two pools hand out the
same GPU resource that a queued namespace has quota of, the namespace splits that quota
between them (`queue.poolQuotas`, docs/queues.md)."""
    namespace: str
    """Where Kueue's manager runs: a namespace the platform creates (Pod Security
`restricted`, which the chart's pod and container security contexts satisfy), no tenant's."""
    cohort: str
    """The cohort every tenant's ClusterQueue joins: quota one tenant leaves unused may be
borrowed by another, within each tenant's `queue.borrowingLimit` and
`queue.lendingLimit`."""
    fair_sharing: bool
    """Share what the cohort has unused equally among the tenants that borrow it (Kueue's fair
sharing, every ClusterQueue at its default weight), and let a tenant below its share
reclaim what it lent by preempting the borrowers' newest workloads. Off, a borrower keeps
what it took until its workloads end."""
    smoke_test_queue_minutes: int
    """How long `pulumi up` waits for a tenant's smoke test to leave its queue, on top of the
Job's own deadline (which starts only once Kueue admits it). The smoke test goes before
every waiting job of its tenant, but waits for running jobs to free the GPUs it needs."""


class EksClusterFactsArgs(TypedDict, total=False):
    """An EKS cluster the program creates or knows, as `GpuPlatform` would otherwise look it up
    (`aws eks describe-cluster`): given, nothing about the cluster is looked up."""

    name: Required[pulumi.Input[str]]
    """The cluster's name, as node groups, Pod Identity associations and add-ons name their
cluster: they wait for it through this. It must be the settings' `cluster.name`, which
the platform's own names (IAM roles, tags, node labels) take before anything exists."""
    endpoint: Required[pulumi.Input[str]]
    """The API server's URL (`https://...`), for the Kubernetes provider the platform makes."""
    certificate_authority: Required[pulumi.Input[str]]
    """The cluster's CA, base64 PEM (`certificateAuthority.data`)."""
    security_group_id: Required[pulumi.Input[str]]
    """The cluster security group EKS creates (`vpcConfig.clusterSecurityGroupId`), which
Karpenter's and EFA nodes join to reach the control plane."""
    vpc_id: Required[pulumi.Input[str]]
    """The cluster's VPC (`vpcConfig.vpcId`), which the platform's IAM roles are bound to."""
    kubernetes_version: Required[str]
    """The cluster's Kubernetes version, `major.minor` (`1.35`): it picks the node AMIs, their
drivers and the autoscaler's release, so it is given plainly."""
    node_subnets: Required[dict[str, str]]
    """The private subnets for the GPU nodes, each id with its zone (`{"subnet-...":
"us-east-1a"}`): a node group per zone, so given plainly. They exist already, and are
looked up as the settings' `cluster.nodeSubnetIds` are: a public one (its route table
sending traffic to an internet gateway) or a zone other than EC2's is refused."""


class GkeClusterFactsArgs(TypedDict, total=False):
    """A GKE Standard cluster the program creates or knows, with Workload Identity Federation
    for GKE on, as `GpuPlatform` would otherwise look it up: given, nothing about the cluster
    is looked up."""

    name: Required[pulumi.Input[str]]
    """The cluster's name (or id), as the GPU node pools name their cluster: they wait for it
through this. Its name must be the settings' `cluster.name`, which the pools' own names
take before anything exists."""
    endpoint: Required[pulumi.Input[str]]
    """The API server's address (`endpoint`, an IP without a scheme), for the Kubernetes
provider the platform makes."""
    ca_certificate: Required[pulumi.Input[str]]
    """The cluster's CA, base64 PEM (`masterAuth.clusterCaCertificate`)."""
    kubernetes_version: Required[str]
    """The version the control plane and new node pools run: a minor (`1.33`) or GKE's full
version (`1.33.5-gke.1162000`). It picks the nodes' driver, so it is given plainly."""
    release_channel: str
    """The release channel the cluster is enrolled in (`RAPID`, `REGULAR`, `STABLE`,
`EXTENDED`), None for none: on a channel GKE keeps node auto-upgrade on."""


class GpuPlatformInputs(TypedDict, total=False):
    """The platform's settings, each key as in a stack file without the `gpu-platform:` namespace
    (docs/reference/config.md), validated in full before any resource is registered."""

    cloud: Required[str]
    """Where the cluster runs: `aws` (EKS) or `gcp` (GKE)."""
    cluster: Required[ClusterSpecArgs]
    """The cluster: an existing one to attach to, or one to create (`cluster.create`)."""
    pools: Required[list[GpuPoolSpecArgs]]
    """The GPU node pools."""
    operator: OperatorSpecArgs
    """The NVIDIA GPU Operator release."""
    monitoring: MonitoringSpecArgs
    """GPU metrics, alerts and dashboards."""
    namespaces: list[TenantNamespaceSpecArgs]
    """Namespaces for teams' GPU workloads."""
    protect: bool
    """Protect the node groups or node pools, Karpenter's two releases (uninstalling its CRDs
would remove every NodePool and the nodes with them), Kueue's release (its CRDs with every
queue and waiting job), the GPU Operator's namespace and
release (and on GKE Ubuntu the pools' NVIDIADriver resources, without which their nodes
lose the driver), and the Prometheus stack the platform installs, from deletion: `pulumi
destroy`, or a change that would replace them, fails until they are unprotected. What
ordinary changes replace (node roles, policy attachments, launch templates, Auto Scaling
group tags, service accounts) stays unprotected. Turn it on where losing them means an
outage or lost work."""
    autoscaler: ClusterAutoscalerSpecArgs
    """EKS: the cluster autoscaler."""
    provisioner: str
    """EKS: what launches GPU nodes: managed node groups scaled by the cluster autoscaler, or
Karpenter NodePools (one per pool). With `karpenter`, every pool is `exclusive` with `min`
0, and `autoscaler` and the node-group-only pool settings (`aws.nodeGroupPerZone`,
`aws.nodeRoleArn`, `aws.nodeRepair`,
`aws.capacityReservationResourceGroupArn`, `aws.capacityBlockStart`) take no value
(docs/karpenter.md). With `eks-auto-mode`, on a cluster whose EKS Auto Mode compute is on,
each pool is a NodePool of Auto Mode's own Karpenter, on its Bottlerocket-based nodes with
its NVIDIA driver and device plugin: as with `karpenter`, and besides `karpenter`,
`cluster.nodeImage` other than `bottlerocket`, `aws.amiReleaseVersion`, `aws.efa` and
`canaryOf` take no value (docs/eks-auto-mode.md)."""
    karpenter: KarpenterSpecArgs
    """EKS with `provisioner: karpenter`: the Karpenter controller; with `eks-auto-mode`, only
the settings of the pools' NodePools (`consolidateAfterMinutes`,
`terminationGracePeriodHours`), as Auto Mode runs its own Karpenter."""
    queues: QueuesSpecArgs
    """Kueue: a queue per tenant namespace, whose jobs start whole once its quota allows."""
    part_names_under_it: bool
    """Name every part after the component, `<name>-<part>` (`ml-a-gpu-operator`, `ml-a-l4`),
so that several `GpuPlatform`s (each on a cluster of its own) live in one stack. Off, the
parts have the names a stack's one platform has always given them (`gpu-operator`, the
pools' names). Leave it off for an instance a stack already has and on for the ones added:
turned on, an existing instance's renamed parts collide with its parts still in place. On
EKS the Pod Identity roles take the part's name, so a name that would make one longer than
IAM's 64 characters is refused."""
    eks_cluster_facts: EksClusterFactsArgs
    """An EKS cluster the program creates or knows, as `GpuPlatform` would otherwise look it up
(`aws eks describe-cluster`): given, nothing about the cluster is looked up. For a cluster
the program creates: at most one of `eksClusterFacts` and `gkeClusterFacts`, the settings'
cloud's (docs/library.md, Composing it with resources of your program)."""
    gke_cluster_facts: GkeClusterFactsArgs
    """A GKE Standard cluster the program creates or knows, with Workload Identity Federation for
GKE on, as `GpuPlatform` would otherwise look it up: given, nothing about the cluster is
looked up. For a cluster the program creates: at most one of `eksClusterFacts` and
`gkeClusterFacts`, the settings' cloud's (docs/library.md, Composing it with resources of
your program)."""
