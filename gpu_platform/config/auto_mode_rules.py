"""Rules across fields of stacks on EKS Auto Mode (`provisioner: eks-auto-mode`): what Auto Mode
runs itself (its AMIs, NVIDIA driver and device plugin, Karpenter, networking, node monitoring
and repair), and so what a stack may not set there.

Sources are the EKS user guide's Auto Mode pages (awsdocs/amazon-eks-user-guide,
`latest/ug/automode/`): the NodeClass fields (create-node-class.adoc, "Node Class
Specification"), the built-in node pools (create-node-pool.adoc, set-builtin-node-pools.adoc),
reservations (auto-odcr.adoc) and accelerated workloads (auto-accelerated.adoc).
"""

from collections.abc import Iterator, Mapping

from gpu_platform.config.capacity import ClusterAutoscalerSpec
from gpu_platform.config.cloud_options import ClusterSpec
from gpu_platform.config.drift_window import DAY_MINUTES
from gpu_platform.config.fields import AUTO_MODE_NODE_IMAGE
from gpu_platform.config.pools import ExclusiveSharing, GpuPoolSpec
from gpu_platform.config.problems import ConfigProblem, key_path, set_field_problems
from gpu_platform.config.set_aside import per_element
from gpu_platform.config.stack import StackConfig

AUTO_MODE_NODE_POOLS = ("system", "general-purpose")
"""Auto Mode's built-in NodePools, which cannot be changed (create-node-pool.adoc)."""
AUTO_MODE_NODE_CLASS = "default"
"""The built-in NodeClass; a custom one must not take its name (create-node-class.adoc,
"Considerations")."""

_WHY = "with provisioner eks-auto-mode"

# Pool settings Auto Mode's NodeClass and NodePool have no field for (create-node-class.adoc,
# "Node Class Specification": role, subnets, security groups, SNAT and network policy,
# ephemeral storage, proxy, certificates, tags, capacity reservations), with what Auto Mode does
# instead.
_POOL_OPTIONS: Mapping[str, str] = {
    "ami_release_version": "Auto Mode runs its own AMIs, which it replaces itself (about once a"
    " week, through drift), with their own NVIDIA driver",
    # AWS's guide ("Manage EFA devices on Amazon EKS") has Auto Mode attach EFA interfaces to
    # nodes it starts for pods that request `vpc.amazonaws.com/efa`; its newer versions give the
    # Auto Mode NodeClass `advancedNetworking.networkInterfaces` (`interfaceType: efa-only`) and
    # `placementGroupSelector`, and Auto Mode the EFA DRA driver (DRANET) from Kubernetes 1.36
    # ("Manage hardware devices on Amazon EKS"). The NodeClass schema the platform pins
    # (crd_schemas/eks-auto-mode-docs-nodeclasses.eks.amazonaws.com.json, from create-node-class
    # .adoc's "Node Class Specification") has neither field: its `advancedNetworking` holds only
    # `httpsProxy` and `noProxy`. What the platform sets up for `aws.efa` (interfaces per device,
    # the security group, the EFA device plugin's pool) has no Auto Mode counterpart yet.
    "efa": "the platform does not build EFA on Auto Mode pools yet: it renders no NodeClass"
    " advancedNetworking.networkInterfaces or placementGroupSelector (which AWS's newer guide"
    " gives Auto Mode and the NodeClass schema the platform pins lacks), and runs no EFA device"
    " plugin or DRA driver on Auto Mode nodes",
    "metadata_hop_limit": "Auto Mode's NodeClass has no instance metadata settings",
    "local_nvme": "Auto Mode's NodeClass has no instance store setting",
    "node_group_per_zone": "there are no node groups; Auto Mode picks each node's zone among the"
    " pool's zones itself",
    "node_role_arn": "the pool's NodeClass runs its nodes as the cluster's Auto Mode node role"
    " (computeConfig.nodeRoleArn), whose access entry EKS created with the cluster",
    "capacity_reservation_resource_group_arn": "a NodeClass selects reservations by id, not by"
    " resource group: name the reservation in aws.capacityReservationId",
    "capacity_block_start": "Auto Mode launches into a Capacity Block once it is active, by itself",
    "node_repair": "Auto Mode monitors and repairs its nodes itself",
    "node_repair_max_unhealthy_nodes": "Auto Mode monitors and repairs its nodes itself",
    "update_strategy": "Auto Mode replaces drifted nodes within the pool's disruption budget"
    " (aws.maxUnavailablePercent)",
    "atomic_scale_up": "Auto Mode's Karpenter has no ProvisioningRequests",
}
# Cluster settings about what Auto Mode runs itself: the VPC CNI's networking and the node
# monitoring agent are part of it, not add-ons of the cluster (automode.adoc).
_CLUSTER_OPTIONS: Mapping[str, str] = {
    "vpc_cni_role": "Auto Mode's nodes get their networking from Auto Mode, not from the VPC"
    " CNI add-on",
    "cni_policy_on_node_role": "Auto Mode's nodes get their networking from Auto Mode, not from"
    " the VPC CNI add-on",
    "node_monitoring_agent_version": "Auto Mode monitors its nodes' health itself",
}
# What a created cluster has only for its system node group: on Auto Mode the platform's own
# pods run on Auto Mode's built-in general-purpose NodePool, and no VPC CNI add-on is installed
# (gpu_platform/eks/new_cluster/auto_mode.py).
_CREATE_OPTIONS: Mapping[str, str] = {
    "system_nodes": "the platform's own pods run on Auto Mode's built-in general-purpose"
    " NodePool, not on a system node group",
    "vpc_cni_configuration": "Auto Mode's nodes get their networking from Auto Mode, not from"
    " the VPC CNI add-on",
}


def auto_mode_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    if not config.uses_auto_mode:
        return
    yield from set_field_problems(
        config.autoscaler,
        ClusterAutoscalerSpec.model_fields,
        ("autoscaler",),
        f"no value {_WHY}: Auto Mode runs its own Karpenter, and the platform no cluster"
        " autoscaler",
    )
    yield from _cluster_problems(config.cluster)
    yield from per_element(config.pools, _pool_problems)


def _cluster_problems(cluster: ClusterSpec) -> Iterator[ConfigProblem]:
    if cluster.node_image not in (None, AUTO_MODE_NODE_IMAGE):
        yield ConfigProblem(
            key_path("cluster", "nodeImage"),
            cluster.node_image,
            f"{AUTO_MODE_NODE_IMAGE} or no value {_WHY}: Auto Mode's nodes run its own"
            " Bottlerocket-based AMIs",
        )
    if cluster.create is not None:
        for field, why in _CREATE_OPTIONS.items():
            yield from set_field_problems(
                cluster.create.aws,
                (field,),
                ("cluster", "create", "aws"),
                f"no value {_WHY}: {why}",
            )
    for field, why in _CLUSTER_OPTIONS.items():
        yield from set_field_problems(cluster, (field,), ("cluster",), f"no value {_WHY}: {why}")


def _pool_problems(i: int, pool: GpuPoolSpec) -> Iterator[ConfigProblem]:
    if pool.name in (*AUTO_MODE_NODE_POOLS, AUTO_MODE_NODE_CLASS):
        yield ConfigProblem(
            key_path("pools", i, "name"),
            pool.name,
            f"a name other than {', '.join((*AUTO_MODE_NODE_POOLS, AUTO_MODE_NODE_CLASS))}"
            f" {_WHY}: Auto Mode's built-in NodePools and NodeClass take them",
        )
    window = pool.aws.drift_window
    if window is not None and not 0 < window.duration_minutes < window.period_minutes:
        yield ConfigProblem(
            key_path("pools", i, "aws", "driftWindow", "duration"),
            window.duration,
            "more than none and less than the "
            + ("day" if window.period_minutes == DAY_MINUTES else "week")
            + f" the window recurs in ({window.schedule}): the window's close is where drift is"
            " blocked again",
        )
    if pool.min != 0:
        yield ConfigProblem(
            key_path("pools", i, "min"),
            pool.min,
            f"0 {_WHY}: a NodePool has no minimum size, Auto Mode starts nodes for pending pods"
            " only",
        )
    if not isinstance(pool.sharing, ExclusiveSharing):
        # Auto Mode runs the NVIDIA device plugin itself, invisible to the cluster
        # (auto-accelerated.adoc), and its NodeClass has no setting for the plugin's config:
        # no node could be told to share its GPUs or partition them.
        yield ConfigProblem(
            key_path("pools", i, "sharing", "mode"),
            pool.sharing.mode,
            f"exclusive {_WHY}: Auto Mode's own NVIDIA device plugin serves the GPUs whole,"
            " with no setting for time-slicing, MPS or MIG; use provisioner cluster-autoscaler"
            " to share GPUs",
        )
    if pool.canary_of is not None:
        yield ConfigProblem(
            key_path("pools", i, "canaryOf"),
            pool.canary_of,
            f"no value {_WHY}: Auto Mode chooses its nodes' AMI and driver, so a canary has no"
            " release of its own to try first",
        )
    for field, why in _POOL_OPTIONS.items():
        yield from set_field_problems(
            pool.aws, (field,), ("pools", i, "aws"), f"no value {_WHY}: {why}"
        )
