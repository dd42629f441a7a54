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
        # The provider lists only its own list types (v4.32.0 pkg/kinds/util.go `IsListURN`,
        # kinds.go `ListQualifiedTypes`) and takes only `helm.sh/v3:Release` for a release
        # (provider/helm_release.go `isHelmRelease`): any other such type is created from its
        # properties like every object.
        ("kubernetes:example.com/v1:AgentList", PRIVILEGED_DAEMONSET),
        ("kubernetes:example.com/v1:PolicyList", CLUSTER_POLICY),
        ("kubernetes:helm.sh/v3:Agent", PRIVILEGED_DAEMONSET),
        ("kubernetes:helm.sh/v3:Thing", CLUSTER_POLICY),
        ("kubernetes:helm.sh/v4:Chart", PRIVILEGED_DAEMONSET),
        ("kubernetes:yaml/v2:ConfigGroup", PRIVILEGED_DAEMONSET),
        ("kubernetes:kustomize/v2:Directory", PRIVILEGED_DAEMONSET),
        # pulumi's tokens.go takes all after the module as the name, so `Daemon:Set` is a type.
        ("kubernetes:apps/v1:Daemon:Set", PRIVILEGED_DAEMONSET),
    ],
    ids=[
        "cluster-policy-as-config-map",
        "patch-of-another-group",
        "any-type",
        "daemonset",
        "list-suffix",
        "list-suffix-cluster-policy",
        "helm-module",
        "helm-module-cluster-policy",
        "helm-chart-type",
        "yaml-module",
        "kustomize-module",
        "name-with-a-colon",
    ],
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
        ("kubernetes:helm.sh/v4:Chart", {"chart": "x", "version": "1.0.0"}),
        ("kubernetes:yaml/v2:ConfigGroup", {"yaml": "kind: ConfigMap"}),
        ("kubernetes:core/v1:ConfigMapList", {"apiVersion": "v1", "kind": "ConfigMapList"}),
        # A kind that ends in `Patch` is an object, not a patch (util.go `IsPatchResource`:
        # kind + "Patch" == name).
        ("kubernetes:x.io/v1:RoutePatch", {"apiVersion": "x.io/v1", "kind": "RoutePatch"}),
    ],
    ids=[
        "daemonset",
        "its-own-patch",
        "core-group",
        "helm-release",
        "helm-chart",
        "config-group",
        "own-list-type",
        "kind-ending-in-patch",
    ],
)
def test_an_object_of_its_types_kind_draws_no_verdict_here(
    analyze: Analyze, type_: str, props: dict[str, Any]
) -> None:
    assert messages(analyze(resource(type_, "own", props), config=PROD), POLICY) == []
