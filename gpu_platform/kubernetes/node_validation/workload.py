"""What validates each new node of a pool with `validation.enabled`, in the GPU Operator's
namespace (Pod Security `privileged`), the only namespace it runs in.

One DaemonSet per pool runs a validation pod on each of the pool's nodes that has no
`gpu-platform.io/validation` label yet. Once the pod has labelled its node `passed` or `failed`
the node no longer matches the DaemonSet's node affinity, and the DaemonSet controller deletes
the pod: `NodeShouldRunDaemonPod` answers (false, false) for a node whose labels its required
node affinity does not match, and `podsShouldBeOnNode` deletes the daemon pods of a node where
`shouldContinueRunning` is false (kubernetes pkg/controller/daemon/daemon_controller.go, the
same from v1.33 to v1.36). The pod therefore runs once per node, and again only if someone
removes the label (and checks the node only if it has the validation taint again), or, on GKE
Ubuntu, where the GPU Operator upgrades a node's driver in place, while it does: the pod then
puts the taint back and validates the node with its new driver (`report.retaint_upgrading`);
a failure then holds the node only on a pool a canary guards (`report.fails_open`).

The pod takes the node's GPUs as the operator's own operands do, through the container
toolkit's runtime class with `NVIDIA_VISIBLE_DEVICES=all` (and, for its containers without
CAP_SYS_ADMIN on Bottlerocket, whose toolkit ignores that variable there, a mount naming every
GPU: `ALL_GPUS_MOUNT`), not by requesting `nvidia.com/gpu`:
a node with a GPU fallen off the bus advertises fewer GPUs, and a pod requesting the full count
would wait there unscheduled instead of failing the `gpu-count` check; a MIG, time-sliced or
MPS node advertises slices or replicas, not GPUs. No tenant's pod takes the GPUs meanwhile: the
validation taint keeps every GPU pod off the node until the pod passes it (the operator's own
plugin check and DCGM exporter still run beside it, unordered: docs/node-validation.md). On a
MIG pool the pod waits for the MIG manager's `nvidia.com/mig.config.state=success` (it would
otherwise hold the GPUs the reconfiguration resets), and skips `nvlink`: NVLink is off on a GPU
in MIG mode (DCGM 2.0.15 release notes).

Its containers, each tool from a pinned official image:
- `exempt-untainted` (init): `report.py --exempt-untainted` labels a node that has no validation
  taint `exempt` and checks nothing there: it joined before its pool was validated, or had its
  label removed, and may carry tenants' work, which DCGM's diagnostic would contend with ("can
  consume substantial GPU, CPU, memory, power, and fabric resources", DCGM's `dcgmi diag`
  documentation). No node affinity can select on a taint, so the pod asks the node.
- `dcgm-diag` (init, unless the pool skips `dcgm-diag`): DCGM's image runs its host engine and
  `dcgmi diag` under the validator's timeout, and leaves the output for the validator
  (`validate.recorded`). It runs as root with `SYS_ADMIN`, as DCGM's container documentation runs
  it.
- `validator`: the platform's script pod (`script_pod.script_pod_spec`), running `report.py`
  beside `validate.py` (and the MIG startup taint remover, whose API connection it shares)
  from a ConfigMap: `nvidia-smi` (mounted by the toolkit), `/sys/class/
  infiniband`, the recorded diagnostic, then the Node's patch, its Event and, on a Karpenter pool
  within the pool's cap, the Node's deletion.

- `nccl-bandwidth` (init, where the pool gives `validation.expectedBusBandwidthGbps`, on a node
  of several GPUs): AWS's nccl-tests image runs `all_reduce_perf` across every GPU the node
  shows under the validator's timeout, as a non-root user, and leaves the output likewise.
  Nothing publishes an expected bus bandwidth per GPU model, so without the pool's figure the
  check does not run.

The validator's service account may get and patch Nodes, which the admission policy
(`admission_policy.py`, declared here) narrows to the taint and the labels; create Events in its
namespace; and, where a pool replaces failed nodes, delete Nodes and read and update its one
ledger ConfigMap.
"""

import copy
import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pulumi
from pulumi_kubernetes import apps, core

from gpu_platform.config import MigSharing
from gpu_platform.kubernetes.account_roles import Grant, declare_account_roles
from gpu_platform.kubernetes.mig_startup_taint import SCRIPT_FILE as MIG_REMOVER_SCRIPT
from gpu_platform.kubernetes.mig_startup_taint_remover import MIG_READY, MIG_STATE_LABEL
from gpu_platform.kubernetes.node_validation import report, validate
from gpu_platform.kubernetes.node_validation.admission_policy import (
    declare_policy,
    node_validator_admission_policy,
)
from gpu_platform.kubernetes.node_validation.expectations import (
    NCCL_TESTS_ACCELERATORS,
    NVLINK_LINKS,
)
from gpu_platform.kubernetes.node_validation.names import (
    EXEMPT,
    FAILED_TAINT_KEY,
    RESULT_LABEL,
    VALIDATION_TAINT,
    VALIDATOR_SERVICE_ACCOUNT,
)
from gpu_platform.kubernetes.node_validation.pod_admission_policy import pod_admission_policy
from gpu_platform.kubernetes.operator_values import gpu_node_tolerations, taint_toleration
from gpu_platform.kubernetes.script_pod import NO_BYTECODE, content_named, script_pod_spec
from gpu_platform.lock.images import locked
from gpu_platform.node_identity import POOL_LABEL, ResolvedPool
from gpu_platform.versions import (
    NODE_VALIDATOR_DCGM_IMAGE,
    NODE_VALIDATOR_IMAGE,
    NODE_VALIDATOR_NCCL_TESTS_IMAGE,
    ContainerImage,
)

NAME = VALIDATOR_SERVICE_ACCOUNT
HERE = Path(__file__).parent
# The reporter, and what it imports: the validator and the remover's API connection.
SCRIPTS = (HERE / "report.py", HERE / "validate.py", MIG_REMOVER_SCRIPT)
LEDGER = "gpu-node-validation-replacements"
DEFAULT_REPLACEMENTS_PER_HOUR = 2
RECORDED_DIR = "/recorded"
# Where NODE_VALIDATOR_NCCL_TESTS_IMAGE keeps nccl-tests' `all_reduce_perf`: the image's
# Dockerfile builds nccl-tests into /opt/nccl-tests/build (aws-samples/awsome-distributed-training
# micro-benchmarks/nccl-tests/nccl-tests.Dockerfile). A path, not a pin: it moves with the image.
NCCL_TESTS_BINARY = "/opt/nccl-tests/build/all_reduce_perf"
# Where the GPU Operator's container toolkit registers its runtime handler (the chart's
# `operator.runtimeClass`, `nvidia`, at v26.7.0), which gives a container the node's GPUs and
# driver tools.
RUNTIME_CLASS = "nvidia"
# Seconds DCGM's host engine gets to stop after the diagnostic, beyond the diagnostic's limit.
DCGM_EXTRA_SECONDS = 60
# A node with 8 GPUs or more is a whole NVLinked board (expectations.NVLINK_LINKS); fewer are a
# part of one, whose links to the GPUs of other tenants' VMs are down.
WHOLE_BOARD_GPUS = 8
GPU_ENV = [
    {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
    {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"},
]
# Bottlerocket's NVIDIA toolkit (EKS Auto Mode's nodes, and `nodeImage: bottlerocket`) ignores
# `NVIDIA_VISIBLE_DEVICES` in a container without CAP_SYS_ADMIN in its bounding set, as the
# validator's and the all-reduce's are, and takes the devices a container names by a mount of the
# host's /dev/null under /var/run/nvidia-container-devices instead
# (`accept-nvidia-visible-devices-envvar-when-unprivileged = false`,
# `accept-nvidia-visible-devices-as-volume-mounts = true`: bottlerocket-os/bottlerocket-core-kit
# packages/nvidia-container-toolkit/nvidia-container-toolkit-config-k8s). The toolkit reads only
# mounts whose source is /dev/null, so no emptyDir would do, and a mount at `all` names every GPU
# (NVIDIA/nvidia-container-toolkit v1.17.8, the release Bottlerocket builds,
# internal/config/image/cuda_image.go `DevicesFromMounts`, privileged.go `IsPrivileged`; v1.20.0
# `requestsFromMounts`). Where the variable is honoured (the GPU
# Operator's toolkit, which takes no mounts unless configured to) the mount is an empty file.
# A hostPath volume: the operator's namespace is Pod Security `privileged`.
DEVICE_LIST_ROOT = "/var/run/nvidia-container-devices"
ALL_GPUS_VOLUME = {"name": "all-gpus", "hostPath": {"path": "/dev/null", "type": "CharDevice"}}
ALL_GPUS_MOUNT = {"name": "all-gpus", "mountPath": f"{DEVICE_LIST_ROOT}/all", "readOnly": True}
# The cluster autoscaler puts a DaemonSet's pod on every template node it would run on, whatever
# its requests (cluster-autoscaler `forceDaemonSets`; gpu_platform/fit.py), and this one runs on
# every new node of its pool: whatever it requested would be taken, in the autoscaler's plan, from
# what a pod sized to the node may ask, for a pod gone minutes after the node joined. So it
# requests nothing, stated (a limit alone would make the request the limit), and runs on what the
# new node has free, where nothing but the platform's agents runs yet.
NO_REQUESTS = {"cpu": "0", "memory": "0"}
# A daemon pod per node, on nodes that come and go: Pulumi would wait for a pod on each.
_NO_AWAIT = {"pulumi.com/skipAwait": "true"}


def validated_pools(pools: Sequence[ResolvedPool]) -> list[ResolvedPool]:
    return [pool for pool in pools if pool.spec.validation.enabled]


def replacements_per_hour(pool: ResolvedPool, karpenter: bool) -> int:
    """The pool's cap on replacing failed nodes: none off Karpenter (config rules refuse one)."""
    if not karpenter:
        return 0
    found = pool.spec.validation.replacements_per_hour
    return DEFAULT_REPLACEMENTS_PER_HOUR if found is None else found


def skipped_checks(pool: ResolvedPool) -> list[str]:
    skipped: list[str] = list(pool.spec.validation.skip_checks)
    if isinstance(pool.spec.sharing, MigSharing) and "nvlink" not in skipped:
        skipped.append("nvlink")
    # EKS Auto Mode chooses its nodes' driver: there is no pinned version to hold them to.
    if pool.driver is None and "driver" not in skipped:
        skipped.append("driver")
    return skipped


@dataclass(frozen=True)
class NodeHardware:
    """What a pool's instance or machine types give each node, beyond the pool's GPU shape."""

    efa_devices: int = 0
    gpus_by_instance_type: Mapping[str, int] = field(default_factory=dict)
    """GPUs of each instance type the pool's nodes may be; empty where all have the pool's."""


def expected_bus_bandwidth(pool: ResolvedPool) -> float:
    """The bus bandwidth a node of the pool's type is held to in the NCCL check; 0 where the
    check does not run on it. Raises ValueError where the NCCL test's image has no kernels for
    the pool's GPU (a type that config rules could not see before the machine was resolved)."""
    validation = pool.spec.validation
    if not validation.runs_nccl_test(pool.gpu.count):
        return 0
    if pool.gpu.accelerator not in NCCL_TESTS_ACCELERATORS:
        raise ValueError(
            f"pool {pool.spec.name}: validation.expectedBusBandwidthGbps on a"
            f" {pool.gpu.accelerator} pool, which the NCCL test's image has no kernels for"
            f" (allowed on {', '.join(sorted(NCCL_TESTS_ACCELERATORS))})"
        )
    return validation.expected_bus_bandwidth_gbps or 0


def expected_nvlinks(accelerator: str, gpus: int) -> int:
    if gpus < WHOLE_BOARD_GPUS:
        return 0
    return NVLINK_LINKS.get(accelerator, 0)


def by_instance_type(pool: ResolvedPool, hardware: NodeHardware) -> dict[str, dict[str, str]]:
    """The expectations of each instance type whose GPUs differ from the pool's (its largest):
    a Karpenter pool of several sizes; the reporter reads the node's type and applies them."""
    accelerator = pool.gpu.accelerator
    # The pool's bandwidth is a whole node's of its type: a smaller size is not held to it.
    other_sizes = {"EXPECTED_BUSBW_GBPS": "0"} if expected_bus_bandwidth(pool) else {}
    return {
        name: {
            "EXPECTED_GPUS": str(gpus),
            "EXPECTED_NVLINKS": str(expected_nvlinks(accelerator, gpus)),
            **other_sizes,
        }
        for name, gpus in sorted(hardware.gpus_by_instance_type.items())
        if gpus != pool.gpu.count
    }


def validator_env(
    pool: ResolvedPool, hardware: NodeHardware, replacements: int, fails_open: bool = False
) -> list[dict[str, Any]]:
    """The validator's configuration (`validate.config`) and the reporter's, from the pool;
    `fails_open`: a node validated again after an in-place driver upgrade keeps serving if it
    fails (`report.fails_open`)."""
    validation = pool.spec.validation
    plain = {
        "EXPECTED_GPUS": pool.gpu.count,
        "BY_INSTANCE_TYPE": json.dumps(by_instance_type(pool, hardware), sort_keys=True),
        "DRIVER_VERSION": pool.driver.version if pool.driver else "",
        "EXPECTED_NVLINKS": expected_nvlinks(pool.gpu.accelerator, pool.gpu.count),
        "DCGM_DIAG_LEVEL": validation.dcgm_diag_level,
        "EXPECTED_BUSBW_GBPS": expected_bus_bandwidth(pool),
        "BUSBW_SHARE": validation.bus_bandwidth_share,
        "EXPECTED_EFA_DEVICES": hardware.efa_devices,
        "SKIP_CHECKS": ",".join(skipped_checks(pool)),
        "RECORDED_OUTPUTS": RECORDED_DIR,
        "POOL": pool.spec.name,
        "REPLACEMENTS_PER_HOUR": replacements,
        "REPLACEMENT_LEDGER": LEDGER,
        "VALIDATION_TAINT_KEY": VALIDATION_TAINT.key,
        "REVALIDATION_FAILS_OPEN": int(fails_open),
    }
    fields = {"NODE_NAME": "spec.nodeName", "POD_NAMESPACE": "metadata.namespace"}
    return [
        *({"name": k, "value": str(v)} for k, v in plain.items()),
        *({"name": k, "valueFrom": {"fieldRef": {"fieldPath": f}}} for k, f in fields.items()),
        *GPU_ENV,
        NO_BYTECODE,
    ]


def dcgm_container(level: int) -> dict[str, Any]:
    """DCGM's diagnostic at `level`, its output left in the recorded directory."""
    command = validate.diag_command(str(level))
    timeout = validate.DCGM_DIAG_TIMEOUT[str(level)]
    script = (
        f"nv-hostengine > {RECORDED_DIR}/nv-hostengine.log 2>&1;"
        f" {_recording(command[0], shlex.join(command), timeout)};"
        " nv-hostengine --term > /dev/null 2>&1; exit 0"
    )
    security = {
        "runAsNonRoot": False,
        "runAsUser": 0,
        "runAsGroup": 0,
        "capabilities": {"add": ["SYS_ADMIN"]},
    }
    return _tool_container("dcgm-diag", NODE_VALIDATOR_DCGM_IMAGE, script, "2Gi", security)


def _tool_container(
    name: str,
    image: ContainerImage,
    script: str,
    memory: str,
    security: dict[str, Any],
    mounts: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """An init container that runs `script` on the node's GPUs from `image` (by the lock's
    digest) and leaves its tool's output in the recorded directory."""
    return {
        "name": name,
        "image": locked(image).reference,
        "command": ["sh", "-c", script],
        "env": GPU_ENV,
        "resources": {"requests": NO_REQUESTS, "limits": {"memory": memory}},
        "securityContext": security,
        "volumeMounts": [{"name": "recorded", "mountPath": RECORDED_DIR}, *mounts],
    }


def _recording(tool: str, command: str, timeout: int) -> str:
    """The shell `command` of `tool` under `timeout`, its output and exit status left in the
    recorded directory under the tool's name (`validate.recorded`)."""
    out, err, rc = (f"{RECORDED_DIR}/{tool}{s}" for s in validate.RECORDED_SUFFIXES)
    return f"timeout {timeout} {command} > {out} 2> {err}; echo $? > {rc}"


def nccl_container() -> dict[str, Any]:
    """nccl-tests' all-reduce across the GPUs the node shows, its output left in the recorded
    directory. It counts them itself (`nvidia-smi -L`, one `GPU <n>:` line each): a Karpenter
    pool's node may be a smaller size, whose expectation the validator then leaves out
    (`by_instance_type`); a node short of a GPU fails `gpu-count` whatever its bandwidth."""
    tool, *args = validate.nccl_command("GPUS")
    command = f'{shlex.join([tool, *args[:-1]])} "${args[-1]}"'
    recording = _recording(tool, command, validate.NCCL_TIMEOUT)
    script = (
        "GPUS=$(nvidia-smi -L | grep -c '^GPU ');"
        f" PATH={Path(NCCL_TESTS_BINARY).parent}:$PATH {recording}; exit 0"
    )
    security = {
        "runAsNonRoot": True,
        "runAsUser": 65534,
        "runAsGroup": 65534,
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
    }
    shm = {"name": "shm", "mountPath": "/dev/shm"}
    return _tool_container(
        "nccl-bandwidth",
        NODE_VALIDATOR_NCCL_TESTS_IMAGE,
        script,
        "4Gi",
        security,
        [shm, ALL_GPUS_MOUNT],
    )


def node_affinity(pool: ResolvedPool, in_place: bool = False) -> dict[str, Any]:
    """A node of the pool with no validation result yet; where the GPU Operator upgrades drivers
    in place (`in_place`), also a passed or exempt node while the operator upgrades its driver,
    which `report.retaint_upgrading` validates again."""
    same = [{"key": POOL_LABEL, "operator": "In", "values": [pool.spec.name]}]
    if isinstance(pool.spec.sharing, MigSharing):
        same.append({"key": MIG_STATE_LABEL, "operator": "In", "values": [MIG_READY]})
    terms = [{"matchExpressions": [*same, {"key": RESULT_LABEL, "operator": "DoesNotExist"}]}]
    if in_place:
        upgrading = {
            "key": report.UPGRADE_STATE_LABEL,
            "operator": "In",
            "values": sorted(report.DRIVER_UPGRADING),
        }
        again = {"key": RESULT_LABEL, "operator": "In", "values": ["passed", EXEMPT]}
        terms.append({"matchExpressions": [*same, again, upgrading]})
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
        }
    }


# How long the validator may finish recording a failure once asked to stop (report.py holds
# SIGTERM off from the replacement ledger's update to the node's label): each of its four calls
# (the ledger's read and update, the deletion, the label) answered within its 30 s timeout.
TERMINATION_GRACE_SECONDS = 4 * 30


def validation_pod_spec(
    pool: ResolvedPool,
    config_map: str,
    hardware: NodeHardware,
    replacements: int,
    in_place: bool = False,
    canary_guarded: bool = False,
) -> dict[str, Any]:
    """The validation pod of `pool`'s nodes; `in_place`: validated again when the GPU Operator
    upgrades their driver, where a failure keeps the node serving unless a canary guards the
    pool (`canary_guarded`: the pool is a canary or led by one; `report.fails_open`)."""
    spec = script_pod_spec(
        name=NAME,
        container="validator",
        image=NODE_VALIDATOR_IMAGE,
        script=SCRIPTS[0],
        config_map=config_map,
        env=validator_env(pool, hardware, replacements, in_place and not canary_guarded),
        cpu_request=NO_REQUESTS["cpu"],
        memory="256Mi",
        memory_request=NO_REQUESTS["memory"],
    )
    validator = spec["containers"][0]
    # Before any tool: a node without the validation taint is labelled exempt, not checked.
    untainted_check = {
        **copy.deepcopy(validator),
        "name": "exempt-untainted",
        "command": [*validator["command"], "--exempt-untainted"],
        # It needs no GPU: with them it would hold the old driver's files while the operator
        # unloads it (`report.retaint_upgrading` waits there).
        "env": [e for e in validator["env"] if e not in GPU_ENV],
    }
    validator["volumeMounts"] += [
        {"name": "recorded", "mountPath": RECORDED_DIR, "readOnly": True},
        ALL_GPUS_MOUNT,
    ]
    spec["volumes"] += [{"name": "recorded", "emptyDir": {}}, ALL_GPUS_VOLUME]
    tolerations = [
        *gpu_node_tolerations([pool]),
        taint_toleration(VALIDATION_TAINT),
        # A failed node kept has it: without it a failed node's validation could not run again
        # once its label is removed.
        {"key": FAILED_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"},
    ]
    spec.update(
        runtimeClassName=RUNTIME_CLASS,
        affinity=node_affinity(pool, in_place),
        tolerations=list({repr(t): t for t in tolerations}.values()),
        priorityClassName="system-node-critical",
        terminationGracePeriodSeconds=TERMINATION_GRACE_SECONDS,
    )
    spec["initContainers"] = [untainted_check]
    if "dcgm-diag" not in pool.spec.validation.skip_checks:
        spec["initContainers"].append(dcgm_container(pool.spec.validation.dcgm_diag_level))
    if expected_bus_bandwidth(pool):
        spec["initContainers"].append(nccl_container())
        # NCCL keeps buffers in /dev/shm, which a container's runtime limits to 64 MiB unless
        # given more (NCCL's user guide, Troubleshooting, "Docker": `--shm-size=1g`).
        spec["volumes"].append(
            {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}}
        )
    return spec


def cluster_role_rules(replaces: bool) -> list[dict[str, Any]]:
    """Nodes: reading and patching the node the pod runs on (the admission policy narrows the
    patch), and deleting it where a pool replaces failed nodes."""
    verbs = ["get", "patch", *(["delete"] if replaces else [])]
    return [{"apiGroups": [""], "resources": ["nodes"], "verbs": verbs}]


def role_rules(replaces: bool) -> list[dict[str, Any]]:
    """In the namespace: creating Events, and the replacement ledger's read and update."""
    rules: list[dict[str, Any]] = [
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]}
    ]
    if replaces:
        rules.append(
            {
                "apiGroups": [""],
                "resources": ["configmaps"],
                "resourceNames": [LEDGER],
                "verbs": ["get", "update"],
            }
        )
    return rules


def _labels(**extra: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": NAME, "app.kubernetes.io/part-of": "gpu-platform", **extra}


class NodeValidation(pulumi.ComponentResource):
    """The parent of node validation's objects (`declare_node_validation`)."""

    def __init__(self, name: str, opts: pulumi.ResourceOptions) -> None:
        super().__init__("gpu-platform:kubernetes:NodeValidation", name, None, opts)


def declare_node_validation(
    name: str,
    pools: Sequence[ResolvedPool],
    namespace: pulumi.Input[str],
    namespace_name: str,
    hardware: Mapping[str, NodeHardware],
    karpenter: bool,
    exempt_namespaces: Sequence[str],
    opts: pulumi.ResourceOptions,
    in_place: bool = False,
) -> "PoolValidators":
    """The validation of every pool with `validation.enabled`, in the operator's `namespace`
    (`namespace_name` as configured, which the admission policy names the account by), and the
    admission policy that keeps pods outside `exempt_namespaces` off unvalidated nodes; what
    declares each pool's DaemonSet (`PoolValidators.declare`). Nothing where no pool validates.
    `in_place`: the GPU Operator upgrades drivers on running nodes (GKE Ubuntu), which are
    validated again."""
    validated = validated_pools(pools)
    if not validated:
        return PoolValidators(name, {}, namespace, "", opts, in_place)
    opts = pulumi.ResourceOptions(parent=NodeValidation(name, opts))
    caps = {p.spec.name: replacements_per_hour(p, karpenter) for p in validated}
    guarded = {p.spec.canary_of for p in pools} | {p.spec.name for p in pools if p.spec.canary_of}
    replaces = any(caps.values())
    scripts = {path.name: path.read_text() for path in SCRIPTS}
    config_map_name = content_named(NAME, *scripts.values())
    config_map = core.v1.ConfigMap(
        f"{name}-scripts",
        metadata={"name": config_map_name, "namespace": namespace, "labels": _labels()},
        data=scripts,
        opts=opts,
    )
    account = core.v1.ServiceAccount(
        name,
        metadata={"name": NAME, "namespace": namespace, "labels": _labels()},
        automount_service_account_token=False,
        opts=opts,
    )
    grants = [
        Grant("ClusterRole", {"name": NAME, "labels": _labels()}, cluster_role_rules(replaces)),
        Grant(
            "Role",
            {"name": NAME, "namespace": namespace, "labels": _labels()},
            role_rules(replaces),
        ),
    ]
    bindings = declare_account_roles(name, NAME, namespace, grants, opts, after=[account])
    bindings.append(declare_policy(name, node_validator_admission_policy(namespace_name), opts))
    declare_policy(f"{name}-pods", pod_admission_policy(exempt_namespaces), opts)
    if replaces:
        # The validators write the times of their replacements into it; Pulumi only creates it.
        bindings.append(
            core.v1.ConfigMap(
                f"{name}-ledger",
                metadata={"name": LEDGER, "namespace": namespace, "labels": _labels()},
                opts=pulumi.ResourceOptions.merge(
                    opts, pulumi.ResourceOptions(ignore_changes=["data"])
                ),
            )
        )
    # The policy binds before any validator runs: a validator without it could patch anything.
    ready = pulumi.ResourceOptions.merge(
        opts, pulumi.ResourceOptions(depends_on=[config_map, *bindings])
    )
    return PoolValidators(
        name,
        {
            pool.spec.name: (
                pool,
                hardware.get(pool.spec.name, NodeHardware()),
                caps[pool.spec.name],
                pool.spec.name in guarded,
            )
            for pool in validated
        },
        namespace,
        config_map_name,
        ready,
        in_place,
    )


class PoolValidators:
    """Each validating pool's DaemonSet, declared when the platform asks for it: the pool's
    nodes wait for it (`declare`'s `after` is what it waits for itself)."""

    def __init__(
        self,
        name: str,
        pools: Mapping[str, tuple[ResolvedPool, NodeHardware, int, bool]],
        namespace: pulumi.Input[str],
        config_map: str,
        ready: pulumi.ResourceOptions,
        in_place: bool,
    ) -> None:
        """`pools`: by name, each validating pool, its nodes' hardware, its cap on replacements
        and whether a canary guards it; `ready`: the DaemonSets' options, after the scripts,
        the bindings and the admission policy."""
        self._name, self._pools, self._namespace = name, pools, namespace
        self._config_map, self._ready, self._in_place = config_map, ready, in_place

    def declare(self, pool: str, after: Sequence[pulumi.Resource] = ()) -> pulumi.Resource | None:
        """The DaemonSet that validates the named pool's nodes, created and updated after
        `after` (a led pool's canary gates); None where the pool does not validate."""
        if pool not in self._pools:
            return None
        resolved, hardware, replacements, canary_guarded = self._pools[pool]
        return _daemon_set(
            f"{self._name}-{pool}",
            resolved,
            self._namespace,
            self._config_map,
            hardware,
            replacements,
            pulumi.ResourceOptions.merge(
                self._ready, pulumi.ResourceOptions(depends_on=list(after))
            ),
            self._in_place,
            canary_guarded,
        )


def _daemon_set(
    resource_name: str,
    pool: ResolvedPool,
    namespace: pulumi.Input[str],
    config_map: str,
    hardware: NodeHardware,
    replacements: int,
    opts: pulumi.ResourceOptions,
    in_place: bool,
    canary_guarded: bool,
) -> apps.v1.DaemonSet:
    labels = _labels(**{POOL_LABEL: pool.spec.name})
    return apps.v1.DaemonSet(
        resource_name,
        metadata={
            "name": f"{NAME}-{pool.spec.name}",
            "namespace": namespace,
            "labels": labels,
            "annotations": _NO_AWAIT,
        },
        spec=cast(
            Any,
            {
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": validation_pod_spec(
                        pool, config_map, hardware, replacements, in_place, canary_guarded
                    ),
                },
            },
        ),
        opts=opts,
    )
