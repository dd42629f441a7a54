"""Whether the GPU node this runs on is whole: run by a validation pod that holds all of the
node's GPUs, standard library only (it runs on a pinned image beside NVIDIA's tools, not in the
platform's environment).

Each check reads the published output of one of NVIDIA's tools and decides with a reason:
- `gpu-count`: `nvidia-smi -q -x` lists as many GPUs as the instance or machine type has;
- `driver`: its `driver_version` is the pool's pinned driver;
- `ecc`: every GPU that has ECC has it enabled (`ecc_mode/current_ecc`; `N/A` where it has none);
- `memory`: no row remapping pending or failed, no page retirement pending, and fewer retired
  pages than DCGM's limit (`DCGM_LIMIT_MAX_RETIRED_PAGES`, 63, in DCGM's
  common/DcgmGPUHardwareLimits.h: its software test fails a GPU at 63 or more);
- `pcie`: every busy GPU's link at its maximum generation and width (an idle GPU may lower
  both, so an idle GPU's link says nothing);
- `nvlink`: `nvidia-smi nvlink --status` shows each GPU with the active links its model has;
- `dcgm-diag`: `dcgmi diag -r <level> -j` (level 1 unless the pool asks for 2) reports no failed
  test and no runtime error;
- `nccl-bandwidth`: nccl-tests' `all_reduce_perf` across the node's GPUs reaches a share of the
  model's expected bus bandwidth, with no wrong or out-of-bounds values;
- `efa`: the node has as many EFA devices (`/sys/class/infiniband`) as its instance type.

It is configured by environment variables (`config` names them), runs each tool under a timeout,
prints the results as one JSON object on stdout and exits 0 when every check passed, 1 when one
failed, 2 when its configuration is wrong.
"""

import json
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# DCGM's common/DcgmGPUHardwareLimits.h: a GPU with this many retired pages (single- and
# double-bit together) or more fails DCGM's software test.
DCGM_MAX_RETIRED_PAGES = 63
DEFAULT_BUSBW_SHARE = 0.8
DIAG_LEVELS = ("1", "2")
# Seconds per tool. DCGM's `dcgmi diag` reference (`--run`) gives level 1 "normally lasting
# seconds" and level 2 "approximately two minutes"; the limits leave room for a slow start of its
# host engine.
NVIDIA_SMI_TIMEOUT = 60
DCGM_DIAG_TIMEOUT = {"1": 300, "2": 900}
NCCL_TIMEOUT = 600
INFINIBAND_DEVICES = "/sys/class/infiniband"
# Where a tool another container of the pod ran left its answer (`recorded`): `<tool>.out`, its
# standard output, `<tool>.err`, its standard error, and `<tool>.rc`, its exit status, which
# coreutils' `timeout` makes 124 when the tool ran out of time.
RECORDED_SUFFIXES = (".out", ".err", ".rc")
TIMED_OUT = 124
CHECKS = (
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


@dataclass(frozen=True)
class Result:
    check: str
    passed: bool
    reason: str


class ToolFailed(Exception):
    """A tool that did not answer: it timed out, could not start or exited non-zero."""


# nvidia-smi -q -x (its DTD, nvsmi_device_v12.dtd, ships with the driver): one `gpu` element per
# GPU under `nvidia_smi_log`.


def parse_smi(xml: str) -> ElementTree.Element:
    return ElementTree.fromstring(xml)


def _gpus(smi: ElementTree.Element) -> list[ElementTree.Element]:
    return smi.findall("gpu")


def _text(gpu: ElementTree.Element, path: str) -> str:
    return (gpu.findtext(path) or "N/A").strip()


def _name(gpu: ElementTree.Element) -> str:
    return f"GPU {gpu.get('id')}"


def gpu_count(smi: ElementTree.Element, expected: int) -> Result:
    found = len(_gpus(smi))
    if found == expected:
        return Result("gpu-count", True, f"{found} GPUs")
    return Result("gpu-count", False, f"{found} GPUs, the instance or machine type has {expected}")


def driver(smi: ElementTree.Element, expected: str) -> Result:
    """The driver against the pool's: a full version (`580.95.05`) must be that version; a bare
    branch (`580`, where the pool pins only the branch, as an EKS AMI release's name does) any
    version of that branch."""
    found = (smi.findtext("driver_version") or "").strip()
    if found == expected or ("." not in expected and found.split(".")[0] == expected):
        return Result("driver", True, f"driver {found}")
    return Result("driver", False, f"driver {found or 'unknown'}, the pool pins {expected}")


def ecc(smi: ElementTree.Element) -> Result:
    off = [
        f"{_name(gpu)} ECC {_text(gpu, 'ecc_mode/current_ecc')}"
        for gpu in _gpus(smi)
        if _text(gpu, "ecc_mode/current_ecc") not in ("Enabled", "N/A")
    ]
    if off:
        return Result("ecc", False, "; ".join(off))
    return Result("ecc", True, "ECC enabled on every GPU that has it")


def _count(value: str) -> int:
    return int(value) if value.isdigit() else 0


def memory(smi: ElementTree.Element) -> Result:
    problems = []
    for gpu in _gpus(smi):
        name = _name(gpu)
        if _text(gpu, "remapped_rows/remapped_row_pending") == "Yes":
            problems.append(f"{name} has a row remapping pending (it needs a reset)")
        if _text(gpu, "remapped_rows/remapped_row_failure") == "Yes":
            problems.append(f"{name} has failed to remap a row")
        if _text(gpu, "retired_pages/pending_retirement") == "Yes":
            problems.append(f"{name} has a page retirement pending")
        retired = _count(
            _text(gpu, "retired_pages/multiple_single_bit_retirement/retired_count")
        ) + _count(_text(gpu, "retired_pages/double_bit_retirement/retired_count"))
        if retired >= DCGM_MAX_RETIRED_PAGES:
            problems.append(
                f"{name} has {retired} retired pages, DCGM's limit is {DCGM_MAX_RETIRED_PAGES}"
            )
    if problems:
        return Result("memory", False, "; ".join(problems))
    return Result(
        "memory", True, "no row remapping or page retirement pending or over DCGM's limit"
    )


def pcie(smi: ElementTree.Element) -> Result:
    """Each busy GPU's link against its maximum. nvidia-smi's documentation of the current link
    generation and width: "These may be reduced when the GPU is not in use", so only a GPU in
    performance state P0 is judged."""
    problems = []
    for gpu in _gpus(smi):
        if _text(gpu, "performance_state") != "P0":
            continue
        link = "pci/pci_gpu_link_info"
        for what, current, maximum in (
            ("generation", "pcie_gen/current_link_gen", "pcie_gen/max_link_gen"),
            ("width", "link_widths/current_link_width", "link_widths/max_link_width"),
        ):
            now, most = _text(gpu, f"{link}/{current}"), _text(gpu, f"{link}/{maximum}")
            if _count(now.rstrip("x")) < _count(most.rstrip("x")):
                problems.append(f"{_name(gpu)} PCIe link {what} {now} of {most}")
    if problems:
        return Result("pcie", False, "; ".join(problems))
    return Result("pcie", True, "every busy GPU's PCIe link at its maximum generation and width")


def nvlink(status: str, expected_per_gpu: int) -> Result:
    """`nvidia-smi nvlink --status`: a `GPU <n>: <name> (UUID: ...)` line per GPU, then a
    `Link <n>: <speed> GB/s` line per link, `<inactive>` for a link that is down."""
    active: dict[str, int] = {}
    current = None
    for line in status.splitlines():
        stripped = line.strip()
        if stripped.startswith("GPU "):
            current = stripped.split(":", 1)[0]
            active[current] = 0
        elif stripped.startswith("Link ") and current is not None and "GB/s" in stripped:
            speed = stripped.split(":", 1)[1].split()[0]
            if _positive(speed):
                active[current] += 1
    short = [f"{gpu} {n} active links" for gpu, n in active.items() if n < expected_per_gpu]
    if not active:
        return Result("nvlink", False, "nvidia-smi nvlink --status listed no GPU")
    if short:
        return Result("nvlink", False, f"{'; '.join(short)}, the model has {expected_per_gpu}")
    return Result("nvlink", True, f"{expected_per_gpu} active NVLink links on each GPU")


def _positive(number: str) -> bool:
    try:
        return float(number) > 0
    except ValueError:
        return False


def dcgm_diag(report: Mapping[str, Any]) -> Result:
    """`dcgmi diag -j` of DCGM 4 (DCGM's testing/python3/dcgm_diag_schema.json): a `DCGM
    Diagnostic` object of `test_categories`, each of `tests` with a `test_summary` status and
    per-entity `results`, or a `runtime_error`."""
    diagnostic = report.get("DCGM Diagnostic")
    if not isinstance(diagnostic, Mapping):
        return Result("dcgm-diag", False, "dcgmi diag printed no `DCGM Diagnostic` report")
    if diagnostic.get("runtime_error"):
        return Result("dcgm-diag", False, f"dcgmi diag failed: {diagnostic['runtime_error']}")
    failed, ran = [], 0
    for category in diagnostic.get("test_categories") or []:
        for test in category.get("tests") or []:
            ran += 1
            for result in test.get("results") or []:
                if str(result.get("status")).lower() == "fail":
                    warnings = [w.get("warning", "") for w in result.get("warnings") or []]
                    failed.append(
                        f"{test.get('name')} failed on {result.get('entity_group')}"
                        f" {result.get('entity_id')}: {' '.join(warnings) or 'no reason given'}"
                    )
            summary = str((test.get("test_summary") or {}).get("status")).lower()
            if summary == "fail" and not any(f.startswith(f"{test.get('name')} ") for f in failed):
                failed.append(f"{test.get('name')} failed")
    if failed:
        return Result("dcgm-diag", False, "; ".join(failed))
    if not ran:
        return Result("dcgm-diag", False, "dcgmi diag ran no test")
    return Result("dcgm-diag", True, f"{ran} DCGM tests passed")


def nccl_bandwidth(output: str, expected_gbps: float, share: float) -> Result:
    """`all_reduce_perf`'s table (nccl-tests src/common.cu): per message size `size count type
    redop root` then out-of-place `time algbw busbw #wrong` and in-place `time algbw busbw
    #wrong`; then `# Out of bounds values : <n> OK|FAILED`. The largest message's bus bandwidth
    is the one that approaches the links' (nccl-tests doc/PERFORMANCE.md)."""
    rows = [line.split() for line in output.splitlines() if line.strip()[:1].isdigit()]
    rows = [row for row in rows if len(row) >= 13]
    if not rows:
        return Result("nccl-bandwidth", False, "all_reduce_perf printed no results")
    wrong = [row[0] for row in rows if row[8] != "0" or row[12] != "0"]
    if wrong:
        return Result("nccl-bandwidth", False, f"wrong values at sizes {', '.join(wrong)} bytes")
    bounds = [line for line in output.splitlines() if line.startswith("# Out of bounds values")]
    if not bounds or not bounds[-1].rstrip().endswith("OK"):
        return Result("nccl-bandwidth", False, "all_reduce_perf found out-of-bounds values")
    largest = max(rows, key=lambda row: int(row[0]))
    busbw = max(float(largest[7]), float(largest[11]))
    minimum = expected_gbps * share
    if busbw < minimum:
        return Result(
            "nccl-bandwidth",
            False,
            f"bus bandwidth {busbw:g} GB/s at {largest[0]} bytes, below {minimum:g} GB/s"
            f" ({share:g} of the expected {expected_gbps:g})",
        )
    return Result("nccl-bandwidth", True, f"bus bandwidth {busbw:g} GB/s at {largest[0]} bytes")


def efa(devices: Sequence[str], expected: int) -> Result:
    if len(devices) == expected:
        return Result("efa", True, f"{expected} EFA devices")
    return Result(
        "efa",
        False,
        f"{len(devices)} EFA devices ({', '.join(sorted(devices)) or 'none'}), the instance"
        f" type has {expected}",
    )


# The runner: each tool under its timeout, each check from its tool's output.


def run(command: Sequence[str], timeout: float) -> str:
    try:
        done = subprocess.run(
            list(command), capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        raise ToolFailed(f"`{' '.join(command)}` timed out after {timeout:g}s") from None
    except OSError as error:
        raise ToolFailed(f"`{' '.join(command)}` could not start: {error}") from None
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:]
        raise ToolFailed(f"`{' '.join(command)}` exited {done.returncode}: {' '.join(tail)}")
    return done.stdout


def recorded(directory: str, command: Sequence[str], timeout: float) -> str | None:
    """The output of `command` as another container of the pod ran it under `timeout` and left
    it in `directory`; None where it left nothing for the tool (then it runs here). A container
    holds a tool that this one's image does not: DCGM's `dcgmi` and its host engine, nccl-tests'
    `all_reduce_perf`."""
    out, err, rc = (os.path.join(directory, command[0] + s) for s in RECORDED_SUFFIXES)
    if not os.path.exists(rc):
        return None
    with open(rc) as status, open(out) as stdout, open(err) as stderr:
        code, output, errors = status.read().strip(), stdout.read(), stderr.read()
    if code == str(TIMED_OUT):
        raise ToolFailed(f"`{' '.join(command)}` timed out after {timeout:g}s")
    if code != "0":
        tail = (errors or output).strip().splitlines()[-1:]
        raise ToolFailed(f"`{' '.join(command)}` exited {code}: {' '.join(tail)}")
    return output


def diag_command(level: str) -> list[str]:
    """DCGM's diagnostic at `level`, as JSON."""
    return ["dcgmi", "diag", "-r", level, "-j"]


def nccl_command(gpus: str) -> list[str]:
    """nccl-tests' all-reduce across `gpus` GPUs of one process, from 1 GiB to 8 GiB: sizes at
    which the bus bandwidth levels off (nccl-tests doc/PERFORMANCE.md)."""
    return ["all_reduce_perf", "-b", "1G", "-e", "8G", "-f", "2", "-g", gpus]


@dataclass(frozen=True)
class Config:
    gpus: int
    driver: str
    nvlinks: int
    diag_level: str
    busbw_gbps: float
    busbw_share: float
    efa_devices: int
    skip: frozenset[str]
    recorded: str = ""


def config(env: Mapping[str, str]) -> Config:
    """From `EXPECTED_GPUS`, `DRIVER_VERSION` (required), `EXPECTED_NVLINKS`, `DCGM_DIAG_LEVEL`
    (1 or 2, default 1), `EXPECTED_BUSBW_GBPS` (0 or unset: no NCCL test), `BUSBW_SHARE`
    (default 0.8), `EXPECTED_EFA_DEVICES` (0 or unset: not an EFA pool), `SKIP_CHECKS` (a
    comma-separated list of check names) and `RECORDED_OUTPUTS` (a directory where other
    containers of the pod left the outputs of tools they ran: `recorded`). Raises ValueError
    naming the variable."""

    def number(name: str, kind: Callable[[str], Any], default: str = "0") -> Any:
        value = env.get(name, default)
        try:
            parsed = kind(value)
        except ValueError:
            raise ValueError(f"{name}={value!r} is not a number") from None
        if parsed < 0:
            raise ValueError(f"{name}={value!r} is negative")
        return parsed

    level = env.get("DCGM_DIAG_LEVEL", "1")
    if level not in DIAG_LEVELS:
        raise ValueError(f"DCGM_DIAG_LEVEL={level!r}: allowed are {', '.join(DIAG_LEVELS)}")
    skip = frozenset(s.strip() for s in env.get("SKIP_CHECKS", "").split(",") if s.strip())
    unknown = sorted(skip - set(CHECKS))
    if unknown:
        raise ValueError(f"SKIP_CHECKS names {', '.join(unknown)}: allowed are {', '.join(CHECKS)}")
    if not env.get("DRIVER_VERSION") and "driver" not in skip:
        raise ValueError(
            "DRIVER_VERSION is required unless SKIP_CHECKS names driver: the pool's pinned NVIDIA"
            " driver version"
        )
    share = number("BUSBW_SHARE", float, str(DEFAULT_BUSBW_SHARE))
    if share > 1:
        raise ValueError(f"BUSBW_SHARE={share:g}: a share of the expected bandwidth, 0 to 1")
    return Config(
        gpus=number("EXPECTED_GPUS", int, ""),
        driver=env.get("DRIVER_VERSION", ""),
        nvlinks=number("EXPECTED_NVLINKS", int),
        diag_level=level,
        busbw_gbps=number("EXPECTED_BUSBW_GBPS", float),
        busbw_share=share,
        efa_devices=number("EXPECTED_EFA_DEVICES", int),
        skip=skip,
        recorded=env.get("RECORDED_OUTPUTS", ""),
    )


def checks(cfg: Config) -> list[tuple[str, Callable[[], Result]]]:
    """The checks the node's configuration calls for, in order, each with how to run it."""

    # Five checks read one `nvidia-smi -q -x`, run once: its failure fails each of them.
    answer: list[ElementTree.Element | Exception] = []

    def smi() -> ElementTree.Element:
        if not answer:
            try:
                answer.append(parse_smi(run(["nvidia-smi", "-q", "-x"], NVIDIA_SMI_TIMEOUT)))
            except (ToolFailed, ElementTree.ParseError) as error:
                answer.append(error)
        if isinstance(answer[0], Exception):
            raise answer[0]
        return answer[0]

    planned: list[tuple[str, Callable[[], Result]]] = [
        ("gpu-count", lambda: gpu_count(smi(), cfg.gpus)),
        ("driver", lambda: driver(smi(), cfg.driver)),
        ("ecc", lambda: ecc(smi())),
        ("memory", lambda: memory(smi())),
        ("pcie", lambda: pcie(smi())),
    ]
    if cfg.nvlinks:
        status = ["nvidia-smi", "nvlink", "--status"]
        planned.append(("nvlink", lambda: nvlink(run(status, NVIDIA_SMI_TIMEOUT), cfg.nvlinks)))
    diag = diag_command(cfg.diag_level)
    timeout = DCGM_DIAG_TIMEOUT[cfg.diag_level]

    def diagnostic() -> Result:
        found = recorded(cfg.recorded, diag, timeout) if cfg.recorded else None
        return dcgm_diag(json.loads(run(diag, timeout) if found is None else found))

    planned.append(("dcgm-diag", diagnostic))
    nccl = nccl_command(str(cfg.gpus))

    def all_reduce() -> Result:
        found = recorded(cfg.recorded, nccl, NCCL_TIMEOUT) if cfg.recorded else None
        output = run(nccl, NCCL_TIMEOUT) if found is None else found
        return nccl_bandwidth(output, cfg.busbw_gbps, cfg.busbw_share)

    if cfg.busbw_gbps and cfg.gpus > 1:
        planned.append(("nccl-bandwidth", all_reduce))
    if cfg.efa_devices:
        planned.append(("efa", lambda: efa(_listdir(INFINIBAND_DEVICES), cfg.efa_devices)))
    return [(name, check) for name, check in planned if name not in cfg.skip]


def _listdir(path: str) -> list[str]:
    return os.listdir(path) if os.path.isdir(path) else []


def validate(cfg: Config) -> list[dict[str, Any]]:
    results = []
    for name, check in checks(cfg):
        started = time.monotonic()
        try:
            result = check()
        except ToolFailed as error:
            result = Result(name, False, str(error))
        except (ElementTree.ParseError, json.JSONDecodeError) as error:
            result = Result(name, False, f"unreadable tool output: {error}")
        results.append(
            {
                "check": result.check,
                "passed": result.passed,
                "reason": result.reason,
                "seconds": round(time.monotonic() - started, 3),
            }
        )
    return results


def main() -> int:
    try:
        cfg = config(os.environ)
    except ValueError as error:
        print(json.dumps({"passed": False, "error": str(error)}), flush=True)
        return 2
    results = validate(cfg)
    passed = all(r["passed"] for r in results)
    print(json.dumps({"passed": passed, "checks": results}), flush=True)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
