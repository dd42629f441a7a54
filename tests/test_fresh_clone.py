"""The README's two commands on a fresh copy of the repository, with a PATH that has Python and
nothing else: no promtool, no uv, nothing a contributor would have installed by hand.

The copy holds the files git tracks, and the new ones it does not ignore, as they are in the
working tree: the repository as it would be committed. The uv that `./uvw` installed runs the
equivalents of the two commands offline, from uv's cache: `uv run --locked gpu-platform plan
dev`, and the test command on the alert-rule tests, which must skip for want of promtool (the
rest of the suite is this run itself).
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.gpu_platform.kubernetes.test_alert_rules import UNIT_TESTS
from tests.repository import ROOT

UV = ROOT / ".uv" / "bin" / "uv"
ALERT_TESTS = "tests/gpu_platform/kubernetes/test_alert_rules.py"
# The tests there that run promtool: one per unit-test file, the rules' check and the dashboard
# queries' check.
PROMTOOL_TESTS = len(UNIT_TESTS) + 2


@pytest.fixture(scope="module")
def fresh_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not UV.is_file():
        pytest.skip("needs the uv that ./uvw installs into .uv/: run the tests through ./uvw")
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    copy = tmp_path_factory.mktemp("fresh-clone") / "gpu-platform"
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy / name)
    return copy


@pytest.fixture(scope="module")
def bare_environment(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Python 3 alone on PATH; HOME kept for uv's cache; none of this run's own settings."""
    bin_dir = tmp_path_factory.mktemp("bin")
    # The interpreter the virtual environment was made from, not the environment itself.
    (bin_dir / "python3").symlink_to(Path(sys.executable).resolve())
    keep = {"HOME", "LANG", "LC_ALL", "TMPDIR", "UV_CACHE_DIR"}
    return {
        **{key: value for key, value in os.environ.items() if key in keep},
        "PATH": str(bin_dir),
        "UV_PYTHON": str(bin_dir / "python3"),
        "UV_OFFLINE": "1",
        "COLUMNS": "200",
    }


def run(copy: Path, environment: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(UV), "run", "--locked", *args],
        cwd=copy,
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_the_bare_path_has_no_promtool(bare_environment: dict[str, str]) -> None:
    assert shutil.which("promtool", path=bare_environment["PATH"]) is None
    assert shutil.which("python3", path=bare_environment["PATH"]) is not None


def test_the_plan_command_plans_the_dev_stack(
    fresh_copy: Path, bare_environment: dict[str, str]
) -> None:
    result = run(fresh_copy, bare_environment, "gpu-platform", "plan", "dev")

    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("stack dev: ")
    assert "0 mandatory" in result.stdout


def test_the_test_command_skips_the_alert_tests_saying_how_to_run_them(
    fresh_copy: Path, bare_environment: dict[str, str]
) -> None:
    result = run(
        fresh_copy, bare_environment, "pytest", "-p", "no:randomly", "-n", "0", ALERT_TESTS
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{PROMTOOL_TESTS} skipped" in result.stdout
    assert "promtool is not on PATH: install Debian's `prometheus` package" in result.stdout
