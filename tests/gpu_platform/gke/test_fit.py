"""The fit check for GKE pools: the node template GKE's autoscaler plans with at zero, built
from the node pool the program declares, against pods built by the public recipe."""

from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest

from gpu_platform.config import load_stack_config
from gpu_platform.fit import NodeTemplate, fits, fitting_pools, gke_node_template
from gpu_platform.gke.machine_types import gpu_shape
from gpu_platform.kubernetes.gpu_pod import gpu_pod_spec
from gpu_platform.node_identity import ResolvedPool, Taint, resolve_pool, sharer_for
from gpu_platform.offline.program import Plan
from tests.stack_variants import (
    FLEX_START_POOL,
    QUEUED_POOL,
    with_gke_capacity_pools,
    without_queues,
)

from .plans import NODE_POOL

# Its tests plan the GKE stack and its capacity pools again and again, and change the program
# only through its config.
pytestmark = pytest.mark.shared_plans

Config = dict[str, Any]
MIG_POOL = {
    "name": "a100-slices",
    "instanceTypes": ["a2-highgpu-1g"],
    "max": 2,
    "sharing": {"mode": "mig", "profile": "all-1g.5gb"},
}


def resolved(config: Config, name: str) -> ResolvedPool:
    stack = load_stack_config({k.split(":", 1)[1]: v for k, v in config.items()})
    index = next(i for i, p in enumerate(stack.pools) if p.name == name)
    spec = stack.pools[index]
    return resolve_pool(
        spec, index, gpu_shape(spec, index), sharer_for(stack.platform, spec.sharing)
    )


def templates(plan: Plan) -> list[NodeTemplate]:
    return [gke_node_template(pool.inputs, pool.name) for pool in plan.of_type(NODE_POOL)]


def test_template_has_the_pools_labels_and_taints_and_what_gke_adds(gke_plan: Plan) -> None:
    (template,) = templates(gke_plan)
    identity = gke_plan.outputs["pools"]["l4-shared"]
    assert template.pool == "l4-shared"
    assert identity["labels"].items() <= template.labels.items()
    assert {
        "cloud.google.com/gke-accelerator": "nvidia-l4",
        "cloud.google.com/gke-spot": "true",
        "node.kubernetes.io/instance-type": "g2-standard-8",
        "topology.kubernetes.io/region": "us-central1",
    }.items() <= template.labels.items()
    assert template.taints == tuple(Taint(**t) for t in identity["taints"])


def test_a_time_shared_template_counts_each_gpus_clients_as_gke_labels_them(
    gke_plan: Plan,
) -> None:
    # GKE's device plugin advertises maxSharedClientsPerGpu devices per GPU (manager.go).
    (template,) = templates(gke_plan)
    assert template.resources["nvidia.com/gpu"] == Decimal(4)
    assert {
        "cloud.google.com/gke-gpu-sharing-strategy": "time-sharing",
        "cloud.google.com/gke-max-shared-clients-per-gpu": "4",
    }.items() <= template.labels.items()


def test_an_exclusive_template_counts_the_machines_physical_gpus(
    gke_config: Config, plan_for: Callable[[Config], Plan]
) -> None:
    gke_config["gpu-platform:pools"][0]["sharing"] = {"mode": "exclusive"}
    (template,) = templates(plan_for(gke_config))
    assert template.resources["nvidia.com/gpu"] == Decimal(1)


def test_pod_from_the_public_recipe_fits_its_pool_at_zero(
    gke_config: Config, gke_plan: Plan
) -> None:
    pod = gpu_pod_spec(resolved(gke_config, "l4-shared"), "cuda:12", ["nvidia-smi"])
    (fit,) = fits(pod, templates(gke_plan))
    assert (fit.pool, fit.reasons) == ("l4-shared", ())


def test_a_gpu_pod_without_the_toleration_is_given_it_by_admission(
    gke_config: Config, gke_plan: Plan
) -> None:
    pod = gpu_pod_spec(resolved(gke_config, "l4-shared"), "cuda:12", ["nvidia-smi"])
    del pod["tolerations"]

    # GKE runs the ExtendedResourceToleration admission plugin: a pod asking for
    # nvidia.com/gpu gets `nvidia.com/gpu Exists NoSchedule`.
    (fit,) = fits(pod, templates(gke_plan))

    assert fit.reasons == ()


def test_a_pod_without_gpus_or_the_toleration_fits_no_pool(gke_plan: Plan) -> None:
    pod = {"containers": [{"name": "web", "image": "nginx"}]}

    (fit,) = fits(pod, templates(gke_plan))

    assert fit.reasons == (
        "TaintToleration: taint nvidia.com/gpu=present:NoSchedule is not tolerated",
    )


def test_cpu_and_memory_are_the_machines_less_gkes_reservations(gke_plan: Plan) -> None:
    (template,) = templates(gke_plan)

    # g2-standard-8: 8 vCPUs, 32 GiB (Compute Engine, "GPU machine types"). GKE keeps back
    # 90m of CPU and 25% of the first 4 GiB, 20% of the next 4, 10% of the next 8 and 6% of
    # the next 16 of memory (3.56 GiB), and 100 MiB for eviction (GKE's node allocatable).
    assert {k: template.resources[k] for k in ("cpu", "memory", "pods")} == {
        "cpu": Decimal("7.91"),
        "memory": Decimal(29022 * 2**20),
        "pods": Decimal(110),
    }


def test_an_a2_machines_cpu_and_memory_are_judged_less_gkes_reservations(
    gke_config: Config, plan_for: Callable[[Config], Plan]
) -> None:
    without_queues(gke_config)["gpu-platform:pools"].append(MIG_POOL)
    (template,) = [t for t in templates(plan_for(gke_config)) if t.pool == "a100-slices"]

    # a2-highgpu-1g: 12 vCPUs and 85 GB of 1024 MiB (gcloud compute machine-types list; Compute
    # Engine's "Accelerator-optimized machine family"). GKE keeps back 100m of CPU (6% of the
    # first core, 1% of the second, 0.5% of the next two, 0.25% of 8 more) and 6.74 GiB of
    # memory (1 + 0.8 + 0.8 of the first 16 GiB, 6% of the next 69), and 100 MiB for eviction.
    assert {k: template.resources[k] for k in ("cpu", "memory", "pods")} == {
        "cpu": Decimal("11.9"),
        "memory": Decimal(80038 * 2**20),
        "pods": Decimal(110),
    }
    assert template.complete


def test_a_mig_pool_scales_up_from_zero_for_a_partition(
    gke_config: Config, plan_for: Callable[[Config], Plan]
) -> None:
    # GKE partitions each A100 40GB into seven 1g.5gb devices, each one nvidia.com/gpu.
    without_queues(gke_config)["gpu-platform:pools"].append(MIG_POOL)
    plan = plan_for(gke_config)
    pod = gpu_pod_spec(resolved(gke_config, "a100-slices"), "cuda:12", ["nvidia-smi"])

    by_pool = {f.pool: f.reasons for f in fits(pod, templates(plan))}
    (template,) = [t for t in templates(plan) if t.pool == "a100-slices"]

    assert by_pool["a100-slices"] == ()
    assert template.resources["nvidia.com/gpu"] == Decimal(7)
    assert template.labels["cloud.google.com/gke-gpu-partition-size"] == "1g.5gb"


def test_a_queued_pools_template_has_the_taint_gke_adds_to_its_nodes(
    gke_config: Config, plan_for: Callable[[Config], Plan]
) -> None:
    # GKE adds "the cloud.google.com/gke-queued taint to the node pool" (its provisioningrequest
    # page); the pool itself declares only the GPU taint.
    plan = plan_for(with_gke_capacity_pools(gke_config))
    (template,) = [t for t in templates(plan) if t.pool == QUEUED_POOL]

    # The pool's validation taint too, which no verdict holds against a pod (a startup taint).
    assert template.taints == (
        Taint("nvidia.com/gpu", "present", "NoSchedule"),
        Taint(
            "startup-taint.cluster-autoscaler.kubernetes.io/gpu-validation", "pending", "NoSchedule"
        ),
        Taint("cloud.google.com/gke-queued", "true", "NoSchedule"),
    )


def test_a_pod_that_does_not_tolerate_the_queued_taint_fits_no_queued_pool(
    gke_config: Config, plan_for: Callable[[Config], Plan]
) -> None:
    config = with_gke_capacity_pools(gke_config)
    pod = gpu_pod_spec(resolved(config, QUEUED_POOL), "cuda:12", ["nvidia-smi"])

    by_pool = {f.pool: f.reasons for f in fits(pod, templates(plan_for(config)))}

    assert by_pool[QUEUED_POOL] == (
        "TaintToleration: taint cloud.google.com/gke-queued=true:NoSchedule is not tolerated",
    )


def test_flex_start_templates_have_the_label_gkes_guides_select_flex_start_nodes_by(
    gke_config: Config, plan_for: Callable[[Config], Plan]
) -> None:
    # Jobs select flex-start nodes by `cloud.google.com/gke-flex-start: "true"` in GKE's
    # flex-start and provisioningrequest guides.
    plan = plan_for(with_gke_capacity_pools(gke_config))
    pod = {
        "nodeSelector": {"cloud.google.com/gke-flex-start": "true"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
    }

    assert fitting_pools(pod, templates(plan)) == [FLEX_START_POOL]
