"""Kueue, which admits each tenant's GPU jobs whole, in turn, within the tenant's quota
(`queues.enabled`).

`Kueue` installs the pinned chart in a namespace of its own and declares a ResourceFlavor per
pool and the cohort every tenant's ClusterQueue joins; `tenant_queue_objects` are a tenant
namespace's ClusterQueue and LocalQueue, which `GpuTenantNamespace` declares. Where pools scale
up all-or-nothing, the component also declares Kueue's ProvisioningRequest checks, which the
ClusterQueues hold on those pools' flavors (`kueue_provisioning.py`).

One source of quota: a tenant's ClusterQueue holds, for each pool, the namespace's quota of the
GPU resource that pool hands out (`tenant_namespace.gpu_quota`, from `gpuQuota`,
`sharedGpuQuota` and `migQuota`), or where several pools hand out that resource the pool's
share of it (`queue.poolQuotas`, whose shares add up to at most the quota: the config's
rules hold them to it); and its ResourceQuota that quota and what Kueue lets it borrow on each pool
(`queue.borrowingLimit`, `with_borrowing`). A ResourceQuota caps a resource over every pool
together, a ClusterQueue each flavor apart, and Kueue admits on a flavor at most its
nominalQuota and borrowingLimit (`available`, pkg/cache/scheduler/resource_node.go at v0.19.2):
so the sums over each resource's flavors are at most the ResourceQuota's cap, and Kueue never admits
a workload the namespace may not run. Kueue counts only the GPU resources
(`quotaCheckStrategy: IgnoreUndeclared`): CPU and memory stay the scheduler's and the
namespace's LimitRange's.

A flavor admits a workload on one pool by its label (`gpu-platform.io/pool`), which Kueue adds
to the pods' node selector, and tolerates the pool's lasting taints (the GPU taint, the pool's
own and the cloud's), as the pods the platform exports placements for do (`gpu_pod.py`); never
the startup taints (MIG slicing, node validation), which keep every workload off a node that
is not ready yet (gpu_platform/kubernetes/node_validation/names.py).

Kueue's admission webhooks (failurePolicy `Fail`, charts/kueue/templates/webhook/manifests.yaml
at v0.19.2) act on the namespaces its `managedJobsNamespaceSelector` selects, here only the
tenant namespaces the platform labels `gpu-platform.io/queue`: Jobs elsewhere (the canary
gates', the reaper's) never wait for Kueue. Helm waits for the manager's Deployment to be ready,
and its readiness probe passes only once its certificates are in place and its webhook server
has started (`setupProbeEndpoints`, cmd/kueue/main.go at v0.19.2), so every object Kueue's
webhooks judge (the flavors, the cohort, the tenants' namespaces with their queues and Jobs)
waits for the release.
"""

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import yaml
from pulumi_kubernetes import apiextensions, core, helm
from pulumi_kubernetes._utilities import get_version as kubernetes_version

from gpu_platform.config import QueuesSpec, TenantNamespaceSpec
from gpu_platform.kubernetes import helm_release
from gpu_platform.kubernetes.gpu_pod import gpu_resource, gpu_tolerations
from gpu_platform.kubernetes.kueue_provisioning import (
    admission_check,
    admission_checks_strategy,
    atomic_classes,
    check_name,
    provisioning_request_config,
)
from gpu_platform.kubernetes.node_validation.admission_policy import declare_policy
from gpu_platform.kubernetes.node_validation.duration import go_duration, until_validated_seconds
from gpu_platform.kubernetes.pod_security import pod_security_labels
from gpu_platform.kubernetes.provisioning_requests import provisioning_request_crd
from gpu_platform.kubernetes.queue_labels import QUEUED_NAMESPACE_LABEL
from gpu_platform.kubernetes.queued_pod_policy import queued_pod_policy
from gpu_platform.kubernetes.rollout_retry import RETRY_LAG_SECONDS
from gpu_platform.lock.images import pinned_version
from gpu_platform.node_identity import POOL_LABEL, ResolvedPool
from gpu_platform.policy_pack.kueue_integrations import DEFAULT_QUEUE, FRAMEWORKS
from gpu_platform.versions import KUEUE_CHART, KUEUE_MANAGER_IMAGE

API_VERSION = "kueue.x-k8s.io/v1beta2"
QUEUE_NAME = DEFAULT_QUEUE
"""The LocalQueue of every tenant namespace: `default`, the one Kueue gives a job that names
none, so that a Job, JobSet or RayJob submitted without the label is queued too."""
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
"""The label by which a job names its LocalQueue (Kueue's `constants.QueueLabel`)."""
RELEASE_NAME = "kueue"
PROVISIONING_REQUESTS_ANNOTATION = "gpu-platform.io/provisioning-requests"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
"""The label by which a job names its WorkloadPriorityClass (Kueue's
`constants.WorkloadPriorityClassLabel`)."""
SMOKE_TEST_PRIORITY_CLASS = "gpu-platform-smoke-test"
SMOKE_TEST_PRIORITY = 100000
"""The smoke tests' priority: above a tenant's jobs, which have 0 unless they name a class of
their own, so that with `BestEffortFIFO` a smoke test is admitted before the tenant's backlog
(priority before creation time, pkg/cache/queue/cluster_queue.go `queueOrderingFunc` at
v0.19.2). A ClusterQueue preempts nothing within itself (`withinClusterQueue: Never`), so
the smoke test never evicts a running job."""
MANAGER_REPLICAS = 2
MANAGER_SELECTOR = {
    "app.kubernetes.io/name": "kueue",
    "app.kubernetes.io/instance": RELEASE_NAME,
    "control-plane": "controller-manager",
}
"""The manager pods' labels (`kueue.selectorLabels`, charts/kueue/templates/_helpers.tpl at
v0.19.2)."""

# The chart's default `controllerManagerConfigYaml` (charts/kueue/values.yaml at v0.19.2): the
# chart renders the value as the manager's whole configuration, so the platform's settings come
# with the defaults they replace. The integrations are every kind the policy pack lets a queued
# namespace run GPUs in (`kueue_integrations`), the kubeflow jobs commented out there among them;
# an integration whose CRD is not installed waits for it.
_MANAGER_CONFIG: dict[str, Any] = {
    "apiVersion": "config.kueue.x-k8s.io/v1beta2",
    "kind": "Configuration",
    "health": {"healthProbeBindAddress": ":8081"},
    "metrics": {"bindAddress": ":8443"},
    "webhook": {"port": 9443},
    "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
    "controller": {
        "groupKindConcurrency": {
            "Job.batch": 5,
            "Pod": 5,
            "Workload.kueue.x-k8s.io": 10,
            "LocalQueue.kueue.x-k8s.io": 5,
            "ClusterQueue.kueue.x-k8s.io": 5,
            "ResourceFlavor.kueue.x-k8s.io": 1,
        }
    },
    "clientConnection": {"qps": 300, "burst": 500},
    "integrations": {"frameworks": list(FRAMEWORKS)},
    "managedJobsNamespaceSelector": {
        "matchExpressions": [{"key": QUEUED_NAMESPACE_LABEL, "operator": "Exists"}]
    },
    "resources": {"quotaCheckStrategy": "IgnoreUndeclared"},
}
# What fair sharing preempts for, in order (the chart's commented example, and Kueue's default
# when the list is empty: apis/config/v1beta2/configuration_types.go `FairSharing` at v0.19.2).
FAIR_SHARING_STRATEGIES = ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]


KUEUE_PODS_READY_TIMEOUT_SECONDS = 1800
"""Kueue's own `waitForPodsReady.timeout`, 30 minutes (`DefaultWaitForPodsReadyTimeout`,
apis/config/v1beta2/defaults.go at v0.19.2)."""
PODS_START_MARGIN_SECONDS = 600
"""Our allowance, once an admitted job's nodes are validated, for its pods to pull their images
(a training image is often several GB) and pass their readiness probes: no source bounds it."""
RECOVERY_TIMEOUT_SECONDS = RETRY_LAG_SECONDS + PODS_START_MARGIN_SECONDS
"""How long Kueue lets a running workload's pods be unready before it evicts it (see
`manager_config`): a queued namespace's smoke test, while its node waits for a new driver, has
no pod at all for up to the Job controller's backoff, and then its new pod's start. The retry
lag's minute for GPU feature discovery's relabelling delays when a pod may pass, not when the
next one starts: a margin here."""
REQUEUE_BACKOFF_BASE_SECONDS = 60
"""How long Kueue waits before it requeues a workload it evicted the first time (see
`manager_config`)."""


def pods_ready_timeout_seconds(pools: Sequence[ResolvedPool]) -> int:
    """How long Kueue waits, from a workload's admission, for all its pods to be ready (see
    `manager_config`): the longest a new node of a pool Kueue admits on may take from its
    scale-up to its validation's end (`until_validated_seconds`, which the autoscaler's
    provisioning timeout is stretched to as well) and our margin for the pods' own start; never
    less than Kueue's own 30 minutes, which covers a node's start where no pool validates."""
    validated = until_validated_seconds(pool.spec for pool in queued_pools(pools))
    return max(KUEUE_PODS_READY_TIMEOUT_SECONDS, validated + PODS_START_MARGIN_SECONDS)


def readmission_seconds(queues: QueuesSpec, pools: Sequence[ResolvedPool]) -> int:
    """How much longer a queued smoke test that waits for its node's new driver may take when
    the autoscaler removes the node during the Job controller's backoff between its pods: the
    next pod then waits for a new node and its validation, so Kueue evicts the Job
    `recoveryTimeout` after its last pod ended, later than the `RETRY_LAG_SECONDS` the Job's
    deadline allows for that gap; requeues it after its first backoff; leaves it inadmissible
    meanwhile, so the head of a busy tenant's backlog may take the quota it freed and the smoke
    test waits in its queue again (`UpdateRequeueState`, pkg/workload/workload.go at v0.19.2);
    and admits it again, whose new node, which has the new driver, is ready within
    `pods_ready_timeout_seconds`. Once as a rule: the driver affinity is only a preference, so
    the re-admitted pod may still land on a node the operator has not reached."""
    return (
        (RECOVERY_TIMEOUT_SECONDS - RETRY_LAG_SECONDS)
        + REQUEUE_BACKOFF_BASE_SECONDS
        + queues.smoke_test_queue_minutes * 60
        + pods_ready_timeout_seconds(pools)
    )


def manager_config(queues: QueuesSpec, pools: Sequence[ResolvedPool]) -> dict[str, Any]:
    """Kueue's `Configuration`: the chart's, Kueue's webhooks on the queued namespaces only,
    only the resources a ClusterQueue declares counted, admitted workloads' pods given the time
    the pools' nodes take to start (`pods_ready_timeout_seconds`), and fair sharing where it is
    on (Kueue turns it on by the key's presence, cmd/kueue/main.go at v0.19.2)."""
    config = dict(_MANAGER_CONFIG)
    # Kueue evicts a workload whose pods are not all ready `timeout` after its admission, or,
    # once they were, not ready again within `recoveryTimeout` (a worker replaced onto a new
    # node), gives its quota back and requeues it, backing off from 1 minute to an hour
    # (`WaitForPodsReady`, apis/config/v1beta2/configuration_types.go at v0.19.2). Kueue 0.19
    # sets it whether the key is there or not (`SetDefaults`, apis/config/v1beta2/defaults.go),
    # and only the `DisableWaitForPodsReady` feature gate turns it off
    # (pkg/util/waitforpodsready/waitforpodsready.go): its 30-minute default is shorter than a
    # validated node's start, which falls within the timeout where a job's pods wait for new
    # nodes, and on an atomic pool, whose jobs are admitted once their nodes are asked for.
    # An evicted job on a GKE queued pool gives back its ProvisioningRequest's nodes and queues
    # for capacity again (`CleanupProvisioningRequestsOnEviction`, on by default in 0.19).
    #
    # `recoveryTimeout` counts from a running workload's PodsReady turning false (a worker lost
    # with its node), and defaults to `timeout` (`SetDefaults`): it is kept well under that,
    # since the job's other N-1 GPU nodes bill idle while it runs, and on an atomic or queued
    # pool the lost worker never gets a node of its own (Kueue puts `consume-provisioning-request`
    # into the pod template, pkg/controller/admissionchecks/provisioning/controller.go at
    # v0.19.2, and the cluster autoscaler never scales up for such a pod,
    # processors/provreq/pods_filter.go at cluster-autoscaler-1.33.6). It must still outlast the
    # gap between a queued namespace's smoke-test pods during a driver rollout (the Job
    # controller's backoff, within `RETRY_LAG_SECONDS`, and the next pod's start on the same
    # node): its PodsReady drops with each pod (`ready + succeeded >= count`,
    # pkg/controller/jobs/job/job_controller.go at v0.19.2), and evictions there would requeue
    # it for up to an hour. Where the autoscaler removes the idle node during the backoff, the
    # next pod's new node takes longer and Kueue evicts the smoke test, as a rule once:
    # `pulumi up` waits for that (`readmission_seconds`). The same value on
    # every stack: a shorter one where no driver rolls in place would save minutes of idle
    # nodes on a worker's loss, for a setting more to reason about.
    config["waitForPodsReady"] = {
        "timeout": go_duration(pods_ready_timeout_seconds(pools)),
        "recoveryTimeout": go_duration(RECOVERY_TIMEOUT_SECONDS),
        "requeuingStrategy": {
            "timestamp": "Eviction",
            "backoffBaseSeconds": REQUEUE_BACKOFF_BASE_SECONDS,
            "backoffMaxSeconds": 3600,
        },
    }
    if queues.fair_sharing:
        config["fairSharing"] = {"preemptionStrategies": list(FAIR_SHARING_STRATEGIES)}
    return config


def kueue_values(queues: QueuesSpec, pools: Sequence[ResolvedPool]) -> dict[str, Any]:
    """The chart's values: the pinned manager image (the chart's own default is a staging image
    at a branch tag), the manager's configuration and the pods' annotation that restarts them
    where the ProvisioningRequest API comes or goes (`provisioning_request_annotation`)."""
    return {
        "controllerManager": {
            # Kueue's webhooks fail closed (failurePolicy `Fail`,
            # charts/kueue/templates/webhook/manifests.yaml at v0.19.2): while no manager runs,
            # no Job or pod of a tenant namespace is created. Two replicas on different nodes
            # where the cluster has two (one leads, both serve webhooks) and a budget keep one
            # through a drain.
            "replicas": MANAGER_REPLICAS,
            "podDisruptionBudget": {"enabled": True, "minAvailable": 1},
            "topologySpreadConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "kubernetes.io/hostname",
                    "whenUnsatisfiable": "ScheduleAnyway",
                    "labelSelector": {"matchLabels": MANAGER_SELECTOR},
                }
            ],
            "manager": {
                "image": {
                    "repository": KUEUE_MANAGER_IMAGE.repository,
                    "tag": pinned_version(KUEUE_MANAGER_IMAGE),
                    "pullPolicy": "IfNotPresent",
                },
                "podAnnotations": provisioning_request_annotation(pools),
            },
        },
        "managerConfig": {
            "controllerManagerConfigYaml": yaml.safe_dump(
                manager_config(queues, pools), sort_keys=False
            )
        },
    }


def provisioning_request_annotation(pools: Sequence[ResolvedPool]) -> dict[str, str]:
    """The manager pods' annotation saying whether the stack's pools scale up through
    ProvisioningRequests. Kueue sets its provisioning controller up only if the API is served
    when the manager starts (`ServerSupportsProvisioningRequest`, cmd/kueue/main.go at v0.19.2),
    and nothing restarts it when the CRD comes later: without its controller the provisioning
    AdmissionCheck never turns active, and a ClusterQueue that holds an inactive check admits
    nothing on any flavor (`updateQueueStatus`, pkg/cache/scheduler/clusterqueue.go). The chart
    writes the annotation into the manager's pod template (charts/kueue/templates/manager/
    manager.yaml at v0.19.2), so the `up` that adds the first atomic pool, whose CRD the
    release waits for, rolls the manager, which then finds the API."""
    expected = bool(atomic_classes(queued_pools(pools)))
    return {PROVISIONING_REQUESTS_ANNOTATION: "enabled" if expected else "disabled"}


def queued_pools(pools: Sequence[ResolvedPool]) -> list[ResolvedPool]:
    """The pools Kueue admits tenants' jobs on: every pool but the canaries. A canary hands out
    the GPUs of the pool it leads, and a flavor of its own would let Kueue admit a tenant's
    quota on each of the two while the namespace's ResourceQuota holds it once over both. A
    flavor's node labels are added to the node selector of the pods Kueue admits on it
    (`FromAssignment`, pkg/podset/podset.go at v0.19.2), so a queued job admitted on the led
    pool never lands on its canary; the canary's gate runs in the GPU Operator's namespace,
    which Kueue does not manage, and the config keeps queued namespaces' smoke tests off
    canaries."""
    return [pool for pool in pools if pool.spec.canary_of is None]


def flavor_name(pool: ResolvedPool) -> str:
    """A pool's ResourceFlavor: the pool's name, a DNS label already."""
    return pool.spec.name


def resource_flavor(pool: ResolvedPool) -> dict[str, Any]:
    """The pool's ResourceFlavor (see the module doc)."""
    return {
        "apiVersion": API_VERSION,
        "kind": "ResourceFlavor",
        "metadata": {"name": flavor_name(pool)},
        "spec": {"nodeLabels": {POOL_LABEL: pool.spec.name}, "tolerations": gpu_tolerations(pool)},
    }


def cohort(queues: QueuesSpec) -> dict[str, Any]:
    """The cohort the tenants' ClusterQueues share; its quotas are theirs alone."""
    return {"apiVersion": API_VERSION, "kind": "Cohort", "metadata": {"name": queues.cohort}}


def cluster_queue(
    spec: TenantNamespaceSpec,
    hard: dict[str, str],
    pools: Sequence[ResolvedPool],
    queues: QueuesSpec,
) -> dict[str, Any]:
    """The tenant's ClusterQueue: for each GPU resource, a resource group of the pools that
    hand it out, each flavor at the pool's share of the namespace's quota of that resource
    (`queue.poolQuotas`) where it splits it, else at the quota (`hard`, its ResourceQuota's
    `spec.hard`), with the tenant's borrowing and lending limits."""
    groups: dict[str, list[dict[str, Any]]] = {}
    pools = queued_pools(pools)
    for pool in pools:
        resource = gpu_resource(pool)
        nominal = spec.queue.pool_quotas.get(pool.spec.name, int(hard[f"requests.{resource}"]))
        quota: dict[str, Any] = {"name": resource, "nominalQuota": nominal}
        quota["borrowingLimit"] = spec.queue.borrowing_limit
        if spec.queue.lending_limit is not None:
            quota["lendingLimit"] = spec.queue.lending_limit
        groups.setdefault(resource, []).append({"name": flavor_name(pool), "resources": [quota]})
    queue_spec: dict[str, Any] = {
        "cohortName": queues.cohort,
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": spec.name}},
        "queueingStrategy": "BestEffortFIFO",
        # Kueue's default, MayStopSearch, admits a job on the first flavor where it fits by
        # borrowing, though its own share on the next pool sits idle; that borrowing counts
        # against the tenant's fair share and makes the job one a lender may reclaim.
        # TryNextFlavor looks on for a flavor where it fits without borrowing; failing one, it
        # ranks borrowing above preempting (the default BorrowingOverPreemption) and, among
        # flavors where it borrows, the lowest cohort level that fits, the same for any
        # borrowing in this flat cohort, so the first such flavor in stack order still wins
        # (`shouldTryNextFlavor`, `isPreferred`, pkg/scheduler/flavorassigner/flavorassigner.go;
        # `FindHeightOfLowestSubtreeThatFits`,
        # pkg/scheduler/preemption/classical/hierarchical_preemption.go at v0.19.2).
        "flavorFungibility": {"whenCanBorrow": "TryNextFlavor"},
        "resourceGroups": [
            {"coveredResources": [resource], "flavors": flavors}
            for resource, flavors in groups.items()
        ],
    }
    strategy = admission_checks_strategy(pools, flavor_name)
    if strategy:
        queue_spec["admissionChecksStrategy"] = strategy
    if queues.fair_sharing:
        # A tenant below its share takes back what others borrowed, newest workloads first.
        queue_spec["preemption"] = {"reclaimWithinCohort": "Any", "withinClusterQueue": "Never"}
    return {
        "apiVersion": API_VERSION,
        "kind": "ClusterQueue",
        "metadata": {"name": spec.name},
        "spec": queue_spec,
    }


def with_borrowing(
    spec: TenantNamespaceSpec, hard: dict[str, str], pools: Sequence[ResolvedPool]
) -> dict[str, str]:
    """The namespace's ResourceQuota `hard` where its jobs go through Kueue: each GPU resource
    allowed `queue.borrowingLimit` more for each pool Kueue admits on that hands it out, so
    that pods Kueue admits on quota it borrowed are not refused by the namespace's own cap.
    Kueue holds the limit on each flavor apart, with no bound over a resource's flavors
    together (`ResourceQuota.borrowingLimit`, apis/kueue/v1beta2/clusterqueue_types.go at
    v0.19.2), so a tenant whose quota two pools split may borrow it on both at once."""
    flavors = Counter(f"requests.{gpu_resource(pool)}" for pool in queued_pools(pools))
    return {
        key: str(int(value) + spec.queue.borrowing_limit * flavors[key])
        for key, value in hard.items()
    }


def local_queue(namespace: str, cluster_queue_name: str) -> dict[str, Any]:
    """The namespace's LocalQueue, `QUEUE_NAME`, onto its ClusterQueue."""
    return {
        "apiVersion": API_VERSION,
        "kind": "LocalQueue",
        "metadata": {"name": QUEUE_NAME, "namespace": namespace},
        "spec": {"clusterQueue": cluster_queue_name},
    }


def smoke_test_queue_labels() -> dict[str, str]:
    """A smoke-test Job's labels where queues are on: the namespace's queue, which Kueue would
    give it anyway, and the smoke tests' priority class."""
    return {QUEUE_NAME_LABEL: QUEUE_NAME, PRIORITY_CLASS_LABEL: SMOKE_TEST_PRIORITY_CLASS}


def smoke_test_priority_class() -> dict[str, Any]:
    """The WorkloadPriorityClass of the tenants' smoke tests (`SMOKE_TEST_PRIORITY`)."""
    return {
        "apiVersion": API_VERSION,
        "kind": "WorkloadPriorityClass",
        "metadata": {"name": SMOKE_TEST_PRIORITY_CLASS},
        "value": SMOKE_TEST_PRIORITY,
        "description": "gpu-platform's smoke tests, before each tenant's waiting jobs",
    }


def declare(name: str, obj: dict[str, Any], opts: pulumi.ResourceOptions) -> pulumi.Resource:
    """`obj` as a custom resource of the stack."""
    if "spec" in obj or "value" not in obj:
        return apiextensions.CustomResource(
            name,
            api_version=obj["apiVersion"],
            kind=obj["kind"],
            metadata=obj["metadata"],
            spec=obj.get("spec", {}),
            opts=opts,
        )
    # A WorkloadPriorityClass keeps its fields at the top, beside its metadata, where the
    # SDK's `CustomResource` takes only `spec`: the provider's own type takes the object whole.
    return pulumi.CustomResource(
        f"kubernetes:{obj['apiVersion']}:{obj['kind']}",
        name,
        dict(obj),
        pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(version=kubernetes_version())),
    )


@dataclass
class KueueArgs:
    queues: QueuesSpec
    pools: Sequence[ResolvedPool]
    protect: bool = False
    """Protect the release (`protect`): its CRDs are templates of the chart, so uninstalling it
    deletes every queue and every waiting workload with them."""
    provisioning_request_crd: bool = False
    """Install the cluster autoscaler's ProvisioningRequest CRD first, for an EKS stack whose
    atomic pools' autoscaler the platform installs: Kueue sets its provisioning controller up
    only where the API is served when it starts (gpu_platform/kubernetes/kueue_provisioning.py)."""


class Kueue(pulumi.ComponentResource):
    """Kueue's namespace and release, a ResourceFlavor per pool and the tenants' cohort."""

    def __init__(self, name: str, args: KueueArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:kubernetes:Kueue", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        namespace = core.v1.Namespace(
            f"{name}-namespace",
            # The manager's pod and container security contexts (charts/kueue/values.yaml at
            # v0.19.2: non-root, RuntimeDefault seccomp, no privilege escalation, every
            # capability dropped) are what `restricted` asks for.
            metadata={"name": args.queues.namespace, "labels": pod_security_labels("restricted")},
            opts=child,
        )
        crds = (
            # Deleting the CRD deletes every ProvisioningRequest, and the nodes they hold go.
            [
                provisioning_request_crd(
                    f"{name}-provisioning-requests",
                    pulumi.ResourceOptions(parent=self, protect=args.protect),
                )
            ]
            if args.provisioning_request_crd
            else []
        )
        self.release = helm.v3.Release(
            name,
            name=RELEASE_NAME,
            chart=f"{KUEUE_CHART.repository}/{KUEUE_CHART.name}",
            version=KUEUE_CHART.version,
            namespace=namespace.metadata.name,
            values=kueue_values(args.queues, args.pools),
            **helm_release.KUEUE.release_args(),
            opts=pulumi.ResourceOptions(parent=self, protect=args.protect, depends_on=crds),
        )
        after_release = pulumi.ResourceOptions(parent=self, depends_on=[self.release])
        pools = queued_pools(args.pools)
        for pool in pools:
            declare(f"{name}-{pool.spec.name}", resource_flavor(pool), after_release)
        declare(f"{name}-cohort", cohort(args.queues), after_release)
        declare(f"{name}-smoke-test-priority", smoke_test_priority_class(), after_release)
        for cls in atomic_classes(pools):
            check = check_name(cls)
            config = provisioning_request_config(cls, pools)
            declare(f"{name}-{check}-config", config, after_release)
            declare(f"{name}-{check}-check", admission_check(cls), after_release)
        # Before the tenants, whose namespaces get the label it selects, and their smoke tests.
        declare_policy(f"{name}-gpu-pods", queued_pod_policy(QUEUED_NAMESPACE_LABEL), child)
        self.register_outputs({"release": self.release.name})
