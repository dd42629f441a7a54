"""A value set with `pulumi config set --secret` stays secret wherever it flows.

Pulumi marks a whole config key secret when any part of its value is (`--path` secrets inside
structured config), and stores a resource input in clear text unless it is a secret output. So
every resource input and stack output that holds a value from a free-form map of the config
(operator chart overrides, node labels, monitoring labels) must be secret when that map's key
is, and config errors must not print it."""

import copy
import functools
import json
from collections.abc import Callable
from typing import Any

import pytest

from gpu_platform.offline.program import Plan, run_program
from gpu_platform.stack_files import SECRET_STAND_IN, stack_config
from tests.repository import PROJECT, STACKS
from tests.shared_plans import copy_of, kept

Config = dict[str, Any]
SECURE = {"secure": "v1:ciphertext-for-this-stack"}


def operator_override(config: Config) -> None:
    operator = config.setdefault("gpu-platform:operator", {})
    operator["overrides"] = {"driver": {"env": [{"name": "NGC_API_KEY", "value": SECURE}]}}


def node_label(config: Config) -> None:
    for pool in config["gpu-platform:pools"]:
        pool["labels"] = {**pool.get("labels", {}), "cost-centre": SECURE}


def monitoring_label(config: Config) -> None:
    monitoring = config.setdefault("gpu-platform:monitoring", {})
    labels = monitoring.get("serviceMonitorLabels", {"release": "kube-prometheus-stack"})
    monitoring["serviceMonitorLabels"] = {**labels, "tenant": SECURE}


FREE_FORM_MAPS: dict[str, Callable[[Config], None]] = {
    "operator.overrides": operator_override,
    "pools[].labels": node_label,
    "monitoring.serviceMonitorLabels": monitoring_label,
}


def holds_the_secret(value: Any) -> bool:
    return SECRET_STAND_IN in json.dumps(value)


def plan_with_secret(stack: str, put_secret: Callable[[Config], None]) -> Plan:
    """The stack planned with a secret in one free-form map: a copy for the caller alone of a
    plan made once per run, which the input test and the output test both read."""
    return copy_of(_planned_with_secret(stack, put_secret))


@functools.cache
def _planned_with_secret(stack: str, put_secret: Callable[[Config], None]) -> bytes:
    config = copy.deepcopy(stack_config(stack, PROJECT))
    put_secret(config)
    return kept(run_program(stack, config=config, project=PROJECT))


@pytest.mark.parametrize("where", FREE_FORM_MAPS.values(), ids=FREE_FORM_MAPS.keys())
@pytest.mark.parametrize("stack", STACKS)
def test_every_resource_input_holding_a_secret_is_secret(
    stack: str, where: Callable[[Config], None]
) -> None:
    plan = plan_with_secret(stack, where)

    holding = {
        (r.type, r.name, key)
        for r in plan.resources
        for key, value in r.inputs.items()
        if holds_the_secret(value)
    }
    in_clear = {(t, n, key) for t, n, key in holding if key not in _secret_inputs(plan, t, n)}
    assert holding, "the secret reached no resource: the test would prove nothing"
    assert in_clear == set()


@pytest.mark.parametrize("where", FREE_FORM_MAPS.values(), ids=FREE_FORM_MAPS.keys())
@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_output_holding_a_secret_is_secret(
    stack: str, where: Callable[[Config], None]
) -> None:
    plan = plan_with_secret(stack, where)

    in_clear = [
        name
        for name, value in plan.outputs.items()
        if holds_the_secret(value) and name not in plan.secret_outputs
    ]
    assert in_clear == []


def _secret_inputs(plan: Plan, type_: str, name: str) -> frozenset[str]:
    return plan.named(name, type_).secret_inputs


def test_a_config_error_in_a_secret_key_names_the_key_but_not_the_value() -> None:
    config = copy.deepcopy(stack_config("dev", PROJECT))
    config["gpu-platform:operator"] = {"timeoutSeconds": SECURE, "chartVersoin": SECURE}

    plan = run_program("dev", config=config, project=PROJECT, raise_errors=False)

    report = str(plan.error)
    assert "gpu-platform:operator.timeoutSeconds" in report
    assert "gpu-platform:operator.chartVersoin" in report
    assert "a value of a secret key (not shown)" in report
    assert SECRET_STAND_IN not in report


def test_the_plan_command_prints_no_secret_from_a_bad_secret_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from typer.testing import CliRunner

    from gpu_platform.cli.app import app
    from gpu_platform.offline import program as offline

    config = copy.deepcopy(stack_config("dev", PROJECT))
    config["gpu-platform:pools"][0]["labels"] = {"bad key!": SECURE}
    monkeypatch.setattr(offline, "stack_config", lambda stack, project=None: config)

    result = CliRunner().invoke(app, ["plan", "dev"])

    assert result.exit_code == 2
    assert "gpu-platform:pools" in result.output
    assert SECRET_STAND_IN not in result.output


def test_fit_names_a_secret_label_but_not_its_value(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import yaml
    from typer.testing import CliRunner

    from gpu_platform.cli.app import app
    from gpu_platform.offline import program as offline

    config = copy.deepcopy(stack_config("dev", PROJECT))
    node_label(config)
    monkeypatch.setattr(offline, "stack_config", lambda stack, project=None: config)
    pod = {
        "kind": "Pod",
        "metadata": {"name": "picky"},
        "spec": {
            "nodeSelector": {"cost-centre": "research"},
            "containers": [{"name": "main", "image": "cuda"}],
        },
    }
    (tmp_path / "pod.yaml").write_text(yaml.safe_dump(pod))

    result = CliRunner().invoke(
        app, ["fit", "dev", str(tmp_path / "pod.yaml")], env={"COLUMNS": "300"}
    )

    assert "its nodes have cost-centre=[secret]" in result.output
    assert SECRET_STAND_IN not in result.output


def test_a_rule_across_keys_does_not_name_a_secret_keys_values() -> None:
    config = copy.deepcopy(stack_config("dev", PROJECT))
    pool = config["gpu-platform:pools"][0]
    pool.update(name="team-x-h100-secretproj", min=5, labels={"cost-centre": SECURE})
    config["gpu-platform:namespaces"][0]["smokeTestPool"] = "no-such-pool"

    plan = run_program("dev", config=config, project=PROJECT, raise_errors=False)

    assert str(plan.error) == (
        "Invalid stack configuration (2 problem(s)):\n"
        "  gpu-platform:pools[0].min: got a value of a secret key (not shown);"
        " expected at most max ((not shown))\n"
        '  gpu-platform:namespaces[0].smokeTestPool: got "no-such-pool";'
        " expected one of the pools: ['(not shown)']"
    )
