"""The code stays lint-clean, formatted and type-checked: the same commands the README gives."""

import ast
import re
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


MYPY_SKIPPED_MODULES = [
    module
    for override in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"][
        "overrides"
    ]
    if override.get("follow_imports") == "skip"
    for module in override["module"]
]
PROVIDER_PACKAGES = {module for module in MYPY_SKIPPED_MODULES if "." not in module}
"""The provider SDKs' packages mypy skips, whose modules the code imports one by one."""
UNUSED_MODULES = re.compile(
    "|".join(
        re.escape(pattern).replace(r"\.\*", r"(\.[^.]+)*")
        for pattern in MYPY_SKIPPED_MODULES
        if "." in pattern
    )
)
"""Modules mypy skips that the code must not use at all (mypy's patterns: `*` stands for any
number of a name's parts)."""
UNUSED_MODULE_NAMES = {
    pattern.rsplit(".", 1)[1] for pattern in MYPY_SKIPPED_MODULES if ".*." in pattern
}
"""Their last parts (`v1beta1`), as the code would read them from their parent (`apps.v1beta1`)."""


def mypy_blind_spots(tree: ast.Module) -> list[str]:
    """What mypy would take for `Any`: `import pulumi_aws` and the like, and any import of a
    module mypy skips, or any read of one as its parent's attribute."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [
                alias.name
                for alias in node.names
                if alias.name in PROVIDER_PACKAGES or UNUSED_MODULES.fullmatch(alias.name)
            ]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
            found += [name for name in names if UNUSED_MODULES.fullmatch(name)]
        elif isinstance(node, ast.Attribute) and node.attr in UNUSED_MODULE_NAMES:
            found.append(ast.unparse(node))
    return found


def test_the_check_finds_a_whole_provider_package_import() -> None:
    assert mypy_blind_spots(ast.parse("import pulumi_aws as aws\nfrom pulumi_aws import eks")) == [
        "pulumi_aws"
    ]


def test_the_check_finds_a_use_of_a_module_mypy_skips() -> None:
    source = (
        "from moto.backends import get_backend\n"
        "from pulumi_kubernetes.apps import v1beta2\n"
        "import pulumi_kubernetes.resource.v1alpha3\n"
        "from pulumi_kubernetes import apps, resource\n"
        "apps.v1.Deployment, resource.v1beta1.ResourceSlice\n"
    )

    assert mypy_blind_spots(ast.parse(source)) == [
        "moto.backends",
        "pulumi_kubernetes.apps.v1beta2",
        "pulumi_kubernetes.resource.v1alpha3",
        "resource.v1beta1",
    ]


def python_files() -> list[Path]:
    """The files mypy checks, and the program's entry point."""
    return [
        path
        for folder in [*TYPE_CHECKED, "__main__.py"]
        for path in sorted(
            (ROOT / folder).rglob("*.py") if (ROOT / folder).is_dir() else [ROOT / folder]
        )
    ]


def test_provider_sdks_are_imported_by_module_so_mypy_checks_their_use() -> None:
    offenders = {
        str(path.relative_to(ROOT)): names
        for path in python_files()
        if (names := mypy_blind_spots(ast.parse(path.read_text())))
    }

    assert offenders == {}
