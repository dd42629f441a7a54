"""The docs site: it builds with every link and anchor resolving, and its generated references
are current."""

import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from gpu_platform.cli import cli_reference, config_reference
from gpu_platform.cli.app import app
from gpu_platform.cli.generated_section import section
from gpu_platform.config import StackConfig
from tests.repository import ROOT

DOCS = ROOT / "docs"


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )

    assert result.returncode == 0, result.stderr


REFERENCES = {
    "config": ("reference/config.md", config_reference.COMMAND, config_reference.render_reference),
    "cli": ("reference/cli.md", cli_reference.COMMAND, lambda: cli_reference.render_reference(app)),
}


@pytest.mark.parametrize(("page", "command", "render"), REFERENCES.values(), ids=REFERENCES)
def test_a_generated_reference_matches_what_it_is_generated_from(
    page: str, command: str, render: Callable[[], str]
) -> None:
    written = section((DOCS / page).read_text(), command)

    assert written.strip() == render().strip(), f"run `gpu-platform {command} --update docs/{page}`"


def test_every_stack_file_has_a_row_in_the_environments_table() -> None:
    text = (DOCS / "getting-started.md").read_text()
    table = re.search(r"## Environments: one stack each\n(.*?)\n\n", text, re.S)
    assert table, "getting started has lost its environments table"
    rows = set(re.findall(r"^\| `([^`]+)` \|", table.group(1), re.M))
    stacks = {path.name[len("Pulumi.") : -len(".yaml")] for path in ROOT.glob("Pulumi.*.yaml")}

    assert rows == stacks


def test_config_reference_lists_the_mig_slices_a_quota_may_name() -> None:
    # The loader refuses a migQuota key that is no slice of a known GPU: an editor validating
    # against the schema, and a reader of the reference, should see the same list. A slice of
    # the A30 and one with media engines of the A100 80GB (k8s-device-plugin v0.20.0,
    # internal/rm/rm.go, names NVML's `1g.10gb+me` `mig-1g.10gb.me`).
    schema = StackConfig.model_json_schema(by_alias=True)
    mig_quota = schema["$defs"]["TenantNamespaceSpec"]["properties"]["migQuota"]
    (row,) = [
        line
        for line in config_reference.render_reference().splitlines()
        if line.startswith("| `migQuota`")
    ]

    assert {"1g.6gb", "1g.10gb.me"} <= set(mig_quota["propertyNames"]["enum"])
    assert "map of integer by `1g.10gb` \\| `1g.10gb.me` \\|" in row
