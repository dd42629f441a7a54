"""The node validator's decisions, against outputs in the formats NVIDIA's tools publish:
`nvidia-smi -q -x` (the element names of nvsmi_device_v12.dtd, shipped with the driver),
`nvidia-smi nvlink --status`, `dcgmi diag -j` of DCGM 4 (NVIDIA/DCGM
testing/python3/dcgm_diag_schema.json) and nccl-tests' `all_reduce_perf` (NVIDIA/nccl-tests
src/common.cu). The files under data/ say what each is."""

import json
import sys
from pathlib import Path
from typing import Any, get_args

import pytest

from gpu_platform.accelerators import ACCELERATORS
from gpu_platform.config.pools import ValidationCheck
from gpu_platform.kubernetes.node_validation import validate
from gpu_platform.kubernetes.node_validation.expectations import NVLINK_LINKS
from gpu_platform.kubernetes.node_validation.validate import (
    Result,
    ToolFailed,
    dcgm_diag,
    driver,
    ecc,
    efa,
    gpu_count,
    memory,
    nccl_bandwidth,
    nvlink,
    parse_smi,
    pcie,
)

DATA = Path(__file__).with_name("data")
SMI = (DATA / "nvidia_smi_h100x8.xml").read_text()
NVLINK = (DATA / "nvlink_status_h100x8.txt").read_text()
NCCL = (DATA / "all_reduce_perf_h100x8.txt").read_text()
NCCL_LOW = (DATA / "all_reduce_perf_low.txt").read_text()
DIAG = json.loads((DATA / "dcgm_diag_passing.json").read_text())
DIAG_FAILED = json.loads((DATA / "dcgm_diag_failed.json").read_text())
DRIVER = "595.91.07"
# p5.48xlarge: 8 x H100 and 32 EFA interfaces (EC2's accelerated computing instance table).
P5_EFA = [f"rdmap{n}s0" for n in range(32)]
# The fixture's largest message reaches 274.51 GB/s of bus bandwidth.
EXPECTED_BUSBW = 300.0


def gpu_element(xml: str, bus: str) -> str:
    start = xml.index(f'<gpu id="00000000:{bus}:00.0">')
    return xml[start : xml.index("</gpu>", start) + len("</gpu>")]


def on_gpu(bus: str, old: str, new: str) -> str:
    """The fixture with `old` replaced by `new` in the GPU at PCI bus `bus` only."""
    element = gpu_element(SMI, bus)
    assert old in element
    return SMI.replace(element, element.replace(old, new))


def test_a_whole_h100_node_passes_every_check() -> None:
    smi = parse_smi(SMI)
    results = [
        gpu_count(smi, 8),
        driver(smi, DRIVER),
        ecc(smi),
        memory(smi),
        pcie(smi),
        nvlink(NVLINK, 18),
        dcgm_diag(DIAG),
        nccl_bandwidth(NCCL, EXPECTED_BUSBW, 0.8),
        efa(P5_EFA, 32),
    ]
    assert [r for r in results if not r.passed] == []


def test_seven_of_eight_gpus_fails_the_count() -> None:
    smi = parse_smi(SMI.replace(gpu_element(SMI, "9A"), ""))
    assert gpu_count(smi, 8) == Result(
        "gpu-count", False, "7 GPUs, the instance or machine type has 8"
    )


def test_another_driver_fails() -> None:
    result = driver(parse_smi(SMI.replace(DRIVER, "580.105.08")), DRIVER)
    assert result == Result("driver", False, f"driver 580.105.08, the pool pins {DRIVER}")


def test_ecc_off_on_one_gpu_fails_naming_it() -> None:
    xml = on_gpu("5D", "<current_ecc>Enabled</current_ecc>", "<current_ecc>Disabled</current_ecc>")
    assert ecc(parse_smi(xml)) == Result("ecc", False, "GPU 00000000:5D:00.0 ECC Disabled")


def test_a_gpu_without_ecc_passes() -> None:
    # nvidia-smi prints N/A for a GPU that has no ECC at all.
    xml = SMI.replace("<current_ecc>Enabled</current_ecc>", "<current_ecc>N/A</current_ecc>")
    assert ecc(parse_smi(xml)).passed


@pytest.mark.parametrize(
    ("old", "new", "reason"),
    [
        (
            "<remapped_row_pending>No</remapped_row_pending>",
            "<remapped_row_pending>Yes</remapped_row_pending>",
            "GPU 00000000:AB:00.0 has a row remapping pending (it needs a reset)",
        ),
        (
            "<remapped_row_failure>No</remapped_row_failure>",
            "<remapped_row_failure>Yes</remapped_row_failure>",
            "GPU 00000000:AB:00.0 has failed to remap a row",
        ),
        (
            "<pending_retirement>N/A</pending_retirement>",
            "<pending_retirement>Yes</pending_retirement>",
            "GPU 00000000:AB:00.0 has a page retirement pending",
        ),
    ],
)
def test_pending_or_failed_memory_repairs_fail(old: str, new: str, reason: str) -> None:
    assert memory(parse_smi(on_gpu("AB", old, new))) == Result("memory", False, reason)


@pytest.mark.parametrize(("single", "double", "passed"), [("60", "2", True), ("60", "3", False)])
def test_retired_pages_fail_at_dcgms_limit(single: str, double: str, passed: bool) -> None:
    # NVIDIA/DCGM common/DcgmGPUHardwareLimits.h: DCGM_LIMIT_MAX_RETIRED_PAGES 63, and its
    # software test fails a GPU whose single- and double-bit retired pages reach it.
    counts = "<retired_count>N/A</retired_count>"
    element = gpu_element(SMI, "18")
    changed = element.replace(counts, f"<retired_count>{single}</retired_count>", 1)
    changed = changed.replace(counts, f"<retired_count>{double}</retired_count>", 1)
    assert memory(parse_smi(SMI.replace(element, changed))).passed is passed


@pytest.mark.parametrize(
    ("old", "new", "reason"),
    [
        (
            "<current_link_width>16x</current_link_width>",
            "<current_link_width>8x</current_link_width>",
            "GPU 00000000:BA:00.0 PCIe link width 8x of 16x",
        ),
        (
            "<current_link_gen>5</current_link_gen>",
            "<current_link_gen>1</current_link_gen>",
            "GPU 00000000:BA:00.0 PCIe link generation 1 of 5",
        ),
    ],
)
def test_a_degraded_pcie_link_fails_on_a_busy_gpu_only(old: str, new: str, reason: str) -> None:
    # nvidia-smi's documentation of the current link generation and width (`nvidia-smi
    # --help-query-gpu`, pcie.link.gen.gpucurrent and pcie.link.width.current): "These may be
    # reduced when the GPU is not in use."
    degraded = on_gpu("BA", old, new)
    assert pcie(parse_smi(degraded)) == Result("pcie", False, reason)
    element = gpu_element(degraded, "BA")
    idle = element.replace("<performance_state>P0<", "<performance_state>P8<")
    assert pcie(parse_smi(degraded.replace(element, idle))).passed


def test_an_inactive_nvlink_fails() -> None:
    gpu3 = NVLINK.index("GPU 3:")
    link7 = NVLINK.index("Link 7: 26.562 GB/s", gpu3)
    status = NVLINK[:link7] + "Link 7: <inactive>" + NVLINK[link7 + len("Link 7: 26.562 GB/s") :]
    assert nvlink(status, 18) == Result("nvlink", False, "GPU 3 17 active links, the model has 18")


def test_a_failed_diagnostic_fails_naming_test_and_gpu() -> None:
    assert dcgm_diag(DIAG_FAILED) == Result(
        "dcgm-diag", False, "memory failed on GPU 5: Memory error detected on GPU 5"
    )


def test_a_diagnostic_runtime_error_fails() -> None:
    report = {"DCGM Diagnostic": {"runtime_error": "Unable to connect to the host engine"}}
    assert dcgm_diag(report) == Result(
        "dcgm-diag", False, "dcgmi diag failed: Unable to connect to the host engine"
    )


def test_low_bus_bandwidth_fails() -> None:
    assert nccl_bandwidth(NCCL_LOW, EXPECTED_BUSBW, 0.8) == Result(
        "nccl-bandwidth",
        False,
        "bus bandwidth 68.63 GB/s at 8589934592 bytes, below 240 GB/s (0.8 of the expected 300)",
    )


def test_wrong_all_reduce_values_fail() -> None:
    # The last column of a row is the in-place `#wrong` count.
    wrong = NCCL.replace("274.51      0", "274.51      3")
    assert nccl_bandwidth(wrong, EXPECTED_BUSBW, 0.8) == Result(
        "nccl-bandwidth", False, "wrong values at sizes 8589934592 bytes"
    )


def test_a_missing_efa_device_fails() -> None:
    assert efa(P5_EFA[:-1], 32) == Result(
        "efa", False, f"31 EFA devices ({', '.join(sorted(P5_EFA[:-1]))}), the instance type has 32"
    )


def test_a_tool_past_its_timeout_fails_its_check() -> None:
    with pytest.raises(ToolFailed, match=r"timed out after 0\.2s"):
        validate.run([sys.executable, "-c", "import time; time.sleep(30)"], 0.2)


def env(**overrides: str) -> dict[str, str]:
    return {
        "EXPECTED_GPUS": "8",
        "DRIVER_VERSION": DRIVER,
        "EXPECTED_NVLINKS": "18",
        "EXPECTED_BUSBW_GBPS": str(EXPECTED_BUSBW),
        "EXPECTED_EFA_DEVICES": "32",
        **overrides,
    }


def node(monkeypatch: pytest.MonkeyPatch, outputs: dict[str, str]) -> list[list[str]]:
    """The node's tools answering `outputs` (by tool name, `nvidia-smi nvlink` for the NVLink
    status); what was run."""
    ran: list[list[str]] = []

    def run(command: list[str], timeout: float) -> str:
        ran.append(command)
        tool = " ".join(command[:2]) if command[1:2] == ["nvlink"] else command[0]
        if tool not in outputs:
            raise ToolFailed(f"`{' '.join(command)}` timed out after {timeout:g}s")
        return outputs[tool]

    monkeypatch.setattr(validate, "run", run)
    monkeypatch.setattr(validate, "_listdir", lambda path: P5_EFA)
    return ran


WHOLE_NODE = {
    "nvidia-smi": SMI,
    "nvidia-smi nvlink": NVLINK,
    "dcgmi": json.dumps(DIAG),
    "all_reduce_perf": NCCL,
}


def main(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], environment: dict[str, str]
) -> tuple[int, dict[str, Any]]:
    monkeypatch.setattr(validate.os, "environ", environment)
    code = validate.main()
    return code, json.loads(capsys.readouterr().out)


def test_a_whole_node_exits_0_with_every_check_passed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ran = node(monkeypatch, WHOLE_NODE)
    code, report = main(monkeypatch, capsys, env())
    assert code == 0
    assert report["passed"] is True
    assert [c["check"] for c in report["checks"]] == list(validate.CHECKS)
    assert ["nvidia-smi", "-q", "-x"] in ran and ["dcgmi", "diag", "-r", "1", "-j"] in ran
    # One nvidia-smi query serves the five checks that read it.
    assert ran.count(["nvidia-smi", "-q", "-x"]) == 1


def test_a_timed_out_tool_fails_its_checks_and_the_node(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    node(monkeypatch, {k: v for k, v in WHOLE_NODE.items() if k != "all_reduce_perf"})
    code, report = main(monkeypatch, capsys, env(DCGM_DIAG_LEVEL="2"))
    assert code == 1
    failed = {c["check"]: c["reason"] for c in report["checks"] if not c["passed"]}
    assert failed == {
        "nccl-bandwidth": "`all_reduce_perf -b 1G -e 8G -f 2 -g 8` timed out after 600s"
    }


def test_skipped_and_unconfigured_checks_do_not_run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ran = node(monkeypatch, WHOLE_NODE)
    environment = env(SKIP_CHECKS="dcgm-diag", EXPECTED_BUSBW_GBPS="0")
    del environment["EXPECTED_NVLINKS"], environment["EXPECTED_EFA_DEVICES"]
    code, report = main(monkeypatch, capsys, environment)
    assert code == 0
    assert [c["check"] for c in report["checks"]] == [
        "gpu-count",
        "driver",
        "ecc",
        "memory",
        "pcie",
    ]
    assert ran == [["nvidia-smi", "-q", "-x"]]


@pytest.mark.parametrize(
    ("overrides", "error"),
    [
        ({"DRIVER_VERSION": ""}, "DRIVER_VERSION is required"),
        ({"DCGM_DIAG_LEVEL": "3"}, "DCGM_DIAG_LEVEL='3': allowed are 1, 2"),
        ({"SKIP_CHECKS": "ecc,nvswitch"}, "SKIP_CHECKS names nvswitch: allowed are gpu-count"),
        ({"EXPECTED_GPUS": "eight"}, "EXPECTED_GPUS='eight' is not a number"),
        ({"BUSBW_SHARE": "80"}, "BUSBW_SHARE=80: a share of the expected bandwidth, 0 to 1"),
    ],
)
def test_bad_configuration_exits_2_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    overrides: dict[str, str],
    error: str,
) -> None:
    ran = node(monkeypatch, WHOLE_NODE)
    code, report = main(monkeypatch, capsys, env(**overrides))
    assert code == 2
    assert report["passed"] is False and report["error"].startswith(error)
    assert ran == []


def test_a_node_whose_driver_no_one_pinned_skips_only_the_driver_check() -> None:
    # An EKS Auto Mode pool's: Auto Mode chooses the driver (workload.skipped_checks).
    cfg = validate.config(env(DRIVER_VERSION="", SKIP_CHECKS="driver"))
    assert (cfg.driver, cfg.skip) == ("", frozenset({"driver"}))
    assert "driver" not in [name for name, _ in validate.checks(cfg)]


def test_nvlink_expectations_name_known_nvlinked_accelerators() -> None:
    # The T4, L4, A10G and L40S have no NVLink (NVIDIA's datasheets): no entry, no check.
    assert set(NVLINK_LINKS) <= set(ACCELERATORS)
    assert {"t4", "l4", "a10g", "l40s"}.isdisjoint(NVLINK_LINKS)


def test_a_pools_skip_checks_accept_exactly_the_validators_checks() -> None:
    assert get_args(ValidationCheck) == (
        "gpu-count",
        "driver",
        "ecc",
        "memory",
        "pcie",
        "nvlink",
        "dcgm-diag",
        "nccl-bandwidth",
        "efa",
    )
    assert get_args(ValidationCheck) == validate.CHECKS


def test_a_pool_pinning_only_the_branch_takes_any_driver_of_it() -> None:
    # An EKS AMI release names the driver's branch alone (`NvidiaDriver.version` "595").
    assert driver(parse_smi(SMI), "595").passed
    assert not driver(parse_smi(SMI), "580").passed


def record(directory: Path, tool: str, out: str, rc: int, err: str = "") -> None:
    for suffix, text in ((".out", out), (".err", err), (".rc", f"{rc}\n")):
        (directory / f"{tool}{suffix}").write_text(text)


@pytest.mark.parametrize(
    ("tool", "output", "check"),
    [
        ("dcgmi", json.dumps(DIAG_FAILED), "dcgm-diag"),
        ("all_reduce_perf", NCCL_LOW, "nccl-bandwidth"),
    ],
)
def test_a_tool_another_container_ran_is_read_not_run(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    tool: str,
    output: str,
    check: str,
) -> None:
    record(tmp_path, tool, output, 0)
    ran = node(monkeypatch, {k: v for k, v in WHOLE_NODE.items() if k != tool})

    code, report = main(monkeypatch, capsys, env(RECORDED_OUTPUTS=str(tmp_path)))

    assert code == 1
    assert [c["check"] for c in report["checks"] if not c["passed"]] == [check]
    assert not any(command[0] == tool for command in ran)


@pytest.mark.parametrize(
    ("rc", "reason"),
    [
        # coreutils `timeout` exits 124 when the command ran out of time.
        (124, "`dcgmi diag -r 1 -j` timed out after 300s"),
        (255, "`dcgmi diag -r 1 -j` exited 255: Error: unable to establish a connection"),
    ],
)
def test_a_diagnostic_that_failed_in_its_container_fails(
    tmp_path: Path, rc: int, reason: str
) -> None:
    record(tmp_path, "dcgmi", "", rc, "Error: unable to establish a connection\n")

    with pytest.raises(ToolFailed, match=reason.replace("(", r"\(")):
        validate.recorded(str(tmp_path), validate.diag_command("1"), 300)
