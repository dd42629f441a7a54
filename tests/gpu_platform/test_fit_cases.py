"""`gpu-platform fit` against what the node provisioner's own code answers, for a table of
hand-written pods across the project's stacks (fit_cases.yaml beside this file, which cites the
upstream code path of each answer), and docs/fit.md showing the same table."""

from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_platform.fit import NodeTemplate, fits
from gpu_platform.offline.fit import node_templates
from tests.repository import ROOT
from tests.shared_plans import shared_plan

CASES: list[dict[str, Any]] = yaml.safe_load(Path(__file__).with_name("fit_cases.yaml").read_text())


@cache
def templates(stack: str) -> tuple[NodeTemplate, ...]:
    return tuple(node_templates(shared_plan(stack)))


def test_the_table_covers_every_stack_with_at_least_40_pods() -> None:
    assert len(CASES) >= 40
    assert {c["stack"] for c in CASES} == {"dev", "prod", "gke-dev", "gke-new", "karpenter-dev"}


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_fit_answers_as_the_provisioners_code(case: dict[str, Any]) -> None:
    results = fits(case["pod"], templates(case["stack"]))
    expected = case.get("fit", case["autoscaler"])

    # Which pools a pod fits, not the order the program declares them in (a pool a canary leads
    # is declared after its canary's gate).
    assert sorted(r.pool for r in results if r.fits) == sorted(expected)
    if "reason" in case:
        reasons = [reason for r in results if not r.fits for reason in r.reasons]
        assert any(reason.startswith(case["reason"]) for reason in reasons), reasons


def test_the_docs_show_every_case_with_both_answers() -> None:
    page = (ROOT / "docs" / "fit.md").read_text()
    for case in CASES:
        autoscaler = ", ".join(case["autoscaler"]) or "none"
        fit = ", ".join(case.get("fit", case["autoscaler"])) or "none"
        assert f"| `{case['name']}` | {case['stack']} | {autoscaler} | {fit} |" in page
