"""`gpu-platform preflight` whatever the cloud: the stack file read before any cloud is asked, and
the chart version against the chart repository's index."""

import copy
import http.server
import threading
from typing import Any

import pytest
from typer.testing import CliRunner

from gpu_platform.cli.app import app
from gpu_platform.config import StackConfig, load_stack_config
from gpu_platform.deadline import Deadline
from gpu_platform.preflight import chart, check
from gpu_platform.stack_files import stack_config

# The real reader, kept before the `chart_repository` fixture (conftest.py) replaces it.
READ_CHART_INDEX = chart.read_chart_index


# --- The stack file --------------------------------------------------------------------------


def test_the_command_reports_a_bad_stack_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(check, "stack_config", lambda stack: {"gpu-platform:cloud": "aws"})

    result = CliRunner().invoke(app, ["preflight", "broken"])

    assert result.exit_code == 2
    assert "gpu-platform:cluster" in result.output


def test_a_bad_value_that_looks_like_markup_is_printed_as_written(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stack = {"gpu-platform:cloud": "aws", "gpu-platform:cluster": {"name": "ml", "regio": "[/red]"}}
    monkeypatch.setattr(check, "stack_config", lambda stack_name: stack)

    result = CliRunner().invoke(app, ["preflight", "dev"])

    assert result.exit_code == 2
    assert 'gpu-platform:cluster.regio: got "[/red]"' in result.output


def test_a_secret_keys_bad_value_is_not_printed(monkeypatch: pytest.MonkeyPatch) -> None:
    stack = {
        "gpu-platform:cloud": "aws",
        "gpu-platform:cluster": {"name": "ml", "region": {"secure": "v1:ciphertext"}, "x": 1},
    }
    monkeypatch.setattr(check, "stack_config", lambda stack_name: stack)

    result = CliRunner().invoke(app, ["preflight", "dev"])

    assert result.exit_code == 2
    assert "gpu-platform:cluster.x" in result.output
    assert "offline-plan-secret" not in result.output and "ciphertext" not in result.output


# --- The GPU Operator chart ------------------------------------------------------------------


def operator_chart(version: str) -> StackConfig:
    values = copy.deepcopy(stack_config("dev"))
    values["gpu-platform:operator"] = {"chartVersion": version}
    prefix = "gpu-platform:"
    return load_stack_config(
        {k.removeprefix(prefix): v for k, v in values.items() if k.startswith(prefix)}
    )


def test_a_chart_version_the_repository_serves_is_fine(chart_repository: list[str]) -> None:
    (finding,) = chart.chart_findings(operator_chart("v25.10.1"), Deadline(30))

    assert finding.severity == "ok"
    assert chart_repository == ["https://helm.ngc.nvidia.com/nvidia"]


def test_a_chart_version_the_repository_does_not_serve_blocks() -> None:
    (finding,) = chart.chart_findings(operator_chart("v26.9.0"), Deadline(30))

    assert finding.blocking
    assert "serves no gpu-operator v26.9.0 (2 other versions)" in finding.message
    assert "gpu-platform:operator.chartVersion" in finding.action


def test_an_unreadable_index_is_a_warning_not_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    def unreachable(repository: str, timeout: float) -> bytes:
        raise OSError("Connection refused")

    monkeypatch.setattr(chart, "read_chart_index", unreachable)

    (finding,) = chart.chart_findings(operator_chart("v26.7.0"), Deadline(30))

    assert finding.severity == "warning"
    assert "Connection refused" in finding.message


def test_a_repository_that_does_not_answer_by_the_deadline_is_a_warning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    never = threading.Event()
    monkeypatch.setattr(chart, "read_chart_index", lambda repository, timeout: never.wait(30))

    (finding,) = chart.chart_findings(operator_chart("v26.7.0"), Deadline(1))
    never.set()

    assert finding.severity == "warning"
    assert finding.message == (
        "Could not read https://helm.ngc.nvidia.com/nvidia/index.yaml: no answer within the 1 s"
        " deadline."
    )


def test_the_index_is_read_from_the_repository_as_helm_reads_it() -> None:
    index = b"apiVersion: v1\nentries: {}\n"

    class Index(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = index if self.path == "/charts/index.yaml" else b""
            self.send_response(200 if body else 404)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Index)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        served = READ_CHART_INDEX(f"http://127.0.0.1:{server.server_port}/charts/", 5)
    finally:
        server.shutdown()

    assert served == index
