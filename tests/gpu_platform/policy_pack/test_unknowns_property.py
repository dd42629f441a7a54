"""Property: for every known-bad manifest of the corpus, replacing any one other field with a
value not known yet never removes a mandatory violation of a different field.

The corpus: every pod Kubernetes' own pod-security-admission fixtures deny at restricted v1.35
(`upstream/pod_security_fixtures.json`, derived by `upstream/derive_pod_security_fixtures.py`),
and pods of several containers, init and ephemeral containers and volumes built here. For each
pod and each of its fields (every mapping, list and value under `spec`, and each annotation),
a variant holds the engine's unknown value in that field. A violation of the original pod must
be reported for the variant too, unless its message names the replaced field, a field within
it, or one that holds it: those are the violations that read it.

Two fields decide whether whole checks apply and so are left out: `spec.os` (from policy v1.25
restricted exempts Windows pods from four checks) and `spec.hostUsers` (from v1.35 a pod in its
own user namespace is exempt from three). A value not known there leaves those checks unable to
judge anything, by design.
"""

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.gpu_platform.policy_pack.builders import (
    Analyze,
    FieldPath,
    fields,
    namespace,
    resource,
    restricted_pod_spec,
    violations,
    with_unknown,
)

FIXTURES: dict[str, Any] = json.loads(
    (Path(__file__).parent / "upstream" / "pod_security_fixtures.json").read_text()
)
POD = "kubernetes:core/v1:Pod"
POLICY = "pod-security-standards"
GATES = (("spec", "os"), ("spec", "hostUsers"))
# Messages name a container or volume by its name, or by its place when the name is unknown.
_LABEL = re.compile(r'(?:(?:init |ephemeral )?container|volume) (?:"[^"]*"|#\d+)')
_FIELD = re.compile(r'(?:spec|metadata)(?:[\w.-]|\[\d+\]|\["[^"]*"\])*')


def multi_container_pod() -> dict[str, Any]:
    """Violations spread over an init container, two containers, an ephemeral container, the
    pod's own settings and a volume."""
    spec = restricted_pod_spec()
    app = spec["containers"][0]
    spec["containers"].append(
        {
            **app,
            "name": "sidecar",
            "securityContext": {**app["securityContext"], "privileged": True},
        }
    )
    spec["containers"][0]["securityContext"]["runAsUser"] = 0
    spec["initContainers"] = [{"name": "setup", "image": "registry.example.com/setup:1"}]
    spec["ephemeralContainers"] = [
        {"name": "debug", "securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}}
    ]
    spec["volumes"] = [
        {"name": "scratch", "emptyDir": {}},
        {"name": "node", "hostPath": {"path": "/var/run"}},
    ]
    spec["securityContext"]["sysctls"] = [{"name": "kernel.msgmax", "value": "65536"}]
    return {"metadata": {"name": "multi"}, "spec": spec}


def host_pod() -> dict[str, Any]:
    spec = restricted_pod_spec()
    spec["hostNetwork"] = True
    spec["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 8080}]
    annotations = {"container.apparmor.security.beta.kubernetes.io/app": "unconfined"}
    return {"metadata": {"name": "host", "annotations": annotations}, "spec": spec}


CORPUS = {
    **{
        pod_id: FIXTURES["pods"][pod_id]
        for pod_id in FIXTURES["verdicts"]["restricted/v1.35"]["fail"]
    },
    "multi-container": multi_container_pod(),
    "host": host_pod(),
}


_STEP = re.compile(r'\[(\d+)\]|\["([^"]*)"\]|\.?([\w-]+)')


def steps_of(field: str) -> FieldPath:
    """("spec", "containers", 0, "image") from a message's `spec.containers[0].image`."""
    return tuple(int(index) if index else key or name for index, key, name in _STEP.findall(field))


def replaceable(pod: dict[str, Any]) -> list[FieldPath]:
    annotations = pod["metadata"].get("annotations", {})
    found = [
        *fields(pod["spec"], ("spec",)),
        *(("metadata", "annotations", k) for k in annotations),
    ]
    return [path for path in found if path[:2] not in GATES]


def reads(message: str, field: FieldPath) -> bool:
    """Whether the violation names `field`, a field within it, or one that holds it."""
    for named in (steps_of(found) for found in _FIELD.findall(message)):
        shorter, longer = sorted((named, field), key=len)
        if longer[: len(shorter)] == shorter:
            return True
    return False


def denied(analyze: Analyze, pods: dict[str, dict[str, Any]]) -> dict[str, set[str]]:
    """The pod-security-standards violations of each pod, their container and volume labels
    left out (a name not known reads as its place)."""
    resources = [
        resource(POD, name, {**pod, "metadata": {**pod["metadata"], "namespace": "fixtures"}})
        for name, pod in pods.items()
    ]
    # Only the policy under test, so that the ~2,000 variants stay quick to analyze.
    config = {"all": "disabled", POLICY: "mandatory"}
    verdicts = analyze(namespace("fixtures", "restricted", "v1.35"), *resources, config=config)
    found: dict[str, set[str]] = {name: set() for name in pods}
    for verdict in violations(verdicts):
        if verdict.policy_name == POLICY:
            found[verdict.urn.rsplit("::", 1)[1]].add(_LABEL.sub("<label>", verdict.message))
    return found


@pytest.mark.parametrize("pod_id", sorted(CORPUS))
def test_an_unknown_field_removes_no_violation_of_another_field(
    analyze: Analyze, pod_id: str
) -> None:
    pod = CORPUS[pod_id]
    (original,) = denied(analyze, {pod_id: pod}).values()
    paths = replaceable(pod)
    variants = {f"{pod_id}-{index}": with_unknown(pod, path) for index, path in enumerate(paths)}

    found = denied(analyze, variants)

    assert original, f"{pod_id} is in the corpus as a pod the admission denies"
    lost = {
        path: sorted(message for message in original - found[name] if not reads(message, path))
        for name, path in zip(variants, paths, strict=True)
    }
    assert {field: messages for field, messages in lost.items() if messages} == {}
