"""`gpu-platform lock` for COS's default NVIDIA drivers (gpu_platform/lock/cos.py).

For each GPU the stacks run on COS, the lock holds COS's default for every GKE version
gke-to-cos.json lists whose default the hand table does not give (gpu_platform/drivers.py,
`cos_default_in_lock`): a pool's nodes run whatever version GKE gives them (the cluster's, which
a release channel moves; one the pool pins), and the plan reads the driver of the version they
run, so every version GKE may give them is locked, not only one. A pool that states
`gcp.cosDriverBranch` is locked too: the plan refuses a branch that contradicts COS's default.

A released GKE version's image and a COS build's list never change, so a version the map stops
listing keeps its entry (and its image its drivers): a cluster may still run it. A version a
pool pins, or the minor a cluster is created at, that neither the map nor the lock has is a fact
the command could not read. A build whose drivers the lock has is not read again.

The versions of each minor the map lists now are locked too (`gke_listed_versions`): GKE creates
a cluster at its channel's default version of the minor, one of those, and a version the map
dropped is no channel's default any longer.

A fact that could not be read fails the command only where a pool pins its version or a cluster
is created at its minor; for the other versions the map lists (a new one whose list is not
published yet, one no cluster may ever run) it is reported, and preflight warns where a cluster
runs it or its channel offers it.
"""

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from pydantic import TypeAdapter, ValidationError

from gpu_platform.config import Cloud, ConfigError, StackConfig, key_path
from gpu_platform.config.fields import DriverVersion
from gpu_platform.drivers import cos_default_in_lock, gke_minor
from gpu_platform.gke.machine_types import gpu_shape
from gpu_platform.lock.cos import (
    cos_build,
    cos_driver_key,
    cos_gpu_type,
    driver_list_url,
    gke_to_cos_url,
)
from gpu_platform.lock.gpu_driver_versions import DEFAULT_LABEL, UnreadableList, labelled_drivers
from gpu_platform.lock.lockfile import COS_DRIVERS, GKE_COS_IMAGES, GKE_LISTED_VERSIONS, entry
from gpu_platform.lock.resolve import LockContext, Resolution, Resolver
from gpu_platform.lock.sources import SourceError, Sources
from gpu_platform.version_order import version_key

_ARM64_IMAGE_PREFIX = "cos-arm64-"
_DRIVER_VERSION: TypeAdapter[str] = TypeAdapter(DriverVersion)


class _Unreadable(Exception):
    """A source that answered with something the command does not read."""


@dataclass
class _Needs:
    accelerators: set[str] = field(default_factory=set)
    """The GPUs the stacks run on COS."""
    pinned: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    """GKE versions pools pin -> where."""
    minors: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    """Minors clusters not created yet are created at -> where."""


def resolve(context: LockContext) -> Resolution:
    # Entries go into `context.results` as they are read: past the deadline, `lock` keeps them.
    result = context.results
    needs = _needs(context.stacks)
    if not needs.accelerators:
        return result
    url = gke_to_cos_url()
    try:
        listed = _gke_to_cos(context.sources, url)
    except (SourceError, _Unreadable) as error:
        result.fail_section(GKE_COS_IMAGES, str(error))
        result.fail_section(GKE_LISTED_VERSIONS, str(error))
        result.fail_section(COS_DRIVERS, "no COS images to read the drivers of")
        return result
    locked = {
        version: found
        for version, found in context.previous.section(GKE_COS_IMAGES).items()
        if version not in listed and _lockable(version, needs.accelerators)
    }
    known = listed.keys() | locked.keys()
    for version, where in sorted(needs.pinned.items()):
        if version not in known:
            result.fail(
                GKE_COS_IMAGES,
                version,
                f"{url} does not list GKE {version} ({', '.join(where)}): a version GKE no longer"
                " offers, or not yet",
            )
    offered: dict[str, list[str]] = defaultdict(list)
    for version in sorted(listed, key=version_key):
        if _lockable(version, needs.accelerators):
            offered[gke_minor(version)].append(version)
    for minor, versions in offered.items():
        result.add(GKE_LISTED_VERSIONS, minor, entry(" ".join(versions), url))
    for minor, where in sorted(needs.minors.items()):
        if not any(gke_minor(version) == minor for version in listed):
            result.fail(
                GKE_LISTED_VERSIONS,
                minor,
                f"{url} lists no GKE {minor} version ({', '.join(where)}), the minor the cluster"
                " is created at",
            )
    # A fact only a version no pool pins and no cluster is created at needs (one GKE lists,
    # a cluster may never run) does not fail the command: preflight warns where a cluster runs
    # it or its channel offers it (gpu_platform/gke/preflight/lock.py).
    required = set(needs.pinned) | {v for m in needs.minors for v in offered.get(m, [])}
    needed: dict[str, set[str]] = defaultdict(set)
    required_images = set()
    images = {version: found.value for version, found in locked.items()} | listed
    for version, image in sorted(images.items()):
        wanted = {a for a in needs.accelerators if cos_default_in_lock(version, a)}
        if not wanted or image is None:
            continue
        if isinstance(image, _Unlisted):
            result.fail(GKE_COS_IMAGES, version, f"{url} gives it {image.why}", version in required)
            continue
        result.add(GKE_COS_IMAGES, version, locked.get(version) or entry(image, url))
        needed[image] |= wanted
        if version in required:
            required_images.add(image)
    for image, wanted in sorted(needed.items()):
        _read_drivers(context, image, sorted(wanted), image in required_images)
    return result


def _lockable(version: str, accelerators: Iterable[str]) -> bool:
    return any(cos_default_in_lock(version, a) for a in accelerators)


def _needs(stacks: Mapping[str, StackConfig]) -> _Needs:
    """The GPUs the stacks' COS pools run, the GKE versions pools pin, and the minors clusters
    are to be created at without a pinned version."""
    needs = _Needs()
    problems = []
    for name, config in stacks.items():
        if config.cloud is not Cloud.GCP or config.node_image != "cos":
            continue
        for index, pool in enumerate(config.pools):
            try:
                needs.accelerators.add(gpu_shape(pool, index).accelerator)
            except ConfigError as error:
                problems += error.problems
                continue
            if pool.gcp.node_version is not None:
                where = f"{name}: {key_path('pools', index, 'gcp', 'nodeVersion')}"
                needs.pinned[pool.gcp.node_version].append(where)
        create = config.cluster.create
        # GKE creates the cluster at its channel's default version of the minor
        # (gpu_platform/gke/new_cluster/cluster.py, control_plane_version), and its pools with it.
        if create is not None and create.gcp.version is None and config.pools:
            where = f"{name}: {key_path('cluster', 'create', 'kubernetesVersion')}"
            needs.minors[create.kubernetes_version].append(where)
    if problems:
        raise ConfigError(problems)
    return needs


@dataclass(frozen=True)
class _Unlisted:
    """A version the map gives no single x86 image."""

    why: str


def _gke_to_cos(sources: Sources, url: str) -> dict[str, "str | _Unlisted"]:
    """GKE version -> the COS image of its x86 nodes, every GPU machine type the platform knows
    being x86; `_Unlisted` where the map gives a version none, or more than one."""
    answer = sources.get(url, "gke-to-cos.json")
    if answer.status != 200:
        raise _Unreadable(f"{url} answered {answer.status}")
    try:
        document = json.loads(answer.body)
        listed = [(e["gke_version"], e["image"]) for e in document["entries"]]
    except (ValueError, KeyError, TypeError) as error:
        raise _Unreadable(
            f"{url} is not the map it was: a JSON object whose `entries` each have a"
            f" `gke_version` and an `image` ({type(error).__name__}: {error})"
        ) from None
    if not all(isinstance(v, str) and isinstance(i, str) for v, i in listed):
        raise _Unreadable(f"{url}: an entry's `gke_version` or `image` is not a string")
    by_version: dict[str, set[str]] = defaultdict(set)
    for version, image in listed:
        by_version[version].add(image)
    images: dict[str, str | _Unlisted] = {}
    for version, found in by_version.items():
        x86 = sorted(i for i in found if not i.startswith(_ARM64_IMAGE_PREFIX))
        if len(x86) == 1:
            images[version] = x86[0]
        elif x86:
            images[version] = _Unlisted(f"{len(x86)} images ({', '.join(x86)})")
        else:
            # Its arm64 image's list is another board's (lakitu-arm64), not the x86 GPU nodes'.
            images[version] = _Unlisted(f"only arm64 images ({', '.join(sorted(found))})")
    return images


def _read_drivers(context: LockContext, image: str, accelerators: list[str], needed: bool) -> None:
    """COS's default driver for each GPU on the image, from its build's driver list; where the
    lock has them all, as it has them: a published build's list never changes, and reading
    every build ever locked again each day would outgrow the deadline. A list no stack `needed`
    yet that cannot be read is a warning: every daily refresh would fail for a version no
    cluster may ever run."""
    result = context.results

    def fail(key: str, reason: str) -> None:
        if not needed:
            reason = f"{reason} (no stack needs it yet)"
        result.fail(COS_DRIVERS, key, reason, blocking=needed)

    keys = {accelerator: cos_driver_key(image, accelerator) for accelerator in accelerators}
    kept = {a: context.previous.get(COS_DRIVERS, key) for a, key in keys.items()}
    for accelerator, found in kept.items():
        if found is not None:
            result.add(COS_DRIVERS, keys[accelerator], found)
    keys = {a: key for a, key in keys.items() if kept[a] is None}
    if not keys:
        return
    build = cos_build(image)
    if build is None:
        for key in keys.values():
            fail(key, f"{image} is not a COS image name (cos-M-B-B-P)")
        return
    url = driver_list_url(build)
    try:
        drivers = _driver_list(context.sources, url)
    except (SourceError, _Unreadable) as error:
        for key in keys.values():
            fail(key, str(error))
        return
    for accelerator, key in keys.items():
        gpu_type = cos_gpu_type(accelerator)
        labels = drivers.get(gpu_type)
        if labels is None:
            # A name the list lacks may be the platform's name for the GPU, not the build's
            # offer (gpu_platform/lock/cos.py, COS_GPU_TYPES): not a fact to lock.
            listed = ", ".join(sorted(drivers))
            fail(key, f"{url} lists no {gpu_type}; it lists {listed}")
        elif DEFAULT_LABEL not in labels:
            fail(key, f"{url} labels none of {gpu_type}'s drivers DEFAULT")
        else:
            default = labels[DEFAULT_LABEL]
            try:
                _DRIVER_VERSION.validate_python(default)
            except ValidationError:
                fail(
                    key,
                    f"{url} labels {gpu_type}'s {default!r} DEFAULT, not an NVIDIA driver version"
                    " (`580.95.05`)",
                )
                continue
            result.add(COS_DRIVERS, key, entry(default, url))


def _driver_list(sources: Sources, url: str) -> dict[str, dict[str, str]]:
    answer = sources.get(url, "gpu_driver_versions.textproto")
    if answer.status == 404:
        # google/gvisor test/kubernetes/tests/driver_version.go: a newly released COS build can
        # run in projects before its list is published.
        raise _Unreadable(f"{url} answered 404: no driver list published for the build (yet)")
    if answer.status != 200:
        raise _Unreadable(f"{url} answered {answer.status}")
    try:
        drivers = labelled_drivers(answer.body.decode())
    except (UnicodeDecodeError, UnreadableList) as error:
        raise _Unreadable(f"{url} is not a GPUDriverVersionInfoList: {error}") from None
    if not drivers:
        raise _Unreadable(f"{url} lists no GPU")
    return drivers


RESOLVER = Resolver(sections=(GKE_COS_IMAGES, GKE_LISTED_VERSIONS, COS_DRIVERS), resolve=resolve)
