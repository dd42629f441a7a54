"""The fit check: which pools a pod fits, judged against the node templates the autoscaler
builds for pools at zero (EKS: from the plan's Auto Scaling group hints and instance types)."""

import copy
from dataclasses import replace
from decimal import Decimal
from typing import Any

import pytest

from gpu_platform.config import load_stack_config
from gpu_platform.eks.instance_types import Gpus, InstanceType, instance_type
from gpu_platform.fit import (
    Fit,
    NodeTemplate,
    admitted,
    auto_mode_node_templates,
    capacity_bound,
    fits,
    fitting_pools,
    format_quantity,
    karpenter_node_templates,
    pod_requests,
    quantity,
    template_requests,
    unknown_labels_named,
    with_template_pods,
)
from gpu_platform.kubernetes.gpu_pod import gpu_pod_spec
from gpu_platform.node_identity import GPU_TAINT, GpuShape, ResolvedPool, Taint, resolve_pool
from gpu_platform.offline.fit import node_templates
from gpu_platform.offline.program import run_program
from gpu_platform.pod_specs import pod_spec_of
from gpu_platform.stack_files import stack_config
from gpu_platform.template_pods import KUBE_PROXY, TemplatePod
from tests.shared_plans import shared_plan
from tests.stack_variants import AL2023_RELEASE, with_whole_gpu_quota, without_queues

IMAGE = "nvcr.io/nvidia/cuda:12.8.1-base-ubuntu24.04"
ZONE = "topology.kubernetes.io/zone"
# Pools of three kinds beside the dev stack's time-sliced T4s: whole L4s, and A100 80GB
# partitioned into 1g.10gb MIG slices.
EXTRA_POOLS = [
    {
        "name": "l4",
        "instanceTypes": ["g6.xlarge"],
        "max": 2,
        "aws": {"amiReleaseVersion": AL2023_RELEASE},
    },
    {
        "name": "a100-mig",
        "instanceTypes": ["p4de.24xlarge"],
        "max": 1,
        "sharing": {"mode": "mig", "strategy": "mixed", "profile": "all-1g.10gb"},
        "aws": {"amiReleaseVersion": AL2023_RELEASE},
    },
]
GPU_SHAPES = {
    "t4-shared": GpuShape("t4", 1),
    "l4": GpuShape("l4", 1),
    "a100-mig": GpuShape("a100-80gb", 8),
}


@pytest.fixture(scope="module")
def stack() -> dict[str, Any]:
    config = copy.deepcopy(stack_config("dev"))
    config["gpu-platform:pools"] += EXTRA_POOLS
    # Whole L4s beside the time-sliced T4s: gpuQuota caps both, each replica counted as a GPU.
    return without_queues(with_whole_gpu_quota(config))


@pytest.fixture(scope="module")
def templates(stack: dict[str, Any]) -> list[NodeTemplate]:
    return node_templates(run_program("dev", config=stack))


@pytest.fixture(scope="module")
def pools(stack: dict[str, Any]) -> dict[str, ResolvedPool]:
    raw = {k.removeprefix("gpu-platform:"): v for k, v in stack.items() if "gpu-platform:" in k}
    config = load_stack_config(raw)
    return {
        spec.name: resolve_pool(spec, i, GPU_SHAPES[spec.name])
        for i, spec in enumerate(config.pools)
    }


def gpu_tolerating_pod(**resources: str) -> dict[str, Any]:
    return {
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "containers": [{"name": "main", "image": IMAGE, "resources": {"limits": resources}}],
    }


# --- The three cases the platform promises ---------------------------------------------------


@pytest.mark.parametrize("pool", list(GPU_SHAPES))
def test_the_restricted_smoke_test_pod_fits_exactly_its_pool(
    templates: list[NodeTemplate], pools: dict[str, ResolvedPool], pool: str
) -> None:
    pod = gpu_pod_spec(pools[pool], IMAGE, ["nvidia-smi"], restart_policy="Never")

    assert fitting_pools(pod, templates) == [pool]


def test_a_pod_asking_for_a_mig_slice_fits_only_the_mig_pool(
    templates: list[NodeTemplate],
) -> None:
    pod = gpu_tolerating_pod(**{"nvidia.com/mig-1g.10gb": "1"})

    assert fitting_pools(pod, templates) == ["a100-mig"]


def test_the_mig_pools_startup_taint_is_left_out_as_the_autoscaler_leaves_it(
    templates: list[NodeTemplate],
) -> None:
    (mig,) = [t for t in templates if t.pool == "a100-mig"]
    startup = Taint(
        "startup-taint.cluster-autoscaler.kubernetes.io/mig-config", "pending", "NoSchedule"
    )

    # The template carries it from the group's hints; SanitizeTaints (utils/taints/taints.go,
    # cluster-autoscaler-1.35.2) drops it from every template, expecting it gone once the node
    # is up, so a pod that does not tolerate it still scales the pool up.
    assert startup in mig.taints
    assert fits(gpu_tolerating_pod(**{"nvidia.com/mig-1g.10gb": "1"}), [mig])[0].fits


VALIDATION_TAINT = Taint(
    "startup-taint.cluster-autoscaler.kubernetes.io/gpu-validation",
    "pending",
    "NoSchedule",
)


@pytest.mark.parametrize(
    ("stack_name", "in_templates"),
    [("dev", True), ("gke-dev", True), ("karpenter-dev", False)],
)
def test_the_validation_taint_changes_no_verdict(stack_name: str, in_templates: bool) -> None:
    templates = node_templates(shared_plan(stack_name))
    untainted = [
        replace(t, taints=tuple(x for x in t.taints if x != VALIDATION_TAINT)) for t in templates
    ]
    pod = gpu_tolerating_pod(**{"nvidia.com/gpu": "1"})

    # Every pool's nodes join with it, and no pod tolerates it. The cluster autoscaler drops a
    # startup taint from its templates (`SanitizeTaints`, utils/taints/taints.go, called from
    # `SanitizedTemplateNodeInfoFromNodeGroup`, simulator/node_info_utils.go, cluster-autoscaler-
    # 1.35.2); Karpenter leaves a NodePool's `startupTaints` out of what a pod must tolerate
    # (kubernetes-sigs/karpenter v1.14.1 pkg/controllers/provisioning/scheduling/nodeclaim.go
    # line 126, `CanAdd`, which checks `Taints` alone), so its templates never carry it.
    assert any(VALIDATION_TAINT in t.taints for t in templates) is in_templates
    verdicts = fits(pod, templates)
    assert verdicts == fits(pod, untainted)
    assert any(verdict.fits for verdict in verdicts)


def test_an_ordinary_pod_without_the_toleration_fits_no_gpu_pool(
    templates: list[NodeTemplate],
) -> None:
    pod = {
        "containers": [{"name": "web", "image": "nginx", "resources": {"requests": {"cpu": "1"}}}]
    }

    results = fits(pod, templates)

    assert [r.pool for r in results] == ["t4-shared", "l4", "a100-mig"]
    assert all(
        r.reasons == ("TaintToleration: taint nvidia.com/gpu=present:NoSchedule is not tolerated",)
        for r in results
    )


# --- What the templates hold -------------------------------------------------------------------


def test_templates_carry_the_pools_node_identity(
    templates: list[NodeTemplate], pools: dict[str, ResolvedPool]
) -> None:
    by_pool = {t.pool: t for t in templates}

    for name, pool in pools.items():
        template = by_pool[name]
        assert pool.identity.labels.items() <= template.labels.items()
        assert template.taints == pool.identity.taints
        assert {k: template.resources[k] for k in pool.identity.resources} == {
            k: Decimal(v) for k, v in pool.identity.resources.items()
        }


def test_templates_know_the_first_instance_types_cpu_memory_and_architecture(
    templates: list[NodeTemplate],
) -> None:
    t4 = next(t for t in templates if t.pool == "t4-shared")

    # g4dn.xlarge: 4 vCPUs, 16 GiB, 29 pods (3 ENIs of 10 addresses), less nodeadm's
    # kube-reserved (80m; 11Mi a pod and 255Mi) and the 100Mi eviction threshold
    # (amazon-eks-ami nodeadm/internal/kubelet/config.go), as the group's hints tell the
    # autoscaler: 3920m and 15710Mi.
    assert (t4.resources["cpu"], t4.resources["memory"], t4.resources["pods"]) == (
        Decimal("3.92"),
        Decimal(15710 * 2**20),
        Decimal(29),
    )
    assert t4.labels["kubernetes.io/arch"] == "amd64"
    assert t4.labels["node.kubernetes.io/instance-type"] == "g4dn.xlarge"


def test_a_pod_asking_for_more_than_a_node_has_fits_nowhere_and_says_why(
    templates: list[NodeTemplate],
) -> None:
    pod = gpu_tolerating_pod(**{"nvidia.com/gpu": "5", "cpu": "8"})

    t4 = next(f for f in fits(pod, templates) if f.pool == "t4-shared")

    assert fitting_pools(pod, templates) == []
    assert t4.reasons == (
        "NodeResourcesFit: asks for 5 nvidia.com/gpu; a node has 4",
        # The autoscaler's kube-proxy (100m), the EKS add-ons' DaemonSets and the
        # node-feature-discovery worker (295m in all, fit_cases.yaml) are on the template first.
        "NodeResourcesFit: asks for 8 cpu; a node has 3920m, 295m of it for the template's own"
        " pods",
        # The pool is time-sliced: the device plugin hands out one replica a container
        # (failRequestsGreaterThanOne, k8s-device-plugin v0.20.0 internal/rm/rm.go).
        "device plugin: container main asks for 5 nvidia.com/gpu; the pool's device plugin"
        " hands shared GPUs out 1 a container: a node would start, and the kubelet then refuse"
        " the pod (UnexpectedAdmissionError)",
    )


def test_an_init_container_asking_for_two_shared_gpus_is_refused_by_the_device_plugin(
    templates: list[NodeTemplate],
) -> None:
    # The kubelet's device manager allocates devices to init containers as to the others, and
    # the time-sliced pool's device plugin refuses a request of more than one replica
    # (failRequestsGreaterThanOne, k8s-device-plugin v0.20.0 internal/rm/rm.go ValidateRequest).
    pod = gpu_tolerating_pod(**{"nvidia.com/gpu": "1"})
    pod["initContainers"] = [
        {"name": "warm", "image": IMAGE, "resources": {"limits": {"nvidia.com/gpu": "2"}}}
    ]

    t4 = next(f for f in fits(pod, templates) if f.pool == "t4-shared")

    assert not t4.fits
    assert t4.reasons[0].startswith("device plugin: container warm asks for 2 nvidia.com/gpu")


@pytest.mark.parametrize(
    ("terms", "fits_"),
    [
        ([[{"key": "k8sVersion", "operator": "Exists"}]], False),
        (
            [
                [{"key": "k8sVersion", "operator": "Exists"}],
                [{"key": "gpu-platform.io/pool", "operator": "In", "values": ["t4-shared"]}],
            ],
            True,
        ),
    ],
)
def test_a_pod_that_needs_a_label_only_the_autoscalers_template_has_fits_no_node(
    templates: list[NodeTemplate], terms: list[list[dict[str, Any]]], fits_: bool
) -> None:
    # getManagedNodegroupInfo (aws_wrapper.go, cluster-autoscaler-1.35.2) adds `k8sVersion` to
    # the template; EKS's nodes do not carry it, so the node started would never take the pod.
    # A term that another label satisfies leaves the pod a way onto the real node.
    pod = gpu_tolerating_pod(**{"nvidia.com/gpu": "1"})
    pod["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": term} for term in terms]
            }
        }
    }

    t4 = next(f for f in fits(pod, templates) if f.pool == "t4-shared")

    assert t4.fits is fits_
    assert fits_ or t4.reasons[0].startswith("NodeAffinity: needs the label k8sVersion")


def test_ephemeral_storage_fits_within_what_a_nodes_kubelet_offers(
    templates: list[NodeTemplate], pools: dict[str, ResolvedPool]
) -> None:
    # g4dn.xlarge keeps pods' data on its 200 GiB volume: 178Gi after the kubelet's reserve and
    # eviction threshold. Without the hint the autoscaler's template has none, and such a pod
    # never scales a pool up (kubernetes/autoscaler#1650).
    pod = gpu_pod_spec(pools["t4-shared"], IMAGE, ["x"], requests={"ephemeral-storage": "100Gi"})
    too_big = gpu_pod_spec(
        pools["t4-shared"], IMAGE, ["x"], requests={"ephemeral-storage": "180Gi"}
    )

    assert fitting_pools(pod, templates) == ["t4-shared"]
    (t4,) = [f for f in fits(too_big, templates) if f.pool == "t4-shared"]
    assert t4.reasons == ("NodeResourcesFit: asks for 180Gi ephemeral-storage; a node has 178Gi",)


def test_ephemeral_storage_on_local_nvme_is_the_drives_size_less_the_kubelets_share(
    templates: list[NodeTemplate], pools: dict[str, ResolvedPool]
) -> None:
    # g6.xlarge has a 250 GB NVMe drive (232 GiB), at least the 200 GiB asked for: the kubelet
    # keeps pods' data there, and 206Gi of it is offered.
    fits_nvme = gpu_pod_spec(pools["l4"], IMAGE, ["x"], requests={"ephemeral-storage": "200Gi"})
    too_big = gpu_pod_spec(pools["l4"], IMAGE, ["x"], requests={"ephemeral-storage": "210Gi"})

    assert fitting_pools(fits_nvme, templates) == ["l4"]
    (l4,) = [f for f in fits(too_big, templates) if f.pool == "l4"]
    assert l4.reasons == ("NodeResourcesFit: asks for 210Gi ephemeral-storage; a node has 206Gi",)


def test_a_node_selector_for_another_pool_is_reported(templates: list[NodeTemplate]) -> None:
    pod = {**gpu_tolerating_pod(), "nodeSelector": {"gpu-platform.io/pool": "l4"}}

    t4 = next(f for f in fits(pod, templates) if f.pool == "t4-shared")

    assert t4.reasons == (
        "NodeAffinity: nodeSelector gpu-platform.io/pool=l4: its nodes have"
        " gpu-platform.io/pool=t4-shared",
    )


# --- The scheduler's rules, on a hand-made template ---------------------------------------------

TEMPLATE = NodeTemplate(
    pool="p",
    labels={"zone": "a", "gen": "5"},
    taints=(GPU_TAINT, Taint("soft", "", "PreferNoSchedule"), Taint("evict", "yes", "NoExecute")),
    resources={"nvidia.com/gpu": Decimal(2), "cpu": Decimal(8)},
)
TOLERATE_ALL = [{"operator": "Exists"}]


@pytest.mark.parametrize(
    ("tolerations", "fits_"),
    [
        (TOLERATE_ALL, True),
        ([{"key": "nvidia.com/gpu", "operator": "Exists"}], False),
        (
            [
                {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
                {"key": "evict", "operator": "Equal", "value": "yes"},
            ],
            True,
        ),
        (
            [
                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"},
                {"key": "evict", "operator": "Exists"},
            ],
            False,
        ),
        (
            [
                {"key": "nvidia.com/gpu", "value": "absent", "effect": "NoSchedule"},
                {"key": "evict", "operator": "Exists"},
            ],
            False,
        ),
    ],
)
def test_tolerations_must_cover_every_repelling_taint(
    tolerations: list[dict[str, str]], fits_: bool
) -> None:
    pod = {"tolerations": tolerations, "containers": [{"name": "c"}]}

    assert bool(fitting_pools(pod, [TEMPLATE])) is fits_


@pytest.mark.parametrize(
    ("expressions", "fits_"),
    [
        ([{"key": "zone", "operator": "In", "values": ["a", "b"]}], True),
        ([{"key": "zone", "operator": "NotIn", "values": ["a"]}], False),
        ([{"key": "gen", "operator": "Gt", "values": ["4"]}], True),
        ([{"key": "gen", "operator": "Lt", "values": ["5"]}], False),
        ([{"key": "spot", "operator": "DoesNotExist"}], True),
        ([{"key": "spot", "operator": "Exists"}], False),
    ],
)
def test_required_node_affinity_must_match(expressions: list[dict[str, Any]], fits_: bool) -> None:
    pod = {
        "tolerations": TOLERATE_ALL,
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": expressions}]
                }
            }
        },
        "containers": [{"name": "c"}],
    }

    assert bool(fitting_pools(pod, [TEMPLATE])) is fits_


def test_any_of_several_affinity_terms_may_match() -> None:
    terms = [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]},
        {"matchExpressions": [{"key": "gen", "operator": "In", "values": ["5"]}]},
    ]
    required = {"nodeSelectorTerms": terms}
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}
    pod = {"tolerations": TOLERATE_ALL, "affinity": affinity, "containers": [{"name": "c"}]}

    assert fitting_pools(pod, [TEMPLATE]) == ["p"]


def pod_with(resources: dict[str, Any]) -> dict[str, Any]:
    return {"tolerations": TOLERATE_ALL, "containers": [{"name": "c", "resources": resources}]}


def test_a_resource_a_complete_template_lacks_counts_as_none() -> None:
    # As in the autoscaler's simulation: a template node without the resource has none of it.
    memory = pod_with({"requests": {"memory": "1Gi"}})
    fpga = pod_with({"limits": {"example.com/fpga": "1"}})

    assert fits(memory, [TEMPLATE])[0].reasons == (
        "NodeResourcesFit: asks for 1Gi memory; its nodes advertise none",
    )
    assert fits(fpga, [TEMPLATE])[0].reasons == (
        "NodeResourcesFit: asks for 1 example.com/fpga; its nodes advertise none",
    )


def test_a_template_that_does_not_know_the_machines_allocatable_judges_only_the_rest() -> None:
    # A GKE template built offline: the machine type's CPU and memory are not known.
    unknowing = replace(TEMPLATE, complete=False)
    memory_only = pod_with({"requests": {"memory": "1Ti"}})
    fpga = pod_with({"limits": {"example.com/fpga": "1"}})

    assert fitting_pools(memory_only, [unknowing]) == ["p"]
    assert fits(fpga, [unknowing])[0].reasons == (
        "NodeResourcesFit: asks for 1 example.com/fpga; its nodes advertise none",
    )


def test_pod_requests_sum_containers_and_take_the_largest_init_container() -> None:
    pod = {
        "initContainers": [{"resources": {"requests": {"cpu": "3"}}}],
        "containers": [
            {"resources": {"requests": {"cpu": "500m"}, "limits": {"nvidia.com/gpu": "1"}}},
            {"resources": {"limits": {"cpu": "1", "nvidia.com/gpu": "1"}}},
        ],
    }

    assert pod_requests(pod) == {"cpu": Decimal(3), "nvidia.com/gpu": Decimal(2)}


# PodRequests: k8s.io/component-helpers resource/helpers.go at v0.35.6, the version
# cluster-autoscaler-1.35.2's go.mod pins (and Karpenter v1.14.1's resources.Ceiling calls).


def test_a_sidecar_adds_to_the_containers_and_to_every_init_container_after_it() -> None:
    # AggregateContainerRequests: a restartable init container adds to the steady sum and to
    # restartableInitContainerReqs, which each later init container's requests include; the
    # pod needs the larger of the sum and the largest init container: max(1 + 0.5, 2 + 0.5).
    pod: dict[str, Any] = {
        "initContainers": [
            {"name": "before", "resources": {"requests": {"cpu": "3"}}},
            {
                "name": "proxy",
                "restartPolicy": "Always",
                "resources": {"requests": {"cpu": "500m"}},
            },
            {"name": "after", "resources": {"requests": {"cpu": "2", "memory": "1Gi"}}},
        ],
        "containers": [{"name": "main", "resources": {"requests": {"cpu": "1"}}}],
    }

    assert pod_requests(pod) == {"cpu": Decimal(3), "memory": Decimal(2**30)}
    pod["initContainers"][0]["resources"]["requests"]["cpu"] = "1"
    assert pod_requests(pod)["cpu"] == Decimal("2.5")


def test_overhead_adds_to_the_pods_requests() -> None:
    # PodRequests: `addResourceList(reqs, pod.Spec.Overhead)` unless ExcludeOverhead.
    pod = {
        "overhead": {"cpu": "250m", "memory": "120Mi"},
        "containers": [{"name": "main", "resources": {"requests": {"cpu": "1"}}}],
    }

    assert pod_requests(pod) == {"cpu": Decimal("1.25"), "memory": Decimal(120 * 2**20)}


def test_pod_level_requests_replace_the_containers_for_cpu_memory_and_hugepages_only() -> None:
    # PodRequests: with IsPodLevelRequestsSet, each pod-level request of a resource
    # IsSupportedPodLevelResource allows (cpu, memory, hugepages-*) replaces the containers'
    # sum; others (an extended resource) are not pod-level resources, and the containers' stand.
    pod = {
        "resources": {"requests": {"cpu": "2", "nvidia.com/gpu": "4"}},
        "containers": [
            {"name": "a", "resources": {"requests": {"cpu": "3", "memory": "1Gi"}}},
            {"name": "b", "resources": {"limits": {"nvidia.com/gpu": "1"}}},
        ],
    }

    assert pod_requests(pod) == {
        "cpu": Decimal(2),
        "memory": Decimal(2**30),
        "nvidia.com/gpu": Decimal(1),
    }


def test_pod_level_limits_stand_for_requests_nothing_else_sets() -> None:
    # The API server defaults a pod-level request from the pod-level limit where no container
    # asks for the resource (KEP-2837, pod-level resources), from the containers' sum where
    # they do.
    pod = {
        "resources": {"limits": {"cpu": "2", "memory": "4Gi"}},
        "containers": [{"name": "a", "resources": {"requests": {"memory": "1Gi"}}}],
    }

    assert pod_requests(pod) == {"cpu": Decimal(2), "memory": Decimal(2**30)}


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("4", Decimal(4)),
        ("500m", Decimal("0.5")),
        ("16Gi", Decimal(16 * 2**30)),
        ("1k", Decimal(1000)),
        ("1e3", Decimal(1000)),
        (2, Decimal(2)),
    ],
)
def test_quantities_read_as_kubernetes_reads_them(text: str | int, value: Decimal) -> None:
    assert quantity(text) == value


def test_a_quantity_that_is_not_one_is_refused() -> None:
    with pytest.raises(ValueError, match="not a Kubernetes quantity"):
        quantity("lots")


@pytest.mark.parametrize(
    "document",
    [
        {"kind": "Pod", "spec": {"containers": []}},
        {"kind": "Job", "spec": {"template": {"spec": {"containers": []}}}},
        {"kind": "Deployment", "spec": {"template": {"spec": {"containers": []}}}},
        {
            "kind": "CronJob",
            "spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": []}}}}},
        },
    ],
)
def test_the_pod_spec_is_found_in_pods_and_workloads(document: dict[str, Any]) -> None:
    assert pod_spec_of(document) == {"containers": []}


def test_a_document_without_a_pod_spec_is_refused() -> None:
    with pytest.raises(ValueError, match="'Service' has no pod spec"):
        pod_spec_of({"kind": "Service", "spec": {}})


@pytest.fixture(scope="module")
def zonal_templates(stack: dict[str, Any]) -> list[NodeTemplate]:
    """t4-shared with a node group in each of two zones."""
    zonal = copy.deepcopy(stack)
    zonal["gpu-platform:pools"][0].update(zones=["us-east-1a", "us-east-1b"], max=2)
    zonal["gpu-platform:pools"][0]["aws"]["nodeGroupPerZone"] = True
    return [t for t in node_templates(run_program("dev", config=zonal)) if t.pool == "t4-shared"]


def test_a_pool_with_a_node_group_per_zone_has_a_template_per_zone(
    zonal_templates: list[NodeTemplate],
) -> None:
    found = zonal_templates

    # Each group's template has its Auto Scaling group's first zone (getAsgTemplate,
    # cloudprovider/aws/aws_manager.go, cluster-autoscaler-1.35.2).
    assert [t.labels[ZONE] for t in found] == ["us-east-1a", "us-east-1b"]
    pod = {**gpu_tolerating_pod(), "nodeSelector": {ZONE: "us-east-1b"}}
    assert "t4-shared" in fitting_pools(pod, found)


def test_a_zonal_template_carries_its_own_groups_name_only(
    zonal_templates: list[NodeTemplate],
) -> None:
    # Each node group is its own Auto Scaling group with its own template (aws_manager.go
    # getAsgTemplate; aws_wrapper.go getManagedNodegroupInfo names the group): us-east-1b's
    # template is named `t4-shared-us-east-1b-<suffix>`, never its sibling's.
    key = "eks.amazonaws.com/nodegroup"
    suffix = "2026071412000000000a1b2c3d"
    a, b = zonal_templates

    def on_group(zone: str) -> dict[str, Any]:
        return {**gpu_tolerating_pod(), "nodeSelector": {key: f"t4-shared-{zone}-{suffix}"}}

    (sibling,) = fits(on_group("us-east-1a"), [b])
    assert sibling.reasons == (
        f"NodeAffinity: nodeSelector {key}=t4-shared-us-east-1a-{suffix}: its nodes have"
        f" {key}=<made up when the node starts>",
    )
    assert fitting_pools(on_group("us-east-1b"), [b]) == ["t4-shared"]
    assert fitting_pools(on_group("us-east-1a"), [a]) == ["t4-shared"]


def test_a_pod_asking_for_efa_fits_only_the_efa_pool() -> None:
    # prod's h100-training has 32 EFA interfaces a node; a100-inference has none, which the
    # autoscaler's template (and so `fit`) counts as 0.
    templates = node_templates(shared_plan("prod"))
    pod = gpu_tolerating_pod(**{"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32"})

    assert fitting_pools(pod, templates) == ["h100-training"]


def test_a_pod_counting_gpus_fits_no_dra_pool() -> None:
    # dra-dev's l4 pool hands its GPUs out through DRA: its nodes advertise nvidia.com/gpu 0, as
    # its Auto Scaling group's hint tells the autoscaler's template (cluster-autoscaler-1.35.2
    # cloudprovider/aws/aws_manager.go, buildNodeFromTemplate), not g6.xlarge's one L4.
    templates = node_templates(shared_plan("dra-dev"))
    pod = gpu_tolerating_pod(**{"nvidia.com/gpu": "1"})
    pod["tolerations"].append(
        {"key": "gpu-platform.io/allocation", "operator": "Exists", "effect": "NoSchedule"}
    )

    assert fits(pod, templates) == [
        Fit("l4", ("NodeResourcesFit: asks for 1 nvidia.com/gpu; a node has 0",))
    ]


# --- Karpenter: as it decides whether a pending pod fits a NodePool -----------------------------


@pytest.fixture(scope="module")
def karpenter_templates() -> list[NodeTemplate]:
    """The karpenter-dev stack's spot T4 and on-demand L4 NodePools, its spot T4s allowed two
    zones only and its L4s one size, g6.xlarge."""
    config = copy.deepcopy(stack_config("karpenter-dev"))
    t4, l4 = (
        next(p for p in config["gpu-platform:pools"] if p["name"] == name)
        for name in ("t4-spot", "l4-on-demand")
    )
    t4["zones"] = ["us-east-1a", "us-east-1b"]
    l4["instanceTypes"] = ["g6.xlarge"]
    config["gpu-platform:pools"] = [t4, l4]
    return node_templates(run_program("karpenter-dev", config=config))


def test_a_pod_fits_a_karpenter_pool_that_offers_a_size_large_enough() -> None:
    # karpenter-dev's L4 pool allows g6.xlarge (1 L4) and g6.12xlarge (4 L4s).
    templates = node_templates(shared_plan("karpenter-dev"))
    four = on_pool(gpu_tolerating_pod(**{"nvidia.com/gpu": "4"}), "l4-on-demand")
    five = on_pool(gpu_tolerating_pod(**{"nvidia.com/gpu": "5"}), "l4-on-demand")

    assert fitting_pools(four, templates) == ["l4-on-demand"]
    assert fitting_pools(five, templates) == []


def on_pool(pod: dict[str, Any], pool: str) -> dict[str, Any]:
    return {**pod, "nodeSelector": {**pod.get("nodeSelector", {}), "gpu-platform.io/pool": pool}}


def test_a_gpu_pod_with_the_toleration_fits_the_karpenter_pool(
    karpenter_templates: list[NodeTemplate],
) -> None:
    pod = gpu_tolerating_pod(**{"nvidia.com/gpu": "1"})

    assert fitting_pools(pod, karpenter_templates) == ["t4-spot", "l4-on-demand"]
    assert fitting_pools(on_pool(pod, "l4-on-demand"), karpenter_templates) == ["l4-on-demand"]


def test_an_ordinary_pod_without_the_toleration_fits_no_karpenter_pool(
    karpenter_templates: list[NodeTemplate],
) -> None:
    pod = {
        "containers": [{"name": "web", "image": "nginx", "resources": {"requests": {"cpu": "1"}}}]
    }

    results = fits(pod, karpenter_templates)

    assert [r.pool for r in results] == ["t4-spot", "l4-on-demand"]
    assert all(
        r.reasons == ("TaintToleration: taint nvidia.com/gpu=present:NoSchedule is not tolerated",)
        for r in results
    )


def test_a_pod_bound_to_a_zone_the_nodepool_does_not_allow_does_not_fit(
    karpenter_templates: list[NodeTemplate],
) -> None:
    pod = on_pool(gpu_tolerating_pod(**{"nvidia.com/gpu": "1"}), "t4-spot")
    elsewhere = {**pod, "nodeSelector": {**pod["nodeSelector"], ZONE: "us-east-1c"}}
    allowed = {**pod, "nodeSelector": {**pod["nodeSelector"], ZONE: "us-east-1b"}}

    (t4,) = [f for f in fits(elsewhere, karpenter_templates) if f.pool == "t4-spot"]

    assert t4.reasons == (
        f"NodeAffinity: nodeSelector {ZONE}=us-east-1c: its nodes have"
        f" {ZONE}=us-east-1a or us-east-1b",
    )
    assert fitting_pools(allowed, karpenter_templates) == ["t4-spot"]


def test_a_pod_asking_for_a_capacity_type_the_nodepool_does_not_allow_does_not_fit(
    karpenter_templates: list[NodeTemplate],
) -> None:
    pod = gpu_tolerating_pod(**{"nvidia.com/gpu": "1"})
    pod["nodeSelector"] = {"karpenter.sh/capacity-type": "on-demand"}

    (t4,) = [f for f in fits(pod, karpenter_templates) if f.pool == "t4-spot"]

    assert fitting_pools(pod, karpenter_templates) == ["l4-on-demand"]
    assert t4.reasons == (
        "NodeAffinity: nodeSelector karpenter.sh/capacity-type=on-demand: its nodes have "
        "karpenter.sh/capacity-type=spot",
    )


def zone_affinity(*zones: str) -> dict[str, Any]:
    expression = {"key": ZONE, "operator": "In", "values": list(zones)}
    terms = [{"matchExpressions": [expression]}]
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
        }
    }


def test_node_selector_and_node_affinity_must_agree_on_one_node(
    karpenter_templates: list[NodeTemplate],
) -> None:
    pod = on_pool(gpu_tolerating_pod(**{"nvidia.com/gpu": "1"}), "t4-spot")
    pod["nodeSelector"][ZONE] = "us-east-1a"
    apart = {**pod, "affinity": zone_affinity("us-east-1b")}
    together = {**pod, "affinity": zone_affinity("us-east-1a", "us-east-1c")}

    (t4,) = [f for f in fits(apart, karpenter_templates) if f.pool == "t4-spot"]

    assert t4.reasons == (
        "NodeAffinity: required node affinity: no term matches its nodes' labels",
    )
    assert fitting_pools(together, karpenter_templates) == ["t4-spot"]


def test_a_pod_asking_for_more_gpus_than_any_allowed_type_has_does_not_fit(
    karpenter_templates: list[NodeTemplate],
) -> None:
    pod = gpu_tolerating_pod(**{"nvidia.com/gpu": "2"})

    results = fits(pod, karpenter_templates)

    assert [r.reasons for r in results] == [
        ("NodeResourcesFit: asks for 2 nvidia.com/gpu; a node has 1",)
    ] * 2


def test_karpenter_templates_carry_the_labels_karpenter_gives_an_instance_type(
    karpenter_templates: list[NodeTemplate],
) -> None:
    # g4dn.xlarge in EC2's data: 4 vCPUs, 16384 MiB, one NVIDIA T4 of 16384 MiB, a 125 GB NVMe
    # drive; labels as karpenter-provider-aws v1.14.1 instancetype/types.go computes them.
    t4 = next(t for t in karpenter_templates if t.pool == "t4-spot")

    assert {
        "node.kubernetes.io/instance-type": "g4dn.xlarge",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        "topology.kubernetes.io/region": "us-east-1",
        "karpenter.sh/capacity-type": "spot",
        "karpenter.sh/nodepool": "t4-spot",
        "karpenter.k8s.aws/ec2nodeclass": "t4-spot",
        "karpenter.k8s.aws/instance-category": "g",
        "karpenter.k8s.aws/instance-family": "g4dn",
        "karpenter.k8s.aws/instance-generation": "4",
        "karpenter.k8s.aws/instance-size": "xlarge",
        "karpenter.k8s.aws/instance-cpu": "4",
        "karpenter.k8s.aws/instance-memory": "16384",
        "karpenter.k8s.aws/instance-local-nvme": "125",
        "karpenter.k8s.aws/instance-capability-flex": "false",
        "karpenter.k8s.aws/instance-gpu-name": "t4",
        "karpenter.k8s.aws/instance-gpu-manufacturer": "nvidia",
        "karpenter.k8s.aws/instance-gpu-count": "1",
        "karpenter.k8s.aws/instance-gpu-memory": "16384",
        "gpu-platform.io/pool": "t4-spot",
        "gpu-platform.io/accelerator": "t4",
    }.items() <= t4.labels.items()
    assert t4.taints == (GPU_TAINT,)


def test_cpu_is_what_karpenter_leaves_after_kube_reserved(
    karpenter_templates: list[NodeTemplate],
) -> None:
    # 4 vCPUs: kube-reserved 6% of the first core, 1% of the second, 0.5% of the next two:
    # 60m + 10m + 10m (types.go kubeReservedResources). Karpenter holds the DaemonSets that
    # would run there against it too (kubernetes-sigs/karpenter v1.14.1 scheduling/nodeclaim.go
    # `daemonOverheadGroups`): EKS's kube-proxy 100m, aws-node 50m (amazon-vpc-cni-k8s v1.21.1
    # config/master/aws-k8s-cni.yaml), ebs-csi-node 30m (aws-ebs-csi-driver v1.48.0
    # deploy/kubernetes/base/node.yaml) and the node-feature-discovery worker's 5m, and no
    # kube-proxy of its own, so 3735m are left.
    pod = on_pool(gpu_tolerating_pod(**{"nvidia.com/gpu": "1", "cpu": "3916m"}), "t4-spot")
    smaller = on_pool(gpu_tolerating_pod(**{"nvidia.com/gpu": "1", "cpu": "3735m"}), "t4-spot")

    (t4,) = [f for f in fits(pod, karpenter_templates) if f.pool == "t4-spot"]

    assert t4.reasons == (
        "NodeResourcesFit: asks for 3916m cpu; a node has 3920m, 185m of it for the template's"
        " own pods",
    )
    assert fitting_pools(smaller, karpenter_templates) == ["t4-spot"]


def test_ephemeral_storage_is_what_karpenter_leaves_of_the_volume_or_the_nvme_array(
    karpenter_templates: list[NodeTemplate],
) -> None:
    # Less kube-reserved 1Gi and the 10% eviction threshold (types.go). g4dn.xlarge's 125 GB
    # drive is smaller than the pool's 200 GiB volume, which keeps pods' data:
    # 214748364800 - 1073741824 - 21474836480. g6.xlarge's 250 GB drive is a RAID0 array
    # (instanceStorePolicy): 250000000000 - 1073741824 - 25000000000.
    by_pool = {t.pool: t.resources["ephemeral-storage"] for t in karpenter_templates}

    assert by_pool == {"t4-spot": 192199786496, "l4-on-demand": 223926258176}


def test_memory_is_not_judged_on_karpenter_pools(karpenter_templates: list[NodeTemplate]) -> None:
    # Karpenter reserves memory by the node's ENI-limited pod count, which the instance data
    # here does not hold.
    pod = on_pool(gpu_tolerating_pod(**{"nvidia.com/gpu": "1", "memory": "1Ti"}), "t4-spot")

    assert fitting_pools(pod, karpenter_templates) == ["t4-spot"]


# --- Karpenter, on NodePools built here -----------------------------------------------------------

# As EC2 describes them: vCPUs, MiB, GPUs, GB of NVMe, EFA interfaces.
G6 = instance_type("g6.xlarge", 4, 16384, ["x86_64"], [Gpus("NVIDIA", "L4", 1, 22888)], 250)
G6_12X = instance_type(
    "g6.12xlarge", 48, 196608, ["x86_64"], [Gpus("NVIDIA", "L4", 4, 22888)], 3760, 1
)


def node_pool(*requirements: dict[str, Any], **template_spec: Any) -> dict[str, Any]:
    """A NodePool of the agreed shape for g6.xlarge and g6.12xlarge, with more requirements."""
    return {
        "metadata": {"name": "l4"},
        "spec": {
            "template": {
                "metadata": {"labels": {"gpu-platform.io/pool": "l4"}},
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.k8s.aws",
                        "kind": "EC2NodeClass",
                        "name": "l4",
                    },
                    "taints": [
                        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
                    ],
                    "requirements": [
                        {
                            "key": "node.kubernetes.io/instance-type",
                            "operator": "In",
                            "values": ["g6.xlarge", "g6.12xlarge"],
                        },
                        {"key": ZONE, "operator": "In", "values": ["us-east-1a"]},
                        *requirements,
                    ],
                    **template_spec,
                },
            },
            "limits": {"nvidia.com/gpu": "8"},
        },
    }


NODE_CLASS = {"spec": {"amiSelectorTerms": [{"alias": "al2023@v20260714"}]}}


def templates_of(
    pool: dict[str, Any], node_class: dict[str, Any] = NODE_CLASS
) -> list[NodeTemplate]:
    instance_types = {t.name: t for t in (G6, G6_12X)}
    return karpenter_node_templates(pool, node_class, instance_types, "us-east-1")


def test_a_pod_fits_a_nodepool_where_it_fits_one_of_its_instance_types() -> None:
    four = gpu_tolerating_pod(**{"nvidia.com/gpu": "4"})
    eight = gpu_tolerating_pod(**{"nvidia.com/gpu": "8"})

    assert fitting_pools(four, templates_of(node_pool())) == ["l4"]
    assert [f.reasons for f in fits(eight, templates_of(node_pool()))] == [
        (
            "g6.xlarge: NodeResourcesFit: asks for 8 nvidia.com/gpu; a node has 1",
            "g6.12xlarge: NodeResourcesFit: asks for 8 nvidia.com/gpu; a node has 4",
        )
    ]


def test_requirements_on_what_ec2_says_of_an_instance_type_rule_it_out() -> None:
    four_gpus = {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Gte", "values": ["4"]}

    found = templates_of(node_pool(four_gpus))

    assert [t.labels["node.kubernetes.io/instance-type"] for t in found] == ["g6.12xlarge"]


def test_startup_taints_are_not_held_against_a_pod() -> None:
    # Karpenter checks a pod against the NodePool's taints only (kubernetes-sigs/karpenter
    # v1.14.1 pkg/controllers/provisioning/scheduling/nodeclaim.go line 126).
    startup = [{"key": "example.com/agent-not-ready", "value": "true", "effect": "NoSchedule"}]
    pod = gpu_tolerating_pod(**{"nvidia.com/gpu": "1"})

    assert fitting_pools(pod, templates_of(node_pool(startupTaints=startup))) == ["l4"]


def test_a_nodepool_of_reserved_capacity_needs_its_node_class_to_select_reservations() -> None:
    # Karpenter offers capacity type `reserved` only for the capacity reservations an
    # EC2NodeClass selects (karpenter-provider-aws v1.14.1 instancetype/types.go lines 171-179).
    reserved = {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["reserved"]}
    with_reservation = {
        "spec": {
            **NODE_CLASS["spec"],
            "capacityReservationSelectorTerms": [{"id": "cr-0123456789abcdef0"}],
        }
    }
    pod = gpu_tolerating_pod(**{"nvidia.com/gpu": "1"})

    (without,) = fits(pod, templates_of(node_pool(reserved)))

    assert without.reasons == (
        "NodeAffinity: the pool allows its nodes no karpenter.sh/capacity-type, so it starts none",
    )
    assert fitting_pools(pod, templates_of(node_pool(reserved), with_reservation)) == ["l4"]


# --- The pods a template holds first -----------------------------------------------------------

DAEMONSET = TemplatePod(
    "agent",
    {
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
        "containers": [{"name": "agent", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
    },
)


def test_a_template_holds_its_providers_pods_and_the_daemonsets_that_would_run_there() -> None:
    # GetDaemonSetPodsForNode (utils/daemonset, cluster-autoscaler-1.35.2) runs the DaemonSet
    # controller's NodeShouldRunDaemonPod: node selector, node affinity, taints. `TEMPLATE`
    # has the GPU taint and `evict=yes:NoExecute`; PreferNoSchedule keeps nothing off.
    tolerant = replace(
        DAEMONSET,
        name="tolerant",
        spec={**DAEMONSET.spec, "tolerations": TOLERATE_ALL},
    )
    elsewhere = replace(
        tolerant, name="elsewhere", spec={**tolerant.spec, "nodeSelector": {"zone": "b"}}
    )

    found = with_template_pods(TEMPLATE, [KUBE_PROXY], [DAEMONSET, tolerant, elsewhere])

    assert [pod.name for pod in found.pods] == [KUBE_PROXY.name, "tolerant"]
    assert template_requests(found) == {"cpu": Decimal("1.1"), "memory": Decimal(2**30)}


def test_a_daemonset_lands_on_a_node_whose_only_untolerated_taint_is_a_startup_taint() -> None:
    # podsExpectedOnFreshNode judges the DaemonSets against the sanitized template, startup
    # taints gone (node_info_utils.go: "The provided nodeInfo has to have taints properly
    # sanitized").
    startup = Taint("startup-taint.cluster-autoscaler.kubernetes.io/mig", "pending", "NoSchedule")
    template = replace(TEMPLATE, taints=(GPU_TAINT, startup))

    assert with_template_pods(template, [], [DAEMONSET]).pods == (DAEMONSET,)


def test_the_template_pods_requests_are_held_against_its_allocatable() -> None:
    template = with_template_pods(TEMPLATE, [KUBE_PROXY], [])

    assert fitting_pools(pod_with({"requests": {"cpu": "7900m"}}), [template]) == ["p"]
    assert fits(pod_with({"requests": {"cpu": "7901m"}}), [template])[0].reasons == (
        "NodeResourcesFit: asks for 7901m cpu; a node has 8, 100m of it for the template's own"
        " pods",
    )


def test_the_template_pods_count_against_its_pods() -> None:
    # NodeResourcesFit: a node runs at most its allocatable `pods`, the new one included.
    small = replace(TEMPLATE, resources={**TEMPLATE.resources, "pods": Decimal(2)})

    assert fitting_pools(pod_with({}), [with_template_pods(small, [KUBE_PROXY], [])]) == ["p"]
    assert fits(pod_with({}), [with_template_pods(small, [KUBE_PROXY, KUBE_PROXY], [])])[
        0
    ].reasons == (
        f"NodeResourcesFit: a node runs at most 2 pods, and 2 are {KUBE_PROXY.name},"
        f" {KUBE_PROXY.name}",
    )


def test_eks_templates_hold_kube_proxy_the_addons_and_the_platforms_daemonsets(
    templates: list[NodeTemplate],
) -> None:
    # The AWS provider's kube-proxy (aws_cloud_provider.go TemplateNodeInfo, 100m), a mirror
    # pod, so podsExpectedOnFreshNode (simulator/node_info_utils.go, cluster-autoscaler-1.35.2)
    # adds EKS's kube-proxy DaemonSet too; the EKS add-ons' DaemonSets and the
    # node-feature-discovery worker (0.19.0 values.yaml: 5m, 64Mi), which tolerate the GPU
    # taint; no EFA device plugin, which no pool of this stack asks for. Requests: 100m + 100m
    # (kube-proxy twice) + 50m (aws-node) + 30m and 120Mi (ebs-csi-node) + 10m and 30Mi (the
    # node monitoring agent) + 5m and 64Mi: fit_cases.yaml cites each source. The pool's node
    # validator runs on every new node, requesting nothing.
    t4 = next(t for t in templates if t.pool == "t4-shared")

    assert [pod.name for pod in t4.pods] == [
        KUBE_PROXY.name,
        "aws-node (vpc-cni v1.21.1)",
        "kube-proxy (EKS add-on)",
        "ebs-csi-node (aws-ebs-csi-driver v1.48.0)",
        "eks-pod-identity-agent",
        "agent (eks-node-monitoring-agent v1.7.0)",
        "dcgm-server (eks-node-monitoring-agent v1.7.0)",
        "node-feature-discovery worker",
        "gpu-node-validator-t4-shared",
    ]
    assert template_requests(t4) == {"cpu": Decimal("0.295"), "memory": Decimal(214 * 2**20)}
    assert t4.labels["cluster-autoscaler.kubernetes.io/template-node"] == "true"


def test_templates_carry_the_deprecated_labels_the_autoscaler_copies(
    templates: list[NodeTemplate],
) -> None:
    # UpdateDeprecatedLabels (utils/labels/labels.go, cluster-autoscaler-1.35.2): instance type,
    # region and zone; not os or arch.
    t4 = next(t for t in templates if t.pool == "t4-shared")

    assert {
        "beta.kubernetes.io/instance-type": "g4dn.xlarge",
        "failure-domain.beta.kubernetes.io/region": "us-east-1",
        "failure-domain.beta.kubernetes.io/zone": "us-east-1a",
    }.items() <= t4.labels.items()
    assert "beta.kubernetes.io/arch" not in t4.labels
    assert "beta.kubernetes.io/os" not in t4.labels


# --- Admission and units ---------------------------------------------------------------------


def test_admission_tolerates_each_extended_resource_a_container_asks_for() -> None:
    pod = {
        "containers": [
            {"name": "a", "resources": {"limits": {"nvidia.com/mig-1g.10gb": "1", "cpu": "1"}}},
            {"name": "b", "resources": {"requests": {"vpc.amazonaws.com/efa": "1"}}},
        ]
    }

    # kubernetes plugin/pkg/admission/extendedresourcetoleration: `<resource> Exists
    # NoSchedule` for every extended resource; none for cpu, memory and the like.
    assert admitted(pod)["tolerations"] == [
        {"key": "nvidia.com/mig-1g.10gb", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "vpc.amazonaws.com/efa", "operator": "Exists", "effect": "NoSchedule"},
    ]


@pytest.mark.parametrize(
    ("name", "amount", "written"),
    [
        ("cpu", "3.92", "3920m"),
        ("cpu", "192", "192"),
        ("memory", "193273528320", "180Gi"),
        ("memory", "16473128960", "15710Mi"),
        ("ephemeral-storage", "1536", "1536"),
        ("nvidia.com/gpu", "2", "2"),
    ],
)
def test_quantities_are_written_in_kubernetes_units(name: str, amount: str, written: str) -> None:
    assert format_quantity(name, Decimal(amount)) == written


# --- EKS Auto Mode: Karpenter's NodePool on Auto Mode's own nodes -------------------------------


@pytest.fixture(scope="module")
def auto_mode_templates() -> dict[str, NodeTemplate]:
    """auto-dev's templates by instance type: l4-reserved's g6.xlarge and g6.12xlarge, and
    l40s's g6e sizes, on NodeClasses of the pools' default 200 GiB disk."""
    templates = node_templates(shared_plan("auto-dev"))
    return {t.labels["node.kubernetes.io/instance-type"]: t for t in templates}


@pytest.mark.parametrize(
    ("size", "storage"),
    # EC2's instance data: g6.xlarge has one 250 GB NVMe drive, g6e.48xlarge four of 1900 GB.
    [("g6.xlarge", Decimal(250 * 10**9)), ("g6e.48xlarge", Decimal(7600 * 10**9))],
)
def test_auto_mode_nodes_keep_pods_data_on_their_nvme_drives(
    auto_mode_templates: dict[str, NodeTemplate], size: str, storage: Decimal
) -> None:
    # Auto Mode makes an instance's NVMe drives one RAID 0 array for ephemeral storage
    # (awsdocs/amazon-eks-user-guide latest/ug/automode/automode-learn-instances.adoc), in place
    # of the 200 GiB volume.
    template = auto_mode_templates[size]
    assert template.resources["ephemeral-storage"] == storage
    assert fits({**gpu_tolerating_pod(**{"ephemeral-storage": "240G"})}, [template])[0].fits


# As EC2 describes it: a Graviton with one T4G and no instance store.
G5G = instance_type("g5g.xlarge", 4, 8192, ["arm64"], [Gpus("NVIDIA", "T4g", 1, 16384)])


def auto_mode_template(instance: InstanceType, **node_class_spec: Any) -> NodeTemplate:
    """The one template of an Auto Mode NodePool of that instance type on such a NodeClass."""
    pool = {
        "metadata": {"name": "l4"},
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": {
                        "group": "eks.amazonaws.com",
                        "kind": "NodeClass",
                        "name": "gpu",
                    },
                    "requirements": [
                        {
                            "key": "node.kubernetes.io/instance-type",
                            "operator": "In",
                            "values": [instance.name],
                        }
                    ],
                }
            }
        },
    }
    node_class = {"spec": node_class_spec}
    (template,) = auto_mode_node_templates(pool, node_class, {instance.name: instance}, "us-east-1")
    return template


def test_auto_mode_memory_is_what_karpenter_leaves_after_the_vm_overhead() -> None:
    # Karpenter v1.14.1 takes ceil(7.5%) of EC2's 16384 MiB, 1229 MiB, off a g6.xlarge before
    # it judges a pod (aws/karpenter-provider-aws pkg/providers/instancetype/types.go `memory`,
    # pkg/operator/options/options.go `--vm-memory-overhead-percent`): it launches no node for
    # a pod of more than 15155Mi.
    template = auto_mode_template(G6)

    assert template.resources["memory"] == Decimal(15155 * 2**20)
    assert fits(gpu_tolerating_pod(memory="15155Mi"), [template])[0].fits
    assert fits(gpu_tolerating_pod(memory="15156Mi"), [template])[0].reasons == (
        "NodeResourcesFit: asks for 15156Mi memory; a node has 15155Mi (Karpenter's pre-launch"
        " estimate of its capacity, before what the provisioner reserves and does not publish)",
    )


def test_auto_mode_memory_on_a_graviton_leaves_out_its_cma_reserve_too() -> None:
    # types.go `memory`: 8192 MiB less the 64 MiB an arm64 instance reserves is 8128 MiB, less
    # ceil(7.5% of that) = 610 MiB.
    assert auto_mode_template(G5G).resources["memory"] == Decimal(7518 * 2**20)


def test_auto_mode_memory_assumed_allocatable_is_taken_from_karpenters_figure() -> None:
    # 15155 MiB less Karpenter's kube-reserved for 110 pods (11 MiB a pod and 255 MiB) and the
    # 100Mi eviction threshold.
    assumed = auto_mode_template(G6).assumed_allocatable["memory"]
    assert assumed == Decimal((15155 - 1210 - 255 - 100) * 2**20)


# automode-learn-instances.adoc, Considerations: a NodeClass's `ephemeralStorage.size` "smaller
# than the NVMe local storage": Auto Mode "formats and configures the NVMe local storage for
# ephemeral data use"; a size that "equals or exceeds the local NVMe capacity": it "skips the
# small EBS volume. The NVMe drive(s) are exposed directly for your workload", open to the drives
# or the size's volume holding pods' data.


def test_auto_mode_ephemeral_storage_below_a_smaller_node_class_size_is_the_nvme_array() -> None:
    # A g6.xlarge's 250 GB NVMe drive against 200Gi (214.7 GB).
    template = auto_mode_template(G6, ephemeralStorage={"size": "200Gi"})

    # 250 GB less Karpenter's 1Gi kube-reserved and 10% eviction threshold.
    assert (
        template.resources["ephemeral-storage"],
        template.assumed_allocatable["ephemeral-storage"],
    ) == (Decimal(250 * 10**9), Decimal(250 * 10**9 - 2**30 - 25 * 10**9))
    pod = gpu_tolerating_pod(**{"ephemeral-storage": "220G"})
    assert fits(pod, [template])[0].fits
    assert capacity_bound(pod, template) == []


def test_auto_mode_ephemeral_storage_between_the_nvme_and_a_larger_size_cannot_be_said() -> None:
    # 300Gi is above the 250 GB drive and within the NodeClass's 500Gi.
    template = auto_mode_template(G6, ephemeralStorage={"size": "500Gi"})
    pod = gpu_tolerating_pod(**{"ephemeral-storage": "300Gi"})

    assert fits(pod, [template])[0].fits
    assert capacity_bound(pod, template) == ["ephemeral-storage"]


def test_auto_mode_ephemeral_storage_below_both_readings_fits() -> None:
    # 200G is within the 250 GB drive less Karpenter's 1Gi and 10% (223.9 GB).
    template = auto_mode_template(G6, ephemeralStorage={"size": "500Gi"})
    pod = gpu_tolerating_pod(**{"ephemeral-storage": "200G"})

    assert fits(pod, [template])[0].fits
    assert capacity_bound(pod, template) == []


def test_auto_mode_ephemeral_storage_above_a_larger_size_does_not_fit() -> None:
    template = auto_mode_template(G6, ephemeralStorage={"size": "500Gi"})
    pod = gpu_tolerating_pod(**{"ephemeral-storage": "501Gi"})

    assert fits(pod, [template])[0].reasons == (
        "NodeResourcesFit: asks for 501Gi ephemeral-storage; a node has 500Gi (its NodeClass's"
        " ephemeralStorage.size, which AWS's text leaves open to holding pods' data in place of"
        " its 250 GB of NVMe, before what the provisioner reserves and does not publish)",
    )


@pytest.mark.parametrize(
    ("node_class_spec", "storage"),
    [({"ephemeralStorage": {"size": "500Gi"}}, 500 * 2**30), ({}, 80 * 2**30)],
)
def test_auto_mode_ephemeral_storage_without_nvme_is_the_node_class_size(
    node_class_spec: dict[str, Any], storage: int
) -> None:
    # A g5g.xlarge has no instance store: the NodeClass's size, 80Gi when it sets none
    # (create-node-class.adoc).
    template = auto_mode_template(G5G, **node_class_spec)

    assert template.resources["ephemeral-storage"] == Decimal(storage)


def test_auto_mode_nodes_advertise_no_efa(auto_mode_templates: dict[str, NodeTemplate]) -> None:
    # g6e.48xlarge has EFA interfaces (EC2), but the platform refuses aws.efa on Auto Mode and
    # runs the EFA device plugin on no Auto Mode node.
    pod = gpu_tolerating_pod(**{"vpc.amazonaws.com/efa": "1"})
    (fit,) = fits(pod, [auto_mode_templates["g6e.48xlarge"]])
    assert "NodeResourcesFit: asks for 1 vpc.amazonaws.com/efa; a node has 0" in fit.reasons[0]


@pytest.mark.parametrize(
    "label",
    [
        "eks.amazonaws.com/instance-hypervisor",
        "eks.amazonaws.com/instance-cpu-manufacturer",
        "eks.amazonaws.com/instance-encryption-in-transit-supported",
        "eks.amazonaws.com/instance-ebs-bandwidth",
        "eks.amazonaws.com/instance-network-bandwidth",
    ],
)
def test_auto_mode_labels_the_instance_data_lacks_are_not_judged(
    auto_mode_templates: dict[str, NodeTemplate], label: str
) -> None:
    # Labels of create-node-pool.adoc's "EKS Auto Mode Supported Labels" table.
    template = auto_mode_templates["g6e.xlarge"]
    by_selector = {**gpu_tolerating_pod(), "nodeSelector": {label: "amd"}}
    by_affinity = {
        **gpu_tolerating_pod(),
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": label, "operator": "Gt", "values": ["1"]}]}
                    ]
                }
            }
        },
    }
    for pod in (by_selector, by_affinity):
        assert fits(pod, [template])[0].fits
        assert unknown_labels_named(pod, template) == [label]
    assert unknown_labels_named(gpu_tolerating_pod(), template) == []


def test_auto_mode_pools_are_chosen_by_auto_modes_gpu_label_not_karpenters(
    auto_mode_templates: dict[str, NodeTemplate],
) -> None:
    template = auto_mode_templates["g6e.xlarge"]
    for key, fits_ in [
        ("eks.amazonaws.com/instance-gpu-name", True),
        ("karpenter.k8s.aws/instance-gpu-name", False),
    ]:
        pod = {**gpu_tolerating_pod(), "nodeSelector": {key: "l40s"}}
        assert fits(pod, [template])[0].fits is fits_, key
