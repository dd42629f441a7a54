"""How a pod lands on a GPU pool and passes Pod Security `restricted`: the public recipe.

GPU nodes are tainted, so a pod needs a toleration to be allowed there and node affinity to be
sent there; it asks for its GPU in `limits` (Kubernetes copies the limit into the request of an
extended resource), under the name the pool's device plugin advertises; and in a `restricted`
namespace it must run as a non-root user with every capability dropped, no privilege
escalation and the runtime's default seccomp profile, like any other pod. Most CUDA images
run as root: with `runAsNonRoot` alone the kubelet refuses to start them, so the spec below also
names a non-root user.

Everything is derived from the pool's node identity, so a workload built here follows the pool
when its sharing mode or taints change. The dictionaries use Kubernetes' own camelCase field
names: pass them to `pulumi_kubernetes` resources as they are (the SDK's TypedDicts spell
fields in snake_case, so a type checker wants a `cast` there), or dump them as YAML.

    from gpu_platform.kubernetes.gpu_pod import gpu_pod_spec

    k8s.batch.v1.Job(
        "train",
        metadata={"namespace": "ml-sandbox"},
        spec={
            "template": {
                "spec": gpu_pod_spec(
                    pool, "registry.example.com/train:1.4", ["python", "train.py"],
                    gpus=2, restart_policy="Never",
                )
            }
        },
    )
"""

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from gpu_platform.config import (
    ExclusiveSharing,
    MigSharing,
    MpsSharing,
    Provisioner,
    TimeSlicingSharing,
)
from gpu_platform.drivers import cuda_tuple
from gpu_platform.kubernetes.dra_devices import dra_claim
from gpu_platform.node_identity import (
    POOL_LABEL,
    ZONE_LABEL,
    ResolvedPool,
    sharing_config_name,
)

GPU_POD_ANNOTATIONS = {"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}
"""For a GPU pod's metadata: the cluster autoscaler never drains the node it runs on to pack
pods tighter (cluster-autoscaler 1.35.2 `simulator/drainability/rules/notsafetoevict/rule.go`
blocks the drain: "pod annotated as not safe to evict present"), so a job is not killed
mid-run. Empty GPU nodes still scale away."""
KARPENTER_GPU_POD_ANNOTATIONS = {"karpenter.sh/do-not-disrupt": "true"}
"""The same under `provisioner: karpenter`, which reads no cluster autoscaler annotation:
Karpenter does not consolidate the node while the pod runs, nor evict it, and drifts it only
with the NodePool's `terminationGracePeriod`, after which it deletes the pod
(concepts/disruption.md at v1.14.1, "Pod-Level Controls" and "TerminationGracePeriod"). Empty
GPU nodes still go."""
_POD_ANNOTATIONS: Mapping[Provisioner, Mapping[str, str]] = {
    "cluster-autoscaler": GPU_POD_ANNOTATIONS,
    "karpenter": KARPENTER_GPU_POD_ANNOTATIONS,
    # Auto Mode's Karpenter reads Karpenter's annotation (create-node-pool.adoc, "Disruption",
    # points to Karpenter's disruption docs).
    "eks-auto-mode": KARPENTER_GPU_POD_ANNOTATIONS,
}
WorkloadKind = Literal["Job", "Deployment"]


def gpu_pod_annotations(provisioner: Provisioner, kind: WorkloadKind = "Job") -> dict[str, str]:
    """What keeps the stack's node provisioner from disrupting a running GPU pod's node: for a
    batch `Job`, whose work a drain would lose. A `Deployment`'s pods are replaced elsewhere
    when drained: under Karpenter they get nothing, so that drift (an AMI or driver rollout)
    moves them within their PodDisruptionBudgets instead of waiting up to the NodePool's
    `terminationGracePeriod` (a Deployment that must not be moved opts in with the `Job`
    annotations). Karpenter never consolidates a node that runs a pod (`WhenEmpty`), so nothing
    else moves them. The cluster autoscaler's is kept for both: it drains a node it finds
    underused, GPU pods and all."""
    if provisioner != "cluster-autoscaler" and kind == "Deployment":
        return {}
    return dict(_POD_ANNOTATIONS[provisioner])


# Any non-zero id passes `restricted`; 1000 is the first ordinary account on most base images
# (`ubuntu` on Ubuntu 24.04 ones), so tools that look up the current user find one.
DEFAULT_USER_ID = 1000


def gpu_pod_spec(
    pool: ResolvedPool,
    image: str,
    command: Sequence[str],
    gpus: int = 1,
    *,
    container_name: str = "main",
    env: Mapping[str, str] | None = None,
    requests: Mapping[str, str] | None = None,
    limits: Mapping[str, str] | None = None,
    user_id: int = DEFAULT_USER_ID,
    restart_policy: Literal["Always", "OnFailure", "Never"] | None = None,
    cuda: str | None = None,
) -> dict[str, Any]:
    """A PodSpec with one container that gets `gpus` of the pool's GPUs (or GPU slices).

    `gpus` counts what the pool advertises: whole GPUs, time-sliced or MPS replicas, or MIG
    instances; it cannot exceed what one node of the pool has. `requests` and `limits` add
    other resources (`cpu`, `memory`). The container runs as `user_id` (group too), which must
    not be 0. `restart_policy` is left to the Kubernetes default (`Always`, as Deployments
    need) unless given; Jobs need `Never` or `OnFailure`. `cuda` is the CUDA release the image
    was built for (`12.4`): it must not be newer than the pool's driver runs, and it is set as
    the container's `NVIDIA_REQUIRE_CUDA`, which the policy pack reads and the NVIDIA Container
    Toolkit enforces when the container starts.
    """
    resource = gpu_resource(pool)
    # Time-sliced and MPS replicas may be slices of one GPU: the device plugin refuses more
    # than one per container (`failRequestsGreaterThanOne`), and only at kubelet admission.
    most = 1 if isinstance(pool.spec.sharing, TimeSlicingSharing | MpsSharing) else None
    per_node = most or pool.identity.resources[resource]
    if not 1 <= gpus <= per_node:
        why = (
            f"its GPUs are shared ({pool.spec.sharing.mode}): more than one replica buys no more"
            " GPU, and the device plugin refuses it"
            if most
            else "what one of its nodes advertises"
        )
        raise ValueError(
            f"gpus={gpus}: a pod on pool {pool.spec.name!r} can get 1 to {per_node} "
            f"{resource} ({why})"
        )
    if user_id == 0:
        raise ValueError("user_id=0: Pod Security `restricted` rejects pods that run as root")
    if cuda is not None:
        env = {**(env or {}), REQUIRE_CUDA_ENV: f"cuda>={_checked_cuda(pool, cuda)}"}
    container: dict[str, Any] = {
        "name": container_name,
        "image": image,
        "command": list(command),
        "resources": {
            **({"requests": dict(requests)} if requests else {}),
            "limits": {**(limits or {}), resource: str(gpus)},
        },
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
        },
    }
    if env:
        container["env"] = [{"name": k, "value": v} for k, v in env.items()]
    spec: dict[str, Any] = {
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": user_id,
            "runAsGroup": user_id,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [container],
        "tolerations": gpu_tolerations(pool),
        "affinity": gpu_node_affinity(pool),
    }
    if restart_policy is not None:
        spec["restartPolicy"] = restart_policy
    return spec


REQUIRE_CUDA_ENV = "NVIDIA_REQUIRE_CUDA"


def _checked_cuda(pool: ResolvedPool, cuda: str) -> str:
    if re.fullmatch(r"\d+\.\d+", cuda) is None:
        raise ValueError(f"cuda={cuda!r}: a CUDA release as major.minor, such as 12.4")
    driver = pool.driver
    if driver is not None and cuda_tuple(cuda) > cuda_tuple(driver.cuda):
        raise ValueError(
            f"cuda={cuda!r}: pool {pool.spec.name!r} runs {driver.describe()}, which runs CUDA"
            f" {driver.cuda} and older; a CUDA {cuda} application fails at its first CUDA call"
            " there. Use an image built for an older CUDA, or a pool with a newer driver"
        )
    return cuda


def gpu_resource(pool: ResolvedPool) -> str:
    """The extended resource a pod asks for on the pool: `nvidia.com/gpu`, or
    `nvidia.com/mig-<slice>` on a MIG pool (whose nodes advertise `nvidia.com/gpu: 0`)."""
    (resource,) = (name for name, count in pool.identity.resources.items() if count)
    return resource


def _gpu_request(pool: ResolvedPool) -> dict[str, str]:
    """How a pod asks for the pool's GPUs: the extended resource to put in `limits`, or on a DRA
    pool the DeviceClass and ResourceClaimTemplate to claim them through."""
    if pool.spec.allocation == "dra":
        return dra_claim(pool)
    return {"resource": gpu_resource(pool)}


def gpu_tolerations(pool: ResolvedPool) -> list[dict[str, str]]:
    """Tolerations for the taints on the pool's nodes: the GPU taint, the pool's own and those
    the cloud adds. Not its startup taints, which are there to keep workloads off a node until
    its slices exist and it has passed validation."""
    return [
        {"key": t.key, "operator": "Equal", "value": t.value, "effect": t.effect}
        if t.value
        else {"key": t.key, "operator": "Exists", "effect": t.effect}
        for t in pool.identity.node_taints
        if t not in pool.identity.startup_taints
    ]


def gpu_node_affinity(pool: ResolvedPool) -> dict[str, Any]:
    """Node affinity that only the pool's nodes satisfy.

    Required rather than preferred: every GPU pool carries the same GPU taint, so without it a
    pod could land on another pool's GPUs; and the autoscaler reads the requirement to choose
    which pool to scale up from zero.
    """
    return _pools_affinity([pool.spec.name])


def _pools_affinity(names: Sequence[str], zone: str | None = None) -> dict[str, Any]:
    expressions = [{"key": POOL_LABEL, "operator": "In", "values": names}]
    if zone is not None:
        expressions.append({"key": ZONE_LABEL, "operator": "In", "values": [zone]})
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": expressions}]
            }
        }
    }


def model_placements(
    pools: Sequence[ResolvedPool], provisioner: Provisioner
) -> dict[str, dict[str, Any]]:
    """What a workload needs to land on any of the pools of one GPU model and sharing mode, by
    `model_name`, as the stack exports it: each with its pools, and a `workload` as
    `pool_placement`'s whose affinity admits all of them and whose tolerations are theirs: the
    GPU taint alone, as no pool with other taints joins. Where several pools fit a pod, the node
    provisioner picks among them: Karpenter the NodePool of the highest weight, so capacity
    already paid for first (`OrderByWeight`, kubernetes-sigs/karpenter
    pkg/utils/nodepool/nodepool.go at v1.14.1), the cluster autoscaler on EKS by its priority
    expander, GKE's by its own expander, which the platform does not rank.

    Pools a pod must not be moved between are not mixed: of another GPU model, sharing mode or
    MIG profile, with EFA or without, EFA pools of other zones (`h100-80gb-efa-us-east-1a`,
    whose affinity also pins its zone, where a model's EFA pools are in several). A canary
    pool, a pool with taints of its own, and a GKE queued-provisioning pool join none: only
    pods that select the canary, or tolerate those taints, are meant to run there, and a queued
    pool's nodes come only through a ProvisioningRequest, for its pods
    (`gpu_platform.gke.capacity_taints`): a pod tolerating
    `cloud.google.com/gke-queued` without one would take a node booked for another job."""
    by_model: dict[str, list[ResolvedPool]] = {}
    for pool in pools:
        if pool.spec.canary_of is None and not pool.spec.taints and not pool.identity.cloud_taints:
            by_model.setdefault(model_name(pool), []).append(pool)
    # Pools of one model whose drivers reach different CUDA versions (an AMI release or driver
    # pinned per pool) are kept apart, named by CUDA: a container built for the newer one fails
    # on the older driver ("CUDA driver version is insufficient"). EFA pools of one model in
    # different zones are kept apart too, named and pinned by zone: EFA traffic does not cross
    # a zone (EC2 user guide, "Elastic Fabric Adapter", limitations), so one job's pods spread
    # over two zones would reach each other over TCP alone. A model's EFA pools in one zone
    # keep the name and affinity they have always had.
    groups: dict[str, list[ResolvedPool]] = {}
    pinned: dict[str, str] = {}
    for name, members in by_model.items():
        by_cuda = len({_cuda(pool) for pool in members}) > 1
        by_zone = len({_efa_zone(pool) for pool in members}) > 1
        for pool in members:
            key = f"{name}-cuda-{_cuda(pool)}" if by_cuda else name
            zone = _efa_zone(pool)
            if by_zone and zone is not None:
                key = f"{key}-{zone}"
                pinned[key] = zone
            groups.setdefault(key, []).append(pool)
    placements = {}
    for name, members in groups.items():
        placements[name] = {
            "pools": [pool.spec.name for pool in members],
            "workload": {
                **_gpu_request(members[0]),
                "tolerations": gpu_tolerations(members[0]),
                "affinity": _pools_affinity([pool.spec.name for pool in members], pinned.get(name)),
                "annotations": gpu_pod_annotations(provisioner, "Job"),
                "deploymentAnnotations": gpu_pod_annotations(provisioner, "Deployment"),
            },
        }
    return placements


def _cuda(pool: ResolvedPool) -> str | None:
    return pool.driver.cuda if pool.driver else None


def _efa_zone(pool: ResolvedPool) -> str | None:
    """An EFA pool's one zone (config requires exactly one on EKS); None for any other pool."""
    return pool.spec.zones[0] if pool.spec.aws.efa and pool.spec.zones else None


def model_name(pool: ResolvedPool) -> str:
    """`h100-80gb-efa`, `t4-time-slicing-4`, `a100-80gb-mig-mixed-all-1g.10gb`, `t4-arm64`: the
    GPU model and, on Arm hosts, `arm64` (the T4G of Graviton g5g instances is a T4: an x86 image
    on it fails to start), then the device plugin config and MIG profile where the GPUs are
    shared, then `efa`, then `dra` where pods claim the GPUs through DRA."""
    parts = [pool.gpu.accelerator]
    if pool.gpu.architecture == "arm64":
        parts.append("arm64")
    sharing = pool.spec.sharing
    if not isinstance(sharing, ExclusiveSharing):
        parts.append(sharing_config_name(sharing))
    if isinstance(sharing, MigSharing):
        parts.append(sharing.profile)
    if pool.spec.aws.efa:
        parts.append("efa")
    if pool.spec.allocation == "dra":
        parts.append("dra")
    return "-".join(parts)


def pool_placement(pool: ResolvedPool, provisioner: Provisioner) -> dict[str, Any]:
    """What a workload needs to land on the pool, as the stack exports it for other teams:
    the resource to put in `limits`, the tolerations, the affinity and the pod annotations
    that keep what launches the stack's GPU nodes (`provisioner`; GKE's autoscaler reads the
    cluster autoscaler's) from draining a node under a running job (`annotations`, for batch
    Jobs; `deploymentAnnotations` for Deployments, `gpu_pod_annotations`), beside the node
    labels, taints and per-node resources they follow from."""
    return {
        "labels": dict(pool.identity.labels),
        "taints": [vars(t) for t in pool.identity.node_taints],
        "resources": dict(pool.identity.resources),
        "workload": {
            **_gpu_request(pool),
            "tolerations": gpu_tolerations(pool),
            "affinity": gpu_node_affinity(pool),
            "annotations": gpu_pod_annotations(provisioner, "Job"),
            "deploymentAnnotations": gpu_pod_annotations(provisioner, "Deployment"),
        },
    }
