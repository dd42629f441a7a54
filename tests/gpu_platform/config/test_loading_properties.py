"""Whatever a stack file puts under the platform's keys, the program answers with a config error
naming a `gpu-platform:` key, or plans: never another exception, never a resource registered
before the error. Generated: the dev stack with one key, at any depth the config reference
lists, set to a value of another type, an empty one, or a key of its own that does not exist."""

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpu_platform.config import StackConfig
from gpu_platform.offline.program import run_program
from gpu_platform.stack_files import stack_config
from tests.refusals import assert_refused_by_key
from tests.repository import PROJECT

DEV = stack_config("dev", PROJECT)
SCHEMA = StackConfig.model_json_schema(by_alias=True)
# Where each model's fields sit in a stack file, starting from the dev stack's own values.
MODEL_PATHS: dict[str, tuple[str | int, ...]] = {
    "StackConfig": (),
    "ClusterSpec": ("cluster",),
    "GpuPoolSpec": ("pools", 0),
    "TaintSpec": ("pools", 0, "taints", 0),
    "TimeSlicingSharing": ("pools", 0, "sharing"),
    "EksPoolOptions": ("pools", 0, "aws"),
    "GkePoolOptions": ("pools", 0, "gcp"),
    "OperatorSpec": ("operator",),
    "MonitoringSpec": ("monitoring",),
    "TenantNamespaceSpec": ("namespaces", 0),
    "ClusterAutoscalerSpec": ("autoscaler",),
}


def field_paths() -> list[tuple[str | int, ...]]:
    paths = []
    for model, prefix in MODEL_PATHS.items():
        schema = SCHEMA if model == "StackConfig" else SCHEMA["$defs"][model]
        paths += [(*prefix, field) for field in schema["properties"]]
    return paths


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**40), max_value=2**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=6,
)
ODD_VALUES = JSON_VALUES | st.sampled_from(["", [], {}, 0, -1, "[/red]", ":cloud:"])


def with_value(config: dict[str, Any], path: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    """`config` (fully qualified keys) with `value` at `path` under `gpu-platform:`, making the
    objects and lists on the way where the dev stack has none."""
    config = copy.deepcopy(config)
    head, *rest = path
    key = f"gpu-platform:{head}"
    if not rest:
        config[key] = value
        return config
    container = config.setdefault(key, [] if isinstance(rest[0], int) else {})
    for step, following in zip(rest, [*rest[1:], None], strict=True):
        if following is None:
            break
        if isinstance(container, list):
            while len(container) <= int(step):
                container.append({})
            container = container[int(step)]
        else:
            container = container.setdefault(step, [] if isinstance(following, int) else {})
    last = rest[-1]
    if isinstance(container, list):
        while len(container) <= int(last):
            container.append({})
        container[int(last)] = value
    else:
        container[last] = value
    return config


@st.composite
def broken_stacks(draw: st.DrawFn) -> dict[str, Any]:
    path = draw(st.sampled_from(field_paths()))
    if draw(st.booleans()):
        return with_value(DEV, path, draw(ODD_VALUES))
    # A key of its own, misspelt or made up, beside the real ones.
    return with_value(DEV, (*path[:-1], draw(st.text(min_size=1, max_size=12))), draw(ODD_VALUES))


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(broken_stacks())
def test_any_stack_either_plans_or_fails_with_a_config_error_naming_a_key(
    config: dict[str, Any],
) -> None:
    plan = run_program("dev", config=config, project=PROJECT, raise_errors=False)

    if plan.error is not None:
        assert_refused_by_key(plan)
