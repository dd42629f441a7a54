"""`GpuPlatform`: the whole platform as one component, the one most projects need.

It composes the per-part components in the order the platform needs them: the cloud's GPU
pools (looked up and validated before anything is created), a Kubernetes provider for the
cluster, the monitoring (whose Prometheus Operator the GPU Operator's ServiceMonitor needs), the
GPU Operator once the pools exist, the tenant namespaces once the operator is in, and the idle
GPU pod reaper (in its own namespace) for those that opt in. Every
decision lives in those components and every default in the config model; this module only
wires them.

```python
import pulumi
from gpu_platform import GpuPlatform, GpuPlatformArgs

platform = GpuPlatform("gpu-platform", GpuPlatformArgs.from_config())
for name, value in platform.stack_outputs.items():
    pulumi.export(name, value)
```
"""

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pulumi

from gpu_platform.cloud import GpuCloud, cloud_for
from gpu_platform.cluster_facts import ClusterFacts, cluster_facts_problems, own_problems
from gpu_platform.config import (
    Cloud,
    ConfigError,
    ConfigProblem,
    StackConfig,
    check_stack_config,
    key_path,
    load_stack_config,
    read_pulumi_config,
    secret_config_keys,
)
from gpu_platform.idle_billing import idle_billing, idle_billing_output
from gpu_platform.instance import claim, declaring, given_providers, part_name
from gpu_platform.kubernetes.canary_gate import canary_gate_job
from gpu_platform.kubernetes.dra_driver import DraDriver, DraDriverArgs
from gpu_platform.kubernetes.gpu_operator import GpuOperator, GpuOperatorArgs
from gpu_platform.kubernetes.gpu_pod import model_placements, pool_placement
from gpu_platform.kubernetes.helm_release import most_nodes
from gpu_platform.kubernetes.idle_gpu_pods import idle_gpu_reaper
from gpu_platform.kubernetes.kueue import Kueue, KueueArgs, queued_pools
from gpu_platform.kubernetes.kueue_provisioning import BEST_EFFORT_ATOMIC, atomic_classes
from gpu_platform.kubernetes.monitoring import GpuMonitoring, GpuMonitoringArgs
from gpu_platform.kubernetes.node_validation.pod_admission_policy import exempt_namespaces
from gpu_platform.kubernetes.node_validation.workload import (
    NodeHardware,
    PoolValidators,
    declare_node_validation,
    validated_pools,
)
from gpu_platform.kubernetes.nvidia_driver import rolls_drivers_in_place
from gpu_platform.kubernetes.provider import ClusterConnection
from gpu_platform.kubernetes.tenant_namespace import GpuTenantNamespace, GpuTenantNamespaceArgs
from gpu_platform.lock.lockfile import LockError, MissingLockEntry
from gpu_platform.node_identity import ResolvedPool, pool_software
from gpu_platform.secrets import secret_if


class PlatformConfigError(ConfigError, pulumi.RunError):
    """A `ConfigError` as Pulumi reports a user's mistake: `pulumi up` prints a `RunError`'s
    message alone, where any other exception gets "Program failed with an unhandled exception"
    and a traceback (pulumi `sdk/python/cmd/pulumi-language-python-exec`)."""


class PlatformLockError(LockError, pulumi.RunError):
    """A lock file the program cannot read, as Pulumi reports a user's mistake (see
    PlatformConfigError)."""


class PlatformMissingLockEntry(MissingLockEntry, pulumi.RunError):
    """A fact the lock lacks, as Pulumi reports a user's mistake (see PlatformConfigError): the
    entry and the command that fills it, for the stack being run."""

    def __init__(self, missing: MissingLockEntry, stack: str):
        super().__init__(missing.section, missing.key, missing.what, missing.path)
        self.args = (missing.report(stack),)


@dataclass(frozen=True)
class GpuPlatformArgs:
    """The platform's settings, validated in full however they are given, before any resource is
    registered: every field's own rules and the rules across fields, all problems in one
    `ConfigError` (the key, the value unless secret, what is allowed).

    - `GpuPlatformArgs.from_config()`: the stack's `gpu-platform:` config keys.
    - `GpuPlatformArgs.from_settings({...})`: the same keys, from a mapping in code.
    - `GpuPlatformArgs(StackConfig(...))`: the config model's classes built in code, each field
      by its name, defaults as the classes declare them (`help(StackConfig)`)::

        GpuPlatformArgs(
            StackConfig(
                cloud="gcp",
                cluster=ClusterSpec(name="ml", project="acme-ml", location="us-central1"),
                pools=[
                    GpuPoolSpec(
                        name="l4",
                        instance_types=["g2-standard-8"],
                        accelerator="l4",
                        gpus_per_node=1,
                        max=2,
                    )
                ],
            )
        )
    """

    config: StackConfig
    """The stack's settings, every default filled in (`gpu_platform.config`)."""
    moved_from_stack_root: bool = False
    """The stack was created by a program that declared the platform's parts at the stack's
    root, as this project's own program did before `GpuPlatform` existed: each part then gets an
    alias to its former place, so that `pulumi up` updates it in place rather than replacing it.
    Leave it off in a project that never did: the aliases would claim any root resource of the
    same type and name (a Kubernetes provider named `kubernetes`, say)."""

    part_names_under_it: bool = False
    """Name every part after the component, `<name>-<part>` (`ml-a-gpu-operator`, `ml-a-l4`),
    so that several `GpuPlatform`s (each on a cluster of its own) live in one stack. Off, the
    parts have the names a stack's one platform has always given them (`gpu-operator`, the
    pools' names). Leave it off for an instance a stack already has and on for the ones added:
    turned on, an existing instance's renamed parts collide with its parts still in place. On
    EKS the Pod Identity roles take the part's name, so a name that would make one longer than
    IAM's 64 characters is refused."""

    cluster_facts: ClusterFacts | None = None
    """The cluster's facts, `EksClusterFacts` or `GkeClusterFacts`, where the program creates
    the cluster itself (or knows it): the platform then needs no lookup of the cluster, which
    on a first `pulumi preview` does not exist yet (on GKE, once it exists, the versions GKE
    moved it and its pools to are read back). Its name, endpoint, CA and network
    ids may be outputs of the program's cluster; what shapes the resources (its Kubernetes
    version, the node subnets' zones) is given plainly (`gpu_platform.cluster_facts`). None:
    the platform looks up the cluster the settings name."""

    def __post_init__(self) -> None:
        # A StackConfig built in code has passed its fields' rules only.
        facts = (
            []
            if self.cluster_facts is None
            else list(cluster_facts_problems(self.cluster_facts, self.config))
        )
        with _reported_to_pulumi():
            try:
                check_stack_config(self.config)
            except ConfigError as error:
                raise ConfigError([*error.problems, *facts]) from None
            if facts:
                raise ConfigError(facts)

    @classmethod
    def from_config(
        cls,
        moved_from_stack_root: bool = False,
        part_names_under_it: bool = False,
        cluster_facts: ClusterFacts | None = None,
    ) -> "GpuPlatformArgs":
        """The stack's `gpu-platform:` config keys (`Pulumi.<stack>.yaml`), with the keys set as
        secrets kept secret in every resource and output they reach."""
        config = _loaded(read_pulumi_config(), secret_config_keys(), cluster_facts)
        return cls(config, moved_from_stack_root, part_names_under_it, cluster_facts)

    @classmethod
    def from_settings(
        cls,
        settings: Mapping[str, Any],
        secret_keys: frozenset[str] = frozenset(),
        moved_from_stack_root: bool = False,
        part_names_under_it: bool = False,
        cluster_facts: ClusterFacts | None = None,
    ) -> "GpuPlatformArgs":
        """Settings given in code, keyed as in a stack file without the namespace (`cloud`,
        `cluster`, `pools`, ...); `secret_keys` names those whose values are to stay secret.
        Values are plain data: an `Output` (of a cluster created in the same program, or a
        `StackReference`) cannot decide a pool's shape before anything is created; such a
        cluster's outputs go in `cluster_facts`."""
        config = _loaded(settings, secret_keys, cluster_facts)
        return cls(config, moved_from_stack_root, part_names_under_it, cluster_facts)


def _loaded(
    settings: Mapping[str, Any], secret_keys: frozenset[str], facts: ClusterFacts | None
) -> StackConfig:
    """The settings, loaded; where they are wrong, what is wrong with the facts whatever the
    settings comes in the same report."""
    with _reported_to_pulumi():
        try:
            return load_stack_config(settings, secret_keys)
        except ConfigError as error:
            own = [] if facts is None else list(own_problems(facts))
            if not own:
                raise
            raise ConfigError([*error.problems, *own]) from None


class GpuPlatform(pulumi.ComponentResource):
    """GPU node pools, the NVIDIA GPU Operator, GPU monitoring and tenant namespaces on an existing
    EKS or GKE cluster, or on one the cloud creates first where the config asks for it
    (`cluster.create`, created in `cloud.connect`).

    Outputs: `kubeconfig` (secret; None where the config names a kubeconfig context),
    `gpu_operator_version`, `gpu_operator_namespace`, `prometheus_rule_names`, `pools` (how a pod
    lands on each pool), `gpu_pools` (each pool's driver and CUDA ceiling), `idle_billing` (how
    long each pool's empty node bills, term by term: `gpu_platform.idle_billing`), and
    `stack_outputs`, all of them under the names this project's stacks export.
    """

    kubeconfig: pulumi.Output[str] | None
    gpu_operator_version: pulumi.Output[str | None]
    gpu_operator_namespace: pulumi.Output[str]
    prometheus_rule_names: pulumi.Output[list[str]]
    pools: pulumi.Output[dict[str, Any]]
    gpu_models: pulumi.Output[dict[str, Any]]
    gpu_pools: pulumi.Output[dict[str, Any]]
    idle_billing: pulumi.Output[dict[str, Any]]
    stack_outputs: dict[str, Any]
    """Every output by its stack output name (`gpuOperatorVersion`, `pools`, ...), to export."""

    def __init__(
        self, name: str, args: GpuPlatformArgs, opts: pulumi.ResourceOptions | None = None
    ):
        """`name`: the component's own (its parts take names of their own); `args`: the
        settings; `opts`: the usual resource options. Where the program disables default
        providers, give them in `opts` (`providers=[aws_provider, kubernetes_provider]`): the
        cloud's resources and lookups use the AWS or Google Cloud one, the Kubernetes objects
        the Kubernetes one (else a provider the component makes for the cluster it looks up,
        creates or is given the facts of). A Kubernetes provider counts only given here: one a
        parent component holds is not used, as it may reach another cluster. `depends_on`: what
        the component's direct parts wait for, the Kubernetes provider it makes among them, and
        through it everything on the cluster: a cluster the program creates needs its add-ons
        and system nodes first (docs/library.md)."""
        providers = given_providers(opts)
        prefix = f"{name}-" if args.part_names_under_it else ""
        with declaring(providers, prefix):
            self._declare(name, args, opts, providers.get("kubernetes"))

    def _declare(
        self,
        name: str,
        args: GpuPlatformArgs,
        opts: pulumi.ResourceOptions | None,
        kubernetes: pulumi.ProviderResource | None,
    ) -> None:
        config = args.config
        cluster = config.cluster
        first = claim(
            (config.cloud, cluster.project, cluster.region or cluster.location, cluster.name), name
        )
        if first is not None:
            raise PlatformConfigError(
                [
                    ConfigProblem(
                        key_path("cluster", "name"),
                        cluster.name,
                        f"a cluster no other GpuPlatform in the program is on: {first!r} is on"
                        " it, and two would declare the same node pools' roles, releases and"
                        " namespaces",
                    )
                ]
            )
        if kubernetes is not None and config.cluster.kubeconfig_context is not None:
            raise PlatformConfigError(
                [
                    ConfigProblem(
                        key_path("cluster", "kubeconfigContext"),
                        config.cluster.kubeconfig_context,
                        "no context where the component's providers give a Kubernetes provider:"
                        " the provider reaches the cluster, and a context beside it would go"
                        " unused",
                    )
                ]
            )
        if kubernetes is not None and config.cluster.create is not None:
            raise PlatformConfigError(
                [
                    ConfigProblem(
                        key_path("cluster", "create"),
                        "a Kubernetes provider in the component's providers",
                        "no Kubernetes provider of the program's own where the platform creates"
                        " the cluster: it reaches the cluster through one it makes from what it"
                        " creates",
                    )
                ]
            )
        if args.part_names_under_it and config.cloud is Cloud.AWS:
            # Imported here, as the EKS side is by `cloud_for`: a GKE plan loads no AWS SDK.
            from gpu_platform.eks.iam_roles import instance_role_name_problems

            too_long = list(instance_role_name_problems(name, config.cluster.name))
            if too_long:
                raise PlatformConfigError(too_long)
        cloud = cloud_for(config, args.cluster_facts)
        # Lookups only: a pool that cannot work is a config error before anything, this
        # component included, is registered.
        with _reported_to_pulumi():
            pools = cloud.resolve_pools()
        super().__init__("gpu-platform:index:GpuPlatform", name, None, opts)
        # Descendants inherit their parent's aliases (pulumi `step_generator.go`
        # generateAliases), and a provider aliased to its old URN does not replace what uses it.
        # What the program gave in `depends_on` (a created cluster's add-ons and system nodes)
        # reaches each direct part as its own dependency: a child waits only for its parent's URN
        # (pulumi 3.272 sdk/python/lib/pulumi/runtime/resource.py, `prepare_resource`), and the
        # engine orders deletes by the dependencies each resource records.
        children = pulumi.ResourceOptions(
            parent=self,
            aliases=[pulumi.Alias(parent=pulumi.ROOT_STACK_RESOURCE)]
            if args.moved_from_stack_root
            else None,
            depends_on=None if opts is None else opts.depends_on,
        )
        connection = (
            cloud.connect(children)
            if kubernetes is None
            else ClusterConnection(kubernetes, kubeconfig=None)
        )
        # A pool that validates its nodes is created and updated after its validator, which
        # expects the pool's new release (its driver, its instance types): declared after the
        # pool, it checked every node of the new release against the old one, failed it, and a
        # failed node is not checked again. The validator is in the GPU Operator's namespace,
        # which waits for the pools the operator waits for, so these pools are not among them.
        # A pool that has a canary is created and updated after its canary's gate too, which
        # needs the operator. Every other pool before the operator, as it always was.
        canaries = canaries_by_pool(pools)
        held_back = set(canaries) | {pool.spec.name for pool in validated_pools(pools)}
        node_pools = cloud.create_pools(pools, connection, children, held_back=held_back)
        on_cluster = pulumi.ResourceOptions.merge(
            children, pulumi.ResourceOptions(provider=connection.provider)
        )

        monitoring = GpuMonitoring(
            part_name("gpu-monitoring"),
            GpuMonitoringArgs(
                config.monitoring,
                config.platform,
                config.operator.namespace,
                gpu_nodes=most_nodes(config.pools),
                pools=pools,
                secret_labels=config.is_secret("monitoring"),
                protect=config.protect,
            ),
            on_cluster,
        )
        operator = GpuOperator(
            part_name("gpu-operator"),
            GpuOperatorArgs(
                config.operator,
                config.platform,
                pools,
                config.monitoring,
                secret_values=config.is_secret("operator", "pools", "monitoring"),
                protect=config.protect,
                held_back=held_back,
            ),
            pulumi.ResourceOptions.merge(
                on_cluster,
                pulumi.ResourceOptions(depends_on=[*node_pools, *monitoring.prometheus_operator]),
            ),
        )
        cloud.create_device_plugins(pools, operator.namespace, on_cluster)
        validators = declare_node_validation(
            part_name("node-validation"),
            pools,
            operator.namespace,
            config.operator.namespace,
            {
                pool.spec.name: NodeHardware(
                    cloud.efa_devices(pool.spec.name),
                    cloud.gpus_by_instance_type(pool.spec.name),
                )
                for pool in pools
            },
            karpenter=config.uses_karpenter,
            exempt_namespaces=exempt_namespaces(config),
            opts=on_cluster,
            in_place=rolls_drivers_in_place(config.platform),
        )
        # The canaries among them, which their gates wait for, first.
        later = [
            resource
            for pool in pools
            if pool.spec.name in held_back and pool.spec.name not in canaries
            for resource in _after_validator(
                pool, cloud, operator, validators, connection, children, gates=[]
            )
        ]
        # The gate waits for its canary's nodes and NVIDIADriver and for the operator's release,
        # not for the operator as a whole: that holds the led pools' NVIDIADrivers, which wait
        # for the gate.
        driver_rollout = config.operator if rolls_drivers_in_place(config.platform) else None
        for pool in pools:
            gates = [
                canary_gate_job(
                    canary,
                    operator.namespace,
                    config.provisioner,
                    pulumi.ResourceOptions.merge(
                        on_cluster,
                        pulumi.ResourceOptions(
                            depends_on=[
                                cloud.pool_nodes(canary.spec.name),
                                *operator.ready_for(canary.spec.name),
                            ]
                        ),
                    ),
                    driver_rollout,
                )
                for canary in canaries.get(pool.spec.name, ())
            ]
            # A led pool's validator changes after the gate, as the pool's nodes and
            # NVIDIADriver do, and before them. The canary's own is not held: the gate's pod
            # waits on a canary node for that node's proof.
            if gates:
                later += _after_validator(
                    pool, cloud, operator, validators, connection, children, gates
                )
        # Kueue's webhooks judge the tenants' queues and the Jobs of their namespaces: those
        # wait for its release to be ready (gpu_platform/kubernetes/kueue.py).
        kueue = (
            [
                Kueue(
                    part_name("kueue"),
                    KueueArgs(
                        config.queues,
                        pools,
                        config.protect,
                        provisioning_request_crd=config.autoscaler_installed
                        and BEST_EFFORT_ATOMIC in atomic_classes(queued_pools(pools)),
                    ),
                    on_cluster,
                )
            ]
            if config.queues.enabled
            else []
        )
        tenants = [
            GpuTenantNamespace(
                part_name(namespace.name),
                GpuTenantNamespaceArgs(
                    namespace,
                    pools,
                    provisioner=config.provisioner,
                    driver_rollout=driver_rollout,
                    queues=config.queues if config.queued(namespace) else None,
                    kubernetes_version=cloud.kubernetes_version(),
                ),
                # A smoke test on a led pool runs on its updated nodes.
                pulumi.ResourceOptions.merge(
                    on_cluster, pulumi.ResourceOptions(depends_on=[operator, *later, *kueue])
                ),
            )
            for namespace in config.namespaces
        ]
        # After the tenants' quotas: the chart's DeviceClasses take GPUs of any model, and a
        # quota caps only the classes it names, so until each tenant's quota holds them at none
        # a claim through them would go uncounted. A claim template needs no class to exist.
        dra_pools = [pool for pool in pools if pool.spec.allocation == "dra"]
        if dra_pools:
            DraDriver(
                part_name("dra-driver"),
                DraDriverArgs(dra_pools, protect=config.protect),
                pulumi.ResourceOptions.merge(
                    on_cluster, pulumi.ResourceOptions(depends_on=[operator, *tenants])
                ),
            )
        idle_gpu_reaper(
            [
                (spec, tenant.namespace_name)
                for spec, tenant in zip(config.namespaces, tenants, strict=True)
            ],
            config.monitoring,
            secret_url=config.is_secret("monitoring"),
            opts=on_cluster,
        )

        secret_pools = config.is_secret("pools")
        self.kubeconfig = (
            None if connection.kubeconfig is None else pulumi.Output.secret(connection.kubeconfig)
        )
        self.gpu_operator_version = operator.chart_version
        self.gpu_operator_namespace = operator.namespace
        self.prometheus_rule_names = monitoring.rule_names
        self.pools = pulumi.Output.from_input(
            secret_if(
                secret_pools,
                {pool.spec.name: pool_placement(pool, config.provisioner) for pool in pools},
            )
        )
        self.gpu_models = pulumi.Output.from_input(
            secret_if(secret_pools, model_placements(pools, config.provisioner))
        )
        self.gpu_pools = pulumi.Output.from_input(
            secret_if(secret_pools, {pool.spec.name: pool_software(pool) for pool in pools})
        )
        self.idle_billing = pulumi.Output.from_input(
            secret_if(
                secret_pools,
                idle_billing_output(idle_billing(config, pool) for pool in pools),
            )
        )
        self.stack_outputs = {
            **({} if self.kubeconfig is None else {"kubeconfig": self.kubeconfig}),
            "gpuOperatorVersion": self.gpu_operator_version,
            "gpuOperatorNamespace": self.gpu_operator_namespace,
            "helmReleaseNamespaces": config.helm_release_namespaces,
            "prometheusRuleNames": self.prometheus_rule_names,
            "pools": self.pools,
            "gpuModels": self.gpu_models,
            "gpuPools": self.gpu_pools,
            "idleBilling": self.idle_billing,
            **cloud.stack_outputs(),
        }
        self.register_outputs(self.stack_outputs)


def _after_validator(
    pool: ResolvedPool,
    cloud: GpuCloud,
    operator: GpuOperator,
    validators: PoolValidators,
    connection: ClusterConnection,
    opts: pulumi.ResourceOptions,
    gates: Sequence[pulumi.Resource],
) -> list[pulumi.Resource]:
    """A pool `create_pools` held back, and its NVIDIADriver where the operator builds one,
    created and updated after the pool's validator, which waits for `gates` (a led pool's
    canary gates), and after the gates."""
    validator = validators.declare(pool.spec.name, after=gates)
    after = [*gates, *([] if validator is None else [validator])]
    nodes = cloud.create_held_back_pool(pool, connection, opts, after=after)
    driver = operator.held_back_driver(pool.spec.name, after)
    return [nodes, *([] if driver is None else [driver])]


def canaries_by_pool(pools: Sequence[ResolvedPool]) -> dict[str, list[ResolvedPool]]:
    """Each pool that has canaries, with them (`canaryOf`)."""
    led: dict[str, list[ResolvedPool]] = {}
    for pool in pools:
        if pool.spec.canary_of is not None:
            led.setdefault(pool.spec.canary_of, []).append(pool)
    return led


@contextmanager
def _reported_to_pulumi() -> Iterator[None]:
    try:
        yield
    except ConfigError as error:
        raise PlatformConfigError(error.problems) from None
    except MissingLockEntry as missing:
        raise PlatformMissingLockEntry(missing, pulumi.get_stack()) from None
    except LockError as error:
        raise PlatformLockError(str(error)) from None
