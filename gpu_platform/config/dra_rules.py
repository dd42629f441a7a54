"""Rules of DRA pools (`allocation: dra`): where NVIDIA's DRA driver can serve a pool's GPUs and
the provisioner can scale it, and which of the platform's GPU pods could never run there.

What the pinned provisioners do with a pod that claims devices:
- cluster-autoscaler (1.34.5 to 1.36.1, gpu_platform/versions.py) simulates ResourceClaims with
  `--enable-dynamic-resource-allocation` (off by default at 1.34, locked on from 1.35:
  config/flags/flags.go), but plans a node group from zero with the ASG's template node, which
  the AWS provider builds without ResourceSlices (cloudprovider/aws/aws_cloud_provider.go,
  `TemplateNodeInfo`: `framework.NewNodeInfo(node, nil, ...)`): a pod claiming a GPU fits no
  node it would start. A running node of the group is its template instead, its slices
  included (processors/nodeinfosprovider/mixed_nodeinfos_processor.go), so a DRA pool keeps
  one.
- Karpenter 1.14.1 ignores pods' DRA requests unless `settings.ignoreDRARequests` is turned
  off ("will be removed once formal DRA support is GA": kubernetes-sigs/karpenter
  pkg/operator/options/options.go), and its AWS provider describes no instance type's devices
  (aws/karpenter-provider-aws v1.14.1, no `DynamicResources`): it cannot size a node for a
  claim.
- GKE's autoscaler knows DRA GPUs by the label GKE itself sets on node pools it prepares for
  NVIDIA's DRA driver (`cloud.google.com/gke-gpu-dra-driver`: cluster-autoscaler
  cloudprovider/gce/dynamicresources.go), which the platform's GKE node pools do not do yet.
"""

from collections.abc import Iterator

from gpu_platform.config.fields import Cloud
from gpu_platform.config.pools import ExclusiveSharing, GpuPoolSpec
from gpu_platform.config.problems import ConfigProblem, key_path
from gpu_platform.config.stack import StackConfig

DRA = "dra"
DRA_MIN_KUBERNETES = (1, 34)
"""resource.k8s.io/v1, DRA's GA API, is served from Kubernetes 1.34."""


def dra_pools(config: StackConfig) -> list[tuple[int, GpuPoolSpec]]:
    """The pools with `allocation: dra`, each with its index in `pools`."""
    return [(i, pool) for i, pool in enumerate(config.pools) if pool.allocation == DRA]


def dra_version_problems(config: StackConfig, version: str, source: str) -> Iterator[ConfigProblem]:
    """DRA pools on a cluster at Kubernetes `version` (`1.33`), as `source` names it."""
    major, minor = (int(part) for part in version.split(".")[:2])
    if (major, minor) >= DRA_MIN_KUBERNETES:
        return
    for i, _ in dra_pools(config):
        yield ConfigProblem(
            key_path("pools", i, "allocation"),
            DRA,
            f"device-plugin, or no value, on Kubernetes {version} ({source}): dra needs"
            " Kubernetes 1.34 or later, where resource.k8s.io/v1 is served",
        )


def dra_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    pools = dra_pools(config)
    if not pools:
        return
    if config.cluster.create is not None:
        yield from dra_version_problems(
            config, config.cluster.create.kubernetes_version, "cluster.create.kubernetesVersion"
        )
    for i, pool in pools:
        yield from _pool_problems(config, i, pool)
    yield from _mixed_problems(config, pools)
    named = {pool.name: i for i, pool in pools}
    for i, pool in enumerate(config.pools):
        if pool.canary_of is not None and (pool.canary_of in named or pool.name in named):
            # The canary's gate Job asks for `nvidia.com/gpu` (gpu_platform/kubernetes/gpu_pod.py).
            yield ConfigProblem(
                key_path("pools", i, "canaryOf"),
                pool.canary_of,
                "no canary of or on a DRA pool (`allocation: dra`): the canary's gate Job asks"
                " for nvidia.com/gpu, which no device plugin advertises on a DRA pool's nodes",
            )
    for i, namespace in enumerate(config.namespaces):
        if namespace.smoke_test_pool in named:
            yield ConfigProblem(
                key_path("namespaces", i, "smokeTestPool"),
                namespace.smoke_test_pool,
                "a pool with `allocation: device-plugin`: the smoke test asks for"
                " nvidia.com/gpu, which no device plugin advertises on a DRA pool's nodes",
            )
    if config.queues.enabled:
        yield ConfigProblem(
            key_path("queues", "enabled"),
            True,
            f"false with a DRA pool (pools[{pools[0][0]}]): the tenants' ClusterQueues count"
            " nvidia.com/gpu, which a DRA pool's pods do not ask for, so Kueue would admit"
            " their claims uncounted",
        )


def _pool_problems(config: StackConfig, i: int, pool: GpuPoolSpec) -> Iterator[ConfigProblem]:
    if config.cloud is Cloud.GCP:
        yield ConfigProblem(
            key_path("pools", i, "allocation"),
            DRA,
            "device-plugin, or no value, on GKE: GKE's autoscaler scales DRA GPUs only on node"
            " pools GKE prepares for NVIDIA's DRA driver, which the platform's are not yet"
            " (docs/dra.md)",
        )
        return
    if config.uses_auto_mode:
        # Auto Mode's nodes run AWS's own NVIDIA device plugin, and from Kubernetes 1.36 its own
        # NVIDIA DRA driver, with no setting to hand a node's GPUs to another one
        # (awsdocs/amazon-eks-user-guide latest/ug/ml/device-management.adoc, "EKS Auto Mode").
        yield ConfigProblem(
            key_path("pools", i, "allocation"),
            DRA,
            "device-plugin, or no value, with provisioner eks-auto-mode: Auto Mode's nodes run"
            " AWS's own NVIDIA device plugin, and NVIDIA's DRA driver installed by the platform"
            " would be a second one on the same GPUs (docs/eks-auto-mode.md)",
        )
        return
    if config.uses_karpenter:
        yield ConfigProblem(
            key_path("pools", i, "allocation"),
            DRA,
            "device-plugin, or no value, with provisioner karpenter: Karpenter 1.14.1 ignores"
            " pods' DRA claims when it sizes nodes (docs/dra.md)",
        )
        return
    if config.node_image != "al2023":
        yield ConfigProblem(
            key_path("pools", i, "allocation"),
            DRA,
            f"device-plugin, or no value, on {config.node_image} nodes: NVIDIA's DRA driver runs"
            " on the EKS AL2023 NVIDIA AMI (`cluster.nodeImage: al2023`), whose driver it reads"
            " from the host",
        )
    if not isinstance(pool.sharing, ExclusiveSharing):
        yield ConfigProblem(
            key_path("pools", i, "sharing", "mode"),
            pool.sharing.mode,
            "exclusive, or no value, with `allocation: dra`: the DRA driver shares a GPU"
            " between the pods of one claim, and time-slicing and MPS only under its alpha"
            " feature gates; MIG slices there are not made by the platform yet (docs/dra.md)",
        )
    if pool.min < 1:
        yield ConfigProblem(
            key_path("pools", i, "min"),
            pool.min,
            "at least 1 with `allocation: dra`: the cluster autoscaler plans a node group from"
            " zero with a template node carrying no DRA devices, so a pod claiming a GPU would"
            " never start the first node; a running node of the pool is its template instead"
            " (docs/dra.md)",
        )


def _mixed_problems(
    config: StackConfig, pools: list[tuple[int, GpuPoolSpec]]
) -> Iterator[ConfigProblem]:
    """DRA pools beside device-plugin pools. The GPU Operator's validator waits on every node
    for the device plugin's `nvidia.com/gpu` or `nvidia.com/mig-*` and fails without it
    (gpu-operator v26.7.0 cmd/nvidia-validator/main.go, `validateGPUResource`); it skips that
    check only with the device plugin off cluster-wide (controllers/object_controls.go, the
    validator's `plugin` init container), so on a DRA node beside device-plugin pools it would
    restart forever. No per-node switch helps: `nvidia.com/gpu.deploy.operator-validator=false`
    removes the whole validator, whose `toolkit-ready` file the DCGM exporter's init container
    waits for (assets/state-dcgm-exporter/0800_daemonset.yaml)."""
    plugin = [(i, pool) for i, pool in enumerate(config.pools) if pool.allocation != DRA]
    if not plugin:
        return
    j, other = plugin[0]
    for i, _ in pools:
        yield ConfigProblem(
            key_path("pools", i, "allocation"),
            DRA,
            f"device-plugin, as pools[{j}] ({other.name}) uses, or dra on every pool: the GPU"
            " Operator's validator checks every node for the device plugin's nvidia.com/gpu"
            " unless the device plugin is off for the whole cluster, and would never be ready"
            " on a DRA node beside device-plugin pools (docs/dra.md)",
        )
