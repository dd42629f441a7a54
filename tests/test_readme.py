"""The README's promises: its commands are the ones CI runs, its config reference is current."""

import re
from pathlib import Path

from gpu_platform.cli.config_reference import END_MARKER, START_MARKER, render_reference
from gpu_platform.config import StackConfig

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


def test_config_reference_in_readme_matches_the_model() -> None:
    section = README.split(START_MARKER)[1].split(END_MARKER)[0]

    assert section.strip() == render_reference().strip(), (
        "the config model changed: run `gpu-platform config-reference --update-readme`"
    )


def test_config_reference_lists_the_mig_slices_a_quota_may_name() -> None:
    # The loader refuses a migQuota key that is no slice of a known GPU: an editor validating
    # against the schema, and a reader of the reference, should see the same list. A slice of
    # the A30 and one with media engines of the A100 80GB (k8s-device-plugin v0.20.0,
    # internal/rm/rm.go, names NVML's `1g.10gb+me` `mig-1g.10gb.me`).
    schema = StackConfig.model_json_schema(by_alias=True)
    mig_quota = schema["$defs"]["TenantNamespaceSpec"]["properties"]["migQuota"]
    (row,) = [line for line in render_reference().splitlines() if line.startswith("| `migQuota`")]

    assert {"1g.6gb", "1g.10gb.me"} <= set(mig_quota["propertyNames"]["enum"])
    assert "map of integer by `1g.10gb` \\| `1g.10gb.me` \\|" in row


def test_every_stack_file_has_a_row_in_the_environments_table() -> None:
    table = re.search(r"### Environments: one stack each\n(.*?)\n\n", README, re.S)
    assert table, "the README has lost its environments table"
    rows = set(re.findall(r"^\| `([^`]+)` \|", table.group(1), re.M))
    stacks = {path.name[len("Pulumi.") : -len(".yaml")] for path in ROOT.glob("Pulumi.*.yaml")}

    assert rows == stacks
