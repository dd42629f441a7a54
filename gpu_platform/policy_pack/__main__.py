"""The gpu-platform policy pack: Pod Security Standards and the GPU platform's rules.

The engine runs this file as `python -m pulumi.policy <engine-address> <pack-dir>`; the pack is
built only then, because constructing a `PolicyPack` starts its server and blocks. Importing
this file (as tests and tools do) only collects the policies.
"""

import conversions
import eks_cluster
import gke_clusters
import gpu_claims
import gpu_cuda
import gpu_operator_resources
import gpu_pools
import gpu_sharing
import gpu_stack
import gpu_workloads
import helm
import idle_gpu_pods
import judged_kind_patches
import karpenter_pools
import kubernetes_kinds
import namespaces
import pack_config
import platform_images
import pod_security
import preview
import queued_pod_sets
import queued_workloads
import validation_taint
import workload_kinds
from pulumi_policy import PolicyPack

NAME = "gpu-platform"

POLICIES = [
    *map(
        pack_config.watch_config,
        [
            *kubernetes_kinds.POLICIES,
            *pod_security.POLICIES,
            *namespaces.POLICIES,
            *gpu_workloads.POLICIES,
            *gpu_claims.POLICIES,
            *queued_workloads.POLICIES,
            *queued_pod_sets.POLICIES,
            *validation_taint.POLICIES,
            *gpu_sharing.POLICIES,
            *gpu_cuda.POLICIES,
            *idle_gpu_pods.POLICIES,
            *gpu_pools.POLICIES,
            *gke_clusters.POLICIES,
            *karpenter_pools.POLICIES,
            *eks_cluster.POLICIES,
            *helm.POLICIES,
            *gpu_operator_resources.POLICIES,
            *judged_kind_patches.POLICIES,
            *platform_images.POLICIES,
            *gpu_stack.POLICIES,
            workload_kinds.POLICY,
        ],
    ),
    # Last: they report what the policies before them met.
    pack_config.POLICY,
    *preview.POLICIES,
]

if __name__ == "__main__":
    conversions.share_conversions()
    pack_config.watch_pack_config(
        (policy.name for policy in POLICIES),
        {
            workload_kinds.NAME: workload_kinds.configure,
            gpu_pools.SCALING: gpu_pools.take_scaling_config,
            pod_security.NAME: pod_security.configure,
            helm.PLATFORM_ROLLBACK: helm.configure,
        },
    )
    PolicyPack(
        name=NAME,
        description="Pod Security Standards as the built-in admission checks them, and the rules "
        "that keep GPU pools, GPU workloads and the NVIDIA GPU Operator safe and affordable.",
        policies=POLICIES,
    )
