"""Every kind of fact `gpu-platform lock` resolves, in the order it reads them."""

from gpu_platform.lock import cos_resolver, image_resolver
from gpu_platform.lock.resolve import Resolver

RESOLVERS: tuple[Resolver, ...] = (cos_resolver.RESOLVER, image_resolver.RESOLVER)
