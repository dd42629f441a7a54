"""The EKS side of the platform: an existing cluster or one it creates (`cluster.create`), GPU
node groups and the cluster autoscaler, Karpenter and its NodePools (`provisioner:
karpenter`), or NodePools of the cluster's EKS Auto Mode (`provisioner: eks-auto-mode`).

`resolve_pools` only looks things up (the cluster, its subnets, the instance types and where EC2
offers them; of a cluster to create, the account and zones, `plan_new_cluster`) and raises one
`ConfigError` for every pool that cannot work, before any resource exists. `connect` creates a
cluster the stack asks for (`NewEksCluster`) before the provider that reaches it.
`create_pools` then creates the node groups of each pool and the autoscaler that scales them;
or, with Karpenter, the controller and a NodePool for each pool; on Auto Mode, a NodePool
and NodeClass for each pool, and nothing that Auto Mode runs itself. `create_device_plugins` adds
the EFA device plugin where a pool asks for EFA.
"""

from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypedDict

import pulumi

from gpu_platform.cluster_facts import ARGUMENT as FACTS_ARGUMENT
from gpu_platform.cluster_facts import EksClusterFacts
from gpu_platform.config import (
    ConfigError,
    ConfigProblem,
    StackConfig,
    key_path,
    pool_preference,
)
from gpu_platform.config.dra_rules import dra_version_problems
from gpu_platform.eks.autoscaler_settings import own_autoscaler_settings
from gpu_platform.eks.cluster import (
    EksCluster,
    Subnet,
    connect,
    given_cluster,
    look_up_cluster,
    look_up_subnets,
    node_subnets_output,
    private_subnets,
)
from gpu_platform.eks.cluster_autoscaler import (
    ClusterAutoscaler,
    ClusterAutoscalerArgs,
    autoscaler_image,
)
from gpu_platform.eks.efa_device_plugin import EfaDevicePlugin, EfaDevicePluginArgs
from gpu_platform.eks.iam_roles import deploy_role_tags
from gpu_platform.eks.new_cluster.cluster import (
    NewClusterPlan,
    NewEksCluster,
    plan_new_cluster,
    with_created_subnets,
)
from gpu_platform.eks.node_group import EksGpuNodeGroup, EksGpuNodeGroupArgs
from gpu_platform.eks.node_group_names import names_a_zone_of
from gpu_platform.eks.node_monitoring_agent import NodeMonitoringAgent, NodeMonitoringAgentArgs
from gpu_platform.eks.placement import NodeGroupPlacement, resolve_placement
from gpu_platform.eks.vpc_cni import VpcCniIdentity
from gpu_platform.instance import part_name
from gpu_platform.kubernetes.helm_release import most_nodes
from gpu_platform.kubernetes.provider import ClusterConnection
from gpu_platform.node_identity import ResolvedPool
from gpu_platform.secrets import secret_if
from gpu_platform.versions import (
    CLUSTER_AUTOSCALER_IMAGES,
    EKS_NODE_MONITORING_AGENT_ADDON_VERSION,
    ContainerImage,
)

if TYPE_CHECKING:
    from gpu_platform.eks.karpenter.controller import KarpenterController
    from gpu_platform.eks.karpenter.node_pool import KarpenterGpuNodePoolArgs


class _PoolNodes(TypedDict):
    """A pool's nodes, whichever provisioner launches them: what `EksGpuNodeGroupArgs` and
    `KarpenterGpuNodePoolArgs` both take."""

    pool: ResolvedPool
    placement: NodeGroupPlacement
    cluster: EksCluster
    node_image: str
    secret_labels: bool
    protect: bool


class EksCloud:
    def __init__(self, config: StackConfig, facts: EksClusterFacts | None = None):
        self.config = config
        self._facts = facts
        self._cluster: EksCluster | None = None
        self._placements: dict[str, NodeGroupPlacement] = {}
        self._autoscaler_image: ContainerImage | None = None
        self._subnets: list[Subnet] = []
        self._karpenter_controller: KarpenterController | None = None
        self._cni: list[pulumi.Resource] = []
        self._nodes_by_pool: dict[str, pulumi.Resource] = {}
        self._new_cluster: NewClusterPlan | None = None
        self._created: NewEksCluster | None = None

    @property
    def cluster(self) -> EksCluster:
        if self._cluster is None:
            if self.config.cluster.create is not None:
                self._new_cluster = plan_new_cluster(self.config)
                self._cluster = self._new_cluster.cluster
            elif self._facts is not None:
                self._cluster = given_cluster(self.config.cluster, self._facts)
            else:
                self._cluster = look_up_cluster(self.config.cluster)
        return self._cluster

    def resolve_pools(self) -> list[ResolvedPool]:
        subnets = self._node_subnets()
        problems = list(_pool_name_problems(self.config))
        pools = []
        for i, spec in enumerate(self.config.pools):
            try:
                pool, placement = resolve_placement(
                    spec,
                    i,
                    self.cluster,
                    subnets,
                    self.config.node_image,
                    self.config.autoscaler.gpu_node_idle_minutes,
                    node_pool=self.config.uses_node_pools,
                )
            except ConfigError as error:
                problems.extend(error.problems)
                continue
            pools.append(pool)
            self._placements[spec.name] = placement
        if self.config.uses_auto_mode and self.cluster.auto_mode_node_role_arn is None:
            problems.append(
                ConfigProblem(
                    key_path("provisioner"),
                    self.config.provisioner,
                    f"a cluster whose EKS Auto Mode compute is on with a node role: cluster"
                    f" {self.cluster.name}'s computeConfig has none (Auto Mode off, or no"
                    " built-in node pools), and the pools' NodeClasses run their nodes as it",
                )
            )
        if self.config.uses_node_pools:
            # Imported here, as the rest of the Karpenter side: node-group stacks never load it.
            from gpu_platform.eks.karpenter.fallback_order import fallback_order_problems

            sizes = {name: p.instance_types for name, p in self._placements.items()}
            problems.extend(fallback_order_problems(self.config, sizes))
        if self.config.cluster.create is None:
            # A created cluster's version is the config's, which its rules judged already.
            problems.extend(
                dra_version_problems(self.config, self.cluster.version, "the cluster's version")
            )
        if self.config.provisioner == "cluster-autoscaler" and self.config.autoscaler.install:
            self._autoscaler_image = autoscaler_image(self.config.autoscaler, self.cluster.version)
            if self._autoscaler_image is None:
                problems.append(
                    ConfigProblem(
                        key_path("autoscaler", "imageTag"),
                        None,
                        f"an autoscaler release for Kubernetes {self.cluster.version}, the"
                        " cluster's version: the platform pins one for"
                        f" {', '.join(CLUSTER_AUTOSCALER_IMAGES)}",
                    )
                )
        if problems:
            raise ConfigError(problems)
        return pools

    def connect(self, opts: pulumi.ResourceOptions) -> ClusterConnection:
        if self._new_cluster is None:
            return connect(self.cluster, self.config.cluster, opts)
        # The cluster first, then a provider that waits for it, its access entries, system nodes
        # and add-ons: every Kubernetes object depends on them, so `pulumi destroy` deletes the
        # objects before the cluster.
        created = NewEksCluster(part_name("cluster"), self.config, self._new_cluster, opts)
        self._created = created
        self._cluster = created.cluster
        self._placements = {
            name: with_created_subnets(placement, created.subnet_ids)
            for name, placement in self._placements.items()
        }
        return connect(
            created.cluster,
            self.config.cluster,
            pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=created.ready)),
        )

    def create_pools(
        self,
        pools: Sequence[ResolvedPool],
        connection: ClusterConnection,
        opts: pulumi.ResourceOptions,
        held_back: Collection[str] = (),
    ) -> list[pulumi.Resource]:
        opts = self._after_cluster(opts)
        on_cluster = pulumi.ResourceOptions.merge(
            opts, pulumi.ResourceOptions(provider=connection.provider)
        )
        # The nodes' CNI takes its credentials when it starts: its identity comes first (with
        # the cluster it creates, before the system nodes).
        if self._created is not None:
            self._cni = list(self._created.cni)
        elif self.config.cluster.vpc_cni_role and not self.config.uses_auto_mode:
            self._cni = [VpcCniIdentity(part_name("vpc-cni"), self.cluster, opts)]
        now = [pool for pool in pools if pool.spec.name not in held_back]
        if self.config.provisioner == "karpenter":
            created = self._karpenter_node_pools(now, on_cluster)
        elif self.config.uses_auto_mode:
            from gpu_platform.eks.auto_mode.network_policy import network_policy_controller

            created = [self._auto_mode_node_pool(pool, on_cluster) for pool in now]
            if self.config.cluster.create is not None:
                # A switch of the whole cluster, which `destroy` turns off again: set only on a
                # cluster the stack creates, preflight checking it on one it attaches to
                # (gpu_platform/eks/preflight/auto_mode.py).
                created.insert(
                    0, network_policy_controller(part_name("network-policy-controller"), on_cluster)
                )
        else:
            created = [self._node_group(pool, opts) for pool in now]
        created = [*self._cni, *created]
        agent_version = node_monitoring_agent_version(self.config)
        if agent_version is not None:
            created.append(
                NodeMonitoringAgent(
                    part_name("node-monitoring-agent"),
                    NodeMonitoringAgentArgs(self.cluster, agent_version),
                    opts,
                )
            )
        if self._autoscaler_image is None:
            return created
        autoscaler = ClusterAutoscaler(
            part_name("cluster-autoscaler"),
            ClusterAutoscalerArgs(
                self.config.autoscaler, self.cluster, self._autoscaler_image, pools
            ),
            on_cluster,
        )
        return [*created, autoscaler]

    def create_device_plugins(
        self,
        pools: Sequence[ResolvedPool],
        namespace: pulumi.Input[str],
        opts: pulumi.ResourceOptions,
    ) -> list[pulumi.Resource]:
        efa_pools = [pool for pool in pools if pool.spec.aws.efa]
        if not efa_pools:
            return []
        plugin = EfaDevicePlugin(
            part_name("efa-device-plugin"),
            EfaDevicePluginArgs(
                nodes=most_nodes(pool.spec for pool in efa_pools),
                namespace=namespace,
                pools=efa_pools,
            ),
            opts,
        )
        return [plugin]

    def create_held_back_pool(
        self,
        pool: ResolvedPool,
        connection: ClusterConnection,
        opts: pulumi.ResourceOptions,
        after: Sequence[pulumi.Resource],
    ) -> pulumi.Resource:
        opts = self._after_cluster(opts)
        if self.config.provisioner == "cluster-autoscaler":
            return self._node_group(pool, opts, after)
        on_cluster = pulumi.ResourceOptions.merge(
            opts, pulumi.ResourceOptions(provider=connection.provider)
        )
        if self.config.uses_auto_mode:
            return self._auto_mode_node_pool(pool, on_cluster, after)
        return self._karpenter_node_pool(pool, self._karpenter_controller, on_cluster, after)

    def kubernetes_version(self) -> str:
        create = self.config.cluster.create
        return self.cluster.version if create is None else create.kubernetes_version

    def pool_nodes(self, pool: str) -> pulumi.Resource:
        return self._nodes_by_pool[pool]

    def efa_devices(self, pool: str) -> int:
        return self._placements[pool].efa_interfaces

    def gpus_by_instance_type(self, pool: str) -> dict[str, int]:
        return {t.name: t.gpu_count for t in self._placements[pool].instance_types}

    def _after_cluster(self, opts: pulumi.ResourceOptions) -> pulumi.ResourceOptions:
        """`opts`, waiting for the cluster the stack creates: node groups, Pod Identity
        associations and add-ons name the cluster by its name alone, so they depend on it
        explicitly, and are deleted before it."""
        if self._created is None:
            return opts
        return pulumi.ResourceOptions.merge(
            opts, pulumi.ResourceOptions(depends_on=self._created.ready)
        )

    def _node_group(
        self,
        pool: ResolvedPool,
        opts: pulumi.ResourceOptions,
        after: Sequence[pulumi.Resource] = (),
    ) -> pulumi.Resource:
        self._nodes_by_pool[pool.spec.name] = EksGpuNodeGroup(
            part_name(pool.spec.name),
            EksGpuNodeGroupArgs(
                **self._pool_nodes(pool),
                cni_policy_on_node_role=self.config.cluster.cni_policy_on_node_role,
                idle_minutes=self.config.autoscaler.gpu_node_idle_minutes,
                after=[*self._cni, *after],
            ),
            opts,
        )
        return self._nodes_by_pool[pool.spec.name]

    def _karpenter_node_pools(
        self, pools: Sequence[ResolvedPool], on_cluster: pulumi.ResourceOptions
    ) -> list[pulumi.Resource]:
        """The Karpenter controller, unless the cluster has one already (`karpenter.install`),
        and a NodePool for each pool once the controller is in. Imported here, as `cloud_for`
        imports a cloud: only Karpenter stacks load its SDK modules (SQS, EventBridge)."""
        from gpu_platform.eks.karpenter.controller import (
            KarpenterController,
            KarpenterControllerArgs,
        )

        if not self.config.karpenter.install:
            return [self._karpenter_node_pool(pool, None, on_cluster) for pool in pools]
        controller = KarpenterController(
            part_name("karpenter"),
            KarpenterControllerArgs(
                self.config.karpenter,
                self.cluster,
                cni_policy_on_node_role=self.config.cluster.cni_policy_on_node_role,
                protect=self.config.protect,
                waits_for=self._cni,
            ),
            on_cluster,
        )
        self._karpenter_controller = controller
        return [
            controller,
            *(self._karpenter_node_pool(pool, controller, on_cluster) for pool in pools),
        ]

    def _karpenter_node_pool(
        self,
        pool: ResolvedPool,
        controller: "KarpenterController | None",
        on_cluster: pulumi.ResourceOptions,
        after: Sequence[pulumi.Resource] = (),
    ) -> pulumi.Resource:
        from gpu_platform.eks.karpenter.node_pool import KarpenterGpuNodePool

        if controller is None:
            # An existing Karpenter's node role (config requires it with `install: false`).
            assert self.config.karpenter.node_role_arn is not None
            node_role_name: pulumi.Input[str] = role_name(self.config.karpenter.node_role_arn)
            waits_for: list[pulumi.Resource] = []
        else:
            node_role_name, waits_for = controller.node_role_name, [controller.release]
        self._nodes_by_pool[pool.spec.name] = KarpenterGpuNodePool(
            part_name(pool.spec.name),
            self._node_pool_args(pool, node_role_name, after),
            pulumi.ResourceOptions.merge(on_cluster, pulumi.ResourceOptions(depends_on=waits_for)),
        )
        return self._nodes_by_pool[pool.spec.name]

    def _auto_mode_node_pool(
        self,
        pool: ResolvedPool,
        on_cluster: pulumi.ResourceOptions,
        after: Sequence[pulumi.Resource] = (),
    ) -> pulumi.Resource:
        """The pool's NodePool and NodeClass on EKS Auto Mode, whose nodes run as the cluster's
        Auto Mode node role (resolve_pools made sure it has one)."""
        from gpu_platform.eks.auto_mode.node_pool import AutoModeGpuNodePool

        role = self.cluster.auto_mode_node_role_arn
        assert role is not None
        self._nodes_by_pool[pool.spec.name] = AutoModeGpuNodePool(
            part_name(pool.spec.name),
            self._node_pool_args(pool, pulumi.Output.from_input(role).apply(role_name), after),
            on_cluster,
        )
        return self._nodes_by_pool[pool.spec.name]

    def _node_pool_args(
        self,
        pool: ResolvedPool,
        node_role_name: pulumi.Input[str],
        after: Sequence[pulumi.Resource],
    ) -> "KarpenterGpuNodePoolArgs":
        from gpu_platform.eks.karpenter.node_pool import KarpenterGpuNodePoolArgs

        return KarpenterGpuNodePoolArgs(
            **self._pool_nodes(pool),
            node_role_name=node_role_name,
            consolidate_after_minutes=self.config.karpenter.consolidate_after_minutes,
            termination_grace_period_hours=self.config.karpenter.termination_grace_period_hours,
            after=after,
            weight=pool_preference(pool.spec),
        )

    def _pool_nodes(self, pool: ResolvedPool) -> _PoolNodes:
        return _PoolNodes(
            pool=pool,
            placement=self._placements[pool.spec.name],
            cluster=self.cluster,
            node_image=self.config.node_image,
            secret_labels=self.config.is_secret("pools"),
            protect=self.config.protect,
        )

    def stack_outputs(self) -> dict[str, Any]:
        """`nodeSubnets` (`gpu_platform.eks.cluster.node_subnets_output`), and
        `deployRoleTags`, the tags the stack's deploy role needs for its policy
        (`gpu_platform.eks.iam_roles.deploy_role_tags`), the subnets of a new VPC by the ids
        EC2 gives them; where the cluster runs its own autoscaler, `ownAutoscaler`, the flags
        and priority ConfigMap it must be given
        (`gpu_platform.eks.autoscaler_settings.own_autoscaler_settings`)."""
        secret = self.config.is_secret("cluster")
        subnets: dict[str, list[dict[str, Any]]] = dict(node_subnets_output(self._subnets))
        if self._created is not None:
            created = self._created.subnet_ids
            subnets = {
                use: [{**s, "id": created.get(s["id"], s["id"])} for s in listed]
                for use, listed in subnets.items()
            }
        outputs: dict[str, Any] = {
            "nodeSubnets": secret_if(secret, subnets),
            "deployRoleTags": secret_if(secret, deploy_role_tags(self.cluster)),
        }
        autoscaler = self.config.autoscaler
        if self.config.provisioner == "cluster-autoscaler" and not autoscaler.install:
            outputs["ownAutoscaler"] = secret_if(
                self.config.is_secret("pools"),
                own_autoscaler_settings(autoscaler, self.config.pools),
            )
        return outputs

    def _node_subnets(self) -> list[Subnet]:
        """The private ones of `cluster.nodeSubnetIds`, else of the cluster's subnets (with
        cluster facts, those given); a ConfigError for a public one named there, or for a
        cluster without a private one."""
        chosen = self.config.cluster.node_subnet_ids
        cluster = self.cluster
        if self._new_cluster is not None and not chosen:
            self._subnets = list(self._new_cluster.subnets)
            return private_subnets(self._subnets)
        if self._facts is not None:
            # They exist before the cluster does (docs/library.md): looked up as the settings'
            # are, so that a public one or a zone given wrong is refused rather than used.
            self._subnets = look_up_subnets(self._facts.node_subnets, cluster.region)
            problems = list(given_subnet_problems(self._facts.node_subnets, self._subnets))
            if problems:
                raise ConfigError(problems)
            return self._subnets
        self._subnets = look_up_subnets(chosen or cluster.subnet_ids, cluster.region)
        problems = (
            _public_node_subnet_problems(self._subnets)
            if chosen
            else _no_private_subnet_problems(self.cluster.name, self._subnets)
        )
        if problems:
            raise ConfigError(problems)
        return private_subnets(self._subnets)


def _public_node_subnet_problems(named: Sequence[Subnet]) -> list[ConfigProblem]:
    return [
        _public_subnet_problem(key_path("cluster", "nodeSubnetIds", i), subnet)
        for i, subnet in enumerate(named)
        if subnet.routing.public
    ]


def _public_subnet_problem(path: str, subnet: Subnet) -> ConfigProblem:
    return ConfigProblem(
        path,
        subnet.id,
        f"a private subnet (GPU nodes must not sit in a public one), but its"
        f" {subnet.routing.reason}",
    )


def given_subnet_problems(
    given: Mapping[str, str], found: Sequence[Subnet]
) -> Iterator[ConfigProblem]:
    """What is wrong with the node subnets the cluster's facts give, as their lookup `found`
    them: a public one, or one in another zone than given."""
    path = f"{FACTS_ARGUMENT}.node_subnets"
    for subnet in found:
        if subnet.routing.public:
            yield _public_subnet_problem(path, subnet)
        if given[subnet.id] != subnet.zone:
            yield ConfigProblem(
                f"{path}[{subnet.id!r}]",
                given[subnet.id],
                f"the subnet's zone, {subnet.zone}, as EC2 reports it",
            )


def _no_private_subnet_problems(cluster: str, subnets: Sequence[Subnet]) -> list[ConfigProblem]:
    if private_subnets(subnets):
        return []
    return [
        ConfigProblem(
            key_path("cluster", "nodeSubnetIds"),
            [],
            f"private subnets for the GPU nodes: every subnet of cluster {cluster} is public, its"
            " route table sending traffic to an internet gateway ("
            + "; ".join(f"{s.id}: {s.routing.reason}" for s in subnets)
            + ")",
        )
    ]


def _pool_name_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    """A pool named as another's per-zone node groups are (`<pool>-<zone>`) would have its node
    group taken for the other's when the program and `preflight` find them by name."""
    for i, pool in enumerate(config.pools):
        for other in config.pools:
            if other is not pool and names_a_zone_of(other.name, pool.name):
                yield ConfigProblem(
                    key_path("pools", i, "name"),
                    pool.name,
                    f"a name other than pool {other.name}'s followed by a zone, which names"
                    f" {other.name}'s node group in that zone",
                )


def role_name(arn: str) -> str:
    """The name of the IAM role of `arn`, as a node class names its role: the last part of the
    ARN, after any path."""
    return arn.rsplit("/")[-1]


def node_monitoring_agent_version(config: StackConfig) -> str | None:
    """The agent's add-on version where the stack installs it: wherever a node group repairs
    its nodes, as repair sees GPU faults only through the conditions the agent sets (EKS user
    guide, node-health); elsewhere (Karpenter, or no pool repairing) only when the stack names
    a version."""
    chosen = config.cluster.node_monitoring_agent_version
    repairing = config.provisioner == "cluster-autoscaler" and any(
        pool.aws.node_repair for pool in config.pools
    )
    if chosen is None and repairing:
        return EKS_NODE_MONITORING_AGENT_ADDON_VERSION
    return chosen
