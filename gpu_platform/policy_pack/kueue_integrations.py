"""The kinds Kueue manages under the integrations the platform enables, one list for both the
manager's configuration (gpu_platform/kubernetes/kueue.py) and the policy pack's rule that GPU
workloads of a queued namespace go through its queue (`queued_workloads`).

Each entry is Kueue's framework name (the `FrameworkName` constant of its integration,
pkg/controller/jobs/*/*_controller.go at v0.19.2) and the API group and kind it manages. Every
one of these integrations gives an object that names no queue the namespace's LocalQueue named
`default`, where there is one: the jobs' webhooks through `jobframework.BaseWebhook` or their own
`Default` (`ApplyDefaultLocalQueueWithManagedJobsNamespaceSelector`,
pkg/controller/jobframework/defaults.go at v0.19.2).

The pod-based integrations (`pod`, `deployment`, `statefulset` and
`leaderworkerset.x-k8s.io/leaderworkerset`) are left off. With the pod integration on, Kueue's
pod webhook gives every pod of a queued namespace that no managed job owns, a CPU-only one too,
the `default` queue, gates it and adds its finalizer (`Default`,
pkg/controller/jobs/pod/pod_webhook.go at v0.19.2): each becomes a workload of its own, held to
`waitForPodsReady`, and a notebook or a serving replica not ready in time is stopped and, under
a Deployment, started again in a loop. The other three turn the pod integration on with them
(`ImplicitlyEnabledFrameworkNames`, in their *_controller.go), and its webhook then gates such
pods all the same while its controller skips every pod no parent suspended (`Skip`,
pkg/controller/jobs/pod/pod_controller.go): they would wait forever. Kueue 0.19 has no selector
that narrows the pod integration to GPU pods (its v1beta2 configuration has no `podOptions`).
So plain Pods, Deployments, StatefulSets and LeaderWorkerSets are left to the scheduler and the
namespace's ResourceQuota, and the pack refuses one asking for GPUs in a queued namespace.
"""

FRAMEWORKS: dict[str, tuple[str, str]] = {
    "batch/job": ("batch", "Job"),
    "kubeflow.org/mpijob": ("kubeflow.org", "MPIJob"),
    "kubeflow.org/pytorchjob": ("kubeflow.org", "PyTorchJob"),
    "kubeflow.org/tfjob": ("kubeflow.org", "TFJob"),
    "kubeflow.org/xgboostjob": ("kubeflow.org", "XGBoostJob"),
    "kubeflow.org/jaxjob": ("kubeflow.org", "JAXJob"),
    "kubeflow.org/paddlejob": ("kubeflow.org", "PaddleJob"),
    "ray.io/rayjob": ("ray.io", "RayJob"),
    "ray.io/rayservice": ("ray.io", "RayService"),
    "ray.io/raycluster": ("ray.io", "RayCluster"),
    "jobset.x-k8s.io/jobset": ("jobset.x-k8s.io", "JobSet"),
    "workload.codeflare.dev/appwrapper": ("workload.codeflare.dev", "AppWrapper"),
    "trainer.kubeflow.org/trainjob": ("trainer.kubeflow.org", "TrainJob"),
}
"""Kueue's integrations the platform enables, each with the API group and kind it manages."""

THROUGH_JOBS: dict[tuple[str, str], tuple[str, ...]] = {
    ("batch", "CronJob"): ("spec", "jobTemplate", "metadata", "labels"),
}
"""Kinds Kueue manages through the Jobs they create, with where those Jobs' labels are."""

TEMPLATES: frozenset[tuple[str, str]] = frozenset(
    {
        ("core", "PodTemplate"),
        ("argoproj.io", "WorkflowTemplate"),
        ("argoproj.io", "ClusterWorkflowTemplate"),
        ("trainer.kubeflow.org", "TrainingRuntime"),
        ("trainer.kubeflow.org", "ClusterTrainingRuntime"),
        ("serving.kserve.io", "ServingRuntime"),
        ("serving.kserve.io", "ClusterServingRuntime"),
    }
)
"""Kinds whose pods are templates that other objects run (a TrainJob its runtime's), never
workloads of their own."""

DEFAULT_QUEUE = "default"
"""The LocalQueue Kueue gives a managed object of the namespace that names none
(`constants.DefaultLocalQueueName`, pkg/controller/constants/constants.go at v0.19.2)."""


def managed(group: str, kind: str) -> bool:
    """Whether Kueue queues a `group`'s `kind` (`core` for the core group), itself or through
    the Jobs it creates."""
    return (group, kind) in FRAMEWORKS.values() or (group, kind) in THROUGH_JOBS


def supported_kinds() -> str:
    """The kinds Kueue queues, for messages: `Job, MPIJob, ...`."""
    kinds = [kind for _, kind in FRAMEWORKS.values()]
    kinds += [kind for _, kind in THROUGH_JOBS]
    return ", ".join(kinds)
