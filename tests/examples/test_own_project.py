"""examples/own-project: a platform team's own Pulumi project that installs gpu-platform from a
built wheel, outside this repository, beside a `components/` package of its own."""

import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from gpu_platform.config import load_stack_config
from gpu_platform.lock.lockfile import IMAGES, LOCK_FILE_NAME, Lock, entry
from gpu_platform.platform_images import platform_images
from gpu_platform.project import Project
from gpu_platform.stack_files import gpu_platform_config, stack_config
from tests.repository import ROOT

EXAMPLE = ROOT / "examples" / "own-project"


def uv() -> str:
    """The pinned uv that `./uvw` installs, else one on PATH."""
    pinned = ROOT / ".uv" / "bin" / "uv"
    found = str(pinned) if pinned.is_file() else shutil.which("uv")
    if found is None:
        pytest.fail("no uv: run the tests as the README says (./uvw run --locked pytest)")
    return found


PACK_VENV = Path("gpu_platform", "policy_pack", "venv")


def committed_copy(destination: Path) -> Path:
    """The repository's files as git tracks them, uncommitted changes included."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    for name in filter(None, listed.split("\0")):
        if (ROOT / name).is_file():
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, destination / name)
    return destination


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtual environment holding the wheel built from this repository, with no copy of the
    repository on its path. Its other packages are this environment's (added with a .pth file),
    so the test installs no more than the wheel."""
    work = tmp_path_factory.mktemp("consumer")
    source = committed_copy(work / "source")
    # What `pulumi install` leaves in the pack's directory of a working copy.
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(source / PACK_VENV)], check=True
    )
    subprocess.run(
        [uv(), "build", "--wheel", "--out-dir", str(work / "dist"), str(source)],
        check=True,
        capture_output=True,
    )
    (wheel,) = (work / "dist").glob("gpu_platform-*.whl")
    with zipfile.ZipFile(wheel) as built:
        assert not [name for name in built.namelist() if name.startswith(f"{PACK_VENV}/")]
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (Path(site) / "dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    subprocess.run(
        [uv(), "pip", "install", "--no-deps", "--python", str(python), str(wheel)],
        check=True,
        capture_output=True,
    )
    return venv


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The example, copied away from the repository."""
    return Path(shutil.copytree(EXAMPLE, tmp_path / "own-project"))


def run(venv: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(venv / "bin" / "gpu-platform"), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": "/usr/bin:/bin"},
    )


def test_the_example_imports_the_installed_package_not_the_repository(
    installed: Path, project: Path
) -> None:
    result = subprocess.run(
        [
            str(installed / "bin" / "python"),
            "-c",
            "import gpu_platform; print(gpu_platform.__file__)",
        ],
        cwd=project,
        capture_output=True,
        text=True,
        check=True,
    )

    assert Path(result.stdout.strip()).is_relative_to(installed)


def test_the_example_plans_beside_its_own_components_package(
    installed: Path, project: Path
) -> None:
    result = run(installed, "plan", "dev", cwd=project)

    assert result.returncode == 0, result.stderr
    assert "gpu-platform:index:GpuPlatform gpu-platform" in result.stdout
    assert "  owner: ml-platform@example.com\n" in result.stdout


def write_project_lock(project: Path) -> None:
    """A lock beside the example's Pulumi.yaml holding a digest (test data) for each image its
    dev stack deploys that has none upstream, as `gpu-platform lock` writes it: without one
    each image runs by tag, which `platform-images-by-digest` reports (docs/lock.md)."""
    stack = load_stack_config(*gpu_platform_config(stack_config("dev", Project.find(project))))
    digest = entry("sha256:" + "0e" * 32, "https://registry.example")
    images = {image.key: digest for image in platform_images(stack) if image.digest is None}
    Lock(path=project / LOCK_FILE_NAME).with_entries(IMAGES, images).save()


def test_the_installed_policy_pack_judges_the_examples_plan(installed: Path, project: Path) -> None:
    pack = installed / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    pack = pack / "site-packages" / "gpu_platform" / "policy_pack"
    write_project_lock(project)

    result = run(installed, "plan", "dev", cwd=project)

    assert f"Policy pack ({pack}): 0 mandatory, 0 advisory violation(s)" in result.stdout
    assert run(installed, "policy-pack-path", cwd=project).stdout == f"{pack}\n"


def test_a_privileged_pod_in_the_example_is_refused_by_the_installed_pack(
    installed: Path, project: Path
) -> None:
    with (project / "__main__.py").open("a") as program:
        program.write(
            "\nfrom pulumi_kubernetes.core.v1 import Pod\n"
            'Pod("debug", metadata={"namespace": "ml-sandbox"}, spec={"containers": [{"name": "c",'
            ' "image": "busybox:1.37", "securityContext": {"privileged": True}}]})\n'
        )

    result = run(installed, "plan", "dev", cwd=project)

    assert result.returncode == 3
    assert (
        "  mandatory pod-security-standards on kubernetes:core/v1:Pod debug: privileged:"
        ' container "c" sets spec.containers[0].securityContext.privileged=true. Fix:'
        " remove privileged or set it to false." in result.stdout
    )
