"""A namespace where a team runs GPU workloads under Pod Security `restricted`.

The Namespace enforces, audits and warns at the configured Pod Security level, pinned to
`POD_SECURITY_VERSION`. A LimitRange gives containers that request no CPU or memory a small
request of each, so that the cluster autoscaler counts a node busy while a GPU pod runs there
(`DEFAULT_CONTAINER_REQUESTS`). A ResourceQuota caps the GPUs its pods may request, under every
GPU resource name a node of the platform's can advertise. Optionally a smoke-test Job runs
`nvidia-smi` on one pool, built like any tenant workload (`gpu_pod_spec`), so that `pulumi up`
only succeeds once a restricted pod in the namespace has really reached a GPU. Children are
registered once the component is, and the component once what it depends on (the GPU Operator)
exists, so the smoke test never starts before the operator is installed.

How `pulumi up` waits for the smoke test: pulumi-kubernetes waits for a Job to complete and
fails at once when the Job reports `Failed` with reason `BackoffLimitExceeded` or
`DeadlineExceeded`; any other reason (a `podFailurePolicy` rule's `FailJob`) goes unnoticed
until the wait times out. So the Job does not retry a failed `nvidia-smi` (`backoffLimit: 0`),
except when the pod was disrupted (a spot node reclaimed); it gives up after
`smokeTestDeadlineSeconds`, which must cover scaling the pool up from zero, and on a validated
pool the longest its new node's validation may take (`worst_case_seconds`); and Pulumi's own
timeout is set past that deadline, so the error shown is the Job's, with its pods' warnings. A
failed Job is replaced, and so re-run, on the next `pulumi up` (`pulumi.com/replaceUnready`). A
finished Job is kept, not deleted after a TTL: `pulumi refresh` would find it gone and the next
`pulumi up` would re-create it, scaling a GPU node up from zero every time. It is re-run
whenever its pod changes (a new image pin, another pool): Kubernetes cannot change a Job's pod
template, so Pulumi replaces the Job.

On GKE Ubuntu a new driver of its pool is such a change, and the GPU Operator loads that driver on
the pool's running nodes only after `pulumi up` has applied it, one node at a time, each after
its Jobs (`nvidia_driver.py`): the new Job would find the old driver. There it waits for the new
one (`_waiting_for_the_new_driver`, which the canary gate shares), and its deadline is
`smokeTestDeadlineSeconds` plus the longest the operator keeps a node on its old driver
(`upgrade_hold_seconds`) plus a few late starts of its pods after that (`ROLLOUT_RETRIES`).

A namespace that sets `gpuIdleMinutes` carries it as the label `gpu-platform.io/gpu-idle-minutes`
and gets the job that ends its GPU pods once idle that long (`idle_gpu_pods.py`).
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import pulumi
from pulumi_kubernetes import batch, core
from pulumi_kubernetes import resource as dra

from gpu_platform.accelerators import MIG_SLICES
from gpu_platform.config import (
    OperatorSpec,
    Provisioner,
    QueuesSpec,
    TenantNamespaceSpec,
    quota_setting,
)
from gpu_platform.kubernetes.dra_devices import (
    claim_template_name,
    claim_template_spec,
    device_quota,
    dra_models,
)
from gpu_platform.kubernetes.gpu_pod import gpu_pod_annotations, gpu_pod_spec
from gpu_platform.kubernetes.idle_gpu_pods import IDLE_MINUTES_LABEL
from gpu_platform.kubernetes.kueue import (
    QUEUE_NAME,
    cluster_queue,
    declare,
    local_queue,
    readmission_seconds,
    smoke_test_queue_labels,
    with_borrowing,
)
from gpu_platform.kubernetes.node_validation.duration import worst_case_seconds
from gpu_platform.kubernetes.nvidia_driver import upgrade_hold_seconds
from gpu_platform.kubernetes.pod_security import pod_security_labels
from gpu_platform.kubernetes.queue_labels import QUEUED_NAMESPACE_LABEL
from gpu_platform.kubernetes.rollout_retry import RETRY_LAG_SECONDS
from gpu_platform.kubernetes.unused_shares import unused_shares
from gpu_platform.lock.images import locked
from gpu_platform.node_identity import (
    GPU_RESOURCE,
    MIG_RESOURCE_PREFIX,
    GpuSharer,
    ResolvedPool,
)
from gpu_platform.versions import GPU_SMOKE_TEST_IMAGE, SUPPORTED_KUBERNETES_VERSIONS

QUOTA_NAME = "gpu-quota"
LIMIT_RANGE_NAME = "gpu-pod-defaults"
# What a container of a tenant namespace requests when it says nothing: enough for the cluster
# autoscaler to see a node busy while a GPU pod runs there. It judges a node without the AWS GPU
# label (MIG nodes, gpu_platform/eks/node_labels.py) by its pods' CPU and memory requests over
# allocatable (`Calculate`, simulator/utilization/info.go, cluster-autoscaler-1.35.2), the
# DaemonSets left out: a pod that asks only for `nvidia.com/mig-1g.10gb` counts as nothing there,
# and the node is drained whenever its pods fit elsewhere. Small, so that every replica of a
# shared GPU still fits the smallest GPU node (a g4dn.xlarge has 4 vCPUs for 4 replicas).
DEFAULT_CONTAINER_REQUESTS = {"cpu": "100m", "memory": "256Mi"}
SMOKE_TEST_NAME = "gpu-smoke-test"
# Room for Pulumi's wait beyond the Job's own deadline, so the Job's failure is the one reported.
SMOKE_TEST_AWAIT_MARGIN_SECONDS = 120


@dataclass
class GpuTenantNamespaceArgs:
    namespace: TenantNamespaceSpec
    pools: Sequence[ResolvedPool]
    """Every pool of the stack: which of them hand out whole GPUs decides what the quota's
    `nvidia.com/gpu` cap counts."""
    provisioner: Provisioner = "cluster-autoscaler"
    """What starts the stack's GPU nodes: the smoke test asks it not to disrupt the node, and on
    EKS Auto Mode the quota caps `gpu.nvidia.com` at the counted GPUs from 1.34 (`gpu_quota`)."""
    driver_rollout: OperatorSpec | None = None
    """The GPU Operator's settings where it loads a new driver on the running nodes (GKE
    Ubuntu): the smoke test then waits for its pool's new driver (see the module doc)."""
    queues: QueuesSpec | None = None
    """Kueue's settings where it is on: the namespace gets its ClusterQueue and LocalQueue,
    and the smoke test goes through them."""
    kubernetes_version: str = SUPPORTED_KUBERNETES_VERSIONS[-1]
    """The cluster's Kubernetes version: from 1.34 the quota caps DRA devices too. The newest
    the platform supports by default, whose caps refuse no claim that quota counts against
    `nvidia.com/gpu` (see `gpu_quota`)."""


class GpuTenantNamespace(pulumi.ComponentResource):
    def __init__(
        self,
        name: str,
        args: GpuTenantNamespaceArgs,
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("gpu-platform:kubernetes:GpuTenantNamespace", name, None, opts)
        spec = args.namespace
        child = pulumi.ResourceOptions(parent=self)

        namespace = core.v1.Namespace(
            name,
            metadata={"name": spec.name, "labels": namespace_labels(spec, args.queues is not None)},
            opts=child,
        )
        auto_mode = args.provisioner == "eks-auto-mode"
        hard = gpu_quota(spec, args.pools, args.kubernetes_version, auto_mode=auto_mode)
        quota_hard = gpu_quota(
            spec,
            args.pools,
            args.kubernetes_version,
            queued=args.queues is not None,
            auto_mode=auto_mode,
        )
        quota = core.v1.ResourceQuota(
            f"{name}-{QUOTA_NAME}",
            metadata={"name": QUOTA_NAME, "namespace": namespace.metadata.name},
            spec={"hard": quota_hard},
            opts=child,
        )
        if args.queues is not None:
            queue_object = cluster_queue(spec, hard, args.pools, args.queues)
            for warning in unused_shares(spec.name, queue_object, quota_hard):
                pulumi.log.warn(warning)
            queue = declare(f"{name}-cluster-queue", queue_object, child)
            declare(
                f"{name}-local-queue",
                local_queue(spec.name, spec.name),
                pulumi.ResourceOptions(parent=self, depends_on=[namespace, queue]),
            )
        for accelerator in dra_models(args.pools):
            dra.v1.ResourceClaimTemplate(
                f"{name}-{claim_template_name(accelerator)}",
                metadata={
                    "name": claim_template_name(accelerator),
                    "namespace": namespace.metadata.name,
                },
                spec=cast(Any, claim_template_spec(accelerator)),
                opts=child,
            )
        core.v1.LimitRange(
            f"{name}-{LIMIT_RANGE_NAME}",
            metadata={"name": LIMIT_RANGE_NAME, "namespace": namespace.metadata.name},
            spec=cast(Any, limit_range_spec()),
            opts=child,
        )
        self.namespace_name: pulumi.Output[str] = namespace.metadata.name
        self.quota_name: pulumi.Output[str] = quota.metadata.name
        self.smoke_test_job_name: pulumi.Output[str] | None = None
        if spec.smoke_test_pool is not None:
            pool = next(p for p in args.pools if p.spec.name == spec.smoke_test_pool)
            job_spec = smoke_test_job_spec(
                pool,
                smoke_test_deadline_seconds(spec, pool),
                args.provisioner,
                driver_rollout=args.driver_rollout,
            )
            queue_seconds = 0
            if args.queues is not None:
                queue_seconds = args.queues.smoke_test_queue_minutes * 60
                if waits_for_a_new_driver(pool, args.driver_rollout):
                    queue_seconds += readmission_seconds(args.queues, args.pools)
            job = batch.v1.Job(
                f"{name}-{SMOKE_TEST_NAME}",
                metadata={
                    "name": SMOKE_TEST_NAME,
                    "namespace": namespace.metadata.name,
                    "labels": {
                        **_smoke_test_labels(),
                        **(smoke_test_queue_labels() if args.queues is not None else {}),
                    },
                    "annotations": {
                        # Kueue creates the Job suspended and Kubernetes starts its deadline only
                        # when Kueue resumes it: the wait in the queue comes on top.
                        "pulumi.com/timeoutSeconds": str(
                            job_spec["activeDeadlineSeconds"]
                            + SMOKE_TEST_AWAIT_MARGIN_SECONDS
                            + queue_seconds
                        ),
                        "pulumi.com/replaceUnready": "true",
                    },
                },
                # The provider takes Kubernetes' camelCase field names as they are; the SDK's
                # TypedDicts only know their snake_case spelling.
                spec=cast(Any, job_spec),
                # Kueue refuses a new queue label on a Job that is not suspended
                # (`validateUpdateForQueueName`, pkg/controller/jobframework/validation.go at
                # v0.19.2): turning queues on or off replaces the Job, which runs it once more.
                opts=pulumi.ResourceOptions(
                    parent=self, depends_on=[quota], replace_on_changes=["metadata.labels"]
                ),
            )
            self.smoke_test_job_name = job.metadata.name
        self.register_outputs(
            {
                "namespace_name": self.namespace_name,
                "quota_name": self.quota_name,
                "smoke_test_job_name": self.smoke_test_job_name,
            }
        )


def smoke_test_deadline_seconds(spec: TenantNamespaceSpec, pool: ResolvedPool) -> int:
    """`smokeTestDeadlineSeconds`, and on a validated pool the longest a new node may stay
    tainted before it takes the Job's pod, which does not tolerate the validation taint."""
    return spec.smoke_test_deadline_seconds + worst_case_seconds(
        pool.spec.validation, pool.gpu.count
    )


def namespace_labels(spec: TenantNamespaceSpec, queued: bool = False) -> dict[str, str]:
    """Its Pod Security labels, its idle GPU limit when it sets one (for the policy pack), and
    where its jobs go through Kueue, its queue (for Kueue's webhooks and the policy pack)."""
    labels = pod_security_labels(spec.pod_security)
    if queued:
        labels[QUEUED_NAMESPACE_LABEL] = QUEUE_NAME
    if spec.gpu_idle_minutes is not None:
        labels[IDLE_MINUTES_LABEL] = str(spec.gpu_idle_minutes)
    return labels


def limit_range_spec() -> dict[str, Any]:
    """Default CPU and memory requests for containers that set none (`defaultRequest`: the
    LimitRanger admission plugin fills in requests only, no limits)."""
    return {"limits": [{"type": "Container", "defaultRequest": dict(DEFAULT_CONTAINER_REQUESTS)}]}


def gpu_quota(
    spec: TenantNamespaceSpec,
    pools: Sequence[ResolvedPool],
    kubernetes_version: str,
    queued: bool = False,
    auto_mode: bool = False,
) -> dict[str, str]:
    """`requests.<resource>` for each GPU resource a pod of the namespace could ask for:
    `nvidia.com/gpu` at `gpuQuota` where the stack has exclusive pools or no shared ones, else at
    `sharedGpuQuota`; and every MIG slice of every GPU the platform knows,
    `nvidia.com/mig-<slice>`, at its `migQuota`, 0 where that leaves it out.

    A ResourceQuota caps only the resources it names: admission masks a pod's usage to the names
    in its `hard` (k8s.io/apiserver v0.35.0, Kubernetes 1.35,
    pkg/admission/plugin/resourcequota/controller.go `CheckRequest`). So every slice is named,
    whatever the stack's pools advertise today: a pool added later, or a node partitioned
    another way, is capped at 0 until the namespace is given a quota of it.

    Where whole GPUs and replicas or GKE's partitions are both `nvidia.com/gpu` (a stack with
    exclusive and shared pools), Kubernetes cannot tell them apart, and any cap of replicas
    added to it would let pods take as many more whole GPUs: `gpuQuota` alone caps both there,
    each replica counted as a GPU (config validation refuses a `sharedGpuQuota` there).

    Where the namespace's jobs go through Kueue (`queued`), each GPU resource is allowed what
    the namespace may borrow (`with_borrowing`).

    On a cluster at `kubernetes_version` 1.34 or later, where ResourceClaims are served, NVIDIA's
    DRA driver's own classes, which take any model, are capped at 0, whether the stack has DRA
    pools or not: a driver the platform does not install (EKS Auto Mode's, from 1.36) may
    publish GPUs there (`gpu_platform.kubernetes.dra_devices`). From 1.36, where the stack has
    no DRA pools, the class `gpu.nvidia.com` is capped at the figure of `nvidia.com/gpu`
    instead: Kubernetes then serves pods asking for `nvidia.com/gpu` through it on such a
    driver's nodes, and counts its devices as `nvidia.com/gpu`; on an EKS Auto Mode stack
    (`auto_mode`, which has no DRA pools) from 1.34, where no such class exists before Auto Mode
    brings its driver at 1.36, so an upgrade outside the stack finds the cap in place. Where the
    stack has DRA pools, the devices a namespace's ResourceClaims take of each of their models'
    DeviceClasses are capped at `gpuQuota` too, each class on its own (a quota caps each class
    apart).

    Extended resources can only be capped on requests; pods set GPUs as limits and Kubernetes
    copies them into requests, so the cap holds. `nvidia.com/gpu` is always capped, so that a
    pool added later is never uncapped in the meantime.
    """
    settings = {quota_setting(p.spec.sharing, p.sharer is GpuSharer.GKE) for p in pools}
    whole = "gpuQuota" in settings or "sharedGpuQuota" not in settings
    hard = {f"requests.{GPU_RESOURCE}": str(spec.gpu_quota if whole else spec.shared_gpu_quota)}
    for slice_name in MIG_SLICES:
        hard[f"requests.{MIG_RESOURCE_PREFIX}{slice_name}"] = str(spec.mig_quota.get(slice_name, 0))
    if queued:
        hard = with_borrowing(spec, hard, pools)
    counted = hard[f"requests.{GPU_RESOURCE}"]
    hard.update(
        device_quota(spec.gpu_quota, counted, dra_models(pools), kubernetes_version, auto_mode)
    )
    return hard


EXPECTED_DRIVER_ENV = "EXPECTED_NVIDIA_DRIVER"


def smoke_test_script(on_other_driver: str = "exit 1") -> str:
    """The check, where a GPU on another driver than the expected one runs `on_other_driver`
    (shell) after saying so."""
    return f"""nvidia-smi || exit 1
drivers=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader) || exit 1
for driver in $drivers; do
  case "$driver" in
    "${EXPECTED_DRIVER_ENV}"|"${EXPECTED_DRIVER_ENV}".*) ;;
    *) echo "NVIDIA driver $driver, not the pool's ${EXPECTED_DRIVER_ENV}"; {on_other_driver} ;;
  esac
done
echo "NVIDIA driver $drivers, as expected"
"""


# `nvidia-smi`, then every GPU's driver held to the pool's: the exact version where the platform
# knows it, else its branch. A node that runs another driver than the one the pool's CUDA ceiling
# was computed from (a table out of date, a branch stated wrongly) fails the smoke test, and with
# it `pulumi up`, instead of letting workloads find out.
SMOKE_TEST_SCRIPT = smoke_test_script()
SOAK_MINUTES_ENV = "SOAK_MINUTES"
# After the check, `nvidia-smi` once a minute for the soak: a GPU that falls off the bus or a
# driver that stops answering fails the Job.
SOAK_SCRIPT = f"""minute=0
while [ "$minute" -lt "${SOAK_MINUTES_ENV}" ]; do
  sleep 60
  minute=$((minute + 1))
  nvidia-smi > /dev/null || {{ echo "nvidia-smi failed after $minute minute(s) of soak"; exit 1; }}
done
echo "soaked ${SOAK_MINUTES_ENV} minute(s)"
"""

# GPU feature discovery labels each GPU node with its driver as NVML reports it, the string
# `nvidia-smi --query-gpu=driver_version` prints (NVIDIA/k8s-device-plugin v0.20.0, the
# operator's v26.7.0 pin, internal/lm/nvml.go `newVersionLabeler`), and labels it again every
# minute (`GFD_SLEEP_INTERVAL: 60s`, gpu-operator v26.7.0
# assets/gpu-feature-discovery/0500_daemonset.yaml): after the operator reloaded the driver, the
# label names the new one.
DRIVER_VERSION_NODE_LABEL = "nvidia.com/cuda.driver-version.full"
# EX_TEMPFAIL (sysexits.h): a node the operator's rollout has not reached yet.
ROLLOUT_PENDING_EXIT_CODE = 75
# The pod leaves the node after a minute, so that the operator's upgrade, which waits for the
# Jobs' pods on a node, is not held up by it, and a new pod is not started every second.
ROLLOUT_PENDING_CHECK = smoke_test_script(
    'echo "the GPU Operator has not loaded it on this node yet; a new pod tries again";'
    f" sleep 60; exit {ROLLOUT_PENDING_EXIT_CODE}"
)


# How many late starts (`RETRY_LAG_SECONDS`) the deadline allows once a node of the pool has
# the new driver: the first pod after it, and two more that the scheduler puts on a node not
# upgraded yet, the upgraded one having no room for them (its node affinity only prefers it).
ROLLOUT_RETRIES = 3
# The GPU Operator's upgrade labels each node with where it is: `upgrade-done` once its driver
# pod is of its DaemonSet's current revision, a new node's at once, an upgraded one's after the
# new driver's validation (k8s-operator-libs d720f2557494, the commit gpu-operator v26.7.0's
# go.mod pins, pkg/upgrade/consts.go `UpgradeStateLabelKeyFmt`, `UpgradeStateDone`;
# common_manager.go `ProcessDoneOrUnknownNodes`; the driver's name is `gpu`,
# cmd/gpu-operator/main.go `SetDriverName`).
UPGRADE_STATE_NODE_LABEL = "nvidia.com/gpu-driver-upgrade-state"
UPGRADE_DONE = "upgrade-done"


def smoke_test_job_spec(
    pool: ResolvedPool,
    deadline_seconds: int,
    provisioner: Provisioner = "cluster-autoscaler",
    soak_minutes: int = 0,
    driver_rollout: OperatorSpec | None = None,
) -> dict[str, Any]:
    """A Job that runs `nvidia-smi` once in a restricted pod on `pool` (see the module doc; the
    driver check where the pool's driver is known), then, for `soak_minutes`, once a minute;
    its deadline covers the soak too. `driver_rollout`: the GPU Operator's settings where it
    loads a new driver on the running nodes (GKE Ubuntu), where the Job waits for the pool's
    new driver, its deadline longer by the most the operator may keep a node on the old one."""
    rollout = driver_rollout if waits_for_a_new_driver(pool, driver_rollout) else None
    check = SMOKE_TEST_SCRIPT if rollout is None else ROLLOUT_PENDING_CHECK
    script = check + (SOAK_SCRIPT if soak_minutes else "")
    if rollout is not None:
        deadline_seconds += upgrade_hold_seconds(rollout) + ROLLOUT_RETRIES * RETRY_LAG_SECONDS
    pod = gpu_pod_spec(
        pool,
        locked(GPU_SMOKE_TEST_IMAGE).reference,
        ["sh", "-c", script] if pool.driver else ["nvidia-smi"],
        container_name="nvidia-smi",
        env={
            **({EXPECTED_DRIVER_ENV: pool.driver.version} if pool.driver else {}),
            **({SOAK_MINUTES_ENV: str(soak_minutes)} if soak_minutes else {}),
            # The toolkit mounts `nvidia-smi` for the `utility` capability, whatever the
            # image declares.
            "NVIDIA_DRIVER_CAPABILITIES": "utility",
            # `nvidia-smi` comes from the node's driver, so the image's CUDA requirement is
            # moot; checked, it would fail the test on nodes whose driver predates the image.
            "NVIDIA_DISABLE_REQUIRE": "true",
        },
        requests={"cpu": "100m", "memory": "128Mi"},
        limits={"memory": "128Mi"},
        restart_policy="Never",
    )
    # `nvidia-smi` never calls the Kubernetes API.
    pod["automountServiceAccountToken"] = False
    spec: dict[str, Any] = {
        "backoffLimit": 0,
        "activeDeadlineSeconds": deadline_seconds + soak_minutes * 60,
        "podFailurePolicy": {
            "rules": [
                {
                    "action": "Ignore",
                    # Kubernetes 1.33 and 1.34 require the condition's status; 1.35 defaults it
                    # to True, the status of a pod disrupted.
                    "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
                }
            ]
        },
        "template": {
            "metadata": {
                "labels": _smoke_test_labels(),
                "annotations": gpu_pod_annotations(provisioner),
            },
            "spec": pod,
        },
    }
    if rollout is not None and pool.driver is not None:
        _waiting_for_the_new_driver(spec, pool.driver.version)
    return spec


def waits_for_a_new_driver(pool: ResolvedPool, driver_rollout: OperatorSpec | None) -> bool:
    """Whether the pool's smoke test waits for a new driver on running nodes: where the GPU
    Operator rolls drivers in place and the pool names its driver."""
    return driver_rollout is not None and pool.driver is not None


def _smoke_test_labels() -> dict[str, str]:
    return {"app.kubernetes.io/name": SMOKE_TEST_NAME, "app.kubernetes.io/part-of": "gpu-platform"}


def _waiting_for_the_new_driver(spec: dict[str, Any], version: str) -> None:
    """The pod preferably on a node of its pool that GPU feature discovery labels with
    `version`, and that the operator's upgrade has done with (`UPGRADE_DONE`: after a new image
    of the same version every node has the version's label), and a pod that found another
    driver not counted against the Job's `backoffLimit: 0`: the Job starts another (core/v1
    `PodFailurePolicyAction` `Ignore`). The check (`ROLLOUT_PENDING_CHECK`, and the canary
    gate's driver pod check), not the affinity, keeps it from passing on the old driver: a
    node keeps `upgrade-done` from the last upgrade until the operator has seen the new one.

    Preferred, not required: the cluster autoscaler starts a node only for a pod that fits its
    template of the pool, which it builds from a running node of the pool and keeps after the
    pool went down to zero (kubernetes/autoscaler cluster-autoscaler-1.35.2,
    processors/nodeinfosprovider/mixed_nodeinfos_processor.go, `nodeInfoCache`), old driver's
    label and all; it tries the pod there with the scheduler's Filter plugins alone
    (simulator/clustersnapshot/predicate/plugin_runner.go), and NodeAffinity's Filter matches
    the required terms only, its Score the preferred ones (kubernetes v1.35,
    pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go). A required driver label
    would leave the pod pending on a pool whose nodes are busy, or at zero after an earlier run,
    with no node ever started for it.

    A node being upgraded is cordoned from the start of its upgrade to its end (k8s-operator-libs,
    vendored in gpu-operator v26.7.0, pkg/upgrade/consts.go: `cordon-required` first,
    `uncordon-required` after the new driver's validation), so the pods that keep trying a node
    not upgraded yet leave it to the upgrade. The upgrade's eviction of a GPU pod
    (pkg/upgrade/pod_manager.go, `SchedulePodEviction`: the drain helper's `DeleteOrEvictPods`,
    which evicts) is the smoke test's `DisruptionTarget` rule."""
    spec["template"]["spec"]["affinity"]["nodeAffinity"][
        "preferredDuringSchedulingIgnoredDuringExecution"
    ] = [
        {
            "weight": 100,
            "preference": {
                "matchExpressions": [
                    {"key": DRIVER_VERSION_NODE_LABEL, "operator": "In", "values": [version]}
                ]
            },
        },
        {
            "weight": 100,
            "preference": {
                "matchExpressions": [
                    {"key": UPGRADE_STATE_NODE_LABEL, "operator": "In", "values": [UPGRADE_DONE]}
                ]
            },
        },
    ]
    (container,) = spec["template"]["spec"]["containers"]
    spec["podFailurePolicy"]["rules"].insert(
        0,
        {
            "action": "Ignore",
            "onExitCodes": {
                "containerName": container["name"],
                "operator": "In",
                "values": [ROLLOUT_PENDING_EXIT_CODE],
            },
        },
    )
