"""Keys meant for the platform that it would never read, through the console command in a project
of the user's own (`ml-gpus`): each is refused, exit 2, naming where it was set and where it
belongs, before the program registers anything.

Pulumi writes `pulumi config set monitoring ...` to the project's namespace (`ml-gpus:monitoring`),
and hands a program the keys of every namespace (pulumi/pulumi
sdk/go/common/workspace/loaders.go, `stackConfigNamespacedWithProject`).
"""

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_platform.config.near_misses import misdirected_key_problems
from tests.console import gpu_platform_here, own_project_in
from tests.repository import ROOT

Config = dict[str, Any]
EXIT_CONFIG_ERROR = 2


def planned_with(directory: Path, change: Callable[[Config], Any]) -> list[str]:
    """The report lines of `gpu-platform plan` on `dev`'s stack changed by `change`, in a project
    of the user's own; checks that it exited 2."""
    project = own_project_in(directory)
    stack = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    change(stack["config"])
    (project / "stacks" / "Pulumi.staging.yaml").write_text(yaml.safe_dump(stack))

    result: subprocess.CompletedProcess[str] = gpu_platform_here("plan", "staging", cwd=project)

    assert result.returncode == EXIT_CONFIG_ERROR, result.stdout + result.stderr
    assert result.stdout == ""
    return result.stderr.splitlines()


def set_elsewhere(config: Config) -> None:
    """Keys the platform never reads: one in the project's namespace, one in a namespace misspelt,
    under a name that says it is secret."""
    config["ml-gpus:monitoring"] = {"installPrometheusStack": True}
    config["gpu-platfrom:token"] = "hunter2"


@pytest.fixture(scope="module")
def misdirected(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    return planned_with(tmp_path_factory.mktemp("misdirected"), set_elsewhere)


def test_a_platform_key_in_the_projects_namespace_is_refused_naming_both(
    misdirected: list[str],
) -> None:
    assert (
        '  ml-gpus:monitoring: got {"installPrometheusStack": true}; expected the key'
        " gpu-platform:monitoring: the platform reads the gpu-platform namespace only, not the"
        " project's (ml-gpus); set it with `pulumi config set gpu-platform:monitoring ...`"
    ) in misdirected


def test_a_misspelt_namespace_is_refused_without_the_value_of_a_secret_looking_key(
    misdirected: list[str],
) -> None:
    assert (
        "  gpu-platfrom:token: got a value (not shown: the key's name says it is secret);"
        " expected a key in the `gpu-platform` namespace: this one looks misspelt, and Pulumi"
        " hands a key in a namespace no program reads to no one"
    ) in misdirected
    assert not any("hunter2" in line for line in misdirected)


def test_every_key_in_the_projects_namespace_is_refused_not_only_cloud(tmp_path: Path) -> None:
    def moved_to_the_project(config: Config) -> None:
        for key in [k for k in config if k.startswith("gpu-platform:")]:
            config[key.replace("gpu-platform:", "ml-gpus:")] = config.pop(key)

    report = planned_with(tmp_path, moved_to_the_project)

    assert [line.split(":", 2)[1] for line in report[1:]] == [
        "cloud",
        "cluster",
        "namespaces",
        "pools",
        "queues",
    ]
    assert report[0] == "Invalid stack configuration (5 problem(s)):"


def misspelt(config: Config) -> None:
    """Keys misspelt within the platform's namespace, and `cloud` left out."""
    del config["gpu-platform:cloud"]
    config["gpu-platform:monitring"] = {"installPrometheusStack": True}
    config["gpu-platform:pools"][0]["aws"]["amiReleaseVersio"] = "1.35.6-20260714"
    config["gpu-platform:pools"][0]["apiKey"] = "sk-live-1234"
    config["gpu-platform:operator"] = {
        "overides": {"driver": {"licensingConfig": {"password": "hunter2"}}}
    }


@pytest.fixture(scope="module")
def misspelt_report(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    return planned_with(tmp_path_factory.mktemp("misspelt"), misspelt)


def test_a_missing_cloud_says_which_keys_the_stack_does_set(misspelt_report: list[str]) -> None:
    assert (
        "  gpu-platform:cloud: got nothing (the key is required); expected aws or gcp (the stack"
        " sets gpu-platform:cluster, gpu-platform:monitring, gpu-platform:namespaces,"
        " gpu-platform:operator, gpu-platform:pools, gpu-platform:queues, but not"
        " gpu-platform:cloud)"
    ) in misspelt_report


def test_a_misspelt_top_level_key_gets_a_did_you_mean(misspelt_report: list[str]) -> None:
    assert (
        '  gpu-platform:monitring: got {"installPrometheusStack": true}; expected no such key;'
        " did you mean gpu-platform:monitoring?"
    ) in misspelt_report


def test_a_misspelt_nested_key_gets_a_did_you_mean(misspelt_report: list[str]) -> None:
    assert (
        '  gpu-platform:pools[0].aws.amiReleaseVersio: got "1.35.6-20260714"; expected no such'
        " key; did you mean gpu-platform:pools[0].aws.amiReleaseVersion?"
    ) in misspelt_report


def test_a_misspelt_key_whose_name_says_secret_has_its_value_hidden(
    misspelt_report: list[str],
) -> None:
    assert (
        "  gpu-platform:pools[0].apiKey: got a value (not shown: the key's name says it is"
        " secret); expected no such key (check its spelling against the config reference)"
    ) in misspelt_report


def test_a_password_under_a_misspelt_key_is_hidden(misspelt_report: list[str]) -> None:
    assert (
        '  gpu-platform:operator.overides: got {"driver": {"licensingConfig": {"password":'
        ' "(not shown)"}}}; expected no such key; did you mean gpu-platform:operator.overrides?'
    ) in misspelt_report
    assert not any("hunter2" in line or "sk-live" in line for line in misspelt_report)


def test_a_project_key_the_platforms_namespace_sets_too_is_left_to_the_program() -> None:
    keys = ["gpu-platform:cluster", "ml-gpus:cluster"]

    assert list(misdirected_key_problems(keys, "ml-gpus", value_of=lambda key: None)) == []
