"""Kubernetes objects as the policies read them: where the pod is in each kind that carries one,
the containers of a pod, and the namespace an object lands in.

A Pod is itself the pod; the workload controllers carry a pod template, a CronJob one level
deeper. Every API version of these kinds is recognised (`kubernetes:apps/v1:Deployment`,
`kubernetes:apps/v1beta2:Deployment`, ...); `...Patch` kinds describe partial objects and are not.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from props import Step, elements, field_path, mapping, text

POD_TEMPLATE_PATHS: Mapping[str, tuple[str, ...]] = {
    "Pod": (),
    "PodTemplate": ("template",),
    "Deployment": ("spec", "template"),
    "ReplicaSet": ("spec", "template"),
    "StatefulSet": ("spec", "template"),
    "DaemonSet": ("spec", "template"),
    "Job": ("spec", "template"),
    "ReplicationController": ("spec", "template"),
    "CronJob": ("spec", "jobTemplate", "spec", "template"),
}

# In the order the built-in admission visits them, which is the order violations are listed.
CONTAINER_COLLECTIONS = ("initContainers", "containers", "ephemeralContainers")
_COLLECTION_NOUNS = {
    "initContainers": "init container",
    "containers": "container",
    "ephemeralContainers": "ephemeral container",
}


def kubernetes_kind(resource_type: str) -> str | None:
    """`Deployment` from `kubernetes:apps/v1:Deployment`; None for other providers' types."""
    parts = resource_type.split(":")
    return parts[2] if len(parts) == 3 and parts[0] == "kubernetes" else None


@dataclass(frozen=True)
class Container:
    collection: str
    index: int
    props: Mapping[str, Any]

    @property
    def name(self) -> str:
        return text(self.props, "name") or f"#{self.index}"

    @property
    def label(self) -> str:
        """`container "app"`, `init container "setup"`."""
        return f'{_COLLECTION_NOUNS[self.collection]} "{self.name}"'


@dataclass(frozen=True)
class Pod:
    """The pod a resource describes: its metadata and spec, and where they are in the resource."""

    kind: str
    props: Mapping[str, Any]
    path: tuple[str, ...]

    @property
    def metadata(self) -> Mapping[str, Any]:
        return mapping(self.props, *self.path, "metadata") or {}

    @property
    def spec(self) -> Mapping[str, Any]:
        return mapping(self.props, *self.path, "spec") or {}

    def spec_field(self, *steps: Step) -> str:
        """The path of a spec field in the resource, for messages."""
        return field_path(*self.path, "spec", *steps)

    def metadata_field(self, *steps: Step) -> str:
        return field_path(*self.path, "metadata", *steps)

    def container_field(self, container: Container, *steps: Step) -> str:
        return self.spec_field(container.collection, container.index, *steps)

    def containers(self, collections: tuple[str, ...] = CONTAINER_COLLECTIONS) -> list[Container]:
        spec = self.spec
        return [
            Container(collection, index, item)
            for collection in collections
            for index, item in enumerate(elements(spec, collection))
            if isinstance(item, Mapping)
        ]


def pod_of(resource_type: str, props: Mapping[str, Any]) -> Pod | None:
    """The pod a resource of this type carries, or None for kinds that carry none."""
    kind = kubernetes_kind(resource_type)
    path = POD_TEMPLATE_PATHS.get(kind or "")
    if kind is None or path is None:
        return None
    return Pod(kind, props, path)


def namespace_or_default(namespace: str | None, provider: Any) -> str:
    """The namespace an object lands in: its own, else its Kubernetes provider's default
    namespace, else `default`. `provider` is the policy SDK's view of the resource's provider."""
    if namespace:
        return namespace
    if provider is not None and provider.resource_type == "pulumi:providers:kubernetes":
        namespace = text(provider.props, "namespace")
    return namespace or "default"
