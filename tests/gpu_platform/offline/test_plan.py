"""`plan_stack`, as a program (Automation API, a test harness) calls it: the plan and the policy
pack's verdicts are returned, nothing is printed and nothing exits."""

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_platform.config import ConfigError
from gpu_platform.offline import plan as plan_module
from gpu_platform.offline.plan import NotAPolicyPack, plan_stack
from gpu_platform.project import Project
from tests.conftest import Config
from tests.console import own_project_in
from tests.repository import POLICY_PACK, PROJECT


def test_a_program_plans_the_dev_stack_and_reads_the_verdicts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    given: list[Any] = []

    def mismatches(plan: Any, config: Any) -> list[str]:
        given.append(config)
        return ["exempt namespaces differ"]

    monkeypatch.setattr(plan_module, "exemption_mismatches", mismatches)
    monkeypatch.setattr(plan_module, "closed_drift_windows", lambda plan: ["no drift window"])
    planned = plan_stack("dev", project=PROJECT)

    assert planned.plan.stack == "dev"
    assert planned.plan.error is None
    assert planned.pack_dir == POLICY_PACK
    # The dev stack's one GPU pool (Pulumi.dev.yaml `pools[0].name`), as one EKS node group.
    (node_group,) = planned.plan.of_type("aws:eks/nodeGroup:NodeGroup")
    assert node_group.inputs["labels"]["gpu-platform.io/pool"] == "t4-shared"
    # The pack reports violations only, and the dev stack has none (policy-config/dev.json).
    assert planned.verdicts == ()
    # The exempt namespaces are compared with the policy config the pack was given.
    assert given == [json.loads((PROJECT.directory / "policy-config" / "dev.json").read_text())]
    assert "exempt namespaces differ" in planned.warnings
    assert "no drift window" in planned.warnings


def test_a_directory_without_a_pack_is_refused_before_the_program_runs(tmp_path: Path) -> None:
    with pytest.raises(NotAPolicyPack, match=r"it has no PulumiPolicy\.yaml"):
        plan_stack("dev", project=PROJECT, policy_pack=tmp_path)


def test_a_stack_its_config_refuses_never_starts_the_policy_pack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[Any] = []

    class Pack:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            started.append(args)

        def close(self) -> None:
            pass

    monkeypatch.setattr(plan_module, "PolicyPack", Pack)
    stack_file = own_project_in(tmp_path) / "stacks" / "Pulumi.staging.yaml"
    stack = yaml.safe_load(stack_file.read_text())
    stack["config"]["gpu-platform:cloud"] = "azure"
    stack_file.write_text(yaml.safe_dump(stack))

    with pytest.raises(ConfigError, match="gpu-platform:cloud"):
        plan_stack("staging", project=Project.find(tmp_path))

    assert started == []


def test_a_program_configured_in_code_plans_and_is_warned_of_its_unused_shares(
    tmp_path: Path, dev_config: Config
) -> None:
    # docs/library.md: `GpuPlatformArgs.from_settings` takes the settings from the program, and
    # its stack file then holds none of the platform's keys.
    settings = {
        k.removeprefix("gpu-platform:"): v for k, v in dev_config.items() if k != "aws:region"
    }
    settings["pools"].append({**settings["pools"][0], "name": "t4-shared-b"})
    settings["namespaces"][0]["queue"] = {"poolQuotas": {"t4-shared": 5, "t4-shared-b": 2}}
    (tmp_path / "Pulumi.yaml").write_text(yaml.safe_dump({"name": "in-code", "runtime": "python"}))
    stack_file = {"config": {"aws:region": dev_config["aws:region"]}}
    (tmp_path / "Pulumi.dev.yaml").write_text(yaml.safe_dump(stack_file))
    (tmp_path / "__main__.py").write_text(
        "from gpu_platform import GpuPlatform, GpuPlatformArgs\n"
        f"GpuPlatform('gpu-platform', GpuPlatformArgs.from_settings({settings!r}))\n"
    )

    planned = plan_stack("dev", project=Project.find(tmp_path))

    assert planned.plan.error is None
    assert [w for w in planned.warnings if w.startswith("namespace ml-sandbox:")] == [
        "namespace ml-sandbox: its queue's shares (queue.poolQuotas) of its quota of"
        " nvidia.com/gpu (8) on pools t4-shared, t4-shared-b add up to 7 (5 + 2): Kueue admits"
        " no job on the 1 left. Once the pool whose share you lowered runs within it, raise the"
        " share of the pool that takes the rest (docs/queues.md)."
    ]
