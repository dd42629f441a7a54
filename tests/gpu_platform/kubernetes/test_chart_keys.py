"""Every GPU Operator values key path the platform sets exists in the pinned chart, whose key
list is derived from the chart's values.yaml by a committed script."""

from pathlib import Path
from typing import Any

import pytest

from gpu_platform.cloud import pools_as_declared
from gpu_platform.config import load_stack_config
from gpu_platform.kubernetes import chart_keys
from gpu_platform.kubernetes.chart_keys import (
    chart_components,
    chart_key_paths,
    derive,
    key_list_file,
    key_paths,
)
from gpu_platform.kubernetes.operator_values import operator_values_for
from gpu_platform.versions import (
    EFA_DEVICE_PLUGIN_CHART,
    GPU_OPERATOR_CHART,
    GPU_OPERATOR_NFD_SUBCHART,
    KUBE_PROMETHEUS_STACK_NODE_EXPORTER_SUBCHART,
)
from tests.stack_variants import AL2023_RELEASE, BOTTLEROCKET_RELEASE

PINNED = GPU_OPERATOR_CHART.version

# Maps whose keys are the platform's names rather than the chart's: one device plugin config
# per sharing mode, and the labels Prometheus selects ServiceMonitors by.
USER_NAMED_MAPS = {"devicePlugin.config.data", "dcgmExporter.serviceMonitor.additionalLabels"}

SAMPLE_VALUES = """
driver:
  enabled: true
  env: []
  manager:
    version: v0.12.0
daemonsets:
  labels: {}
  tolerations:
  - {key: nvidia.com/gpu, operator: Exists}
extraObjects: []
"""


def test_key_paths_end_at_scalars_lists_and_empty_maps() -> None:
    values = {"a": {"b": 1, "c": [{"d": 2}], "e": {}}}

    assert sorted(key_paths(values)) == ["a.b", "a.c", "a.e"]


def test_key_paths_end_at_user_named_maps() -> None:
    values = {"config": {"data": {"exclusive": "version: v1"}}}

    assert list(key_paths(values, opaque={"config.data"})) == ["config.data"]


def test_derive_lists_the_sorted_leaf_paths_of_a_values_file() -> None:
    assert derive.derive(SAMPLE_VALUES) == [
        "daemonsets.labels",
        "daemonsets.tolerations",
        "driver.enabled",
        "driver.env",
        "driver.manager.version",
        "extraObjects",
    ]


def test_derive_writes_the_list_for_the_version_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    values = tmp_path / "values.yaml"
    values.write_text(SAMPLE_VALUES)
    monkeypatch.setattr(
        derive, "key_list_file", lambda version, chart: tmp_path / f"{chart}-{version}.txt"
    )

    derive.main(values, version="v1.2.3", chart="some-chart")

    assert (tmp_path / "some-chart-v1.2.3.txt").read_text().splitlines() == derive.derive(
        SAMPLE_VALUES
    )


def test_the_committed_key_list_is_the_pinned_chart_versions() -> None:
    lists = sorted(chart_keys.KEY_LISTS_DIR.glob("gpu-operator-*.txt"))

    assert [p.name.removeprefix("gpu-operator-").removesuffix(".txt") for p in lists] == [PINNED]


def test_the_committed_key_list_is_as_derive_writes_it() -> None:
    lines = key_list_file(PINNED).read_text().splitlines()

    assert lines == sorted(set(lines))
    assert all(line and " " not in line for line in lines)


def test_a_misspelt_key_path_is_not_in_the_key_list() -> None:
    assert "dcgmExporter.serviceMonitor.honorLabels" in chart_key_paths(PINNED)
    assert "dcgmExporter.serviceMonitor.honourLabels" not in chart_key_paths(PINNED)


def test_chart_components_are_the_top_level_maps() -> None:
    components = chart_components(PINNED)

    assert {"driver", "dcgmExporter", "node-feature-discovery"} <= components
    assert "extraObjects" not in components  # a list, not a component's values


def stack(cloud: str, node_image: str) -> dict[str, Any]:
    """A stack with a pool of every sharing mode the node image allows, and extra taints."""
    gcp = cloud == "gcp"
    location = {"project": "p", "location": "us-central1"} if gcp else {"region": "us-east-1"}
    t4 = "n1-standard-8" if gcp else "g4dn.xlarge"
    a100 = "a2-highgpu-1g" if gcp else "p4d.24xlarge"
    shared: list[dict[str, Any]] = [
        {"mode": "time-slicing", "replicas": 4},
        {"mode": "mps", "replicas": 2},
        {"mode": "mig", "profile": "all-1g.5gb"},
    ]
    # Bottlerocket's own device plugin and Ubuntu on GKE share no GPUs; GKE no GPU by MPS.
    shares = node_image not in ("bottlerocket", "ubuntu")
    allowed = [s for s in shared if not (gcp and s["mode"] == "mps")]
    sharings = [{"mode": "exclusive"}] + (allowed if shares else [])
    # EKS pools pin an AMI release of the node image.
    releases = {"al2023": AL2023_RELEASE, "bottlerocket": BOTTLEROCKET_RELEASE}
    aws = {} if gcp else {"aws": {"amiReleaseVersion": releases[node_image]}}
    return {
        "cloud": cloud,
        "cluster": {"name": "ml", "nodeImage": node_image, **location},
        "pools": [
            {
                "name": f"pool-{i}",
                "instanceTypes": [a100 if sharing["mode"] == "mig" else t4],
                "accelerator": "a100-40gb" if sharing["mode"] == "mig" else "t4",
                "gpusPerNode": 1,
                "max": 2,
                "taints": [{"key": "team", "value": f"t{i}", "effect": "NoSchedule"}],
                "sharing": sharing,
                **aws,
            }
            for i, sharing in enumerate(sharings)
        ],
        "monitoring": {"serviceMonitorLabels": {"release": "prometheus", "team": "ml"}},
    }


@pytest.mark.parametrize(
    ("cloud", "node_image"),
    [("aws", "al2023"), ("aws", "bottlerocket"), ("gcp", "cos"), ("gcp", "ubuntu")],
)
def test_every_key_path_the_platform_sets_exists_in_the_pinned_chart(
    cloud: str, node_image: str
) -> None:
    config = load_stack_config(stack(cloud, node_image))

    values = operator_values_for(
        config.operator, config.platform, pools_as_declared(config), config.monitoring
    )

    # Values under `node-feature-discovery` are the bundled subchart's, which Helm hands it.
    nfd = GPU_OPERATOR_NFD_SUBCHART
    known = chart_key_paths(PINNED) | {
        f"{nfd.name}.{path}" for path in chart_key_paths(nfd.version, nfd.name)
    }
    unknown = set(key_paths(values, opaque=USER_NAMED_MAPS)) - known
    assert not unknown, f"not in the {PINNED} chart: {sorted(unknown)}"


@pytest.mark.parametrize(
    ("chart", "version", "keys"),
    [
        # deployments/gpu-operator/charts/node-feature-discovery/values.yaml at v26.7.0.
        (
            "node-feature-discovery",
            "0.19.0",
            {"worker.tolerations", "worker.updateStrategy.rollingUpdate.maxUnavailable"},
        ),
        # charts/prometheus-node-exporter/values.yaml at prometheus-node-exporter-4.56.1.
        (
            "prometheus-node-exporter",
            "4.56.1",
            {"namespaceOverride", "updateStrategy.rollingUpdate.maxUnavailable"},
        ),
        # stable/aws-efa-k8s-device-plugin/values.yaml of chart v0.5.30.
        ("aws-efa-k8s-device-plugin", "v0.5.30", {"nodeSelector", "updateStrategy.type"}),
    ],
)
def test_the_committed_key_lists_of_the_other_charts_are_their_pinned_versions(
    chart: str, version: str, keys: set[str]
) -> None:
    pinned = {
        c.name: c.version
        for c in (
            GPU_OPERATOR_NFD_SUBCHART,
            KUBE_PROMETHEUS_STACK_NODE_EXPORTER_SUBCHART,
            EFA_DEVICE_PLUGIN_CHART,
        )
    }
    lists = sorted(chart_keys.KEY_LISTS_DIR.glob(f"{chart}-*.txt"))

    assert pinned[chart] == version
    assert [p.name for p in lists] == [f"{chart}-{version}.txt"]
    assert keys <= chart_key_paths(version, chart)
