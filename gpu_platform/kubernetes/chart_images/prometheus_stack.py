"""kube-prometheus-stack's images by digest: which image of the chart (and of the subcharts it
enables) the platform pins, through which of the chart's values, and the values that pin them
from what the lock holds.

`gpu-platform lock` reads the images from the pinned chart itself (its archive from the chart's
repository: gpu_platform/lock/chart_archive.py), records each under `chart_images` as
`<repository>:<tag>` and reads the digest of those listed here into `images`; the program then
sets each one's digest value. The charts disagree on that value's key and form, so each image is
listed with what its template renders (read at kube-prometheus-stack 88.5.3 and the subcharts it
pins, prometheus-community/helm-charts and grafana-community/helm-charts): a key the chart does
not have is never set, and `lock` refuses a pinned chart whose values lack it.
"""

from dataclasses import dataclass
from typing import Any, Literal

from gpu_platform.lock.images import locked_digest
from gpu_platform.lock.lockfile import CHART_IMAGES, LOCK_COMMAND, Lock, project_lock
from gpu_platform.platform_images import PlatformImage
from gpu_platform.versions import KUBE_PROMETHEUS_STACK_CHART, HelmChart

EmptyTag = Literal["none", "appVersion", "v + appVersion"]


@dataclass(frozen=True)
class PinnedImage:
    """An image of the stack the platform runs by digest."""

    path: str
    """The image map's path in kube-prometheus-stack's values (a subchart's under its name)."""
    chart: str
    """The chart whose template renders it: kube-prometheus-stack or the subchart."""
    key: Literal["sha", "digest"]
    """The image map's key the template reads the digest from."""
    prefixed: bool
    """Whether the template takes the digest whole (`sha256:<hex>`, rendered after `@`) or its
    hex alone (rendered after `@sha256:`)."""
    empty_tag: EmptyTag
    """The tag the template renders where the values' `tag` is empty: none, the chart's
    appVersion, or it with a `v` before it."""
    fragment: str = ""
    """The text of the chart's template that renders the digest, as read at the release this
    rule was read from: `lock` refuses a chart whose templates lack it (they changed how the
    digest renders). Default: `@sha256:{{ .Values.<path>.sha }}`."""
    distroless: bool = False
    """Whether the image map's `distroless: true` appends `-distroless` to the tag."""

    def __post_init__(self) -> None:
        if not self.fragment:
            object.__setattr__(self, "fragment", f"@sha256:{{{{ {self.fragment_value} }}}}")

    @property
    def fragment_value(self) -> str:
        """The digest value as the chart's templates read it, `.Values.<path>.<key>` (the path
        within the subchart for a subchart's)."""
        values = self.path if self.chart == _STACK else self.path.partition(".")[2]
        return f".Values.{values}.{self.key}"

    def digest_value(self, digest: str) -> str:
        return digest if self.prefixed else digest.removeprefix("sha256:")


_STACK = KUBE_PROMETHEUS_STACK_CHART.name
PINNED: tuple[PinnedImage, ...] = (
    # templates/alertmanager/alertmanager.yaml: `:{{ tag }}@sha256:{{ sha }}`.
    PinnedImage("alertmanager.alertmanagerSpec.image", _STACK, "sha", False, "none"),
    # templates/prometheus/prometheus.yaml: `printf "@sha256:%s" sha` after the tag.
    PinnedImage(
        "prometheus.prometheusSpec.image",
        _STACK,
        "sha",
        False,
        "none",
        '(printf "@sha256:%s" .Values.prometheus.prometheusSpec.image.sha)',
    ),
    # templates/prometheus-operator/deployment.yaml: `tag | default .Chart.AppVersion` then
    # `@sha256:{{ sha }}`, for the operator, the config reloader it gives every Prometheus and
    # Alertmanager, and the Thanos sidecar's default image.
    PinnedImage("prometheusOperator.image", _STACK, "sha", False, "appVersion"),
    PinnedImage(
        "prometheusOperator.prometheusConfigReloader.image", _STACK, "sha", False, "appVersion"
    ),
    PinnedImage("prometheusOperator.thanosImage", _STACK, "sha", False, "none"),
    # templates/prometheus-operator/admission-webhooks/job-patch/job-createSecret.yaml and
    # job-patchWebhook.yaml (the certificate jobs), deployment/deployment.yaml (the webhook).
    PinnedImage("prometheusOperator.admissionWebhooks.patch.image", _STACK, "sha", False, "none"),
    PinnedImage(
        "prometheusOperator.admissionWebhooks.deployment.image",
        _STACK,
        "sha",
        False,
        "appVersion",
    ),
    # kube-state-metrics 8.4.0 templates/_helpers.tpl: `printf "%s/%s:%s@%s"` with
    # `default (printf "v%s" .Chart.AppVersion) tag` and the sha whole.
    PinnedImage(
        "kube-state-metrics.image",
        "kube-state-metrics",
        "sha",
        True,
        "v + appVersion",
        '{{- printf "%s/%s:%s@%s" .Values.image.registry .Values.image.repository (default'
        ' (printf "v%s" .Chart.AppVersion) .Values.image.tag) .Values.image.sha }}',
    ),
    # prometheus-node-exporter 4.56.1 templates/_helpers.tpl: `image.sha` fails the render
    # ("Use image.digest instead"); `@%s` takes the digest whole, after the tag with
    # `-distroless` where `image.distroless` (kube-prometheus-stack's values set it).
    PinnedImage(
        "prometheus-node-exporter.image",
        "prometheus-node-exporter",
        "digest",
        True,
        "v + appVersion",
        '{{- printf "%s/%s:%s%s@%s" .Values.image.registry .Values.image.repository (default'
        ' (printf "v%s" .Chart.AppVersion) .Values.image.tag) (ternary "-distroless" ""'
        " .Values.image.distroless) .Values.image.digest }}",
        distroless=True,
    ),
    # grafana 12.11.1 templates/_pod.tpl: `tag | default .Chart.AppVersion` and the sidecar's
    # tag, each then `@sha256:{{ sha }}`.
    PinnedImage("grafana.image", "grafana", "sha", False, "appVersion"),
    PinnedImage("grafana.sidecar.image", "grafana", "sha", False, "none"),
)
NOT_RUN = frozenset(
    {
        # Off in the charts' values, which the platform's leave as they are.
        "crds.upgradeJob.image.busybox",  # crds.upgradeJob.enabled: false
        "crds.upgradeJob.image.kubectl",
        "thanosRuler.thanosRulerSpec.image",  # thanosRuler.enabled: false
        "kube-state-metrics.kubeRBACProxy.image",  # kubeRBACProxy.enabled: false
        "prometheus-node-exporter.kubeRBACProxy.image",
        # permissionInitContainer.fixes all off (templates/daemonset.yaml).
        "prometheus-node-exporter.permissionInitContainer.image",
        "grafana.imageRenderer.image",  # imageRenderer.enabled: false
        "grafana.testFramework.image",  # `helm test` only
        "grafana.initChownData.image",  # with persistence only, which is off
        "grafana.downloadDashboardsImage",  # for dashboards to download only, none given
    }
)
"""Image maps of the charts' values whose pods the platform's values do not run: recorded for
Binary Authorization's allowlist, not pinned. An image map in neither list is one a new chart
release added: `lock` warns of it until it is listed."""


def lock_key(path: str, chart: HelmChart = KUBE_PROMETHEUS_STACK_CHART) -> str:
    """The image's key in the lock's `chart_images`."""
    return f"{chart.name}@{chart.version}/{path}"


def locked_images(lock: Lock, chart: HelmChart = KUBE_PROMETHEUS_STACK_CHART) -> dict[str, str]:
    """Values path -> `<repository>:<tag>` the lock holds for the chart at its version."""
    prefix = lock_key("", chart)
    return {
        key.removeprefix(prefix): found.value
        for key, found in lock.section(CHART_IMAGES).items()
        if key.startswith(prefix) and found.value
    }


def pinned_image(reference: str, rule: PinnedImage, chart: HelmChart) -> PlatformImage:
    """The image the rule pins, `<repository>:<tag>` as the chart renders it."""
    return PlatformImage(*split_reference(reference), f"{chart.name} {chart.version} {rule.path}")


def pinned_images(
    lock: Lock, chart: HelmChart = KUBE_PROMETHEUS_STACK_CHART
) -> list[PlatformImage]:
    """The images the platform pins of those the lock holds for the chart at its version."""
    held = locked_images(lock, chart)
    return [pinned_image(held[rule.path], rule, chart) for rule in PINNED if rule.path in held]


def split_reference(image: str) -> tuple[str, str]:
    """The repository and tag of `<repository>:<tag>` (the tag empty for a repository named
    alone, whose registry may have a port)."""
    name, _, tag = image.rpartition(":")
    return (name, tag) if name and "/" not in tag else (image, "")


def unlocked_pin(
    lock: Lock, stack: str, chart: HelmChart = KUBE_PROMETHEUS_STACK_CHART
) -> str | None:
    """What the plan of a stack that installs the chart says where the lock has no digest for
    some image the platform pins of it (a lock written before, or for other stacks only, or
    before the chart's pin moved): those images run by tag, which the policy pack cannot see
    (they are the chart's defaults, not the platform's values)."""
    digests = locked_digests(lock, chart)
    missing = [rule.path for rule in PINNED if rule.path not in digests]
    if not missing:
        return None
    if len(missing) < len(PINNED):
        what = f"{len(missing)} of the {len(PINNED)} images: {', '.join(missing)}"
    else:
        what = f"any of the {len(PINNED)} images"
    versions = sorted(
        {
            key.partition("@")[2].partition("/")[0]
            for key in lock.section(CHART_IMAGES)
            if key.startswith(f"{chart.name}@")
        }
        - {chart.version}
    )
    moved = f" (it holds those of {', '.join(versions)})" if versions else ""
    return (
        f"{lock.path.name} has no digest for {what} the platform pins of {chart.name}"
        f" {chart.version}, the pinned chart{moved}: they run by tag. Run"
        f" `{LOCK_COMMAND} {stack}` to pin them."
    )


def locked_digests(lock: Lock, chart: HelmChart = KUBE_PROMETHEUS_STACK_CHART) -> dict[str, str]:
    """Values path -> the digest the lock holds, for each image the platform pins of the chart
    at its version that it holds one for."""
    images = locked_images(lock, chart)
    found = {}
    for pinned in PINNED:
        image = images.get(pinned.path)
        digest = None if image is None else locked_digest(*split_reference(image), lock)
        if digest is not None:
            found[pinned.path] = digest
    return found


def locked_repositories(lock: Lock | None = None) -> tuple[str, ...]:
    """The repositories of every image the lock holds for the pinned chart, sorted; empty where
    it holds none."""
    images = locked_images(lock or project_lock())
    return tuple(sorted({split_reference(image)[0] for image in images.values()}))


def with_digests(values: dict[str, Any], lock: Lock | None = None) -> dict[str, Any]:
    """`values` (the chart's values the platform sets) with the digest value of each image the
    lock holds a digest for; an image it holds none for runs by its tag."""
    digests = locked_digests(lock or project_lock())
    for pinned in PINNED:
        digest = digests.get(pinned.path)
        if digest is not None:
            _set(values, [*pinned.path.split("."), pinned.key], pinned.digest_value(digest))
    return values


def _set(values: dict[str, Any], path: list[str], value: str) -> None:
    for name in path[:-1]:
        values = values.setdefault(name, {})
    values[path[-1]] = value
