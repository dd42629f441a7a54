"""The offline plan lists the Pod Security level of each Namespace a stack declares, as a
stack's policy config lists them for pod-security-standards, where it is given no config."""

from typing import Any

from gpu_platform.offline.namespace_levels import config_for_plan, namespace_levels
from tests.gpu_platform.policy_pack.builders import namespace, resource

NAMESPACE = "kubernetes:core/v1:Namespace"


def labelled(name: str, **labels: Any) -> Any:
    return resource(NAMESPACE, name, {"metadata": {"name": name, "labels": labels}})


def test_each_namespace_is_listed_at_its_enforce_label_and_version() -> None:
    declared = [
        namespace("ml-training", "restricted", "v1.35"),
        namespace("ops", "baseline", "v1.30"),
    ]

    assert namespace_levels(declared) == {
        "ml-training": "restricted:v1.35",
        "ops": "baseline:v1.30",
    }


def test_a_namespace_without_a_version_is_listed_at_the_latest() -> None:
    unversioned = labelled("ml-sandbox", **{"pod-security.kubernetes.io/enforce": "baseline"})

    assert namespace_levels([unversioned]) == {"ml-sandbox": "baseline:latest"}


def test_a_namespace_without_a_level_the_admission_knows_is_not_listed() -> None:
    # pod-security-levels-listed then says what the admission makes of its label.
    malformed = labelled("odd", **{"pod-security.kubernetes.io/enforce": "strict"})
    unlabelled = labelled("plain")

    assert namespace_levels([malformed, unlabelled]) == {}


def test_a_given_policy_config_is_used_as_it_is() -> None:
    given: dict[str, Any] = {"pod-security-standards": {"defaultLevel": "baseline"}}

    assert config_for_plan(given, [namespace()]) == given
    assert config_for_plan(None, [namespace()]) == {
        "pod-security-standards": {"namespaceLevels": {"team-a": "restricted:v1.35"}}
    }
