"""The stack's configuration: one validated model, the only place defaults live.

`Pulumi.<stack>.yaml` holds keys in the `gpu-platform:` namespace (`gpu-platform:pools`,
`gpu-platform:operator`, ...). `load_stack_config` validates all of them at once and raises one
`ConfigError` that lists every problem by its key path (`gpu-platform:pools[1].max`), the value
it found and what is allowed, before the program registers a single resource.

Field names are snake_case here and camelCase in the stack file (`gpusPerNode`), like every
other Pulumi configuration.
"""

import difflib
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from enum import StrEnum
from typing import Annotated, Any, Literal, NamedTuple

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    StringConstraints,
    ValidationError,
    WithJsonSchema,
)
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from gpu_platform.accelerators import ACCELERATORS
from gpu_platform.drivers import known_releases
from gpu_platform.kubernetes.chart_keys import chart_components
from gpu_platform.kubernetes.idle_gpu_reaper import MIN_IDLE_MINUTES
from gpu_platform.versions import (
    CLUSTER_AUTOSCALER_CHART,
    GPU_OPERATOR_CHART,
    GPU_OPERATOR_DRIVER_VERSION,
    KARPENTER_CHART,
    KUBE_PROMETHEUS_STACK_CHART,
)

CONFIG_NAMESPACE = "gpu-platform"

# RFC 1123 label: what Kubernetes accepts as a namespace name and what node group, node pool and
# Helm release names can safely be derived from. Pools are capped lower because GKE limits node
# pool names to 40 characters and the cloud components add suffixes.
_DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DnsLabel = Annotated[str, StringConstraints(pattern=_DNS_LABEL, max_length=63)]
PoolName = Annotated[str, StringConstraints(pattern=_DNS_LABEL, max_length=32)]
_LABEL_KEY = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)
_LABEL_VALUE = r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$"
# An exact chart version: Helm would accept a range or nothing at all and silently upgrade.
_EXACT_VERSION = r"^v?\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$"
_HTTPS_URL = r"^(https|oci)://[^\s]+$"
_HTTP_URL = r"^https?://[^\s/?#]+(/[^\s?#]*)?$"
_MIG_PROFILE = r"^all-\d+g\.\d+gb$"
_CLUSTER_NAME = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$"
_GCP_LOCATION = r"^[a-z]+-[a-z]+[0-9]+(-[a-z])?$"
_GCP_SERVICE_ACCOUNT = r"^[a-z0-9][-a-z0-9]*@[-a-z0-9.]+\.gserviceaccount\.com$"
# NVIDIA tags every gpu-operator chart `v<major>.<minor>.<patch>`; anything else is a typo, a
# range or another chart's version, and Helm would only say so at `pulumi up`.
_OPERATOR_CHART_VERSION = r"^v[0-9]+\.[0-9]+\.[0-9]+$"
# Something other than whitespace: an empty or blank name would silently mean "none" (the
# current kubeconfig context, the provider's default region) instead of being refused.
_NOT_BLANK = r"^\s*\S"
_IAM_ROLE_ARN = (
    r"^arn:(aws|aws-cn|aws-us-gov):iam::[0-9]{12}:role/([!-~]+/)?[A-Za-z0-9_+=,.@-]{1,64}$"
)
# The release of an EKS-optimized AMI: the Kubernetes version, then the build date on AL2023
# (`1.33.4-20251016`) or the Bottlerocket build's commit (`1.52.0-0d4a7f31`). A date is also
# eight hex digits, so the field takes either; `_ami_release_problems` checks AL2023's.
_AMI_RELEASE = r"^[0-9]+\.[0-9]+\.[0-9]+-[0-9a-f]{8}$"
_AL2023_AMI_RELEASE = r"^[0-9]+\.[0-9]+\.[0-9]+-[0-9]{8}$"
_SUBNET_ID = r"^subnet-([0-9a-f]{8}|[0-9a-f]{17})$"
_CAPACITY_RESERVATION_ID = r"^cr-[0-9a-f]{17}$"
_RESOURCE_GROUP_ARN = (
    r"^arn:aws(-cn|-us-gov)?:resource-groups:[a-z0-9-]+:[0-9]{12}:group/[A-Za-z0-9_.-]{1,128}$"
)
_GCE_RESERVATION_NAME = r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$"
_GKE_NODE_VERSION = r"^[0-9]+\.[0-9]+\.[0-9]+-gke\.[0-9]+$"
_EKS_ADDON_VERSION = r"^v[0-9]+\.[0-9]+\.[0-9]+-eksbuild\.[0-9]+$"
_DRIVER_VERSION = r"^[0-9]{3}\.[0-9]+(\.[0-9]+)?$"
LabelKey = Annotated[str, StringConstraints(pattern=_LABEL_KEY, max_length=317)]
LabelValue = Annotated[str, StringConstraints(pattern=_LABEL_VALUE)]
ExactChartVersion = Annotated[str, StringConstraints(pattern=_EXACT_VERSION)]
NotBlank = Annotated[str, StringConstraints(pattern=_NOT_BLANK)]
HttpsUrl = Annotated[str, StringConstraints(pattern=_HTTPS_URL)]
HttpUrl = Annotated[str, StringConstraints(pattern=_HTTP_URL)]

# What each pattern means, for error messages people can act on.
_PATTERN_MEANINGS = {
    _DNS_LABEL: "lowercase letters, digits and '-', starting and ending with a letter or digit",
    _LABEL_KEY: "a Kubernetes label key: an optional DNS prefix and '/', then a name of up to"
    " 63 letters, digits, '-', '_' or '.'",
    _LABEL_VALUE: "a Kubernetes label value: up to 63 letters, digits, '-', '_' or '.'",
    _EXACT_VERSION: "an exact version such as v26.7.0 (no ranges, no 'latest')",
    _HTTPS_URL: "an https:// or oci:// URL",
    _HTTP_URL: "an http:// or https:// URL with no query or fragment, such as"
    " http://prometheus-operated.monitoring.svc:9090",
    _MIG_PROFILE: "a uniform MIG profile such as all-1g.10gb",
    _CLUSTER_NAME: "letters, digits, '-' and '_', up to 100 characters",
    _GCP_LOCATION: "a GCP region such as us-central1 or a zone such as us-central1-a",
    _GCP_SERVICE_ACCOUNT: "a service account e-mail such as"
    " gpu-nodes@my-project.iam.gserviceaccount.com",
    _OPERATOR_CHART_VERSION: "a gpu-operator chart version such as v26.7.0: 'v', then"
    " major.minor.patch (no ranges, no 'latest')",
    _NOT_BLANK: "a value that is not empty or blank",
    _IAM_ROLE_ARN: "an IAM role ARN such as arn:aws:iam::123456789012:role/gpu-nodes (partition"
    " aws, aws-cn or aws-us-gov, a 12-digit account id)",
    _AMI_RELEASE: "an EKS-optimized AMI release: 1.33.4-20251016 on AL2023 (Kubernetes version,"
    " build date) or 1.52.0-0d4a7f31 on Bottlerocket (version, build commit)",
    _SUBNET_ID: "a subnet id: 'subnet-' and 8 or 17 hex digits, such as subnet-0123456789abcdef0",
    _CAPACITY_RESERVATION_ID: "a capacity reservation id: 'cr-' and 17 hex digits,"
    " such as cr-0123456789abcdef0",
    _RESOURCE_GROUP_ARN: "a resource group ARN such as"
    " arn:aws:resource-groups:us-east-1:123456789012:group/gpu-reservations",
    _GCE_RESERVATION_NAME: "a Compute Engine reservation name: lowercase letters, digits and"
    " '-', starting with a letter, up to 63 characters",
    _GKE_NODE_VERSION: "a GKE version such as 1.34.1-gke.1829001",
    _EKS_ADDON_VERSION: "an EKS add-on version such as v1.7.0-eksbuild.1",
    _DRIVER_VERSION: "an NVIDIA driver version such as 595.91.07",
}


def _known_accelerator(name: str) -> str:
    if name not in ACCELERATORS:
        raise PydanticCustomError(
            "unknown_accelerator", "one of {allowed}", {"allowed": ", ".join(ACCELERATORS)}
        )
    return name


AcceleratorName = Annotated[
    str,
    AfterValidator(_known_accelerator),
    WithJsonSchema({"type": "string", "enum": list(ACCELERATORS)}),
]


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        extra="forbid",
        frozen=True,
        validate_default=True,
        # Field docstrings become descriptions, from which the config reference is generated.
        use_attribute_docstrings=True,
    )


class Cloud(StrEnum):
    AWS = "aws"
    GCP = "gcp"


class Platform(StrEnum):
    """Cloud and node operating system together: they decide how drivers reach the GPUs."""

    EKS_AL2023 = "eks-al2023"
    EKS_BOTTLEROCKET = "eks-bottlerocket"
    GKE_COS = "gke-cos"
    GKE_UBUNTU = "gke-ubuntu"


_NODE_IMAGES: Mapping[Cloud, tuple[str, ...]] = {
    Cloud.AWS: ("al2023", "bottlerocket"),
    Cloud.GCP: ("cos", "ubuntu"),
}

Provisioner = Literal["cluster-autoscaler", "karpenter"]
"""What launches an EKS stack's GPU nodes (`provisioner`)."""


# --- GPU sharing ---------------------------------------------------------------------------


class ExclusiveSharing(_Model):
    """One container owns each GPU."""

    mode: Literal["exclusive"] = "exclusive"
    """`exclusive`."""


class TimeSlicingSharing(_Model):
    """`replicas` containers take turns on each GPU, with no memory isolation between them."""

    mode: Literal["time-slicing"]
    """`time-slicing`."""
    replicas: int = Field(ge=2, le=64)
    """Containers per GPU; each node advertises GPUs x replicas `nvidia.com/gpu`. At most 48 on
    GKE, whose own device plugin shares the GPUs there."""


class MpsSharing(_Model):
    """`replicas` containers share each GPU through CUDA MPS, with a memory limit each."""

    mode: Literal["mps"]
    """`mps`."""
    # CUDA MPS serves at most 48 clients per GPU on Volta and newer.
    replicas: int = Field(ge=2, le=48)
    """Containers per GPU, each with an equal share of its memory."""


class MigSharing(_Model):
    """Each GPU is partitioned into hardware-isolated MIG instances by the MIG manager."""

    mode: Literal["mig"]
    """`mig`."""
    strategy: Literal["single", "mixed"] = "mixed"
    """`mixed`, which advertises slices as `nvidia.com/mig-<slice>`. `single` is refused: it
    advertises slices as `nvidia.com/gpu`, the name a new node's whole GPUs carry until the MIG
    manager has partitioned them, so a pod can get a whole GPU (gpu-operator#2670)."""
    profile: Annotated[str, StringConstraints(pattern=_MIG_PROFILE)]
    """A uniform MIG manager profile such as `all-1g.10gb`."""


Sharing = Annotated[
    ExclusiveSharing | TimeSlicingSharing | MpsSharing | MigSharing,
    Field(discriminator="mode"),
]
SHARING_MODES = ("exclusive", "time-slicing", "mps", "mig")


# --- GPU pools -----------------------------------------------------------------------------


class TaintSpec(_Model):
    """An extra Kubernetes taint, spelled as Kubernetes spells it."""

    key: LabelKey
    value: LabelValue = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
    """Kubernetes spelling; each cloud component translates it."""


class EksPoolOptions(_Model):
    """Settings that only an EKS managed node group has."""

    ami_release_version: Annotated[str, StringConstraints(pattern=_AMI_RELEASE)] | None = None
    """The EKS-optimized NVIDIA AMI release the pool's nodes run, required on EKS:
    `1.35.6-20260714` on AL2023 (the cluster's Kubernetes version, then the build date),
    `1.54.0-0d4a7f31` on Bottlerocket. It decides the NVIDIA driver, and so the newest CUDA the
    pool's pods may use: the platform knows the driver of every release in its tables
    (gpu_platform/drivers.py). Moving it replaces the pool's nodes within
    `maxUnavailablePercent`; move a pool's `canaryOf` pool first."""
    node_role_arn: Annotated[str, StringConstraints(pattern=_IAM_ROLE_ARN)] | None = None
    """An existing node IAM role to use instead of creating one for the pool."""
    metadata_hop_limit: Literal[1, 2] = 1
    """IMDSv2 hop limit: 1 keeps pods from reaching the node's credentials; 2 only for
    workloads that must call IMDS through an extra network hop (no IRSA or Pod Identity)."""
    capacity_reservation_id: (
        Annotated[str, StringConstraints(pattern=_CAPACITY_RESERVATION_ID)] | None
    ) = None
    """The EC2 capacity reservation (`cr-...`) the pool launches into: the Capacity Block of a
    `capacity-block` pool, or the on-demand capacity reservation of a `reserved` pool (or
    `capacityReservationResourceGroupArn`). Name its zone in `zones`."""
    capacity_reservation_resource_group_arn: (
        Annotated[str, StringConstraints(pattern=_RESOURCE_GROUP_ARN)] | None
    ) = None
    """A `reserved` pool on managed node groups: the resource group of on-demand capacity
    reservations it launches into, instead of one `capacityReservationId`."""
    capacity_block_start: AwareDatetime | None = None
    """A `capacity-block` pool: when the block starts (ISO 8601 with its offset, as EC2 reports
    it), so that its node group grows to `max` then, while the block is still ahead; `preflight`
    checks it against the block."""
    on_demand_fallback: bool = False
    """A `spot` or `reserved` pool: launch on-demand nodes when no spot or reserved capacity is
    to be had, instead of leaving pods pending. Off by default, so that a pool never costs more
    than was planned for it. Managed node groups can do so only for a `reserved` pool on a
    resource group (docs/capacity-reservations.md)."""
    max_unavailable_percent: int | None = Field(default=None, ge=1, le=100)
    """Replace up to this share of the pool's nodes at once on an update (a new AMI release,
    launch template or labels); unset replaces one node at a time. EKS drains each node first,
    waiting up to 15 minutes for its pods' disruption budgets before it fails the update."""
    node_repair: bool = True
    """Have EKS replace or reboot the pool's nodes that turn unhealthy (kubelet `NotReady`, and
    with the node monitoring agent, `AcceleratedHardwareReady=False`: GPU XIDs, double-bit ECC
    and NVLink errors), one node at a time and never while more than a fifth of the pool is
    unhealthy, which points at a cause no replacement fixes."""
    # gp3 gives every volume 3000 IOPS and 125 MiB/s whatever its size, and bills what is asked
    # above that; a new GPU node pulls images of many GiB before its first job starts.
    volume_throughput_mibps: int = Field(default=500, ge=125, le=1000)
    """Throughput of the gp3 volume that holds the container images, in MiB/s (gp3: 125 to
    1000, at most a quarter of the IOPS)."""
    volume_iops: int = Field(default=6000, ge=3000, le=16000)
    """IOPS of that volume (gp3: 3000 to 16000)."""
    efa: bool = False
    """A pool for training across nodes: its nodes get one Elastic Fabric Adapter per network
    card (the first also carrying the node's ordinary traffic, the others EFA-only), a security
    group that lets EFA traffic flow between them, and a `cluster` placement group, so that they
    start close together in the pool's one zone (`zones` must name exactly one). Pods ask for
    `vpc.amazonaws.com/efa`, which the EFA device plugin (installed with the first such pool)
    advertises. Every instance type must support EFA. Changing it replaces the launch template
    and rolls the pool's nodes."""
    node_group_per_zone: bool = False
    """One node group per zone of the pool instead of one across them. The cluster autoscaler
    gives a group's scale-from-zero template one zone, its Auto Scaling group's first, so a pod
    bound to another zone (a zonal volume, a zone selector) never scales a multi-zone group up, and
    EC2's AZ rebalancing moves nodes between zones without draining them. Per zone, each group
    has its own zone in its template, and `balance-similar-node-groups` spreads scale-ups over
    them; `min` and `max` are shared out over the zones (the pool's `max` stays its total, so
    each zone can grow only to its share). Changing it replaces the pool's node groups."""
    local_nvme: bool = True
    """Keep container images and pod scratch space on the instance's local NVMe drives (one
    RAID0 array) where every instance type has at least `diskSizeGib` of them: on AL2023, and
    on Bottlerocket from release 1.22.0."""


class GkePoolOptions(_Model):
    """Settings that only a GKE node pool has."""

    service_account: Annotated[str, StringConstraints(pattern=_GCP_SERVICE_ACCOUNT)] | None = None
    """An existing node service account e-mail instead of the one created for the pool (which
    holds only `roles/container.defaultNodeServiceAccount`)."""
    autoscaling_scope: Literal["total", "per-zone"] = "total"
    """Whether `min`/`max` count nodes across all zones of the pool or in each zone."""
    disk_type: Literal["pd-balanced", "pd-ssd", "hyperdisk-balanced"] | None = None
    """Boot disk type; unset is `pd-balanced`, or `hyperdisk-balanced` on A3 Ultra and A4
    machine types, which take no Persistent Disk. N1, A2 and G2 take no Hyperdisk."""
    max_surge: int = Field(default=1, ge=0, le=100)
    """Extra nodes GKE adds while it upgrades the pool: each is another GPU machine that must be
    available to start."""
    max_unavailable: int = Field(default=0, ge=0, le=100)
    """Nodes GKE takes out of service at once to upgrade them in place; with `maxSurge: 0`, for
    GPUs too scarce to surge. One of the two must be above 0."""
    node_version: Annotated[str, StringConstraints(pattern=_GKE_NODE_VERSION)] | None = None
    """The GKE version of the pool's nodes (`1.34.1-gke.1829001`), and with it, on COS, the
    NVIDIA driver GKE's installer loads; unset follows the cluster's version. Pin it on a
    `canaryOf` pool to try a new version there first. GKE still upgrades a pinned pool when its
    version leaves support, and clusters on a release channel when auto-upgrade runs, unless a
    maintenance exclusion holds it."""
    cos_driver_branch: int | None = Field(default=None, ge=450, le=999)
    """COS only: the NVIDIA driver branch (`580`) of the nodes' GKE version, where the platform
    does not know it (gpu_platform/drivers.py lists what GKE documents). The smoke test
    checks it on the pool it runs on."""
    driver_version: Annotated[str, StringConstraints(pattern=_DRIVER_VERSION)] | None = None
    """Ubuntu only: the NVIDIA driver the GPU Operator builds on this pool's nodes (its own
    NVIDIADriver resource), instead of `operator.driverVersion`. Set it on a `canaryOf` pool
    to try a new driver there first; the other pool may not run one newer than its canary.
    Changing it reloads the driver on the pool's nodes within the `operator.driverUpgrade...`
    settings."""
    reservation: Literal["none", "any", "specific"] | None = None
    """Which Compute Engine reservations the pool's nodes consume. Unset leaves it to Compute
    Engine, whose default consumes any matching reservation open to all VMs of the project
    (GKE marks the setting as replacing the pool, so a pool is never replaced for not stating
    it); flex-start and queued pools consume none. `none` takes no reservation meant for other
    workloads; `any` matching reservation, and on-demand
    capacity once none has room; or only the one named in `reservationName`, with no on-demand
    fallback: while it is full, no node starts. Not with Spot, flex-start or queued
    provisioning. Changing it replaces the node pool (docs/gke-capacity.md)."""
    reservation_name: Annotated[str, StringConstraints(pattern=_GCE_RESERVATION_NAME)] | None = None
    """The reservation of a `reservation: specific` pool, in the cluster's project. Reservations
    are zonal: name its zone, and only that one, in `zones`."""
    flex_start: bool = False
    """Obtain the nodes as flex-start VMs (Dynamic Workload Scheduler): GPUs at its discounted
    prices, started when capacity is found, each removed after `maxRunHours`. Needs a cluster
    and nodes on GKE 1.32.2-gke.1652000 or later, on-demand capacity, no reservation and `min`
    0; their node auto-repair is off, as in GKE's guides."""
    queued_provisioning: bool = False
    """Nodes come only through a ProvisioningRequest, all of a request's nodes at once, and
    carry the `cloud.google.com/gke-queued` taint (docs/gke-capacity.md). Needs `min` 0 and no
    reservation; GKE's guide pairs it with `flexStart`."""
    max_run_hours: int | None = Field(default=None, ge=1, le=168)
    """A `flexStart` pool: how long each node may run before GKE removes it, at most 168 hours
    (7 days, also GKE's default). A queued pool's requests set theirs with the
    ProvisioningRequest's `maxRunDurationSeconds`."""


class GpuPoolSpec(_Model):
    """One pool of GPU nodes, described once for every cloud."""

    name: PoolName
    """Names the pool's node group or node pool and its `gpu-platform.io/pool` node label."""
    instance_types: list[Annotated[str, StringConstraints(min_length=1)]] = Field(min_length=1)
    """EC2 instance types, or one GCE machine type. On managed node groups several EC2 types must
    share one shape (GPUs, vCPUs, memory, architecture): the cluster autoscaler plans a node
    group's nodes from zero as its first type. Under Karpenter they may be sizes of one GPU model
    and architecture (`g6.xlarge`, `g6.12xlarge`): Karpenter picks one per pending pod."""
    accelerator: AcceleratorName | None = None
    """The GPU model. Read from the machine when left out: on EKS from the instance type, on GKE
    from accelerator-optimized machine types (A2, A3, A4, G2); N1 pools must state it."""
    gpus_per_node: int | None = Field(default=None, ge=1, le=16)
    """GPUs per node, read from the machine like `accelerator` when left out."""
    min: int = Field(default=0, ge=0)
    """Nodes kept when idle. Every node above zero bills around the clock."""
    max: int = Field(ge=1, le=1000)
    """The most nodes the autoscaler may start: the pool's cost ceiling. Under Karpenter, a limit
    of `max` times the GPUs of the pool's largest instance type."""
    capacity: Literal["on-demand", "spot", "reserved", "capacity-block"] = "on-demand"
    """How the nodes are bought: `reserved` consumes EC2 on-demand capacity reservations
    (`aws.capacityReservationId` or `aws.capacityReservationResourceGroupArn`), `capacity-block`
    an EC2 Capacity Block (docs/capacity-reservations.md); GKE reservations are
    `gcp.reservation`."""
    zones: list[Annotated[str, StringConstraints(min_length=1)]] = Field(default_factory=list)
    """Zones to place nodes in, kept only where every instance type is offered. Empty means
    every zone of the cluster's node subnets (EKS) or of its region that offers the machine
    type (GKE); GKE N1 pools with attached GPUs must list theirs."""
    disk_size_gib: int = Field(default=200, ge=100, le=16384)
    """Root disk; CUDA and framework images run to tens of GiB before any model weights."""
    labels: dict[LabelKey, LabelValue] = Field(default_factory=dict)
    """Extra node labels; the platform's own (`nvidia.com/`, `gpu-platform.io/`) are reserved."""
    taints: list[TaintSpec] = Field(default_factory=list)
    """Extra taints, on top of `nvidia.com/gpu=present:NoSchedule` that every pool has."""
    sharing: Sharing = Field(default_factory=ExclusiveSharing)
    """How workloads share a GPU: `exclusive`, `time-slicing`, `mps` or `mig`."""
    canary_of: PoolName | None = None
    """Makes this pool the canary of another pool of the same GPUs and sharing mode: a new AMI
    release (EKS), node version (GKE) or, on GKE Ubuntu, driver (`gcp.driverVersion`) goes here
    first, and the other pool may not run one newer than its canary. Its nodes carry
    `gpu-platform.io/canary-of`, and only pods that select the canary by its pool label (a smoke
    test, a team's canary job) run there."""
    aws: EksPoolOptions = Field(default_factory=EksPoolOptions)
    """EKS-only settings."""
    gcp: GkePoolOptions = Field(default_factory=GkePoolOptions)
    """GKE-only settings."""


# --- Cluster, operator, monitoring, tenants ------------------------------------------------


class ClusterSpec(_Model):
    """The existing cluster the stack attaches to."""

    name: Annotated[str, StringConstraints(pattern=_CLUSTER_NAME)]
    region: NotBlank | None = None
    """AWS region of the EKS cluster."""
    project: NotBlank | None = None
    """GCP project of the GKE cluster."""
    location: Annotated[str, StringConstraints(pattern=_GCP_LOCATION)] | None = None
    """GKE cluster location: a region (regional cluster) or a zone (zonal cluster)."""
    node_image: Literal["al2023", "bottlerocket", "cos", "ubuntu"] | None = None
    """GPU node OS: `al2023` (default) or `bottlerocket` on EKS; `cos` (default) or `ubuntu`
    on GKE. It decides who installs the driver, so it holds for every pool of the stack."""
    kubeconfig_context: NotBlank | None = None
    """Use this context of the local kubeconfig instead of building access from the cluster."""
    node_subnet_ids: list[Annotated[str, StringConstraints(pattern=_SUBNET_ID)]] = Field(
        default_factory=list
    )
    """EKS: subnets for the GPU nodes, used as given; each must be private, its route table
    sending nothing to an internet gateway. Empty means the cluster's own private subnets."""
    cni_policy_on_node_role: bool = True
    """EKS: attach `AmazonEKS_CNI_Policy` to the node roles the stack creates, as EKS does by
    default. Turn it off where the VPC CNI gets its permissions through IRSA or Pod Identity."""
    node_monitoring_agent_version: (
        Annotated[str, StringConstraints(pattern=_EKS_ADDON_VERSION)] | None
    ) = None
    """EKS: install the `eks-node-monitoring-agent` add-on at this version (`aws eks
    describe-addon-versions --addon-name eks-node-monitoring-agent` lists them), with its DCGM
    server tolerating the GPU taint, so that node repair also replaces nodes whose GPUs fail
    while the kubelet stays Ready. Off by default: the agent runs its own DCGM host engine beside
    the GPU Operator's exporter, which AWS does not support reusing (docs/gpu-health.md)."""


class OperatorSpec(_Model):
    """The NVIDIA GPU Operator release."""

    chart_version: Annotated[str, StringConstraints(pattern=_OPERATOR_CHART_VERSION)] = (
        GPU_OPERATOR_CHART.version
    )
    """The `gpu-operator` chart version. The values the platform sets are checked against the
    pinned version's keys only: another version is for trying an upgrade in one environment."""
    repository: HttpsUrl = GPU_OPERATOR_CHART.repository
    """The Helm repository serving the chart, for a mirror of NVIDIA's."""
    namespace: DnsLabel = "gpu-operator"
    """The operator's own namespace, which the platform runs as Pod Security `privileged`: the
    drivers, toolkit and device plugin need the host. The only other is node-exporter's, where
    the platform installs the Prometheus stack."""
    timeout_seconds: int = Field(default=900, ge=300, le=3600)
    """How long Helm waits for the operator's pods; driver builds on first boot are slow."""
    critical_pod_quota: int = Field(default=1000, ge=100, le=100000)
    """GKE only: how many `system-node-critical`/`system-cluster-critical` pods the operator's
    namespace may hold. GKE admits them outside kube-system only under a quota, and the chart's
    node-feature-discovery worker runs on every node of the cluster, GPU or not, beside about
    eight operator pods on each GPU node: keep it above all of those together."""
    driver_version: Annotated[str, StringConstraints(pattern=_DRIVER_VERSION)] = (
        GPU_OPERATOR_DRIVER_VERSION
    )
    """GKE Ubuntu: the NVIDIA driver the operator builds on the nodes of every pool that sets
    no `gcp.driverVersion`, pinned so that a chart upgrade does not move it. A new one rolls out
    through the operator's upgrade controller, pool by pool within
    `driverUpgradeMaxUnavailablePercent`."""
    driver_upgrade_max_unavailable_percent: int = Field(default=25, ge=1, le=100)
    """GKE Ubuntu: the most nodes of a pool the operator takes out of service at once to load a
    new driver (at most one node of a pool at a time is upgraded, whatever the share)."""
    driver_upgrade_job_wait_minutes: int = Field(default=1440, ge=0, le=10080)
    """GKE Ubuntu: how long the operator waits for the Jobs' pods on a node to finish before it
    deletes the GPU pods left and loads the new driver there; 0 waits for ever."""
    overrides: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Chart values per top-level component (`dcgmExporter`, `driver`, ...), deep-merged over
    the platform's own values last. Component names are checked against the chart's."""


class MonitoringSpec(_Model):
    """GPU metrics, alerts and dashboards."""

    namespace: DnsLabel = "monitoring"
    """Where the GPU alert rules and dashboard go, and the Prometheus stack when installed; not
    the operator's namespace. The platform creates it only with `installPrometheusStack`;
    otherwise it must already exist and be one the cluster's Prometheus reads rules from and its
    Grafana reads dashboards from."""
    install_prometheus_stack: bool = False
    """Install a pinned kube-prometheus-stack; leave off where the cluster already runs the
    Prometheus Operator. Its namespace enforces Pod Security `baseline`; its node-exporter, which
    needs the host, runs in `<namespace>-node-exporter`, `privileged`."""
    service_monitor_labels: dict[LabelKey, LabelValue] = Field(
        default_factory=lambda: {"release": KUBE_PROMETHEUS_STACK_CHART.name}
    )
    """Labels the cluster's Prometheus selects ServiceMonitors and PrometheusRules by. With
    `installPrometheusStack` they must include `release: kube-prometheus-stack`, the installed
    stack's selector."""
    idle_gpu_minutes: int = Field(default=30, ge=5, le=1440)
    """How long a GPU held by a pod may stay idle before the alert fires."""
    idle_gpu_utilization_percent: int = Field(default=5, ge=1, le=50)
    """GPU utilisation, in percent, below which a GPU held by a pod counts as idle."""
    framebuffer_full_percent: int = Field(default=90, ge=50, le=99)
    """GPU memory use, in percent of used plus free, above which a pod's GPU counts as nearly
    full."""
    google_managed_prometheus: bool = False
    """GKE only: also have Google Cloud Managed Service for Prometheus scrape the DCGM exporter.
    Its GPU series keep the `pod`, `namespace` and `container` of the workload holding each GPU,
    as on Prometheus (not `exported_pod`). The alert rules and the dashboard remain Prometheus
    Operator and Grafana objects, so the cluster still needs the Prometheus Operator's CRDs (or
    `installPrometheusStack`)."""
    prometheus_url: HttpUrl | None = None
    """Where the enforcer of `namespaces[].gpuIdleMinutes` queries Prometheus's HTTP API, with
    no credentials: a Service of the cluster's Prometheus, such as
    `http://prometheus-operated.monitoring.svc:9090` (the Prometheus Operator's), or a query
    frontend of a managed one. By default, the Prometheus of `installPrometheusStack`."""

    @property
    def query_url(self) -> str | None:
        """The Prometheus the platform's own jobs query: `prometheusUrl`, else the installed
        stack's, else None (none known)."""
        if self.prometheus_url is not None:
            return self.prometheus_url
        if not self.install_prometheus_stack:
            return None
        # The stack's release is named after its chart, and so its Prometheus Service; 9090 is
        # the chart's `prometheus.service.port`.
        release = KUBE_PROMETHEUS_STACK_CHART.name
        return f"http://{release}-prometheus.{self.namespace}.svc:9090"

    @property
    def node_exporter_namespace(self) -> str:
        """Where the installed stack's node-exporter runs: a namespace of its own, the only one
        of the stack that is `privileged`."""
        return f"{self.namespace}-node-exporter"


class TenantNamespaceSpec(_Model):
    """A namespace where teams run GPU workloads."""

    name: DnsLabel
    """A namespace of the team's own: none of Kubernetes' (`kube-system`, `kube-public`,
    `kube-node-lease`, `default`) and none the operator, monitoring or autoscaler run in."""
    gpu_quota: int = Field(ge=0, le=10000)
    """GPUs (or GPU slices) the namespace may request at once, for each GPU resource the pools
    advertise (`nvidia.com/gpu`, and `nvidia.com/mig-<slice>` on MIG `mixed` pools)."""
    pod_security: Literal["restricted", "baseline"] = "restricted"
    """Pod Security level enforced, audited and warned about; `privileged` is reserved for the
    GPU Operator. `baseline` is for images that cannot run as a non-root user."""
    smoke_test_pool: PoolName | None = None
    """Run a `nvidia-smi` Job on this pool after deployment to prove the GPU path works; when
    the Job fails, so does `pulumi up`."""
    smoke_test_deadline_seconds: int = Field(default=900, ge=120, le=3600)
    """How long the smoke test may take, scaling its pool up from zero and the GPU Operator
    preparing the new node included; past it the Job fails, and `pulumi up` with it."""
    # The enforcer runs every 10 minutes and wants readings from the first and the last 10
    # minutes of the window (idle_gpu_reaper.py): a shorter limit would hardly be a window, and
    # a run's wait could nearly double it.
    gpu_idle_minutes: int | None = Field(default=None, ge=MIN_IDLE_MINUTES, le=10080)
    """Opt in to ending idle GPU pods: the longest a GPU pod here may hold GPUs that do no work
    (below `monitoring.idleGpuUtilizationPercent`), in minutes. A pod may ask for less with the
    annotation `gpu-platform.io/max-idle-minutes`. Past it, a bare pod is deleted and a
    Deployment or StatefulSet scaled to zero; Jobs are left to end on their own. Needs
    `monitoring.prometheusUrl` or `installPrometheusStack` (docs/idle-gpu-pods.md)."""


class ClusterAutoscalerSpec(_Model):
    """EKS: the Kubernetes cluster autoscaler, which scales the GPU node groups (from zero too)."""

    install: bool = True
    """Install it; turn off where the cluster already runs one (two would fight over the same
    node groups). The node groups carry its discovery and scale-from-zero tags either way."""
    namespace: DnsLabel = "kube-system"
    """Where it runs; `kube-system` keeps the autoscaler from evicting itself."""
    chart_version: ExactChartVersion = CLUSTER_AUTOSCALER_CHART.version
    """The `cluster-autoscaler` chart version."""
    image_tag: Annotated[str, StringConstraints(pattern=_EXACT_VERSION)] | None = None
    """The autoscaler image tag; by default the pinned release for the cluster's Kubernetes
    minor version, which it must match."""
    gpu_node_idle_minutes: int = Field(default=10, ge=1, le=1440)
    """How long a GPU node may sit unneeded before it is removed. Shorter saves idle GPU time;
    longer keeps a node warm between jobs instead of paying its startup again."""
    balance_similar_node_groups: bool = True
    """Spread scale-ups evenly over node groups that offer the same nodes."""
    expander: Literal["priority", "least-waste", "most-pods", "random"] = "priority"
    """Which node group to grow when several fit: `priority` prefers capacity-block pools, then
    reserved, then on-demand, then spot (capacity already paid for first, capacity that can be
    taken back last), and among those `least-waste`; a group whose launches fail is backed off
    and the next one grown. `least-waste` alone picks the one left with the least idle CPU and
    memory."""


class KarpenterSpec(_Model):
    """EKS with `provisioner: karpenter`: the Karpenter controller that launches the GPU nodes."""

    namespace: DnsLabel = "kube-system"
    """Where the controller runs: a namespace that exists, and no tenant's. In `kube-system`, as
    upstream installs it, the API server's default FlowSchemas give its calls the priority of
    the cluster's own controllers; elsewhere, give it a FlowSchema of its own."""
    chart_version: ExactChartVersion = KARPENTER_CHART.version
    """The `karpenter` and `karpenter-crd` chart version (the two move together)."""
    consolidate_after_minutes: int = Field(default=10, ge=1, le=1440)
    """How long a GPU node must have been empty before Karpenter removes it. Karpenter never
    consolidates a GPU node that still runs a pod."""


class StackConfig(_Model):
    """Everything one stack (environment) is configured with."""

    cloud: Cloud
    """Where the cluster runs: `aws` (EKS) or `gcp` (GKE)."""
    cluster: ClusterSpec
    """The existing cluster to attach to."""
    pools: list[GpuPoolSpec] = Field(min_length=1)
    """The GPU node pools."""
    operator: OperatorSpec = Field(default_factory=OperatorSpec)
    """The NVIDIA GPU Operator release."""
    monitoring: MonitoringSpec = Field(default_factory=MonitoringSpec)
    """GPU metrics, alerts and dashboards."""
    namespaces: list[TenantNamespaceSpec] = Field(default_factory=list)
    """Namespaces for teams' GPU workloads."""
    protect: bool = False
    """Protect the node groups or node pools, Karpenter's two releases (uninstalling its CRDs
    would remove every NodePool and the nodes with them), the GPU Operator's namespace and
    release (and on GKE Ubuntu the pools' NVIDIADriver resources, without which their nodes
    lose the driver), and the Prometheus stack the platform installs, from deletion: `pulumi
    destroy`, or a change that would replace them, fails until they are unprotected. What
    ordinary changes replace (node roles, policy attachments, launch templates, Auto Scaling
    group tags, service accounts) stays unprotected. Turn it on where losing them means an
    outage or lost work."""
    autoscaler: ClusterAutoscalerSpec = Field(default_factory=ClusterAutoscalerSpec)
    """EKS: the cluster autoscaler."""
    provisioner: Provisioner = "cluster-autoscaler"
    """EKS: what launches GPU nodes: managed node groups scaled by the cluster autoscaler, or
    Karpenter NodePools (one per pool). With `karpenter`, every pool is `exclusive` with `min`
    0, and `autoscaler` and the node-group-only pool settings (`aws.efa`,
    `aws.nodeGroupPerZone`, `aws.nodeRoleArn`, `aws.nodeRepair`,
    `aws.capacityReservationResourceGroupArn`, `aws.capacityBlockStart`) take no value
    (docs/karpenter.md)."""
    karpenter: KarpenterSpec = Field(default_factory=KarpenterSpec)
    """EKS with `provisioner: karpenter`: the Karpenter controller."""

    _secret_keys: frozenset[str] = PrivateAttr(default=frozenset())

    @property
    def helm_release_namespaces(self) -> list[str]:
        """Where the platform installs Helm releases, and so where Helm keeps their records as
        Secrets: the only namespaces in which a preview has to read Secrets."""
        found = {self.operator.namespace}
        if self.monitoring.install_prometheus_stack:
            found.add(self.monitoring.namespace)
        if _autoscaler_installed(self):
            found.add(self.autoscaler.namespace)
        if _karpenter_installed(self):
            found.add(self.karpenter.namespace)
        return sorted(found)

    def is_secret(self, *keys: str) -> bool:
        """Whether any of these keys (`operator`, `pools`...) was set as a secret. Pulumi marks a
        whole key secret when any part of its value is, so every value taken from it is to be
        handled as one."""
        return not self._secret_keys.isdisjoint(keys)

    @property
    def node_image(self) -> str:
        """The GPU nodes' image: `cluster.nodeImage`, else the cloud's default."""
        return self.cluster.node_image or _NODE_IMAGES[self.cloud][0]

    @property
    def platform(self) -> Platform:
        prefix = "eks" if self.cloud is Cloud.AWS else "gke"
        return Platform(f"{prefix}-{self.node_image}")

    def pool(self, name: str) -> GpuPoolSpec:
        return next(p for p in self.pools if p.name == name)


# --- Errors --------------------------------------------------------------------------------


class ConfigProblem(NamedTuple):
    """One thing wrong with the stack configuration."""

    path: str
    """The key path as the user writes it: `gpu-platform:pools[1].max`."""
    value: Any
    expected: str


class ConfigError(Exception):
    """The stack configuration is invalid; lists every problem found."""

    def __init__(self, problems: Iterable[ConfigProblem]):
        self.problems = list(problems)
        super().__init__(self.report())

    def hiding_secrets(self, secret_keys: Iterable[str]) -> "ConfigError":
        """The same problems, with the values of secret keys replaced by a mention of them."""
        prefixes = tuple(key_path(key) for key in secret_keys)
        return ConfigError(
            p._replace(value=_SECRET)
            if p.path.startswith(prefixes) and p.value is not _MISSING
            else p
            for p in self.problems
        )

    def report(self) -> str:
        lines = [f"Invalid stack configuration ({len(self.problems)} problem(s)):"]
        lines += [
            f"  {p.path}: got {_render(p.value)}; expected {p.expected}" for p in self.problems
        ]
        return "\n".join(lines)


_MISSING = object()
_SECRET = object()


def _render(value: Any) -> str:
    if value is _MISSING:
        return "nothing (the key is required)"
    if value is _SECRET:
        return "a value of a secret key (not shown)"
    return json.dumps(value, default=str)


def key_path(*loc: str | int) -> str:
    """`("pools", 1, "max")` -> `gpu-platform:pools[1].max`."""
    path = CONFIG_NAMESPACE + ":"
    for i, part in enumerate(loc):
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += part if i == 0 else f".{part}"
    return path


def _key_of(model: type[BaseModel], field: str) -> str:
    """How the stack file spells a model's field: its camelCase alias."""
    return model.model_fields[field].alias or field


def _set_field_problems(
    model: BaseModel, fields: Iterable[str], loc: tuple[str | int, ...], why: str
) -> Iterator[ConfigProblem]:
    """A problem, saying `why`, for each of `fields` that the stack file sets in `model` (at
    `loc`), in name order."""
    for field in sorted(model.model_fields_set & set(fields)):
        yield ConfigProblem(key_path(*loc, _key_of(type(model), field)), getattr(model, field), why)


# --- Loading -------------------------------------------------------------------------------


def read_pulumi_config() -> dict[str, Any]:
    """The stack's `gpu-platform:` keys, without the namespace, values parsed from JSON.

    Every key is read, not only the known ones, so that a misspelt key is reported rather than
    silently ignored.
    """
    import pulumi
    import pulumi.runtime.config as runtime_config

    prefix = CONFIG_NAMESPACE + ":"
    keys = _stack_config_keys()

    def value(key: str) -> Any:
        text = runtime_config.get_config(key)
        try:
            return json.loads(text) if text is not None else None
        except ValueError:
            return text

    misspelt = [
        ConfigProblem(
            key, _SECRET if runtime_config.is_config_secret(key) else value(key), _NEAR_MISS
        )
        for key in keys
        if _near_miss(key, project=pulumi.get_project())
    ]
    if misspelt:
        raise ConfigError(misspelt)
    return {key.removeprefix(prefix): value(key) for key in keys if key.startswith(prefix)}


def secret_config_keys() -> frozenset[str]:
    """The stack's `gpu-platform:` keys (without the namespace) that Pulumi holds as secrets."""
    import pulumi.runtime.config as runtime_config

    prefix = CONFIG_NAMESPACE + ":"
    return frozenset(
        key.removeprefix(prefix)
        for key in _stack_config_keys()
        if key.startswith(prefix) and runtime_config.is_config_secret(key)
    )


def _stack_config_keys() -> set[str]:
    """Every config key of the stack, of every namespace, as the Pulumi CLI hands them over."""
    import pulumi.runtime.config as runtime_config

    return {*(runtime_config.get_config_env() or {}), *runtime_config.CONFIG.get()}


_NEAR_MISS_RATIO = 0.85
_NEAR_MISS = (
    f"a key in the `{CONFIG_NAMESPACE}` namespace: this one looks misspelt, and Pulumi hands a"
    " key in a namespace no program reads to no one"
)


def _near_miss(key: str, project: str) -> bool:
    """Whether `key`'s namespace is a likely misspelling of the platform's (and not the
    project's own, which may well be named like it)."""
    namespace = key.split(":", 1)[0]
    return namespace not in (CONFIG_NAMESPACE, project) and (
        difflib.SequenceMatcher(None, namespace, CONFIG_NAMESPACE).ratio() >= _NEAR_MISS_RATIO
    )


def load_stack_config(
    raw: Mapping[str, Any], secret_keys: frozenset[str] = frozenset()
) -> StackConfig:
    """Validate the stack's `gpu-platform:` keys (given without the namespace); `secret_keys`
    are those set as secrets, whose values no error shows and the components keep secret.

    Field rules run first; rules across fields run once every field is valid, so each reported
    problem is about a value the user can fix as it stands.
    """
    try:
        config = StackConfig.model_validate(raw)
    except ValidationError as error:
        raise ConfigError(_problems_from(error)).hiding_secrets(secret_keys) from None
    problems = list(_cross_field_problems(config))
    if problems:
        raise ConfigError(problems).hiding_secrets(secret_keys)
    config._secret_keys = secret_keys
    return config


_EXPECTATION_PREFIXES = ("Input should be ", "Value should ", "String should ")


def _problems_from(error: ValidationError) -> Iterator[ConfigProblem]:
    for e in error.errors(include_url=False):
        # A discriminated union puts the chosen tag in the location: drop it.
        loc = [
            part
            for i, part in enumerate(e["loc"])
            if not (i > 0 and e["loc"][i - 1] == "sharing" and part in SHARING_MODES)
        ]
        if e["type"] == "union_tag_not_found" and loc[-1] == "sharing":
            # `sharing: {replicas: 4}`: the key missing is the mode, which decides what the
            # others mean; pydantic would only say it found no tag in the whole object.
            modes = ", ".join(f"'{mode}'" for mode in SHARING_MODES)
            yield ConfigProblem(key_path(*loc, "mode"), _MISSING, f"one of {modes}")
            continue
        value = _MISSING if e["type"] == "missing" else e["input"]
        yield ConfigProblem(
            key_path(*loc), value, _expectation(e["type"], e["msg"], e.get("ctx", {}))
        )


def _expectation(kind: str, message: str, ctx: Mapping[str, Any]) -> str:
    if kind == "extra_forbidden":
        return "no such key (check its spelling against the config reference)"
    if kind == "missing":
        return "a value"
    if kind == "string_pattern_mismatch":
        return _PATTERN_MEANINGS[ctx["pattern"]]
    if kind == "union_tag_invalid":
        return f"one of {ctx['expected_tags']}"
    for prefix in _EXPECTATION_PREFIXES:
        if message.startswith(prefix):
            return message.removeprefix(prefix)
    return message[0].lower() + message[1:]


# --- Rules across fields -------------------------------------------------------------------


def _cross_field_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    yield from _cluster_problems(config)
    yield from _other_cloud_problems(config)
    yield from _pool_problems(config)
    yield from _reservation_problems(config)
    yield from _ami_release_problems(config)
    yield from _canary_problems(config)
    yield from _bottlerocket_sharing_problems(config)
    yield from _gke_pool_problems(config)
    yield from _gke_capacity_problems(config)
    yield from _operator_override_problems(config)
    yield from _namespace_problems(config)
    yield from _monitoring_problems(config)
    yield from _karpenter_problems(config)


def _cluster_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    cluster = config.cluster
    required = ("region",) if config.cloud is Cloud.AWS else ("project", "location")
    for field in required:
        if getattr(cluster, field) is None:
            yield ConfigProblem(
                key_path("cluster", field), _MISSING, f"a value when cloud is {config.cloud}"
            )
    images = _NODE_IMAGES[config.cloud]
    if cluster.node_image is not None and cluster.node_image not in images:
        yield ConfigProblem(
            key_path("cluster", "nodeImage"),
            cluster.node_image,
            f"one of {list(images)} when cloud is {config.cloud}",
        )


def _platform(config: StackConfig) -> Platform | None:
    """The stack's platform; None while its node image is another cloud's (`_cluster_problems`
    reports that), so that rules about one platform do not fail on it."""
    image = config.cluster.node_image
    return config.platform if image in (None, *_NODE_IMAGES[config.cloud]) else None


# The operator's driver settings: they only act where it builds the driver (GKE Ubuntu).
_OPERATOR_DRIVER_OPTIONS = (
    "driver_version",
    "driver_upgrade_max_unavailable_percent",
    "driver_upgrade_job_wait_minutes",
)


# Settings only one cloud's components read, by field name, with what each is. The other cloud
# would silently ignore them, so a stack carrying one reads as if it did something; only what
# the user set counts (`model_fields_set`), as every stack has the defaults.
_CLUSTER_OPTIONS: Mapping[str, tuple[Cloud, str]] = {
    "region": (Cloud.AWS, "the EKS cluster's region"),
    "node_subnet_ids": (Cloud.AWS, "the EKS node groups' subnets"),
    "cni_policy_on_node_role": (Cloud.AWS, "the VPC CNI's policy on the EKS node roles"),
    "node_monitoring_agent_version": (Cloud.AWS, "an EKS add-on"),
    "project": (Cloud.GCP, "the GKE cluster's project"),
    "location": (Cloud.GCP, "the GKE cluster's location"),
}
_OPERATOR_OPTIONS: Mapping[str, tuple[Cloud, str]] = {
    "critical_pod_quota": (Cloud.GCP, "GKE admits critical pods outside kube-system by quota"),
    **dict.fromkeys(
        _OPERATOR_DRIVER_OPTIONS,
        (Cloud.GCP, "the operator builds the driver on GKE Ubuntu nodes only"),
    ),
}
_MONITORING_OPTIONS: Mapping[str, tuple[Cloud, str]] = {
    "google_managed_prometheus": (Cloud.GCP, "Managed Service for Prometheus is GKE's"),
}
_STACK_OPTIONS: Mapping[str, tuple[Cloud, str]] = {
    "autoscaler": (Cloud.AWS, "GKE scales its node pools itself"),
    "provisioner": (Cloud.AWS, "GKE scales its node pools itself"),
    "karpenter": (Cloud.AWS, "Karpenter launches EC2 instances"),
}
_POOL_OPTIONS: Mapping[str, tuple[Cloud, str]] = {
    "aws": (Cloud.AWS, "EKS node group settings"),
    "gcp": (Cloud.GCP, "GKE node pool settings"),
}


def _other_cloud_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    sections: list[tuple[tuple[str | int, ...], BaseModel, Mapping[str, tuple[Cloud, str]]]] = [
        ((), config, _STACK_OPTIONS),
        (("cluster",), config.cluster, _CLUSTER_OPTIONS),
        (("operator",), config.operator, _OPERATOR_OPTIONS),
        (("monitoring",), config.monitoring, _MONITORING_OPTIONS),
    ]
    sections += [(("pools", i), pool, _POOL_OPTIONS) for i, pool in enumerate(config.pools)]
    for loc, model, options in sections:
        for field, (cloud, what) in options.items():
            if cloud is config.cloud or field not in model.model_fields_set:
                continue
            value = getattr(model, field)
            if isinstance(value, BaseModel):
                # A block counts by what is set in it: `aws: {}` sets nothing.
                value = value.model_dump(mode="json", by_alias=True, exclude_unset=True)
                if not value:
                    continue
            yield ConfigProblem(
                key_path(*loc, _key_of(type(model), field)),
                value,
                f"no value when cloud is {config.cloud}: it applies to {cloud} stacks only"
                f" ({what})",
            )


# Labels the platform sets from the pool's description; a pool overriding one would break
# scheduling or the operator's per-node configuration.
_RESERVED_LABEL_PREFIXES = ("nvidia.com/", "gpu-platform.io/", "k8s.amazonaws.com/")
# A node's labels come from its kubelet (`--node-labels`), which refuses any in the kubernetes.io
# and k8s.io namespaces but those under kubelet.kubernetes.io/ and node.kubernetes.io/ and a few
# it sets itself (the kubelet's --node-labels reference), so the node would never register.
GPU_TAINT_KEY = "nvidia.com/gpu"
_KUBELET_LABEL_NAMESPACES = ("kubelet.kubernetes.io", "node.kubernetes.io")
# GKE keeps the cloud.google.com/ labels for itself.
_GKE_LABEL_NAMESPACE = "cloud.google.com"


def _label_problem(key: str, cloud: Cloud) -> str | None:
    """Why a pool cannot carry the label `key`, or None."""
    if key.startswith(_RESERVED_LABEL_PREFIXES):
        return f"no label under {', '.join(_RESERVED_LABEL_PREFIXES)} (the platform sets those)"
    namespace = key.rpartition("/")[0]
    kubernetes = namespace in ("kubernetes.io", "k8s.io") or namespace.endswith(
        (".kubernetes.io", ".k8s.io")
    )
    if kubernetes and namespace not in _KUBELET_LABEL_NAMESPACES:
        allowed = " or ".join(f"{n}/" for n in _KUBELET_LABEL_NAMESPACES)
        return (
            f"no label in the kubernetes.io or k8s.io namespaces but under {allowed}: the"
            " kubelet refuses the others, and the node would not register"
        )
    if cloud is Cloud.GCP and (
        namespace == _GKE_LABEL_NAMESPACE or namespace.endswith("." + _GKE_LABEL_NAMESPACE)
    ):
        return "no label under cloud.google.com/ (GKE sets those)"
    return None


def _pool_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    seen: dict[str, int] = {}
    for i, pool in enumerate(config.pools):
        if pool.name in seen:
            yield ConfigProblem(
                key_path("pools", i, "name"),
                pool.name,
                f"a name not already used by pools[{seen[pool.name]}]",
            )
        seen.setdefault(pool.name, i)
        if pool.min > pool.max:
            yield ConfigProblem(key_path("pools", i, "min"), pool.min, f"at most max ({pool.max})")
        for key in pool.labels:
            problem = _label_problem(key, config.cloud)
            if problem is not None:
                yield ConfigProblem(key_path("pools", i, "labels", key), pool.labels[key], problem)
        for j, taint in enumerate(pool.taints):
            # Kubernetes keeps one taint per key and effect; the platform's GPU taint is set on
            # every pool already.
            if taint.key == GPU_TAINT_KEY:
                yield ConfigProblem(
                    key_path("pools", i, "taints", j, "key"),
                    taint.key,
                    f"a key other than {GPU_TAINT_KEY} (the platform taints every GPU node with"
                    " it)",
                )
        if config.cloud is Cloud.AWS and pool.aws.efa and len(pool.zones) != 1:
            yield ConfigProblem(
                key_path("pools", i, "zones"),
                pool.zones,
                "exactly one zone with aws.efa: a cluster placement group keeps its instances in"
                " one zone, where EFA reaches between them",
            )
        if config.cloud is Cloud.GCP and len(pool.instance_types) != 1:
            yield ConfigProblem(
                key_path("pools", i, "instanceTypes"),
                pool.instance_types,
                "exactly one machine type (a GKE node pool has one)",
            )
        if isinstance(pool.sharing, MigSharing):
            yield from _mig_problems(pool, i)


EC2_RESERVED_CAPACITIES = ("reserved", "capacity-block")
"""Capacities bought from EC2 ahead of time; GKE pools consume reservations through
`gcp.reservation` instead."""
# The capacities each reservation setting acts on; on any other it would do nothing.
_RESERVATION_OPTIONS: Mapping[str, tuple[str, ...]] = {
    "capacity_reservation_id": EC2_RESERVED_CAPACITIES,
    "capacity_reservation_resource_group_arn": ("reserved",),
    "capacity_block_start": ("capacity-block",),
    "on_demand_fallback": ("spot", "reserved"),
}


def _reservation_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    for i, pool in enumerate(config.pools):
        if config.cloud is Cloud.AWS:
            yield from _ec2_reservation_problems(config, pool, i)
        elif pool.capacity in EC2_RESERVED_CAPACITIES:
            yield ConfigProblem(
                key_path("pools", i, "capacity"),
                pool.capacity,
                "on-demand or spot on GKE (reserved and capacity-block buy EC2 capacity; a GKE"
                " pool consumes Compute Engine reservations through gcp.reservation)",
            )


def _ec2_reservation_problems(
    config: StackConfig, pool: GpuPoolSpec, i: int
) -> Iterator[ConfigProblem]:
    options = pool.aws
    for field, capacities in _RESERVATION_OPTIONS.items():
        value = getattr(options, field)
        if value not in (None, False) and pool.capacity not in capacities:
            yield ConfigProblem(
                key_path("pools", i, "aws", _key_of(EksPoolOptions, field)),
                value,
                f"no value unless capacity is {' or '.join(capacities)} (this pool's is"
                f" {pool.capacity})",
            )
    reservation = options.capacity_reservation_id
    group = options.capacity_reservation_resource_group_arn
    if pool.capacity == "capacity-block":
        if reservation is None:
            yield ConfigProblem(
                key_path("pools", i, "aws", "capacityReservationId"),
                _MISSING,
                "the Capacity Block's reservation id (cr-...) when capacity is capacity-block",
            )
        yield from _one_placement_problems(
            pool,
            i,
            "exactly one instance type with capacity-block (a block reserves one type)",
            "exactly one zone with capacity-block, the block's: its instances launch only there,"
            " and a node group over other zones would try them in vain",
        )
    elif pool.capacity == "reserved" and reservation is None and group is None:
        yield ConfigProblem(
            key_path("pools", i, "aws", "capacityReservationId"),
            _MISSING,
            "the id (cr-...) of the capacity reservation the pool launches into, or a resource"
            " group of reservations in aws.capacityReservationResourceGroupArn, when capacity is"
            " reserved",
        )
    elif pool.capacity == "reserved" and reservation is not None and group is not None:
        yield ConfigProblem(
            key_path("pools", i, "aws", "capacityReservationResourceGroupArn"),
            group,
            "no value beside aws.capacityReservationId: the pool launches into one reservation,"
            " or into one resource group of them",
        )
    if config.provisioner == "cluster-autoscaler":
        yield from _node_group_reservation_problems(pool, i)


# What EC2 does when the reservation a launch asks for has no room (EC2 user guide, "Launch
# instances into an existing Capacity Reservation"): a launch that targets one reservation by id
# fails; one that targets a resource group of them runs on-demand, unless the launch template's
# preference is `capacity-reservations-only` (EC2 API reference,
# LaunchTemplateCapacityReservationSpecificationRequest).
_TARGETED_RESERVATION = (
    "a launch that targets one capacity reservation fails unless it matches the reservation's"
    " instance type and zone"
)


def _node_group_reservation_problems(pool: GpuPoolSpec, i: int) -> Iterator[ConfigProblem]:
    """What a managed node group cannot do with a reservation."""
    if pool.capacity == "reserved" and pool.aws.capacity_reservation_id is not None:
        yield from _one_placement_problems(
            pool,
            i,
            f"exactly one instance type with aws.capacityReservationId, the reservation's:"
            f" {_TARGETED_RESERVATION} (a resource group, aws.capacityReservationResourceGroupArn,"
            " may hold reservations of several)",
            f"exactly one zone with aws.capacityReservationId, the reservation's:"
            f" {_TARGETED_RESERVATION}, and a node group over other zones would try them in vain",
        )
    if not pool.aws.on_demand_fallback:
        return
    path = key_path("pools", i, "aws", "onDemandFallback")
    # One capacity type per node group: the EKS user guide, "Create a managed node group" ("You
    # can't mix different capacity types within the same node group").
    if pool.capacity == "spot":
        yield ConfigProblem(
            path,
            True,
            "false or no value on a spot pool with managed node groups: a node group has one"
            " capacity type, and the cluster autoscaler's priority expander grows on-demand pools"
            " before spot ones, so an on-demand pool beside this one would come first, not after"
            " it; use provisioner karpenter, whose NodePool falls back from spot to on-demand",
        )
    elif pool.aws.capacity_reservation_id is not None:
        yield ConfigProblem(
            path,
            True,
            "false or no value with aws.capacityReservationId on managed node groups: a launch"
            " that targets one reservation fails while it is full, never falling back to"
            " on-demand. Put the reservation in a resource group and name that in"
            " aws.capacityReservationResourceGroupArn instead (EC2 launches on-demand when no"
            " reservation of the group has room), or add an on-demand pool of the same instance"
            " type, which the autoscaler grows once this pool's launches fail",
        )


def _one_placement_problems(
    pool: GpuPoolSpec, i: int, one_type: str, one_zone: str
) -> Iterator[ConfigProblem]:
    """A pool that must launch one instance type in one zone: `one_type` and `one_zone` say why."""
    if len(pool.instance_types) != 1:
        yield ConfigProblem(key_path("pools", i, "instanceTypes"), pool.instance_types, one_type)
    if len(pool.zones) != 1:
        yield ConfigProblem(key_path("pools", i, "zones"), pool.zones, one_zone)


def _ami_release_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    platform = _platform(config)
    if platform not in (Platform.EKS_AL2023, Platform.EKS_BOTTLEROCKET):
        return
    for i, pool in enumerate(config.pools):
        release = pool.aws.ami_release_version
        path = key_path("pools", i, "aws", "amiReleaseVersion")
        if release is None:
            # EKS would take its latest release when the node group is created, so that pools
            # created a month apart run different drivers, and the driver is known to nobody.
            yield ConfigProblem(
                path, _MISSING, f"a pinned AMI release; {known_releases(config.node_image)}"
            )
        # An AL2023 release ends in its build date; one ending in a Bottlerocket commit names no
        # AL2023 AMI, and EKS would refuse it only at `pulumi up`. The other way round cannot be
        # told apart: a commit may be all digits.
        elif platform is Platform.EKS_AL2023 and not re.match(_AL2023_AMI_RELEASE, release):
            yield ConfigProblem(
                path,
                release,
                "an AL2023 release with nodeImage al2023: the Kubernetes version and the build"
                " date, such as 1.33.4-20251016 (1.52.0-0d4a7f31 is Bottlerocket's form)",
            )


def _canary_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    by_name = {pool.name: pool for pool in config.pools}
    for i, pool in enumerate(config.pools):
        if pool.canary_of is None:
            continue
        path = key_path("pools", i, "canaryOf")
        target = by_name.get(pool.canary_of)
        others = sorted(set(by_name) - {pool.name})
        if target is None or target is pool:
            yield ConfigProblem(path, pool.canary_of, f"another pool's name: {others}")
        elif target.canary_of is not None:
            yield ConfigProblem(
                path,
                pool.canary_of,
                f"a pool that is not itself a canary ({target.name} is {target.canary_of}'s)",
            )
        elif (target.instance_types, target.sharing) != (pool.instance_types, pool.sharing):
            yield ConfigProblem(
                path,
                pool.canary_of,
                f"a pool with the canary's instance types and sharing mode: {target.name} has"
                f" {target.instance_types}, {target.sharing.mode}; this pool"
                f" {pool.instance_types}, {pool.sharing.mode}. A canary on other GPUs proves"
                " nothing for them",
            )
        else:
            yield from _canary_lead_problems(config, i, pool, target)


def _canary_lead_problems(
    config: StackConfig, i: int, canary: GpuPoolSpec, target: GpuPoolSpec
) -> Iterator[ConfigProblem]:
    """A pool runs nothing newer than its canary: what reaches it was tried there first."""
    j = config.pools.index(target)
    if config.cloud is Cloud.AWS:
        ours, theirs = canary.aws.ami_release_version, target.aws.ami_release_version
        ahead = (
            ours is not None and theirs is not None and _release_key(theirs) > _release_key(ours)
        )
        where = ("aws", "amiReleaseVersion")
    else:
        ours, theirs = canary.gcp.node_version, target.gcp.node_version
        ahead = theirs is not None and (ours is None or _release_key(theirs) > _release_key(ours))
        where = ("gcp", "nodeVersion")
    if ahead:
        yield ConfigProblem(
            key_path("pools", j, *where),
            theirs,
            f"at most {ours or 'the cluster version'}, the version of its canary pools[{i}]"
            f" ({canary.name}): move the canary first, watch it, then promote",
        )
    if _platform(config) is Platform.GKE_UBUNTU:
        ours, theirs = (pool_driver_version(config.operator, p) for p in (canary, target))
        if _version_key(theirs) > _version_key(ours):
            set_by = (
                ("pools", j, "gcp", "driverVersion")
                if target.gcp.driver_version is not None
                else ("operator", "driverVersion")
            )
            yield ConfigProblem(
                key_path(*set_by),
                theirs,
                f"at most {ours}, the NVIDIA driver of pools[{j}] ({target.name})'s canary"
                f" pools[{i}] ({canary.name}): give the canary the new driver first"
                " (gcp.driverVersion), watch it, then promote",
            )


def pool_driver_version(operator: OperatorSpec, pool: GpuPoolSpec) -> str:
    """The NVIDIA driver the GPU Operator builds on a GKE Ubuntu pool's nodes."""
    return pool.gcp.driver_version or operator.driver_version


def _release_key(release: str) -> tuple[Any, ...]:
    """`1.35.6-20260714` and `1.34.1-gke.1829001` ordered by version, then build."""
    version, _, build = release.partition("-")
    numbers = tuple(int(part) for part in version.split("."))
    return numbers, tuple(int(p) if p.isdigit() else p for p in re.split(r"[.-]", build))


def _bottlerocket_sharing_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    # Bottlerocket's NVIDIA variant runs its own device plugin, so the GPU Operator's is off
    # there and its per-node sharing configs and MIG manager reach no node: a shared pool would
    # advertise whole GPUs while the autoscaler expects slices.
    if config.cloud is not Cloud.AWS or config.cluster.node_image != "bottlerocket":
        return
    for i, pool in enumerate(config.pools):
        if not isinstance(pool.sharing, ExclusiveSharing):
            yield ConfigProblem(
                key_path("pools", i, "sharing", "mode"),
                pool.sharing.mode,
                "exclusive on Bottlerocket nodes (its own NVIDIA device plugin serves the GPUs,"
                " not the GPU Operator's); use nodeImage al2023 to share GPUs",
            )


def _gke_pool_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    if config.cloud is not Cloud.GCP:
        return
    # On COS, Google's driver installer loads COS's signed driver; a driver the operator built
    # as well would fight it for the same GPUs.
    driver = config.operator.overrides.get("driver", {})
    platform = _platform(config)
    if platform is Platform.GKE_COS and driver.get("enabled") is True:
        yield ConfigProblem(
            key_path("operator", "overrides", "driver", "enabled"),
            True,
            "false or no value with nodeImage cos (Google's driver installer owns the driver"
            " there); for the operator's own driver, use nodeImage ubuntu",
        )
    if platform is Platform.GKE_COS:
        yield from _set_field_problems(
            config.operator,
            _OPERATOR_DRIVER_OPTIONS,
            ("operator",),
            "no value with nodeImage cos, where Google's installer loads COS's driver",
        )
    if platform is Platform.GKE_UBUNTU:
        yield from _nvidia_driver_problems(config)
    for i, pool in enumerate(config.pools):
        if pool.gcp.cos_driver_branch is not None and platform is not Platform.GKE_COS:
            yield ConfigProblem(
                key_path("pools", i, "gcp", "cosDriverBranch"),
                pool.gcp.cos_driver_branch,
                "no value unless nodeImage is cos (on ubuntu the pool's gcp.driverVersion, else"
                " operator.driverVersion, holds)",
            )
        if pool.gcp.driver_version is not None and platform is Platform.GKE_COS:
            yield ConfigProblem(
                key_path("pools", i, "gcp", "driverVersion"),
                pool.gcp.driver_version,
                "no value unless nodeImage is ubuntu, where the GPU Operator builds the driver;"
                " on cos the pool's GKE version decides it (gcp.nodeVersion, gcp.cosDriverBranch)",
            )
        yield from _gke_sharing_problems(config, pool, i)
        if pool.gcp.max_surge == 0 and pool.gcp.max_unavailable == 0:
            yield ConfigProblem(
                key_path("pools", i, "gcp", "maxSurge"),
                0,
                "at least 1 when maxUnavailable is 0 (GKE could upgrade no node)",
            )


# On GKE Ubuntu each pool's nodes get their driver from an NVIDIADriver resource of their own
# (gpu_platform/kubernetes/nvidia_driver.py). From v26.7.0 the operator routes every GPU node to
# the one NVIDIADriver selecting it, hands nodes over from ClusterPolicy's driver through its
# upgrade controller, and applies each NVIDIADriver's own upgrade policy to its nodes
# (gpu-operator v26.7.0 internal/nvidiadriver/nvidiadriver.go AssignOwners,
# controllers/upgrade_controller.go reconcileNVIDIADriverUpgrades); up to v26.3.3 one
# ClusterPolicy policy covered every driver pod.
NVIDIA_DRIVER_MIN_CHART_VERSION = "v26.7.0"
NVIDIA_DRIVER_OVERRIDES = ("repository", "image", "imagePullSecrets")
"""The `operator.overrides.driver` values the platform's NVIDIADriver resources take over."""
# With the NVIDIADriver CRD on, the chart renders ClusterPolicy's other driver values no more,
# and the operator reads its own upgrade policy from each NVIDIADriver: only `enabled` and the
# driver manager's image (the operator's DRIVER_MANAGER_IMAGE) still act (v26.7.0
# templates/clusterpolicy.yaml, templates/operator.yaml). `version` has a rule of its own.
_CHART_DRIVER_OVERRIDES = ("enabled", "manager", "version")


def _nvidia_driver_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    chart = config.operator.chart_version
    if _version_key(chart) < _version_key(NVIDIA_DRIVER_MIN_CHART_VERSION):
        yield ConfigProblem(
            key_path("operator", "chartVersion"),
            chart,
            f"{NVIDIA_DRIVER_MIN_CHART_VERSION} or newer with nodeImage ubuntu, where each pool"
            " has an NVIDIADriver resource of its own: older operators neither hand nodes over"
            " to it nor roll it out with its own upgrade policy",
        )
    taken = (*NVIDIA_DRIVER_OVERRIDES, *_CHART_DRIVER_OVERRIDES)
    for key, value in config.operator.overrides.get("driver", {}).items():
        # The operator reconciles NVIDIADriver resources whenever ClusterPolicy's
        # useNvidiaDriverCRD is on, whatever its driver.enabled (v26.7.0
        # controllers/nvidiadriver_controller.go:120-131): `false` would install the pools'
        # drivers all the same.
        if key == "enabled" and value is not True:
            yield ConfigProblem(
                key_path("operator", "overrides", "driver", key),
                value,
                "true or no value with nodeImage ubuntu, where the platform's NVIDIADriver"
                " resources install each pool's driver whatever it says, and nothing else"
                " installs one; for a driver the GPU Operator does not build, use nodeImage cos"
                " (Google's installer loads COS's driver)",
            )
        if key not in taken:
            yield ConfigProblem(
                key_path("operator", "overrides", "driver", key),
                value,
                f"no value with nodeImage ubuntu, where only {', '.join(taken[:-1])} act on the"
                " driver: the platform's NVIDIADriver resources build it (per pool with"
                " gcp.driverVersion, rolled out within operator.driverUpgrade... settings)",
            )


def _version_key(version: str) -> tuple[int, ...]:
    """`595.91.07` or `v26.7.0` as numbers, so that 595.100.01 comes after 595.91.07."""
    return tuple(int(part) for part in version.removeprefix("v").split("."))


# GKE's API takes 2 to 48 clients per GPU, for time-sharing and MPS alike.
_GKE_MAX_SHARED_CLIENTS = 48


def _gke_sharing_problems(
    config: StackConfig, pool: GpuPoolSpec, i: int
) -> Iterator[ConfigProblem]:
    # On GKE, GKE itself shares and partitions GPUs, so that its autoscaler counts what the
    # nodes advertise (gpu_platform.node_identity.sharer_for); it does so on COS only.
    if isinstance(pool.sharing, ExclusiveSharing):
        return
    if _platform(config) is Platform.GKE_UBUNTU:
        yield ConfigProblem(
            key_path("pools", i, "sharing", "mode"),
            pool.sharing.mode,
            "exclusive with nodeImage ubuntu, where the operator builds the driver and GKE's"
            " autoscaler would plan the pool with whole GPUs; use nodeImage cos to share GPUs",
        )
    elif (
        isinstance(pool.sharing, TimeSlicingSharing)
        and pool.sharing.replicas > _GKE_MAX_SHARED_CLIENTS
    ):
        yield ConfigProblem(
            key_path("pools", i, "sharing", "replicas"),
            pool.sharing.replicas,
            f"at most {_GKE_MAX_SHARED_CLIENTS} on GKE (its maxSharedClientsPerGpu)",
        )


# The oldest GKE version whose clusters and nodes take each capacity mode: flex-start from
# 1.32.2-gke.1652000 (GKE's "About flex-start provisioning mode" and provisioningrequest pages),
# queued provisioning from 1.28.3-gke.1098000 (the provisioningrequest page before flex-start).
GKE_CAPACITY_MINIMUM_VERSIONS: Mapping[str, str] = {
    "flexStart": "1.32.2-gke.1652000",
    "queuedProvisioning": "1.28.3-gke.1098000",
}


def dynamic_workload_scheduler_modes(pool: GpuPoolSpec) -> list[str]:
    """The pool's settings (keys under `gcp`) that have Dynamic Workload Scheduler find its
    nodes."""
    enabled = {"flexStart": pool.gcp.flex_start, "queuedProvisioning": pool.gcp.queued_provisioning}
    return [key for key, on in enabled.items() if on]


def gke_capacity_too_new(pool: GpuPoolSpec, gke_version: str) -> dict[str, str]:
    """The pool's capacity settings (keys under `gcp`) that GKE `gke_version` does not have
    yet, each with the oldest version that has it."""
    return {
        key: GKE_CAPACITY_MINIMUM_VERSIONS[key]
        for key in dynamic_workload_scheduler_modes(pool)
        if _release_key(gke_version) < _release_key(GKE_CAPACITY_MINIMUM_VERSIONS[key])
    }


def _gke_capacity_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    # On AWS, `_other_cloud_problems` refuses the whole `gcp` block.
    if config.cloud is not Cloud.GCP:
        return
    for i, pool in enumerate(config.pools):
        gcp = pool.gcp
        modes = " and ".join(f"gcp.{key}" for key in dynamic_workload_scheduler_modes(pool))
        yield from _gke_reservation_problems(pool, i, bool(modes))
        # Spot VMs are a provisioning model of their own, as flex-start VMs are: Google's
        # cluster-toolkit refuses the two together (modules/compute/gke-node-pool/main.tf at
        # 01a7a3e, its preconditions, as for the rules below).
        if gcp.flex_start and pool.capacity == "spot":
            yield ConfigProblem(
                key_path("pools", i, "capacity"),
                pool.capacity,
                "on-demand with gcp.flexStart: flex-start VMs are a provisioning model of their"
                " own, not Spot VMs",
            )
        # GKE's guides create these pools with `--num-nodes 0` and a minimum of 0: a flex-start
        # node ends after its run time, and a queued pool gets nodes only for a
        # ProvisioningRequest (cluster-toolkit: "autoscaling_total_min_nodes should be 0").
        if modes and pool.min != 0:
            yield ConfigProblem(
                key_path("pools", i, "min"),
                pool.min,
                f"0 with {modes}: GKE starts such nodes only when they are asked for, never to"
                " keep a floor",
            )
        if gcp.max_run_hours is not None and not gcp.flex_start:
            yield ConfigProblem(
                key_path("pools", i, "gcp", "maxRunHours"),
                gcp.max_run_hours,
                "no value unless gcp.flexStart is true (a queued pool's ProvisioningRequests"
                " set their own maxRunDurationSeconds)",
            )
        if gcp.node_version is not None:
            for key, minimum in gke_capacity_too_new(pool, gcp.node_version).items():
                yield ConfigProblem(
                    key_path("pools", i, "gcp", "nodeVersion"),
                    gcp.node_version,
                    f"{minimum} or later with gcp.{key}, the oldest GKE version with it",
                )


def _gke_reservation_problems(
    pool: GpuPoolSpec, i: int, dynamic_workload_scheduler: bool
) -> Iterator[ConfigProblem]:
    gcp = pool.gcp
    if gcp.reservation == "specific":
        if gcp.reservation_name is None:
            yield ConfigProblem(
                key_path("pools", i, "gcp", "reservationName"),
                _MISSING,
                "the name of the Compute Engine reservation to consume, with reservation specific",
            )
        if len(pool.zones) != 1:
            yield ConfigProblem(
                key_path("pools", i, "zones"),
                pool.zones,
                "exactly one zone with reservation specific, the reservation's: reservations"
                " are zonal, and the pool's nodes in any other zone could never start",
            )
    elif gcp.reservation_name is not None:
        yield ConfigProblem(
            key_path("pools", i, "gcp", "reservationName"),
            gcp.reservation_name,
            "no value unless gcp.reservation is specific",
        )
    if gcp.reservation in (None, "none"):
        return
    path = key_path("pools", i, "gcp", "reservation")
    # Compute Engine's "Choose a reservation type" page: reserved capacity cannot create Spot VMs.
    if pool.capacity == "spot":
        yield ConfigProblem(
            path,
            gcp.reservation,
            "none, or no value, with capacity spot: Spot VMs cannot consume reservations",
        )
    # GKE creates flex-start and queued pools with `--reservation-affinity=none` (its
    # provisioningrequest and flex-start pages); cluster-toolkit refuses any other affinity.
    if dynamic_workload_scheduler:
        yield ConfigProblem(
            path,
            gcp.reservation,
            "none, or no value, with gcp.flexStart or gcp.queuedProvisioning: Dynamic Workload"
            " Scheduler finds their capacity, outside any reservation",
        )


def _operator_override_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    if "version" in config.operator.overrides.get("driver", {}):
        yield ConfigProblem(
            key_path("operator", "overrides", "driver", "version"),
            config.operator.overrides["driver"]["version"],
            "no value: set operator.driverVersion, which the pools' CUDA ceiling follows",
        )
    chart = GPU_OPERATOR_CHART
    components = chart_components(chart.version)
    for name, values in config.operator.overrides.items():
        if name not in components:
            guess = difflib.get_close_matches(name, components, n=1)
            hint = f"did you mean {guess[0]}?" if guess else ", ".join(sorted(components))
            yield ConfigProblem(
                key_path("operator", "overrides", name),
                values,
                f"a top-level component of the {chart.name} {chart.version} chart ({hint})",
            )


def mig_problem(pool: GpuPoolSpec, accelerator: str, index: int) -> ConfigProblem | None:
    """Why a MIG pool cannot run on this accelerator, if it cannot.

    Also used by the EKS node group once the accelerator is read from the instance type.
    """
    assert isinstance(pool.sharing, MigSharing)
    profiles = ACCELERATORS[accelerator].mig_profiles
    if not profiles:
        capable = [name for name, a in ACCELERATORS.items() if a.mig_capable]
        return ConfigProblem(
            key_path("pools", index, "sharing", "mode"),
            "mig",
            f"a MIG-capable accelerator ({', '.join(capable)}); {accelerator} has no MIG",
        )
    if pool.sharing.profile.removeprefix("all-") not in profiles:
        return ConfigProblem(
            key_path("pools", index, "sharing", "profile"),
            pool.sharing.profile,
            f"a profile of {accelerator}: {', '.join('all-' + p for p in profiles)}",
        )
    return None


def _mig_problems(pool: GpuPoolSpec, index: int) -> Iterator[ConfigProblem]:
    assert isinstance(pool.sharing, MigSharing)
    if pool.sharing.strategy == "single":
        yield ConfigProblem(
            key_path("pools", index, "sharing", "strategy"),
            "single",
            "mixed, or no value: with single, MIG slices are advertised as nvidia.com/gpu, the"
            " name a new node's whole GPUs carry until the MIG manager partitions them, so a pod"
            " could get a whole GPU (gpu-operator#2670)",
        )
    if pool.accelerator is not None:
        problem = mig_problem(pool, pool.accelerator, index)
        if problem:
            yield problem


_SYSTEM_NAMESPACES = ("kube-system", "kube-public", "kube-node-lease", "default")


def _autoscaler_installed(config: StackConfig) -> bool:
    return (
        config.cloud is Cloud.AWS
        and config.provisioner == "cluster-autoscaler"
        and config.autoscaler.install
    )


def _karpenter_installed(config: StackConfig) -> bool:
    return config.cloud is Cloud.AWS and config.provisioner == "karpenter"


# Pool settings only a managed node group acts on, with what Karpenter does instead: set on a
# Karpenter stack they would read as if they did something. Karpenter lists only active
# reservations (pkg/providers/capacityreservation/types.go at v1.14.1) and drains a Capacity
# Block's nodes 10 minutes before EC2 reclaims them (docs tasks/odcrs.md).
_NODE_GROUP_ONLY_OPTIONS: Mapping[str, str] = {
    "efa": "EFA interfaces and a cluster placement group come with managed node groups only;"
    " run EFA pools with provisioner cluster-autoscaler",
    "node_group_per_zone": "there are no node groups; Karpenter picks each node's zone among the"
    " pool's zones itself",
    "node_role_arn": "every Karpenter node runs as the node role the platform creates with the"
    " controller, the only role it may pass and the one its access entry admits",
    "capacity_reservation_resource_group_arn": "Karpenter selects reservations by id, not by"
    " resource group: name the reservation in aws.capacityReservationId",
    "capacity_block_start": "Karpenter launches into a Capacity Block once it is active and"
    " drains its nodes before it ends, by itself",
    "node_repair": "EKS node repair acts on managed node groups; Karpenter's own is an alpha"
    " feature the platform leaves off (docs/karpenter.md, Node repair and GPU health)",
}
# Karpenter plans a node's `nvidia.com/gpu` from EC2's instance data, one per physical GPU
# (pkg/providers/instancetype/types.go `nvidiaGPUs` at v1.14.1), and knows no `nvidia.com/mig-*`
# resource: pods asking for time-sliced, MPS or MIG shares would never get a node planned for
# them (kubernetes-sigs/karpenter#729, aws/karpenter-provider-aws#3376).
_KARPENTER_SHARING = (
    "exclusive with provisioner karpenter: Karpenter plans nodes with one nvidia.com/gpu per"
    " physical GPU and knows no MIG slices, so pods asking for shares would never get a node"
    " (kubernetes-sigs/karpenter#729); use provisioner cluster-autoscaler to share GPUs"
)


def _karpenter_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    if config.cloud is not Cloud.AWS:
        return  # `_other_cloud_problems` reports provisioner and karpenter there
    if not _karpenter_installed(config):
        yield from _set_field_problems(
            config.karpenter,
            config.karpenter.model_fields_set,
            ("karpenter",),
            "no value unless provisioner is karpenter",
        )
        return
    yield from _set_field_problems(
        config.autoscaler,
        config.autoscaler.model_fields_set,
        ("autoscaler",),
        "no value with provisioner karpenter, which installs Karpenter instead of the"
        " cluster autoscaler (karpenter configures it)",
    )
    for i, pool in enumerate(config.pools):
        if pool.min != 0:
            yield ConfigProblem(
                key_path("pools", i, "min"),
                pool.min,
                "0 with provisioner karpenter: a NodePool has no minimum size, Karpenter starts"
                " nodes for pending pods only",
            )
        if not isinstance(pool.sharing, ExclusiveSharing):
            yield ConfigProblem(
                key_path("pools", i, "sharing", "mode"), pool.sharing.mode, _KARPENTER_SHARING
            )
        for field, why in _NODE_GROUP_ONLY_OPTIONS.items():
            if field in pool.aws.model_fields_set:
                yield ConfigProblem(
                    key_path("pools", i, "aws", _key_of(EksPoolOptions, field)),
                    getattr(pool.aws, field),
                    f"no value with provisioner karpenter: {why}",
                )
    # Any pod of a tenant's namespace may run as the controller's service account there, whose
    # AWS role launches and terminates the cluster's instances. A system namespace is reported
    # by `_namespace_problems` already.
    for i, ns in enumerate(config.namespaces):
        if ns.name == config.karpenter.namespace and ns.name not in _SYSTEM_NAMESPACES:
            yield ConfigProblem(
                key_path("namespaces", i, "name"),
                ns.name,
                f"a namespace of its own, not Karpenter's ({ns.name}, karpenter.namespace)",
            )


def _namespace_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    # The platform declares each tenant namespace with its Pod Security level and GPU quota: in
    # a namespace Kubernetes or the platform itself runs in, it would be declared twice or put
    # restricted Pod Security and a GPU quota on the pods already there. Later entries win, so
    # a system namespace is named as such even where a component runs in it.
    reserved = {
        **(
            {config.autoscaler.namespace: "the cluster autoscaler's (autoscaler.namespace)"}
            if _autoscaler_installed(config)
            else {}
        ),
        config.monitoring.namespace: "the monitoring namespace (monitoring.namespace)",
        **(
            {config.monitoring.node_exporter_namespace: "the installed Prometheus stack's"}
            if config.monitoring.install_prometheus_stack
            else {}
        ),
        config.operator.namespace: "the GPU Operator's (operator.namespace)",
        **{name: "a Kubernetes system namespace" for name in _SYSTEM_NAMESPACES},
    }
    pool_names = {p.name for p in config.pools}
    seen: set[str] = set()
    for i, ns in enumerate(config.namespaces):
        if ns.name in reserved:
            yield ConfigProblem(
                key_path("namespaces", i, "name"),
                ns.name,
                f"a namespace of its own, none of {', '.join(reserved)}:"
                f" {ns.name} is {reserved[ns.name]}",
            )
        if ns.name in seen:
            yield ConfigProblem(
                key_path("namespaces", i, "name"), ns.name, "a name not already used"
            )
        seen.add(ns.name)
        if ns.smoke_test_pool is not None and ns.smoke_test_pool not in pool_names:
            yield ConfigProblem(
                key_path("namespaces", i, "smokeTestPool"),
                ns.smoke_test_pool,
                f"one of the pools: {sorted(pool_names)}",
            )
        if ns.smoke_test_pool is not None and ns.gpu_quota == 0:
            # The quota would refuse the smoke test's pod, and `pulumi up` would wait out the
            # Job's deadline before saying so.
            yield ConfigProblem(
                key_path("namespaces", i, "gpuQuota"),
                ns.gpu_quota,
                "at least 1 when the namespace runs a smoke test",
            )
    tenants = [ns.name for ns in config.namespaces]
    autoscaler = config.autoscaler.namespace
    # Any pod of a tenant's namespace may run as the autoscaler's service account there, whose
    # AWS role resizes the cluster's node groups. In a system namespace the tenant is the one to
    # move, reported above.
    if (
        _autoscaler_installed(config)
        and autoscaler in tenants
        and autoscaler not in _SYSTEM_NAMESPACES
    ):
        yield ConfigProblem(
            key_path("autoscaler", "namespace"),
            autoscaler,
            f"a namespace that is not a tenant's (namespaces[{tenants.index(autoscaler)}] is"
            f" {autoscaler}); the default is kube-system",
        )


def _monitoring_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    monitoring = config.monitoring
    operator_namespace = config.operator.namespace
    if monitoring.namespace == operator_namespace:
        # The GPU Operator's namespace is declared (privileged) for the operator and goes with
        # it; the Prometheus stack would declare it a second time.
        yield ConfigProblem(
            key_path("monitoring", "namespace"),
            monitoring.namespace,
            f"a namespace other than the GPU Operator's ({operator_namespace},"
            " operator.namespace): the platform declares that one for the operator alone",
        )
    release = KUBE_PROMETHEUS_STACK_CHART.name
    if (
        monitoring.install_prometheus_stack
        and monitoring.service_monitor_labels.get("release") != release
    ):
        yield ConfigProblem(
            key_path("monitoring", "serviceMonitorLabels"),
            monitoring.service_monitor_labels,
            f"labels including release: {release} with installPrometheusStack (the installed"
            " Prometheus selects ServiceMonitors and PrometheusRules by its release name)",
        )
    enforced = [i for i, ns in enumerate(config.namespaces) if ns.gpu_idle_minutes is not None]
    if enforced and monitoring.query_url is None:
        tenants = ", ".join(f"namespaces[{i}]" for i in enforced)
        yield ConfigProblem(
            key_path("monitoring", "prometheusUrl"),
            _MISSING,
            f"the URL of the cluster's Prometheus, which {tenants} (gpuIdleMinutes) need to tell"
            " idle GPUs, such as http://prometheus-operated.monitoring.svc:9090; or"
            " installPrometheusStack: true, whose Prometheus is then queried",
        )
