"""The gate's place in the dependency graph on every provisioner, edge by edge, and on GKE Ubuntu,
where the GPU Operator loads a new driver on running nodes after `pulumi up` applied it, a gate
that checks the new driver only on nodes that run it.

Each edge is a direct dependency the program declares (the SDK records a dependency on a
component as one on each of its resources), so that taking the line that declares it away fails
its test. `gate_graph.canary_ordering_problems` checks the whole invariant transitively.
"""

import copy
import dataclasses
import subprocess
from pathlib import Path
from typing import Any

import pytest

from gpu_platform.kubernetes.tenant_namespace import ROLLOUT_PENDING_CHECK
from gpu_platform.offline.program import Plan, PlannedResource, run_program
from gpu_platform.stack_files import stack_config
from tests.conftest import Config, dev_stack_config, gke_stack_config
from tests.gpu_platform.config.test_canary_rules import canary_of
from tests.gpu_platform.gke.plans import on_ubuntu, problems_of
from tests.gpu_platform.kubernetes.gate_graph import (
    DAEMON_SET,
    EKS_NODE_GROUP,
    GATE_TYPE,
    GKE_NODE_POOL,
    KARPENTER_NODE_CLASS,
    KARPENTER_NODE_POOL,
    NVIDIA_DRIVER,
    canary_ordering_problems,
    new_driver_preference,
)
from tests.gpu_platform.kubernetes.test_canary_gate import karpenter_canary_of
from tests.repository import PROJECT
from tests.shared_plans import shared_plan

# Its tests plan the same configs again and again, and change the program only through the
# stand-ins' answers.
pytestmark = pytest.mark.shared_plans

# The canary's new driver, ahead of the pool's: the operator's pinned default (gpu-operator
# v26.7.0 values.yaml `driver.version`, 595.91.07).
NEW_DRIVER = "595.120.02"


def gate(plan: Plan) -> PlannedResource:
    return plan.named("canary-canary-gate", GATE_TYPE)


def driver(plan: Plan, pool: str) -> PlannedResource:
    return plan.named(f"gpu-operator-driver-{pool}", NVIDIA_DRIVER)


def validator(plan: Plan, pool: str) -> PlannedResource:
    return plan.named(f"node-validation-{pool}", DAEMON_SET)


def ubuntu_config() -> Config:
    """GKE Ubuntu, the L4 pool `l4-shared` led by `canary`, which runs a newer driver."""
    config = on_ubuntu(gke_stack_config(dev_stack_config()))
    canary_of(config, gcp={"driverVersion": NEW_DRIVER})
    return config


def karpenter_config() -> Config:
    config = copy.deepcopy(dict(stack_config("karpenter-dev", PROJECT)))
    karpenter_canary_of(config)
    return config


def cos_config() -> Config:
    config = gke_stack_config(dev_stack_config())
    canary_of(config)
    return config


@pytest.fixture(scope="module")
def ubuntu_plan() -> Plan:
    return run_program("dev", config=ubuntu_config(), project=PROJECT)


@pytest.fixture(scope="module")
def karpenter_plan() -> Plan:
    return run_program("dev", config=karpenter_config(), project=PROJECT)


@pytest.fixture(scope="module")
def cos_plan() -> Plan:
    return run_program("dev", config=cos_config(), project=PROJECT)


@pytest.fixture(scope="module")
def prod_plan() -> Plan:
    return shared_plan("prod")


# --- EKS node groups -----------------------------------------------------------------------


def test_an_eks_gate_waits_for_its_canarys_node_group(prod_plan: Plan) -> None:
    canary = prod_plan.named("a100-canary-nodes", EKS_NODE_GROUP)

    assert canary.urn in prod_plan.named("a100-canary-canary-gate", GATE_TYPE).dependencies


def test_an_eks_led_node_group_waits_for_the_gate(prod_plan: Plan) -> None:
    gate_job = prod_plan.named("a100-canary-canary-gate", GATE_TYPE)

    assert gate_job.urn in prod_plan.named("a100-inference-nodes", EKS_NODE_GROUP).dependencies


# --- Karpenter -----------------------------------------------------------------------------


def test_a_karpenter_gate_waits_for_its_canarys_nodepool_and_node_class(
    karpenter_plan: Plan,
) -> None:
    dependencies = gate(karpenter_plan).dependencies

    assert karpenter_plan.named("canary", KARPENTER_NODE_POOL).urn in dependencies
    assert karpenter_plan.named("canary", KARPENTER_NODE_CLASS).urn in dependencies


def test_a_karpenter_led_nodepool_waits_for_the_gate_itself(karpenter_plan: Plan) -> None:
    # Not only through its node class: a change of the NodePool's template alone drifts its
    # nodes (kubernetes-sigs/karpenter v1.14.1 pkg/controllers/nodeclaim/disruption/drift.go).
    led = karpenter_config()["gpu-platform:pools"][0]["name"]

    assert gate(karpenter_plan).urn in karpenter_plan.named(led, KARPENTER_NODE_POOL).dependencies


# --- GKE COS -------------------------------------------------------------------------------


def test_a_cos_gate_waits_for_its_canarys_node_pool(cos_plan: Plan) -> None:
    assert cos_plan.named("canary", GKE_NODE_POOL).urn in gate(cos_plan).dependencies


def test_a_cos_led_node_pool_waits_for_the_gate(cos_plan: Plan) -> None:
    assert gate(cos_plan).urn in cos_plan.named("l4-shared", GKE_NODE_POOL).dependencies


@pytest.mark.parametrize("plan", ["cos_plan", "ubuntu_plan"])
def test_a_gke_gate_requires_its_canarys_pool_alone(
    plan: str, request: pytest.FixtureRequest
) -> None:
    # COS nodes of a new GKE version are new nodes, which the node pool's update has started
    # before the gate. On Ubuntu the driver moves on the running nodes later, yet a required
    # driver label would keep the autoscaler from starting a node for the gate: its template of
    # the canary is a running node of it, cached after the pool went to zero
    # (kubernetes/autoscaler cluster-autoscaler-1.35.2,
    # processors/nodeinfosprovider/mixed_nodeinfos_processor.go), old driver's label and all;
    # it tries the pod there with the scheduler's Filter plugins only
    # (simulator/clustersnapshot/predicate/plugin_runner.go), and NodeAffinity's Filter matches
    # the required terms only (kubernetes v1.35
    # pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go, `Filter`).
    (term,) = gate_spec(request.getfixturevalue(plan))["template"]["spec"]["affinity"][
        "nodeAffinity"
    ]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]

    assert term == {
        "matchExpressions": [
            {"key": "gpu-platform.io/pool", "operator": "In", "values": ["canary"]}
        ]
    }


# --- GKE Ubuntu: the pools' NVIDIADrivers --------------------------------------------------


def test_an_ubuntu_gate_waits_for_its_canarys_node_pool(ubuntu_plan: Plan) -> None:
    assert ubuntu_plan.named("canary", GKE_NODE_POOL).urn in gate(ubuntu_plan).dependencies


def test_an_ubuntu_gate_waits_for_its_canarys_nvidiadriver(ubuntu_plan: Plan) -> None:
    assert driver(ubuntu_plan, "canary").urn in gate(ubuntu_plan).dependencies


def test_an_ubuntu_led_node_pool_waits_for_the_gate(ubuntu_plan: Plan) -> None:
    assert gate(ubuntu_plan).urn in ubuntu_plan.named("l4-shared", GKE_NODE_POOL).dependencies


def test_an_ubuntu_led_nvidiadriver_waits_for_the_gate(ubuntu_plan: Plan) -> None:
    # gpu-operator v26.7.0 controllers/upgrade_controller.go, reconcileNVIDIADriverUpgrades,
    # rolls each NVIDIADriver's nodes under its own policy as soon as its spec changes: without
    # the dependency the led pool's driver would roll beside the canary's.
    assert gate(ubuntu_plan).urn in driver(ubuntu_plan, "l4-shared").dependencies


def test_the_gate_does_not_wait_for_the_led_nvidiadriver(ubuntu_plan: Plan) -> None:
    assert driver(ubuntu_plan, "l4-shared").urn not in gate(ubuntu_plan).dependencies


def test_the_canarys_nvidiadriver_does_not_wait_for_its_gate(ubuntu_plan: Plan) -> None:
    assert gate(ubuntu_plan).urn not in driver(ubuntu_plan, "canary").dependencies


# --- Node validation: the led pool's validator expects its new driver ----------------------


@pytest.mark.parametrize(
    ("plan", "led", "canary"),
    [
        ("prod_plan", "a100-inference", "a100-canary"),
        ("karpenter_plan", "h100-block", "canary"),
        ("cos_plan", "l4-shared", "canary"),
        ("ubuntu_plan", "l4-shared", "canary"),
    ],
)
def test_a_led_pools_validator_waits_for_the_gate(
    plan: str, led: str, canary: str, request: pytest.FixtureRequest
) -> None:
    # Its DRIVER_VERSION is the led pool's new driver (workload.validator_env): declared beside
    # the canary's, it held every led node that joined during the gate to a driver the pool's
    # nodes do not run yet, and, the gate failed, until the config changed.
    planned: Plan = request.getfixturevalue(plan)
    gate_job = planned.named(f"{canary}-canary-gate", GATE_TYPE)

    assert gate_job.urn in validator(planned, led).dependencies


def test_a_led_pools_nodes_and_driver_wait_for_its_validator(ubuntu_plan: Plan) -> None:
    # A node of the new release, or of the new driver, is held to it, not to the old one.
    led_validator = validator(ubuntu_plan, "l4-shared")

    assert led_validator.urn in ubuntu_plan.named("l4-shared", GKE_NODE_POOL).dependencies
    assert led_validator.urn in driver(ubuntu_plan, "l4-shared").dependencies


def test_the_canarys_validator_does_not_wait_for_its_gate(ubuntu_plan: Plan) -> None:
    # The gate's pod waits on a canary node for that node's proof: held behind the gate, the
    # canary's validator would never give it. The first `up` holds the led pool's nodes behind
    # the gate too, so no led node waits for a validator that is not there yet.
    assert gate(ubuntu_plan).urn not in validator(ubuntu_plan, "canary").dependencies


def test_the_invariant_finds_a_led_validator_that_does_not_wait_for_the_gate(
    ubuntu_plan: Plan,
) -> None:
    plan = without_dependency(ubuntu_plan, validator(ubuntu_plan, "l4-shared"), gate(ubuntu_plan))

    assert canary_ordering_problems(plan, ubuntu_config()) == [
        "the validator of l4-shared does not wait for Job canary-canary-gate"
    ]


def test_the_invariant_finds_a_canary_validator_behind_its_gate(ubuntu_plan: Plan) -> None:
    plan = copy.deepcopy(ubuntu_plan)
    own = validator(plan, "canary")
    plan.resources = [
        dataclasses.replace(r, dependencies=(*r.dependencies, gate(plan).urn)) if r is own else r
        for r in plan.resources
    ]

    assert canary_ordering_problems(plan, ubuntu_config()) == [
        "the validator of canary waits for its own gate"
    ]


# --- GKE Ubuntu: the gate checks the new driver, only where it runs --------------------------


def gate_spec(plan: Plan) -> dict[str, Any]:
    return dict(gate(plan).inputs["spec"])


def test_an_ubuntu_gate_prefers_upgraded_nodes_where_feature_discovery_saw_the_new_driver(
    ubuntu_plan: Plan,
) -> None:
    # GPU feature discovery labels a node with its driver as NVML gives it
    # (NVIDIA/k8s-device-plugin v0.20.0, the operator's pin, internal/lm/nvml.go
    # `newVersionLabeler`: nvidia.com/cuda.driver-version.full). Nodes the operator has not
    # upgraded yet carry the old driver's, and not its `upgrade-done` state (after a new image
    # of the same version, the only label that tells them apart); the scheduler scores the
    # preference
    # (kubernetes v1.35 pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go, `Score`).
    affinity = gate_spec(ubuntu_plan)["template"]["spec"]["affinity"]["nodeAffinity"]

    assert affinity["preferredDuringSchedulingIgnoredDuringExecution"] == (
        new_driver_preference("595.120.02")
    )


def test_an_ubuntu_gate_expects_the_canarys_new_driver(ubuntu_plan: Plan) -> None:
    container = gate_spec(ubuntu_plan)["template"]["spec"]["containers"][0]

    assert {"name": "EXPECTED_NVIDIA_DRIVER", "value": "595.120.02"} in container["env"]
    # After the wait for the validation's proof.
    assert ROLLOUT_PENDING_CHECK in container["command"][2]


def test_a_gate_pod_that_found_the_old_driver_is_retried_not_counted(ubuntu_plan: Plan) -> None:
    # backoffLimit 0 fails the Job at the first counted failure; `Ignore` does not count it and
    # starts another pod (Kubernetes core/v1 PodFailurePolicyAction). The operator's upgrade
    # evicts GPU pods (k8s-operator-libs in gpu-operator v26.7.0's vendor/, pkg/upgrade/
    # pod_manager.go: the drain helper's DeleteOrEvictPods, eviction not disabled), which marks
    # them DisruptionTarget: ignored too.
    spec = gate_spec(ubuntu_plan)

    assert spec["backoffLimit"] == 0
    assert spec["podFailurePolicy"]["rules"] == [
        # A validation failure fails the gate, even on a node deleted for it.
        {
            "action": "FailJob",
            "onExitCodes": {"containerName": "validation-proof", "operator": "In", "values": [3]},
        },
        {
            "action": "Ignore",
            "onExitCodes": {"containerName": "nvidia-smi", "operator": "In", "values": [75]},
        },
        {
            "action": "Ignore",
            "onExitCodes": {"containerName": "driver-rollout", "operator": "In", "values": [75]},
        },
        {
            "action": "Ignore",
            "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
        },
        # A node with no proof of the new release yet is left for another.
        {
            "action": "Ignore",
            "onExitCodes": {"containerName": "validation-proof", "operator": "In", "values": [75]},
        },
    ]


# The longest a one-GPU canary node stays unvalidated (validate.py's timeouts): 60 s for
# `nvidia-smi -q -x`, 60 for its NVLink status, 300 for a level-1 `dcgmi diag`, no NCCL test on one
# GPU, and 300 for the validation pod to start; 300 more to pull DCGM's image (duration.py's
# allowance per tool image).
VALIDATION = 60 + 60 + 300 + 300 + 300


def test_an_ubuntu_gates_deadline_covers_the_operators_wait_for_a_canary_nodes_jobs(
    ubuntu_plan: Plan,
) -> None:
    # 900 s for a node to start and build the driver, 1440 minutes for the node's Jobs
    # (driverUpgradeJobWaitMinutes' default, the NVIDIADriver's waitForCompletion), 300 s for
    # the GPU pods' deletion (its podDeletion timeout), 60 s for GPU feature discovery to
    # relabel and 600 s of the Job controller's backoff after ignored failures
    # (MaxJobPodFailureBackOff, which counts ignored failures too, kubernetes/kubernetes#130881)
    # three times, then the 15 minutes of the soak; Pulumi waits 120 s longer, so the Job's own
    # failure is the one reported. A new node of the canary is validated first (VALIDATION).
    spec = gate_spec(ubuntu_plan)
    timeout = gate(ubuntu_plan).inputs["metadata"]["annotations"]["pulumi.com/timeoutSeconds"]

    assert (spec["activeDeadlineSeconds"], timeout) == (
        900 + VALIDATION + 1440 * 60 + 300 + 3 * 660 + 15 * 60,
        str(900 + VALIDATION + 1440 * 60 + 300 + 3 * 660 + 15 * 60 + 120),
    )


def test_an_ubuntu_gates_deadline_follows_the_job_wait() -> None:
    config = ubuntu_config()
    config["gpu-platform:operator"] = {"driverUpgradeJobWaitMinutes": 60}

    spec = gate_spec(run_program("dev", config=config, project=PROJECT))

    assert spec["activeDeadlineSeconds"] == 900 + VALIDATION + 60 * 60 + 300 + 3 * 660 + 15 * 60


def test_a_canary_on_ubuntu_refuses_an_endless_wait_for_jobs() -> None:
    config = ubuntu_config()
    config["gpu-platform:operator"] = {"driverUpgradeJobWaitMinutes": 0}

    plan = run_program("dev", config=config, project=PROJECT, raise_errors=False)

    assert problems_of(plan) == {
        "gpu-platform:operator.driverUpgradeJobWaitMinutes": "1 or more with a canary pool"
        " (pools[1].canaryOf) on nodeImage ubuntu: the canary's gate waits for the GPU Operator"
        " to load the new driver on one of the canary's nodes, which it does only after that"
        " node's Jobs, and the gate must end"
    }


def run_check(tmp_path: Path, node_driver: str) -> "subprocess.CompletedProcess[str]":
    """The Ubuntu gate's check under `sh`, its minute's wait shortened, on a node whose
    `nvidia-smi` reports `node_driver`."""
    fake = tmp_path / "nvidia-smi"
    fake.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = --query-gpu=driver_version ]; then echo {node_driver}; fi\n'
        "exit 0\n"
    )
    fake.chmod(0o755)
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin", "EXPECTED_NVIDIA_DRIVER": NEW_DRIVER}
    script = ROLLOUT_PENDING_CHECK.replace("sleep 60", "sleep 0")
    return subprocess.run(
        ["sh", "-c", script], env=env, capture_output=True, text=True, check=False
    )


def test_the_check_on_a_node_still_on_the_old_driver_asks_for_another_pod(tmp_path: Path) -> None:
    result = run_check(tmp_path, "595.91.07")

    assert result.returncode == 75
    assert result.stdout.splitlines()[0] == "NVIDIA driver 595.91.07, not the pool's 595.120.02"


def test_the_check_passes_on_the_new_driver(tmp_path: Path) -> None:
    result = run_check(tmp_path, "595.120.02")

    assert (result.returncode, result.stdout) == (0, "NVIDIA driver 595.120.02, as expected\n")


# --- The whole invariant -------------------------------------------------------------------


@pytest.mark.parametrize("plan", ["prod_plan", "karpenter_plan", "cos_plan", "ubuntu_plan"])
def test_every_provisioner_orders_its_canaries(plan: str, request: pytest.FixtureRequest) -> None:
    configs = {
        "prod_plan": lambda: dict(stack_config("prod", PROJECT)),
        "karpenter_plan": karpenter_config,
        "cos_plan": cos_config,
        "ubuntu_plan": ubuntu_config,
    }

    assert canary_ordering_problems(request.getfixturevalue(plan), configs[plan]()) == []


def test_a_stack_without_canaries_has_no_ordering_to_check(dev_plan: Plan) -> None:
    assert canary_ordering_problems(dev_plan, dev_stack_config()) == []


def without_dependency(plan: Plan, resource: PlannedResource, on: PlannedResource) -> Plan:
    """`plan` with `resource` no longer depending on `on`."""
    doctored = copy.deepcopy(plan)
    doctored.resources = [
        dataclasses.replace(r, dependencies=tuple(d for d in r.dependencies if d != on.urn))
        if r.urn == resource.urn
        else r
        for r in doctored.resources
    ]
    return doctored


def test_the_invariant_finds_a_led_driver_that_does_not_wait_for_the_gate(
    ubuntu_plan: Plan,
) -> None:
    # Nor for the led pool's validator, which waits for the gate. Nor, then, for the canary's
    # node pool, which is not among what the operator's release waits for: it waits for the
    # canary's validator, in the operator's namespace.
    led_driver = driver(ubuntu_plan, "l4-shared")
    plan = without_dependency(ubuntu_plan, led_driver, gate(ubuntu_plan))
    plan = without_dependency(plan, led_driver, validator(ubuntu_plan, "l4-shared"))

    assert canary_ordering_problems(plan, ubuntu_config()) == [
        "NVIDIADriver gpu-operator-driver-l4-shared of l4-shared does not wait for Job"
        " canary-canary-gate",
        "NVIDIADriver gpu-operator-driver-l4-shared of l4-shared does not wait for NodePool canary",
        "NVIDIADriver gpu-operator-driver-l4-shared of l4-shared does not wait for NVIDIADriver"
        " gpu-operator-driver-canary",
        "NVIDIADriver gpu-operator-driver-l4-shared of l4-shared does not wait for its validator",
    ]


def test_the_invariant_finds_a_gate_that_does_not_wait_for_the_canarys_driver(
    ubuntu_plan: Plan,
) -> None:
    plan = without_dependency(ubuntu_plan, gate(ubuntu_plan), driver(ubuntu_plan, "canary"))

    # Nor, through the gate, does anything of the led pool.
    assert canary_ordering_problems(plan, ubuntu_config()) == [
        "the gate of canary does not wait for NVIDIADriver gpu-operator-driver-canary",
        "NodePool l4-shared of l4-shared does not wait for NVIDIADriver gpu-operator-driver-canary",
        "NVIDIADriver gpu-operator-driver-l4-shared of l4-shared does not wait for NVIDIADriver"
        " gpu-operator-driver-canary",
    ]


def test_the_invariant_finds_a_gate_and_driver_both_on_a_driver_the_config_never_named(
    ubuntu_plan: Plan,
) -> None:
    # A renderer that put the led pool's driver in the canary's NVIDIADriver and gate alike
    # agrees with itself: the driver the gate must check is the config's.
    plan = copy.deepcopy(ubuntu_plan)
    driver(plan, "canary").inputs["spec"]["version"] = "595.91.07"
    container = gate_spec(plan)["template"]["spec"]["containers"][0]
    for env in container["env"]:
        if env["name"] == "EXPECTED_NVIDIA_DRIVER":
            env["value"] = "595.91.07"

    assert canary_ordering_problems(plan, ubuntu_config()) == [
        "the gate of canary does not check for its new driver 595.120.02"
    ]


def gate_release(config: Config) -> dict[str, str]:
    metadata = gate(run_program("dev", config=config, project=PROJECT)).inputs["metadata"]
    return {
        "name": metadata["name"],
        "release": metadata["annotations"]["gpu-platform.io/canary-release"],
    }


def test_a_new_gke_version_on_an_ubuntu_canary_is_a_new_gate() -> None:
    # A GKE version is a node image and kernel of its own; the driver the operator builds
    # (named by its version alone) is not the only thing the canary tries first.
    config = ubuntu_config()
    before = gate_release(config)
    config["gpu-platform:pools"][1]["gcp"]["nodeVersion"] = "1.33.5-gke.1201000"

    after = gate_release(config)

    assert after["release"].startswith(
        "595.120.02, the GPU Operator at 595.120.02, on GKE 1.33.5-gke.1201000, NVIDIADriver "
    )
    assert after["name"] != before["name"]


@pytest.mark.parametrize(
    "driver_override", [{"repository": "registry.example.com/nvidia"}, {"image": "driver-fips"}]
)
def test_a_new_driver_image_of_the_same_version_on_an_ubuntu_canary_is_a_new_gate(
    driver_override: dict[str, str],
) -> None:
    # `operator.overrides.driver` rewrites every pool's NVIDIADriver image (gpu-operator v26.7.0
    # internal/image/image.go, ImagePath: repository, image and version), and the operator's
    # upgrade moves each node whose driver pod is not of its DaemonSet's revision
    # (k8s-operator-libs, vendored there, pkg/upgrade/common_manager.go `podInSyncWithDS`):
    # the led pool's driver rolls too, after a gate of its own.
    config = ubuntu_config()
    before = gate_release(config)
    config["gpu-platform:operator"] = {"overrides": {"driver": driver_override}}

    after = gate_release(config)

    assert after["name"] != before["name"]
    assert after["release"] != before["release"]


def test_a_new_driver_upgrade_policy_on_an_ubuntu_canary_keeps_the_gate() -> None:
    # The NVIDIADriver's upgradePolicy says how the driver reaches the nodes, not which.
    config = ubuntu_config()
    before = gate_release(config)
    config["gpu-platform:operator"] = {
        "driverUpgradeJobWaitMinutes": 60,
        "driverUpgradeMaxUnavailablePercent": 50,
    }

    assert gate_release(config) == before


def test_a_cos_canarys_release_names_its_gke_version_once() -> None:
    config = cos_config()
    config["gpu-platform:pools"][1]["gcp"] = {"nodeVersion": "1.33.5-gke.1201000"}

    assert gate_release(config)["release"].count("1.33.5-gke.1201000") == 1


@pytest.mark.parametrize(
    "label", ["nvidia.com/cuda.driver-version.full", "nvidia.com/gpu-driver-upgrade-state"]
)
def test_the_invariant_finds_a_gate_that_requires_the_new_drivers_label(
    ubuntu_plan: Plan, label: str
) -> None:
    plan = copy.deepcopy(ubuntu_plan)
    (term,) = gate(plan).inputs["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    term["matchExpressions"].append({"key": label, "operator": "In", "values": ["x"]})

    assert canary_ordering_problems(plan, ubuntu_config()) == [
        f"the gate of canary may get no node started for it: {term}"
    ]


def test_the_invariant_finds_a_gate_that_does_not_check_its_nodes_driver_pod(
    ubuntu_plan: Plan,
) -> None:
    plan = copy.deepcopy(ubuntu_plan)
    del gate(plan).inputs["spec"]["template"]["spec"]["initContainers"]

    assert canary_ordering_problems(plan, ubuntu_config()) == [
        "the gate of canary does not check its node's driver pod"
    ]


def test_the_invariant_finds_a_gate_that_fails_on_a_driver_pod_not_upgraded_yet(
    ubuntu_plan: Plan,
) -> None:
    plan = copy.deepcopy(ubuntu_plan)
    del gate(plan).inputs["spec"]["podFailurePolicy"]["rules"][2]

    assert canary_ordering_problems(plan, ubuntu_config()) == [
        "the gate of canary fails on a node whose driver pod is not upgraded yet"
    ]


def test_the_invariant_finds_a_gate_that_fails_on_the_old_driver(ubuntu_plan: Plan) -> None:
    plan = copy.deepcopy(ubuntu_plan)
    del gate(plan).inputs["spec"]["podFailurePolicy"]["rules"][1]

    assert canary_ordering_problems(plan, ubuntu_config()) == [
        "the gate of canary fails on a node still on its old driver"
    ]


def test_the_invariant_finds_a_gate_that_does_not_wait_for_its_nodes_proof(
    ubuntu_plan: Plan,
) -> None:
    plan = copy.deepcopy(ubuntu_plan)
    pod = gate(plan).inputs["spec"]["template"]["spec"]
    pod["containers"] = pod["containers"][:1]

    assert canary_ordering_problems(plan, ubuntu_config()) == [
        "the gate of canary does not wait for its node's proof of driver 595.120.02"
    ]


def test_the_invariant_finds_a_gate_that_a_failed_validation_does_not_fail(
    ubuntu_plan: Plan,
) -> None:
    plan = copy.deepcopy(ubuntu_plan)
    del gate(plan).inputs["spec"]["podFailurePolicy"]["rules"][0]

    assert canary_ordering_problems(plan, ubuntu_config()) == [
        "the gate of canary does not fail when its node fails validation"
    ]


def test_the_invariant_finds_a_gate_that_waits_only_on_validated_nodes(ubuntu_plan: Plan) -> None:
    plan = copy.deepcopy(ubuntu_plan)
    pod = gate(plan).inputs["spec"]["template"]["spec"]
    pod["tolerations"] = [t for t in pod["tolerations"] if "gpu-validation" not in t["key"]]

    assert canary_ordering_problems(plan, ubuntu_config()) == [
        "the gate of canary cannot be on a node that fails validation"
    ]


def fails_open(plan: Plan, pool: str) -> str:
    daemon_set = plan.named(f"node-validation-{pool}", "kubernetes:apps/v1:DaemonSet")
    (container,) = daemon_set.inputs["spec"]["template"]["spec"]["containers"]
    (value,) = [e["value"] for e in container["env"] if e["name"] == "REVALIDATION_FAILS_OPEN"]
    return str(value)


def test_an_ubuntu_canary_and_its_led_pool_hold_a_node_failed_after_its_driver_upgrade(
    ubuntu_plan: Plan,
) -> None:
    # The canary's gate stops a bad driver before the led pool's NVIDIADriver changes.
    assert (fails_open(ubuntu_plan, "canary"), fails_open(ubuntu_plan, "l4-shared")) == ("0", "0")


def test_an_ubuntu_pool_no_canary_guards_keeps_a_node_failed_after_its_driver_upgrade() -> None:
    # Nothing stops the operator's rollout there (report.fails_open says why).
    plan = run_program(
        "dev", config=on_ubuntu(gke_stack_config(dev_stack_config())), project=PROJECT
    )

    assert fails_open(plan, "l4-shared") == "1"
