"""The platform's own images run by digest: what its components deploy is the image the lock
names, not whatever its tag names on the day a node pulls it.

Scope: the Helm releases the platform declares (`helm.is_platform_release`), and the objects
of the platform's own kinds and names (`platform_objects.PLATFORM_OBJECTS`), never told by
their parent types, which a program chooses (`in_scope`): the containers and init containers
of their pods (the smoke tests, the canary gates, the idle GPU pod reaper, the MIG startup
taint remover, the GKE DCGM exporter, Google's COS driver installer, whose preloaded installer
image, never pulled, needs no digest), and the image references their Helm releases'
values name: an image map (`image: {repository, tag, digest}`, as the cluster autoscaler's,
Karpenter's, node-feature-discovery's and the EFA device plugin's charts take it), an operand's
image string (`image: "<repository>:<tag>@..."`, as the GPU Operator's chart takes it) and a
`{repository, image, version}` triple (the GPU Operator's own images). A chart's default
images, which the values leave to the chart, are out of the pack's sight: the lock's image list
(`gpu_platform/platform_images.py`) names them. A stack's own workloads are
`gpu-pods-pinned-images`' to judge.
"""

from collections.abc import Iterator, Mapping
from typing import Any

from checks import each, resource_policy
from gpu_workloads import image_problem, image_repository, platform_repositories
from helm import RELEASE_TYPE, is_platform_release
from platform_scope import is_platform_object
from pods import Container, Pod, pods_of
from props import field_path, shown, value_at
from pulumi_policy import EnforcementLevel, ResourceValidationArgs
from settings import Setting

NAME = "platform-images-by-digest"

AWAITING_DIGESTS = Setting(
    "awaitingDigests",
    {
        "type": "array",
        "items": {"type": "string", "pattern": r"^[^@\s]+:[^@:/\s]+$"},
        "default": [],
        "description": "Images of the platform, as `<repository>:<tag>`, that may run by tag "
        "while the project's lock (gpu-platform.lock) has no digest for them yet: each one a "
        "reviewed exception, to remove once `gpu-platform lock` has read its digest.",
    },
)


def in_scope(args: ResourceValidationArgs) -> bool:
    """A release the platform declares (`helm.is_platform_release`), or an object of the
    platform's own kind and name (`platform_scope.is_platform_object`); never by its parent
    types, which a program chooses. Raises `UnknownValueError` where the name, or the
    namespace an entry needs, is not known yet."""
    if args.resource_type == RELEASE_TYPE:
        return is_platform_release(args)
    return is_platform_object(args)


def _platform_resource_problems(args: ResourceValidationArgs) -> Iterator[str]:
    if not in_scope(args):
        return iter(())
    awaiting = frozenset(AWAITING_DIGESTS.read(args.get_config()))
    if args.resource_type == RELEASE_TYPE:
        return each(
            _value_images(args.props.get("values"), ("values",)),
            lambda found: _problems(found[1], found[0], awaiting),
            lambda found: found[0],
        )
    pods = [pod for pod in pods_of(args.resource_type, args.props) if not pod.partial]
    ours = platform_repositories(args)
    return each(pods, lambda pod: _pod_problems(pod, awaiting, ours), lambda pod: pod.label)


def _pod_problems(pod: Pod, awaiting: frozenset[str], ours: frozenset[str]) -> Iterator[str]:
    """`ours`: the image repositories the platform runs in the object; another image in it is
    a stack's own, which no lock run or `awaitingDigests` entry is for."""

    def container_problems(container: Container) -> Iterator[str]:
        image = value_at(container.props, "image")
        if isinstance(image, str) and not _node_local(image, container):
            where = f"{container.label} ({pod.container_field(container, 'image')})"
            if image_repository(image) in ours:
                yield from _problems(image, where, awaiting)
            elif problem := image_problem(image, require_digest=True):
                yield (
                    f"{where}: image {shown(image)} {problem}, in an object of a name the "
                    "platform gives its own, which runs images by digest. Fix: pin its digest "
                    "(image:tag@sha256:...)."
                )

    return each(pod.containers(), container_problems, pod.container_field)


def _node_local(image: str, container: Container) -> bool:
    """An image the node has already and is never pulled (`imagePullPolicy: Never`), named
    without a registry: no registry could give it a digest. Google's COS driver installer
    DaemonSet runs its installer so (`cos-nvidia-installer:fixed`, preloaded on COS nodes:
    GoogleCloudPlatform/container-engine-accelerators
    nvidia-driver-installer/cos/daemonset-preloaded.yaml at the commit gpu_platform/versions.py
    pins)."""
    if value_at(container.props, "imagePullPolicy") != "Never":
        return False
    first, slash, _ = image.partition("/")
    return not slash or not ("." in first or ":" in first or first == "localhost")


def _value_images(values: Any, path: tuple[str | int, ...]) -> Iterator[tuple[str, str]]:
    """(where, `repository:tag[@digest]`) of every image reference in Helm values."""
    if isinstance(values, Mapping):
        image = values.get("image")
        if isinstance(image, Mapping) and isinstance(image.get("repository"), str):
            tag, digest = str(image.get("tag") or ""), str(image.get("digest") or "")
            reference = f"{image['repository']}:{tag}" + (f"@{digest}" if digest else "")
            yield field_path(*path, "image"), reference
        elif isinstance(image, str) and "/" in image and not values.get("repository"):
            # The GPU Operator's `{repository: "", image: <whole reference>, version: ""}`.
            yield field_path(*path, "image"), image
        elif isinstance(image, str) and isinstance(values.get("repository"), str):
            # The GPU Operator's `{repository, image, version}`, rendered
            # `repository/image:version` (deployments/gpu-operator/templates/_helpers.tpl at
            # v26.7.0), where `version` may be `tag@sha256:...`.
            reference = f"{values['repository']}/{image}:{values.get('version') or ''}"
            yield field_path(*path, "version"), reference
        for key, value in values.items():
            if key != "image":
                yield from _value_images(value, (*path, key))
    elif isinstance(values, list):
        for index, value in enumerate(values):
            yield from _value_images(value, (*path, index))


def _problems(image: str, where: str, awaiting: frozenset[str]) -> Iterator[str]:
    problem = image_problem(image, require_digest=True)
    if problem is None or image in awaiting:
        return
    yield (
        f"{where}: the platform's image {shown(image)} {problem}. Fix: run `gpu-platform lock`"
        f" to read its digest into the lock, or list {shown(image)} in {AWAITING_DIGESTS.key}"
        " while its registry cannot be read."
    )


POLICIES = [
    resource_policy(
        NAME,
        "The platform's own pods and Helm values name each image by digest "
        "(repository:tag@sha256:...), from the lock.",
        _platform_resource_problems,
        AWAITING_DIGESTS,
        enforcement_level=EnforcementLevel.ADVISORY,
    )
]
