"""The offline plan command, as a user runs it: `python -m gpu_platform_cli plan <stack>`."""

import json

import pytest
from typer.testing import CliRunner

from gpu_platform_cli import offline
from gpu_platform_cli.app import app
from gpu_platform_cli.plan import EXIT_CONFIG_ERROR, plan_as_json
from tests.repository import POLICY_PACK


@pytest.fixture
def invoke():
    runner = CliRunner()

    def run(*args: str):
        # Wide enough that the tree does not wrap resource names.
        return runner.invoke(app, ["plan", *args], env={"COLUMNS": "300"})

    return run


@pytest.fixture
def stack_file_says(monkeypatch):
    """Make the dev stack file read as the given config."""

    def replace(config):
        monkeypatch.setattr(offline, "stack_config", lambda stack, project=None: config)

    return replace


def test_plan_prints_every_resource_under_the_stack(invoke, dev_plan) -> None:
    result = invoke("dev")

    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"stack dev: {len(dev_plan.resources)} resources")
    for resource in dev_plan.resources:
        assert f"{resource.type} {resource.name}" in result.output


def test_plan_as_json_lists_resources_with_their_inputs(invoke, dev_plan) -> None:
    result = invoke("dev", "--json")

    document = json.loads(result.output)
    assert sorted(r["urn"] for r in document["resources"]) == sorted(
        r.urn for r in dev_plan.resources
    )
    assert all("inputs" in r for r in document["resources"])


def test_plan_shows_the_policy_packs_verdicts(invoke) -> None:
    result = invoke("dev")

    assert f"Policy pack ({POLICY_PACK}): 0 mandatory" in result.output


def test_plan_shows_secret_outputs_as_secret(invoke) -> None:
    assert "kubeconfig: [secret]" in invoke("dev").output


def test_plan_masks_secret_inputs(invoke) -> None:
    output = invoke("dev").output

    assert "kubeconfig = [secret]" in output and "certificate-authority-data" not in output


def test_plan_as_json_masks_secret_inputs(invoke) -> None:
    document = json.loads(invoke("dev", "--json").output)

    (provider,) = [r for r in document["resources"] if r["type"] == "pulumi:providers:kubernetes"]
    assert provider["inputs"]["kubeconfig"] == "[secret]"


def test_plan_as_json_hides_secret_outputs() -> None:
    plan = offline.Plan(
        stack="dev",
        outputs={"kubeconfig": "apiVersion: v1"},
        secret_outputs=frozenset({"kubeconfig"}),
    )

    assert plan_as_json(plan)["outputs"] == {"kubeconfig": "[secret]"}


def test_config_error_exits_2_with_the_problems(invoke, dev_config, stack_file_says) -> None:
    dev_config["gpu-platform:pools"][0]["max"] = 0
    stack_file_says(dev_config)

    result = invoke("dev")

    assert result.exit_code == EXIT_CONFIG_ERROR
    assert "gpu-platform:pools[0].max: got 0" in result.output


def test_unknown_stack_exits_2_listing_the_stack_files(invoke) -> None:
    result = invoke("nope")

    assert result.exit_code == EXIT_CONFIG_ERROR
    assert "Pulumi.nope.yaml" in result.output
    assert "the stacks there: dev, gke-dev, prod" in result.output


def test_config_text_is_printed_as_written_never_as_markup_or_emoji(
    invoke, stack_file_says, dev_config
) -> None:
    dev_config["gpu-platform:cloud"] = "azure"
    dev_config["gpu-platform:pools"][0]["name"] = "[/red]"
    stack_file_says(dev_config)

    result = invoke("dev")

    assert result.exit_code == EXIT_CONFIG_ERROR
    assert "gpu-platform:cloud: got" in result.output
    assert '"[/red]"' in result.output


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--policy-config", "/"], "no policy config file /"),
        (["--policy-pack", "/nonexistent-pack"], "no policy pack at /nonexistent-pack"),
    ],
    ids=["config is a folder", "no such pack"],
)
def test_a_policy_option_naming_the_wrong_thing_exits_2(invoke, args, words) -> None:
    result = invoke("dev", *args)

    assert result.exit_code == EXIT_CONFIG_ERROR
    assert words in result.output
