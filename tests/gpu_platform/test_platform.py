"""GpuPlatform: the whole platform as one component, from stack config or from settings in code."""

import json
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from gpu_platform.cli.offline import Plan, run_program
from gpu_platform.cli.project import Project
from gpu_platform.config import ConfigError
from gpu_platform.platform import GpuPlatform, GpuPlatformArgs
from tests.conftest import Config
from tests.repository import PROJECT, STACKS
from tests.shared_plans import shared_plan

NAMESPACE = "gpu-platform:"

# A program that gives the platform its settings in code, not through stack config.
IN_CODE_PROGRAM = """\
import json
import pathlib

import pulumi

from gpu_platform.platform import GpuPlatform, GpuPlatformArgs

settings = json.loads((pathlib.Path(__file__).parent / "settings.json").read_text())
platform = GpuPlatform("gpu-platform", GpuPlatformArgs.from_settings(settings))
for name, value in platform.stack_outputs.items():
    pulumi.export(name, value)
"""


def in_code_project(directory: Path, settings: dict[str, Any]) -> Project:
    """A project named as this one, whose program builds the platform from `settings`."""
    (directory / "Pulumi.yaml").write_text(
        yaml.safe_dump({"name": PROJECT.name, "runtime": "python"})
    )
    (directory / "__main__.py").write_text(IN_CODE_PROGRAM)
    (directory / "settings.json").write_text(json.dumps(settings))
    return Project.find(directory)


def platform_settings(config: Config) -> dict[str, Any]:
    return {k.removeprefix(NAMESPACE): v for k, v in config.items() if k.startswith(NAMESPACE)}


def other_config(config: Config) -> Config:
    return {k: v for k, v in config.items() if not k.startswith(NAMESPACE)}


def declared(plan: Plan) -> list[tuple[str, Any]]:
    return sorted((r.urn, r.inputs) for r in plan.resources)


def test_the_platform_from_settings_in_code_declares_what_stack_config_declares(
    tmp_path: Path, dev_config: Config
) -> None:
    project = in_code_project(tmp_path, platform_settings(dev_config))

    in_code = run_program("dev", config=other_config(dev_config), project=project)
    from_config = run_program("dev", config=dev_config, project=PROJECT)

    assert declared(in_code) == declared(from_config)
    assert in_code.outputs == from_config.outputs


@pytest.fixture(scope="module", params=STACKS)
def stack_plan(request: pytest.FixtureRequest) -> Plan:
    return shared_plan(request.param)


def platform_of(plan: Plan) -> tuple[Any, list[Any]]:
    """The platform component and its direct children."""
    (platform,) = plan.of_type("gpu-platform:index:GpuPlatform")
    return platform, plan.children_of(platform)


def test_every_resource_is_a_descendant_of_the_platform(stack_plan: Plan) -> None:
    platform, _ = platform_of(stack_plan)
    urns = {r.urn: r for r in stack_plan.resources}

    def ancestors(urn: str) -> list[str | None]:
        parent = urns[urn].parent
        return [parent, *ancestors(parent)] if parent in urns else [parent]

    assert [
        r.urn
        for r in stack_plan.resources
        if r is not platform and platform.urn not in ancestors(r.urn)
    ] == []


def test_each_part_keeps_the_urn_it_had_at_the_stacks_root(stack_plan: Plan) -> None:
    # This project's stacks were created with the parts at the stack's root: without the alias
    # `pulumi up` would replace every one of them. Their descendants inherit it (pulumi
    # pkg/resource/deploy/step_generator.go, generateAliases: "multiply out any aliases our
    # parent had").
    _, children = platform_of(stack_plan)

    assert children
    assert [c.urn for c in children if c.aliases != ({"spec": {"noParent": True}},)] == []


def test_a_new_projects_platform_claims_no_root_resource(
    tmp_path: Path, dev_config: Config
) -> None:
    project = in_code_project(tmp_path, platform_settings(dev_config))

    plan = run_program("dev", config=other_config(dev_config), project=project)

    assert [r.urn for r in plan.resources if r.aliases] == []


def test_the_platform_registers_its_stack_outputs(
    monkeypatch: pytest.MonkeyPatch, dev_config: Config
) -> None:
    registered: list[dict[str, Any]] = []
    monkeypatch.setattr(GpuPlatform, "register_outputs", lambda self, o: registered.append(o))

    run_program("dev", config=dev_config, project=PROJECT)

    (outputs,) = registered
    assert sorted(outputs) == [
        "deployRoleTags",
        "gpuModels",
        "gpuOperatorNamespace",
        "gpuOperatorVersion",
        "gpuPools",
        "helmReleaseNamespaces",
        "kubeconfig",
        "nodeSubnets",
        "pools",
        "prometheusRuleNames",
    ]


def test_settings_in_code_are_refused_as_stack_config_is(dev_config: Config) -> None:
    settings = platform_settings(dev_config)
    settings["pools"][0]["max"] = -1

    with pytest.raises(ConfigError) as refused:
        GpuPlatformArgs.from_settings(settings)

    # What `pulumi up` prints as the message alone, without a traceback.
    assert isinstance(refused.value, pulumi.RunError)
    assert refused.value.report() == (
        "Invalid stack configuration (1 problem(s)):\n"
        "  gpu-platform:pools[0].max: got -1; expected greater than or equal to 1"
    )
