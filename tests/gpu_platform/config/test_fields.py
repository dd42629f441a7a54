"""The config model's classes built in code: each field by its name, as strictly as the stack
file's loader reads them, a bad value a `ConfigError` naming the class and the field."""

from typing import Any

import pulumi
import pytest

from gpu_platform.config import (
    ClusterSpec,
    ConfigError,
    GpuPoolSpec,
    StackConfig,
    load_stack_config,
)

L4 = {"name": "l4", "instance_types": ["g6.xlarge"], "max": 2}


def problems(build: Any, **fields: Any) -> list[tuple[str, Any, str]]:
    with pytest.raises(ConfigError) as raised:
        build(**fields)
    return [(p.path, p.value, p.expected) for p in raised.value.problems]


def test_a_field_goes_by_its_name_or_its_stack_file_key() -> None:
    by_name = GpuPoolSpec(**L4, gpus_per_node=1)
    by_key = GpuPoolSpec(name="l4", instanceTypes=["g6.xlarge"], max=2, gpusPerNode=1)

    assert by_name == by_key
    assert by_name.gpus_per_node == 1
    assert by_name.model_fields_set == {"name", "instance_types", "max", "gpus_per_node"}


def test_a_bad_value_is_a_config_error_naming_the_field() -> None:
    assert problems(GpuPoolSpec, **{**L4, "max": True}) == [
        ("GpuPoolSpec.max", True, "a valid integer")
    ]


def test_every_problem_of_a_nested_model_is_named_by_its_path() -> None:
    assert problems(
        StackConfig,
        cloud="aws",
        cluster=ClusterSpec(name="ml", region="us-east-1"),
        pools=[{**L4, "max": "2"}],
        colud="aws",
    ) == [
        ("StackConfig.pools[0].max", "2", "a valid integer"),
        ("StackConfig.colud", "aws", "no such key; did you mean StackConfig.cloud?"),
    ]


def test_an_output_is_named_as_no_plain_value() -> None:
    ((path, value, expected),) = problems(
        ClusterSpec, name=pulumi.Output.from_input("ml"), region="us-east-1"
    )

    assert (path, value) == ("ClusterSpec.name", "<Output>")
    assert expected.startswith("a plain value: the settings decide which resources")


def test_the_stack_file_takes_keys_only() -> None:
    # Names are for code; a stack file keeps one spelling, the one the reference documents.
    with pytest.raises(ConfigError) as raised:
        load_stack_config(
            {
                "cloud": "aws",
                "cluster": {"name": "ml", "region": "us-east-1"},
                "pools": [{"name": "l4", "instance_types": ["g6.xlarge"], "max": 2}],
            }
        )

    assert (raised.value.problems[0].path, raised.value.problems[0].expected) == (
        "gpu-platform:pools[0].instance_types",
        "no such key; did you mean gpu-platform:pools[0].instanceTypes?",
    )
