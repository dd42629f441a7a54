"""The pack judges Kubernetes' own Pod Security fixtures as the admission does, at every policy
version from v1.0 to v1.37 and at both levels.

`upstream/pod_security_fixtures.json` holds pod-security-admission's test fixtures (derived by
`upstream/derive_pod_security_fixtures.py`, which names the upstream commit): per level and
version, pods the admission allows and pods it denies. Each level and version is one stack
through the real pack: a Namespace enforcing that level at that version, and every fixture pod
in it. A denied pod must get a pod-security-standards violation, an allowed one none."""

import json
from pathlib import Path
from typing import Any

import pytest

from tests.gpu_platform.policy_pack.builders import Analyze, namespace, resource, violations

FIXTURES: dict[str, Any] = json.loads(
    (Path(__file__).parent / "upstream" / "pod_security_fixtures.json").read_text()
)
POLICY = "pod-security-standards"
POD = "kubernetes:core/v1:Pod"


def _version_order(case: str) -> tuple[str, int, int]:
    level, version = case.split("/")
    major, minor = version.removeprefix("v").split(".")
    return level, int(major), int(minor)


CASES = sorted(FIXTURES["verdicts"], key=_version_order)


def test_the_fixtures_cover_every_version_of_both_levels() -> None:
    versions = {f"v1.{minor}" for minor in range(38)}

    assert {case.split("/")[1] for case in CASES if case.startswith("baseline/")} == versions
    assert {case.split("/")[1] for case in CASES if case.startswith("restricted/")} == versions


@pytest.mark.parametrize("case", CASES)
def test_the_pack_allows_and_denies_upstreams_fixtures_as_the_admission_does(
    analyze: Analyze, case: str
) -> None:
    level, version = case.split("/")
    expected = FIXTURES["verdicts"][case]
    pods = {
        f"{outcome}-{pod_id}": FIXTURES["pods"][pod_id]
        for outcome in ("pass", "fail")
        for pod_id in expected[outcome]
    }
    resources = [
        resource(POD, name, {**pod, "metadata": {**pod["metadata"], "namespace": "fixtures"}})
        for name, pod in pods.items()
    ]

    verdicts = analyze(namespace("fixtures", level, version), *resources)

    denied = {v.urn.rsplit("::", 1)[1] for v in violations(verdicts) if v.policy_name == POLICY}
    wrongly_denied = sorted(
        pods[name]["metadata"]["name"] for name in denied if name.startswith("pass-")
    )
    wrongly_allowed = sorted(
        pods[name]["metadata"]["name"]
        for name in pods
        if name.startswith("fail-") and name not in denied
    )
    assert (wrongly_denied, wrongly_allowed) == ([], [])
