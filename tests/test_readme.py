"""The README's promises: its commands are the ones CI runs, its environments table is complete."""

import re
from pathlib import Path

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


def test_every_stack_file_has_a_row_in_the_environments_table() -> None:
    table = re.search(r"### Environments: one stack each\n(.*?)\n\n", README, re.S)
    assert table, "the README has lost its environments table"
    rows = set(re.findall(r"^\| `([^`]+)` \|", table.group(1), re.M))
    stacks = {path.name[len("Pulumi.") : -len(".yaml")] for path in ROOT.glob("Pulumi.*.yaml")}

    assert rows == stacks
