"""The policy pack, started once per test session exactly as the engine starts it (the
`policy_pack` fixture of tests/conftest.py).

Every policy test goes through the analyzer protocol: `analyze(*resources, config=...)`
configures the pack (levels and parameters reconciled as the engine does, with the levels of
the Namespaces among the resources listed as a stack's policy config lists them), then
remediates and analyzes each resource and analyzes the stack, and returns the verdicts.
"""

from collections.abc import Callable, Mapping
from typing import Any

import pytest

from gpu_platform.offline.analyzer import PolicyPack, Verdict
from gpu_platform.offline.namespace_levels import with_namespace_levels
from gpu_platform.offline.program import PlannedResource
from tests.gpu_platform.policy_pack.builders import Analyze


@pytest.fixture
def analyze(policy_pack: PolicyPack) -> Analyze:
    def run(*resources: PlannedResource, config: Mapping[str, Any] | None = None) -> list[Verdict]:
        # The stack's policy config lists the level each of its Namespaces enforces, for the
        # Pod Security checks that run before each resource is applied.
        policy_pack.configure(with_namespace_levels(config, resources))
        return policy_pack.analyze(resources)

    return run


@pytest.fixture
def new_notes(policy_pack: PolicyPack) -> Callable[[], list[str]]:
    """The notes the pack logs from now on (the pack's log spans the whole session)."""
    start = len(policy_pack.notes)
    return lambda: policy_pack.notes[start:]
