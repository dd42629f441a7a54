"""A Kubernetes object is the kind its type says: every policy picks what it judges by the type,
and the provider creates what the properties say.

pulumi-kubernetes creates an object of the `apiVersion` and `kind` in its properties (v4.32.0
provider/pkg/await/await.go, `ResourceClientForObject(c.Inputs)`), and reads the type only for
its module's group and version and, for a patch, the `Patch` at its end (pkg/kinds/util.go,
`IsPatchResource`). A program may register any type (`pulumi.CustomResource(
"kubernetes:example.com/v1:Anything", ...)`, or a transform rewriting the kind), so a privileged
DaemonSet or a ClusterPolicy under a ConfigMap's type would meet no policy that judges its kind.
"""

from collections.abc import Iterator

from checks import resource_policy
from props import shown, text
from pulumi_policy import ResourceValidationArgs
from type_tokens import kubernetes_type

# Modules whose resources are not one object of the type's kind: Helm releases and charts,
# yaml and kustomize groups, whose objects the provider registers each under its own type.
COMPONENT_MODULES = ("helm.sh/", "yaml/", "kustomize/")


def expected(resource_type: str) -> tuple[str, str] | None:
    """(apiVersion, kind) an object of `resource_type` must have; None for a type that is not
    one Kubernetes object (another provider's, a component, a list)."""
    found = kubernetes_type(resource_type)
    if (
        found is None
        or "/" not in found.module
        or found.module.startswith(COMPONENT_MODULES)
        or found.name.endswith("List")
    ):
        return None
    return found.api_version, found.patched_kind


def kind_problems(args: ResourceValidationArgs) -> Iterator[str]:
    want = expected(args.resource_type)
    if want is None:
        return
    api_version, kind = text(args.props, "apiVersion"), text(args.props, "kind")
    if (api_version is not None and api_version != want[0]) or (
        kind is not None and kind != want[1]
    ):
        yield (
            f"it is declared as {args.resource_type} but is a {shown(kind)} of "
            f"{shown(api_version)}: the cluster gets what its properties say, and the policies "
            f"judge what its type says. Fix: declare it with the type of its kind "
            f"(kubernetes:<group>/<version>:<kind>)."
        )


POLICIES = [
    resource_policy(
        "kubernetes-kind-matches-type",
        "A Kubernetes object's apiVersion and kind are those its type names, so that the "
        "policies that judge its kind see it.",
        kind_problems,
    ),
]
