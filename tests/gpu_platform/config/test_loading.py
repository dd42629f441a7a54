"""The report of a bad stack config: every problem at once, each by its key path, the value found
and what is allowed in words."""

import copy
from typing import Any

import pytest

from gpu_platform.config import ConfigError, ConfigProblem, load_stack_config
from tests.gpu_platform.config.test_cluster_create import GKE_NEW
from tests.gpu_platform.config.test_stack import MINIMAL

Config = dict[str, Any]
POOLS = "gpu-platform:pools"


def pool(config: Config, index: int = 0) -> dict[str, Any]:
    return config[POOLS][index]


def test_sharing_without_a_mode_says_the_mode_is_required(
    dev_config: Config, failed_plan_for
) -> None:
    pool(dev_config).update(sharing={"replicas": 4})

    plan = failed_plan_for(dev_config)

    assert isinstance(plan.error, ConfigError)
    assert plan.error.report().splitlines()[1:] == [
        "  gpu-platform:pools[0].sharing.mode: got nothing (the key is required); expected one"
        " of 'exclusive', 'time-slicing', 'mps', 'mig'"
    ]


def test_every_problem_is_reported_at_once(dev_config: Config, failed_plan_for) -> None:
    pool(dev_config).update(max=0, capacity="preemptible")
    dev_config["gpu-platform:operator"] = {"chartVersion": "latest"}

    plan = failed_plan_for(dev_config)

    assert isinstance(plan.error, ConfigError)
    assert {p.path for p in plan.error.problems} == {
        "gpu-platform:pools[0].max",
        "gpu-platform:pools[0].capacity",
        "gpu-platform:operator.chartVersion",
    }


def test_report_names_the_value_found_and_what_is_allowed() -> None:
    error = ConfigError([ConfigProblem("gpu-platform:pools[1].max", 0, "at least 1")])

    assert (
        error.report().splitlines()[1] == "  gpu-platform:pools[1].max: got 0; expected at least 1"
    )


def test_pattern_errors_are_explained_in_words(dev_config: Config, failed_plan_for) -> None:
    pool(dev_config).update(name="T4")

    plan = failed_plan_for(dev_config)

    assert isinstance(plan.error, ConfigError)
    assert plan.error.problems[0].expected.startswith("lowercase letters, digits and '-'")


def test_missing_key_says_it_is_required(dev_config: Config, failed_plan_for) -> None:
    pool(dev_config).pop("max")

    plan = failed_plan_for(dev_config)

    assert "the key is required" in plan.error.report()  # type: ignore[union-attr]


def test_field_problems_and_rules_across_fields_come_in_one_report() -> None:
    # A bad chart version (a field's own rule) and a node image of the other cloud (a rule
    # across `cloud` and `cluster.nodeImage`): one round, not two.
    settings = copy.deepcopy(MINIMAL)
    settings["operator"] = {"chartVersion": "latest"}
    settings["cluster"]["nodeImage"] = "cos"

    with pytest.raises(ConfigError) as raised:
        load_stack_config(settings)

    assert [p.path for p in raised.value.problems] == [
        "gpu-platform:operator.chartVersion",
        "gpu-platform:cluster.nodeImage",
    ]


@pytest.mark.parametrize(
    ("key", "value"),
    [("max", True), ("max", 2.0), ("max", "two"), ("diskSizeGib", False)],
)
def test_a_number_is_given_as_a_whole_number(key: str, value: Any) -> None:
    # Pulumi hands config values over as JSON; pydantic's lax mode would read `true` as 1.
    settings = copy.deepcopy(MINIMAL)
    settings["pools"][0][key] = value

    with pytest.raises(ConfigError) as raised:
        load_stack_config(settings)

    assert [(p.path, p.value, p.expected) for p in raised.value.problems] == [
        (f"gpu-platform:pools[0].{key}", value, "a valid integer")
    ]


def test_a_whole_number_set_as_text_is_read_as_the_number() -> None:
    # A nested `--secret` value reaches the program as a string: pulumi's
    # package sdk/go/common/resource/config (v3.272.0) types only what `--path` sets plainly.
    settings = copy.deepcopy(MINIMAL)
    settings["pools"][0]["max"] = "2"

    assert load_stack_config(settings).pools[0].max == 2


def test_a_fraction_set_with_path_is_read_as_the_number() -> None:
    # `pulumi config set --path ...flowLogSampling 0.25` stores "0.25": `adjustObjectValue`
    # (pulumi v3.272.0, package sdk/go/common/resource/config) types booleans and integers only.
    settings = copy.deepcopy(GKE_NEW)
    settings["cluster"]["create"]["gcp"] = {"network": {"flowLogSampling": "0.25"}}

    create = load_stack_config(settings).cluster.create

    assert create is not None and create.gcp.network is not None
    assert create.gcp.network.flow_log_sampling == 0.25
