"""Rules of Kueue's settings: a namespace of its own, and tenants' limits their quotas allow."""

from collections.abc import Iterator

from gpu_platform.config.fields import Cloud
from gpu_platform.config.problems import ConfigProblem, key_path
from gpu_platform.config.set_aside import per_element
from gpu_platform.config.stack import StackConfig
from gpu_platform.config.tenant_rules import pool_caps
from gpu_platform.config.tenants import SYSTEM_NAMESPACES, TenantNamespaceSpec


def queue_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    queues = config.queues

    def of_namespace(i: int, ns: TenantNamespaceSpec) -> Iterator[ConfigProblem]:
        limits = {
            "borrowingLimit": ns.queue.borrowing_limit,
            "lendingLimit": ns.queue.lending_limit,
        }
        if not config.queued(ns):
            for key, value in limits.items():
                if value:
                    yield ConfigProblem(
                        key_path("namespaces", i, "queue", key),
                        value,
                        f"no value unless queues.enabled and"
                        f" {key_path('namespaces', i, 'queue', 'enabled')} are true: without"
                        " its queue the namespace has none to borrow or lend through",
                    )
            smoke_pool = next((p for p in config.pools if p.name == ns.smoke_test_pool), None)
            if config.cloud is Cloud.GCP and smoke_pool and smoke_pool.gcp.queued_provisioning:
                # GKE's provisioningrequest page: a queued pool's nodes come only for a
                # ProvisioningRequest, which only Kueue makes, for a queued namespace's jobs.
                yield ConfigProblem(
                    key_path("namespaces", i, "smokeTestPool"),
                    ns.smoke_test_pool,
                    "a pool without gcp.queuedProvisioning unless queues.enabled and"
                    f" {key_path('namespaces', i, 'queue', 'enabled')} are true: the"
                    " smoke test of a namespace out of the queues is a plain pod, for which a"
                    " queued pool starts no node, and would wait for one until its deadline;"
                    " name another pool or none (docs/queues.md)",
                )
            return
        canaries = {pool.name for pool in config.pools if pool.canary_of is not None}
        if ns.smoke_test_pool in canaries:
            # Kueue has no flavor for a canary (gpu_platform/kubernetes/kueue.py
            # `queued_pools`): a queued Job that selects one is never admitted.
            yield ConfigProblem(
                key_path("namespaces", i, "smokeTestPool"),
                ns.smoke_test_pool,
                "a pool that is no canary while queues.enabled is true: Kueue admits a queued"
                " namespace's jobs on the pools a canary leads, never on the canary, whose"
                " gate runs the smoke test itself (docs/queues.md)",
            )
        lending = ns.queue.lending_limit
        if lending is None:
            return
        # Kueue's webhook refuses a ClusterQueue whose lendingLimit passes its nominalQuota
        # (`validateLendingLimit`, pkg/webhooks/clusterqueue_webhook.go at v0.19.2), and the
        # limit applies to every pool's quota of the namespace.
        for pool, (setting, cap) in pool_caps(config, ns).items():
            if lending > cap:
                yield ConfigProblem(
                    key_path("namespaces", i, "queue", "lendingLimit"),
                    lending,
                    f"at most {cap}, the namespace's quota of pool {pool}'s GPUs"
                    f" ({'.'.join(setting)}): a tenant lends only what its quota holds",
                )
                return

    yield from per_element(config.namespaces, of_namespace)
    # Kueue's AdmissionCheck is what makes a ProvisioningRequest for a job's pods, and it
    # admits no job on a canary.
    for i, pool in enumerate(config.pools):
        if pool.aws.atomic_scale_up and not queues.enabled:
            yield ConfigProblem(
                key_path("pools", i, "aws", "atomicScaleUp"),
                True,
                "false unless queues.enabled is true: Kueue asks for the nodes of a"
                " queued job in one ProvisioningRequest, which nothing else makes",
            )
        elif pool.aws.atomic_scale_up and pool.canary_of is not None:
            yield ConfigProblem(
                key_path("pools", i, "aws", "atomicScaleUp"),
                True,
                "false on a canary (canaryOf): Kueue queues no job onto a canary, so no"
                " ProvisioningRequest would ever ask for its nodes",
            )
        elif pool.aws.atomic_scale_up and pool.aws.node_group_per_zone:
            # The autoscaler splits an atomic scale-up over the node groups similar to the one
            # it picked, checking only their total room (`balanceScaleUps`,
            # core/scaleup/orchestrator/orchestrator.go at cluster-autoscaler-1.33.6).
            yield ConfigProblem(
                key_path("pools", i, "aws", "atomicScaleUp"),
                True,
                f"false while {key_path('pools', i, 'aws', 'nodeGroupPerZone')} is true: the"
                " cluster autoscaler spreads one request's nodes over the pool's zonal node"
                " groups (balance-similar-node-groups), so one job's nodes would talk across"
                " zones; give the pool one node group in one zone (zones) instead",
            )
    if not queues.enabled:
        return
    yield from _shared_resource_problems(config)
    # The platform creates Kueue's namespace with Pod Security `restricted`, which a namespace
    # of another component (or Kubernetes') would have declared twice or put on its pods.
    taken = {
        config.operator.namespace: "the GPU Operator's (operator.namespace)",
        config.monitoring.namespace: "the monitoring namespace (monitoring.namespace)",
        **(
            {config.autoscaler.namespace: "the cluster autoscaler's (autoscaler.namespace)"}
            if config.autoscaler_installed
            else {}
        ),
        **(
            {config.karpenter.namespace: "Karpenter's (karpenter.namespace)"}
            if config.karpenter_installed
            else {}
        ),
        **{ns.name: "a tenant's" for ns in config.namespaces},
        **{name: "a Kubernetes system namespace" for name in SYSTEM_NAMESPACES},
    }
    if queues.namespace in taken:
        yield ConfigProblem(
            key_path("queues", "namespace"),
            queues.namespace,
            f"a namespace of Kueue's own, none of {', '.join(sorted(taken))}:"
            f" {queues.namespace} is {taken[queues.namespace]}; the default is kueue-system",
        )


def _shared_resource_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    """Kueue holds a ClusterQueue's quota per flavor, a ResourceQuota per resource over every
    pool: where two pools hand out the resource a namespace has quota (or may borrow) of, Kueue
    admits up to the quota on each while the namespace runs their sum, and the pods of a job
    admitted beyond it are refused (`FailedCreate: exceeded quota`), so it starts in part. A
    canary has no flavor (gpu_platform/kubernetes/kueue.py `queued_pools`), so it shares
    nothing with the pool it leads."""
    canaries = {pool.name for pool in config.pools if pool.canary_of is not None}
    for i, ns in enumerate(config.namespaces):
        if not ns.queue.enabled:
            continue
        pools: dict[tuple[str, ...], list[str]] = {}
        for pool, (setting, cap) in pool_caps(config, ns).items():
            if pool not in canaries and cap + ns.queue.borrowing_limit > 0:
                pools.setdefault(setting, []).append(pool)
        for setting, names in pools.items():
            if len(names) > 1:
                yield ConfigProblem(
                    key_path("queues", "enabled"),
                    True,
                    f"false while pools {', '.join(names)} all hand out the GPUs"
                    f" {key_path('namespaces', i, *setting)} caps: Kueue would admit that quota"
                    " on each pool and the namespace's ResourceQuota allows it once over them"
                    " all, so jobs would start in part; keep one such pool, or take the"
                    f" namespace out of the queues ({key_path('namespaces', i, 'queue', 'enabled')}"
                    " false), the place for work Kueue does not queue (docs/queues.md)",
                )
