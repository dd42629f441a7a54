"""How long the policy pack takes per resource, beside a pack of as many policies that do nothing.

    ./uvw run --locked python -m benchmarks.policy_pack
    ./uvw run --locked python -m benchmarks.policy_pack --stack gke-dev --copies 1 --copies 32

Both packs run as the engine runs them (`gpu_platform.offline.analyzer`): one `Remediate` and one
`Analyze` call per resource, then one `AnalyzeStack`. The no-op pack has the same number of resource
and stack policies, and converts properties once per request as the pack does
(`conversions.py`), so the gRPC round trips, the property conversions and the policy SDK's own
work are the same in both: the gap is what the policies themselves cost. The resources are the
stack's offline plan, repeated to show how the cost grows with the stack. Each figure is the
median of several runs, measured in the same run for both packs. Prints numbers; never fails.

Then the same Kubernetes objects (the plan's, less Helm releases, written out as manifests) are
checked by checkov's Kubernetes checks, in checkov's own environment (`uvx`, never a project
dependency), beside the pack started afresh for each run: start-up, configuration, analysis of
every object, stop. Both include their own start-up, which is most of either's time at the size
of a stack. The no-op pack, run the same way, shows what is left as the objects grow: the policy
SDK's own work per object. Sizes: 1, 16, 64 and 167 copies of the stack's objects (8, 128, 512
and 1,336 for dev).
"""

import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from gpu_platform.offline.analyzer import PACK_DIR, PolicyInfo, PolicyPack, analyze_plan
from gpu_platform.offline.program import PlannedResource, run_program

COPIES = (1, 4, 16)
MANIFEST_COPIES = (1, 16, 64, 167)
CHECKOV = "3.3.30"


def main(
    stack: Annotated[str, typer.Option(help="The stack whose offline plan is analyzed.")] = "dev",
    copies: Annotated[
        list[int] | None,
        typer.Option(min=1, help="How many copies of the stack to analyze (repeatable)."),
    ] = None,
    repeats: Annotated[int, typer.Option(min=1, help="Runs per case; the median is shown.")] = 5,
) -> None:
    """Time the policy pack per resource, beside a pack of as many no-op policies."""
    try:
        report(stack, copies or COPIES, repeats)
    except Exception as error:  # a benchmark reports; it does not fail
        print(f"could not measure: {error}")


def report(stack: str, copies: Sequence[int], repeats: int) -> None:
    plan = run_program(stack)
    with tempfile.TemporaryDirectory(prefix="policy-pack-benchmark-") as scratch:
        pack, pack_start = started(PACK_DIR)
        with pack:
            noop, noop_start = started(noop_pack(Path(scratch), pack.policies))
            with noop:
                policies = len(pack.policies)
                print(f"stack {stack}: {len(plan.resources)} resources; {policies} policies")
                print(f"start-up: pack {pack_start:.2f} s, no-op pack {noop_start:.2f} s")
                print_row("resources", "pack ms/res", "no-op ms/res", "policies ms/res")
                for count in copies:
                    resources = replicated(plan.resources, count)
                    ours = median_seconds(pack, resources, repeats) / len(resources) * 1000
                    floor = median_seconds(noop, resources, repeats) / len(resources) * 1000
                    print_row(len(resources), f"{ours:.2f}", f"{floor:.2f}", f"{ours - floor:.2f}")
        print(f"python {sys.version.split()[0]}; medians of {repeats} runs")
        against_checkov(plan.resources, repeats, noop.pack_dir)


def against_checkov(resources: Sequence[PlannedResource], repeats: int, noop: Path) -> None:
    """checkov beside the pack and beside the no-op pack, each started afresh per run: the no-op
    pack's column is what the policy SDK costs whatever the policies do."""
    uvx = shutil.which("uvx") or str(Path(__file__).resolve().parent.parent / ".uv" / "bin" / "uvx")
    objects = [r for r in resources if _manifest(r) is not None]
    print(f"\nagainst checkov {CHECKOV} --framework kubernetes (fresh processes, seconds):")
    print_row("objects", "checkov", "pack", "checkov/pack", "no-op pack")
    with tempfile.TemporaryDirectory(prefix="checkov-benchmark-") as scratch:
        for count in MANIFEST_COPIES:
            copies = replicated(objects, count)
            folder = Path(scratch) / str(count)
            folder.mkdir()
            for index, resource in enumerate(copies):
                (folder / f"{index:04}.yaml").write_text(yaml.safe_dump(_manifest(resource)))
            checkov = [uvx, "--from", f"checkov=={CHECKOV}", "checkov", "-d", str(folder)]
            checkov += ["--framework", "kubernetes", "--quiet", "--compact", "-o", "json"]
            _run_checkov(checkov)  # installs it the first time
            theirs = statistics.median(
                _seconds(partial(_run_checkov, checkov)) for _ in range(repeats)
            )
            ours, floor = (
                statistics.median(
                    _seconds(partial(analyze_plan, copies, pack)) for _ in range(repeats)
                )
                for pack in (PACK_DIR, noop)
            )
            print_row(
                len(copies), f"{theirs:.2f}", f"{ours:.2f}", f"{theirs / ours:.1f}x", f"{floor:.2f}"
            )


def _manifest(resource: PlannedResource) -> dict[str, Any] | None:
    """A Kubernetes object as a manifest, from its Pulumi type token and inputs; None for what is
    not one (Helm releases, cloud resources, components)."""
    provider, _, rest = resource.type.partition(":")
    module, _, kind = rest.partition(":")
    if provider != "kubernetes" or module in ("helm.sh/v3", "yaml/v2") or not resource.custom:
        return None
    group, _, version = module.rpartition("/")
    manifest: dict[str, Any] = {"kind": kind}
    manifest["apiVersion"] = version if group == "core" else f"{group}/{version}"
    manifest |= {k: v for k, v in resource.inputs.items() if k not in ("apiVersion", "kind")}
    manifest["metadata"] = {**(manifest.get("metadata") or {}), "name": resource.name}
    return manifest


def _run_checkov(command: list[str]) -> None:
    # checkov exits 1 when a check fails, which is what it is run for.
    subprocess.run(command, capture_output=True, check=False)


def _seconds(run: Callable[[], object]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def print_row(*cells: object) -> None:
    print("  ".join(f"{cell:>15}" for cell in cells))


def noop_pack(directory: Path, policies: Sequence[PolicyInfo]) -> Path:
    """A pack with a policy that does nothing for each of `policies`, of the same kind and with
    the same parameters, so that it takes the policy config the pack takes (the
    `namespaceLevels` an offline plan lists, a stack's own config)."""
    schemas = {p.name: dict(p.config_schema) for p in policies}
    entries = "\n".join(
        f"        {'Stack' if p.stack_policy else 'Resource'}ValidationPolicy("
        f'"{p.name}", "Does nothing.", nothing, config_schema=schema("{p.name}")),'
        for p in policies
    )
    main = f"""
        import json
        import sys
        from pathlib import Path

        from pulumi_policy import (
            PolicyConfigSchema,
            PolicyPack,
            ResourceValidationPolicy,
            StackValidationPolicy,
        )

        sys.path.insert(0, {str(PACK_DIR)!r})
        import conversions

        SCHEMAS = json.loads((Path(__file__).parent / "schemas.json").read_text())


        def schema(name):
            return PolicyConfigSchema(properties=SCHEMAS[name]) if SCHEMAS[name] else None


        def nothing(args, report_violation):
            return None


        if __name__ == "__main__":
            conversions.share_conversions()
            PolicyPack("noop", [
        {entries}
            ])
    """
    (directory / "PulumiPolicy.yaml").write_text("runtime: python\nversion: 0.0.1\n")
    (directory / "schemas.json").write_text(json.dumps(schemas))
    (directory / "__main__.py").write_text(textwrap.dedent(main))
    return directory


def replicated(resources: Sequence[PlannedResource], copies: int) -> list[PlannedResource]:
    """`copies` copies of the stack's resources, each copy with URNs (and links) of its own."""
    urns = {r.urn for r in resources}

    def renamed(urn: str, copy: int) -> str:
        return f"{urn}-{copy}" if copy and urn in urns else urn

    return [
        replace(
            r,
            urn=renamed(r.urn, copy),
            name=f"{r.name}-{copy}" if copy else r.name,
            parent=None if r.parent is None else renamed(r.parent, copy),
            dependencies=tuple(renamed(d, copy) for d in r.dependencies),
            property_dependencies={
                key: tuple(renamed(d, copy) for d in urns_)
                for key, urns_ in r.property_dependencies.items()
            },
        )
        for copy in range(copies)
        for r in resources
    ]


def started(pack_dir: Path) -> tuple[PolicyPack, float]:
    start = time.perf_counter()
    pack = PolicyPack(pack_dir)
    pack.configure(None)
    return pack, time.perf_counter() - start


def median_seconds(pack: PolicyPack, resources: Sequence[PlannedResource], repeats: int) -> float:
    timings = []
    for _ in range(repeats):
        start = time.perf_counter()
        pack.analyze(resources)
        timings.append(time.perf_counter() - start)
    return statistics.median(timings)


if __name__ == "__main__":
    typer.run(main)
