"""The examples in docs/ are workloads the pack accepts as they are written, in the namespaces
the stacks declare, and that land on the pools they are meant for."""

from pathlib import Path
from typing import Any

import yaml

from components.fit import fitting_pools
from gpu_platform_cli.fit import node_templates
from gpu_platform_cli.offline import run_program
from tests.policies.builders import Analyze, namespace, resource, violations
from tests.repository import ROOT

NCCL_OVER_EFA = ROOT / "docs" / "examples" / "nccl-tests-over-efa.yaml"


def example(path: Path) -> dict[str, Any]:
    document = yaml.safe_load(path.read_text())
    assert isinstance(document, dict)
    return document


def test_the_nccl_over_efa_job_passes_the_pack_in_a_restricted_namespace(
    analyze: Analyze,
) -> None:
    job = example(NCCL_OVER_EFA)
    group, version = job["apiVersion"].split("/")
    mpi_job = resource(
        f"kubernetes:{group}/{version}:{job['kind']}",
        job["metadata"]["name"],
        {k: v for k, v in job.items() if k not in ("apiVersion", "kind")},
    )

    verdicts = analyze(namespace("ml-training"), mpi_job)

    assert violations(verdicts) == []


def test_the_nccl_over_efa_workers_land_on_the_efa_pool_only() -> None:
    workers = example(NCCL_OVER_EFA)["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]

    assert fitting_pools(workers, node_templates(run_program("prod"))) == ["h100-training"]
