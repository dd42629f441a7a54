"""What the `GpuPlatform` being declared gives every part it declares, however deep: the
providers its lookups (invokes) go through, and the prefix of its parts' names.

A program that disables default providers (`pulumi:disable-default-providers`) hands
`GpuPlatform` its own: the component's resources inherit them from it, as every child does its
parent's, but a lookup runs before the component is registered (a pool that cannot work is
refused before anything exists) and deep inside the parts. A second `GpuPlatform` in a stack
needs other names for its parts: a resource's URN holds its name and its ancestors' types, not
their names. `GpuPlatform` sets both here for as long as it declares its parts.
"""

import weakref
from collections.abc import Hashable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar

import pulumi
from pulumi.runtime import settings

_PROVIDERS: ContextVar[Mapping[str, pulumi.ProviderResource] | None] = ContextVar(
    "lookup_providers", default=None
)
_PREFIX: ContextVar[str] = ContextVar("part_name_prefix", default="")


@contextmanager
def declaring(providers: Mapping[str, pulumi.ProviderResource], prefix: str) -> Iterator[None]:
    """While the block runs, lookups of each package (`aws`, `gcp`) go through its provider in
    `providers` (those of another package, through the stack's default provider), and each
    part's name begins with `prefix`."""
    tokens = _PROVIDERS.set(providers), _PREFIX.set(prefix)
    try:
        yield
    finally:
        _PROVIDERS.reset(tokens[0])
        _PREFIX.reset(tokens[1])


def part_name(name: str) -> str:
    """The name of a part the platform declares (`gpu-operator`, a pool's), under the
    platform being declared."""
    return _PREFIX.get() + name


def lookup_provider(package: str) -> pulumi.ProviderResource | None:
    """The provider the package's lookups go through; None for the stack's default."""
    return (_PROVIDERS.get() or {}).get(package)


def lookup_options(package: str) -> pulumi.InvokeOptions:
    """Options of a lookup of `package` (`aws`, `gcp`)."""
    return pulumi.InvokeOptions(provider=lookup_provider(package))


CLOUD_PACKAGES = ("aws", "gcp")
"""The packages of the clouds the platform runs on, whose providers a parent may hand down."""
PACKAGES = (*CLOUD_PACKAGES, "kubernetes")
"""The packages whose providers the platform uses."""


def given_providers(opts: pulumi.ResourceOptions | None) -> dict[str, pulumi.ProviderResource]:
    """The providers of `PACKAGES` that `opts` gives a component, by package, as its children
    inherit them: its parent's, then `providers`, then `provider` (pulumi 3.272
    sdk/python/lib/pulumi/resource.py, `Resource.__init__` and `_get_providers`); but a
    Kubernetes provider only where `opts` gives it: a parent's reaches whatever cluster the
    parent is about, and the platform would install into that one instead of its own."""
    if opts is None:
        return {}
    found: dict[str, pulumi.ProviderResource] = {}
    if opts.parent is not None:
        for package in CLOUD_PACKAGES:
            inherited = opts.parent.get_provider(f"{package}:index:lookup")
            if inherited is not None:
                found[package] = inherited
    if isinstance(opts.providers, Mapping):
        found.update(opts.providers)
    elif opts.providers:
        found.update({provider.package: provider for provider in opts.providers})
    if opts.provider is not None:
        found[opts.provider.package] = opts.provider
    return {package: found[package] for package in PACKAGES if package in found}


# Per program: a program run by the Pulumi CLI or the Automation API talks to one resource
# monitor for its whole run (each run a monitor of its own: pulumi 3.272
# sdk/python/lib/pulumi/automation/_server.py), and each program a process runs under mocks (a
# test's, the offline plan's) gets a mock monitor of its own (runtime/mocks.py, `set_mocks`).
# The component package's provider is the exception: the engine starts one for a deployment's
# default provider and it starts each Construct with a monitor connection of its own
# (provider/server.py, `_construct`: `reset_options(monitor_address=...)`), so there the claims
# are the process's (`claim_per_process`). Explicit provider instances of the package each get
# a process of their own (pulumi pkg/resource/deploy/providers/registry.go), which this cannot
# see across.
_CLAIMED: "weakref.WeakKeyDictionary[object, dict[Hashable, str]]" = weakref.WeakKeyDictionary()
_PROCESS_CLAIMS: dict[Hashable, str] | None = None


def claim_per_process() -> None:
    """Hold claims for the life of the process rather than of a monitor connection: for the
    component package's provider, which serves one deployment."""
    global _PROCESS_CLAIMS
    _PROCESS_CLAIMS = {}


def claim(cluster: Hashable, instance: str) -> str | None:
    """Claim `cluster` for the instance named `instance` in the program being run; the instance
    that claimed it first, if another did. Two instances on one cluster would declare the same
    cloud and Kubernetes objects (the pools' IAM roles, the operator's release, the namespaces)
    and collide at `pulumi up`, where a plan shows nothing wrong."""
    monitor = settings.get_monitor()
    if monitor is None:
        # Nothing can be registered without one, so nothing can collide.
        return None
    claimed = _PROCESS_CLAIMS if _PROCESS_CLAIMS is not None else _CLAIMED.setdefault(monitor, {})
    first = claimed.setdefault(cluster, instance)
    return None if first == instance else first
