"""`gpu-platform lock` reads kube-prometheus-stack's images from the pinned chart's own archive:
from a Helm repository on loopback (tests/cos_sources.py serving an index.yaml and an archive
the test makes, tests/helm_charts.py) or from the registry on loopback as an OCI artifact
(tests/oci_registry.py); each image's digest from that registry; and the plan sets each digest
where the chart's template reads it."""

import json
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from gpu_platform.cli import plan as plan_command
from gpu_platform.deadline import Deadline
from gpu_platform.gke.new_cluster.binary_authorization import allowed_images
from gpu_platform.kubernetes.chart_images.prometheus_stack import PINNED, PinnedImage, with_digests
from gpu_platform.kubernetes.monitoring import prometheus_stack_values
from gpu_platform.lock import image_resolver
from gpu_platform.lock.chart_archive import (
    HELM_CHART_LAYER,
    ChartNotRead,
    chart_images,
    fetch,
)
from gpu_platform.lock.lockfile import (
    CHART_IMAGES,
    IMAGES,
    LOCK_PATH_VARIABLE,
    Lock,
    LockEntry,
    entry,
)
from gpu_platform.lock.registry import RegistryClient, no_credentials
from gpu_platform.lock.resolve import LockContext
from gpu_platform.lock.sources import Sources
from gpu_platform.offline import plan as offline_plan
from gpu_platform.offline.program import Plan
from gpu_platform.versions import KUBE_PROMETHEUS_STACK_CHART, HelmChart
from tests.cos_sources import serving
from tests.helm_charts import Chart, archive, index
from tests.oci_registry import Registry, sha256

VERSION = KUBE_PROMETHEUS_STACK_CHART.version
"""The test chart's version: the pinned one, which the program reads the lock's entries of."""


def entry_of(reference: str) -> LockEntry:
    return entry(reference, "https://charts.example/kube-prometheus-stack.tgz")


def image(registry: str, repository: str, tag: str = "", key: str = "sha") -> dict[str, Any]:
    return {"registry": registry, "repository": repository, "tag": tag, key: ""}


STACK_TEMPLATES = {
    # kube-prometheus-stack-88.5.3 (prometheus-community/helm-charts): the lines that render each
    # pinned image's digest, templates/alertmanager/alertmanager.yaml:21,
    # prometheus/prometheus.yaml:55, prometheus-operator/deployment.yaml:54/97/124,
    # admission-webhooks/job-patch/job-createSecret.yaml:40, deployment/deployment.yaml:52.
    "alertmanager.yaml": '  image: "{{ $registry }}/{{ .Values.alertmanager.alertmanagerSpec'
    ".image.repository }}:{{ .Values.alertmanager.alertmanagerSpec.image.tag }}@sha256:{{"
    ' .Values.alertmanager.alertmanagerSpec.image.sha }}"',
    "prometheus.yaml": "  {{- $sha := (.Values.prometheus.prometheusSpec.image.sha | empty | not)"
    ' | ternary (printf "@sha256:%s" .Values.prometheus.prometheusSpec.image.sha) "" }}',
    "operator.yaml": "\n".join(
        f"image: x:{{{{ .Values.{path}.tag }}}}@sha256:{{{{ .Values.{path}.sha }}}}"
        for path in (
            "prometheusOperator.image",
            "prometheusOperator.prometheusConfigReloader.image",
            "prometheusOperator.thanosImage",
            "prometheusOperator.admissionWebhooks.patch.image",
            "prometheusOperator.admissionWebhooks.deployment.image",
        )
    ),
}
STATE_METRICS_TEMPLATE = (
    # kube-state-metrics-8.4.0 templates/_helpers.tpl:147.
    '{{- printf "%s/%s:%s@%s" .Values.image.registry .Values.image.repository (default (printf'
    ' "v%s" .Chart.AppVersion) .Values.image.tag) .Values.image.sha }}'
)
NODE_EXPORTER_TEMPLATE = (
    # prometheus-node-exporter-4.56.1 templates/_helpers.tpl:84.
    '{{- printf "%s/%s:%s%s@%s" .Values.image.registry .Values.image.repository (default'
    ' (printf "v%s" .Chart.AppVersion) .Values.image.tag) (ternary "-distroless" ""'
    " .Values.image.distroless) .Values.image.digest }}"
)
GRAFANA_TEMPLATE = (
    # grafana-12.11.1 (grafana-community/helm-charts) templates/_pod.tpl:122 and :1248.
    'image: "{{ $registry }}/{{ .Values.image.repository }}:{{ .Values.image.tag | default'
    ' .Chart.AppVersion }}@sha256:{{ .Values.image.sha }}"\n'
    'image: "{{ $registry }}/{{ .Values.sidecar.image.repository }}:{{ .Values.sidecar.image.tag'
    ' }}@sha256:{{ .Values.sidecar.image.sha }}"'
)


def prometheus_stack(registry: str, state_metrics_template: str = STATE_METRICS_TEMPLATE) -> Chart:
    """Test data shaped as kube-prometheus-stack 88.5.3 and the subcharts it pins are
    (prometheus-community/helm-charts charts/kube-prometheus-stack/values.yaml and Chart.yaml
    at kube-prometheus-stack-88.5.3): each image map where its release has it, the subcharts
    behind their `condition`, kube-state-metrics packed as `helm dependency build` leaves it."""
    state_metrics = Chart(
        "kube-state-metrics",
        "8.4.0",
        "2.20.0",
        {"image": image(registry, "kube-state-metrics/kube-state-metrics")},
        packed=True,
        templates={"_helpers.tpl": state_metrics_template},
    )
    node_exporter = Chart(
        "prometheus-node-exporter",
        "4.56.1",
        "1.12.1",
        {
            "image": {
                **image(registry, "prometheus/node-exporter", key="digest"),
                "distroless": False,
            }
        },
        templates={"_helpers.tpl": NODE_EXPORTER_TEMPLATE},
    )
    grafana = Chart(
        "grafana",
        "12.11.1",
        "13.2.0",
        {
            "image": image(registry, "grafana/grafana"),
            "sidecar": {"image": image(registry, "kiwigrid/k8s-sidecar", "2.10.1")},
            "testFramework": {"image": {"registry": registry, "repository": "bats/bats"}},
        },
        templates={"_pod.tpl": GRAFANA_TEMPLATE},
    )
    windows = Chart(
        "prometheus-windows-exporter",
        "0.12.0",
        "0.31.0",
        {"image": image(registry, "prometheus-community/windows-exporter")},
    )
    operator = "prometheus-operator"
    values = {
        "alertmanager": {
            "alertmanagerSpec": {"image": image(registry, "prometheus/alertmanager", "v0.34.0")}
        },
        "prometheus": {
            "prometheusSpec": {
                "image": image(registry, "prometheus/prometheus", "v3.14.0-distroless")
            }
        },
        "prometheusOperator": {
            "image": image(registry, f"{operator}/prometheus-operator"),
            "prometheusConfigReloader": {
                "image": image(registry, f"{operator}/prometheus-config-reloader")
            },
            "thanosImage": image(registry, "thanos/thanos", "v0.42.4"),
            "admissionWebhooks": {
                "patch": {"image": image(registry, "jkroepke/kube-webhook-certgen", "1.8.7")},
                "deployment": {"image": image(registry, f"{operator}/admission-webhook")},
            },
        },
        "thanosRuler": {"thanosRulerSpec": {"image": image(registry, "thanos/thanos", "v0.42.4")}},
        # Test data: an image no release has, as a new release may add one.
        "newExporter": {"image": image(registry, "example/new-exporter", "v1")},
        "kubeStateMetrics": {"enabled": True},
        "nodeExporter": {"enabled": True},
        "grafana": {"enabled": True},
        "windowsMonitoring": {"enabled": False},
        "prometheus-node-exporter": {"image": {"distroless": True}},
    }
    return Chart(
        "kube-prometheus-stack",
        VERSION,
        "v0.95.0",
        values,
        [
            (state_metrics, "kubeStateMetrics.enabled"),
            (node_exporter, "nodeExporter.enabled"),
            (grafana, "grafana.enabled"),
            (windows, "windowsMonitoring.enabled"),
        ],
        templates=STACK_TEMPLATES,
    )


def pinned_references(registry: str) -> dict[str, str]:
    """The images the platform pins, as the charts' templates render them: an empty tag is the
    chart's appVersion (kube-prometheus-stack's operator, reloader and webhook; Grafana), or it
    after a `v` (kube-state-metrics, node-exporter, then `-distroless` as the parent's values
    ask)."""
    operator = f"{registry}/prometheus-operator"
    return {
        "alertmanager.alertmanagerSpec.image": f"{registry}/prometheus/alertmanager:v0.34.0",
        "prometheus.prometheusSpec.image": f"{registry}/prometheus/prometheus:v3.14.0-distroless",
        "prometheusOperator.image": f"{operator}/prometheus-operator:v0.95.0",
        "prometheusOperator.prometheusConfigReloader.image": (
            f"{operator}/prometheus-config-reloader:v0.95.0"
        ),
        "prometheusOperator.thanosImage": f"{registry}/thanos/thanos:v0.42.4",
        "prometheusOperator.admissionWebhooks.patch.image": (
            f"{registry}/jkroepke/kube-webhook-certgen:1.8.7"
        ),
        "prometheusOperator.admissionWebhooks.deployment.image": (
            f"{operator}/admission-webhook:v0.95.0"
        ),
        "kube-state-metrics.image": (f"{registry}/kube-state-metrics/kube-state-metrics:v2.20.0"),
        "prometheus-node-exporter.image": f"{registry}/prometheus/node-exporter:v1.12.1-distroless",
        "grafana.image": f"{registry}/grafana/grafana:13.2.0",
        "grafana.sidecar.image": f"{registry}/kiwigrid/k8s-sidecar:2.10.1",
    }


def test_the_images_are_the_charts_and_those_of_the_subcharts_it_enables() -> None:
    found = {
        i.path: i
        for i in chart_images(archive(prometheus_stack("quay.io")), "kube-prometheus-stack")
    }

    assert sorted(found) == sorted(
        [
            *pinned_references("quay.io"),
            "thanosRuler.thanosRulerSpec.image",
            "grafana.testFramework.image",
            "newExporter.image",
        ]
    )
    # The parent's values for a subchart override the subchart's own (Helm's value merging).
    assert found["prometheus-node-exporter.image"].values["distroless"] is True
    assert (found["grafana.image"].chart, found["grafana.image"].app_version) == (
        "grafana",
        "13.2.0",
    )


def serve_chart(chart: Chart, monkeypatch: pytest.MonkeyPatch, url: str | None = None) -> Any:
    content = archive(chart)
    name = f"{chart.name}-{chart.version}.tgz"
    files = {"/charts/index.yaml": index(chart, url or name, content), f"/charts/{name}": content}
    return serving(files, monkeypatch)


def read(chart: HelmChart, plain_http: set[str] | None = None) -> tuple[bytes, str]:
    sources = Sources(Deadline(20))
    return fetch(sources, RegistryClient(sources, plain_http or set()), chart)


def test_the_archive_is_the_one_the_repository_index_lists_at_the_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    chart = prometheus_stack("quay.io")
    with serve_chart(chart, monkeypatch) as base:
        content, source = read(HelmChart(chart.name, VERSION, f"{base}/charts/"))
        with pytest.raises(ChartNotRead, match=r"lists no kube-prometheus-stack 93\.4\.2"):
            read(HelmChart(chart.name, "93.4.2", f"{base}/charts"))

    assert (content, source) == (
        archive(chart),
        f"{base}/charts/kube-prometheus-stack-{VERSION}.tgz",
    )


def test_an_archive_that_is_not_the_one_the_index_lists_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    chart = prometheus_stack("quay.io")
    content = archive(chart)
    files = {
        "/charts/index.yaml": index(chart, "stack.tgz", content),
        "/charts/stack.tgz": archive(prometheus_stack("docker.io")),
    }
    with serving(files, monkeypatch) as base, pytest.raises(ChartNotRead, match="is not the"):
        read(HelmChart(chart.name, VERSION, f"{base}/charts"))


def test_a_chart_in_an_oci_registry_is_read_from_its_chart_layer(registry: Registry) -> None:
    # Helm's "Use OCI-based registries": the chart's archive is the artifact's one layer.
    content = archive(prometheus_stack("quay.io"))
    config = json.dumps({"name": "kube-prometheus-stack", "version": VERSION}).encode()
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {
            "mediaType": "application/vnd.cncf.helm.config.v1+json",
            **registry.push_blob("charts/kube-prometheus-stack", config),
        },
        "layers": [
            {
                "mediaType": HELM_CHART_LAYER,
                **registry.push_blob("charts/kube-prometheus-stack", content),
            }
        ],
    }
    registry.push_manifest(
        "charts/kube-prometheus-stack",
        VERSION,
        "application/vnd.oci.image.manifest.v1+json",
        json.dumps(manifest).encode(),
    )

    found, source = read(
        HelmChart("kube-prometheus-stack", VERSION, f"oci://{registry.host}/charts"),
        {registry.host},
    )

    assert found == content
    assert (
        source == f"http://{registry.host}/v2/charts/kube-prometheus-stack/blobs/{sha256(content)}"
    )


def test_lock_records_the_pinned_charts_images_and_their_digests_and_the_plan_pins_them(
    registry: Registry, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    chart = prometheus_stack(registry.host)
    pushed = {}
    for path, reference in pinned_references(registry.host).items():
        name, _, tag = reference.removeprefix(f"{registry.host}/").rpartition(":")
        pushed[path] = sha256(registry.push_image(name, tag, f"{path} layer".encode()))
    monkeypatch.setattr(image_resolver, "platform_images", lambda config: [])
    monkeypatch.setattr(image_resolver, "PLAIN_HTTP_REGISTRIES", {registry.host})
    monkeypatch.setattr(image_resolver, "CREDENTIALS", lambda: no_credentials)
    stack: Any = SimpleNamespace(monitoring=SimpleNamespace(install_prometheus_stack=True))

    with serve_chart(chart, monkeypatch) as base:
        monkeypatch.setattr(
            image_resolver, "PROMETHEUS_STACK", HelmChart(chart.name, VERSION, f"{base}/charts")
        )
        resolution = image_resolver.resolve(LockContext({"gke-dev": stack}, Sources(Deadline(60))))

    # An image the platform neither pins nor knows not to run is a warning, not a failure.
    assert resolution.unresolved == []
    assert [w.partition(":")[0] for w in resolution.warnings] == [
        f'chart_images["kube-prometheus-stack@{VERSION}/newExporter.image"]'
    ]
    recorded = {k: e.value for k, e in resolution.entries[CHART_IMAGES].items()}
    for path, reference in pinned_references(registry.host).items():
        assert recorded[f"kube-prometheus-stack@{VERSION}/{path}"] == reference
        assert resolution.entries[IMAGES][reference].value == pushed[path]
    lock = Lock(path=tmp_path / "gpu-platform.lock")
    for section, entries in resolution.entries.items():
        lock = lock.with_entries(section, entries)

    values = with_digests({"grafana": {"adminPassword": ""}}, lock)

    hex_of = {path: digest.removeprefix("sha256:") for path, digest in pushed.items()}
    # kube-prometheus-stack's and Grafana's templates render `@sha256:{{ sha }}`;
    # kube-state-metrics 8.4.0 `@%s` of its `sha`, node-exporter 4.56.1 of its `digest`.
    assert values["alertmanager"]["alertmanagerSpec"]["image"] == {
        "sha": hex_of["alertmanager.alertmanagerSpec.image"]
    }
    assert values["prometheusOperator"]["image"] == {"sha": hex_of["prometheusOperator.image"]}
    assert values["kube-state-metrics"]["image"] == {"sha": pushed["kube-state-metrics.image"]}
    assert values["prometheus-node-exporter"]["image"] == {
        "digest": pushed["prometheus-node-exporter.image"]
    }
    assert values["grafana"] == {
        "adminPassword": "",
        "image": {"sha": hex_of["grafana.image"]},
        "sidecar": {"image": {"sha": hex_of["grafana.sidecar.image"]}},
    }


def test_without_the_lock_the_stack_runs_its_images_by_tag(tmp_path: Path) -> None:
    assert with_digests({"grafana": {}}, Lock(path=tmp_path / "none")) == {"grafana": {}}


def test_binary_authorization_admits_the_repositories_the_lock_read_from_the_pinned_chart(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "gpu-platform.lock"
    lock = Lock(path=path).with_entries(
        CHART_IMAGES,
        {
            f"kube-prometheus-stack@{VERSION}/grafana.image": entry_of(
                "docker.io/grafana/grafana:13.2.0"
            ),
            f"kube-prometheus-stack@{VERSION}/crds.upgradeJob.image.kubectl": entry_of(
                "registry.k8s.io/kubectl"
            ),
            # Another version's entry is not the pinned chart's.
            "kube-prometheus-stack@88.5.3/grafana.image": entry_of("docker.io/old/grafana:1"),
        },
    )
    lock.save()
    monkeypatch.setenv(LOCK_PATH_VARIABLE, str(path))
    gcp: Any = SimpleNamespace(binary_authorization_allowed_images=[])

    allowed = allowed_images(gcp)

    assert [p for p in allowed if "grafana" in p or "kubectl" in p] == [
        "docker.io/grafana/grafana*",
        "registry.k8s.io/kubectl*",
    ]
    assert "quay.io/prometheus/prometheus*" not in allowed


def test_the_plans_prometheus_stack_values_pin_the_images_the_project_lock_holds(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "gpu-platform.lock"
    digest = "sha256:" + "5e" * 32
    reference = "docker.io/grafana/grafana:13.2.0"
    Lock(path=path).with_entries(
        CHART_IMAGES, {f"kube-prometheus-stack@{VERSION}/grafana.image": entry_of(reference)}
    ).with_entries(IMAGES, {reference: entry(digest, "https://registry.example")}).save()
    monkeypatch.setenv(LOCK_PATH_VARIABLE, str(path))

    values = prometheus_stack_values("monitoring-node-exporter", [], "team")

    # grafana 12.11.1 templates/_pod.tpl: `@sha256:{{ .Values.image.sha }}`.
    assert values["grafana"]["image"] == {"sha": "5e" * 32}
    assert values["grafana"]["adminPassword"] == ""


def test_where_the_chart_cannot_be_read_the_images_the_lock_held_are_read_again(
    registry: Registry, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    manifest = registry.push_image("grafana/grafana", "13.2.0", b"grafana again")
    reference = f"{registry.host}/grafana/grafana:13.2.0"
    previous = Lock(path=tmp_path / "gpu-platform.lock").with_entries(
        CHART_IMAGES, {f"kube-prometheus-stack@{VERSION}/grafana.image": entry_of(reference)}
    )
    monkeypatch.setattr(image_resolver, "platform_images", lambda config: [])
    monkeypatch.setattr(image_resolver, "PLAIN_HTTP_REGISTRIES", {registry.host})
    monkeypatch.setattr(image_resolver, "CREDENTIALS", lambda: no_credentials)
    stack: Any = SimpleNamespace(monitoring=SimpleNamespace(install_prometheus_stack=True))

    with serving({}, monkeypatch) as base:
        monkeypatch.setattr(
            image_resolver, "PROMETHEUS_STACK", HelmChart("kube-prometheus-stack", VERSION, base)
        )
        context = LockContext({"gke-dev": stack}, Sources(Deadline(20)), previous)
        resolution = image_resolver.resolve(context)

    (unread,) = resolution.unresolved
    assert (unread.section, unread.key, unread.blocking) == (CHART_IMAGES, None, True)
    assert unread.reason.endswith("index.yaml answered 404")
    assert resolution.entries[IMAGES][reference].value == sha256(manifest)


def resolve_chart(chart: Chart, monkeypatch: pytest.MonkeyPatch) -> Any:
    """What `lock` reads of the chart, served by a repository on loopback, without reading the
    images' digests."""
    stack: Any = SimpleNamespace(monitoring=SimpleNamespace(install_prometheus_stack=True))
    monkeypatch.setattr(image_resolver, "platform_images", lambda config: [])
    monkeypatch.setattr(image_resolver, "CREDENTIALS", lambda: no_credentials)
    resolution = image_resolver.Resolution()
    with serve_chart(chart, monkeypatch) as base:
        monkeypatch.setattr(
            image_resolver, "PROMETHEUS_STACK", HelmChart(chart.name, VERSION, f"{base}/charts")
        )
        sources = Sources(Deadline(20))
        image_resolver.chart_images_to_lock(
            LockContext({"gke-dev": stack}, sources),
            RegistryClient(sources, set()),
            resolution,
        )
    return resolution


def test_a_template_that_renders_the_digest_otherwise_fails_the_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Test data: kube-state-metrics' template as a release could change it, rendering
    # `@sha256:%s` of the same `sha`; the platform's full digest there would render
    # `@sha256:sha256:<hex>`.
    moved = STATE_METRICS_TEMPLATE.replace('"%s/%s:%s@%s"', '"%s/%s:%s@sha256:%s"')
    resolution = resolve_chart(prometheus_stack("quay.io", moved), monkeypatch)

    key = f"kube-prometheus-stack@{VERSION}/kube-state-metrics.image"
    assert [(u.key, u.blocking) for u in resolution.unresolved] == [(key, True)]
    assert "no template rendering the digest as" in resolution.unresolved[0].reason


def test_a_second_template_rendering_the_digest_otherwise_fails_the_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # grafana 12.11.1 templates/_pod.tpl renders the sidecar's image in 9 places, each behind
    # `{{- if .Values.sidecar.image.sha }}`; kube-prometheus-stack 88.5.3
    # alertmanager/alertmanager.yaml:32 also gives the digest to the resource's `sha:` field.
    # Test data: one of grafana's places rewritten to `@{{ sha }}`, which with the hex the
    # platform sets would render `...:<tag>@<hex>`.
    guarded = "{{- if .Values.sidecar.image.sha }}\n" + GRAFANA_TEMPLATE
    sha_field = "\n  sha: {{ .Values.alertmanager.alertmanagerSpec.image.sha }}"
    stack = prometheus_stack("quay.io")
    stack = replace(stack, templates={**STACK_TEMPLATES, "sha.yaml": sha_field})

    def with_grafana(template: str) -> Chart:
        return replace(
            stack,
            dependencies=[
                (replace(c, templates={"_pod.tpl": template}) if c.name == "grafana" else c, on)
                for c, on in stack.dependencies
            ],
        )

    assert resolve_chart(with_grafana(guarded), monkeypatch).unresolved == []
    moved = 'image: "{{ .Values.sidecar.image.repository }}@{{ .Values.sidecar.image.sha }}"'
    resolution = resolve_chart(with_grafana(f"{guarded}\n{moved}"), monkeypatch)

    assert [(u.key, u.blocking) for u in resolution.unresolved] == [
        (f"kube-prometheus-stack@{VERSION}/grafana.sidecar.image", True)
    ]
    assert "`{{ .Values.sidecar.image.sha }}` (grafana)" in resolution.unresolved[0].reason


def upstream_digest_lines() -> dict[str, str]:
    """Chart name -> the lines of its real templates that read a pinned image's digest value
    (upstream_digest_lines.txt, copied from the tags its headers name)."""
    lines: dict[str, list[str]] = {}
    chart = ""
    text = (Path(__file__).parent / "upstream_digest_lines.txt").read_text()
    for line in text.splitlines():
        if line.startswith("== "):
            chart = line.split()[1]
        elif not line.startswith("#"):
            lines.setdefault(chart, []).append(line.partition(":")[2])
    return {name: "\n".join(found) for name, found in lines.items()}


@pytest.mark.parametrize("rule", PINNED, ids=lambda rule: rule.path)
def test_the_real_templates_render_each_pinned_digest_as_its_rule_says(rule: PinnedImage) -> None:
    templates = upstream_digest_lines()[rule.chart]
    assert rule.fragment in templates
    assert image_resolver._other_rendering(rule, templates) is None


def test_a_pinned_image_that_lost_its_digest_key_or_left_the_chart_fails_the_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    chart = prometheus_stack("quay.io")
    values = dict(chart.values)
    values["alertmanager"] = {
        "alertmanagerSpec": {"image": {"registry": "quay.io", "repository": "a"}}
    }
    operator = dict(values["prometheusOperator"])
    del operator["thanosImage"]
    values["prometheusOperator"] = operator
    resolution = resolve_chart(replace(chart, values=values), monkeypatch)

    assert sorted((u.key, u.reason.split(" at ")[0]) for u in resolution.unresolved) == [
        (
            f"kube-prometheus-stack@{VERSION}/alertmanager.alertmanagerSpec.image",
            f"kube-prometheus-stack {VERSION} has no `sha` in the image",
        ),
        (
            f"kube-prometheus-stack@{VERSION}/prometheusOperator.thanosImage",
            f"kube-prometheus-stack {VERSION} has no image",
        ),
    ]


def test_an_image_map_the_parent_alone_gives_a_subchart_is_read() -> None:
    # kube-prometheus-stack-88.5.3 values.yaml:33-56: `crds.upgradeJob.image.{busybox,kubectl}`,
    # under the `crds` subchart, which has no values.yaml of its own.
    crds = Chart("crds", "0.0.0", "", {})
    parent = Chart(
        "parent",
        "1.0.0",
        "1.0.0",
        {"crds": {"upgradeJob": {"image": {"kubectl": image("registry.k8s.io", "kubectl")}}}},
        [(crds, None)],
    )

    found = chart_images(archive(parent), "parent")

    assert [(i.path, i.chart, i.values["repository"]) for i in found] == [
        ("crds.upgradeJob.image.kubectl", "crds", "kubectl")
    ]


def test_a_packed_subchart_is_its_own_archive_and_dependency_tags_are_honoured() -> None:
    # Two subcharts, one's name the other's and `-exporter` (test data): each is read from its
    # own `<name>-<version>.tgz`. Helm's tags (pkg/chartutil/dependencies.go): a tag set false
    # disables a subchart without a condition; a tag set true enables it; a tag set to other
    # than a bool counts as neither (processDependencyTags's `tagValue.(bool)`).
    node = Chart("node", "1.0.0", "1.0.0", {"image": image("r", "node")}, packed=True)
    exporter = Chart(
        "node-exporter", "2.0.0", "2.0.0", {"image": image("r", "exporter")}, packed=True
    )
    off = Chart("off", "1.0.0", "1.0.0", {"image": image("r", "off")})
    on = Chart("on", "1.0.0", "1.0.0", {"image": image("r", "on")})
    one = Chart("one", "1.0.0", "1.0.0", {"image": image("r", "one")})
    zero = Chart("zero", "1.0.0", "1.0.0", {"image": image("r", "zero")})
    parent = Chart(
        "parent",
        "1.0.0",
        "1.0.0",
        {"tags": {"extra": False, "wanted": True, "one": 1, "zero": 0}},
        [(node, None), (exporter, None), (off, None), (on, None), (one, None), (zero, None)],
        tags={
            "off": ["extra"],
            "on": ["extra", "wanted"],
            "one": ["extra", "one"],
            "zero": ["zero"],
        },
    )

    found = chart_images(archive(parent), "parent")

    assert [(i.path, i.values["repository"]) for i in found] == [
        ("node.image", "node"),
        ("node-exporter.image", "exporter"),
        ("on.image", "on"),
        ("zero.image", "zero"),
    ]


class StoredArtifact:
    """A registry holding one chart artifact (test data), as RegistryClient.read gives it."""

    def __init__(self, layers: list[dict[str, Any]], blob: bytes):
        self.manifest = json.dumps({"schemaVersion": 2, "layers": layers}).encode()
        self.blob = blob
        self.asked: list[str] = []

    def read(self, repository: str, path: str, accept: str) -> tuple[bytes, str]:
        self.asked.append(path)
        url = f"https://registry.example/v2/{repository}/{path}"
        return (self.manifest, url) if path.startswith("manifests/") else (self.blob, url)


def read_artifact(artifact: StoredArtifact, version: str = VERSION) -> tuple[bytes, str]:
    chart = HelmChart("kube-prometheus-stack", version, "oci://registry.example/charts")
    return fetch(Sources(Deadline(5)), cast(RegistryClient, artifact), chart)


def test_an_oci_chart_is_asked_for_by_the_tag_helm_pushes_and_its_blob_checked() -> None:
    content = b"test data: a chart archive"
    layer = {"mediaType": HELM_CHART_LAYER, "digest": sha256(content)}
    artifact = StoredArtifact([layer], content)
    # helm/helm pkg/registry/util.go, parseReference: `+` in a chart version is `_` in its tag.
    assert read_artifact(artifact, "1.2.3+build.4")[0] == content
    assert artifact.asked[0] == "manifests/1.2.3_build.4"

    with pytest.raises(ChartNotRead, match="holds no Helm chart layer"):
        read_artifact(StoredArtifact([{**layer, "mediaType": "application/octet-stream"}], content))
    with pytest.raises(ChartNotRead, match=f"is not the blob {sha256(content)}"):
        read_artifact(StoredArtifact([layer], b"test data: another archive"))


@pytest.fixture
def plan_warnings(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Callable[[Plan, Lock], str]:
    """What `gpu-platform plan` warns of, for a plan the program made, with a lock (the policy
    pack, which reads no lock, left out)."""

    def run(plan: Plan, lock: Lock) -> str:
        monkeypatch.setattr(offline_plan, "program_plan", lambda *args, **kwargs: plan)
        monkeypatch.setattr(offline_plan, "project_lock", lambda: lock)
        monkeypatch.setattr(
            offline_plan,
            "_pack_started_meanwhile",
            lambda *args: nullcontext(SimpleNamespace(start=None, started=lambda: None)),
        )
        monkeypatch.setattr(offline_plan, "_verdicts", lambda *args: [])
        plan_command.run(plan.stack)
        return "\n".join(
            line for line in capsys.readouterr().err.splitlines() if line.startswith("warning")
        )

    return run


@pytest.fixture
def prometheus_plan(shared_plan_for: Callable[[dict[str, Any]], Plan], dev_config: Any) -> Plan:
    dev_config["gpu-platform:monitoring"] = {"installPrometheusStack": True}
    return shared_plan_for(dev_config)


def test_the_plan_warns_of_the_pinned_images_the_lock_has_no_digest_for(
    tmp_path: Path, prometheus_plan: Plan, plan_warnings: Callable[[Plan, Lock], str]
) -> None:
    # A lock written before the chart's images were locked, or for other stacks only.
    never = Lock(path=tmp_path / "gpu-platform.lock")
    assert plan_warnings(prometheus_plan, never) == (
        "warning: gpu-platform.lock has no digest for any of the 11 images the platform pins"
        f" of kube-prometheus-stack {VERSION}, the pinned chart: they run by tag. Run"
        " `gpu-platform lock dev` to pin them."
    )
    # The lock read another release of the chart (its pin moved since).
    older = {"kube-prometheus-stack@88.5.3/grafana.image": entry_of("docker.io/grafana/grafana:1")}
    moved = never.with_entries(CHART_IMAGES, older)
    assert "the pinned chart (it holds those of 88.5.3): they run" in plan_warnings(
        prometheus_plan, moved
    )
    # All but one pinned: the one is named.
    references = pinned_references("quay.io")
    held = {f"kube-prometheus-stack@{VERSION}/{p}": entry_of(r) for p, r in references.items()}
    digests = {reference: entry_of(f"sha256:{'0' * 64}") for reference in references.values()}
    del digests["quay.io/thanos/thanos:v0.42.4"]
    partly = never.with_entries(CHART_IMAGES, held).with_entries(IMAGES, digests)
    assert "no digest for 1 of the 11 images: prometheusOperator.thanosImage the" in (
        plan_warnings(prometheus_plan, partly)
    )
    full = partly.with_entries(IMAGES, {"quay.io/thanos/thanos:v0.42.4": entry_of("sha256:1")})
    assert plan_warnings(prometheus_plan, full) == ""


def test_the_plan_of_a_stack_without_the_prometheus_stack_warns_of_none_of_its_images(
    tmp_path: Path, dev_plan: Plan, plan_warnings: Callable[[Plan, Lock], str]
) -> None:
    assert plan_warnings(dev_plan, Lock(path=tmp_path / "gpu-platform.lock")) == ""
