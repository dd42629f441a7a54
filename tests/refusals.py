"""How the program refuses a stack's config: with a config error naming `gpu-platform:` keys,
before it registers any resource."""

from gpu_platform.config import ConfigError
from gpu_platform.offline.program import Plan


def assert_refused_by_key(plan: Plan) -> None:
    """The failed plan's error is a config error naming only the platform's keys, raised before
    any resource was registered (never another exception, never half a stack)."""
    assert isinstance(plan.error, ConfigError), repr(plan.error)
    assert plan.resources == []
    assert all(p.path.startswith("gpu-platform:") for p in plan.error.problems)
