"""Every stack file in the repository plans offline with its own policy config, and a change
that breaks a platform rule makes the plan fail with the violation."""

import copy
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpu_platform.cli.app import app
from gpu_platform.cli.plan import EXIT_MANDATORY_VIOLATION
from gpu_platform.config import ConfigError, load_stack_config
from gpu_platform.lock.lockfile import IMAGES, load, lock_path
from gpu_platform.offline.plan import read_policy_config
from gpu_platform.platform_images import platform_images
from gpu_platform.stack_files import gpu_platform_config, stack_config
from gpu_platform.versions import HelmChart
from tests.repository import PROJECT, STACKS
from tests.shared_plans import shared_plan
from tests.stack_variants import without_queues

POLICY_CONFIG_DIR = PROJECT.directory / "policy-config"


def test_the_repository_has_dev_prod_and_a_gke_stack() -> None:
    assert {"dev", "prod"} <= set(STACKS) and any(s.startswith("gke") for s in STACKS)


def test_the_repository_has_a_stack_whose_gpu_nodes_karpenter_launches() -> None:
    assert stack_config("karpenter-dev", PROJECT)["gpu-platform:provisioner"] == "karpenter"


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_has_its_ownread_policy_config(stack: str) -> None:
    assert (POLICY_CONFIG_DIR / f"{stack}.json").is_file()


@pytest.mark.parametrize("stack", STACKS)
def test_stack_plans_with_no_mandatory_violation(stack: str, analyze_plan) -> None:
    plan = shared_plan(stack)

    verdicts = analyze_plan(
        plan.resources, config=read_policy_config(POLICY_CONFIG_DIR, stack, None)
    )

    assert [v for v in verdicts if v.mandatory] == []
    # The platform's own GPU pods (smoke tests, canary gates) run by the digest the lock holds,
    # or by tag where platform-images-by-digest's awaitingDigests lets them: never a reason to
    # report a stack's own GPU pods' rule, whatever level the stack gives it.
    assert [v for v in verdicts if v.policy_name == "gpu-pods-pinned-images"] == []


@pytest.mark.parametrize("stack", STACKS)
def test_an_image_awaits_its_digest_only_while_the_lock_has_none_and_the_stack_runs_it(
    stack: str,
) -> None:
    config = json.loads((POLICY_CONFIG_DIR / f"{stack}.json").read_text())
    awaiting = config.get("platform-images-by-digest", {}).get("awaitingDigests", [])
    lock = load(lock_path(PROJECT.directory))
    stack_config_ = load_stack_config(*gpu_platform_config(stack_config(stack, PROJECT)))
    deployed = {image.key for image in platform_images(stack_config_)}

    assert [image for image in awaiting if lock.get(IMAGES, image)] == [], (
        "the lock has their digests now: remove them from awaitingDigests"
    )
    assert set(awaiting) <= deployed


def plan_dev() -> tuple[int, str]:
    result = CliRunner().invoke(app, ["plan", "dev"], env={"COLUMNS": "300"})
    return result.exit_code, result.output


def test_an_untainted_gpu_pool_fails_the_plan(monkeypatch) -> None:
    from gpu_platform import node_identity

    monkeypatch.setattr(node_identity, "GPU_TAINT", node_identity.Taint("team", "ml", "NoSchedule"))

    exit_code, output = plan_dev()

    assert exit_code == EXIT_MANDATORY_VIOLATION
    assert "mandatory gpu-pool-scheduling" in output


def test_an_unpinned_chart_fails_the_plan(monkeypatch, dev_config) -> None:
    from gpu_platform.kubernetes import monitoring
    from gpu_platform.offline import program as offline

    dev_config["gpu-platform:monitoring"] = {"installPrometheusStack": True}
    monkeypatch.setattr(offline, "stack_config", lambda stack, project=None: dev_config)
    chart = monitoring.KUBE_PROMETHEUS_STACK_CHART
    monkeypatch.setattr(
        monitoring,
        "KUBE_PROMETHEUS_STACK_CHART",
        HelmChart(chart.name, ">=93.0.0", chart.repository),
    )

    exit_code, output = plan_dev()

    assert exit_code == EXIT_MANDATORY_VIOLATION
    assert "mandatory helm-chart-pinned" in output


def test_a_root_gpu_pod_fails_the_plan(monkeypatch) -> None:
    from gpu_platform.kubernetes import tenant_namespace

    build = tenant_namespace.gpu_pod_spec

    def as_root(*args, **kwargs):
        spec = build(*args, **kwargs)
        spec["securityContext"] = {**spec["securityContext"], "runAsNonRoot": False, "runAsUser": 0}
        return spec

    monkeypatch.setattr(tenant_namespace, "gpu_pod_spec", as_root)

    exit_code, output = plan_dev()

    assert exit_code == EXIT_MANDATORY_VIOLATION
    assert "mandatory pod-security-standards" in output and "runAsUser" in output


def test_policy_config_files_are_json_objects_of_known_policies(analyze_plan) -> None:
    for path in Path(POLICY_CONFIG_DIR).glob("*.json"):
        analyze_plan([], config=read_policy_config(POLICY_CONFIG_DIR, path.stem, path))


def test_gke_dev_takes_the_exclusive_pool_its_header_invites_with_the_quota_it_says() -> None:
    # Pulumi.gke-dev.yaml's header: an exclusive a3-highgpu-8g pool may join, with ml-sandbox's
    # `sharedGpuQuota: 8` replaced by a `gpuQuota` counting the replicas and the pool's GPUs.
    config = copy.deepcopy(stack_config("gke-dev", PROJECT))
    pool = {"name": "h100-train", "instanceTypes": ["a3-highgpu-8g"], "max": 2}
    config["gpu-platform:pools"].append(pool)
    without_queues(config)
    with pytest.raises(ConfigError) as refused:
        load_stack_config(*gpu_platform_config(config))
    # The smoke test's replica then needs gpuQuota, which the stack does not set yet.
    assert sorted(p.path for p in refused.value.problems) == [
        "gpu-platform:namespaces[0].gpuQuota",
        "gpu-platform:namespaces[0].sharedGpuQuota",
    ]

    (sandbox,) = config["gpu-platform:namespaces"]
    del sandbox["sharedGpuQuota"]
    sandbox["gpuQuota"] = 8 + 16

    assert [p.name for p in load_stack_config(*gpu_platform_config(config)).pools] == [
        "l4-shared",
        "h100-train",
    ]
