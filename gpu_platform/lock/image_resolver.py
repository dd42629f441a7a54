"""`gpu-platform lock` for image digests: the digest each tag names now, for every image the
stacks deploy (gpu_platform/platform_images.py) but those whose upstream release records the
digest already (the GPU Operator's operands, Karpenter's controller), read from each image's
registry (gpu_platform/lock/registry.py); and, for stacks that install the Prometheus stack, the
images of kube-prometheus-stack at its pinned version, read from the chart's own archive
(gpu_platform/lock/chart_archive.py) into `chart_images`, with the digests of those the platform
pins (gpu_platform/kubernetes/chart_images/prometheus_stack.py)."""

import re
from collections.abc import Callable, Collection

from gpu_platform.kubernetes.chart_images.prometheus_stack import (
    NOT_RUN,
    PINNED,
    PinnedImage,
    lock_key,
    pinned_image,
    pinned_images,
    split_reference,
)
from gpu_platform.lock.chart_archive import (
    ChartImage,
    ChartNotRead,
    chart_images,
    chart_templates,
    fetch,
)
from gpu_platform.lock.ecr import EcrCredentials
from gpu_platform.lock.lockfile import CHART_IMAGES, IMAGES, entry
from gpu_platform.lock.registry import Credentials, ImageNotResolved, RegistryClient
from gpu_platform.lock.resolve import LockContext, Resolution, Resolver
from gpu_platform.lock.sources import SourceError
from gpu_platform.platform_images import PlatformImage, platform_images
from gpu_platform.versions import KUBE_PROMETHEUS_STACK_CHART, HelmChart

PLAIN_HTTP_REGISTRIES: Collection[str] = ()
"""Registries asked over HTTP: none but a test's registry on loopback."""
CREDENTIALS: Callable[[], Credentials] = EcrCredentials
"""What gives the credentials a registry asking for them takes: Amazon ECR's, from AWS
credentials where boto3 finds some."""
PROMETHEUS_STACK: HelmChart = KUBE_PROMETHEUS_STACK_CHART
"""The Prometheus stack's chart, whose archive the images are read from."""


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
    images = images_to_lock(context)
    if any(config.monitoring.install_prometheus_stack for config in context.stacks.values()):
        images.update(chart_images_to_lock(context, client, result))
    for key, image in sorted(images.items()):
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


def chart_images_to_lock(
    context: LockContext, client: RegistryClient, result: Resolution
) -> dict[str, PlatformImage]:
    """The chart's images into `chart_images`, and those the platform pins, by key. Where the
    chart cannot be read, the section stays as it was and the images it held are read again."""
    chart = PROMETHEUS_STACK
    rules = {rule.path: rule for rule in PINNED}
    try:
        archive, source = fetch(context.sources, client, chart)
        found = {image.path: image for image in chart_images(archive, chart.name)}
        templates = chart_templates(archive, chart.name)
    except (ChartNotRead, SourceError) as error:
        result.fail_section(CHART_IMAGES, f"{chart.name} {chart.version}: {error}")
        return {image.key: image for image in pinned_images(context.previous, chart)}
    pinned: dict[str, PlatformImage] = {}
    for path, image in found.items():
        reference = _reference(image, rules.get(path))
        result.add(CHART_IMAGES, lock_key(path, chart), entry(reference, source))
        if path not in NOT_RUN and path not in rules:
            result.warn(
                CHART_IMAGES,
                lock_key(path, chart),
                f"an image the platform does not know ({reference}): it runs by its tag; list"
                " it in gpu_platform/kubernetes/chart_images/prometheus_stack.py",
            )
    for path, rule in rules.items():
        problem = _unpinnable(found.get(path), rule, templates.get(rule.chart, ""))
        if problem is not None:
            result.fail(
                CHART_IMAGES,
                lock_key(path, chart),
                f"{chart.name} {chart.version} has {problem} at {path}, which the platform pins"
                " by digest: the chart changed (gpu_platform/kubernetes/chart_images/"
                "prometheus_stack.py)",
            )
        else:
            reference = _reference(found[path], rule)
            pinned[reference] = pinned_image(reference, rule, chart)
    return pinned


def _unpinnable(image: ChartImage | None, rule: PinnedImage, templates: str) -> str | None:
    """What keeps the platform from pinning the image by the rule, if anything: the image,
    its digest key, or the template text that renders the digest as the rule sets it (were it
    to render `@%s` where the rule gives hex alone, the pod's image would be `...@<hex>`, and
    `@sha256:sha256:<hex>` the other way round: an image name the kubelet refuses)."""
    if image is None:
        return "no image"
    if rule.key not in image.values:
        return f"no `{rule.key}` in the image"
    if rule.fragment not in templates:
        return f"no template rendering the digest as `{rule.fragment}` ({rule.chart})"
    other = _other_rendering(rule, templates)
    if other is not None:
        return f"a template rendering the digest otherwise, `{other}` ({rule.chart})"
    if not split_reference(_reference(image, rule))[1]:
        return "no tag for the image"
    return None


def _other_rendering(rule: PinnedImage, templates: str) -> str | None:
    """The first template action that reads the rule's digest value outside the rule's
    fragment, a test of it and the `sha:` field of prometheus-operator's resources, if any.

    One template may keep the fragment while another renders the same value another way
    (grafana 12.11.1 templates/_pod.tpl reads `.Values.sidecar.image.sha` in 9 places); the
    value the platform sets must suit them all. The tests allowed: `{{ if/with <value> }}`
    (grafana's `_pod.tpl`), `(<value> | empty | not)` (kube-prometheus-stack 88.5.3
    templates/prometheus/prometheus.yaml:55), and `sha: {{ <value> }}`
    (alertmanager/alertmanager.yaml:32, thanos-ruler/ruler.yaml:27), a field
    prometheus-operator ignores where `image` is set. The fragment's other values may differ:
    kube-state-metrics 8.4.0 and prometheus-node-exporter 4.56.1 templates/_helpers.tpl repeat
    their `printf` line with `.Values.global.imageRegistry` for `.Values.image.registry`."""
    templates = _other_values_alike(templates, rule.fragment_value)
    fragment = _other_values_alike(rule.fragment, rule.fragment_value)
    value = re.escape(rule.fragment_value)
    inside = [(m.start(), m.end()) for m in re.finditer(re.escape(fragment), templates)]
    for use in re.finditer(rf"{value}(?![\w.])", templates):
        if any(start <= use.start() and use.end() <= end for start, end in inside):
            continue
        action = _action(templates, use.start())
        line = templates[templates.rfind("\n", 0, use.start()) + 1 : use.start()]
        if (
            re.match(r"{{-?\s*(if|else if|with)\s", action)
            or templates.startswith(" | empty", use.end())
            or re.fullmatch(r"\s*sha:\s*{{-?\s*", line)
        ):
            continue
        return action
    return None


def _other_values_alike(text: str, value: str) -> str:
    """The template text with every `.Values` reference but `value` read as one placeholder."""
    return re.sub(r"\.Values(?:\.[\w-]+)+", lambda m: m[0] if m[0] == value else ".Values.*", text)


def _action(templates: str, at: int) -> str:
    """The `{{ ... }}` template action around a position."""
    start = templates.rfind("{{", 0, at)
    end = templates.find("}}", at)
    return templates[start : end + 2] if start >= 0 and end >= 0 else templates[at : at + 80]


def _reference(image: ChartImage, rule: PinnedImage | None) -> str:
    """`<registry>/<repository>:<tag>` as the chart's template renders it (the repository
    alone where it renders no tag)."""
    name = f"{image.values['registry']}/{image.values['repository']}"
    tag = str(image.values.get("tag") or "")
    if not tag and rule is not None and rule.empty_tag != "none":
        tag = ("v" if rule.empty_tag == "v + appVersion" else "") + image.app_version
    if tag and rule is not None and rule.distroless and image.values.get("distroless") is True:
        tag += "-distroless"
    return f"{name}:{tag}" if tag else name


RESOLVER = Resolver(sections=(IMAGES, CHART_IMAGES), resolve=resolve)
