"""Every problem the settings alone show, in one `ConfigError`: each key's own, the rules across
keys over the keys that are valid (none of them judging by a default standing in for a refused
key), keys set where the platform does not read them, values that are not plain data, and what
is wrong with the stack file itself."""

import copy
from pathlib import Path
from typing import Any

import pytest

from gpu_platform.config import (
    ClusterSpec,
    ConfigError,
    GpuPoolSpec,
    StackConfig,
    TenantNamespaceSpec,
    check_stack_config,
    load_stack_config,
)
from gpu_platform.config.fields import SetAsideKeyRead
from gpu_platform.config.loading import ReadSettings
from gpu_platform.config.near_misses import misdirected_key_problems
from gpu_platform.config.problems import MISSING
from gpu_platform.config.set_aside import set_aside
from gpu_platform.project import Project
from gpu_platform.stack_files import StackFileError, gpu_platform_config, stack_config

Config = dict[str, Any]


def committed(stack: str) -> Config:
    raw, _ = gpu_platform_config(stack_config(stack))
    return copy.deepcopy(raw)


def found(raw: Config) -> set[tuple[str, Any]]:
    with pytest.raises(ConfigError) as error:
        load_stack_config(raw)
    return {(p.path, p.value) for p in error.value.problems}


def test_a_bad_required_key_leaves_the_misspelt_region_reported() -> None:
    raw = committed("dev")
    raw["pools"][0]["max"] = True
    raw["cluster"]["region"] = "us-east-9"

    assert found(raw) == {
        ("gpu-platform:pools[0].max", True),
        ("gpu-platform:cluster.region", "us-east-9"),
    }


def test_a_pool_with_a_bad_key_leaves_the_other_pools_judged() -> None:
    raw = committed("dev")
    raw["pools"][0]["max"] = True
    second = copy.deepcopy(raw["pools"][0])
    raw["pools"].append({**second, "name": "t4-other", "min": 5, "max": 2})
    raw["pools"][1]["labels"] = {"nvidia.com/x": "y"}
    # Two pools of one tenant's replicas, whose quota queues want split (queue_rules.py).
    raw["queues"] = {"enabled": False}

    assert found(raw) == {
        ("gpu-platform:pools[0].max", True),
        ("gpu-platform:pools[1].min", 5),
        ("gpu-platform:pools[1].labels.nvidia.com/x", "y"),
    }


def test_a_bad_list_element_and_a_missing_required_key_leave_the_other_rules_running() -> None:
    raw = committed("dev")
    raw["pools"][0]["zones"] = ["us-east-1a", 5]
    del raw["pools"][0]["max"]
    raw["cluster"]["nodeImage"] = "cos"

    assert found(raw) == {
        ("gpu-platform:pools[0].zones[1]", 5),
        ("gpu-platform:pools[0].max", MISSING),
        ("gpu-platform:cluster.nodeImage", "cos"),
    }


def test_the_rules_read_the_defaults_of_keys_the_stack_does_not_set_beside_a_bad_key() -> None:
    # The tenant rules read `provisioner`, which dev leaves to its default: only a key the
    # stack gives (or must give) is set aside, not one it leaves to the model.
    raw = committed("dev")
    raw["pools"][0]["capacity"] = "preemptible"
    raw["namespaces"][0]["smokeTestPool"] = "nope"

    assert found(raw) == {
        ("gpu-platform:pools[0].capacity", "preemptible"),
        ("gpu-platform:namespaces[0].smokeTestPool", "nope"),
    }


def test_a_number_given_as_text_is_judged_across_fields_beside_a_bad_key() -> None:
    raw = committed("dev")
    raw["pools"][0]["min"] = "5"
    raw["operator"] = {"chartVersion": "latest"}

    assert found(raw) == {
        ("gpu-platform:operator.chartVersion", "latest"),
        ("gpu-platform:pools[0].min", 5),
    }


def test_a_misspelt_provisioner_blames_no_other_key() -> None:
    # The node groups' rules would judge karpenter-dev's pools by the default provisioner,
    # cluster-autoscaler, and refuse its reserved pool's on-demand fallback.
    raw = committed("karpenter-dev")
    raw["provisioner"] = "karpentr"

    assert found(raw) == {("gpu-platform:provisioner", "karpentr")}


def test_keys_set_elsewhere_values_not_plain_and_every_other_problem_come_in_one_error() -> None:
    raw = committed("dev")
    del raw["namespaces"]
    raw["pools"][0]["max"] = True  # a key's own
    raw["cluster"]["region"] = "us-east-9"  # a rule across keys
    raw["pools"][0]["labels"] = {"team": object()}  # not plain data
    raw["cluster"]["nodeImage"] = "cos"  # a rule across keys, independent of the rest
    raw["operator"] = {"chartVersion": "latest"}  # a key's own
    keys = {"gpu-platform:cloud", "ml-gpus:namespaces"}
    misdirected = misdirected_key_problems(keys, "ml-gpus", lambda key: [{"name": "a"}])

    with pytest.raises(ConfigError) as error:
        load_stack_config(ReadSettings(raw, misdirected))

    assert {p.path for p in error.value.problems} == {
        "ml-gpus:namespaces",
        "gpu-platform:pools[0].labels.team",
        "gpu-platform:pools[0].max",
        "gpu-platform:operator.chartVersion",
        "gpu-platform:cluster.region",
        "gpu-platform:cluster.nodeImage",
    }


def test_a_stack_files_own_problems_come_with_the_configs(tmp_path: Path) -> None:
    # Pulumi drops a top-level key other than ProjectStack's (pulumi/pulumi
    # sdk/go/common/workspace/project.go) and refuses a config key that is not
    # `<namespace>:<name>` (config.ParseKey); `monitoring` is the project's key
    # (loaders.go, `stackConfigNamespacedWithProject`).
    (tmp_path / "Pulumi.yaml").write_text("name: ml-gpus\nruntime: python\n")
    (tmp_path / "__main__.py").write_text("")
    text = Path("Pulumi.dev.yaml").read_text().replace("max: 3", "max: true")
    text = text.replace("config:\n", "config:\n  a:b:c: 1\n  monitoring: {}\n")
    (tmp_path / "Pulumi.staging.yaml").write_text(text + "gpu-platform:protect: true\n")

    with pytest.raises(StackFileError) as error:
        stack_config("staging", Project.find(tmp_path))

    stack_file = tmp_path / "Pulumi.staging.yaml"
    assert str(error.value).splitlines() == [
        f"{stack_file}: 'gpu-platform:protect': not a key of a stack file, which Pulumi would"
        " ignore (it reads config, environment, secretsprovider, encryptedkey, encryptionsalt);"
        " a configuration key belongs under `config:`",
        f"{stack_file}: 'a:b:c': could not parse as a configuration key (configuration keys"
        " should be of the form `<namespace>:<name>`, as in `gpu-platform:pools`)",
        "Invalid stack configuration (2 problem(s)):",
        "  ml-gpus:monitoring: got {}; expected the key gpu-platform:monitoring: the platform"
        " reads the gpu-platform namespace only, not the project's (ml-gpus); set it with"
        " `pulumi config set gpu-platform:monitoring ...`",
        "  gpu-platform:pools[0].max: got true; expected a valid integer",
    ]


def test_classes_built_in_code_name_a_rule_across_fields_as_a_fields_own_problem() -> None:
    pool = GpuPoolSpec(
        name="t4",
        instance_types=["g4dn.xlarge"],
        accelerator="t4",
        gpus_per_node=1,
        max=2,
        sharing={"mode": "time-slicing", "replicas": 4},
    )
    config = StackConfig(
        cloud="aws",
        cluster=ClusterSpec(name="ml", region="us-east-1"),
        pools=[pool],
        namespaces=[TenantNamespaceSpec(name="a", gpu_quota=1)],
    )

    with pytest.raises(ConfigError) as error:
        check_stack_config(config)

    paths = [p.path for p in error.value.problems]
    assert "StackConfig.namespaces[0].gpu_quota" in paths
    assert not [path for path in paths if not path.startswith("StackConfig.")]
    with pytest.raises(ConfigError) as field_error:
        StackConfig(
            cloud="aws",
            cluster=ClusterSpec(name="ml", region="us-east-1"),
            pools=[pool],
            namespaces=[{"name": "a", "gpu_quota": True}],
        )
    assert [p.path for p in field_error.value.problems] == ["StackConfig.namespaces[0].gpu_quota"]


def test_a_set_aside_field_is_an_attribute_the_model_lacks() -> None:
    # As the loader builds a pool whose `max` it refused.
    pool = set_aside(GpuPoolSpec, {"name": "x", "max": True}, [("max",)])

    assert not hasattr(pool, "max")
    with pytest.raises(SetAsideKeyRead):
        pool.max  # noqa: B018
