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


def expected(resource_type: str) -> tuple[str, tuple[str, ...]] | None:
    """(apiVersion, the kinds it may have) for an object of `resource_type`; None for a type the
    provider does not create as an object (another package's, or a module without a version).

    No module or name is trusted: the provider sends every `kubernetes:` type but
    `helm.sh/v3:Release` and its fixed list types through the same Check and Create, a type
    whose name ends in `List` or whose module starts with `helm.sh/` included (v4.32.0
    provider/pkg/kinds/util.go `IsListURN` matches only `ListQualifiedTypes`; provider.go Check
    uses `gvkFromURN`, which needs only `<group>/<version>`). Helm releases and charts, yaml
    and kustomize groups send no `apiVersion` or `kind`, so they draw no verdict below; a name
    holding a further `:` (pulumi tokens.go `Name()` is all after the module) names no kind.
    """
    found = kubernetes_type(resource_type)
    if found is None or "/" not in found.module:
        return None
    # A kind that itself ends in `Patch` is an object, not a patch (util.go `IsPatchResource`:
    # kind+"Patch" == name).
    return found.api_version, (found.name, found.patched_kind)


def kind_problems(args: ResourceValidationArgs) -> Iterator[str]:
    want = expected(args.resource_type)
    if want is None:
        return
    api_version, kind = text(args.props, "apiVersion"), text(args.props, "kind")
    if (api_version is not None and api_version != want[0]) or (
        kind is not None and kind not in want[1]
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
