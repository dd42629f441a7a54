"""The gate between a canary pool and the pool it leads: a Job on the canary that the other pool's
nodes and driver wait for.

The config only holds a pool to at most its canary's release (`canary_rules`); what the canary
really runs is known only on the cluster. So the order is enforced where it is: the led pool's
node group (EKS), NodePool (Karpenter) or node pool (GKE), and on GKE Ubuntu its NVIDIADriver,
depend on this Job, which depends on the canary's nodes, the canary's NVIDIADriver and the GPU
Operator's release. Its name is derived from the canary's driver and what pins it (an AMI
release, a GKE version, the operator's driver version, and on GKE Ubuntu the canary's
NVIDIADriver, its image included), so a new canary release is a new Job, which Pulumi creates,
and waits for, before it updates the led pool; a release that changes nothing of the canary's
runs nothing again. The Job is the tenant smoke test's (`smoke_test_job_spec`): `nvidia-smi`
and the driver the platform expects, on a node of the canary, started from zero if need be,
then `canarySoakMinutes` of `nvidia-smi` once a minute. pulumi-kubernetes fails `pulumi up` when
the Job fails or passes its deadline, and the led pool is then left as it was. A failed gate
Job is replaced, and so re-run, on the next `pulumi up` (`pulumi.com/replaceUnready`).

It passes only on nodes of the canary's new release. An EKS node group's or GKE node pool's update
has replaced the canary's nodes before the gate starts. Karpenter replaces them by drift, later:
the gate asks for a label only the updated NodePool's nodes carry. On GKE Ubuntu the GPU
Operator loads a new driver on the running nodes after `pulumi up` has changed the NVIDIADriver,
one node at a time, each after its Jobs (`rolls_drivers_in_place`): the gate waits for the new
driver as the smoke test does there, retrying a node still on the old one, and its deadline
covers the operator's rollout reaching one node of the canary.

It runs in the GPU Operator's namespace, where no tenant quota counts its GPU, without a service
account token, under Pod Security `restricted` like any tenant pod.
"""

import hashlib
import json
from typing import Any, cast

import pulumi
from pulumi_kubernetes import batch

from gpu_platform.config import OperatorSpec, Provisioner
from gpu_platform.kubernetes.nvidia_driver import nvidia_driver_for
from gpu_platform.kubernetes.tenant_namespace import (
    SMOKE_TEST_AWAIT_MARGIN_SECONDS,
    smoke_test_job_spec,
)
from gpu_platform.node_identity import ResolvedPool

GATE_NAME_PREFIX = "gpu-canary-gate-"
# The time the canary's first node may take: started from zero, the GPU Operator preparing it.
GATE_START_SECONDS = 900
RELEASE_ANNOTATION = "gpu-platform.io/canary-release"
# Karpenter replaces the nodes of an updated NodePool or EC2NodeClass by drift, after `pulumi up`
# has moved on (karpenter.sh docs, concepts/disruption.md, "Drift"), so an old node of the canary
# could take the gate's pod. The canary's NodePool labels its nodes with the release's id, and the
# gate's pod asks for it: only a node launched from the updated NodePool can run the gate.
RELEASE_NODE_LABEL = "gpu-platform.io/canary-release-id"
POOL_LABEL = "gpu-platform.io/canary-pool"


def canary_release(canary: ResolvedPool, driver_rollout: OperatorSpec | None = None) -> str:
    """What the canary runs, in words: its driver, what pins it, and its pinned GKE version;
    where the operator builds the driver (`driver_rollout`, GKE Ubuntu), a digest of the
    canary's NVIDIADriver too."""
    driver = canary.driver
    if driver is None:
        return "unknown"
    release = f"{driver.version}, {driver.source}"
    # On GKE Ubuntu what pins the driver is the operator's version alone, yet a new GKE version
    # is a new node image and kernel, which the operator builds the driver for again: the
    # canary tries it first all the same. On COS the driver's source names the version already.
    node_version = canary.spec.gcp.node_version
    if node_version is not None and node_version not in release:
        release += f", on GKE {node_version}"
    if driver_rollout is not None:
        release += f", NVIDIADriver {_driver_digest(canary, driver_rollout)}"
    return release


# What of an NVIDIADriver leaves the driver its nodes load as it is: how the operator rolls it
# out, which nodes it selects (the canary's own, always), where its pods may run, and what
# pulls its image.
NOT_THE_DRIVER = ("upgradePolicy", "nodeSelector", "tolerations", "imagePullSecrets")


def _driver_digest(canary: ResolvedPool, operator: OperatorSpec) -> str:
    """A digest of what of the canary's NVIDIADriver makes the driver: a new image
    (`operator.overrides.driver.repository` or `image`) of the same version changes every
    pool's NVIDIADriver (gpu-operator v26.7.0 internal/image/image.go, ImagePath: repository,
    image and version), and the operator rolls it out over each pool's nodes as it does a new
    version, its upgrade moving every node whose driver pod is not of its DaemonSet's current
    revision (k8s-operator-libs, vendored there, pkg/upgrade/common_manager.go
    `podInSyncWithDS`)."""
    spec = nvidia_driver_for(canary, operator)["spec"]
    driver = {key: value for key, value in spec.items() if key not in NOT_THE_DRIVER}
    return hashlib.sha256(json.dumps(driver, sort_keys=True).encode()).hexdigest()[:12]


def canary_release_id(canary: ResolvedPool, driver_rollout: OperatorSpec | None = None) -> str:
    """A short digest of the canary and its release, fit for a name or a label value."""
    release = canary_release(canary, driver_rollout)
    return hashlib.sha256(f"{canary.spec.name}\n{release}".encode()).hexdigest()[:12]


def gate_job_name(canary: ResolvedPool, driver_rollout: OperatorSpec | None = None) -> str:
    """A name of the canary and its release: a new release is a new Job."""
    return f"{GATE_NAME_PREFIX}{canary_release_id(canary, driver_rollout)}"


def canary_node_labels(canary: ResolvedPool, provisioner: Provisioner) -> dict[str, str]:
    """The labels a canary's Karpenter NodePool gives its nodes beside the pool's own: its
    release's id, which only nodes launched from the updated NodePool carry."""
    if provisioner != "karpenter" or canary.spec.canary_of is None:
        return {}
    return {RELEASE_NODE_LABEL: canary_release_id(canary)}


def canary_gate_job(
    canary: ResolvedPool,
    namespace: pulumi.Input[str],
    provisioner: Provisioner,
    opts: pulumi.ResourceOptions,
    driver_rollout: OperatorSpec | None = None,
) -> batch.v1.Job:
    """The gate Job of `canary`; `opts` carry what it waits for (the canary's nodes and driver,
    the GPU Operator). `driver_rollout`: the operator's settings where it loads a new driver on
    the running nodes (GKE Ubuntu)."""
    spec = smoke_test_job_spec(
        canary,
        GATE_START_SECONDS,
        provisioner,
        canary.spec.canary_soak_minutes,
        driver_rollout,
    )
    for term in _node_terms(spec):
        term["matchExpressions"] += [
            {"key": key, "operator": "In", "values": [value]}
            for key, value in canary_node_labels(canary, provisioner).items()
        ]
    return batch.v1.Job(
        f"{canary.spec.name}-canary-gate",
        metadata={
            "name": gate_job_name(canary, driver_rollout),
            "namespace": namespace,
            "labels": {POOL_LABEL: canary.spec.name, "app.kubernetes.io/part-of": "gpu-platform"},
            "annotations": {
                RELEASE_ANNOTATION: canary_release(canary, driver_rollout),
                "pulumi.com/timeoutSeconds": str(
                    spec["activeDeadlineSeconds"] + SMOKE_TEST_AWAIT_MARGIN_SECONDS
                ),
                "pulumi.com/replaceUnready": "true",
            },
        },
        # The provider takes Kubernetes' camelCase field names as they are.
        spec=cast(Any, spec),
        opts=opts,
    )


def _node_terms(spec: dict[str, Any]) -> list[dict[str, Any]]:
    affinity = spec["template"]["spec"]["affinity"]["nodeAffinity"]
    return list(affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"])
