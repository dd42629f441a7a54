"""A Kubernetes object is the kind its type says (gpu_platform/policy_pack/kubernetes_kinds.py):
pulumi-kubernetes v4.32.0 creates what the properties say (provider/pkg/await/await.go,
`ResourceClientForObject(c.Inputs)`) and reads only a patch's `Patch` suffix from the type's name
(pkg/kinds/util.go, `IsPatchResource`)."""

from typing import Any

import pytest

from tests.gpu_platform.policy_pack.builders import Analyze, messages, resource

POLICY = "kubernetes-kind-matches-type"
PROD = {"all": "mandatory"}
CLUSTER_POLICY = {
    "apiVersion": "nvidia.com/v1",
    "kind": "ClusterPolicy",
    "metadata": {"name": "cluster-policy"},
    "spec": {"driver": {"repository": "evil.example"}},
}
PRIVILEGED_DAEMONSET = {
    "apiVersion": "apps/v1",
    "kind": "DaemonSet",
    "metadata": {"name": "node-agent", "namespace": "team-a"},
    "spec": {
        "template": {
            "spec": {
                "hostPID": True,
                "containers": [
                    {"name": "agent", "image": "evil/x", "securityContext": {"privileged": True}}
                ],
            }
        }
    },
}


@pytest.mark.parametrize(
    ("type_", "props"),
    [
        ("kubernetes:core/v1:ConfigMap", CLUSTER_POLICY),
        ("kubernetes:example.com/v1:ClusterPolicyPatch", CLUSTER_POLICY),
        ("kubernetes:example.com/v1:Anything", {**CLUSTER_POLICY, "kind": "NVIDIADriver"}),
        ("kubernetes:core/v1:ConfigMap", PRIVILEGED_DAEMONSET),
    ],
    ids=["cluster-policy-as-config-map", "patch-of-another-group", "any-type", "daemonset"],
)
def test_an_object_declared_under_another_kinds_type_is_refused(
    analyze: Analyze, type_: str, props: dict[str, Any]
) -> None:
    (message,) = messages(analyze(resource(type_, "forged", props), config=PROD), POLICY)

    assert message.startswith(f"it is declared as {type_} but is a ")


@pytest.mark.parametrize(
    ("type_", "props"),
    [
        ("kubernetes:apps/v1:DaemonSet", PRIVILEGED_DAEMONSET),
        ("kubernetes:nvidia.com/v1:ClusterPolicyPatch", CLUSTER_POLICY),
        ("kubernetes:core/v1:ConfigMap", {"apiVersion": "v1", "kind": "ConfigMap"}),
        ("kubernetes:helm.sh/v3:Release", {"chart": "x"}),
    ],
    ids=["daemonset", "its-own-patch", "core-group", "helm-release"],
)
def test_an_object_of_its_types_kind_draws_no_verdict_here(
    analyze: Analyze, type_: str, props: dict[str, Any]
) -> None:
    assert messages(analyze(resource(type_, "own", props), config=PROD), POLICY) == []
