"""The recording runner: the real program, re-run per call, with everything it declared."""

import json

import pulumi.runtime.config as runtime_config

from gpu_platform.offline.program import run_program
from gpu_platform.stack_files import SECRET_STAND_IN


def test_each_run_starts_from_an_empty_stack(dev_config) -> None:
    first = run_program("dev", config=dev_config)
    second = run_program("dev", config=dev_config)

    assert sorted(r.urn for r in second.resources) == sorted(r.urn for r in first.resources)


def test_resources_record_their_parent(dev_plan) -> None:
    operator = dev_plan.named("gpu-operator", "gpu-platform:kubernetes:GpuOperator")

    assert operator.parent == (
        "urn:pulumi:dev::gpu-platform::pulumi:pulumi:Stack$gpu-platform:index:GpuPlatform::gpu-platform"
    )


def test_resources_record_their_inputs_by_engine_name(dev_plan) -> None:
    provider = dev_plan.of_type("pulumi:providers:kubernetes")[0]

    # Provider configuration reaches the engine as strings, as it does in a real deployment.
    assert provider.inputs["enableServerSideApply"] == "true"


def test_program_errors_are_kept_with_what_was_registered(dev_config) -> None:
    dev_config["gpu-platform:cloud"] = "azure"

    plan = run_program("dev", config=dev_config, raise_errors=False)

    assert plan.error is not None and plan.resources == []


def test_secure_stack_values_become_secret_stand_ins(dev_config) -> None:
    dev_config["aws:secretKey"] = {"secure": "v1:encrypted-for-another-stack"}

    run_program("dev", config=dev_config)

    assert runtime_config.get_config("aws:secretKey") == SECRET_STAND_IN
    assert runtime_config.is_config_secret("aws:secretKey")


def test_a_secure_value_inside_structured_config_makes_the_whole_key_secret(dev_config) -> None:
    dev_config["gpu-platform:operator"] = {
        "overrides": {"driver": {"env": [{"name": "NGC_API_KEY", "value": {"secure": "v1:x"}}]}}
    }

    run_program("dev", config=dev_config)

    assert runtime_config.is_config_secret("gpu-platform:operator")
    assert json.loads(runtime_config.get_config("gpu-platform:operator")) == {
        "overrides": {"driver": {"env": [{"name": "NGC_API_KEY", "value": SECRET_STAND_IN}]}}
    }
    assert not runtime_config.is_config_secret("gpu-platform:pools")


def test_resources_record_the_outputs_their_provider_computes(dev_plan) -> None:
    group = next(r for r in dev_plan.resources if r.type == "aws:eks/nodeGroup:NodeGroup")

    assert group.computed_outputs["arn"].startswith("arn:aws:eks:")
    assert group.computed_outputs["status"] == "ACTIVE"
    assert not set(group.computed_outputs) & {"clusterName", "amiType", "scalingConfig"}
