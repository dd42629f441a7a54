"""The code stays lint-clean, formatted and type-checked: the same commands the README gives."""

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TYPE_CHECKED = ["gpu_platform", "tests", "benchmarks"]


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


def whole_provider_package_imports(source: str) -> list[str]:
    """`import pulumi_aws` and the like: the SDK packages mypy skips, so what they hold is Any."""
    skipped = set(MYPY_SKIPPED)
    return [
        alias.name
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Import)
        for alias in node.names
        if alias.name in skipped
    ]


MYPY_SKIPPED = next(
    override["module"]
    for override in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"][
        "overrides"
    ]
    if override.get("follow_imports") == "skip"
)


def test_the_check_finds_a_whole_provider_package_import() -> None:
    assert whole_provider_package_imports(
        "import pulumi_aws as aws\nfrom pulumi_aws import eks"
    ) == ["pulumi_aws"]


def test_provider_sdks_are_imported_by_module_so_mypy_checks_their_use() -> None:
    offenders = {
        str(path.relative_to(ROOT)): names
        for folder in [*TYPE_CHECKED, "__main__.py"]
        for path in sorted(
            (ROOT / folder).rglob("*.py") if (ROOT / folder).is_dir() else [ROOT / folder]
        )
        if (names := whole_provider_package_imports(path.read_text()))
    }

    assert offenders == {}
