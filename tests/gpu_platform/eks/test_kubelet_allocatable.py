"""What a GPU node's kubelet offers pods, as the node group's hints tell the autoscaler."""

from gpu_platform.eks.instance_types import Gpus, instance_type
from gpu_platform.eks.kubelet_allocatable import kube_reserved_cpu_millicores, kubelet_allocatable
from gpu_platform.offline.program import Plan

from .plans import asg_tags

P5 = instance_type("p5.48xlarge", 192, 2097152, ["x86_64"], [Gpus("NVIDIA", "H100", 8, 81559)])


def test_kube_reserved_cpu_is_nodeadms_share_of_each_range_of_cores() -> None:
    # getCPUMillicoresToReserve (amazon-eks-ami nodeadm/internal/kubelet/config.go): 6% of the
    # first core, 1% of the second, 0.5% of the third and fourth, 0.25% of the rest.
    assert kube_reserved_cpu_millicores(4000) == 60 + 10 + 10
    assert kube_reserved_cpu_millicores(192000) == 60 + 10 + 10 + 470


def test_bottlerocket_reserves_the_same_cpu_rounded_down() -> None:
    # kube_cpu_helper (bottlerocket-core-kit sources/api/schnauzer/src/helpers/mod.rs):
    # KUBE_RESERVE_4_CORES (80) plus 2.5 for each core past four, floored: 82m for 5 cores,
    # 550m for 192.
    assert kube_reserved_cpu_millicores(5000) == 82
    assert kube_reserved_cpu_millicores(192000) == 550


def test_a_p5_offers_its_cpus_memory_and_pods_less_the_kubelets_reserve() -> None:
    # maxPods 100: 2 ENIs on its default network card of 50 addresses
    # (instance-info.jsonl, calculateStandardMaxPods); memory less 11 MiB a pod and 255 MiB
    # (getMemoryMebibytesToReserve) and the 100Mi memory.available eviction threshold.
    assert kubelet_allocatable(P5) == {
        "cpu": "191450m",
        "memory": f"{2097152 - (11 * 100 + 255) - 100}Mi",
        "pods": "100",
    }


def test_an_instance_type_nodeadm_does_not_know_gets_no_hint() -> None:
    unknown = instance_type("p9.huge", 8, 65536, ["x86_64"], [Gpus("NVIDIA", "H100", 1, 81559)])

    assert kubelet_allocatable(unknown) == {}


def test_the_node_groups_hints_carry_them(dev_plan: Plan) -> None:
    tags = asg_tags(dev_plan)
    hint = "k8s.io/cluster-autoscaler/node-template/resources/"

    # g4dn.xlarge: 4 vCPUs, 16384 MiB, 29 pods (3 ENIs of 10 addresses).
    assert {k: tags[hint + k] for k in ("cpu", "memory", "pods")} == {
        "cpu": "3920m",
        "memory": "15710Mi",
        "pods": "29",
    }
