"""What only one cloud has: the existing cluster to attach to, and the settings of an EKS managed
node group or a GKE node pool."""

from typing import Literal

from pydantic import AwareDatetime, Field

from gpu_platform.config.cluster_create import ClusterCreate
from gpu_platform.config.drift_window import DriftWindow
from gpu_platform.config.fields import (
    AmiRelease,
    CapacityReservationId,
    ClusterName,
    DriverVersion,
    EksAddonVersion,
    GceReservationName,
    GcpLocation,
    GcpServiceAccount,
    GkeNodeVersion,
    IamRoleArn,
    IdleMinutesOrNever,
    InstanceCategory,
    InstanceFamily,
    Model,
    NotBlank,
    ResourceGroupArn,
    SubnetId,
)


class ClusterSpec(Model):
    """The cluster the stack runs on: an existing one it attaches to, or, with `create`, one
    the platform creates."""

    name: ClusterName
    """The cluster's name: the existing cluster's, or the one `create` gives the new cluster. A
    GKE cluster the stack creates takes GKE's names: up to 40 lowercase letters, digits and
    hyphens, beginning with a letter and ending with a letter or digit."""
    create: ClusterCreate | None = None
    """Create the cluster (and on EKS its VPC) instead of attaching to an existing one
    (docs/create-cluster.md). Unset: attach to the cluster `name` names."""
    region: NotBlank | None = None
    """AWS region of the EKS cluster: one of the `aws` partition, whose ARNs the IAM documents
    in docs/iam/ name (not `cn-*` or `us-gov-*`)."""
    project: NotBlank | None = None
    """GCP project of the GKE cluster."""
    location: GcpLocation | None = None
    """GKE cluster location: a region (regional cluster) or a zone (zonal cluster)."""
    node_image: Literal["al2023", "bottlerocket", "cos", "ubuntu"] | None = None
    """GPU node OS: `al2023` (default) or `bottlerocket` on EKS; `cos` (default) or `ubuntu`
    on GKE. It decides who installs the driver, so it holds for every pool of the stack."""
    kubeconfig_context: NotBlank | None = None
    """Use this context of the local kubeconfig instead of building access from the cluster."""
    node_subnet_ids: list[SubnetId] = Field(default_factory=list)
    """EKS: subnets for the GPU nodes, used as given; each must be private, its route table
    sending nothing to an internet gateway. Empty means the cluster's own private subnets."""
    cni_policy_on_node_role: bool = False
    """EKS: attach `AmazonEKS_CNI_Policy` to the node roles the stack creates, as EKS does by
    default. Off: on a node role its network-interface permissions reach every pod that can
    reach the instance's credentials (a hostNetwork pod, for one); the VPC CNI gets them from
    its own role instead (`vpcCniRole`)."""
    vpc_cni_role: bool = True
    """EKS: give the VPC CNI (`kube-system/aws-node`) its own role, `<prefix>.vpc-cni` with
    `AmazonEKS_CNI_Policy`, through a Pod Identity association the stack creates. It serves
    every node's CNI, not only the GPU nodes'. Turn it off where the cluster gives the CNI its
    identity otherwise (IRSA, or the add-on's own Pod Identity association): EKS takes one
    association per service account (docs/iam/README.md)."""
    node_monitoring_agent_version: EksAddonVersion | None = None
    """EKS: the version of the `eks-node-monitoring-agent` add-on (`aws eks
    describe-addon-versions --addon-name eks-node-monitoring-agent` lists them), instead of the
    one the platform pins. The agent is installed wherever a node group repairs its nodes
    (`aws.nodeRepair`), with its DCGM server tolerating every taint, so that repair also acts
    on nodes whose GPUs fail while the kubelet stays Ready; with Karpenter, only when this is
    set. It runs its own DCGM host engine beside the GPU Operator's exporter, which AWS does not
    support reusing (docs/gpu-health.md)."""


class EksPoolOptions(Model):
    """Settings that only an EKS managed node group has."""

    ami_release_version: AmiRelease | None = None
    """The EKS-optimized NVIDIA AMI release the pool's nodes run, required on EKS:
    `1.35.6-20260714` on AL2023 (the cluster's Kubernetes version, then the build date),
    `1.54.0-0d4a7f31` on Bottlerocket. It decides the NVIDIA driver, and so the newest CUDA the
    pool's pods may use: the platform knows the driver of every release in its tables
    (gpu_platform/drivers.py). Moving it replaces the pool's nodes within
    `maxUnavailablePercent`; move a pool's `canaryOf` pool first."""
    node_role_arn: IamRoleArn | None = None
    """An existing node IAM role to use instead of creating one for the pool."""
    metadata_hop_limit: Literal[1, 2] = 1
    """IMDSv2 hop limit: 1 keeps pods from reaching the node's credentials; 2 only for
    workloads that must call IMDS through an extra network hop (no IRSA or Pod Identity)."""
    capacity_reservation_id: CapacityReservationId | None = None
    """The EC2 capacity reservation (`cr-...`) the pool launches into: the Capacity Block of a
    `capacity-block` pool, or the on-demand capacity reservation of a `reserved` pool (or
    `capacityReservationResourceGroupArn`). Name its zone in `zones`."""
    capacity_reservation_resource_group_arn: ResourceGroupArn | None = None
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
    resource group (docs/capacity-reservations.md). Under Karpenter a reserved pool's fallback
    launches its own sizes on demand, ahead of the on-demand and spot pools, spot pools of the
    same sizes included: the plan refuses it beside an on-demand pool with a size of the same GPU
    model, of fewer GPUs, vCPUs or memory, that the pool does not list, and beside a spot pool
    with any size of that model up to the pool's largest, whose own `onDemandFallback` falls back
    after spot instead (docs/karpenter.md, Reservations and Capacity Blocks)."""
    max_unavailable_percent: int | None = Field(default=None, ge=1, le=100)
    """Replace up to this share of the pool's nodes at once on an update (a new AMI release,
    launch template or labels); unset replaces one node at a time. EKS drains each node first,
    waiting up to 15 minutes for its pods' disruption budgets before it fails the update. Under
    Karpenter it is the budget of drifted nodes, 10% (rounded up) where unset
    (docs/karpenter.md, Disruption budgets)."""
    empty_nodes_budget_percent: int = Field(default=100, ge=1, le=100)
    """Karpenter: the share of the pool's nodes it may remove at once for being empty. All of
    them by default, so that a large teardown is not paced one node at a time and a node that
    stays NotReady (Karpenter counts it against every budget of its pool) does not keep the
    idle ones running."""
    consolidate_after_minutes: IdleMinutesOrNever | None = None
    """Karpenter: how long one of the pool's nodes must have been empty before Karpenter
    removes it, or `never`. Unset, `never` for a `capacity-block` pool and a `reserved` pool
    without `onDemandFallback` (their capacity is paid for whether a node runs on it or not),
    else `karpenter.consolidateAfterMinutes`."""
    drift_window: DriftWindow | None = None
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
    node_repair: bool = True
    """Have EKS replace or reboot the pool's nodes that turn unhealthy (kubelet `NotReady`, and
    through the node monitoring agent, `AcceleratedHardwareReady=False`: GPU XIDs, double-bit
    ECC and NVLink errors), one node at a time. XIDs that NVIDIA's catalog answers with an
    application restart or no action (13, 31, 43, 45, 94, ...) take no repair: they end one
    tenant's process, not the node of every tenant on it (docs/gpu-health.md). On arm64 pools
    (`g5g`) the agent watches no GPU: only the kubelet's and its other conditions repair."""
    node_repair_max_unhealthy_nodes: int | None = Field(default=None, ge=1)
    """Stop repairing while more than this many of a node group's nodes are unhealthy, which
    points at a cause no replacement fixes (counted per node group, so per zone with
    `nodeGroupPerZone`). Unset sets no threshold: EKS then pauses repairs only in a node group
    of more than five nodes with more than a fifth of them unhealthy, so one bad node of a small
    pool is always repaired."""
    update_strategy: Literal["minimal", "default"] = "minimal"
    """How EKS replaces the pool's nodes on an update: `minimal` terminates each old node before
    its replacement starts, so the pool never holds more GPU instances than its size;
    `default` starts replacements first (up to two extra nodes per zone), which needs spare
    capacity that scarce or reserved GPU types rarely have (the update fails with
    NodeCreationFailure), but keeps the pool's capacity during the update."""
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
    start close together in the pool's one zone (`zones` must name exactly one). A
    `capacity-block` or `reserved` pool gets no placement group: EC2 places a Capacity Block's
    instances close together itself, and matches a launch into a placement group only to
    reservations made in that group (docs/karpenter.md, EFA). Pods ask for
    `vpc.amazonaws.com/efa`, which the EFA device plugin (installed with the first such pool)
    advertises. Every instance type must support EFA, and all must take the same number of EFA
    interfaces (a pool's nodes launch with one list of them). Changing it replaces the launch
    template and rolls the pool's nodes."""
    node_group_per_zone: bool = False
    """One node group per zone of the pool instead of one across them. The cluster autoscaler
    gives a group's scale-from-zero template one zone, its Auto Scaling group's first, so a pod
    bound to another zone (a zonal volume, a zone selector) never scales a multi-zone group up, and
    EC2's AZ rebalancing moves nodes between zones without draining them. Per zone, each group
    has its own zone in its template, and `balance-similar-node-groups` spreads scale-ups over
    them; `min` and `max` are shared out over the zones (the pool's `max` stays its total, so
    each zone can grow only to its share). Changing it replaces the pool's node groups."""
    atomic_scale_up: bool = False
    """Bring up the nodes of a queued job all together or none (docs/queues.md, All-or-nothing
    scale-up): with `queues.enabled`, a job Kueue admits on this pool waits until a
    ProvisioningRequest of the cluster autoscaler's `best-effort-atomic-scale-up` class has
    scaled the pool up for all its pods, and the autoscaler runs with
    `--enable-provisioning-requests`. The cluster autoscaler only: Karpenter has no
    ProvisioningRequests. Not with `nodeGroupPerZone`, whose zonal node groups the autoscaler
    would split one job's nodes over; give the pool one zone (`zones`) to keep a job's nodes
    in it."""
    instance_families: list[InstanceFamily] = Field(default_factory=list)
    """Karpenter: instead of `instanceTypes`, every size of these EC2 instance families (`g6`,
    `g6e`) that has the pool's `accelerator`, which must then be given. The NodePool requires
    `karpenter.k8s.aws/instance-family` In them and `karpenter.k8s.aws/instance-gpu-name` In the
    GPU's EC2 name, as data-on-eks writes its GPU NodePools, so Karpenter picks the size per
    pending pod. The sizes, and from the largest the pool's limits, come from the platform's
    table of GPU instance types (gpu_platform/eks/max_pods), checked against EC2 in the region;
    a family it has no GPU instance type of is refused (docs/karpenter.md, Flexible pools)."""
    instance_categories: list[InstanceCategory] = Field(default_factory=list)
    """Karpenter: as `instanceFamilies`, by EC2 instance category (`g`, `p`): the NodePool
    requires `karpenter.k8s.aws/instance-category` In them. Not beside `instanceFamilies`."""

    @property
    def flexible(self) -> bool:
        """Whether the pool takes its sizes from instance families or categories."""
        return bool(self.instance_families or self.instance_categories)

    local_nvme: bool = True
    """Keep container images and pod scratch space on the instance's local NVMe drives (one
    RAID0 array) where every instance type has at least `diskSizeGib` of them: on AL2023, and
    on Bottlerocket from release 1.22.0."""


class GkePoolOptions(Model):
    """Settings that only a GKE node pool has."""

    service_account: GcpServiceAccount | None = None
    """An existing node service account e-mail instead of the one created for the pool (which
    holds only `roles/container.defaultNodeServiceAccount`)."""
    autoscaling_scope: Literal["total", "per-zone"] = "total"
    """Whether `min`/`max` count nodes across all zones of the pool or in each zone."""
    disk_type: Literal["pd-balanced", "pd-ssd", "hyperdisk-balanced"] | None = None
    """Boot disk type; unset is `pd-balanced`, or `hyperdisk-balanced` on A3 Ultra and A4
    machine types, which take no Persistent Disk. N1, A2 and G2 take no Hyperdisk."""
    max_surge: int | None = Field(default=None, ge=0, le=100)
    """Extra nodes GKE adds while it surge-upgrades the pool: each is another GPU machine that
    must be available to start. Unset: 1, but 0 on a `reservation: specific` pool, as GKE counts
    surge nodes against the reservation, which holds none beyond the pool's own, and keeps
    retrying the upgrade while it has no room. Set it there only where the reservation holds
    spare VMs, which `gpu-platform preflight` checks."""
    max_unavailable: int | None = Field(default=None, ge=0, le=100)
    """Nodes GKE takes out of service at once to surge-upgrade them in place. Unset: 1 where
    `maxSurge` is 0, else 0. One of the two must be above 0."""
    upgrade_strategy: Literal["surge", "blue-green"] = "surge"
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
    blue_green_drain_wait_hours: int | None = Field(default=None, ge=0, le=168)
    """`upgradeStrategy: blue-green` only: take GKE's autoscaled blue-green rollout (in Preview),
    which cordons the old nodes, lets the autoscaler start new ones as pods need them, and waits
    this long before it drains the old nodes, evicting the jobs still running there (the API's
    `waitForDrainDuration`). Set it above the longest job. Unset: the standard rollout, which
    drains the old nodes as soon as the new ones are up."""
    blue_green_soak_hours: int | None = Field(default=None, ge=0, le=168)
    """`upgradeStrategy: blue-green` only: how long GKE keeps the drained old nodes before it
    deletes them (the API's `nodePoolSoakDuration`); unset, GKE's default."""
    node_version: GkeNodeVersion | None = None
    """The GKE version of the pool's nodes (`1.34.1-gke.1829001`), and with it, on COS, the
    NVIDIA driver GKE's installer loads; unset follows the cluster's version. Pin it on a
    `canaryOf` pool to try a new version there first. GKE still upgrades a pinned pool when its
    version leaves support, and clusters on a release channel when auto-upgrade runs, unless a
    maintenance exclusion holds it."""
    cos_driver_branch: int | None = Field(default=None, ge=450, le=999)
    """COS only: the NVIDIA driver branch (`580`) COS loads for the pool's GPU on its nodes' GKE
    version, for a version whose default the lock does not have yet (`gpu-platform lock`,
    docs/lock.md: GKE 1.34 and later, B200). At least 550 for H200 and 570 for B200; where the
    lock or the hand table (gpu_platform/driver_tables/cos.py) gives COS's default, only that
    branch (Google's installer loads it whatever the pool says). The smoke test checks it on the
    pool it runs on."""
    driver_version: DriverVersion | None = None
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
    reservation_name: GceReservationName | None = None
    """The reservation of a `reservation: specific` pool: its name, in the cluster's project, or
    `projects/<owner>/reservations/<name>` for a reservation another project shares with the
    cluster's (a central capacity project's). Reservations are zonal: name its zone, and only
    that one, in `zones`. `preflight` checks it where it can read it."""
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

    @property
    def surge_upgrade(self) -> tuple[int, int]:
        """`maxSurge` and `maxUnavailable` as GKE gets them, the defaults filled in."""
        spare_vms = self.reservation != "specific"
        surge = self.max_surge if self.max_surge is not None else int(spare_vms)
        unavailable = self.max_unavailable if self.max_unavailable is not None else int(surge == 0)
        return surge, unavailable
