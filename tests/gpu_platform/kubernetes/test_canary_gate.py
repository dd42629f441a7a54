"""The gate between a canary pool and the pool it leads: the led pool's nodes wait for a Job on
the canary, re-run for each canary release, that checks its driver and then soaks."""

import copy
import subprocess
from pathlib import Path
from typing import Any

import pytest

from gpu_platform.kubernetes.tenant_namespace import SMOKE_TEST_SCRIPT, SOAK_SCRIPT
from gpu_platform.offline.program import Plan, PlannedResource, run_program
from gpu_platform.stack_files import stack_config
from tests.conftest import Config
from tests.gpu_platform.config.test_canary_rules import PlanFor, canary_of, problems
from tests.repository import PROJECT
from tests.shared_plans import shared_plan

# Its tests plan the same configs again and again, and change the program only through the
# stand-ins' answers.
pytestmark = pytest.mark.shared_plans

JOB = "kubernetes:batch/v1:Job"
NODE_GROUP_COMPONENT = "gpu-platform:eks:GpuNodeGroup"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
OPERATOR = "gpu-platform:kubernetes:GpuOperator"
TENANT = "gpu-platform:kubernetes:GpuTenantNamespace"
GATE = "a100-canary-canary-gate"


def prod_config() -> Config:
    return copy.deepcopy(dict(stack_config("prod", PROJECT)))


def prod_pool(config: Config, name: str) -> dict[str, Any]:
    return next(p for p in config["gpu-platform:pools"] if p["name"] == name)


@pytest.fixture(scope="module")
def prod_plan() -> Plan:
    return shared_plan("prod")


def node_group(plan: Plan, pool: str) -> PlannedResource:
    return plan.named(f"{pool}-nodes", NODE_GROUP)


def gate(plan: Plan) -> PlannedResource:
    return plan.named(GATE, JOB)


def gate_pod(plan: Plan) -> dict[str, Any]:
    return dict(gate(plan).inputs["spec"]["template"]["spec"])


def waits_for(plan: Plan, resource: PlannedResource, component: PlannedResource) -> bool:
    """Whether `resource` depends on `component`: the engine is told of its resources."""
    family = {component.urn}
    for candidate in plan.resources:
        if candidate.parent in family:
            family.add(candidate.urn)
    return bool(family & set(resource.dependencies))


def gate_env(plan: Plan) -> dict[str, str]:
    container = gate_pod(plan)["containers"][0]
    return {e["name"]: e["value"] for e in container["env"]}


# --- Order ----------------------------------------------------------------------------------


def test_the_led_pools_node_group_is_updated_only_after_its_canarys_gate(prod_plan: Plan) -> None:
    assert gate(prod_plan).urn in node_group(prod_plan, "a100-inference").dependencies


def test_the_gate_waits_for_the_gpu_operator(prod_plan: Plan) -> None:
    (operator,) = prod_plan.of_type(OPERATOR)

    assert waits_for(prod_plan, gate(prod_plan), operator)


def test_the_operator_waits_neither_for_the_led_pool_nor_for_a_validating_one(
    prod_plan: Plan,
) -> None:
    # Every prod pool validates its nodes: each waits for its validator, in the operator's
    # namespace (node_validation/test_validator_order.py); the gate waits for the canary.
    (operator,) = prod_plan.of_type(OPERATOR)
    pools = {r.name: r for r in prod_plan.of_type(NODE_GROUP_COMPONENT)}

    assert sorted(pools) == ["a100-canary", "a100-inference", "h100-training"]
    assert not any(waits_for(prod_plan, operator, pool) for pool in pools.values())


def test_a_pool_without_a_canary_waits_for_no_gate(prod_plan: Plan) -> None:
    assert gate(prod_plan).urn not in node_group(prod_plan, "h100-training").dependencies
    assert gate(prod_plan).urn not in node_group(prod_plan, "a100-canary").dependencies


def test_tenant_smoke_tests_run_after_the_led_pool_is_updated(prod_plan: Plan) -> None:
    led = prod_plan.named("a100-inference", NODE_GROUP_COMPONENT)

    assert {waits_for(prod_plan, t, led) for t in prod_plan.of_type(TENANT)} == {True}


def test_a_stack_without_canaries_has_no_gate(dev_plan: Plan) -> None:
    assert [j.name for j in dev_plan.of_type(JOB) if "canary-gate" in j.name] == []


def test_a_gke_pool_is_updated_only_after_its_canarys_gate(
    gke_config: Config, plan_for: PlanFor
) -> None:
    canary_of(gke_config)

    plan = plan_for(gke_config)

    pool = gke_config["gpu-platform:pools"][0]["name"]
    gate_job = plan.named("canary-canary-gate", JOB)
    assert gate_job.urn in plan.named(pool, "gcp:container/nodePool:NodePool").dependencies


def karpenter_canary_of(config: Config) -> dict[str, Any]:
    """A canary of karpenter-dev's first pool, a Capacity Block, on on-demand capacity: the
    config refuses a canary on a block, where no node starts for its gate's plain pod."""
    canary = canary_of(config, capacity="on-demand")
    del canary["aws"]["capacityReservationId"]
    return canary


def test_a_karpenter_pool_is_updated_only_after_its_canarys_gate(plan_for: PlanFor) -> None:
    karpenter_config = copy.deepcopy(dict(stack_config("karpenter-dev", PROJECT)))
    karpenter_canary_of(karpenter_config)

    plan = plan_for(karpenter_config)

    pool = karpenter_config["gpu-platform:pools"][0]["name"]
    gate_job = plan.named("canary-canary-gate", JOB)
    node_class = plan.named(pool, "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass")
    node_pool = plan.named(pool, "kubernetes:karpenter.sh/v1:NodePool")
    # The AMI is the node class's: a new one drifts the pool's nodes.
    assert gate_job.urn in node_class.dependencies
    assert node_class.urn in node_pool.dependencies


def karpenter_canary_plan(plan_for: PlanFor, ami_release: str | None = None) -> Plan:
    config = copy.deepcopy(dict(stack_config("karpenter-dev", PROJECT)))
    config["gpu-platform:pools"][0]["aws"]["amiReleaseVersion"] = "1.35.6-20260625"
    canary = karpenter_canary_of(config)
    if ami_release is not None:
        canary["aws"]["amiReleaseVersion"] = ami_release
    return plan_for(config)


def karpenter_template_labels(plan: Plan, pool: str) -> dict[str, str]:
    node_pool = plan.named(pool, "kubernetes:karpenter.sh/v1:NodePool")
    return dict(node_pool.inputs["spec"]["template"]["metadata"]["labels"])


def test_a_karpenter_gate_runs_only_on_a_node_of_the_updated_canary(plan_for: PlanFor) -> None:
    # Karpenter replaces the nodes of a changed NodePool or EC2NodeClass by drift, after the
    # update: kubernetes-sigs/karpenter pkg/controllers/nodeclaim/disruption/drift.go marks a
    # NodeClaim whose NodePool hash changed as drifted, on its next reconcile, and the disruption
    # controller replaces it later within the pool's budget, so an old node may still be there
    # when the gate starts. The gate asks for the release id only the updated NodePool's nodes
    # carry.
    plan = karpenter_canary_plan(plan_for)

    gate_job = plan.named("canary-canary-gate", JOB)
    (term,) = gate_job.inputs["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    release_id = gate_job.inputs["metadata"]["name"].removeprefix("gpu-canary-gate-")
    assert term["matchExpressions"] == [
        {"key": "gpu-platform.io/pool", "operator": "In", "values": ["canary"]},
        {"key": "gpu-platform.io/canary-release-id", "operator": "In", "values": [release_id]},
    ]
    assert karpenter_template_labels(plan, "canary")["gpu-platform.io/canary-release-id"] == (
        release_id
    )


def test_a_new_karpenter_canary_release_labels_its_new_nodes_anew(plan_for: PlanFor) -> None:
    before = karpenter_template_labels(karpenter_canary_plan(plan_for), "canary")
    after = karpenter_template_labels(
        karpenter_canary_plan(plan_for, ami_release="1.35.6-20260714"), "canary"
    )

    assert before["gpu-platform.io/canary-release-id"] != after["gpu-platform.io/canary-release-id"]


def test_the_led_karpenter_pools_nodes_carry_no_release_id(plan_for: PlanFor) -> None:
    plan = karpenter_canary_plan(plan_for)

    led = karpenter_template_labels(plan, karpenter_config_pool_name())

    assert "gpu-platform.io/canary-release-id" not in led


def karpenter_config_pool_name() -> str:
    return str(stack_config("karpenter-dev", PROJECT)["gpu-platform:pools"][0]["name"])


# --- Re-run for each canary release ----------------------------------------------------------


def test_a_new_canary_release_is_a_new_gate_job(prod_plan: Plan) -> None:
    config = prod_config()
    prod_pool(config, "a100-canary")["aws"]["amiReleaseVersion"] = "1.35.6-20260625"

    after = run_program("prod", config=config, project=PROJECT)

    assert gate(after).inputs["metadata"]["name"] != gate(prod_plan).inputs["metadata"]["name"]


def test_a_canary_change_that_keeps_its_release_keeps_the_gate_job(prod_plan: Plan) -> None:
    config = prod_config()
    prod_pool(config, "a100-canary")["max"] = 2

    after = run_program("prod", config=config, project=PROJECT)

    assert gate(after).inputs["metadata"] == gate(prod_plan).inputs["metadata"]


def test_the_gate_names_the_release_it_proves(prod_plan: Plan) -> None:
    annotations = gate(prod_plan).inputs["metadata"]["annotations"]

    assert annotations["gpu-platform.io/canary-release"] == (
        "580.159.03, AMI release 1.35.6-20260714"
    )


def test_a_failed_gate_is_run_again_on_the_next_up(prod_plan: Plan) -> None:
    assert gate(prod_plan).inputs["metadata"]["annotations"]["pulumi.com/replaceUnready"] == "true"


# --- What the gate checks ----------------------------------------------------------------------


def test_the_gate_runs_on_the_canary_and_expects_its_driver(prod_plan: Plan) -> None:
    pod = gate_pod(prod_plan)

    (term,) = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    assert term["matchExpressions"] == [
        {"key": "gpu-platform.io/pool", "operator": "In", "values": ["a100-canary"]}
    ]
    assert gate_env(prod_plan)["EXPECTED_NVIDIA_DRIVER"] == "580.159.03"


def test_the_gate_soaks_for_the_canarys_minutes_within_its_deadline(prod_plan: Plan) -> None:
    spec = gate(prod_plan).inputs["spec"]
    timeout = gate(prod_plan).inputs["metadata"]["annotations"]["pulumi.com/timeoutSeconds"]

    assert gate_env(prod_plan)["SOAK_MINUTES"] == "15"
    # 15 minutes for the canary's first node to start; 17 for its validation at the longest
    # (the validator's timeouts in validate.py: 60 s for `nvidia-smi -q -x`, 60 for its NVLink
    # status, 300 for a level-1 `dcgmi diag`, 300 for the validation pod to start and 300 to
    # pull DCGM's image; no NCCL test, since the canary sets no expected bus bandwidth); then the
    # 15 of the soak. Pulumi waits past the Job's own deadline, so the Job's failure is the one
    # reported.
    assert (spec["activeDeadlineSeconds"], timeout) == (900 + 1020 + 900, "2940")


def test_a_canary_without_a_soak_runs_only_the_check() -> None:
    config = prod_config()
    prod_pool(config, "a100-canary")["canarySoakMinutes"] = 0

    plan = run_program("prod", config=config, project=PROJECT)

    assert "SOAK_MINUTES" not in gate_env(plan)
    # The check alone, once the validation's proof is in.
    assert gate_pod(plan)["containers"][0]["command"][2].endswith(f"done\n{SMOKE_TEST_SCRIPT}")


def test_a_soak_on_a_pool_that_is_no_canary_is_refused(
    dev_config: Config, failed_plan_for: PlanFor
) -> None:
    dev_config["gpu-platform:pools"][0]["canarySoakMinutes"] = 30

    assert problems(failed_plan_for(dev_config)) == {
        "gpu-platform:pools[0].canarySoakMinutes": "no value unless the pool is a canary (canaryOf)"
    }


def run_gate_script(
    tmp_path: Path, failing_after: int | None
) -> "subprocess.CompletedProcess[str]":
    """The gate's script under `sh`, its minute shortened, with an `nvidia-smi` that reports the
    expected driver and fails from its `failing_after`-th plain call on."""
    fake = tmp_path / "nvidia-smi"
    count = tmp_path / "calls"
    limit = 10**6 if failing_after is None else failing_after
    fake.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = --query-gpu=driver_version ]; then echo 580.159.03; exit 0; fi\n'
        f'echo x >> "{count}"\n'
        f'[ "$(wc -l < "{count}")" -le {limit} ]\n'
    )
    fake.chmod(0o755)
    env = {
        "PATH": f"{tmp_path}:/usr/bin:/bin",
        "EXPECTED_NVIDIA_DRIVER": "580.159.03",
        "SOAK_MINUTES": "3",
    }
    script = SMOKE_TEST_SCRIPT + SOAK_SCRIPT.replace("sleep 60", "sleep 0")
    return subprocess.run(
        ["sh", "-c", script], env=env, capture_output=True, text=True, check=False
    )


def test_the_gate_passes_a_canary_that_stays_healthy_through_the_soak(tmp_path: Path) -> None:
    result = run_gate_script(tmp_path, failing_after=None)

    assert (result.returncode, result.stdout.splitlines()[-1]) == (0, "soaked 3 minute(s)")


def test_the_gate_fails_a_canary_whose_gpu_stops_answering_during_the_soak(
    tmp_path: Path,
) -> None:
    # The first plain call is the check's; the soak's second minute fails.
    result = run_gate_script(tmp_path, failing_after=2)

    assert (result.returncode, result.stdout.splitlines()[-1]) == (
        1,
        "nvidia-smi failed after 2 minute(s) of soak",
    )
