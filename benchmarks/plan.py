"""How long the offline plan takes, beside its floor.

    ./uvw run --locked python -m benchmarks.plan
    ./uvw run --locked python -m benchmarks.plan --repeats 9 --pools 1 --pools 256

The floor is a bare Pulumi program that registers the same number of resources under the same
mock monitor and stand-ins (`gpu_platform.offline.program.run_program`), measured in the same run:
what any program of that size costs, whatever it does. The gap between the two is this program's
own work: validating the config, deriving pools, building the operator's values, and the provider
SDKs' resource classes.

Two measurements, each the median of several runs:
- in process: the program run again in an interpreter that has already imported everything,
  for every stack file and for the dev stack's first pool repeated 1, 4, 16 and 64 times;
- fresh process: `gpu-platform plan <stack>` as a user types it, for every stack file, beside
  the same command on a project whose program is the floor, with the same policy pack. This
  adds interpreter start-up, importing the provider SDKs, and the policy pack's verdicts on the
  plan. A third column times the floor program alone in a fresh interpreter, without the
  command or the pack; a fourth, how long a fresh interpreter that has imported `pulumi` takes
  to import the provider SDK modules the stack's program loads, which any program declaring
  those resources with the SDKs' classes pays. The environment is byte-compiled as `./uvw`
  installs it.
"""

import copy
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from importlib.metadata import version
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from gpu_platform.cli.app import GC_THRESHOLD
from gpu_platform.offline.program import run_program
from gpu_platform.project import Project
from gpu_platform.stack_files import stack_config

FLOOR_PROGRAM = '''\
"""A bare Pulumi program: `floor:resources` custom resources and nothing else."""

import pulumi

for index in range(pulumi.Config("floor").require_int("resources")):
    pulumi.CustomResource("floor:index:Resource", f"resource-{index}", {"index": index})
'''
FLOOR_STACK = "floor"
PROVIDER_SDKS = ("pulumi_aws", "pulumi_gcp", "pulumi_kubernetes")
# Run in a fresh interpreter: prints the seconds importing the modules named on its command line
# takes once `pulumi` is imported, with the collector tuned as the command tunes it.
SDK_IMPORTS = """\
import gc, importlib, sys, time
gc.set_threshold(int(sys.argv[1]), *gc.get_threshold()[1:])
import pulumi
start = time.perf_counter()
for module in sys.argv[2:]:
    importlib.import_module(module)
print(time.perf_counter() - start)
"""
# Run in a fresh interpreter: the stack's program, then the provider SDK modules it loaded.
SDK_MODULES = f"""\
import json, sys
from gpu_platform.offline.program import run_program
run_program(sys.argv[1])
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in {PROVIDER_SDKS!r})))
"""
PROJECT = Project.find(Path(__file__).resolve().parent.parent)
COMMAND = str(Path(sys.executable).parent / "gpu-platform")
POOL_COUNTS = (1, 4, 16, 64)


@dataclass(frozen=True)
class Case:
    """One program input to time: a stack file, or a config built from the dev stack's."""

    label: str
    stack: str
    config: Mapping[str, Any] | None = None

    def run(self) -> int:
        """Run the real program once; the number of resources it registered."""
        return len(run_program(self.stack, config=self.config).resources)


@dataclass(frozen=True)
class Timing:
    label: str
    resources: int
    plan: float
    floor: float
    bare: float | None = None
    """The floor program alone in a fresh interpreter (fresh-process timings only)."""
    sdk_imports: float | None = None
    """Importing the provider SDK modules the program loads (fresh-process timings only)."""


def main(
    repeats: Annotated[
        int, typer.Option(min=1, help="Runs per case in process; the median is shown.")
    ] = 5,
    fresh_repeats: Annotated[
        int, typer.Option(min=1, help="Fresh-process runs per stack file; the median is shown.")
    ] = 3,
    pools: Annotated[
        list[int] | None,
        typer.Option(min=1, help="A pool count to build from the dev stack (repeatable)."),
    ] = None,
) -> None:
    """Time the offline plan of every stack file and of growing pool counts, beside the floor."""
    console = Console()
    console.print(machine_description(), highlight=False)
    with tempfile.TemporaryDirectory(prefix="plan-benchmark-") as scratch:
        floor = floor_project(Path(scratch) / "floor")

        cases = [*stack_file_cases(), *pool_count_cases(pools or POOL_COUNTS)]
        in_process = [time_in_process(case, floor, repeats) for case in cases]
        console.print(
            timing_table(f"In process: median of {repeats} runs after a warm-up", in_process)
        )

        fresh = [time_fresh_process(case, floor, fresh_repeats) for case in stack_file_cases()]
        console.print(
            timing_table(
                f"Fresh process, `gpu-platform plan <stack>`: median of {fresh_repeats} runs",
                fresh,
            )
        )


def floor_project(directory: Path) -> Project:
    """A Pulumi project whose program is the floor, with a stack file for `--resources`."""
    directory.mkdir()
    (directory / "Pulumi.yaml").write_text("name: floor\nruntime: python\n")
    (directory / "__main__.py").write_text(FLOOR_PROGRAM)
    return Project.find(directory)


def stack_file_cases() -> list[Case]:
    return [Case(f"stack {stack}", stack) for stack in PROJECT.stacks()]


def pool_count_cases(counts: Sequence[int]) -> list[Case]:
    dev = stack_config("dev", PROJECT)
    return [Case(f"dev, {count} pools", "dev", with_pools(dev, count)) for count in counts]


def with_pools(config: Mapping[str, Any], count: int) -> dict[str, Any]:
    """`config` with its first pool repeated `count` times under numbered names; namespaces that
    smoke-tested that pool test the first copy."""
    grown = copy.deepcopy(dict(config))
    template = grown["gpu-platform:pools"][0]
    names = [f"{template['name']}-{index}" for index in range(count)]
    grown["gpu-platform:pools"] = [{**copy.deepcopy(template), "name": name} for name in names]
    for namespace in grown.get("gpu-platform:namespaces", []):
        if namespace.get("smokeTestPool") == template["name"]:
            namespace["smokeTestPool"] = names[0]
    return grown


def run_floor(floor: Project, resources: int) -> None:
    """The floor program once, under the offline plan's runner."""
    plan = run_program(FLOOR_STACK, config={"floor:resources": resources}, project=floor)
    if len(plan.resources) != resources:
        raise RuntimeError(f"the floor registered {len(plan.resources)} of {resources} resources")


def time_in_process(case: Case, floor: Project, repeats: int) -> Timing:
    resources = case.run()
    return timed(case.label, resources, [case.run, lambda: run_floor(floor, resources)], repeats)


def time_fresh_process(case: Case, floor: Project, repeats: int) -> Timing:
    resources = case.run()
    (floor.directory / f"Pulumi.{FLOOR_STACK}.yaml").write_text(
        f"config:\n  floor:resources: {resources}\n"
    )
    plan = [COMMAND, "--cwd", str(PROJECT.directory), "plan", case.stack, "--json"]
    # The same command on the floor program, with this project's policy pack over it.
    command_floor = [
        COMMAND,
        "--cwd",
        str(floor.directory),
        "plan",
        FLOOR_STACK,
        "--json",
        "--policy-pack",
        str(PROJECT.directory / "policies"),
    ]
    bare_floor = [
        sys.executable,
        "-c",
        "import sys; from pathlib import Path; from benchmarks.plan import run_floor; "
        "from gpu_platform.project import Project; "
        "run_floor(Project.find(Path(sys.argv[1])), int(sys.argv[2]))",
        str(floor.directory),
        str(resources),
    ]

    def run(argv: list[str]) -> None:
        # The bare floor program leaves asyncio loops that complain on stderr as the interpreter
        # exits; only a failing run's stderr is worth showing.
        done = subprocess.run(
            argv,
            cwd=PROJECT.directory,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed:\n{done.stderr}")

    timing = timed(
        case.label,
        resources,
        [lambda: run(plan), lambda: run(command_floor), lambda: run(bare_floor)],
        repeats,
    )
    return replace(timing, sdk_imports=sdk_import_seconds(case.stack, repeats))


def sdk_import_seconds(stack: str, repeats: int) -> float:
    """The median time a fresh interpreter takes to import the provider SDK modules that the
    program of `stack` loads, `pulumi` already imported."""
    loaded = subprocess.run(
        [sys.executable, "-c", SDK_MODULES, stack],
        cwd=PROJECT.directory,
        capture_output=True,
        text=True,
        check=True,
    )
    modules = json.loads(loaded.stdout.splitlines()[-1])
    command = [sys.executable, "-c", SDK_IMPORTS, str(GC_THRESHOLD), *modules]
    return statistics.median(
        float(subprocess.run(command, capture_output=True, text=True, check=True).stdout)
        for _ in range(repeats)
    )


def timed(label: str, resources: int, runs: Sequence[Callable[[], object]], repeats: int) -> Timing:
    """Medians of `repeats` runs of the plan, its floor and (optionally) the bare floor, after one
    unmeasured run of each."""
    for run in runs:
        run()
    times: list[list[float]] = [[] for _ in runs]
    # Interleaved, so that a machine slowing down mid-run weighs on all alike.
    for _ in range(repeats):
        for run, measured in zip(runs, times, strict=True):
            measured.append(seconds(run))
    medians = [statistics.median(measured) for measured in times]
    return Timing(label, resources, *medians)


def seconds(run: Callable[[], object]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def timing_table(title: str, timings: Sequence[Timing]) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("case", no_wrap=True)
    table.add_column("resources", justify="right")
    table.add_column("plan (s)", justify="right")
    table.add_column("floor (s)", justify="right")
    table.add_column("plan/floor", justify="right")
    bare = any(t.bare is not None for t in timings)
    if bare:
        table.add_column("bare program (s)", justify="right")
        table.add_column("provider SDK imports (s)", justify="right")
    table.add_column("ms/resource", justify="right")
    for t in timings:
        row = [t.label, str(t.resources), f"{t.plan:.3f}", f"{t.floor:.3f}"]
        row.append(f"{t.plan / t.floor:.2f}x")
        if bare:
            row.append(f"{t.bare:.3f}" if t.bare is not None else "")
            row.append(f"{t.sdk_imports:.3f}" if t.sdk_imports is not None else "")
        row.append(f"{1000 * t.plan / t.resources:.1f}")
        table.add_row(*row)
    return table


def machine_description() -> str:
    return (
        f"CPU: {cpu_model()}, {os.cpu_count()} logical cores"
        f" ({len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else '?'} usable)\n"
        f"Python {platform.python_version()} ({platform.python_implementation()}),"
        f" {platform.system()} {platform.release()}, pulumi SDK {version('pulumi')}\n"
        f"Load average at start: {', '.join(f'{load:.1f}' for load in os.getloadavg())}"
    )


def cpu_model() -> str:
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                return value.strip()
    return platform.processor() or platform.machine()


if __name__ == "__main__":
    typer.run(main)
