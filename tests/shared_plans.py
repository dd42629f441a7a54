"""Plans made once per test process and shared: the program declares the same resources for the
same stack and config every time, and most tests only read a plan.

A plan is shared only between runs that would make the same one: the stack, its config, the
stand-in answers in place (a test that replaces one, `monkeypatch.setitem(stand_in.INVOKES,
...)`, gets a plan of its own) and the lock the plan reads pick it. A test that patches the
program any other way (a module's constant, `node_group.now`) plans with `run_program` itself.
Each caller gets a deep copy of its own, free to change.
"""

import copy
import json
import os
from collections.abc import Mapping
from typing import Any

from gpu_platform.cli.offline import Plan, run_program
from gpu_platform.cli.stack_files import stack_config
from gpu_platform.cli.stand_ins import aws as aws_stand_in
from gpu_platform.cli.stand_ins import gcp as gcp_stand_in
from gpu_platform.lock.lockfile import LOCK_PATH_VARIABLE
from tests.repository import PROJECT

_plans: dict[tuple[str, str, tuple[tuple[str, int], ...], str | None], Plan] = {}


def shared_plan(stack: str, config: Mapping[str, Any] | None = None) -> Plan:
    """`run_program(stack, config, project=PROJECT)`, run once per process for each stack and
    config (the stack file's own config without one), as a copy for the caller alone."""
    values = stack_config(stack, PROJECT) if config is None else config
    answers = tuple(
        (key, id(answer))
        for invokes in (aws_stand_in.INVOKES, gcp_stand_in.INVOKES)
        for key, answer in sorted(invokes.items())
    )
    key = (stack, json.dumps(values, sort_keys=True), answers, os.environ.get(LOCK_PATH_VARIABLE))
    if key not in _plans:
        _plans[key] = run_program(stack, config=values, project=PROJECT)
    return copy.deepcopy(_plans[key])
