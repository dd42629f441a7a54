"""The driver mirror a GKE Ubuntu stack's operator overrides name, against its policy config
(gpu_platform/offline/driver_images.py): the plan says by key where the config does not list it."""

import copy
from collections.abc import Callable

import pytest

from gpu_platform.offline import plan as plan_module
from gpu_platform.offline.driver_images import undeclared_driver_images
from gpu_platform.offline.program import Plan
from tests.conftest import Config, dev_stack_config, gke_stack_config
from tests.repository import PROJECT

MIRROR = "registry.example.com/nvidia/driver-fips"
WHERE = "policy-config/gke-ubuntu.json"


@pytest.fixture(scope="module")
def mirrored(shared_plan_for: Callable[[Config], Plan]) -> Plan:
    config = gke_stack_config(copy.deepcopy(dev_stack_config()))
    config["gpu-platform:cluster"]["nodeImage"] = "ubuntu"
    config["gpu-platform:pools"][0]["sharing"] = {"mode": "exclusive"}
    config["gpu-platform:operator"] = {
        "overrides": {
            "driver": {"repository": "registry.example.com/nvidia", "image": "driver-fips"}
        }
    }
    return shared_plan_for(config)


@pytest.mark.parametrize(
    ("policy_config", "verdict"),
    [
        (None, "refuses"),
        ({"gpu-operator-resources": "mandatory"}, "refuses"),
        ({"gpu-operator-resources": {"driverImages": []}}, "refuses"),
        # The engine sets every policy's level from `all`, then from the policy's own entry
        # (pulumi pkg/resource/analyzer/config.go, applyConfig).
        ({"all": "advisory"}, "warns of"),
        ({"all": "disabled", "gpu-operator-resources": "advisory"}, "warns of"),
        (
            {"all": "advisory", "gpu-operator-resources": {"enforcementLevel": "mandatory"}},
            "refuses",
        ),
    ],
    ids=["none", "level-only", "not-listed", "all-advisory", "own-over-all", "own-level"],
)
def test_an_undeclared_driver_mirror_is_named_by_its_keys(
    mirrored: Plan, policy_config: Config | None, verdict: str
) -> None:
    assert undeclared_driver_images(mirrored, policy_config, WHERE) == [
        "operator.overrides.driver.repository and image name the driver image "
        f'"{MIRROR}", which {WHERE} does not list in gpu-operator-resources\' driverImages: '
        f"the policy pack {verdict} every pool's NVIDIADriver that runs it. Add "
        f'"{MIRROR}" to that list in the same change as the setting (docs/upgrades.md).'
    ]


@pytest.mark.parametrize(
    "policy_config",
    [
        {"gpu-operator-resources": {"driverImages": [MIRROR]}},
        {"gpu-operator-resources": "disabled"},
        {"all": "disabled"},
        {"all": "advisory", "gpu-operator-resources": {"driverImages": [MIRROR]}},
    ],
    ids=["listed", "disabled", "all-disabled", "listed-under-all"],
)
def test_a_declared_mirror_or_a_disabled_policy_is_not_named(
    mirrored: Plan, policy_config: Config
) -> None:
    assert undeclared_driver_images(mirrored, policy_config, WHERE) == []


def test_the_plan_warns_of_it_beside_the_packs_verdict(
    mirrored: Plan, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The repository has no stack of that name, so no policy config either: the pack's default.
    monkeypatch.setattr(plan_module, "program_plan", lambda stack, project, **_: mirrored)

    planned = plan_module.plan_stack("gke-ubuntu", project=PROJECT)

    assert [v.policy_name for v in planned.mandatory_violations] == ["gpu-operator-resources"]
    assert [w for w in planned.warnings if MIRROR in w] == undeclared_driver_images(
        mirrored, None, WHERE
    )
