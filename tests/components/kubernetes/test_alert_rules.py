"""The GPU alert rules and dashboard queries, checked by Prometheus's own promtool.

The rules are rendered exactly as the GpuMonitoring component ships them, from the default
settings, into a directory beside the promtool unit tests of `alert_tests/` (which load them as
`gpu-alerts.yaml`). promtool comes from Debian's `prometheus` package (or Prometheus's release
archive). Where it is missing these tests are skipped, saying so, so that the suite passes on a
fresh machine; CI sets GPU_PLATFORM_REQUIRE_PROMTOOL=1 and they fail instead, so no build passes
with alerts nobody has run.
"""

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.config import MonitoringSpec, OperatorSpec
from components.kubernetes.monitoring import alert_names, gpu_alert_rules, gpu_dashboard

ALERT_TESTS = Path(__file__).parent / "alert_tests"
UNIT_TESTS = sorted(ALERT_TESTS.glob("*.test.yaml"))
DEFAULT_OPERATOR_NAMESPACE = OperatorSpec().namespace

# The settings the unit tests' timings, thresholds and label values are written for.
SETTINGS_THE_UNIT_TESTS_ASSUME = {
    "idle_gpu_minutes": 30,
    "idle_gpu_utilization_percent": 5,
    "framebuffer_full_percent": 90,
}
OPERATOR_NAMESPACE_THE_UNIT_TESTS_ASSUME = "gpu-operator"
REQUIRE_PROMTOOL = "GPU_PLATFORM_REQUIRE_PROMTOOL"


def promtool(*args: str | Path) -> subprocess.CompletedProcess[str]:
    executable = shutil.which("promtool")
    if executable is None:
        missing = (
            "promtool is not on PATH: install Debian's `prometheus` package (apt-get install"
            " prometheus) or put promtool from a Prometheus release on PATH to run this test"
        )
        if os.environ.get(REQUIRE_PROMTOOL) == "1":
            pytest.fail(f"{missing} ({REQUIRE_PROMTOOL}=1)")
        pytest.skip(missing)
    return subprocess.run(
        [executable, *map(str, args)], capture_output=True, text=True, timeout=120, check=False
    )


def default_rules() -> dict[str, Any]:
    return gpu_alert_rules(MonitoringSpec(), DEFAULT_OPERATOR_NAMESPACE)


def write_default_rules(directory: Path) -> Path:
    path = directory / "gpu-alerts.yaml"
    path.write_text(yaml.safe_dump(default_rules(), sort_keys=False))
    return path


def test_the_unit_tests_are_written_for_the_default_settings() -> None:
    defaults = MonitoringSpec()
    assert {key: getattr(defaults, key) for key in SETTINGS_THE_UNIT_TESTS_ASSUME} == (
        SETTINGS_THE_UNIT_TESTS_ASSUME
    ), "a default changed: update alert_tests/ to match, then this test"
    assert DEFAULT_OPERATOR_NAMESPACE == OPERATOR_NAMESPACE_THE_UNIT_TESTS_ASSUME


def test_the_rendered_rules_are_a_valid_rules_file(tmp_path: Path) -> None:
    result = promtool("check", "rules", write_default_rules(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("unit_test", UNIT_TESTS, ids=lambda path: path.name)
def test_alerts_fire_as_the_unit_tests_expect(unit_test: Path, tmp_path: Path) -> None:
    write_default_rules(tmp_path)
    shutil.copy(unit_test, tmp_path)
    result = promtool("test", "rules", tmp_path / unit_test.name)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_alert_has_a_firing_and_a_quiet_case() -> None:
    firing: set[str] = set()
    quiet: set[str] = set()
    for unit_test in UNIT_TESTS:
        for case in yaml.safe_load(unit_test.read_text())["tests"]:
            for check in case.get("alert_rule_test", []):
                (firing if check["exp_alerts"] else quiet).add(check["alertname"])
    names = set(alert_names(default_rules()))
    assert names - firing == set(), "alerts no unit test sees fire"
    assert names - quiet == set(), "alerts no unit test sees stay quiet"


def test_thresholds_and_namespace_come_from_the_settings() -> None:
    settings = MonitoringSpec.model_validate(
        {"idleGpuMinutes": 10, "idleGpuUtilizationPercent": 20, "framebufferFullPercent": 75}
    )
    rules = {
        rule.get("alert", rule.get("record")): rule
        for rule in gpu_alert_rules(settings, "nvidia")["groups"][0]["rules"]
    }
    idle = rules["GpuAllocatedButIdle"]
    assert idle["for"] == "10m"
    assert idle["expr"].strip().endswith(" < 20")
    assert 'namespace!="nvidia"' in rules["gpu_platform:allocated_gpu_activity:percent"]["expr"]
    assert "below 20% utilisation for 10 minutes" in idle["annotations"]["description"]
    assert rules["GpuFramebufferNearlyFull"]["expr"].strip().endswith("> 75")
    assert 'namespace="nvidia"' in rules["DcgmExporterMissing"]["expr"]


def test_dashboard_queries_are_valid_promql(tmp_path: Path) -> None:
    # promtool parses PromQL only inside rule files: each query becomes a recording rule, with
    # Grafana's variables replaced by what they expand to when everything is selected.
    dashboard = yaml.safe_load(gpu_dashboard(MonitoringSpec(), DEFAULT_OPERATOR_NAMESPACE))
    queries = [
        target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", [])
    ]
    assert queries
    rules = [
        {"record": f"dashboard:query_{i}", "expr": re.sub(r"\$\w+", ".*", query)}
        for i, query in enumerate(queries)
    ]
    path = tmp_path / "dashboard-queries.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    result = promtool("check", "rules", path)
    assert result.returncode == 0, result.stdout + result.stderr
