"""The code stays lint-clean, formatted and type-checked: the same commands the README gives."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TYPE_CHECKED = ["components", "gpu_platform_cli", "policies", "tests", "benchmarks"]


def run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *command], cwd=ROOT, capture_output=True, text=True, check=False
    )


@pytest.mark.parametrize(
    "command",
    [("ruff", "check", "."), ("ruff", "format", "--check", ".")],
    ids=["ruff-check", "ruff-format"],
)
def test_ruff_is_clean(command: tuple[str, ...]) -> None:
    result = run(*command)

    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_is_clean() -> None:
    result = run("mypy", *TYPE_CHECKED)

    assert result.returncode == 0, result.stdout + result.stderr
