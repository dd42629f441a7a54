"""A policy config that turns on `requireDigests` and leaves `platform-images-by-digest` below
mandatory (gpu_platform/offline/digest_waiver.py): the plan says so by key."""

import json
from pathlib import Path

import pytest

from gpu_platform.offline import plan as plan_module
from gpu_platform.offline.analyzer import PolicyPack
from gpu_platform.offline.digest_waiver import _POLICIES, digest_waiver_gaps
from gpu_platform.offline.program import Plan
from tests.conftest import Config
from tests.repository import PROJECT

WHERE = "policy-config/staging.json"
ON = {"requireDigests": True}


def gap(level: str) -> str:
    return (
        f"{WHERE} turns on gpu-pods-pinned-images' requireDigests but leaves "
        f"platform-images-by-digest {level}: the platform's images in its own objects (smoke "
        "tests, canary gates) are held to a digest by platform-images-by-digest alone, so they "
        'may run by tag. Set "platform-images-by-digest": {"enforcementLevel": "mandatory"} '
        '(or "all": "mandatory").'
    )


@pytest.mark.parametrize(
    ("policy_config", "level"),
    [
        # platform-images-by-digest is advisory unless configured (platform_images.py).
        ({"gpu-pods-pinned-images": ON}, "advisory"),
        ({"gpu-pods-pinned-images": ON, "platform-images-by-digest": "disabled"}, "disabled"),
        # The engine sets every policy's level from `all`, then from the policy's own entry
        # (pulumi pkg/resource/analyzer/config.go, applyConfig).
        (
            {
                "all": "mandatory",
                "gpu-pods-pinned-images": ON,
                "platform-images-by-digest": {"enforcementLevel": "advisory"},
            },
            "advisory",
        ),
    ],
    ids=["default", "disabled", "own-over-all"],
)
def test_require_digests_without_a_mandatory_digest_rule_is_named_by_its_keys(
    policy_config: Config, level: str
) -> None:
    assert digest_waiver_gaps(policy_config, WHERE) == [gap(level)]


@pytest.mark.parametrize(
    "policy_config",
    [
        None,
        {"gpu-pods-pinned-images": {"requireDigests": False}},
        {"all": "mandatory", "gpu-pods-pinned-images": ON},
        {"gpu-pods-pinned-images": ON, "platform-images-by-digest": "mandatory"},
        {"gpu-pods-pinned-images": {**ON, "enforcementLevel": "disabled"}},
    ],
    ids=["none", "off", "all-mandatory", "own-mandatory", "pinned-disabled"],
)
def test_a_config_that_keeps_the_digest_rule_mandatory_is_not_named(
    policy_config: Config | None,
) -> None:
    assert digest_waiver_gaps(policy_config, WHERE) == []


def test_every_shipped_policy_config_with_require_digests_makes_the_digest_rule_mandatory() -> None:
    configs = {
        path.name: json.loads(path.read_text())
        for path in sorted((PROJECT.directory / "policy-config").glob("*.json"))
    }
    requiring = [n for n, c in configs.items() if c.get("gpu-pods-pinned-images", {}) == ON]
    assert requiring == ["prod.json"]
    assert [w for n, c in configs.items() for w in digest_waiver_gaps(c, n)] == []


def test_the_levels_and_setting_it_assumes_are_the_packs(policy_pack: PolicyPack) -> None:
    declared = {p.name: p for p in policy_pack.policies}
    for assumed in _POLICIES:
        pack = declared[assumed.name]
        assert pack.enforcement_level == assumed.enforcement_level
        for key, schema in assumed.config_schema.items():
            assert pack.config_schema[key]["default"] == schema["default"]


def test_the_plan_warns_of_it(
    dev_plan: Plan, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(plan_module, "program_plan", lambda stack, project, **_: dev_plan)
    config = tmp_path / "staging.json"
    config.write_text(json.dumps({"gpu-pods-pinned-images": ON}))

    planned = plan_module.plan_stack("dev", project=PROJECT, policy_config=config)

    assert [w for w in planned.warnings if "requireDigests" in w] == [
        gap("advisory").replace(WHERE, str(config))
    ]
