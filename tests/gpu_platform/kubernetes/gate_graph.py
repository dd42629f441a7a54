"""The canary ordering over a whole plan, for any stack: every led pool's nodes, NVIDIADriver
and node validator wait, through the dependency graph, for its canary's nodes, the canary's
NVIDIADriver and the canary's gate, and its nodes and NVIDIADriver for its validator too (which
expects the led pool's new driver); the gate waits for the canary's nodes and NVIDIADriver and
for nothing of the led pool; the canary's own validator, which the gate's pod waits on, does not
wait for the gate; and the gate passes only on nodes of the canary's new release. And for every
pool that validates its nodes, led or not, its nodes and NVIDIADriver wait for its validator
(`validation_ordering_problems`).

"Waits for" is what the Pulumi engine enforces: a resource is registered only once the resources
it depends on (`dependencies`, `propertyDependencies`) are, and once its parent is, which waits
for the parent's own dependencies (the Python SDK awaits the dependencies' and the parent's URNs
before it registers a resource, pulumi `sdk/python/lib/pulumi/runtime/resource.py`,
`prepare_resource`). So the walk follows all three, transitively.

Label keys are written out here rather than imported from the code under test, and the canary
pairs, the provisioner, the node image and the driver each gate must select are read from the
stack's config as written, so that a loader or renderer bug can neither empty the check nor
satisfy it.
"""

from collections.abc import Mapping
from typing import Any

from gpu_platform.offline.program import Plan, PlannedResource

GATE_TYPE = "kubernetes:batch/v1:Job"
GATE_POOL_LABEL = "gpu-platform.io/canary-pool"
POOL_LABEL = "gpu-platform.io/pool"
NVIDIA_DRIVER = "kubernetes:nvidia.com/v1alpha1:NVIDIADriver"
EKS_NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
GKE_NODE_POOL = "gcp:container/nodePool:NodePool"
KARPENTER_NODE_POOL = "kubernetes:karpenter.sh/v1:NodePool"
KARPENTER_NODE_CLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
DAEMON_SET = "kubernetes:apps/v1:DaemonSet"
VALIDATOR_NAME = "gpu-node-validator"
# Karpenter replaces a changed NodePool's nodes by drift after `pulumi up` went on; the updated
# NodePool's nodes carry the release's id.
KARPENTER_RELEASE_LABEL = "gpu-platform.io/canary-release-id"
# GPU feature discovery's driver label (NVIDIA/k8s-device-plugin v0.20.0 internal/lm/nvml.go):
# on GKE Ubuntu the GPU Operator loads a new driver on running nodes after `pulumi up`.
GFD_DRIVER_LABEL = "nvidia.com/cuda.driver-version.full"
# A node the cluster autoscaler starts has no upgrade state yet: a gate must not require one.
UPGRADE_STATE_LABEL = "nvidia.com/gpu-driver-upgrade-state"
# What the gate's check reads, and how its pod ends on a node still on the old driver, which
# the Job retries rather than counts.
EXPECTED_DRIVER_ENV = "EXPECTED_NVIDIA_DRIVER"
ROLLOUT_PENDING_EXIT_CODE = 75
# The canary gate's proof of its node's validation: the driver it expects, the wait of the GPU
# check for it, its exit on a failed node, and the taint a node being validated has.
PROOF_DRIVER_ENV = "EXPECTED_DRIVER"
PROVEN_WAIT = "until [ -e /proof/proven ]"
PROOF_FAILED_EXIT_CODE = 3
VALIDATION_TAINT_KEY = "startup-taint.cluster-autoscaler.kubernetes.io/gpu-validation"
# The driver the GPU Operator builds where neither the pool (`gcp.driverVersion`) nor the stack
# (`operator.driverVersion`) names one: the pinned chart's `driver.version`
# (NVIDIA/gpu-operator deployments/gpu-operator/values.yaml at v26.7.0).
CHART_DRIVER_VERSION = "595.91.07"


def canary_ordering_problems(plan: Plan, config: Mapping[str, Any]) -> list[str]:
    """What breaks the canary ordering in `plan`, planned from `config` (the stack's config,
    fully qualified keys, as `run_program` takes it); [] for a stack without canaries."""
    stack = _Stack(config)
    leaders: dict[str, list[str]] = {}
    for pool in stack.pools:
        if pool.get("canaryOf") is not None:
            leaders.setdefault(pool["canaryOf"], []).append(pool["name"])
    if not leaders:
        return []
    graph = _Graph(plan)
    nodes = _nodes_by_pool(plan)
    drivers = _drivers_by_pool(plan)
    gates = _gates_by_canary(plan)
    validators = _validators_by_pool(plan)
    problems: list[str] = []
    for led, canaries in leaders.items():
        for canary in canaries:
            problems += _pair_problems(graph, nodes, drivers, gates, led, canary)
            problems += _validator_problems(graph, nodes, drivers, validators, gates, led, canary)
            if stack.gke_ubuntu and canary not in drivers:
                problems.append(f"canary {canary} on GKE Ubuntu has no NVIDIADriver")
            gate = gates.get(canary)
            if gate is not None:
                problems += _selection_problems(stack, nodes, gate, canary)
                problems += _proof_problems(stack, gate, canary)
    return problems


class _Stack:
    """What the checks need of the stack's config, fully qualified keys as `run_program` takes
    them, read as written."""

    def __init__(self, config: Mapping[str, Any]):
        self.pools: list[Mapping[str, Any]] = list(config.get("gpu-platform:pools", []))
        self.uses_karpenter = config.get("gpu-platform:provisioner") == "karpenter"
        cluster = config.get("gpu-platform:cluster", {})
        self.gke_ubuntu = (
            config.get("gpu-platform:cloud") == "gcp" and cluster.get("nodeImage") == "ubuntu"
        )
        self._operator_driver = (config.get("gpu-platform:operator") or {}).get(
            "driverVersion", CHART_DRIVER_VERSION
        )

    def driver_version(self, pool_name: str) -> str:
        """The driver the operator builds on the pool's nodes (GKE Ubuntu)."""
        pool = next(p for p in self.pools if p["name"] == pool_name)
        return str((pool.get("gcp") or {}).get("driverVersion", self._operator_driver))


def _pair_problems(
    graph: "_Graph",
    nodes: Mapping[str, list[PlannedResource]],
    drivers: Mapping[str, PlannedResource],
    gates: Mapping[str, PlannedResource],
    led: str,
    canary: str,
) -> list[str]:
    gate = gates.get(canary)
    if gate is None:
        return [f"canary {canary} of {led} has no gate Job"]
    problems = [
        f"pool {name} has no node group, node pool or NodePool in the plan"
        for name in (led, canary)
        if not nodes.get(name)
    ]
    if (led in drivers) != (canary in drivers):
        problems.append(f"only one of {led} and its canary {canary} has an NVIDIADriver")
    canary_side = _nodes_and_driver(nodes, drivers, canary)
    led_side = _nodes_and_driver(nodes, drivers, led)
    for target in canary_side:
        if not graph.waits_for(gate, target):
            problems.append(f"the gate of {canary} does not wait for {_what(target)}")
    for waiting in led_side:
        for target in [gate, *canary_side]:
            if not graph.waits_for(waiting, target):
                problems.append(f"{_what(waiting)} of {led} does not wait for {_what(target)}")
        if graph.waits_for(gate, waiting):
            problems.append(f"the gate of {canary} waits for {_what(waiting)} of {led}")
    return problems


def _validator_problems(
    graph: "_Graph",
    nodes: Mapping[str, list[PlannedResource]],
    drivers: Mapping[str, PlannedResource],
    validators: Mapping[str, PlannedResource],
    gates: Mapping[str, PlannedResource],
    led: str,
    canary: str,
) -> list[str]:
    """The led pool's validator (its `DRIVER_VERSION` is the led pool's new driver) changes
    after the gate and before the led pool's nodes and NVIDIADriver; the canary's does not wait
    for the gate, whose pod waits for a canary node's proof."""
    gate = gates.get(canary)
    if gate is None:
        return []
    problems = []
    validator = validators.get(led)
    if validator is not None:
        if not graph.waits_for(validator, gate):
            problems.append(f"the validator of {led} does not wait for {_what(gate)}")
        problems += _behind_validator(graph, _nodes_and_driver(nodes, drivers, led), validator, led)
    own = validators.get(canary)
    if own is not None and graph.waits_for(own, gate):
        problems.append(f"the validator of {canary} waits for its own gate")
    return problems


def validation_ordering_problems(plan: Plan, config: Mapping[str, Any]) -> list[str]:
    """Every pool that validates its nodes (`validation.enabled`, read from `config` as
    written) has a validator DaemonSet, and its nodes and NVIDIADriver wait for it: its pods
    check each node against the pool's release as the config gives it now (its driver, its
    instance types), and a node of a new release started before the validator moved would be
    checked against the old one, fail, and never be checked again."""
    graph = _Graph(plan)
    nodes = _nodes_by_pool(plan)
    drivers = _drivers_by_pool(plan)
    validators = _validators_by_pool(plan)
    problems = []
    for pool in _Stack(config).pools:
        validator = validators.get(pool["name"])
        if validator is not None:
            waiting = _nodes_and_driver(nodes, drivers, pool["name"])
            problems += _behind_validator(graph, waiting, validator, pool["name"])
        elif (pool.get("validation") or {}).get("enabled", True):
            problems.append(f"pool {pool['name']} validates its nodes but has no validator")
    return problems


def _behind_validator(
    graph: "_Graph", waiting: list[PlannedResource], validator: PlannedResource, pool: str
) -> list[str]:
    return [
        f"{_what(resource)} of {pool} does not wait for its validator"
        for resource in waiting
        if not graph.waits_for(resource, validator)
    ]


def _nodes_and_driver(
    nodes: Mapping[str, list[PlannedResource]], drivers: Mapping[str, PlannedResource], pool: str
) -> list[PlannedResource]:
    """The pool's node groups, node pool or NodePool and EC2NodeClass, and its NVIDIADriver."""
    return [*nodes.get(pool, []), *([drivers[pool]] if pool in drivers else [])]


def _proof_problems(stack: _Stack, gate: PlannedResource, canary: str) -> list[str]:
    """On a canary that validates its nodes, against a driver the gate knows: the gate's GPU
    check waits for a proof of the canary's driver, which may wait on a node being validated
    and fails the Job when the node fails."""
    pool = next(p for p in stack.pools if p["name"] == canary)
    pod = gate.inputs["spec"]["template"]["spec"]
    smoke_test = pod["containers"][0]
    expected = {e["name"]: e.get("value") for e in smoke_test.get("env", [])}.get(
        EXPECTED_DRIVER_ENV
    )
    if not (pool.get("validation") or {}).get("enabled", True) or expected is None:
        return []
    if stack.gke_ubuntu:
        expected = stack.driver_version(canary)
    proofs = [
        c
        for c in pod["containers"][1:]
        if {"name": PROOF_DRIVER_ENV, "value": expected} in c.get("env", [])
    ]
    if not proofs or PROVEN_WAIT not in smoke_test["command"][-1]:
        return [f"the gate of {canary} does not wait for its node's proof of driver {expected}"]
    fails = {
        "action": "FailJob",
        "onExitCodes": {
            "containerName": proofs[0]["name"],
            "operator": "In",
            "values": [PROOF_FAILED_EXIT_CODE],
        },
    }
    problems = []
    if gate.inputs["spec"]["podFailurePolicy"]["rules"][0] != fails:
        problems.append(f"the gate of {canary} does not fail when its node fails validation")
    if not any(t.get("key") == VALIDATION_TAINT_KEY for t in pod.get("tolerations", [])):
        problems.append(f"the gate of {canary} cannot be on a node that fails validation")
    return problems


def _selection_problems(
    stack: _Stack,
    nodes: Mapping[str, list[PlannedResource]],
    gate: PlannedResource,
    canary: str,
) -> list[str]:
    """Every term the gate's pod may be scheduled by names the canary's pool, and, on
    Karpenter, a mark of the new release; where the canary's driver moves on its running nodes
    after `pulumi up` (GKE Ubuntu), the gate checks the new driver and retries a node still on
    the old one, while no term requires a driver label the autoscaler's template of the canary,
    copied from an old node, may lack."""
    pod = gate.inputs["spec"]["template"]["spec"]
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    rolls_in_place = stack.gke_ubuntu
    problems = []
    for term in terms:
        wanted = {e["key"]: e for e in term.get("matchExpressions", [])}
        if wanted.get(POOL_LABEL, {}).get("values") != [canary]:
            problems.append(f"the gate of {canary} may run outside the canary: {term}")
        if stack.uses_karpenter:
            released = {
                n.inputs["spec"]["template"]["metadata"]["labels"].get(KARPENTER_RELEASE_LABEL)
                for n in nodes.get(canary, [])
                if n.type == KARPENTER_NODE_POOL
            }
            release = wanted.get(KARPENTER_RELEASE_LABEL, {})
            if None in released or [*released] != release.get("values"):
                problems.append(f"the gate of {canary} may run on a node drift left: {term}")
        if rolls_in_place and wanted.keys() & {GFD_DRIVER_LABEL, UPGRADE_STATE_LABEL}:
            problems.append(f"the gate of {canary} may get no node started for it: {term}")
    if rolls_in_place:
        version = stack.driver_version(canary)
        container = pod["containers"][0]
        env = {e["name"]: e.get("value") for e in container.get("env", [])}
        retried = {
            "action": "Ignore",
            "onExitCodes": {
                "containerName": container["name"],
                "operator": "In",
                "values": [ROLLOUT_PENDING_EXIT_CODE],
            },
        }
        if env.get(EXPECTED_DRIVER_ENV) != version:
            problems.append(f"the gate of {canary} does not check for its new driver {version}")
        if (
            retried not in gate.inputs["spec"]["podFailurePolicy"]["rules"]
            or f"exit {ROLLOUT_PENDING_EXIT_CODE}" not in container["command"][-1]
        ):
            problems.append(f"the gate of {canary} fails on a node still on its old driver")
        problems += _driver_pod_check_problems(gate, canary)
    return problems


def _driver_pod_check_problems(gate: PlannedResource, canary: str) -> list[str]:
    """The gate's check that its node's driver pod runs the image its NVIDIADriver names now,
    which a new image of the same version needs (`nvidia-smi` reports the same
    version), retried rather than counted while the node is not upgraded yet."""
    checks = gate.inputs["spec"]["template"]["spec"].get("initContainers", [])
    named = [c for c in checks if {"name": "NVIDIA_DRIVER", "value": canary} in c.get("env", [])]
    if not named:
        return [f"the gate of {canary} does not check its node's driver pod"]
    retried = {
        "action": "Ignore",
        "onExitCodes": {
            "containerName": named[0]["name"],
            "operator": "In",
            "values": [ROLLOUT_PENDING_EXIT_CODE],
        },
    }
    if retried not in gate.inputs["spec"]["podFailurePolicy"]["rules"]:
        return [f"the gate of {canary} fails on a node whose driver pod is not upgraded yet"]
    return []


def new_driver_preference(version: str) -> list[dict[str, Any]]:
    """The preferred node affinity of a pod that waits for the driver `version` on GKE Ubuntu:
    a node GPU feature discovery labels with it, and one the GPU Operator's upgrade is done with
    (k8s-operator-libs d720f2557494, pinned by gpu-operator v26.7.0's go.mod,
    pkg/upgrade/consts.go: `UpgradeStateLabelKeyFmt` `nvidia.com/%s-driver-upgrade-state`, the
    driver named `gpu`; `UpgradeStateDone` `upgrade-done`)."""
    return [
        {
            "weight": 100,
            "preference": {
                "matchExpressions": [
                    {"key": GFD_DRIVER_LABEL, "operator": "In", "values": [version]}
                ]
            },
        },
        {
            "weight": 100,
            "preference": {
                "matchExpressions": [
                    {"key": UPGRADE_STATE_LABEL, "operator": "In", "values": ["upgrade-done"]}
                ]
            },
        },
    ]


def _what(resource: PlannedResource) -> str:
    return f"{resource.type.rsplit(':', 1)[-1]} {resource.name}"


class _Graph:
    def __init__(self, plan: Plan):
        self._edges: dict[str, set[str]] = {}
        for resource in plan.resources:
            edges = set(resource.dependencies)
            for urns in resource.property_dependencies.values():
                edges.update(urns)
            if resource.parent is not None:
                edges.add(resource.parent)
            self._edges[resource.urn] = edges
        self._reach: dict[str, set[str]] = {}

    def waits_for(self, resource: PlannedResource, target: PlannedResource) -> bool:
        return target.urn in self._reachable(resource.urn)

    def _reachable(self, urn: str) -> set[str]:
        if urn not in self._reach:
            seen: set[str] = set()
            todo = list(self._edges.get(urn, ()))
            while todo:
                current = todo.pop()
                if current not in seen:
                    seen.add(current)
                    todo.extend(self._edges.get(current, ()))
            self._reach[urn] = seen
        return self._reach[urn]


def _nodes_by_pool(plan: Plan) -> dict[str, list[PlannedResource]]:
    """Each pool's node groups (EKS), node pool (GKE), or NodePool and EC2NodeClass
    (Karpenter), by the pool's name."""
    found: dict[str, list[PlannedResource]] = {}
    for resource in plan.resources:
        pool = _pool_of_nodes(resource)
        if pool is not None:
            found.setdefault(pool, []).append(resource)
    return found


def _validators_by_pool(plan: Plan) -> dict[str, PlannedResource]:
    """Each validating pool's node validation DaemonSet, by the pool's name."""
    found: dict[str, PlannedResource] = {}
    for resource in plan.resources:
        labels = resource.inputs.get("metadata", {}).get("labels") or {}
        if resource.type == DAEMON_SET and labels.get("app.kubernetes.io/name") == VALIDATOR_NAME:
            found[labels[POOL_LABEL]] = resource
    return found


def _pool_of_nodes(resource: PlannedResource) -> str | None:
    inputs = resource.inputs
    if resource.type == EKS_NODE_GROUP:
        return _label(inputs.get("labels"))
    if resource.type == GKE_NODE_POOL:
        return _label(inputs.get("nodeConfig", {}).get("labels"))
    if resource.type in (KARPENTER_NODE_POOL, KARPENTER_NODE_CLASS):
        return str(inputs["metadata"]["name"])
    return None


def _label(labels: Mapping[str, str] | None) -> str | None:
    return None if labels is None else labels.get(POOL_LABEL)


def _drivers_by_pool(plan: Plan) -> dict[str, PlannedResource]:
    """Each GKE Ubuntu pool's NVIDIADriver, by the pool its nodeSelector selects."""
    return {
        d.inputs["spec"]["nodeSelector"][POOL_LABEL]: d
        for d in plan.of_type(NVIDIA_DRIVER)
        if POOL_LABEL in d.inputs["spec"].get("nodeSelector", {})
    }


def _gates_by_canary(plan: Plan) -> dict[str, PlannedResource]:
    return {
        labels[GATE_POOL_LABEL]: job
        for job in plan.of_type(GATE_TYPE)
        if GATE_POOL_LABEL in (labels := job.inputs["metadata"].get("labels", {}))
    }
