"""A Pulumi Kubernetes type token, `kubernetes:<module>:<name>`, as every policy reads it.

The SDK registers an object of `apiVersion` `<group>/<version>` and kind `<kind>` under
`kubernetes:<group>/<version>:<kind>`, the core group's under `core/v1`, and a server-side apply
patch of one under `<kind>Patch` (pulumi-kubernetes 4.34.2 Python SDK,
`apiextensions/CustomResource.py` and `CustomResourcePatch.py`; provider v4.32.0
`pkg/kinds/util.go`, `IsPatchResource`). Helm releases and charts, yaml and kustomize groups are
`kubernetes:` types too, of modules such as `helm.sh/v3` or `yaml/v2`.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class KubernetesType:
    """The parts of a `kubernetes:` type token."""

    module: str
    """`apps/v1`, `core/v1`, `ray.io/v1`, `helm.sh/v3`."""
    name: str
    """`Deployment`, or `DeploymentPatch` for a patch of one."""

    @property
    def group(self) -> str:
        """`apps` of `apps/v1`, `core` of `core/v1`, `ray.io` of `ray.io/v1`."""
        return self.module.rsplit("/", 1)[0]

    @property
    def api_version(self) -> str:
        """The `apiVersion` its objects carry: the core group's say `v1` where the type says
        `core/v1`."""
        return self.module.removeprefix("core/")

    @property
    def is_patch(self) -> bool:
        return self.name.endswith("Patch")

    @property
    def patched_kind(self) -> str:
        """The kind a patch type patches (`Deployment` of `DeploymentPatch`); the name of any
        other."""
        return self.name.removesuffix("Patch")


def kubernetes_type(resource_type: str) -> KubernetesType | None:
    """The parts of `resource_type`; None for another provider's type. The name is all after
    the module, as pulumi reads a token (sdk/go/common/tokens/tokens.go, `Name()`), so
    `kubernetes:apps/v1:Daemon:Set` names no kind a policy knows."""
    package, _, rest = resource_type.partition(":")
    module, _, name = rest.partition(":")
    if package != "kubernetes" or not name:
        return None
    return KubernetesType(module, name)


def api_group_and_kind(resource_type: str) -> tuple[str, str] | None:
    """(`ray.io`, `RayCluster`) of `kubernetes:ray.io/v1:RayCluster`; None for another
    provider's type."""
    found = kubernetes_type(resource_type)
    return None if found is None else (found.group, found.name)
