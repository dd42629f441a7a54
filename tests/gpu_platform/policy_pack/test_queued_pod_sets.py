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


def cluster_queue(*pools: str, **quotas: dict[str, Any]) -> Any:
    """team-a's ClusterQueue, holding nvidia.com/gpu on a flavor of each of `pools` (with the
    fields `quotas` gives a pool), as gpu_platform/kubernetes/kueue.py `cluster_queue` declares
    it."""
    flavors = [
        {"name": pool, "resources": [{"name": "nvidia.com/gpu", **quotas.get(pool, {})}]}
        for pool in pools
    ]
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


def gpu_pod(pools: tuple[str, ...], gpu: str = "nvidia.com/gpu") -> dict[str, Any]:
    """A pod spec asking for a `gpu`, selecting `pools`."""
    spec = gpu_pod_spec()
    spec["containers"][0]["resources"] = {"limits": {gpu: "1"}}
    if pools:
        select_pools(spec, *pools)
    return spec


def pytorch_job(
    master: tuple[str, ...],
    worker: tuple[str, ...],
    gpu: str = "nvidia.com/gpu",
    namespace: str = "team-a",
) -> Any:
    """A PyTorchJob whose master and workers ask for a `gpu`, selecting `master` and `worker`."""
    specs = {
        role: {"replicas": 1, "template": {"spec": gpu_pod(pools, gpu)}}
        for role, pools in (("Master", master), ("Worker", worker))
    }
    return resource(
        "kubernetes:kubeflow.org/v1:PyTorchJob",
        f"train-{namespace}",
        {
            "metadata": {"name": "train", "namespace": namespace},
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
        " of nvidia.com/gpu between pools h100, a100, and they do not each select one pool"
        " (spec.pytorchReplicaSpecs.Master.template: h100;"
        " spec.pytorchReplicaSpecs.Worker.template: any): Kueue puts each pod set on a pool"
        " apart, so the job may run across pools. Fix: set nodeSelector gpu-platform.io/pool:"
        " <pool> on every GPU pod set, the same pool for pod sets that run together"
        " (docs/queues.md)."
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


def test_pod_sets_pinned_to_different_pools_on_purpose_pass(analyze: Analyze) -> None:
    verdicts = analyze(
        namespace("team-a"), cluster_queue("h100", "a100"), pytorch_job(("h100",), ("a100",))
    )

    assert messages(verdicts, POLICY) == []


def test_a_pool_with_no_share_nor_borrowing_splits_nothing(analyze: Analyze) -> None:
    # A flavor admits up to nominalQuota + borrowingLimit (`available`,
    # pkg/cache/scheduler/resource_node.go at v0.19.2): 0 + 0 takes no pod set.
    closed = {"nominalQuota": 0, "borrowingLimit": 0}
    borrowing = {"nominalQuota": 0, "borrowingLimit": 2}
    shut = analyze(
        namespace("team-a"), cluster_queue("h100", "a100", a100=closed), pytorch_job((), ())
    )
    open_ = analyze(
        namespace("team-a"), cluster_queue("h100", "a100", a100=borrowing), pytorch_job((), ())
    )

    assert messages(shut, POLICY) == []
    assert len(messages(open_, POLICY)) == 1


def test_pod_sets_of_a_resource_the_queue_does_not_split_pass(analyze: Analyze) -> None:
    verdicts = analyze(
        namespace("team-a"),
        cluster_queue("h100", "a100"),
        pytorch_job((), (), gpu="nvidia.com/mig-1g.10gb"),
    )

    assert messages(verdicts, POLICY) == []


def test_a_job_in_a_namespace_without_a_split_beside_one_with_it_passes(analyze: Analyze) -> None:
    verdicts = analyze(
        namespace("team-a"),
        namespace("team-b"),
        cluster_queue("h100", "a100"),
        pytorch_job((), (), namespace="team-b"),
    )

    assert messages(verdicts, POLICY) == []


def test_a_jobset_is_judged_and_kinds_kueue_does_not_queue_are_not(analyze: Analyze) -> None:
    # `gpu-workloads-name-their-queue` refuses a LeaderWorkerSet in a queued namespace; a
    # TrainingRuntime is a template a TrainJob runs (kueue_integrations.TEMPLATES).
    jobs = [
        {"name": name, "template": {"spec": {"template": {"spec": gpu_pod(())}}}}
        for name in ("leader", "workers")
    ]
    jobset = resource(
        "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet",
        "train-jobset",
        {"metadata": {"name": "train", "namespace": "team-a"}, "spec": {"replicatedJobs": jobs}},
    )
    runtime = resource(
        "kubernetes:trainer.kubeflow.org/v1alpha1:TrainingRuntime",
        "torch",
        {
            "metadata": {"name": "torch", "namespace": "team-a"},
            "spec": {"template": {"spec": {"replicatedJobs": jobs}}},
        },
    )
    lws = resource(
        "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet",
        "serve",
        {
            "metadata": {"name": "serve", "namespace": "team-a"},
            "spec": {
                "leaderWorkerTemplate": {
                    "size": 2,
                    "leaderTemplate": {"spec": gpu_pod(())},
                    "workerTemplate": {"spec": gpu_pod(())},
                }
            },
        },
    )

    verdicts = analyze(namespace("team-a"), cluster_queue("h100", "a100"), jobset, runtime, lws)

    assert [v.urn for v in verdicts if v.policy_name == POLICY] == [jobset.urn]
