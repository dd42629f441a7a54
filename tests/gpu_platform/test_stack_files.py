"""Stack and project files are read as Pulumi reads them: what Pulumi refuses, the offline plan
refuses with Pulumi's reason and exit 2, never a traceback; a key in a namespace one typo away
from `gpu-platform:` is reported rather than ignored."""

import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from gpu_platform.cli.app import app
from gpu_platform.project import Project
from gpu_platform.stack_files import stack_config
from tests.console import gpu_platform_here, own_project_in
from tests.repository import ROOT

DEV_STACK = (ROOT / "Pulumi.dev.yaml").read_text()


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of this project's program and project file, with no stack file yet."""
    shutil.copy(ROOT / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    shutil.copy(ROOT / "__main__.py", tmp_path / "__main__.py")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def plan(project: Path, stack_file: str) -> tuple[int, str]:
    (project / "Pulumi.broken.yaml").write_text(stack_file)
    result = CliRunner().invoke(app, ["plan", "broken"], terminal_width=300)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("stack_file", "words"),
    [
        ("- config\n- values\n", "must be a YAML mapping"),
        ("just words\n", "must be a YAML mapping"),
        ("config:\n\tgpu-platform:cloud: aws\n", "is not valid YAML"),
        ("config: [a, b]\n", "`config:` must be a mapping"),
        ("config:\n  a:b:c: aws\n", "'a:b:c': could not parse as a configuration key"),
    ],
    ids=["a list", "a scalar", "tabs", "config a list", "two namespaces"],
)
def test_a_stack_file_pulumi_refuses_exits_2_saying_why(
    project: Path, stack_file: str, words: str
) -> None:
    exit_code, output = plan(project, stack_file)

    assert exit_code == 2
    assert "Pulumi.broken.yaml" in output
    assert words in output


def plan_in_own_project(directory: Path, stack_file: bytes) -> tuple[int, str]:
    """`gpu-platform plan staging` in a project of the user's own whose stack file is
    `stack_file`: the exit code and what the command wrote to stderr."""
    project = own_project_in(directory)
    stack = project / "stacks" / "Pulumi.staging.yaml"
    stack.write_bytes(stack_file)
    result = gpu_platform_here("plan", "staging", cwd=project)
    return result.returncode, result.stderr.replace(str(stack), "Pulumi.staging.yaml")


def test_a_stack_file_not_in_utf8_is_a_config_error_naming_the_file(tmp_path: Path) -> None:
    latin1 = DEV_STACK.replace("# dev: a small", "# dév: a small").encode("latin-1")

    exit_code, stderr = plan_in_own_project(tmp_path, latin1)

    assert (exit_code, stderr) == (
        2,
        "Pulumi.staging.yaml: line 1: byte 0xe9 is not UTF-8; Pulumi reads a stack file as"
        " UTF-8 text: save it as UTF-8\n",
    )


def test_a_stack_file_in_utf16_with_its_byte_order_mark_is_read(project: Path) -> None:
    # Pulumi's YAML reader takes UTF-16 after its byte order mark (gopkg.in/yaml.v3 v3.0.1
    # readerc.go, yaml_parser_determine_encoding); PowerShell 5 writes files so.
    (project / "Pulumi.utf16.yaml").write_bytes(DEV_STACK.encode("utf-16"))

    result = CliRunner().invoke(app, ["plan", "utf16"], terminal_width=300)

    assert result.exit_code == 0, result.output


def test_a_config_key_above_the_config_block_is_refused_by_key(tmp_path: Path) -> None:
    # Pulumi decodes a stack file into its ProjectStack (secretsprovider, encryptedkey,
    # encryptionsalt, config, environment: pulumi/pulumi sdk/go/common/workspace/project.go)
    # and drops any other top-level key silently: this pool would never reach the program.
    stray = DEV_STACK + "gpu-platform:protect: true\n"

    exit_code, stderr = plan_in_own_project(tmp_path, stray.encode())

    assert (exit_code, stderr) == (
        2,
        "Pulumi.staging.yaml: 'gpu-platform:protect': not a key of a stack file, which Pulumi"
        " would ignore (it reads config, environment, secretsprovider, encryptedkey,"
        " encryptionsalt); a configuration key belongs under `config:`\n",
    )


def test_every_key_pulumi_reads_of_a_stack_file_is_accepted(project: Path) -> None:
    # The yaml tags of `ProjectStack` (pulumi v3.260.0 sdk/go/common/workspace/project.go):
    # secretsprovider, encryptedkey, encryptionsalt, config, environment (one name or a list of
    # Pulumi ESC environments).
    (project / "Pulumi.full.yaml").write_text(
        "secretsprovider: awskms://alias/pulumi-secrets?region=us-east-1\n"
        "encryptedkey: AQICAHh0ZXN0\n"
        "encryptionsalt: v1:c2FsdA==:v1:aXY=:Y2lwaGVy\n"
        "environment:\n  - ml/dev\n" + DEV_STACK
    )

    config = stack_config("full", Project.find(project))

    assert config == stack_config("dev", Project.find(ROOT))


def test_a_key_given_twice_in_a_mapping_is_refused_as_pulumi_refuses_it(tmp_path: Path) -> None:
    # gopkg.in/yaml.v3 v3.0.1 decode.go, `mapping`, which Pulumi reads stack files with
    # (sdk/go/common/encoding/marshal.go): "line %d: mapping key %#v already defined at line %d".
    twice = DEV_STACK.replace("      max: 3\n", "      max: 3\n      max: 300\n")

    exit_code, stderr = plan_in_own_project(tmp_path, twice.encode())

    assert (exit_code, stderr) == (
        2,
        'Pulumi.staging.yaml: line 15: mapping key "max" already defined at line 14: Pulumi'
        " refuses a key given twice in one mapping; keep one\n",
    )


def test_a_key_without_a_namespace_is_the_projects_as_pulumi_reads_it(tmp_path: Path) -> None:
    # sdk/go/common/workspace/loaders.go, `stackConfigNamespacedWithProject`: `monitoring` in
    # project ml-gpus is `ml-gpus:monitoring`, which the platform does not read.
    bare = DEV_STACK.replace("config:\n", "config:\n  monitoring: {installPrometheusStack: true}\n")

    exit_code, stderr = plan_in_own_project(tmp_path, bare.encode())

    assert (exit_code, stderr.splitlines()[1]) == (
        2,
        '  ml-gpus:monitoring: got {"installPrometheusStack": true}; expected the key'
        " gpu-platform:monitoring: the platform reads the gpu-platform namespace only, not the"
        " project's (ml-gpus); set it with `pulumi config set gpu-platform:monitoring ...`",
    )


def test_a_key_in_a_misspelt_namespace_is_reported(project: Path) -> None:
    config = yaml.safe_load(DEV_STACK)
    config["config"]["gpu-platfom:protect"] = True

    exit_code, output = plan(project, yaml.safe_dump(config))

    assert exit_code == 2
    assert "gpu-platfom:protect: got true" in output
    assert "looks misspelt" in output


def test_the_projects_own_namespace_is_not_taken_for_a_misspelling(project: Path) -> None:
    (project / "Pulumi.yaml").write_text(
        (project / "Pulumi.yaml").read_text().replace("name: gpu-platform", "name: gpu-platforms")
    )
    config = yaml.safe_load(DEV_STACK)
    config["config"]["gpu-platforms:owner"] = "ml-team"

    exit_code, output = plan(project, yaml.safe_dump(config))

    assert exit_code == 0, output


@pytest.mark.parametrize(
    ("project_file", "words"),
    [
        ("runtime: python\n", "has no project `name`"),
        ("name: ml\n", "project is missing a 'runtime' attribute"),
        ("name: ml\nruntime: nodejs\n", "runtime 'nodejs': the offline plan runs Python"),
        ("name: ml\nruntime: python\nmain: infra/\n", "the program"),
        ("- name\n", "must be a YAML mapping"),
    ],
    ids=["no name", "no runtime", "not python", "no program", "a list"],
)
def test_a_project_file_the_plan_cannot_run_exits_2(
    project: Path, project_file: str, words: str
) -> None:
    (project / "Pulumi.yaml").write_text(project_file)

    exit_code, output = plan(project, DEV_STACK)

    assert exit_code == 2
    assert words in output
