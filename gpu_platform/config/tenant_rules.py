"""Rules of tenant namespaces: each a namespace of its own, apart from Kubernetes' and the
platform's, with a quota its smoke test fits in."""

from collections.abc import Iterator

from gpu_platform.config.pools import MigSharing, gke_shares
from gpu_platform.config.problems import ConfigProblem, key_path
from gpu_platform.config.set_aside import per_element
from gpu_platform.config.stack import StackConfig, known_platform
from gpu_platform.config.tenants import (
    SYSTEM_NAMESPACES,
    QuotaSetting,
    TenantNamespaceSpec,
    quota_setting,
)


def namespace_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    # The platform declares each tenant namespace with its Pod Security level and GPU quota: in
    # a namespace Kubernetes or the platform itself runs in, it would be declared twice or put
    # restricted Pod Security and a GPU quota on the pods already there. Later entries win, so
    # a system namespace is named as such even where a component runs in it.
    reserved = {
        **(
            {config.autoscaler.namespace: "the cluster autoscaler's (autoscaler.namespace)"}
            if config.autoscaler_installed
            else {}
        ),
        config.monitoring.namespace: "the monitoring namespace (monitoring.namespace)",
        **(
            {config.monitoring.node_exporter_namespace: "the installed Prometheus stack's"}
            if config.monitoring.install_prometheus_stack
            else {}
        ),
        config.operator.namespace: "the GPU Operator's (operator.namespace)",
        **{name: "a Kubernetes system namespace" for name in SYSTEM_NAMESPACES},
    }
    pool_names = {p.name for p in config.pools}
    seen: set[str] = set()

    def of_namespace(i: int, ns: TenantNamespaceSpec) -> Iterator[ConfigProblem]:
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
        yield from _quota_problems(config, i, ns)

    yield from per_element(config.namespaces, of_namespace)
    tenants = [ns.name for ns in config.namespaces]
    autoscaler = config.autoscaler.namespace
    # Any pod of a tenant's namespace may run as the autoscaler's service account there, whose
    # AWS role resizes the cluster's node groups. In a system namespace the tenant is the one to
    # move, reported above.
    if (
        config.autoscaler_installed
        and autoscaler in tenants
        and autoscaler not in SYSTEM_NAMESPACES
    ):
        yield ConfigProblem(
            key_path("autoscaler", "namespace"),
            autoscaler,
            f"a namespace that is not a tenant's (namespaces[{tenants.index(autoscaler)}] is"
            f" {autoscaler}); the default is gpu-platform-system",
        )


def _quota_problems(
    config: StackConfig, i: int, ns: TenantNamespaceSpec
) -> Iterator[ConfigProblem]:
    """A `gpuQuota` that caps nothing the stack offers, as a stack file written before the
    quotas per kind of GPU has it; a `sharedGpuQuota` where whole GPUs and replicas share their
    resource name, which `gpuQuota` alone caps there; and at least one of what the
    smoke test's pod asks for."""
    platform = known_platform(config)
    if platform is None:
        return
    settings: dict[QuotaSetting, list[str]] = {}
    for pool in config.pools:
        setting = quota_setting(pool.sharing, gke_shares(platform, pool.sharing))
        settings.setdefault(setting, []).append(pool.name)
    if ns.gpu_quota and not ns.shared_gpu_quota and not ns.mig_quota and "gpuQuota" not in settings:
        # Before the quotas per kind of GPU, `gpuQuota` alone capped replicas and slices too: a
        # stack file of that time would now allow the namespace no GPU its pools offer, and every
        # new GPU pod would be refused at admission after the upgrade.
        yield ConfigProblem(
            key_path("namespaces", i, "gpuQuota"),
            ns.gpu_quota,
            "0 where no pool is exclusive: gpuQuota caps whole GPUs only, and none of this"
            f" stack's pools ({', '.join(p.name for p in config.pools)}) hands one out; cap"
            " replicas of time-sliced and MPS GPUs and GKE's partitions with sharedGpuQuota,"
            " and the MIG manager's slices with migQuota",
        )
    mixed = "gpuQuota" in settings and "sharedGpuQuota" in settings
    if mixed and ns.shared_gpu_quota:
        # Whole GPUs, replicas and GKE's partitions are all `nvidia.com/gpu`, and a
        # ResourceQuota caps a resource by its name: the one cap is `gpuQuota`, so that pods
        # never take more whole GPUs than it allows. A `sharedGpuQuota` beside it would cap
        # nothing, and a stack file from before the quotas per kind of GPU, whose namespace was
        # allowed both together, would lose that much of its cap without a word.
        old_cap = ns.gpu_quota + ns.shared_gpu_quota
        yield ConfigProblem(
            key_path("namespaces", i, "sharedGpuQuota"),
            ns.shared_gpu_quota,
            f"unset where the stack has exclusive pools ({', '.join(settings['gpuQuota'])})"
            f" beside shared ones ({', '.join(settings['sharedGpuQuota'])}): both hand out"
            " nvidia.com/gpu, which Kubernetes cannot tell apart, so gpuQuota alone caps whole"
            " GPUs and replicas together there, each replica counted as a GPU. The namespace"
            f" was allowed gpuQuota + sharedGpuQuota = {old_cap} of them: set gpuQuota to"
            f" {old_cap} (it lets pods take {old_cap} whole GPUs) and remove sharedGpuQuota, or"
            " run whole and shared GPUs in separate stacks to cap replicas on their own",
        )
    pool_name = ns.smoke_test_pool
    if pool_name is None or pool_name not in {p.name for p in config.pools}:
        return
    # The quota would refuse the smoke test's pod, and `pulumi up` would wait out the Job's
    # deadline before saying so.
    where, quota = pool_caps(config, ns)[pool_name]
    if quota == 0:
        yield ConfigProblem(
            key_path("namespaces", i, *where),
            quota,
            f"at least 1 when the namespace runs a smoke test on {pool_name}",
        )


def pool_caps(
    config: StackConfig, ns: TenantNamespaceSpec
) -> dict[str, tuple[tuple[str, ...], int]]:
    """For each pool, the namespace setting that caps what its pods ask of the pool (as key
    path under the namespace: `gpuQuota`, `migQuota.<slice>`...) and that cap: `gpuQuota` for
    replicas too where the stack has exclusive pools beside shared ones (see
    `_quota_problems`). Empty while the stack's platform is unknown."""
    platform = known_platform(config)
    if platform is None:
        return {}
    settings = {
        pool.name: quota_setting(pool.sharing, gke_shares(platform, pool.sharing))
        for pool in config.pools
    }
    mixed = {"gpuQuota", "sharedGpuQuota"} <= set(settings.values())
    caps: dict[str, tuple[tuple[str, ...], int]] = {}
    for pool in config.pools:
        setting = settings[pool.name]
        if setting == "migQuota" and isinstance(pool.sharing, MigSharing):
            slice_name = pool.sharing.profile.removeprefix("all-")
            caps[pool.name] = (("migQuota", slice_name), ns.mig_quota.get(slice_name, 0))
        elif setting == "sharedGpuQuota" and not mixed:
            caps[pool.name] = (("sharedGpuQuota",), ns.shared_gpu_quota)
        else:
            caps[pool.name] = (("gpuQuota",), ns.gpu_quota)
    return caps
