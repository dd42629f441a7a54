"""The policy pack benchmark's no-op pack stands in for the pack: it takes every policy config
the pack takes, so that the benchmark runs both over the same plans with the same config (the
timings themselves are the benchmark's to report, not a test's)."""

import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from benchmarks.policy_pack import noop_pack
from gpu_platform.offline.analyzer import PolicyInfo, PolicyPack
from gpu_platform.offline.namespace_levels import NAMESPACE, config_for_plan
from tests.repository import PROJECT

POLICY_CONFIGS = sorted((PROJECT.directory / "policy-config").glob("*.json"))


@pytest.fixture(scope="module")
def policies(policy_pack: PolicyPack) -> list[PolicyInfo]:
    return list(policy_pack.policies)


@pytest.fixture(scope="module")
def noop(
    policies: list[PolicyInfo], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[PolicyPack]:
    with PolicyPack(noop_pack(tmp_path_factory.mktemp("noop-pack"), policies)) as pack:
        yield pack


def test_the_noop_pack_declares_the_packs_policies_with_their_parameters(
    policies: list[PolicyInfo], noop: PolicyPack
) -> None:
    def shape(found: list[PolicyInfo]) -> dict[str, tuple[bool, object]]:
        return {p.name: (p.stack_policy, p.config_schema) for p in found}

    assert shape(noop.policies) == shape(policies)


@pytest.mark.parametrize("config_file", POLICY_CONFIGS, ids=lambda path: Path(path).stem)
def test_the_noop_pack_takes_each_stacks_policy_config(noop: PolicyPack, config_file: Path) -> None:
    noop.configure(json.loads(config_file.read_text()))


def test_the_noop_pack_takes_the_namespace_levels_an_offline_plan_lists(noop: PolicyPack) -> None:
    # What `analyze_plan` gives a pack without a policy config: the benchmark's fresh runs.
    namespace = SimpleNamespace(
        type=NAMESPACE,
        inputs={
            "metadata": {
                "name": "ml-sandbox",
                "labels": {"pod-security.kubernetes.io/enforce": "restricted"},
            }
        },
    )
    config = config_for_plan(None, [namespace])

    assert config == {
        "pod-security-standards": {"namespaceLevels": {"ml-sandbox": "restricted:latest"}}
    }
    noop.configure(config)
