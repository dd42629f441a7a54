"""The `gpu-platform` console command, run as a user runs it: the installed entry point in a
fresh process, in this repository or in a project of the user's own. Each command starts as the
entry point in a test or two (`gpu_platform`); the other tests give its command line to the same
`app.run` in this process (`gpu_platform_here`), which spares them a second of imports each."""

import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
import yaml

from tests.console import COMMAND, gpu_platform, gpu_platform_here, own_project_in
from tests.repository import ROOT

SUBCOMMANDS = ("plan", "preflight", "fit", "lock", "config-reference", "cli-reference")


def test_version_is_the_installed_packages() -> None:
    result = gpu_platform("--version")

    assert result.returncode == 0
    assert result.stdout == f"gpu-platform {version('gpu-platform')}\n"


def test_python_m_runs_the_same_command() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "gpu_platform.cli", "--version"],
        capture_output=True,
        text=True,
        check=False,
    )

    assert result.returncode == 0
    assert result.stdout.startswith("gpu-platform ")


def test_help_lists_every_subcommand() -> None:
    result = gpu_platform("--help")

    assert result.returncode == 0
    for subcommand in SUBCOMMANDS:
        assert subcommand in result.stdout
    assert "--install-completion" in result.stdout


@pytest.mark.parametrize("subcommand", SUBCOMMANDS)
def test_every_subcommand_has_help(subcommand: str) -> None:
    result = gpu_platform_here(subcommand, "--help")

    assert result.returncode == 0
    assert f"Usage: gpu-platform {subcommand}" in result.stdout


def test_no_arguments_shows_usage_and_exits_2() -> None:
    result = gpu_platform_here()

    assert result.returncode == 2
    assert "Usage: gpu-platform" in result.stdout + result.stderr


def test_plan_exits_0_for_a_clean_stack() -> None:
    result = gpu_platform("plan", "dev")

    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("stack dev: ")


def test_an_unknown_stack_exits_2() -> None:
    result = gpu_platform_here("plan", "nope")

    assert result.returncode == 2
    assert "no stack file Pulumi.nope.yaml" in result.stderr


def test_outside_a_pulumi_project_the_commands_exit_2_saying_so(tmp_path: Path) -> None:
    result = gpu_platform_here("plan", "dev", cwd=tmp_path)

    assert result.returncode == 2
    assert "no Pulumi project (Pulumi.yaml)" in result.stderr
    assert "Traceback" not in result.stderr


def test_fit_exits_1_when_a_pod_fits_no_pool(tmp_path: Path) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "too-big"},
        "spec": {
            "containers": [
                {"name": "main", "image": "cuda", "resources": {"limits": {"nvidia.com/gpu": 64}}}
            ]
        },
    }
    (tmp_path / "pod.yaml").write_text(yaml.safe_dump(pod))

    result = gpu_platform_here("fit", "dev", str(tmp_path / "pod.yaml"))

    assert result.returncode == 1, result.stderr


def test_config_reference_prints_markdown() -> None:
    result = gpu_platform("config-reference")

    assert result.returncode == 0
    assert "| `gpu-platform:pools` |" in result.stdout


def test_cli_reference_prints_markdown() -> None:
    result = gpu_platform("cli-reference")

    assert result.returncode == 0
    assert "### `gpu-platform fit`" in result.stdout
    assert "| `--update PAGE` |" in result.stdout


# --- A project of the user's own ----------------------------------------------------------------


@pytest.fixture
def own_project(tmp_path: Path) -> Path:
    return own_project_in(tmp_path)


def test_plan_works_on_the_project_given_with_cwd(own_project: Path) -> None:
    result = gpu_platform_here("--cwd", str(own_project), "plan", "staging", cwd=Path("/"))

    assert result.returncode == 0, result.stderr
    assert "stack staging: " in result.stdout
    assert (
        "urn:pulumi:staging::ml-gpus::"
        in gpu_platform_here(
            "--cwd", str(own_project), "plan", "staging", "--json", cwd=Path("/")
        ).stdout
    )


def test_plan_finds_the_project_from_a_folder_below_it(own_project: Path) -> None:
    result = gpu_platform_here("plan", "staging", cwd=own_project / "infra")

    assert result.returncode == 0, result.stderr


def test_a_users_project_is_planned_with_the_installed_policy_pack(own_project: Path) -> None:
    result = gpu_platform("plan", "staging", cwd=own_project)

    assert result.returncode == 0, result.stderr
    assert f"Policy pack ({ROOT / 'gpu_platform' / 'policy_pack'}): 0 mandatory" in " ".join(
        result.stdout.split()
    )


def test_a_users_project_reads_its_own_policy_config(own_project: Path) -> None:
    (own_project / "policy-config").mkdir()
    (own_project / "policy-config" / "staging.json").write_text('{"no-such-policy": "mandatory"}')

    result = gpu_platform_here("plan", "staging", cwd=own_project)

    assert result.returncode == 2
    assert "no-such-policy" in result.stderr


# --- Internal errors ---------------------------------------------------------------------------


@pytest.fixture
def broken_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    from gpu_platform.cli import plan

    def crash(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the plan broke")

    monkeypatch.setattr(plan, "run", crash)


@pytest.mark.usefixtures("broken_plan")
def test_an_internal_error_is_one_message_and_exit_70_without_a_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from gpu_platform.cli import app

    code = app.run(["plan", "dev"])

    err = capsys.readouterr().err
    assert code == app.EXIT_INTERNAL_ERROR == 70
    assert "gpu-platform: internal error: RuntimeError: the plan broke" in err
    assert "--debug" in err
    assert "Traceback" not in err


@pytest.mark.usefixtures("broken_plan")
def test_debug_shows_an_internal_errors_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    from gpu_platform.cli import app

    code = app.run(["--debug", "plan", "dev"])

    assert code == 70
    assert "Traceback (most recent call last)" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("page", "words"),
    [(None, "cannot read reference.md"), ("# Our GPUs\n", "needs the markers")],
    ids=["no page", "no markers"],
)
@pytest.mark.parametrize("command", ["config-reference", "cli-reference"])
def test_updating_a_page_without_its_reference_markers_exits_2(
    own_project: Path, command: str, page: str | None, words: str
) -> None:
    if page is not None:
        (own_project / "reference.md").write_text(page)

    result = gpu_platform_here(command, "--update", "reference.md", cwd=own_project)

    assert result.returncode == 2
    assert words in result.stderr
    assert "Traceback" not in result.stderr
    if page is not None:
        assert (own_project / "reference.md").read_text() == page


def test_updating_a_page_rewrites_only_between_its_markers(own_project: Path) -> None:
    page = own_project / "reference.md"
    page.write_text(
        "# Our GPUs\n\n<!-- config-reference:start (gpu-platform config-reference --update PAGE)"
        " -->\nold\n<!-- config-reference:end -->\n\nOur notes.\n"
    )

    result = gpu_platform_here("config-reference", "--update", "reference.md", cwd=own_project)

    assert result.returncode == 0, result.stderr
    head, rest = page.read_text().split(" -->\n", 1)
    assert head.startswith("# Our GPUs\n\n<!-- config-reference:start")
    assert rest.startswith("Keys of `Pulumi.<stack>.yaml`")
    assert rest.endswith("\n<!-- config-reference:end -->\n\nOur notes.\n")


# --- As `pulumi` takes them -----------------------------------------------------------------------


@pytest.mark.parametrize("subcommand", ["plan", "config-reference"])
def test_cwd_is_taken_after_the_subcommand_too(own_project: Path, subcommand: str) -> None:
    args = [subcommand, "staging"] if subcommand == "plan" else [subcommand]

    result = gpu_platform_here(*args, "--cwd", str(own_project), cwd=Path("/"))

    assert result.returncode == 0, result.stderr


def test_plan_without_a_stack_plans_the_projects_only_stack(own_project: Path) -> None:
    result = gpu_platform_here("plan", cwd=own_project)

    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("stack staging: ")


def test_plan_without_a_stack_among_several_without_dev_names_them(own_project: Path) -> None:
    shutil.copy(
        own_project / "stacks" / "Pulumi.staging.yaml", own_project / "stacks" / "Pulumi.qa.yaml"
    )

    result = gpu_platform_here("plan", cwd=own_project)

    assert result.returncode == 2
    assert (
        result.stderr == "Name the stack to plan: `gpu-platform plan STACK`. Stacks: qa, staging.\n"
    )


def test_stack_names_complete_in_the_shell(own_project: Path) -> None:
    result = subprocess.run(
        [COMMAND],
        cwd=own_project,
        capture_output=True,
        text=True,
        check=False,
        env={
            "PATH": "/usr/bin:/bin",
            "_GPU_PLATFORM_COMPLETE": "complete_bash",
            "COMP_WORDS": "gpu-platform plan st",
            "COMP_CWORD": "2",
        },
    )

    assert result.stdout.split() == ["staging"]


def test_the_plan_prints_whole_numbers_as_integers() -> None:
    result = gpu_platform_here("plan", "dev")

    assert 'scalingConfig = {"minSize": 0, "maxSize": 3, "desiredSize": 0}' in result.stdout


def test_piped_output_is_not_wrapped_inside_keys_and_values() -> None:
    result = subprocess.run(
        [COMMAND, "plan", "dev"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": "/usr/bin:/bin"},
    )

    assert (
        "Policy pack ("
        + str(ROOT / "gpu_platform" / "policy_pack")
        + "): 0 mandatory, 0 advisory violation(s), 0 remediation(s)\n"
    ) in result.stdout


def test_policy_pack_path_prints_the_installed_packs_directory() -> None:
    result = gpu_platform("policy-pack-path", cwd=Path("/"))

    assert result.stdout == f"{ROOT / 'gpu_platform' / 'policy_pack'}\n"
    assert (Path(result.stdout.strip()) / "PulumiPolicy.yaml").is_file()


# --- A failing program --------------------------------------------------------------------------


@pytest.fixture
def broken_program(own_project: Path) -> Path:
    program = own_project / "infra" / "__main__.py"
    program.write_text(program.read_text() + "\nplatform.stack_outputs.sharer\n")
    return own_project


def test_a_failing_program_names_the_users_file_and_line(broken_program: Path) -> None:
    lines = len((broken_program / "infra" / "__main__.py").read_text().splitlines())

    result = gpu_platform_here("plan", "staging", cwd=broken_program)

    assert result.returncode == 1
    assert result.stderr == (
        f"The program failed at infra/__main__.py:{lines}: AttributeError: 'dict' object has"
        " no attribute 'sharer'\n(gpu-platform --debug shows the traceback)\n"
    )


def test_a_failure_inside_an_installed_package_names_the_users_line(own_project: Path) -> None:
    # With `toolchain: uv` the project's packages are installed in its own `.venv/`.
    site = own_project / ".venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (site / "installed_library.py").write_text("def explode():\n    raise ValueError('no')\n")
    program = own_project / "infra" / "__main__.py"
    program.write_text(
        program.read_text()
        + f"\nimport sys\nsys.path.insert(0, {str(site)!r})\n"
        + "import installed_library\ninstalled_library.explode()\n"
    )
    lines = len(program.read_text().splitlines())

    result = gpu_platform_here("plan", "staging", cwd=own_project)

    assert result.stderr.startswith(
        f"The program failed at infra/__main__.py:{lines}: ValueError: no\n"
    )


def test_debug_shows_a_failing_programs_traceback(broken_program: Path) -> None:
    result = gpu_platform_here("--debug", "plan", "staging", cwd=broken_program)

    assert "Traceback (most recent call last):" in result.stderr
    assert 'infra/__main__.py", line' in result.stderr


# --- Files it cannot use ------------------------------------------------------------------------


def test_a_missing_pod_file_is_named_without_an_errno(tmp_path: Path) -> None:
    result = gpu_platform("fit", "dev", str(tmp_path / "pods.yaml"))

    assert result.returncode == 2
    assert result.stderr == (
        f"cannot read the pod file {tmp_path / 'pods.yaml'}: No such file or directory\n"
    )


def test_a_pod_file_that_is_not_yaml_is_named_with_the_line(tmp_path: Path) -> None:
    pods = tmp_path / "pods.yaml"
    pods.write_text("kind: Pod\nspec: [containers\n")

    result = gpu_platform_here("fit", "dev", str(pods))

    assert result.returncode == 2
    assert result.stderr == (
        f"{pods}: not valid YAML: did not find expected ',' or ']' (line 3, column 1)\n"
    )
