"""The gate between a canary pool and the pool it leads: a Job on the canary that the other pool's
nodes and driver wait for, passed on a node of the canary's new release that proved itself.

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
one node at a time, each after its Jobs (`rolls_drivers_in_place`). There the gate's pod first
checks, from an init container (`canary_driver_check`), that its node's driver pod belongs to
the canary's NVIDIADriver, runs the image the NVIDIADriver names now, as its DaemonSet's
template does, and is Ready: proof that the node loads the driver of the NVIDIADriver as
`pulumi up` left it. Every part of the NVIDIADriver that names the gate
(`_driver_digest`: its version, repository and image, the rest fixed) is in that image, so a
new image of the same version, which `nvidia-smi` reports as the old one's, is proven too.
Then `nvidia-smi` checks the driver version. A node not there yet is retried, not counted:
its pod leaves after a minute and the Job starts another, and the deadline covers the
operator's rollout reaching one node of the canary.

On a canary that validates its nodes the proof is the node's validation: the gate's pod
tolerates the validation taint and runs the proof (`canary_proof_check`) beside the `nvidia-smi`
check, which waits for it before it touches the GPU. It passes once the node is labelled
`passed` with the canary's new driver (and pinned GKE version); it fails the gate, naming the
failed check, when the node fails; and it leaves a node whose proof is of an earlier release,
not counted, for another pod. Waiting on a node being validated, the pod is there when the node
fails, which it could not be if it waited for the taint to come off. The smoke test stays: its
pending pod starts a canary node from zero (the validator requests nothing, so no autoscaler
starts a node for it), and it proves what the validator, which takes the GPUs through the
runtime class, does not: that a restricted pod gets a GPU from the device plugin.

It runs in the GPU Operator's namespace, where no tenant quota counts its GPU, under Pod
Security `restricted` like any tenant pod. Its pod mounts no service account token; a token of
the gate's own service account is projected into the scripts' containers alone. The account may
get Nodes (`PROOF_CLUSTER_RULES`) and list Events in that namespace (`PROOF_RULES`) for the
proof, and on GKE Ubuntu list pods and get DaemonSets there (`ROLE_RULES`) for the driver check.
"""

import hashlib
import json
from pathlib import Path
from typing import Any, cast

import pulumi
from pulumi_kubernetes import batch, core

from gpu_platform.config import OperatorSpec, Provisioner
from gpu_platform.instance import part_name
from gpu_platform.kubernetes.account_roles import Grant, declare_account_roles
from gpu_platform.kubernetes.canary_driver_check import PENDING_EXIT_CODE, TOKEN_DIR
from gpu_platform.kubernetes.canary_proof_check import (
    FAILED,
    PENDING,
    PROOF_DIR,
    PROVEN,
)
from gpu_platform.kubernetes.canary_proof_check import (
    FAILED_EXIT_CODE as PROOF_FAILED_EXIT_CODE,
)
from gpu_platform.kubernetes.canary_proof_check import (
    PENDING_EXIT_CODE as PROOF_PENDING_EXIT_CODE,
)
from gpu_platform.kubernetes.node_validation.duration import (
    NODE_START_SECONDS,
    worst_case_seconds,
)
from gpu_platform.kubernetes.node_validation.names import VALIDATION_TAINT
from gpu_platform.kubernetes.nvidia_driver import driver_image_path, nvidia_driver_for
from gpu_platform.kubernetes.operator_values import taint_toleration
from gpu_platform.kubernetes.script_pod import NO_BYTECODE, SCRIPT_DIR, content_named
from gpu_platform.kubernetes.tenant_namespace import (
    SMOKE_TEST_AWAIT_MARGIN_SECONDS,
    smoke_test_job_spec,
)
from gpu_platform.lock.images import locked
from gpu_platform.node_identity import ResolvedPool
from gpu_platform.versions import CANARY_GATE_CHECK_IMAGE

GATE_NAME_PREFIX = "gpu-canary-gate-"
RELEASE_ANNOTATION = "gpu-platform.io/canary-release"
# Karpenter replaces the nodes of an updated NodePool or EC2NodeClass by drift, after `pulumi up`
# has moved on (karpenter.sh docs, concepts/disruption.md, "Drift"), so an old node of the canary
# could take the gate's pod. The canary's NodePool labels its nodes with the release's id, and the
# gate's pod asks for it: only a node launched from the updated NodePool can run the gate.
RELEASE_NODE_LABEL = "gpu-platform.io/canary-release-id"
POOL_LABEL = "gpu-platform.io/canary-pool"
CHECK_SCRIPT = Path(__file__).with_name("canary_driver_check.py")
PROOF_SCRIPT = Path(__file__).with_name("canary_proof_check.py")
# The proof imports the driver check's API connection.
SCRIPTS = (CHECK_SCRIPT, PROOF_SCRIPT)
PROOF_CONTAINER = "validation-proof"
CHECK_CONTAINER = "driver-rollout"
ROLE_RULES = [
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
    {"apiGroups": ["apps"], "resources": ["daemonsets"], "verbs": ["get"]},
]
"""What the driver check reads, in the operator's namespace only: the driver pods of its node,
and their DaemonSet."""
# The least a projected token may live (core/v1 ServiceAccountTokenProjection
# `expirationSeconds`: at least 10 minutes): the check runs for seconds.
TOKEN_SECONDS = 600


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


def gate_start_seconds(canary: ResolvedPool) -> int:
    """How long the gate's pod may wait for a node of the canary it can run on: the node's start
    and, on a validated pool, its validation at the longest its tools may take: no pod of the
    gate tolerates the validation taint."""
    return NODE_START_SECONDS + worst_case_seconds(canary.spec.validation, canary.gpu.count)


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
        gate_start_seconds(canary),
        provisioner,
        canary.spec.canary_soak_minutes,
        driver_rollout,
    )
    for term in _node_terms(spec):
        term["matchExpressions"] += [
            {"key": key, "operator": "In", "values": [value]}
            for key, value in canary_node_labels(canary, provisioner).items()
        ]
    rollout = driver_rollout is not None and canary.driver is not None
    proof = proves_by_validation(canary)
    if rollout or proof:
        access = _gate_access(canary, namespace, opts, rollout, proof)
        opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=access))
        spec["template"]["spec"] = _with_token(spec["template"]["spec"], canary)
    if rollout and driver_rollout is not None:
        spec["template"]["spec"] = driver_check_pod_spec(
            spec["template"]["spec"], canary, driver_rollout
        )
        # Like the `nvidia-smi` check's, a pod that found the node not upgraded yet is not
        # counted: the Job starts another (core/v1 PodFailurePolicy; an init container's exit
        # code is matched too, kubernetes pkg/controller/job/pod_failure_policy.go).
        spec["podFailurePolicy"]["rules"].insert(
            1,
            {
                "action": "Ignore",
                "onExitCodes": {
                    "containerName": CHECK_CONTAINER,
                    "operator": "In",
                    "values": [PENDING_EXIT_CODE],
                },
            },
        )
    if proof:
        _proven_first(spec, canary)
    return batch.v1.Job(
        part_name(f"{canary.spec.name}-canary-gate"),
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


def proves_by_validation(canary: ResolvedPool) -> bool:
    """Whether the canary's gate waits for its node's validation: where the canary validates its
    nodes against a driver the platform knows."""
    return canary.spec.validation.enabled and canary.driver is not None


def expected_release(canary: ResolvedPool) -> str:
    """The `validated-release` a node of the canary's new release shows, where the config says
    it: a GKE node's kubelet version, `v` and the pinned node version (`gcp.nodeVersion`,
    `1.33.5-gke.1080000`, which the node reports as `v1.33.5-gke.1080000`). An EKS node's AMI id
    is not in the config (an AMI release names one per region and architecture), and Karpenter's
    nodes are picked by the release's id already; "" there."""
    node_version = canary.spec.gcp.node_version
    return "" if node_version is None else f"v{node_version}"


# The `nvidia-smi` check waits for the proof's word before it touches the GPU.
WAIT_FOR_PROOF = f"""until [ -e {PROOF_DIR}/{PROVEN} ]; do
  [ -e {PROOF_DIR}/{FAILED} ] && exit 1
  [ -e {PROOF_DIR}/{PENDING} ] && exit {PROOF_PENDING_EXIT_CODE}
  sleep 5
done
"""


def _proven_first(spec: dict[str, Any], canary: ResolvedPool) -> None:
    """The gate's pod with the proof (`canary_proof_check`) beside its `nvidia-smi` check, which
    waits for it; on a node still validating, since the pod tolerates the validation taint: the
    pod is there, its failure seen, when validation fails. A failed validation fails the Job,
    even where the node is then deleted (the rule comes before the disruption's); a pod that
    found no proof of the new release is not counted."""
    pod = spec["template"]["spec"]
    (smoke_test,) = pod["containers"]
    command = smoke_test["command"]
    smoke_test["command"] = [*command[:-1], WAIT_FOR_PROOF + command[-1]]
    shared = {"name": "proof", "mountPath": str(PROOF_DIR)}
    smoke_test["volumeMounts"] = [*smoke_test.get("volumeMounts", []), shared]
    pod["containers"] = [smoke_test, _proof_container(canary, shared)]
    pod["volumes"] = [*pod.get("volumes", []), {"name": "proof", "emptyDir": {}}]
    pod["tolerations"] = [*pod.get("tolerations", []), taint_toleration(VALIDATION_TAINT)]
    rules = spec["podFailurePolicy"]["rules"]
    rules.insert(
        0,
        {
            "action": "FailJob",
            "onExitCodes": {
                "containerName": PROOF_CONTAINER,
                "operator": "In",
                "values": [PROOF_FAILED_EXIT_CODE],
            },
        },
    )
    for container in (PROOF_CONTAINER, smoke_test["name"]):
        rule = {
            "action": "Ignore",
            "onExitCodes": {
                "containerName": container,
                "operator": "In",
                "values": [PROOF_PENDING_EXIT_CODE],
            },
        }
        if rule not in rules:
            rules.append(rule)


def _proof_container(canary: ResolvedPool, shared: dict[str, Any]) -> dict[str, Any]:
    driver = canary.driver.version if canary.driver is not None else ""
    release = expected_release(canary)
    return {
        **_script_container(PROOF_CONTAINER, PROOF_SCRIPT),
        "env": [
            *_POD_ENV,
            {"name": "EXPECTED_DRIVER", "value": driver},
            *([{"name": "EXPECTED_RELEASE", "value": release}] if release else []),
            NO_BYTECODE,
        ],
        "volumeMounts": [*_SCRIPT_MOUNTS, shared],
    }


def _node_terms(spec: dict[str, Any]) -> list[dict[str, Any]]:
    affinity = spec["template"]["spec"]["affinity"]["nodeAffinity"]
    return list(affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"])


def check_names(canary: ResolvedPool) -> tuple[str, str]:
    """The names of the canary's gate's service account (and its roles and bindings), and of its
    scripts' ConfigMap, named after their content: new scripts are a new ConfigMap, and a new
    gate Job."""
    account = f"{GATE_NAME_PREFIX}{canary.spec.name}"
    return account, content_named(account, *(path.read_text() for path in SCRIPTS))


_POD_ENV = [
    {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
    {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
]
_SCRIPT_MOUNTS = [
    {"name": "driver-check", "mountPath": SCRIPT_DIR, "readOnly": True},
    {"name": "driver-check-token", "mountPath": str(TOKEN_DIR), "readOnly": True},
]


def _script_container(name: str, script: Path) -> dict[str, Any]:
    """A container of the pinned Python image running one of the gate's scripts: the smoke
    test's image has no Python and its container no API access."""
    return {
        "name": name,
        "image": locked(CANARY_GATE_CHECK_IMAGE).reference,
        "command": ["python3", f"{SCRIPT_DIR}/{script.name}"],
        "resources": {
            "requests": {"cpu": "10m", "memory": "64Mi"},
            "limits": {"memory": "64Mi"},
        },
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "readOnlyRootFilesystem": True,
        },
    }


def _with_token(pod: dict[str, Any], canary: ResolvedPool) -> dict[str, Any]:
    """The gate's pod as the gate's service account, with the scripts and the account's token,
    which only the scripts' containers mount; the pod mounts none of its own."""
    account, config_map = check_names(canary)
    token = {"path": "token", "expirationSeconds": TOKEN_SECONDS}
    # Every namespace has it: the cluster's CA, which the API server's certificate chains to.
    ca = {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}
    return {
        **pod,
        "serviceAccountName": account,
        "volumes": [
            *pod.get("volumes", []),
            {"name": "driver-check", "configMap": {"name": config_map}},
            {
                "name": "driver-check-token",
                "projected": {"sources": [{"serviceAccountToken": token}, {"configMap": ca}]},
            },
        ],
    }


def driver_check_pod_spec(
    pod: dict[str, Any], canary: ResolvedPool, operator: OperatorSpec
) -> dict[str, Any]:
    """The gate's pod with the driver check (`canary_driver_check`) run first, as an init
    container."""
    driver = nvidia_driver_for(canary, operator)
    check = {
        **_script_container(CHECK_CONTAINER, CHECK_SCRIPT),
        "env": [
            *_POD_ENV,
            {"name": "NVIDIA_DRIVER", "value": driver["metadata"]["name"]},
            {"name": "NVIDIA_DRIVER_IMAGE", "value": driver_image_path(driver)},
            NO_BYTECODE,
        ],
        "volumeMounts": list(_SCRIPT_MOUNTS),
    }
    return {**pod, "initContainers": [check]}


# What the proof reads: the canary's Node, and the node validator's Events on it, which it posts
# in the namespace the gate runs in (node_validation/report.py).
PROOF_CLUSTER_RULES = [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]
PROOF_RULES = [{"apiGroups": [""], "resources": ["events"], "verbs": ["list"]}]


def _gate_access(
    canary: ResolvedPool,
    namespace: pulumi.Input[str],
    opts: pulumi.ResourceOptions,
    rollout: bool,
    proof: bool,
) -> list[pulumi.Resource]:
    """The gate's scripts and its service account, allowed `ROLE_RULES` (the driver check,
    `rollout`) and `PROOF_RULES` (`proof`) in `namespace`, and `PROOF_CLUSTER_RULES` (`proof`)."""
    account_name, config_map_name = check_names(canary)
    # Not what the gate waits for; the aliases are the platform's parts' (gpu_platform/platform.py:
    # a stack whose parts were made at its root would otherwise replace these).
    on_cluster = pulumi.ResourceOptions(
        parent=opts.parent, provider=opts.provider, aliases=opts.aliases
    )
    name = part_name(f"{canary.spec.name}-canary-gate")
    labels = {POOL_LABEL: canary.spec.name, "app.kubernetes.io/part-of": "gpu-platform"}
    metadata: Any = {"name": account_name, "namespace": namespace, "labels": labels}
    config_map = core.v1.ConfigMap(
        name,
        metadata={**metadata, "name": config_map_name},
        data={path.name: path.read_text() for path in SCRIPTS},
        opts=on_cluster,
    )
    account = core.v1.ServiceAccount(
        name, metadata=metadata, automount_service_account_token=False, opts=on_cluster
    )
    rules = [*(ROLE_RULES if rollout else []), *(PROOF_RULES if proof else [])]
    grants = [Grant("Role", metadata, rules)]
    if proof:
        grants.append(
            Grant("ClusterRole", {"name": account_name, "labels": labels}, PROOF_CLUSTER_RULES)
        )
    # One role and binding at a time: each binding waits for its own role alone.
    bindings = [
        binding
        for grant in grants
        for binding in declare_account_roles(
            name, account_name, namespace, [grant], on_cluster, after=[account]
        )
    ]
    return [config_map, *bindings]
