"""The stack policy that has every GPU pod set of a job in a namespace whose queue splits its
quota between pools select one pool; through the analyzer."""

from typing import Any

from tests.gpu_platform.policy_pack.builders import (
    Analyze,
    gpu_pod_spec,
    messages,
    namespace,
    resource,
    select_pools,
)

POLICY = "queued-gpu-jobs-select-one-pool"


def cluster_queue(*pools: str) -> Any:
    """team-a's ClusterQueue, holding nvidia.com/gpu on a flavor of each of `pools`, as
    gpu_platform/kubernetes/kueue.py `cluster_queue` declares it."""
    flavors = [{"name": pool, "resources": [{"name": "nvidia.com/gpu"}]} for pool in pools]
    return resource(
        "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue",
        "team-a-cluster-queue",
        {
            "metadata": {"name": "team-a"},
            "spec": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "team-a"}},
                "resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": flavors}],
            },
        },
    )


def pytorch_job(master: tuple[str, ...], worker: tuple[str, ...]) -> Any:
    """A PyTorchJob whose master and workers ask for GPUs, selecting `master` and `worker`."""
    specs = {}
    for role, pools in (("Master", master), ("Worker", worker)):
        spec = gpu_pod_spec()
        if pools:
            select_pools(spec, *pools)
        specs[role] = {"replicas": 1, "template": {"spec": spec}}
    return resource(
        "kubernetes:kubeflow.org/v1:PyTorchJob",
        "train",
        {
            "metadata": {"name": "train", "namespace": "team-a"},
            "spec": {"pytorchReplicaSpecs": specs},
        },
    )


def test_pod_sets_that_may_land_on_either_pool_of_a_split_quota_are_told(analyze: Analyze) -> None:
    # Kueue picks a flavor for each pod set apart (`assignFlavors`,
    # pkg/scheduler/flavorassigner/flavorassigner.go at v0.19.2).
    verdicts = analyze(
        namespace("team-a"), cluster_queue("h100", "a100"), pytorch_job(("h100",), ())
    )

    assert messages(verdicts, POLICY) == [
        'the job runs its GPU pod sets in namespace "team-a", whose queue splits its quota'
        " between pools h100, a100, and they do not all select one pool"
        " (spec.pytorchReplicaSpecs.Master.template: h100;"
        " spec.pytorchReplicaSpecs.Worker.template: any): Kueue puts each pod set on a pool"
        " apart, so the job may run across pools. Fix: set nodeSelector gpu-platform.io/pool:"
        " <pool> on every GPU pod set (docs/queues.md)."
    ]


def test_pod_sets_selecting_both_pools_of_a_split_quota_are_told(analyze: Analyze) -> None:
    # selected_pools gives the pools an affinity names in sorted order.
    both = ("h100", "a100")
    verdicts = analyze(namespace("team-a"), cluster_queue(*both), pytorch_job(both, both))

    (message,) = messages(verdicts, POLICY)
    assert "(spec.pytorchReplicaSpecs.Master.template: a100, h100;" in message


def test_pod_sets_selecting_one_pool_or_a_quota_on_one_pool_pass(analyze: Analyze) -> None:
    # Kueue considers only the flavors whose node labels a pod set's selector matches
    # (`flavorSelector`, flavorassigner.go at v0.19.2).
    pinned = analyze(
        namespace("team-a"), cluster_queue("h100", "a100"), pytorch_job(("h100",), ("h100",))
    )
    whole = analyze(namespace("team-a"), cluster_queue("h100"), pytorch_job((), ()))

    assert messages(pinned, POLICY) == []
    assert messages(whole, POLICY) == []
