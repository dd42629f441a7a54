"""Kubernetes objects as the policies read them: where the pods are in each kind that carries
them, the containers of a pod, and the namespace an object lands in.

A Pod is itself the pod; the workload controllers carry a pod template, a CronJob one level
deeper. Every API version of these kinds is recognised (`kubernetes:apps/v1:Deployment`,
`kubernetes:apps/v1beta2:Deployment`, ...). Their `...Patch` kinds (server-side apply patches of
an existing object) carry a partial pod: `Pod.partial` tells the policies to judge only the
values it sets.

GPU jobs mostly arrive as custom resources of the batch and serving operators (KubeRay,
Kubeflow, JobSet, LeaderWorkerSet), which carry several pod templates each: `GPU_WORKLOAD_CRDS`
says where, by API group and kind, as their CRDs define them. A `*` step is every element of a
list or every value of a map there. A stack's policy config adds its own kinds, or replaces an
entry of the table, through the policy `gpu-workload-kinds` (`custom_kinds_from`).
"""

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from props import Step, elements, field_path, mapping, text
from pulumi_policy.proxy import UnknownValueError

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

_RAY_CLUSTER = (("headGroupSpec", "template"), ("workerGroupSpecs", "*", "template"))
GPU_WORKLOAD_CRDS: Mapping[tuple[str, str], tuple[tuple[str, ...], ...]] = {
    # KubeRay (ray.io/v1): RayCluster, and the cluster a RayJob or RayService starts.
    ("ray.io", "RayCluster"): tuple(("spec", *path) for path in _RAY_CLUSTER),
    ("ray.io", "RayJob"): (
        *(("spec", "rayClusterSpec", *path) for path in _RAY_CLUSTER),
        ("spec", "submitterPodTemplate"),
    ),
    ("ray.io", "RayService"): tuple(("spec", "rayClusterConfig", *path) for path in _RAY_CLUSTER),
    # Kubeflow training operator (kubeflow.org/v1): a pod template per replica type.
    ("kubeflow.org", "PyTorchJob"): (("spec", "pytorchReplicaSpecs", "*", "template"),),
    ("kubeflow.org", "TFJob"): (("spec", "tfReplicaSpecs", "*", "template"),),
    ("kubeflow.org", "MPIJob"): (("spec", "mpiReplicaSpecs", "*", "template"),),
    ("kubeflow.org", "XGBoostJob"): (("spec", "xgbReplicaSpecs", "*", "template"),),
    ("kubeflow.org", "JAXJob"): (("spec", "jaxReplicaSpecs", "*", "template"),),
    # JobSet (jobset.x-k8s.io): each replicated Job's pod template.
    ("jobset.x-k8s.io", "JobSet"): (
        ("spec", "replicatedJobs", "*", "template", "spec", "template"),
    ),
    # LeaderWorkerSet (leaderworkerset.x-k8s.io): multi-node inference.
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): (
        ("spec", "leaderWorkerTemplate", "leaderTemplate"),
        ("spec", "leaderWorkerTemplate", "workerTemplate"),
    ),
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
        """Its name, or its place in the list while the name is not known (at preview)."""
        try:
            return text(self.props, "name") or f"#{self.index}"
        except UnknownValueError:
            return f"#{self.index}"

    @property
    def label(self) -> str:
        """`container "app"`, `init container "setup"`."""
        return f'{_COLLECTION_NOUNS[self.collection]} "{self.name}"'


@dataclass(frozen=True)
class Pod:
    """The pod a resource describes: its metadata and spec, and where they are in the resource."""

    kind: str
    props: Mapping[str, Any]
    path: tuple[Step, ...]
    partial: bool = False
    """A patch's pod: only the fields it changes, the rest of the object unseen."""

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


def pods_of(resource_type: str, props: Mapping[str, Any]) -> list[Pod]:
    """The pods a resource of this type carries: one for the built-in kinds, one per pod
    template for the GPU workload CRDs, none for other kinds."""
    kind = kubernetes_kind(resource_type)
    if kind is None:
        return []
    patched = kind.removesuffix("Patch")
    path = POD_TEMPLATE_PATHS.get(patched)
    if path is not None and _api_group(resource_type) in _CORE_GROUPS:
        return [Pod(patched, props, path, partial=patched != kind)]
    key = (_api_group(resource_type), kind)
    patterns = CUSTOM_KINDS.get(key) or GPU_WORKLOAD_CRDS.get(key, ())
    return [Pod(kind, props, found) for pattern in patterns for found in _expand(props, pattern)]


# The API groups of the built-in pod kinds (`core` for Pod and PodTemplate).
_CORE_GROUPS = ("core", "apps", "batch", "extensions")

CUSTOM_KINDS: dict[tuple[str, str], tuple[tuple[str, ...], ...]] = {}
"""The stack's own (API group, kind) -> pod template paths, from `gpu-workload-kinds`' config."""


def custom_kinds_from(
    pod_templates: Mapping[str, Any],
) -> tuple[dict[tuple[str, str], tuple[tuple[str, ...], ...]], list[str]]:
    """(API group, kind) -> pod template paths, from `{"<group>/<Kind>": ["<dotted path>"]}`,
    and a problem for each entry that cannot be read."""
    kinds: dict[tuple[str, str], tuple[tuple[str, ...], ...]] = {}
    problems = []
    for name, paths in pod_templates.items():
        group, slash, kind = str(name).rpartition("/")
        valid_paths = (
            isinstance(paths, list)
            and paths
            and all(isinstance(p, str) and p and "" not in p.split(".") for p in paths)
        )
        if not slash or not group or not kind or group in _CORE_GROUPS:
            problems.append(
                f'"{name}" is not an API group and kind of a custom resource, such as '
                '"example.com/TrainingRun"'
            )
        elif not valid_paths:
            problems.append(
                f'"{name}" needs a list of dotted paths to its pod templates, such as '
                '["spec.workers.*.template"], not ' + json.dumps(paths)
            )
        else:
            kinds[(group, kind)] = tuple(tuple(p.split(".")) for p in paths)
    return kinds, problems


def _api_group(resource_type: str) -> str:
    """`ray.io` from `kubernetes:ray.io/v1:RayCluster`, `apps` from `kubernetes:apps/v1:...`."""
    return resource_type.split(":")[1].rsplit("/", 1)[0]


def _expand(props: Mapping[str, Any], pattern: tuple[str, ...]) -> list[tuple[Step, ...]]:
    """The concrete paths `pattern` names in `props` that lead to a pod template (a mapping)."""
    found: list[tuple[Step, ...]] = [()]
    for step in pattern:
        next_found: list[tuple[Step, ...]] = []
        for path in found:
            if step != "*":
                next_found.append((*path, step))
            elif (items := mapping(props, *path)) is not None:
                next_found += [(*path, key) for key in items]
            else:
                next_found += [(*path, i) for i in range(len(elements(props, *path)))]
        found = next_found
    return [path for path in found if mapping(props, *path) is not None]


def namespace_or_default(namespace: str | None, provider: Any) -> str:
    """The namespace an object lands in: its own, else its Kubernetes provider's default
    namespace, else `default`. `provider` is the policy SDK's view of the resource's provider."""
    if namespace:
        return namespace
    if provider is not None and provider.resource_type == "pulumi:providers:kubernetes":
        namespace = text(provider.props, "namespace")
    return namespace or "default"
