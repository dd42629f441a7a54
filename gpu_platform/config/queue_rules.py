"""Rules of Kueue's settings: a namespace of its own, and tenants' limits their quotas allow."""

from collections.abc import Iterator

from gpu_platform.config.fields import Cloud
from gpu_platform.config.problems import MISSING, ConfigProblem, key_path
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
            if ns.queue.pool_quotas:
                yield ConfigProblem(
                    key_path("namespaces", i, "queue", "poolQuotas"),
                    dict(ns.queue.pool_quotas),
                    f"no value unless queues.enabled and"
                    f" {key_path('namespaces', i, 'queue', 'enabled')} are true: without its"
                    " queue the namespace's ResourceQuota alone caps its pools, together",
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
        yield from _split_problems(config, i, ns)
        if ns.smoke_test_pool and ns.queue.pool_quotas.get(ns.smoke_test_pool) == 0:
            # Kueue admits the smoke test on its pool within the share there, and would hold it
            # in the queue until a tenant of the cohort lent some (`tenant_rules` judges the
            # quota the share is of).
            yield ConfigProblem(
                key_path("namespaces", i, "queue", "poolQuotas", ns.smoke_test_pool),
                0,
                f"at least 1 when the namespace runs its smoke test on {ns.smoke_test_pool}",
            )
        lending = ns.queue.lending_limit
        if lending is None:
            return
        # Kueue's webhook refuses a ClusterQueue whose lendingLimit passes its nominalQuota
        # (`validateLendingLimit`, pkg/webhooks/clusterqueue_webhook.go at v0.19.2), and the
        # limit applies to every pool's quota of the namespace.
        for pool, (setting, cap) in _pool_shares(config, ns).items():
            if lending > cap:
                yield ConfigProblem(
                    key_path("namespaces", i, "queue", "lendingLimit"),
                    lending,
                    f"at most {cap}, the namespace's quota of pool {pool}'s GPUs"
                    f" ({key_path('namespaces', i, *setting)}): a tenant lends only what its"
                    " quota holds",
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


def _pool_shares(
    config: StackConfig, ns: TenantNamespaceSpec
) -> dict[str, tuple[tuple[str, ...], int]]:
    """For each pool Kueue admits a queued namespace's jobs on (every pool but the canaries),
    the setting that gives the namespace's ClusterQueue its quota there, as key path under the
    namespace, and that quota: the pool's share of a split quota (`queue.poolQuotas.<pool>`),
    else the namespace's cap of the pool's GPUs (`pool_caps`)."""
    return {
        pool: (("queue", "poolQuotas", pool), ns.queue.pool_quotas[pool])
        if pool in ns.queue.pool_quotas
        else cap
        for pool, cap in _queued_caps(config, ns).items()
    }


def _queued_caps(
    config: StackConfig, ns: TenantNamespaceSpec
) -> dict[str, tuple[tuple[str, ...], int]]:
    """`pool_caps` of the pools Kueue admits on: every pool but the canaries."""
    canaries = {pool.name for pool in config.pools if pool.canary_of is not None}
    return {pool: cap for pool, cap in pool_caps(config, ns).items() if pool not in canaries}


def _shared_caps(
    config: StackConfig, ns: TenantNamespaceSpec
) -> dict[tuple[str, ...], tuple[int, list[str]]]:
    """Each of the namespace's quota settings (as key path under it) with its cap and the pools
    Kueue admits on that hand out what it caps, in the stack's order."""
    caps: dict[tuple[str, ...], tuple[int, list[str]]] = {}
    for pool, (setting, cap) in _queued_caps(config, ns).items():
        caps.setdefault(setting, (cap, []))[1].append(pool)
    return caps


def _split_problems(
    config: StackConfig, i: int, ns: TenantNamespaceSpec
) -> Iterator[ConfigProblem]:
    """Kueue holds a ClusterQueue's quota per flavor, a ResourceQuota per resource over every
    pool (`ResourceQuota.nominalQuota`, "available for Workloads admitted by this ClusterQueue"
    per flavor, apis/kueue/v1beta2/clusterqueue_types.go at v0.19.2): where two pools hand out
    the resource a queued namespace has quota of, Kueue would admit up to the quota on each
    while the namespace runs it once over them all, and the pods of a job admitted beyond it
    are refused (`FailedCreate: exceeded quota`), so it starts in part. So the namespace splits
    that quota between them (`queue.poolQuotas`), each pool's share its ClusterQueue's quota
    there: shares adding up to more would admit past the ResourceQuota. Less only leaves quota
    nothing admits on (Kueue's webhooks and the cluster's admission policy hold a queued
    namespace's GPU pods to Kueue's admission), which is the safe middle of moving quota from
    one pool to another, so the program warns of it instead
    (gpu_platform/kubernetes/unused_shares.py). A canary has no flavor
    (gpu_platform/kubernetes/kueue.py `queued_pools`), so it shares nothing with the pool it
    leads."""
    pool_names = {pool.name for pool in config.pools}
    caps = _shared_caps(config, ns)
    if not caps:
        # The stack's platform is unknown (`pool_caps`): what each pool hands out is too.
        return
    shared = [pool for _, pools in caps.values() if len(pools) > 1 for pool in pools]
    split = ns.queue.pool_quotas
    for pool, share in split.items():
        if pool in shared:
            continue
        if pool not in pool_names:
            why = f"{pool} is no pool of the stack"
        elif config.pool(pool).canary_of is not None:
            why = f"{pool} is a canary (canaryOf), on which Kueue admits no job"
        else:
            setting = next(s for s, (_, pools) in caps.items() if pool in pools)
            why = (
                f"{pool} alone hands out the GPUs"
                f" {key_path('namespaces', i, *setting)} caps, and holds all of it"
            )
        yield ConfigProblem(
            key_path("namespaces", i, "queue", "poolQuotas", pool),
            share,
            (
                f"one of the pools that hand out a GPU resource with another: {', '.join(shared)}"
                if shared
                else "no entry: no two pools of the stack hand out one GPU resource"
            )
            + f"; {why} (docs/queues.md)",
        )
    for setting, (cap, pools) in caps.items():
        if len(pools) < 2:
            continue
        given = {pool: split[pool] for pool in pools if pool in split}
        missing = [pool for pool in pools if pool not in given]
        total = sum(given.values())
        if (cap == 0 and not given) or (not missing and total <= cap):
            continue
        quota = key_path("namespaces", i, *setting)
        example = ", ".join(
            f"{pool}: {cap // len(pools) + (n < cap % len(pools))}" for n, pool in enumerate(pools)
        )
        found = f"{' + '.join(str(v) for v in given.values())} = {total}" if given else "none"
        lacking = f", {', '.join(missing)} missing" if missing else ""
        yield ConfigProblem(
            key_path("namespaces", i, "queue", "poolQuotas"),
            given or (dict(split) if split else MISSING),
            f"a share of {quota} ({cap}) for each of pools {', '.join(pools)}, which all"
            f" hand out the GPUs it caps, the shares adding up to at most {cap}"
            f" (given: {found}"
            f"{lacking}), such as {{{example}}}: Kueue holds the namespace's quota on"
            " each pool apart and its ResourceQuota once over them all, so jobs admitted"
            " past the ResourceQuota would start in part; or take the namespace out of"
            f" the queues ({key_path('namespaces', i, 'queue', 'enabled')} false), the"
            " place for work Kueue does not queue (docs/queues.md)",
        )
