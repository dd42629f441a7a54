"""Where and on what a pool's node group runs, settled by lookups before anything is created.

For each pool: the instance types EC2 offers in the region and their GPUs, the zones where every
one of them is offered (a node group spread over a zone without its instance type fails to
launch there), the subnets in those zones, the NVIDIA AMI type for the CPU architecture and the
AMI release. Whatever makes a pool unable to work is a `ConfigError` naming the pool's key.
"""

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import pulumi

from gpu_platform.accelerators import ACCELERATORS
from gpu_platform.config import (
    ConfigError,
    ConfigProblem,
    GpuPoolSpec,
    MigSharing,
    key_path,
    mig_problem,
)
from gpu_platform.drivers import NvidiaDriver, eks_driver, known_releases
from gpu_platform.eks.autoscaler_tags import autoscaler_tag_problems, autoscaler_tags
from gpu_platform.eks.cluster import EksCluster, Subnet
from gpu_platform.eks.instance_lookups import look_up_instance_type, offered_zones
from gpu_platform.eks.instance_types import (
    EFA_COUNTS_EXPECTED,
    InstanceType,
    different_efa_counts,
    instance_category,
    instance_family,
    pool_instance_type_names,
    sizes_key,
    zones_offering_all,
)
from gpu_platform.eks.kubelet_allocatable import kubelet_allocatable
from gpu_platform.eks.live_scaling import LiveBounds, live_bounds
from gpu_platform.eks.max_pods import MAX_PODS
from gpu_platform.eks.node_group_names import (
    NODE_GROUP_NAME_LIMIT,
    NODE_GROUP_SUFFIX_LENGTH,
    node_group_name_prefix,
)
from gpu_platform.eks.node_labels import eks_node_identity
from gpu_platform.node_identity import ResolvedPool, resolve_pool

# EKS's NVIDIA AMI types (botocore EKS model, enum AMITypes) per node image and architecture.
AMI_TYPES = {
    ("al2023", "x86_64"): "AL2023_x86_64_NVIDIA",
    ("al2023", "arm64"): "AL2023_ARM_64_NVIDIA",
    ("bottlerocket", "x86_64"): "BOTTLEROCKET_x86_64_NVIDIA",
    ("bottlerocket", "arm64"): "BOTTLEROCKET_ARM_64_NVIDIA",
}

# EKS node group labels and taints (botocore EKS model: labelKey, labelValue, taintKey).
_EKS_LABEL_LIMIT = 63


@dataclass(frozen=True)
class NodeGroupPlacement:
    """What the lookups settled for one pool's node group."""

    instance_types: tuple[InstanceType, ...]
    zones: tuple[str, ...]
    subnet_ids: tuple[pulumi.Input[str], ...]
    """The subnets' ids; of a new VPC's subnets, outputs once `NewEksCluster` created them."""
    ami_type: str
    release_version: str | None
    """The pinned AMI release, which decides the pool's driver; None under EKS Auto Mode, which
    chooses its nodes' AMI itself."""
    efa_interfaces: int = 0
    """EFA interfaces each node gets: what every one of the pool's instance types takes (config
    refuses an EFA pool of types that take different numbers); 0 unless the pool asks for
    EFA."""
    subnets_by_zone: tuple[tuple[str, tuple[pulumi.Input[str], ...]], ...] = ()
    """`subnet_ids` by zone, in zone order: where each per-zone node group goes."""
    live_bounds: Mapping[str | None, LiveBounds] = field(default_factory=dict)
    """The bounds of the pool's node groups as they run now, by zone (None for a pool's only
    group); none before they exist."""


def resolve_placement(
    spec: GpuPoolSpec,
    index: int,
    cluster: EksCluster,
    subnets: Sequence[Subnet],
    node_image: str,
    idle_minutes: int,
    node_pool: bool = False,
) -> tuple[ResolvedPool, NodeGroupPlacement]:
    """The pool with its GPUs and its node group's placement; ConfigError if it cannot work.

    With `node_pool`, the pool becomes a Karpenter or EKS Auto Mode NodePool rather than a node
    group: its instance types may be of several sizes, and the node group's own limits (label
    lengths, autoscaler tags, live sizes) do not apply. A pool without an AMI release (config
    allows that under Auto Mode only) has no driver the platform knows."""
    _raise_if_any(_option_problems(spec, index))
    if spec.aws.flexible:
        offered, instance_types = _flexible_sizes(spec, index, cluster.region)
    else:
        offered = offered_zones(spec.instance_types, cluster.region)
        not_offered = [name for name in spec.instance_types if not offered[name]]
        if not_offered:
            raise ConfigError(
                [
                    ConfigProblem(
                        key_path("pools", index, "instanceTypes"),
                        spec.instance_types,
                        f"instance types EC2 offers in {cluster.region}; not offered there:"
                        f" {', '.join(not_offered)}",
                    )
                ]
            )
        instance_types = tuple(
            look_up_instance_type(n, cluster.region) for n in spec.instance_types
        )
    _raise_if_any(_instance_type_problems(spec, index, instance_types, node_pool))
    _raise_if_any(_efa_problems(spec, index, instance_types))
    # The pool's GPUs per node are its largest type's: under Karpenter its GPU limit is `max`
    # nodes of that size; on a node group every type has the same.
    largest = max(instance_types, key=lambda t: t.gpu.count if t.gpu else 0)
    assert largest.gpu is not None and largest.architecture is not None
    zones, subnet_ids = _zones_and_subnets(
        spec, index, offered, subnets, [t.name for t in instance_types]
    )
    _raise_if_any(_per_zone_problems(spec, index, zones))
    release, driver = (
        _release_and_driver(spec, index, cluster, node_image, largest.architecture)
        if spec.aws.ami_release_version is not None
        else (None, None)
    )
    pool = resolve_pool(spec, index, largest.gpu, driver=driver)
    efa_interfaces = instance_types[0].efa_interfaces if spec.aws.efa else 0
    if not node_pool:
        _raise_if_any(
            _node_group_problems(
                pool, cluster.name, idle_minutes, efa_interfaces, instance_types[0]
            )
        )
    placement = NodeGroupPlacement(
        instance_types=instance_types,
        zones=zones,
        subnet_ids=subnet_ids,
        ami_type=AMI_TYPES[(node_image, largest.architecture)],
        release_version=release,
        efa_interfaces=efa_interfaces,
        subnets_by_zone=tuple(
            (zone, tuple(s.id for s in subnets if s.zone == zone and s.id in subnet_ids))
            for zone in zones
        ),
        live_bounds={} if node_pool else live_bounds(cluster, spec.name),
    )
    return pool, placement


def _flexible_sizes(
    spec: GpuPoolSpec, i: int, region: str
) -> tuple[dict[str, set[str]], tuple[InstanceType, ...]]:
    """Where EC2 offers each size of the pool's families or categories that has its GPU model,
    and those sizes. The NodePool admits the sizes by family or category and EC2's GPU name
    (`karpenter.k8s.aws/instance-gpu-name`), so a size of another model under the same name
    (A100 40 GB and 80 GB are both `a100`) would come in with them: refused."""
    path, given = sizes_key(spec, i)
    field = path.rsplit(".", 1)[-1]
    names = pool_instance_type_names(spec)
    if not names:
        of = instance_family if spec.aws.instance_families else instance_category
        known = sorted({of(n) or "" for n in MAX_PODS})
        raise ConfigError(
            [
                ConfigProblem(
                    path,
                    given,
                    f"{field} of which the platform's table of GPU instance types"
                    f" (gpu_platform/eks/max_pods) lists sizes: {', '.join(known)}",
                )
            ]
        )
    offered = offered_zones(names, region)
    described = [look_up_instance_type(n, region) for n in names if offered[n]]
    sizes = tuple(t for t in described if t.accelerator == spec.accelerator)
    if not sizes:
        models = sorted({t.accelerator or t.describe_gpus() for t in described})
        raise ConfigError(
            [
                ConfigProblem(
                    path,
                    given,
                    f"{field} with {spec.accelerator} instance types EC2 offers in {region}, as"
                    " the platform's table of GPU instance types lists them; these have"
                    f" {'; '.join(models) or 'none offered there'}",
                )
            ]
        )
    gpu_names = {t.gpu_name for t in sizes}
    mixed = sorted(
        t.name for t in described if t.gpu_name in gpu_names and t.accelerator != spec.accelerator
    )
    if mixed:
        raise ConfigError(
            [
                ConfigProblem(
                    path,
                    given,
                    f"{field} without other GPUs under the GPU name of {spec.accelerator}"
                    f" ({', '.join(sorted(n or '' for n in gpu_names))}), which the NodePool"
                    f" would admit with it: {', '.join(mixed)}; list the instance types in"
                    " instanceTypes instead",
                )
            ]
        )
    return {t.name: offered[t.name] for t in sizes}, sizes


def _raise_if_any(problems: Iterator[ConfigProblem]) -> None:
    found = list(problems)
    if found:
        raise ConfigError(found)


def _option_problems(spec: GpuPoolSpec, i: int) -> Iterator[ConfigProblem]:
    options = spec.aws
    # EC2 gives a gp3 volume at most 0.25 MiB/s of throughput per provisioned IOPS.
    if options.volume_throughput_mibps * 4 > options.volume_iops:
        yield ConfigProblem(
            key_path("pools", i, "aws", "volumeThroughputMibps"),
            options.volume_throughput_mibps,
            f"at most a quarter of volumeIops ({options.volume_iops // 4}), or more volumeIops",
        )


def _instance_type_problems(
    spec: GpuPoolSpec, i: int, instance_types: Sequence[InstanceType], karpenter: bool
) -> Iterator[ConfigProblem]:
    path, value = sizes_key(spec, i)
    unusable = [t for t in instance_types if t.gpu is None or t.architecture is None]
    if unusable:
        known = ", ".join(ACCELERATORS)
        described = "; ".join(f"{t.name} has {t.describe_gpus()}" for t in unusable)
        yield ConfigProblem(
            path,
            value,
            f"instance types with whole NVIDIA GPUs of a known model ({known}); {described}",
        )
        return
    # The cluster autoscaler builds a group's scale-from-zero node from its first instance type
    # only ("always use first instance", AwsManager.buildInstanceType in
    # cloudprovider/aws/aws_manager.go): every type of a pool must have that node's shape, or
    # pods are planned onto nodes that are larger or smaller than the ones that start.
    # Karpenter plans each pending pod against every allowed type's own capacity, so one NodePool
    # may offer several sizes; they share one GPU model, driver and CPU architecture, as the
    # pool's node labels, AMI alias and driver tables are the pool's.
    if karpenter:
        models = {(t.gpu.accelerator, t.architecture) for t in instance_types if t.gpu}
        if len(models) > 1:
            described = "; ".join(
                f"{t.name}: {t.describe_gpus()}, {t.architecture}" for t in instance_types
            )
            yield ConfigProblem(
                path,
                value,
                f"instance types of one GPU model and CPU architecture; {described}",
            )
            return
    shapes = {(t.gpu, t.architecture, t.vcpus, t.memory_mib) for t in instance_types}
    if not karpenter and len(shapes) > 1:
        described = "; ".join(
            f"{t.name}: {t.describe_gpus()}, {t.vcpus} vCPUs, {t.memory_mib} MiB, {t.architecture}"
            for t in instance_types
        )
        yield ConfigProblem(
            path,
            value,
            "instance types of one shape: the same GPUs, vCPUs, memory and CPU architecture (the"
            f" autoscaler plans a scale-up from zero with the first type's); {described}",
        )
        return
    first = instance_types[0]
    assert first.gpu is not None
    if spec.accelerator is not None and spec.accelerator != first.gpu.accelerator:
        yield ConfigProblem(
            key_path("pools", i, "accelerator"),
            spec.accelerator,
            f"{first.gpu.accelerator}, the GPU of {first.name} (or leave it out)",
        )
    other_count = next(
        (t for t in instance_types if t.gpu is not None and t.gpu.count != spec.gpus_per_node),
        None,
    )
    if spec.gpus_per_node is not None and other_count is not None:
        assert other_count.gpu is not None
        yield ConfigProblem(
            key_path("pools", i, "gpusPerNode"),
            spec.gpus_per_node,
            f"{other_count.gpu.count}, the GPUs of {other_count.name} (or leave it out)",
        )
    if isinstance(spec.sharing, MigSharing):
        problem = mig_problem(spec, first.gpu.accelerator, i)
        if problem is not None:
            yield problem


def _zones_and_subnets(
    spec: GpuPoolSpec,
    i: int,
    offered: dict[str, set[str]],
    subnets: Sequence[Subnet],
    names: Sequence[str],
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The pool's zones: where every one of `names` is offered, or for a pool of families or
    categories, where any is (Karpenter launches a size only where EC2 offers it, its
    `offerings`, pkg/providers/instancetype/offering)."""
    subnet_zones = {s.zone for s in subnets}
    unknown = sorted(set(spec.zones) - subnet_zones)
    if unknown:
        raise ConfigError(
            [
                ConfigProblem(
                    key_path("pools", i, "zones"),
                    spec.zones,
                    f"zones of the node subnets ({', '.join(sorted(subnet_zones))});"
                    f" no node subnet in {', '.join(unknown)}",
                )
            ]
        )
    wanted = set(spec.zones) or subnet_zones
    if spec.aws.flexible:
        usable = set().union(*(offered[name] for name in names)) & wanted
    else:
        usable = zones_offering_all(offered, names) & wanted
    if not usable:
        where = {name: sorted(offered[name] & wanted) for name in names}
        described = "; ".join(
            f"{name} in {', '.join(zones) or 'none of them'}" for name, zones in where.items()
        )
        zones_key = (key_path("pools", i, "zones"), spec.zones)
        path, value = zones_key if spec.zones else sizes_key(spec, i)
        raise ConfigError(
            [
                ConfigProblem(
                    path,
                    value,
                    f"a zone among {', '.join(sorted(wanted))} where every instance type of"
                    f" the pool is offered; EC2 offers {described}",
                )
            ]
        )
    subnet_ids = tuple(s.id for s in subnets if s.zone in usable)
    return tuple(sorted(usable)), subnet_ids


def _efa_problems(
    spec: GpuPoolSpec, i: int, instance_types: Sequence[InstanceType]
) -> Iterator[ConfigProblem]:
    if not spec.aws.efa:
        return
    without = [t.name for t in instance_types if not t.efa_interfaces]
    if without:
        yield ConfigProblem(
            *sizes_key(spec, i),
            f"instance types with EFA when aws.efa is on; without: {', '.join(without)}",
        )
        return
    # Every node of a pool launches with the one list of interfaces its launch template or
    # EC2NodeClass names, and Karpenter advertises that list's `efa-only` count, not the
    # instance type's (aws/karpenter-provider-aws v1.14.1, pkg/providers/launchtemplate/
    # launchtemplate.go `generateNetworkInterfaces`, pkg/providers/instancetype/types.go `efas`):
    # sized for one type, a larger one would run short of EFAs, a smaller one not launch.
    mixed = different_efa_counts({t.name: t.efa_interfaces for t in instance_types})
    if mixed is not None:
        yield ConfigProblem(*sizes_key(spec, i), EFA_COUNTS_EXPECTED + mixed)


def _per_zone_problems(spec: GpuPoolSpec, i: int, zones: Sequence[str]) -> Iterator[ConfigProblem]:
    if not spec.aws.node_group_per_zone:
        return
    if spec.max < len(zones):
        yield ConfigProblem(
            key_path("pools", i, "max"),
            spec.max,
            f"at least {len(zones)} with aws.nodeGroupPerZone: each of the pool's zones"
            f" ({', '.join(zones)}) gets a node group with a share of max, and a node group"
            " needs a max of 1 or more; or name fewer zones in zones",
        )
    longest = max(len(node_group_name_prefix(spec.name, zone)) for zone in zones)
    too_long = longest + NODE_GROUP_SUFFIX_LENGTH - NODE_GROUP_NAME_LIMIT
    if too_long > 0:
        yield ConfigProblem(
            key_path("pools", i, "name"),
            spec.name,
            f"a name of at most {len(spec.name) - too_long} characters with"
            " aws.nodeGroupPerZone: EKS node group names, made of the pool's name, its zone"
            f" and a suffix of {NODE_GROUP_SUFFIX_LENGTH}, are at most {NODE_GROUP_NAME_LIMIT}"
            " characters",
        )


def _node_group_problems(
    pool: ResolvedPool,
    cluster_name: str,
    idle_minutes: int,
    efa_interfaces: int,
    first: InstanceType,
) -> Iterator[ConfigProblem]:
    """Labels and taints EKS or the Auto Scaling group would refuse."""
    i = pool.index
    for key, value in pool.spec.labels.items():
        if len(key) > _EKS_LABEL_LIMIT or not value:
            yield ConfigProblem(
                key_path("pools", i, "labels", key),
                value,
                f"a key of at most {_EKS_LABEL_LIMIT} characters and a value that is not empty"
                " (EKS node group labels)",
            )
    for j, taint in enumerate(pool.spec.taints):
        if len(taint.key) > _EKS_LABEL_LIMIT:
            yield ConfigProblem(
                key_path("pools", i, "taints", j, "key"),
                taint.key,
                f"a key of at most {_EKS_LABEL_LIMIT} characters (EKS node group taints)",
            )
    tags = autoscaler_tags(
        eks_node_identity(pool, efa_interfaces),
        cluster_name,
        idle_minutes,
        pool.spec.disk_size_gib,
        kubelet_allocatable(first),
    )
    yield from autoscaler_tag_problems(pool, tags)


def _release_and_driver(
    spec: GpuPoolSpec, i: int, cluster: EksCluster, node_image: str, architecture: str
) -> tuple[str, NvidiaDriver]:
    """The pool's pinned AMI release, which config validation made sure it has, and its driver."""
    release = spec.aws.ami_release_version
    assert release is not None
    path = key_path("pools", i, "aws", "amiReleaseVersion")
    # An AL2023 release is built for one Kubernetes version, and EKS refuses a node group whose
    # kubelet is not the cluster's; Bottlerocket's release numbers are its own.
    if node_image == "al2023" and not release.startswith(f"{cluster.version}."):
        raise ConfigError(
            [
                ConfigProblem(
                    path,
                    release,
                    f"a release for Kubernetes {cluster.version}, the version of cluster"
                    f" {cluster.name}; {known_releases(node_image)}",
                )
            ]
        )
    driver = eks_driver(node_image, release, architecture, cluster.version)
    if driver is None:
        raise ConfigError(
            [
                ConfigProblem(
                    path,
                    release,
                    f"a release whose NVIDIA driver the platform knows, for {architecture} and"
                    f" Kubernetes {cluster.version}; {known_releases(node_image)}",
                )
            ]
        )
    return release, driver
