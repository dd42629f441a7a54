"""Every tenant namespace's quota caps every MIG slice of every GPU the platform knows, and no
more `nvidia.com/gpu` than its `gpuQuota` where a pool hands out whole GPUs, or its
`sharedGpuQuota` where pools only share them."""

from collections.abc import Callable

import pytest

from gpu_platform.offline.program import Plan, run_program
from gpu_platform.offline.stand_ins import aws as aws_stand_in
from gpu_platform.stack_files import stack_config
from tests.conftest import Config, dev_stack_config
from tests.repository import PROJECT
from tests.shared_plans import shared_plan

from .quota_invariants import QUOTA, quota_problems

# prod: h100-training hands out whole GPUs, a100-inference (and its canary) 1g.10gb slices.
PROD = stack_config("prod", PROJECT)


@pytest.fixture
def prod_plan(shared_plan_for: Callable[[Config], Plan]) -> Plan:
    return shared_plan_for(PROD)


def hard(plan: Plan, namespace: str) -> dict[str, str]:
    quota = next(r for r in plan.of_type(QUOTA) if r.inputs["metadata"]["namespace"] == namespace)
    hard: dict[str, str] = quota.inputs["spec"]["hard"]
    return hard


def test_prods_quotas_cap_what_its_pools_advertise(prod_plan: Plan) -> None:
    assert quota_problems(prod_plan, PROD) == []


def test_a_quota_that_leaves_an_advertised_slice_out_is_found(prod_plan: Plan) -> None:
    del hard(prod_plan, "ml-training")["requests.nvidia.com/mig-1g.10gb"]

    assert quota_problems(prod_plan, PROD) == [
        "namespace ml-training: requests.nvidia.com/mig-1g.10gb uncapped",
    ]


def test_a_quota_that_leaves_out_a_slice_no_pool_advertises_is_found(prod_plan: Plan) -> None:
    # No pool of prod is partitioned into 1g.10gb+me, but an admin may relabel an A100 node
    # `nvidia.com/mig.config=all-1g.10gb.me` (gpu-operator v26.7.0
    # assets/state-mig-manager/0400_configmap.yaml) and its device plugin then advertises it.
    del hard(prod_plan, "ml-inference")["requests.nvidia.com/mig-1g.10gb.me"]
    hard(prod_plan, "ml-training")["requests.nvidia.com/mig-7g.80gb"] = "1"

    assert quota_problems(prod_plan, PROD) == [
        "namespace ml-training: requests.nvidia.com/mig-7g.80gb 1 above its migQuota 0",
        "namespace ml-inference: requests.nvidia.com/mig-1g.10gb.me uncapped",
    ]


def test_a_gpu_cap_above_gpu_quota_beside_whole_gpus_is_found(prod_plan: Plan) -> None:
    hard(prod_plan, "ml-inference")["requests.nvidia.com/gpu"] = "1"

    assert quota_problems(prod_plan, PROD) == [
        "namespace ml-inference: requests.nvidia.com/gpu 1 lets pods take more whole GPUs of"
        " h100-training than gpuQuota 0"
    ]


def test_a_gpu_cap_above_shared_gpu_quota_where_pools_only_share_is_found(
    dev_plan: Plan,
) -> None:
    # dev: t4-shared alone, time-sliced; ml-sandbox sets sharedGpuQuota 8.
    hard(dev_plan, "ml-sandbox")["requests.nvidia.com/gpu"] = "9"

    assert quota_problems(dev_plan, dev_stack_config()) == [
        "namespace ml-sandbox: requests.nvidia.com/gpu 9 lets pods take more replicas of"
        " t4-shared than sharedGpuQuota 8"
    ]


def test_a_dra_pool_is_no_pool_of_shared_gpus() -> None:
    # dra-dev's pool advertises no nvidia.com/gpu: its tenant's gpuQuota of 2 stands, though
    # its sharedGpuQuota is none.
    plan = shared_plan("dra-dev")

    assert quota_problems(plan, stack_config("dra-dev", PROJECT)) == []


def test_an_nvidia_dra_class_uncapped_or_above_0_from_1_34_is_found(dev_plan: Plan) -> None:
    # The stand-in EKS cluster is at 1.35; dev has no DRA pool.
    del hard(dev_plan, "ml-sandbox")["gpu.nvidia.com.deviceclass.resource.k8s.io/devices"]
    hard(dev_plan, "ml-sandbox")["vfio.gpu.nvidia.com.deviceclass.resource.k8s.io/devices"] = "1"

    assert quota_problems(dev_plan, dev_stack_config()) == [
        "namespace ml-sandbox: gpu.nvidia.com.deviceclass.resource.k8s.io/devices uncapped",
        "namespace ml-sandbox: vfio.gpu.nvidia.com.deviceclass.resource.k8s.io/devices 1 above 0",
    ]


@pytest.mark.parametrize("version", ["1.34", "1.36"])
def test_on_auto_mode_a_gpu_class_held_below_the_gpus_a_namespace_may_ask_for_is_found(
    monkeypatch: pytest.MonkeyPatch, version: str
) -> None:
    # auto-dev has no DRA pool; ml-sandbox's gpuQuota is 4.
    monkeypatch.setattr(aws_stand_in, "STAND_IN_KUBERNETES_VERSION", version)
    config = stack_config("auto-dev", PROJECT)
    plan = run_program("auto-dev", config=config, project=PROJECT)
    assert quota_problems(plan, config) == []

    hard(plan, "ml-sandbox")["gpu.nvidia.com.deviceclass.resource.k8s.io/devices"] = "0"

    assert quota_problems(plan, config) == [
        "namespace ml-sandbox: gpu.nvidia.com.deviceclass.resource.k8s.io/devices 0, not its"
        " requests.nvidia.com/gpu 4"
    ]


def test_a_models_dra_class_above_gpu_quota_is_found() -> None:
    plan = shared_plan("dra-dev")
    # ml-team's gpuQuota is 2.
    hard(plan, "ml-team")["l4.gpu-platform.io.deviceclass.resource.k8s.io/devices"] = "3"

    assert quota_problems(plan, stack_config("dra-dev", PROJECT)) == [
        "namespace ml-team: l4.gpu-platform.io.deviceclass.resource.k8s.io/devices 3 above 2"
    ]


def test_a_cluster_before_1_34_needs_no_dra_class_caps() -> None:
    # The GKE stand-in's cluster runs 1.33.5-gke.1201000, where no claim is served.
    config = stack_config("gke-dev", PROJECT)

    assert quota_problems(shared_plan("gke-dev"), config) == []
