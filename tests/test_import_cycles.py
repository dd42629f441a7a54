"""No module of the package imports, directly or through others, a module that imports it back.

Every import statement counts, those inside functions too: a deferred import keeps a cycle
from failing at import time, not from tying the two modules together. The graph is read from
the source with `ast`; `graphlib` names a cycle when it finds one.
"""

import ast
import graphlib
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

from tests.repository import ROOT

PACKAGE = "gpu_platform"
# Pulumi loads the policy pack from its directory, so its modules import each other by bare
# name (`import props`).
POLICY_PACK = f"{PACKAGE}.policy_pack"


def module_sources(root: Path, package: str) -> dict[str, str]:
    """Each module of `package` under `root` by dotted name, with its source."""
    sources = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        sources[".".join(parts)] = path.read_text(encoding="utf-8")
    return sources


def imported_names(module: str, is_package: bool, source: str) -> Iterator[str]:
    """The dotted names `module` imports, with `from x import y` as `x.y` (a submodule or a
    name in `x`), relative imports resolved."""
    here = module.split(".") if is_package else module.split(".")[:-1]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = here[: len(here) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def import_graph(sources: Mapping[str, str]) -> dict[str, set[str]]:
    """Each module with the modules of `sources` it imports."""
    packages = {name.rpartition(".")[0] for name in sources}
    graph: dict[str, set[str]] = {}
    for module, source in sources.items():
        targets = set()
        for name in imported_names(module, module in packages, source):
            if module.startswith(POLICY_PACK + ".") and f"{POLICY_PACK}.{name}" in sources:
                name = f"{POLICY_PACK}.{name}"
            if name in sources and name != module:
                targets.add(name)
        graph[module] = targets
    return graph


def import_cycle(graph: Mapping[str, set[str]]) -> list[str]:
    """One cycle of the graph, as the modules along it (the first repeated last), or []."""
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as error:
        return list(error.args[1])
    return []


def test_the_check_finds_a_cycle_through_a_deferred_import() -> None:
    sources = {
        "app": "",
        "app.cloud": "def cloud_for():\n    from app.eks import cloud\n",
        "app.eks": "",
        "app.eks.cloud": "from app.cloud import helper\n",
        "app.leaf": "import app.cloud\n",
    }

    cycle = import_cycle(import_graph(sources))

    assert sorted(cycle) == ["app.cloud", "app.cloud", "app.eks.cloud"]


def test_the_check_resolves_relative_and_policy_pack_imports() -> None:
    sources = {
        "gpu_platform.policy_pack.props": "import checks\n",
        "gpu_platform.policy_pack.checks": "from . import props\n",
    }

    assert import_cycle(import_graph(sources)) != []


def test_the_package_has_no_import_cycle() -> None:
    graph = import_graph(module_sources(ROOT, PACKAGE))

    assert import_cycle(graph) == []


def test_the_lock_imports_first_in_a_fresh_interpreter() -> None:
    # The package's `__getattr__` imports the config model, which imports the lock, at run time,
    # where the graph above cannot see it: `from gpu_platform import yaml_documents` in the lock
    # must not call it (tools and tests import the lock first).
    result = subprocess.run(
        [sys.executable, "-c", "import gpu_platform.lock.lockfile"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
