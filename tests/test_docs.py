"""The docs' generated references are current."""

from collections.abc import Callable

import pytest

from gpu_platform.cli import cli_reference, config_reference
from gpu_platform.cli.generated_section import section
from tests.repository import ROOT

DOCS = ROOT / "docs"


REFERENCES = {
    "config": ("reference/config.md", config_reference.COMMAND, config_reference.render_reference),
    "cli": ("reference/cli.md", cli_reference.COMMAND, cli_reference.render_reference),
}


@pytest.mark.parametrize(("page", "command", "render"), REFERENCES.values(), ids=REFERENCES)
def test_a_generated_reference_matches_what_it_is_generated_from(
    page: str, command: str, render: Callable[[], str]
) -> None:
    written = section((DOCS / page).read_text(), command)

    assert written.strip() == render().strip(), f"run `gpu-platform {command} --update docs/{page}`"
