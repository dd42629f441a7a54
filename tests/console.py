"""The `gpu-platform` console command run as a user runs it: the installed entry point in a fresh
process, in this repository or in a project of the user's own; or the same command line in this
process, for the tests that check what a command does rather than how it starts."""

import io
import os
import shutil
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import yaml

from tests.repository import ROOT

COMMAND = str(Path(sys.executable).parent / "gpu-platform")
OWN_PROJECT = "ml-gpus"


def gpu_platform(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [COMMAND, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"PATH": "/usr/bin:/bin", "COLUMNS": "200"},
    )


def gpu_platform_here(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """`gpu_platform(*args, cwd=cwd)` in this process: the command line through `app.run`, which
    the entry point calls, its output read as a pipe would take it, 200 columns wide. A fresh
    process costs a second of imports (a plan's, three): the tests of the entry point itself and
    of the installed package seen from elsewhere run `gpu_platform`.

    The process is left as it was found: its directory (`--cwd` enters one for good), its module
    path (a plan puts the program's folder first) and COLUMNS. The environment is the test's
    otherwise, so a plan reads only the lock the tests give it (tests/conftest.py)."""
    from gpu_platform.cli import app

    start, path, columns = os.getcwd(), sys.path[:], os.environ.get("COLUMNS")
    stdout, stderr = io.StringIO(), io.StringIO()
    os.environ["COLUMNS"] = "200"
    try:
        os.chdir(cwd)
        with redirect_stdout(stdout), redirect_stderr(stderr):
            code = app.run(list(args))
    finally:
        os.chdir(start)
        sys.path[:] = path
        if columns is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = columns
    return subprocess.CompletedProcess([COMMAND, *args], code, stdout.getvalue(), stderr.getvalue())


def own_project_in(directory: Path) -> Path:
    """A project named differently (`ml-gpus`), with its program in a folder (`main`) and its
    stack files in another (`stackConfigDir`), whose program uses the installed components as
    this repository's does; it has no policy pack. Its one stack, `staging`, is `dev`'s."""
    (directory / "Pulumi.yaml").write_text(
        yaml.safe_dump(
            {
                "name": OWN_PROJECT,
                "runtime": {"name": "python", "options": {"toolchain": "uv"}},
                "main": "infra",
                "stackConfigDir": "stacks",
            }
        )
    )
    (directory / "infra").mkdir()
    shutil.copy(ROOT / "__main__.py", directory / "infra" / "__main__.py")
    (directory / "stacks").mkdir()
    shutil.copy(ROOT / "Pulumi.dev.yaml", directory / "stacks" / "Pulumi.staging.yaml")
    return directory
