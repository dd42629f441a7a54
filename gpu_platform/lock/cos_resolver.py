"""`gpu-platform lock` for COS's default NVIDIA drivers (gpu_platform/lock/cos.py).

For each GPU the stacks run on COS without a `gcp.cosDriverBranch`, the lock holds COS's default
for every GKE version gke-to-cos.json lists whose default the hand table does not give
(gpu_platform/drivers.py, `cos_default_in_lock`): a pool's nodes run whatever version GKE gives
them (the cluster's, which a release channel moves; one the pool pins), and the plan reads the
driver of the version they run, so every version GKE may give them is locked, not only one. A
version a pool pins that the map does not list is a fact the command could not read.
"""

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping

from gpu_platform.config import Cloud, ConfigError, StackConfig, key_path
from gpu_platform.drivers import cos_default_in_lock
from gpu_platform.gke.machine_types import gpu_shape
from gpu_platform.lock.cos import (
    cos_build,
    cos_driver_key,
    cos_gpu_type,
    driver_list_url,
    gke_to_cos_url,
)
from gpu_platform.lock.gpu_driver_versions import DEFAULT_LABEL, UnreadableList, labelled_drivers
from gpu_platform.lock.lockfile import COS_DRIVERS, GKE_COS_IMAGES, entry
from gpu_platform.lock.resolve import LockContext, Resolution, Resolver
from gpu_platform.lock.sources import SourceError, Sources

_GPU_MACHINES_ARCHITECTURE_PREFIX = "cos-arm64-"


class _Unreadable(Exception):
    """A source that answered with something the command does not read."""


def resolve(context: LockContext) -> Resolution:
    result = Resolution()
    accelerators, pinned = _needs(context.stacks)
    if not accelerators:
        return result
    url = gke_to_cos_url()
    try:
        images = _gke_to_cos(context.sources, url)
    except (SourceError, _Unreadable) as error:
        result.fail_section(GKE_COS_IMAGES, str(error))
        result.fail_section(COS_DRIVERS, "no COS images to read the drivers of")
        return result
    for version, where in sorted(pinned.items()):
        if version not in images:
            result.fail(
                GKE_COS_IMAGES,
                version,
                f"{url} does not list GKE {version} ({', '.join(where)}): a version GKE no longer"
                " offers, or not yet",
            )
    needed: dict[str, set[str]] = defaultdict(set)
    for version, image in sorted(images.items()):
        wanted = {a for a in accelerators if cos_default_in_lock(version, a)}
        if not wanted:
            continue
        if isinstance(image, _Ambiguous):
            result.fail(GKE_COS_IMAGES, version, f"{url} gives it {len(image.images)} images")
            continue
        result.add(GKE_COS_IMAGES, version, entry(image, url))
        needed[image] |= wanted
    for image, wanted in sorted(needed.items()):
        _read_drivers(context.sources, image, sorted(wanted), result)
    return result


def _needs(stacks: Mapping[str, StackConfig]) -> tuple[set[str], dict[str, list[str]]]:
    """The GPUs the stacks' COS pools run without stating their driver branch, and the GKE
    versions pools pin (version -> where)."""
    accelerators: set[str] = set()
    pinned: dict[str, list[str]] = defaultdict(list)
    problems = []
    for name, config in stacks.items():
        if config.cloud is not Cloud.GCP or config.node_image != "cos":
            continue
        for index, pool in enumerate(config.pools):
            if pool.gcp.cos_driver_branch is not None:
                continue
            try:
                accelerators.add(gpu_shape(pool, index).accelerator)
            except ConfigError as error:
                problems += error.problems
                continue
            if pool.gcp.node_version is not None:
                where = f"{name}: {key_path('pools', index, 'gcp', 'nodeVersion')}"
                pinned[pool.gcp.node_version].append(where)
    if problems:
        raise ConfigError(problems)
    return accelerators, pinned


class _Ambiguous:
    def __init__(self, images: Iterable[str]):
        self.images = sorted(images)


def _gke_to_cos(sources: Sources, url: str) -> dict[str, "str | _Ambiguous"]:
    """GKE version -> the COS image of its x86 nodes, every GPU machine type the platform knows
    being x86; `_Ambiguous` where the map gives a version more than one."""
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
    images: dict[str, str | _Ambiguous] = {}
    for version, found in by_version.items():
        x86 = {i for i in found if not i.startswith(_GPU_MACHINES_ARCHITECTURE_PREFIX)} or found
        images[version] = next(iter(x86)) if len(x86) == 1 else _Ambiguous(x86)
    return images


def _read_drivers(
    sources: Sources, image: str, accelerators: list[str], result: Resolution
) -> None:
    """COS's default driver for each GPU on the image, from its build's driver list."""
    keys = {accelerator: cos_driver_key(image, accelerator) for accelerator in accelerators}
    build = cos_build(image)
    if build is None:
        for key in keys.values():
            result.fail(COS_DRIVERS, key, f"{image} is not a COS image name (cos-M-B-B-P)")
        return
    url = driver_list_url(build)
    try:
        drivers = _driver_list(sources, url)
    except (SourceError, _Unreadable) as error:
        for key in keys.values():
            result.fail(COS_DRIVERS, key, str(error))
        return
    for accelerator, key in keys.items():
        gpu_type = cos_gpu_type(accelerator)
        labels = drivers.get(gpu_type)
        if labels is None:
            # The build offers no driver for the GPU: a fact too, which the plan reports for the
            # pool on this version rather than asking for the lock again.
            result.add(COS_DRIVERS, key, entry(None, url))
        elif DEFAULT_LABEL not in labels:
            result.fail(COS_DRIVERS, key, f"{url} labels none of {gpu_type}'s drivers DEFAULT")
        else:
            result.add(COS_DRIVERS, key, entry(labels[DEFAULT_LABEL], url))


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


RESOLVER = Resolver(sections=(GKE_COS_IMAGES, COS_DRIVERS), resolve=resolve)
