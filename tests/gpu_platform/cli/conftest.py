"""The commands' tests: the pre-flight fixtures (tests/preflight_fixtures.py)."""

from tests.preflight_fixtures import (
    calls_the_preflight_policy_allows,
    chart_repository,
    own_autoscaler_stack,
    silent_endpoint,
)

__all__ = [
    "calls_the_preflight_policy_allows",
    "chart_repository",
    "own_autoscaler_stack",
    "silent_endpoint",
]
