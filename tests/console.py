"""The `gpu-platform` console command run as a user runs it: the installed entry point in a fresh
process, in this repository or in a project of the user's own."""

import shutil
import subprocess
import sys
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
