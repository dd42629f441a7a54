"""`plan_stack`, as a program (Automation API, a test harness) calls it: the plan and the policy
pack's verdicts are returned, nothing is printed and nothing exits."""

from pathlib import Path

import pytest

from gpu_platform.offline.plan import NotAPolicyPack, plan_stack
from tests.repository import POLICY_PACK, PROJECT


def test_a_program_plans_the_dev_stack_and_reads_the_verdicts() -> None:
    planned = plan_stack("dev", project=PROJECT)

    assert planned.plan.stack == "dev"
    assert planned.plan.error is None
    assert planned.pack_dir == POLICY_PACK
    # The dev stack's one GPU pool (Pulumi.dev.yaml `pools[0].name`), as one EKS node group.
    (node_group,) = planned.plan.of_type("aws:eks/nodeGroup:NodeGroup")
    assert node_group.inputs["labels"]["gpu-platform.io/pool"] == "t4-shared"
    # The pack reports violations only, and the dev stack has none (policy-config/dev.json).
    assert planned.verdicts == ()


def test_a_directory_without_a_pack_is_refused_before_the_program_runs(tmp_path: Path) -> None:
    with pytest.raises(NotAPolicyPack, match=r"it has no PulumiPolicy\.yaml"):
        plan_stack("dev", project=PROJECT, policy_pack=tmp_path)
