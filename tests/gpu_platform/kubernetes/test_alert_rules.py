"""The GPU alert rules and dashboard queries, checked by Prometheus's own promtool, against the
exporter's metric set (gpu_platform/kubernetes/alerts/dcgm-metrics.csv) and NVIDIA's XID catalog
as derived into xid-classes.json.

The rules are rendered exactly as the GpuMonitoring component ships them, from the default
settings, into a directory beside the promtool unit tests of `alert_tests/` (which load them as
`gpu-alerts.yaml`). promtool comes from Debian's `prometheus` package (or Prometheus's release
archive). Where it is missing these tests are skipped, saying so, so that the suite passes on a
fresh machine; CI sets GPU_PLATFORM_REQUIRE_PROMTOOL=1 and they fail instead, so no build passes
with alerts nobody has run.
"""

import csv
import os
import re
import shutil
import subprocess
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_platform.config import MonitoringSpec, OperatorSpec
from gpu_platform.kubernetes.alerts import DCGM_METRICS_FILE, XidClass, xid_classes
from gpu_platform.kubernetes.gpu_hours import PoolGpuShare
from gpu_platform.kubernetes.monitoring import alert_names, gpu_alert_rules, gpu_dashboard
from tests.repository import ROOT

ALERT_TESTS = Path(__file__).parent / "alert_tests"
UNIT_TESTS = sorted(ALERT_TESTS.glob("*.test.yaml"))
DEFAULT_OPERATOR_NAMESPACE = OperatorSpec().namespace

# The settings the unit tests' timings, thresholds and label values are written for.
SETTINGS_THE_UNIT_TESTS_ASSUME = {
    "idle_gpu_minutes": 30,
    "idle_gpu_utilization_percent": 5,
    "framebuffer_full_percent": 90,
    "team_label": "team",
    "team_idle_gpu_percent": 50,
}
# The pools the GPU-hour unit tests' nodes belong to (alert_tests/gpu_hours.test.yaml).
UNIT_TEST_POOL_SHARES = [
    PoolGpuShare("h100", "nvidia.com/gpu", Fraction(1)),
    PoolGpuShare("l4-shared", "nvidia.com/gpu", Fraction(1, 4)),
    PoolGpuShare("a100-mig", "nvidia.com/mig-3g.40gb", Fraction(1, 2)),
]
OPERATOR_NAMESPACE_THE_UNIT_TESTS_ASSUME = "gpu-operator"
# The longest a new node may take to be validated that the unit tests are written for: a one-GPU
# pool at level 1, 900 s for the node's start, 300 for the validation pod's, 60 + 60 for
# `nvidia-smi`, 300 to pull DCGM's image and 300 for `dcgmi diag -r 1` (duration.py); 32 minutes.
UNTIL_VALIDATED_THE_UNIT_TESTS_ASSUME = 900 + 300 + 60 + 60 + 300 + 300
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
    return gpu_alert_rules(
        MonitoringSpec(),
        DEFAULT_OPERATOR_NAMESPACE,
        UNIT_TEST_POOL_SHARES,
        UNTIL_VALIDATED_THE_UNIT_TESTS_ASSUME,
    )


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


def test_the_team_label_and_idle_share_come_from_the_settings() -> None:
    settings = MonitoringSpec.model_validate(
        {"teamLabel": "example.com/costCenter", "teamIdleGpuPercent": 75}
    )
    (group,) = [
        group
        for group in gpu_alert_rules(settings, "nvidia")["groups"]
        if group["name"] == "gpu-platform.gpu-hours"
    ]
    rules = {rule.get("alert", rule.get("record")): rule for rule in group["rules"]}

    # kube-state-metrics v2.20.0 internal/store/utils.go, `labelName`: `label_`, the key
    # sanitised, then snake case in lower case.
    assert (
        'kube_namespace_labels{label_example_com_cost_center!=""}'
        in (rules["gpu_platform:namespace_team:info"]["expr"])
    )
    assert rules["GpuTeamAllocatedButIdle"]["expr"].strip().endswith("* 100 > 75")


def test_each_pool_opens_the_gpu_hour_rules_with_what_its_unit_is_worth() -> None:
    (group,) = [g for g in default_rules()["groups"] if g["name"] == "gpu-platform.gpu-hours"]

    assert group["rules"][:3] == [
        {
            "record": "gpu_platform:pool_gpus_per_request",
            "expr": "vector(1)",
            "labels": {"pool": "h100", "resource": "nvidia_com_gpu"},
        },
        {
            "record": "gpu_platform:pool_gpus_per_request",
            "expr": "vector(1 / 4)",
            "labels": {"pool": "l4-shared", "resource": "nvidia_com_gpu"},
        },
        {
            "record": "gpu_platform:pool_gpus_per_request",
            "expr": "vector(1 / 2)",
            "labels": {"pool": "a100-mig", "resource": "nvidia_com_mig_3g_40gb"},
        },
    ]


def test_dashboard_queries_are_valid_promql(tmp_path: Path) -> None:
    # promtool parses PromQL only inside rule files: each query becomes a recording rule, with
    # Grafana's variables replaced by what they expand to when everything is selected.
    dashboard = yaml.safe_load(gpu_dashboard(MonitoringSpec(), DEFAULT_OPERATOR_NAMESPACE))
    queries = [
        target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", [])
    ]
    assert queries
    rules = [
        {
            "record": f"dashboard:query_{i}",
            "expr": re.sub(r"\$\w+", ".*", query.replace("$__range", "1d")),
        }
        for i, query in enumerate(queries)
    ]
    path = tmp_path / "dashboard-queries.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    result = promtool("check", "rules", path)
    assert result.returncode == 0, result.stdout + result.stderr


# --- The exporter's metric set --------------------------------------------------------------

KNOWN_FIELDS = ALERT_TESTS / "dcgm-known-fields.txt"
DEFAULT_METRICS = ALERT_TESTS / "dcgm-default-metrics.txt"
# The Prometheus types both exporter versions accept in the CSV: 4.5.3-4.8.2 takes gauge,
# counter, histogram, summary and label (internal/pkg/counters/variables.go); newer releases
# counter, gauge, untyped and label.
ACCEPTED_TYPES = {"gauge", "counter", "label"}


def metric_set_rows(text: str) -> list[list[str]]:
    """The CSV's rows as the exporter reads them: Go's encoding/csv with `#` comments and blank
    lines skipped, then every field trimmed of spaces (counter_config.go, `ExtractCounters`)."""
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    return [[field.strip(" ") for field in row] for row in csv.reader(lines, strict=True)]


def text_rows(rows: list[list[str]]) -> list[str]:
    return [row[0] for row in rows if row[1] != "label"]


def listed(path: Path) -> set[str]:
    return {line for line in path.read_text().splitlines() if not line.startswith("#")}


CSV_ROWS = metric_set_rows(DCGM_METRICS_FILE.read_text())
COLLECTED = set(text_rows(CSV_ROWS))


def test_the_csv_reader_skips_comments_and_trims_fields_as_the_exporter_does() -> None:
    text = "# Clocks, in MHz\n\nDCGM_FI_DEV_SM_CLOCK,  gauge, SM clock frequency (in MHz).\n"

    assert metric_set_rows(text) == [
        ["DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."]
    ]


def test_every_row_of_the_metric_set_is_a_field_a_type_and_a_help_text() -> None:
    # A fourth field (a comma in the help text) stops the exporter; so does a bare quote.
    assert [row for row in CSV_ROWS if len(row) != 3 or not all(row)] == []
    assert '"' not in DCGM_METRICS_FILE.read_text()


def test_every_row_has_a_type_every_exporter_version_accepts() -> None:
    assert {row[0]: row[1] for row in CSV_ROWS if row[1] not in ACCEPTED_TYPES} == {}


def test_every_field_of_the_metric_set_is_one_the_exporter_knows() -> None:
    # An unknown name makes the exporter exit (pkg/cmd/app.go, getCounters): no GPU metrics.
    names = [row[0] for row in CSV_ROWS]

    assert len(names) == len(set(names)), "a field listed twice"
    assert set(names) - listed(KNOWN_FIELDS) == set()


def test_the_metric_set_keeps_every_metric_the_exporter_collects_by_default() -> None:
    assert listed(DEFAULT_METRICS) - COLLECTED == set()


def test_the_metric_set_adds_the_health_fields() -> None:
    assert COLLECTED - listed(DEFAULT_METRICS) == {
        "DCGM_EXP_XID_ERRORS_COUNT",
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
        "DCGM_FI_DEV_ENFORCED_POWER_LIMIT",
        "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
        "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
        "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
        "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
        "DCGM_FI_DEV_PCIE_LINK_GEN",
        "DCGM_FI_DEV_PCIE_LINK_WIDTH",
        "DCGM_FI_DEV_POWER_VIOLATION",
        "DCGM_FI_DEV_RETIRED_PENDING",
        "DCGM_FI_DEV_ROW_REMAP_PENDING",
        "DCGM_FI_DEV_THERMAL_VIOLATION",
    }


def test_the_metric_set_holds_no_helm_template() -> None:
    # The chart renders `extraObjects`, the ConfigMap that carries the set, through `tpl`.
    assert "{{" not in DCGM_METRICS_FILE.read_text()


# --- Which metrics the rules read --------------------------------------------------------------

_STRING = re.compile(r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|`[^`]*`")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_MATCHERS = re.compile(r"\{[^}]*\}")
_RANGE = re.compile(r"\[[^\]]*\]")
_NAME = re.compile(r"(?<![\w:.])[A-Za-z_:][\w:]*")
_KEYWORDS = {"and", "or", "unless", "offset", "bool", "atan2", "inf", "nan"}


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects: names outside strings, label matchers,
    ranges and grouping label lists that are neither keywords nor called (functions and
    aggregations). Enough for the platform's rules; not a PromQL parser."""
    text = _STRING.sub('""', expr)
    for pattern in (_MATCHERS, _RANGE, _GROUPING):
        text = pattern.sub(" ", text)
    return {
        match[0]
        for match in _NAME.finditer(text)
        if match[0] not in _KEYWORDS and not text[match.end() :].lstrip().startswith("(")
    }


def test_metric_names_are_the_selectors_not_their_label_names_or_values() -> None:
    expr = 'DCGM_FI_DEV_GPU_UTIL{job="nvidia-dcgm-exporter", gpu=~"1|2", pod!=""} > 0'

    assert metric_names(expr) == {"DCGM_FI_DEV_GPU_UTIL"}


def test_metric_names_leave_out_functions_aggregations_and_their_label_lists() -> None:
    expr = "max by (Hostname, gpu) (rate(DCGM_FI_DEV_POWER_VIOLATION[10m])) / 1e9 >= 0.25"

    assert metric_names(expr) == {"DCGM_FI_DEV_POWER_VIOLATION"}


def test_metric_names_take_recorded_names_and_leave_out_keywords_and_durations() -> None:
    expr = "gpu_platform:gpu_activity:percent >= 50 and on (gpu) up offset 1h unless absent_x"

    assert metric_names(expr) == {"gpu_platform:gpu_activity:percent", "up", "absent_x"}


def test_metric_names_leave_out_strings() -> None:
    expr = 'label_replace(DCGM_FI_DEV_GPU_TEMP, "cause", "DCGM_FI_DEV_FAKE", "", "")'

    assert metric_names(expr) == {"DCGM_FI_DEV_GPU_TEMP"}


def rule_expressions() -> list[str]:
    return [rule["expr"] for group in default_rules()["groups"] for rule in group["rules"]]


def test_the_rules_read_these_dcgm_metrics() -> None:
    read = set().union(*map(metric_names, rule_expressions()))

    assert {name for name in read if name.startswith("DCGM_")} == {
        "DCGM_EXP_XID_ERRORS_COUNT",
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
        "DCGM_FI_DEV_ENFORCED_POWER_LIMIT",
        "DCGM_FI_DEV_FB_FREE",
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_GPU_TEMP",
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
        "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
        "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
        "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
        "DCGM_FI_DEV_PCIE_LINK_GEN",
        "DCGM_FI_DEV_PCIE_LINK_WIDTH",
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
        "DCGM_FI_DEV_POWER_USAGE",
        "DCGM_FI_DEV_POWER_VIOLATION",
        "DCGM_FI_DEV_RETIRED_PENDING",
        "DCGM_FI_DEV_ROW_REMAP_FAILURE",
        "DCGM_FI_DEV_ROW_REMAP_PENDING",
        "DCGM_FI_DEV_THERMAL_VIOLATION",
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
    }


def test_every_dcgm_metric_a_rule_reads_is_in_the_metric_set() -> None:
    read = set().union(*map(metric_names, rule_expressions()))

    assert {name for name in read if name.startswith("DCGM_")} - COLLECTED == set()


def test_every_dcgm_metric_the_dashboard_reads_is_in_the_metric_set() -> None:
    dashboard = yaml.safe_load(gpu_dashboard(MonitoringSpec(), DEFAULT_OPERATOR_NAMESPACE))
    queries = [t["expr"] for panel in dashboard["panels"] for t in panel.get("targets", [])]
    read = set().union(*map(metric_names, queries))

    assert {name for name in read if name.startswith("DCGM_")} - COLLECTED == set()


# --- XIDs by class ---------------------------------------------------------------------------

XID_ALERTS: dict[XidClass, str] = {
    "application": "GpuXidApplicationError",
    "reset": "GpuXidNeedsReset",
    "replace": "GpuXidNeedsReplacement",
}


def alert_expr(name: str) -> str:
    (expr,) = [
        rule["expr"]
        for group in default_rules()["groups"]
        for rule in group["rules"]
        if rule.get("alert") == name
    ]
    return str(expr)


def xid_matcher(expr: str, operator: str) -> list[int]:
    (codes,) = re.findall(rf'xid{re.escape(operator)}"([0-9|]+)"', expr)
    return [int(code) for code in codes.split("|")]


@pytest.mark.parametrize(("xid_class", "alert"), XID_ALERTS.items())
def test_each_xid_alert_matches_the_codes_of_its_class_in_the_derived_table(
    xid_class: XidClass, alert: str
) -> None:
    table = xid_classes()

    assert xid_matcher(alert_expr(alert), "=~") == table[xid_class]


def test_the_unclassified_xid_alert_leaves_out_every_classified_code_and_no_xid() -> None:
    table = xid_classes()
    classified = sorted([0, *(code for codes in table.values() for code in codes)])

    assert xid_matcher(alert_expr("GpuXidUnclassified"), "!~") == classified


def test_a_contained_ecc_error_is_the_applications_and_not_a_hardware_fault() -> None:
    # XID 94: "these errors are contained to one application, and the application that
    # encountered this error must be restarted" (NVIDIA's XID catalog, RESTART_APP).
    assert 94 in xid_matcher(alert_expr("GpuXidApplicationError"), "=~")
    assert 94 not in xid_matcher(alert_expr("GpuXidNeedsReset"), "=~")
    assert 94 not in xid_matcher(alert_expr("GpuXidNeedsReplacement"), "=~")


@pytest.mark.parametrize(
    ("code", "alert"),
    [
        (13, "GpuXidApplicationError"),
        (31, "GpuXidApplicationError"),
        (48, "GpuXidNeedsReset"),
        (79, "GpuXidNeedsReset"),
        (95, "GpuXidNeedsReset"),
        (119, "GpuXidNeedsReset"),
        (54, "GpuXidNeedsReplacement"),
    ],
)
def test_well_known_xids_alert_as_the_catalog_classes_them(code: int, alert: str) -> None:
    assert code in xid_matcher(alert_expr(alert), "=~")


@pytest.mark.parametrize("code", [43, 45, 63, 92])
def test_codes_the_catalog_says_to_ignore_raise_no_alert(code: int) -> None:
    for alert in XID_ALERTS.values():
        assert code not in xid_matcher(alert_expr(alert), "=~")
    assert code in xid_matcher(alert_expr("GpuXidUnclassified"), "!~")


NOT_HEALTH = ("gpu-platform.gpus", "gpu-platform.gpu-hours")


def runbook_urls() -> dict[str, str]:
    return {
        rule["alert"]: rule["annotations"]["runbook_url"]
        for group in default_rules()["groups"]
        for rule in group["rules"]
        if "runbook_url" in rule.get("annotations", {})
    }


def test_every_health_alert_links_to_its_own_section_of_the_runbook() -> None:
    health = alert_names(
        {"groups": [g for g in default_rules()["groups"] if g["name"] not in NOT_HEALTH]}
    )

    assert runbook_urls() == {
        name: f"docs/gpu-health.md#{name.lower()}"
        for name in [*health, "DcgmExporterHealthMetricsMissing"]
    }


def test_the_runbook_has_the_section_every_runbook_url_links_to() -> None:
    runbook = (ROOT / "docs" / "gpu-health.md").read_text()
    # GitHub's anchor of a heading that is one word: the word in lower case.
    sections = {line[3:].strip().lower() for line in runbook.splitlines() if line[:3] == "## "}

    assert {url.partition("#")[2] for url in runbook_urls().values()} - sections == set()
