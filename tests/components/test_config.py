"""The config model: bad stack configs fail with the key, the value and what is allowed, before
any resource is registered; good ones get the documented defaults."""

from collections.abc import Callable
from typing import Any

import pytest

from components.config import (
    ConfigError,
    ConfigProblem,
    ExclusiveSharing,
    Platform,
    load_stack_config,
)
from components.versions import GPU_OPERATOR_CHART

Config = dict[str, Any]
POOLS = "gpu-platform:pools"


def pool(config: Config, index: int = 0) -> dict[str, Any]:
    return config[POOLS][index]


def second_pool(config: Config, **fields: Any) -> None:
    config[POOLS].append({**pool(config), "name": "second", **fields})


def mig_pool(**fields: Any) -> dict[str, Any]:
    return {
        "name": "a100-mig",
        "instanceTypes": ["p4de.24xlarge"],
        "accelerator": "a100-80gb",
        "gpusPerNode": 8,
        "max": 2,
        "sharing": {"mode": "mig", "strategy": "mixed", "profile": "all-1g.10gb"},
        **fields,
    }


# (what is wrong, how to break the dev config, the key path the error must name)
BAD_CONFIGS: list[tuple[str, Callable[[Config], Any], str]] = [
    ("unknown cloud", lambda c: c.update({"gpu-platform:cloud": "azure"}), "gpu-platform:cloud"),
    ("no cluster", lambda c: c.pop("gpu-platform:cluster"), "gpu-platform:cluster"),
    (
        "EKS cluster without region",
        lambda c: c["gpu-platform:cluster"].pop("region"),
        "gpu-platform:cluster.region",
    ),
    (
        "GKE node image on EKS",
        lambda c: c["gpu-platform:cluster"].update(nodeImage="cos"),
        "gpu-platform:cluster.nodeImage",
    ),
    ("no pools", lambda c: c.update({POOLS: []}), "gpu-platform:pools"),
    ("upper-case pool name", lambda c: pool(c).update(name="T4"), "gpu-platform:pools[0].name"),
    ("pool name too long", lambda c: pool(c).update(name="a" * 33), "gpu-platform:pools[0].name"),
    (
        "duplicate pool name",
        lambda c: second_pool(c, name=pool(c)["name"]),
        "gpu-platform:pools[1].name",
    ),
    ("min above max", lambda c: pool(c).update(min=5, max=2), "gpu-platform:pools[0].min"),
    ("max of zero", lambda c: pool(c).update(max=0), "gpu-platform:pools[0].max"),
    ("no max", lambda c: pool(c).pop("max"), "gpu-platform:pools[0].max"),
    ("negative min", lambda c: pool(c).update(min=-1), "gpu-platform:pools[0].min"),
    (
        "no instance types",
        lambda c: pool(c).update(instanceTypes=[]),
        "gpu-platform:pools[0].instanceTypes",
    ),
    (
        "unknown accelerator",
        lambda c: pool(c).update(accelerator="k80"),
        "gpu-platform:pools[0].accelerator",
    ),
    (
        "zero GPUs per node",
        lambda c: pool(c).update(gpusPerNode=0),
        "gpu-platform:pools[0].gpusPerNode",
    ),
    (
        "unknown capacity",
        lambda c: pool(c).update(capacity="preemptible"),
        "gpu-platform:pools[0].capacity",
    ),
    (
        "root disk too small for GPU images",
        lambda c: pool(c).update(diskSizeGib=20),
        "gpu-platform:pools[0].diskSizeGib",
    ),
    (
        "unknown sharing mode",
        lambda c: pool(c).update(sharing={"mode": "vgpu"}),
        "gpu-platform:pools[0].sharing",
    ),
    (
        "time-slicing with one replica",
        lambda c: pool(c).update(sharing={"mode": "time-slicing", "replicas": 1}),
        "gpu-platform:pools[0].sharing.replicas",
    ),
    (
        "MPS beyond its client limit",
        lambda c: pool(c).update(sharing={"mode": "mps", "replicas": 100}),
        "gpu-platform:pools[0].sharing.replicas",
    ),
    (
        "MIG on a T4",
        lambda c: pool(c).update(
            sharing={"mode": "mig", "strategy": "single", "profile": "all-1g.10gb"}
        ),
        "gpu-platform:pools[0].sharing.mode",
    ),
    (
        "MIG profile the GPU does not have",
        lambda c: c.update(
            {
                POOLS: [
                    mig_pool(sharing={"mode": "mig", "strategy": "single", "profile": "all-1g.5gb"})
                ]
            }
        ),
        "gpu-platform:pools[0].sharing.profile",
    ),
    (
        "MIG without a strategy",
        lambda c: c.update({POOLS: [mig_pool(sharing={"mode": "mig", "profile": "all-1g.10gb"})]}),
        "gpu-platform:pools[0].sharing.strategy",
    ),
    (
        "two MIG strategies in one cluster",
        lambda c: c.update(
            {
                POOLS: [
                    mig_pool(),
                    mig_pool(
                        name="a100-single",
                        sharing={"mode": "mig", "strategy": "single", "profile": "all-3g.40gb"},
                    ),
                ]
            }
        ),
        "gpu-platform:pools[1].sharing.strategy",
    ),
    (
        "capacity block over two instance types",
        lambda c: pool(c).update(capacity="capacity-block"),
        "gpu-platform:pools[0].instanceTypes",
    ),
    (
        "label the platform sets",
        lambda c: pool(c).update(labels={"nvidia.com/gpu.present": "false"}),
        "gpu-platform:pools[0].labels.nvidia.com/gpu.present",
    ),
    (
        "label value with a space",
        lambda c: pool(c).update(labels={"team": "ml research"}),
        "gpu-platform:pools[0].labels.team",
    ),
    (
        "taint effect in EKS spelling",
        lambda c: pool(c).update(taints=[{"key": "team", "value": "ml", "effect": "NO_SCHEDULE"}]),
        "gpu-platform:pools[0].taints[0].effect",
    ),
    ("misspelt pool key", lambda c: pool(c).update(maxSize=4), "gpu-platform:pools[0].maxSize"),
    (
        "chart version latest",
        lambda c: c.update({"gpu-platform:operator": {"chartVersion": "latest"}}),
        "gpu-platform:operator.chartVersion",
    ),
    (
        "chart version range",
        lambda c: c.update({"gpu-platform:operator": {"chartVersion": "^26.7.0"}}),
        "gpu-platform:operator.chartVersion",
    ),
    (
        "chart repository over plain http",
        lambda c: c.update(
            {"gpu-platform:operator": {"repository": "http://helm.ngc.nvidia.com/nvidia"}}
        ),
        "gpu-platform:operator.repository",
    ),
    (
        "operator timeout too short for a driver build",
        lambda c: c.update({"gpu-platform:operator": {"timeoutSeconds": 10}}),
        "gpu-platform:operator.timeoutSeconds",
    ),
    (
        "tenant in the operator's namespace",
        lambda c: c["gpu-platform:namespaces"][0].update(name="gpu-operator"),
        "gpu-platform:namespaces[0].name",
    ),
    (
        "privileged tenant namespace",
        lambda c: c["gpu-platform:namespaces"][0].update(podSecurity="privileged"),
        "gpu-platform:namespaces[0].podSecurity",
    ),
    (
        "smoke test on a pool that does not exist",
        lambda c: c["gpu-platform:namespaces"][0].update(smokeTestPool="h100"),
        "gpu-platform:namespaces[0].smokeTestPool",
    ),
    (
        "smoke test in a namespace allowed no GPU",
        lambda c: c["gpu-platform:namespaces"][0].update(gpuQuota=0),
        "gpu-platform:namespaces[0].gpuQuota",
    ),
    (
        "negative GPU quota",
        lambda c: c["gpu-platform:namespaces"][0].update(gpuQuota=-1),
        "gpu-platform:namespaces[0].gpuQuota",
    ),
    (
        "framebuffer alert at 100 percent",
        lambda c: c.update({"gpu-platform:monitoring": {"framebufferFullPercent": 100}}),
        "gpu-platform:monitoring.framebufferFullPercent",
    ),
    ("misspelt top-level key", lambda c: c.update({"gpu-platform:pool": []}), "gpu-platform:pool"),
]


@pytest.mark.parametrize(
    ("breakage", "expected_path"),
    [pytest.param(b, p, id=name) for name, b, p in BAD_CONFIGS],
)
def test_bad_config_names_its_key_and_registers_nothing(
    dev_config: Config, failed_plan_for, breakage, expected_path: str
) -> None:
    breakage(dev_config)

    plan = failed_plan_for(dev_config)

    assert isinstance(plan.error, ConfigError), plan.error
    assert expected_path in [p.path for p in plan.error.problems], plan.error.report()
    assert plan.resources == []


def test_every_problem_is_reported_at_once(dev_config: Config, failed_plan_for) -> None:
    pool(dev_config).update(max=0, capacity="preemptible")
    dev_config["gpu-platform:operator"] = {"chartVersion": "latest"}

    plan = failed_plan_for(dev_config)

    assert isinstance(plan.error, ConfigError)
    assert {p.path for p in plan.error.problems} == {
        "gpu-platform:pools[0].max",
        "gpu-platform:pools[0].capacity",
        "gpu-platform:operator.chartVersion",
    }


def test_report_names_the_value_found_and_what_is_allowed() -> None:
    error = ConfigError([ConfigProblem("gpu-platform:pools[1].max", 0, "at least 1")])

    assert (
        error.report().splitlines()[1] == "  gpu-platform:pools[1].max: got 0; expected at least 1"
    )


def test_pattern_errors_are_explained_in_words(dev_config: Config, failed_plan_for) -> None:
    pool(dev_config).update(name="T4")

    plan = failed_plan_for(dev_config)

    assert isinstance(plan.error, ConfigError)
    assert plan.error.problems[0].expected.startswith("lowercase letters, digits and '-'")


def test_missing_key_says_it_is_required(dev_config: Config, failed_plan_for) -> None:
    pool(dev_config).pop("max")

    plan = failed_plan_for(dev_config)

    assert "the key is required" in plan.error.report()  # type: ignore[union-attr]


MINIMAL = {
    "cloud": "aws",
    "cluster": {"name": "ml", "region": "us-east-1"},
    "pools": [{"name": "gpu", "instanceTypes": ["g5.xlarge"], "max": 2}],
}


def test_pools_scale_to_zero_by_default() -> None:
    assert load_stack_config(MINIMAL).pools[0].min == 0


def test_pools_default_to_exclusive_on_demand_gpus() -> None:
    spec = load_stack_config(MINIMAL).pools[0]

    assert (spec.capacity, spec.sharing) == ("on-demand", ExclusiveSharing())


def test_root_disk_defaults_to_room_for_gpu_images() -> None:
    assert load_stack_config(MINIMAL).pools[0].disk_size_gib >= 100


def test_operator_defaults_to_the_pinned_chart() -> None:
    operator = load_stack_config(MINIMAL).operator

    assert (operator.chart_version, operator.repository) == (
        GPU_OPERATOR_CHART.version,
        GPU_OPERATOR_CHART.repository,
    )


@pytest.mark.parametrize(
    ("cloud", "cluster", "node_image", "platform"),
    [
        ("aws", {"region": "us-east-1"}, None, Platform.EKS_AL2023),
        ("aws", {"region": "us-east-1"}, "bottlerocket", Platform.EKS_BOTTLEROCKET),
        ("gcp", {"project": "p", "location": "us-central1"}, None, Platform.GKE_COS),
        ("gcp", {"project": "p", "location": "us-central1"}, "ubuntu", Platform.GKE_UBUNTU),
    ],
)
def test_platform_follows_cloud_and_node_image(cloud, cluster, node_image, platform) -> None:
    raw = {
        **MINIMAL,
        "cloud": cloud,
        "cluster": {"name": "ml", **cluster, **({"nodeImage": node_image} if node_image else {})},
        "pools": [{"name": "gpu", "instanceTypes": ["g2-standard-8"], "max": 2}],
    }

    assert load_stack_config(raw).platform is platform
