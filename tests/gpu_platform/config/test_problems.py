"""The error report never shows the value of a key whose name says it is secret, at any depth of
the value a problem is about: Pulumi's own pattern for such names (pulumi/pulumi
pkg/cmd/pulumi/config/config.go, `keyPattern`: passwd, pass, password, pwd, secret, token), and
names of key material."""

from collections.abc import Callable
from typing import Any

import pytest

from gpu_platform.config import ConfigError, ConfigProblem
from gpu_platform.offline.program import Plan

Config = dict[str, Any]


def test_a_password_under_a_misspelt_override_component_is_not_shown(
    dev_config: Config, failed_plan_for: Callable[[Config], Plan]
) -> None:
    dev_config["gpu-platform:operator"] = {
        "overrides": {"driverr": {"licensingConfig": {"password": "hunter2", "nlsEnabled": True}}}
    }

    plan = failed_plan_for(dev_config)

    assert isinstance(plan.error, ConfigError)
    assert plan.error.report().splitlines()[1:] == [
        '  gpu-platform:operator.overrides.driverr: got {"licensingConfig": {"password":'
        ' "(not shown)", "nlsEnabled": true}}; expected a top-level component of the'
        " gpu-operator v26.7.0 chart (did you mean driver?)"
    ]
    assert plan.resources == []


@pytest.mark.parametrize(
    "name", ["password", "dbPasswd", "apiToken", "clientSecret", "privateKey", "ssh_key"]
)
def test_a_key_whose_name_says_secret_has_no_value_in_the_problem(name: str) -> None:
    error = ConfigError([ConfigProblem(f"gpu-platform:pools[0].{name}", "hunter2", "no such key")])

    assert error.problems[0].value != "hunter2"
    assert error.report().splitlines()[1] == (
        f"  gpu-platform:pools[0].{name}: got a value (not shown: the key's name says it is"
        " secret); expected no such key"
    )


@pytest.mark.parametrize("name", ["key", "maxSurge", "nodeRoleArn", "taints"])
def test_a_key_whose_name_says_nothing_of_secrets_has_its_value_shown(name: str) -> None:
    error = ConfigError([ConfigProblem(f"gpu-platform:pools[0].{name}", "x1", "no such key")])

    assert error.report().splitlines()[1] == (
        f'  gpu-platform:pools[0].{name}: got "x1"; expected no such key'
    )
