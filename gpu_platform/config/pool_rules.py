"""Rules across a pool's fields that hold on every cloud: unique names, sizes, labels and
taints the nodes can carry, MIG profiles the GPU has."""

from collections.abc import Iterator

from gpu_platform.accelerators import ACCELERATORS
from gpu_platform.config.fields import Cloud
from gpu_platform.config.pools import DRA_TAINT_KEY, GPU_TAINT_KEY, GpuPoolSpec, MigSharing
from gpu_platform.config.problems import ConfigProblem, key_path
from gpu_platform.config.set_aside import per_element
from gpu_platform.config.stack import StackConfig
from gpu_platform.kubernetes.node_validation.expectations import NCCL_TESTS_ACCELERATORS

# Labels the platform sets from the pool's description; a pool overriding one would break
# scheduling or the operator's per-node configuration.
_RESERVED_LABEL_PREFIXES = ("nvidia.com/", "gpu-platform.io/", "k8s.amazonaws.com/")
# A node's labels come from its kubelet (`--node-labels`), which refuses any in the kubernetes.io
# and k8s.io namespaces but those under kubelet.kubernetes.io/ and node.kubernetes.io/ and a few
# it sets itself (the kubelet's --node-labels reference), so the node would never register.
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


def pool_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    seen: dict[str, int] = {}

    def of_pool(i: int, pool: GpuPoolSpec) -> Iterator[ConfigProblem]:
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
            # every pool already, and its DRA taint on every DRA pool.
            if taint.key in (GPU_TAINT_KEY, DRA_TAINT_KEY):
                yield ConfigProblem(
                    key_path("pools", i, "taints", j, "key"),
                    taint.key,
                    f"a key other than {GPU_TAINT_KEY} and {DRA_TAINT_KEY} (the platform's own"
                    " taints of GPU nodes and of DRA pools' nodes)",
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
        if pool.validation.replacements_per_hour is not None and not config.uses_karpenter:
            yield ConfigProblem(
                key_path("pools", i, "validation", "replacementsPerHour"),
                pool.validation.replacements_per_hour,
                "no value without `provisioner: karpenter`: only Karpenter terminates the"
                " instance of a deleted Node, so a node group's or GKE node pool's failed node"
                " is never replaced by deleting it",
            )
        yield from _nccl_problems(pool, i)
        if isinstance(pool.sharing, MigSharing):
            yield from _mig_problems(pool, i)

    yield from per_element(config.pools, of_pool)


def _nccl_problems(pool: GpuPoolSpec, index: int) -> Iterator[ConfigProblem]:
    """Where the NCCL check cannot run though the pool gives it a bandwidth to reach."""
    bandwidth = pool.validation.expected_bus_bandwidth_gbps
    if bandwidth is None:
        return
    key = key_path("pools", index, "validation", "expectedBusBandwidthGbps")
    if isinstance(pool.sharing, MigSharing):
        # NVIDIA's MIG user guide ("CUDA Device Enumeration"): a CUDA process enumerates one
        # MIG device only, so one all-reduce process cannot span a node's GPUs.
        yield ConfigProblem(key, bandwidth, "no value on a MIG pool (`sharing.mode: mig`)")
    elif pool.accelerator is not None and pool.accelerator not in NCCL_TESTS_ACCELERATORS:
        yield ConfigProblem(
            key,
            bandwidth,
            f"no value on a {pool.accelerator} pool: the NCCL test's image has kernels for"
            f" {', '.join(sorted(NCCL_TESTS_ACCELERATORS))} only",
        )


# The NCCL test's image is built on CUDA 12.8.1 (versions.py NODE_VALIDATOR_NCCL_TESTS_IMAGE),
# whose toolkit requires a driver of branch 570 or later (CUDA 12.8 release notes, "CUDA Toolkit
# and Corresponding Driver Versions": 570.26 on Linux). The image drops CUDA's forward
# compatibility packages, and no run on an older branch under CUDA's minor version
# compatibility is recorded: an older driver would fail every node's nccl-bandwidth check.
NCCL_TESTS_MIN_DRIVER_BRANCH = 570


def nccl_driver_problem(pool: GpuPoolSpec, index: int, branch: int) -> ConfigProblem | None:
    """Where the pool runs the NCCL test on a driver of `branch`, too old for its image."""
    bandwidth = pool.validation.expected_bus_bandwidth_gbps
    if bandwidth is None or branch >= NCCL_TESTS_MIN_DRIVER_BRANCH:
        return None
    return ConfigProblem(
        key_path("pools", index, "validation", "expectedBusBandwidthGbps"),
        bandwidth,
        f"no value on a pool whose nodes run NVIDIA driver branch {branch}: the NCCL test's"
        f" image is built on CUDA 12.8, which needs branch {NCCL_TESTS_MIN_DRIVER_BRANCH} or"
        " later",
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
