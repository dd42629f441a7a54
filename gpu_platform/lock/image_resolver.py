"""`gpu-platform lock` for image digests: the digest each tag names now, for every image the
stacks deploy (gpu_platform/platform_images.py) but those whose upstream release records the
digest already (the GPU Operator's operands, Karpenter's controller), read from each image's
registry (gpu_platform/lock/registry.py)."""

from collections.abc import Callable, Collection

from gpu_platform.lock.ecr import EcrCredentials
from gpu_platform.lock.lockfile import IMAGES, entry
from gpu_platform.lock.registry import Credentials, ImageNotResolved, RegistryClient
from gpu_platform.lock.resolve import LockContext, Resolution, Resolver
from gpu_platform.lock.sources import SourceError
from gpu_platform.platform_images import PlatformImage, platform_images

PLAIN_HTTP_REGISTRIES: Collection[str] = ()
"""Registries asked over HTTP: none but a test's registry on loopback."""
CREDENTIALS: Callable[[], Credentials] = EcrCredentials
"""What gives the credentials a registry asking for them takes: Amazon ECR's, from AWS
credentials where boto3 finds some."""


def images_to_lock(context: LockContext) -> dict[str, PlatformImage]:
    """The images of the stacks whose digest the lock holds, by key."""
    return {
        image.key: image
        for config in context.stacks.values()
        for image in platform_images(config)
        if image.digest is None
    }


def resolve(context: LockContext) -> Resolution:
    result = Resolution()
    client = RegistryClient(context.sources, PLAIN_HTTP_REGISTRIES, CREDENTIALS())
    for key, image in sorted(images_to_lock(context).items()):
        try:
            found = client.resolve(image.repository, image.tag)
        except ImageNotResolved as error:
            reason = f"{error.detail} ({image.deployed_by})"
            result.fail(IMAGES, key, reason, blocking=error.problem != "credentials")
        except SourceError as error:
            result.fail(IMAGES, key, str(error))
        else:
            result.add(IMAGES, key, entry(found.digest, found.source))
    return result


RESOLVER = Resolver(sections=(IMAGES,), resolve=resolve)
