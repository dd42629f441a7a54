"""What a GPU node's kubelet offers pods: the instance's CPU, memory and pods less what the EKS
AMI's kubelet keeps back, which the node group's Auto Scaling group advertises to the cluster
autoscaler.

The autoscaler's AWS template of a node group at zero has the instance type's whole capacity as
its allocatable ("TODO: use proper allocatable!!", `buildNodeFromTemplate` in
cloudprovider/aws/aws_manager.go, cluster-autoscaler 1.33.6 to 1.36.1), and 110 pods ("TODO: get
a real value"), so a pod asking for a p5.48xlarge's 192 CPUs would start one that can never run
it. Its `node-template/resources/<name>` hints override that capacity, so the platform hints
what the kubelet will really offer, as nodeadm configures it (amazon-eks-ami
nodeadm/internal/kubelet/config.go, `withDefaultReservedResources`):

- pods: `maxPods`, from the ENIs of the instance's default network card (`max_pods`);
- CPU: less kube-reserved, 6% of the first core, 1% of the second, 0.5% of the third and fourth
  and 0.25% of the rest (`getCPUMillicoresToReserve`);
- memory: less kube-reserved, 11 MiB a pod and 255 MiB (`getMemoryMebibytesToReserve`), and the
  100Mi `memory.available` hard eviction threshold.

Bottlerocket reserves the same: its `kube_reserve_cpu` and `kube_reserve_memory` settings
helpers (bottlerocket-core-kit sources/api/schnauzer/src/helpers/mod.rs) take 60m for the first
core, 10m for the second, 5m for the third and fourth and 2.5m for each further one, rounded
down, and 11 MiB a pod and 255 MiB, the pods from its copy of EKS's eni-max-pods table
(`get_max_pods`, sources/api/pluto/src/main.rs); the 100Mi eviction threshold is the kubelet's
own default. The instance's memory as the kernel reports it is a little below EC2's
figure used here, so the hint can be a little high, never low: a pod at the very edge of a node
may still start one it does not fit, as before, but none that fits is refused.
"""

from gpu_platform.eks.instance_types import InstanceType
from gpu_platform.eks.max_pods import MAX_PODS

# (range start, range end, share reserved in hundredths of a percent), in millicores.
_CPU_RESERVED = ((0, 1000, 600), (1000, 2000, 100), (2000, 4000, 50), (4000, None, 25))
_EVICTION_MEMORY_MIB = 100


def kube_reserved_cpu_millicores(millicores: int) -> int:
    return sum(
        (min(millicores, end or millicores) - start) * share // 10000
        for start, end, share in _CPU_RESERVED
        if millicores > start
    )


def kubelet_allocatable(instance_type: InstanceType) -> dict[str, str]:
    """CPU, memory and pods a node of `instance_type` offers, as resource quantities; none where
    the AMI's instance data does not know the type (the autoscaler then plans with its
    capacity)."""
    max_pods = MAX_PODS.get(instance_type.name)
    if max_pods is None:
        return {}
    millicores = instance_type.vcpus * 1000
    memory_mib = instance_type.memory_mib - (11 * max_pods + 255) - _EVICTION_MEMORY_MIB
    return {
        "cpu": f"{millicores - kube_reserved_cpu_millicores(millicores)}m",
        "memory": f"{memory_mib}Mi",
        "pods": str(max_pods),
    }
