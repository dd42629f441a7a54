"""The stack policy that holds GPU pods to their pool's sharing mode, through the analyzer."""

from typing import Any

import pytest

from tests.gpu_platform.policy_pack.builders import (
    Analyze,
    eks_node_group,
    gke_node_pool,
    gpu_pod_spec,
    messages,
    select_pools,
    workload,
)

POLICY = "gpu-pods-match-pool-sharing"


def pool_with(labels: dict[str, str], *, gke: bool = False) -> Any:
    pool = gke_node_pool() if gke else eks_node_group()
    target = pool.inputs["nodeConfig"]["labels"] if gke else pool.inputs["labels"]
    target.update(labels)
    return pool


TIME_SLICED = {"gpu-platform.io/pool": "l4", "nvidia.com/device-plugin.config": "time-slicing-4"}
MPS = {"gpu-platform.io/pool": "l4", "nvidia.com/device-plugin.config": "mps-2"}
MIG = {
    "gpu-platform.io/pool": "l4",
    "nvidia.com/device-plugin.config": "mig-mixed",
    "nvidia.com/mig.config": "all-1g.10gb",
}


def on_pool(
    limits: dict[str, str], *, by_affinity: bool = False, pools: tuple[str, ...] = ("l4",)
) -> Any:
    spec = gpu_pod_spec()
    spec["containers"][0]["resources"] = {"limits": limits}
    select_pools(spec, *pools, by_affinity=by_affinity)
    return workload("Deployment", spec)


@pytest.mark.parametrize("labels", [TIME_SLICED, MPS], ids=["time-slicing", "mps"])
def test_two_replicas_of_a_shared_gpu_are_refused(analyze: Analyze, labels: dict[str, str]) -> None:
    deployment = on_pool({"nvidia.com/gpu": "2"})

    verdicts = analyze(pool_with(labels), deployment)

    (verdict,) = [v for v in verdicts if v.policy_name == POLICY]
    assert (verdict.enforcement_level, verdict.urn) == ("mandatory", deployment.urn)
    assert verdict.message.startswith(
        'container "app" asks for "2" nvidia.com/gpu '
        '(spec.template.spec.containers[0].resources.limits["nvidia.com/gpu"]) on pool "l4", '
        f"whose GPUs are shared ({labels['nvidia.com/device-plugin.config']})"
    )


def test_one_replica_of_a_shared_gpu_passes(analyze: Analyze) -> None:
    verdicts = analyze(pool_with(TIME_SLICED), on_pool({"nvidia.com/gpu": "1"}))

    assert messages(verdicts, POLICY) == []


def test_a_pool_chosen_by_required_affinity_is_held_to_its_mode(analyze: Analyze) -> None:
    verdicts = analyze(pool_with(TIME_SLICED), on_pool({"nvidia.com/gpu": "3"}, by_affinity=True))

    assert len(messages(verdicts, POLICY)) == 1


def test_a_pod_that_may_land_on_several_pools_is_held_to_each_pools_mode(
    analyze: Analyze,
) -> None:
    exclusive = eks_node_group(name="whole-nodes")
    exclusive.inputs["labels"].update(
        {"gpu-platform.io/pool": "whole", "nvidia.com/device-plugin.config": "exclusive"}
    )
    deployment = on_pool({"nvidia.com/gpu": "2"}, pools=("whole", "l4"))

    verdicts = analyze(exclusive, pool_with(TIME_SLICED), deployment)

    (message,) = messages(verdicts, POLICY)
    assert 'on pool "l4", whose GPUs are shared (time-slicing-4)' in message


def test_a_gke_pool_is_read_from_its_node_config(analyze: Analyze) -> None:
    verdicts = analyze(pool_with(TIME_SLICED, gke=True), on_pool({"nvidia.com/gpu": "2"}))

    assert len(messages(verdicts, POLICY)) == 1


def gke_shared_pool(**accelerator: Any) -> Any:
    pool = gke_node_pool()
    pool.inputs["nodeConfig"]["labels"]["gpu-platform.io/pool"] = "l4"
    pool.inputs["nodeConfig"]["guestAccelerators"][0].update(accelerator)
    return pool


def test_two_clients_of_a_gpu_gke_time_shares_are_refused(analyze: Analyze) -> None:
    # GKE's device plugin: "at most 1 nvidia.com/gpu can be requested on GPU nodes"
    # (container-engine-accelerators pkg/gpu/nvidia/gpusharing/gpusharing.go).
    sharing = {"gpuSharingStrategy": "TIME_SHARING", "maxSharedClientsPerGpu": 4}

    verdicts = analyze(gke_shared_pool(gpuSharingConfig=sharing), on_pool({"nvidia.com/gpu": "2"}))

    (message,) = messages(verdicts, POLICY)
    assert 'on pool "l4", whose GPUs are shared (GKE TIME_SHARING)' in message


def test_a_gke_partition_is_asked_for_as_a_gpu(analyze: Analyze) -> None:
    pool = gke_shared_pool(gpuPartitionSize="1g.5gb")

    assert messages(analyze(pool, on_pool({"nvidia.com/gpu": "2"})), POLICY) == []
    assert len(messages(analyze(pool, on_pool({"nvidia.com/mig-1g.5gb": "1"})), POLICY)) == 1


def test_whole_gpus_of_an_exclusive_pool_may_be_several(analyze: Analyze) -> None:
    exclusive = {"gpu-platform.io/pool": "l4", "nvidia.com/device-plugin.config": "exclusive"}

    verdicts = analyze(pool_with(exclusive), on_pool({"nvidia.com/gpu": "4"}))

    assert messages(verdicts, POLICY) == []


def test_a_whole_gpu_on_a_mig_pool_is_refused(analyze: Analyze) -> None:
    verdicts = analyze(pool_with(MIG), on_pool({"nvidia.com/gpu": "1"}))

    assert messages(verdicts, POLICY) == [
        'container "app" asks for nvidia.com/gpu '
        '(spec.template.spec.containers[0].resources.limits["nvidia.com/gpu"]) on pool "l4", '
        "whose nodes advertise no GPU resource but nvidia.com/mig-1g.10gb (mig-mixed), so it "
        "would stay pending. Fix: ask for nvidia.com/mig-1g.10gb."
    ]


def test_another_slice_than_the_mig_pools_own_is_refused(analyze: Analyze) -> None:
    verdicts = analyze(pool_with(MIG), on_pool({"nvidia.com/mig-3g.40gb": "1"}))

    assert len(messages(verdicts, POLICY)) == 1


def test_several_of_the_mig_pools_own_slice_pass(analyze: Analyze) -> None:
    verdicts = analyze(pool_with(MIG), on_pool({"nvidia.com/mig-1g.10gb": "2"}))

    assert messages(verdicts, POLICY) == []


def test_a_pod_selecting_no_pool_of_the_stack_is_not_judged_here(analyze: Analyze) -> None:
    deployment = on_pool({"nvidia.com/gpu": "2"})
    deployment.inputs["spec"]["template"]["spec"]["nodeSelector"] = {"gpu-platform.io/pool": "x"}

    verdicts = analyze(pool_with(TIME_SLICED), deployment)

    assert messages(verdicts, POLICY) == []
