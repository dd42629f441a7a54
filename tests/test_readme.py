"""The README's promises: its commands are the ones CI runs, its example stacks are valid."""

import re
from pathlib import Path

import pytest
import yaml

from gpu_platform.config import CONFIG_NAMESPACE, load_stack_config

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def commands_in_readme() -> list[str]:
    block = re.search(r"## Try it: two commands.*?```sh\n(.*?)```", README, re.S)
    assert block, "the README has lost its two commands"
    return [line.split("#")[0].strip() for line in block.group(1).splitlines() if line.strip()]


def test_readme_has_two_commands_plan_then_tests() -> None:
    plan, tests = commands_in_readme()

    assert " plan dev" in plan and tests.endswith("pytest")


def test_ci_runs_the_readmes_test_command_with_the_alert_and_registry_tests_required() -> None:
    ci = (ROOT / ".ci" / "run").read_text().splitlines()

    assert f"GPU_PLATFORM_REQUIRE_PROMTOOL=1 {commands_in_readme()[1]}" in ci
    assert "export GPU_PLATFORM_REQUIRE_REGISTRY=1" in ci
    assert "[ -x /usr/bin/docker-registry ] || missing+=(docker-registry)" in ci


EXAMPLES = re.findall(r"```yaml\n(.*?)```", README, re.S)


def test_the_readme_shows_one_stack_per_cloud() -> None:
    clouds = [yaml.safe_load(text)["config"][f"{CONFIG_NAMESPACE}:cloud"] for text in EXAMPLES]

    assert clouds == ["aws", "gcp"]


@pytest.mark.parametrize("text", EXAMPLES, ids=["eks", "gke"])
def test_the_readmes_example_stacks_are_valid(text: str) -> None:
    prefix = f"{CONFIG_NAMESPACE}:"
    config = yaml.safe_load(text)["config"]

    load_stack_config(
        {key.removeprefix(prefix): value for key, value in config.items() if key.startswith(prefix)}
    )
