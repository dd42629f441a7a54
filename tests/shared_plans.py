"""Plans made once per test process and shared: the program declares the same resources for the
same stack and config every time, and most tests only read a plan.

A plan is shared only between runs that would make the same one: the stack, its config, the
stand-ins in place (a test that replaces an answer, `monkeypatch.setitem(stand_in.INVOKES,
...)`, or lists live node groups gets a plan of its own) and the lock the plan reads pick it.
A test that patches the program any other way (a module's constant, `node_group.now`) plans
with `run_program` itself.
Each caller gets a copy of its own, free to change: plans are kept pickled, and each copy is
unpickled, in a tenth of the time `copy.deepcopy` takes over a plan's nested inputs.
"""

import json
import os
import pickle
from collections.abc import Callable, Mapping
from typing import Any

from gpu_platform.lock.lockfile import LOCK_PATH_VARIABLE
from gpu_platform.offline.program import Plan, run_program
from gpu_platform.offline.stand_ins import aws as aws_stand_in
from gpu_platform.offline.stand_ins import engine as engine_stand_in
from gpu_platform.offline.stand_ins import gcp as gcp_stand_in
from gpu_platform.stack_files import stack_config
from tests.repository import PROJECT

_STAND_INS = (aws_stand_in, gcp_stand_in, engine_stand_in)

Answers = tuple[tuple[str, Callable[..., Any]], ...]
_plans: dict[tuple[str, str, Answers, str, str | None], bytes] = {}


def kept(plan: Plan) -> bytes:
    """`plan` as it is now, for `copy_of`."""
    return pickle.dumps(plan, protocol=pickle.HIGHEST_PROTOCOL)


def copy_of(plan: bytes) -> Plan:
    """A copy of its own of a plan `kept`."""
    copied = pickle.loads(plan)
    assert isinstance(copied, Plan)
    return copied


def shared_plan(stack: str, config: Mapping[str, Any] | None = None) -> Plan:
    """`run_program(stack, config, project=PROJECT)`, run once per process for each stack and
    config (the stack file's own config without one), as a copy for the caller alone."""
    values = stack_config(stack, PROJECT) if config is None else config
    # The answers themselves, not their ids: the key keeps them alive, so that an answer a test
    # put in place and dropped cannot pass for a later test's made at the same address.
    answers = tuple(
        (key, answer)
        for module in _STAND_INS
        for table in (module.INVOKES, module.OUTPUTS)
        for key, answer in sorted(table.items())
    )
    live = json.dumps(aws_stand_in.LIVE_NODE_GROUPS, sort_keys=True)
    lock = os.environ.get(LOCK_PATH_VARIABLE)
    key = (stack, json.dumps(values, sort_keys=True), answers, live, lock)
    if key not in _plans:
        _plans[key] = kept(run_program(stack, config=values, project=PROJECT))
    return copy_of(_plans[key])
