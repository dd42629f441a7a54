"""The gate between a canary pool and the pool it leads: a Job on the canary that the other pool's
nodes wait for.

The config only holds a pool to at most its canary's release (`canary_rules`); what the canary
really runs is known only on the cluster. So the order is enforced where it is: the led pool's
node group (EKS), NodePool (Karpenter) or node pool (GKE) depends on this Job, which depends on
the canary's nodes and the GPU Operator. Its name is derived from the canary's driver and what
pins it (an AMI release, a GKE version, the operator's driver version), so a new canary release
is a new Job, which Pulumi creates, and waits for, before it updates the led pool; a release
that changes nothing of the canary's runs nothing again. The Job is the tenant smoke test's
(`smoke_test_job_spec`): `nvidia-smi` and the driver the platform expects, on a node of the
canary, started from zero if need be, then `canarySoakMinutes` of `nvidia-smi` once a minute.
pulumi-kubernetes fails `pulumi up` when the Job fails or passes its deadline, and the led pool
is then left as it was. A failed gate Job is replaced, and so re-run, on the next `pulumi up`
(`pulumi.com/replaceUnready`).

It runs in the GPU Operator's namespace, where no tenant quota counts its GPU, without a service
account token, under Pod Security `restricted` like any tenant pod.
"""

import hashlib
from typing import Any, cast

import pulumi
from pulumi_kubernetes import batch

from gpu_platform.config import Provisioner
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


def canary_release(canary: ResolvedPool) -> str:
    """What the canary runs, in words: its driver and what pins it."""
    driver = canary.driver
    return "unknown" if driver is None else f"{driver.version}, {driver.source}"


def canary_release_id(canary: ResolvedPool) -> str:
    """A short digest of the canary and its release, fit for a name or a label value."""
    digest = hashlib.sha256(f"{canary.spec.name}\n{canary_release(canary)}".encode()).hexdigest()
    return digest[:12]


def gate_job_name(canary: ResolvedPool) -> str:
    """A name of the canary and its release: a new release is a new Job."""
    return f"{GATE_NAME_PREFIX}{canary_release_id(canary)}"


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
) -> batch.v1.Job:
    """The gate Job of `canary`; `opts` carry what it waits for (the canary's nodes, the GPU
    Operator)."""
    soak = canary.spec.canary_soak_minutes
    deadline = GATE_START_SECONDS + soak * 60
    spec = smoke_test_job_spec(canary, GATE_START_SECONDS, provisioner, soak)
    (term,) = spec["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    term["matchExpressions"] += [
        {"key": key, "operator": "In", "values": [value]}
        for key, value in canary_node_labels(canary, provisioner).items()
    ]
    return batch.v1.Job(
        f"{canary.spec.name}-canary-gate",
        metadata={
            "name": gate_job_name(canary),
            "namespace": namespace,
            "labels": {POOL_LABEL: canary.spec.name, "app.kubernetes.io/part-of": "gpu-platform"},
            "annotations": {
                RELEASE_ANNOTATION: canary_release(canary),
                "pulumi.com/timeoutSeconds": str(deadline + SMOKE_TEST_AWAIT_MARGIN_SECONDS),
                "pulumi.com/replaceUnready": "true",
            },
        },
        # The provider takes Kubernetes' camelCase field names as they are.
        spec=cast(Any, spec),
        opts=opts,
    )
