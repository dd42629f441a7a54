"""Images by the digest the lock holds for their tags (the lock's `images` section, which
`gpu-platform lock` reads from each image's registry: gpu_platform/lock/image_resolver.py)."""

from dataclasses import replace

from gpu_platform.lock.lockfile import IMAGES, Lock, project_lock
from gpu_platform.versions import ContainerImage


def image_key(repository: str, tag: str) -> str:
    """An image's key in the lock: `<repository>:<tag>`."""
    return f"{repository}:{tag}"


def locked_digest(repository: str, tag: str, lock: Lock | None = None) -> str | None:
    """The digest the lock (the project's by default) holds for `repository:tag`, if any."""
    found = (lock or project_lock()).get(IMAGES, image_key(repository, tag))
    return None if found is None else found.value


def locked(image: ContainerImage, lock: Lock | None = None) -> ContainerImage:
    """`image` by the digest the lock holds for its tag; as it is where it has its upstream
    release's digest already, or the lock has none yet (then it runs by tag, which the policy
    pack's `platform-images-by-digest` reports)."""
    if image.digest is not None:
        return image
    digest = locked_digest(image.repository, image.tag, lock)
    return image if digest is None else replace(image, digest=digest)


def pinned_version(image: ContainerImage) -> str:
    """`<tag>@<digest>` where the lock holds the tag's digest, else the tag: the `tag` (or
    `version`) value of a chart that renders `<repository>:<tag>`."""
    found = locked(image)
    return found.tag if found.digest is None else f"{found.tag}@{found.digest}"
