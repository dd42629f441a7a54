"""The component package: its provider started as the engine starts it, its schema read over
gRPC, its Construct run under the mock monitor, and the YAML example checked against the schema.

The provider host is the Python SDK's (pulumi v3.272.0 `sdk/python/lib/pulumi/provider/
experimental/`): `host.py` serves it, `analyzer.py` infers the schema from annotations and the
docstrings under them, `component.py` maps the schema's names to Python's in Construct.
"""

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml
from pulumi.runtime.proto import provider_pb2, provider_pb2_grpc
from pulumi.runtime.rpc import _special_secret_sig as SECRET_SIG
from pulumi.runtime.rpc import _special_sig_key as SECRET_SIG_KEY
from pydantic import BaseModel

from gpu_platform import config as config_model
from gpu_platform.offline.program import run_program
from gpu_platform.package import inputs_generator
from gpu_platform.project import Project
from tests.gpu_platform.test_platform import declared, in_code_project
from tests.repository import ROOT

TOKEN = "gpu-platform:index:GpuPlatform"
# The facts of a cluster the program creates, by input and type.
FACTS = {"eksClusterFacts": "EksClusterFactsArgs", "gkeClusterFacts": "GkeClusterFactsArgs"}
YAML_EXAMPLE = ROOT / "examples" / "yaml" / "Pulumi.yaml"
DOCS = ROOT / "docs" / "component-package.md"
# What `GpuPlatform` sets and registers (gpu_platform/platform.py), by the schema's names.
OUTPUTS = {
    "kubeconfig",
    "gpuOperatorVersion",
    "gpuOperatorNamespace",
    "prometheusRuleNames",
    "pools",
    "gpuModels",
    "gpuPools",
    "idleBilling",
    "stackOutputs",
}


# What pulumi's `PluginProject` reads of a PulumiPlugin.yaml (pulumi v3.260.0
# sdk/go/common/workspace/project.go): `LoadPluginProject` (loaders.go) unmarshals it without
# refusing other keys, so a key outside these (`main`) is ignored silently.
PLUGIN_PROJECT_KEYS = {"runtime", "packages", "requiredPulumiVersion", "template"}


def plugin_directory() -> Path:
    """The repository's one directory with a PulumiPlugin.yaml: what `pulumi package add` is
    given, and where the engine starts the plugin (pulumi v3.260.0
    sdk/go/common/resource/plugin/plugin.go, `execPlugin`: the program info's root and program
    directory are both that directory)."""
    tracked = subprocess.run(
        ["git", "ls-files", "*PulumiPlugin.yaml"], cwd=ROOT, capture_output=True, text=True
    ).stdout.split()
    (manifest,) = tracked
    return (ROOT / manifest).parent


def test_the_plugin_manifest_is_what_pulumi_reads() -> None:
    manifest = yaml.safe_load((plugin_directory() / "PulumiPlugin.yaml").read_text())

    assert set(manifest) <= PLUGIN_PROJECT_KEYS
    assert manifest["runtime"] == {"name": "python", "options": {"toolchain": "uv"}}


@pytest.fixture(scope="module")
def schema() -> Iterator[dict[str, Any]]:
    """The schema, from the provider run as Pulumi's Python language host runs a plugin with a
    `__main__.py` in its directory: `python <plugin directory> <engine address>` (pulumi
    v3.260.0 sdk/python/cmd/pulumi-language-python/main.go, `RunPlugin`); it prints the port it
    serves on (pulumi v3.272.0 `sdk/python/lib/pulumi/provider/server.py`, `main`)."""
    assert (plugin_directory() / "__main__.py").is_file()
    provider = subprocess.Popen(
        [sys.executable, str(plugin_directory()), "127.0.0.1:1"],
        stdout=subprocess.PIPE,
        cwd=ROOT,
    )
    try:
        assert provider.stdout is not None
        port = int(provider.stdout.readline())
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = provider_pb2_grpc.ResourceProviderStub(channel)
            response = stub.GetSchema(provider_pb2.GetSchemaRequest(version=0), timeout=60)
        yield json.loads(response.schema)
    finally:
        provider.terminate()
        provider.wait(timeout=30)


def test_the_inputs_module_is_generated_from_the_config_model() -> None:
    assert inputs_generator.INPUTS_MODULE.read_text() == inputs_generator.generated_source()


def test_the_schema_names_the_component_by_the_token_it_registers(schema: dict[str, Any]) -> None:
    assert schema["name"] == "gpu-platform"
    assert list(schema["resources"]) == [TOKEN]
    assert schema["resources"][TOKEN]["isComponent"] is True


def test_the_inputs_are_the_stack_keys_with_their_descriptions(schema: dict[str, Any]) -> None:
    resource = schema["resources"][TOKEN]
    inputs = resource["inputProperties"]
    assert set(inputs) == {*_keys(config_model.StackConfig), *FACTS, "partNamesUnderIt"}
    assert set(resource["requiredInputs"]) == {"cloud", "cluster", "pools"}
    for name, field in config_model.StackConfig.model_fields.items():
        assert inputs[field.alias or name].get("description") == field.description, name
    # Settings decide which resources exist before any does: plain values, not Inputs.
    assert all(prop.get("plain") for prop in inputs.values())


def test_a_clusters_facts_are_inputs_where_they_only_flow_into_properties(
    schema: dict[str, Any],
) -> None:
    inputs = schema["resources"][TOKEN]["inputProperties"]
    not_plain = {}
    for name, type_ in FACTS.items():
        assert inputs[name]["$ref"] == f"#/types/gpu-platform:index:{type_}"
        properties = schema["types"][f"gpu-platform:index:{type_}"]["properties"]
        not_plain[name] = {key for key, prop in properties.items() if not prop.get("plain")}

    assert not_plain == {
        "eksClusterFacts": {"name", "endpoint", "certificateAuthority", "securityGroupId", "vpcId"},
        "gkeClusterFacts": {"name", "endpoint", "caCertificate"},
    }


def test_each_model_of_the_config_is_a_type_with_its_fields(schema: dict[str, Any]) -> None:
    types = schema["types"]
    sharing = "gpu-platform:index:GpuPoolSpecSharingArgs"
    checked = set()
    for token, type_ in types.items():
        if token == sharing or token.split(":")[-1] in FACTS.values():
            continue
        model = getattr(config_model, token.split(":")[-1].removesuffix("Args"))
        assert set(type_["properties"]) == set(_keys(model)), token
        assert set(type_.get("required", [])) == {
            field.alias or name for name, field in model.model_fields.items() if field.is_required()
        }, token
        for name, field in model.model_fields.items():
            assert type_["properties"][field.alias or name].get("description") == field.description
        checked.add(model)
    # Every model the stack's config is built from, but the four ways to share a GPU; Kueue's
    # `queues` and a tenant's `queue` among them, and an Auto Mode pool's `driftWindow`.
    assert len(checked) == 26
    assert set(types[sharing]["properties"]) == {"mode", "replicas", "strategy", "profile"}
    assert types[sharing]["required"] == ["mode"]


def test_the_schema_types_follow_the_models_fields(schema: dict[str, Any]) -> None:
    pool = schema["types"]["gpu-platform:index:GpuPoolSpecArgs"]["properties"]
    assert pool["name"]["type"] == "string"
    assert pool["max"]["type"] == "integer"
    assert pool["instanceTypes"]["items"]["type"] == "string"
    assert pool["labels"]["additionalProperties"]["type"] == "string"
    assert pool["sharing"]["$ref"] == "#/types/gpu-platform:index:GpuPoolSpecSharingArgs"
    assert pool["aws"]["$ref"] == "#/types/gpu-platform:index:EksPoolOptionsArgs"
    eks = schema["types"]["gpu-platform:index:EksPoolOptionsArgs"]["properties"]
    # A number of minutes or `never`: the host takes no union, so any value.
    assert eks["consolidateAfterMinutes"]["$ref"] == "pulumi.json#/Any"


def test_the_outputs_are_what_the_component_registers(schema: dict[str, Any]) -> None:
    resource = schema["resources"][TOKEN]
    assert set(resource["properties"]) == OUTPUTS
    assert resource["properties"]["gpuModels"]["additionalProperties"]["$ref"] == (
        "pulumi.json#/Any"
    )
    assert resource["properties"]["kubeconfig"]["type"] == "string"
    assert "kubeconfig" not in resource.get("required", [])


def test_the_yaml_example_fits_the_schema(schema: dict[str, Any]) -> None:
    program = yaml.safe_load(YAML_EXAMPLE.read_text())
    (resource,) = program["resources"].values()
    assert resource["type"] == TOKEN
    component = schema["resources"][TOKEN]
    assert (
        list(
            _misfits(
                schema,
                component["inputProperties"],
                component["requiredInputs"],
                resource["properties"],
                "",
            )
        )
        == []
    )
    for output in program["outputs"].values():
        assert output.removeprefix("${platform.").removesuffix("}") in component["properties"]


def test_the_documented_typescript_program_fits_the_schema(schema: dict[str, Any]) -> None:
    (program,) = re.findall(r"```ts\n(.*?)```", DOCS.read_text(), re.DOTALL)
    call = program.split('new gpuPlatform.GpuPlatform("gpu-platform", ', 1)[1]
    args = call.split("\n});")[0] + "}"
    # A TypeScript object literal of plain values is YAML's flow style, but for trailing commas.
    properties = yaml.safe_load(re.sub(r",(\s*[}\]])", r"\1", args))
    component = schema["resources"][TOKEN]
    misfits = _misfits(
        schema, component["inputProperties"], component["requiredInputs"], properties, ""
    )
    assert list(misfits) == []
    for output in re.findall(r"platform\.(\w+);", program):
        assert output in component["properties"]


def test_construct_registers_what_the_python_program_does(tmp_path: Path) -> None:
    """Construct, as the provider's server calls it, under the mock monitor, for the YAML
    example's properties, against the Python program given the same settings."""
    (resource,) = yaml.safe_load(YAML_EXAMPLE.read_text())["resources"].values()
    settings = resource["properties"]

    constructed = run_program(
        "dev", config={}, project=_construct_project(tmp_path / "c", settings)
    )
    (tmp_path / "p").mkdir()
    in_code = run_program("dev", config={}, project=in_code_project(tmp_path / "p", settings))

    assert declared(constructed) == declared(in_code)
    assert any(r.type == "aws:eks/nodeGroup:NodeGroup" for r in constructed.resources)
    assert set(constructed.outputs) == OUTPUTS
    assert constructed.outputs["stackOutputs"] == in_code.outputs


def test_construct_uses_the_providers_the_program_gives(tmp_path: Path) -> None:
    (resource,) = yaml.safe_load(YAML_EXAMPLE.read_text())["resources"].values()
    project = _construct_project(tmp_path, resource["properties"])
    (tmp_path / "own-aws").touch()

    plan = run_program("dev", config={}, project=project)

    own = plan.named("own-aws", "pulumi:providers:aws")
    (node_group,) = plan.of_type("aws:eks/nodeGroup:NodeGroup")
    assert node_group.provider is not None and node_group.provider.startswith(own.urn)
    assert {i.provider for i in plan.invokes if i.token.startswith("aws:")} == {
        f"{own.urn}::{own.id}"
    }


def test_construct_takes_a_clusters_facts_in_place_of_its_lookup(tmp_path: Path) -> None:
    (resource,) = yaml.safe_load(YAML_EXAMPLE.read_text())["resources"].values()
    settings = resource["properties"]
    settings["eksClusterFacts"] = {
        "name": settings["cluster"]["name"],
        "endpoint": "https://example.invalid",
        "certificateAuthority": "Q0E=",
        "securityGroupId": "sg-0a1b2c3d4e5f60001",
        "vpcId": "vpc-0a1b2c3d4e5f60001",
        "kubernetesVersion": "1.35",
        "nodeSubnets": {"subnet-0a1b2c3d4e5f60017": "us-east-1a"},
    }

    plan = run_program("dev", config={}, project=_construct_project(tmp_path, settings))

    assert [i.token for i in plan.invokes if i.token == "aws:eks/getCluster:getCluster"] == []
    (node_group,) = plan.of_type("aws:eks/nodeGroup:NodeGroup")
    assert node_group.inputs["subnetIds"] == ["subnet-0a1b2c3d4e5f60017"]


def test_construct_refuses_a_secret_setting_by_its_key(tmp_path: Path) -> None:
    """The server wraps a secret input in a secret Output, which no setting may be."""
    (resource,) = yaml.safe_load(YAML_EXAMPLE.read_text())["resources"].values()
    settings = resource["properties"]
    settings["cloud"] = {SECRET_SIG_KEY: SECRET_SIG, "value": "aws"}

    plan = run_program(
        "dev", config={}, project=_construct_project(tmp_path, settings), raise_errors=False
    )

    assert "gpu-platform:cloud" in str(plan.error)
    assert plan.resources == []


def test_construct_reports_every_bad_setting_by_its_key(tmp_path: Path) -> None:
    """A fraction for an integer reaches the component as it was sent, a float: the host's
    `int()` of it is overwritten (`component.py` `map_input_properties`, no `continue` after
    the conversion), and the loader refuses it with everything else wrong."""
    (resource,) = yaml.safe_load(YAML_EXAMPLE.read_text())["resources"].values()
    settings = resource["properties"]
    settings["pools"][0]["gpusPerNode"] = 1.5
    settings["pools"][0]["sharing"]["replicas"] = 100

    plan = run_program(
        "dev", config={}, project=_construct_project(tmp_path, settings), raise_errors=False
    )

    message = str(plan.error)
    assert "gpu-platform:pools[0].gpusPerNode: got 1.5" in message
    assert "gpu-platform:pools[0].sharing.replicas: got 100" in message
    assert plan.resources == []


# The engine's Construct as the provider's server makes it (pulumi v3.272.0
# `sdk/python/lib/pulumi/provider/server.py`, `_construct`): the request's inputs deserialized,
# a secret one wrapped in a secret Output, then `ComponentProvider.construct`, the providers
# the program gives in its options handed over as a map by package (`_construct_options`).
CONSTRUCT_PROGRAM = """\
import json
import pathlib

import pulumi
import pulumi_aws as aws
from google.protobuf import struct_pb2
from pulumi.provider.experimental.component import ComponentProvider
from pulumi.provider.server import ProviderServicer
from pulumi.runtime.sync_await import _sync_await

from gpu_platform.package.component import GpuPlatform

here = pathlib.Path(__file__).parent
request = struct_pb2.Struct()
request.update(json.loads((here / "settings.json").read_text()))
own = (here / "own-aws").exists()
providers = {"aws": aws.Provider("own-aws", region="us-east-1")} if own else {}
result = ComponentProvider([GpuPlatform], "gpu-platform").construct(
    "gpu-platform",
    "gpu-platform:index:GpuPlatform",
    _sync_await(ProviderServicer._construct_inputs(request, {})),
    pulumi.ResourceOptions(providers=providers),
)
for name, value in result.state.items():
    pulumi.export(name, value)
"""


def _construct_project(directory: Path, settings: dict[str, Any]) -> Project:
    directory.mkdir(exist_ok=True)
    in_code_project(directory, settings)
    (directory / "__main__.py").write_text(CONSTRUCT_PROGRAM)
    return Project.find(directory)


def _keys(model: type[BaseModel]) -> list[str]:
    return [field.alias or name for name, field in model.model_fields.items()]


_YAML_TYPES: dict[str, Any] = {
    "string": str,
    "boolean": bool,
    "integer": int,
    "number": int | float,
    "array": list,
    "object": dict,
}


def _misfits(
    schema: dict[str, Any],
    properties: dict[str, Any],
    required: list[str],
    value: dict[str, Any],
    path: str,
) -> Iterator[str]:
    """Where `value` does not fit an object type of the schema: unknown or missing keys, values
    of another type."""
    yield from (f"{path}{key}: missing" for key in required if key not in value)
    for key, item in value.items():
        if key not in properties:
            yield f"{path}{key}: no such property"
        else:
            yield from _misfit(schema, properties[key], item, f"{path}{key}")


def _misfit(schema: dict[str, Any], prop: dict[str, Any], value: Any, path: str) -> Iterator[str]:
    ref = prop.get("$ref")
    if ref == "pulumi.json#/Any":
        return
    if ref is not None:
        type_ = schema["types"][ref.removeprefix("#/types/")]
        if not isinstance(value, dict):
            yield f"{path}: not an object"
            return
        yield from _misfits(
            schema, type_["properties"], type_.get("required", []), value, f"{path}."
        )
        return
    if not isinstance(value, _YAML_TYPES[prop["type"]]) or (
        isinstance(value, bool) and prop["type"] != "boolean"
    ):
        yield f"{path}: {value!r} is not a {prop['type']}"
    elif prop["type"] == "array":
        for index, item in enumerate(value):
            yield from _misfit(schema, prop["items"], item, f"{path}[{index}]")
    elif prop["type"] == "object":
        for key, item in value.items():
            yield from _misfit(schema, prop["additionalProperties"], item, f"{path}.{key}")
