"""The pack as `pulumi policy new` lays it out, and as the engine and its README describe it."""

import json
import re
import subprocess
import sys
import tomllib

import yaml

from gpu_platform.offline.analyzer import PACK_DIR, PolicyPack, reconcile_config
from tests.gpu_platform.policy_pack.builders import eks_node_group

ROOT = PACK_DIR.parent.parent
README = (PACK_DIR / "README.md").read_text()


def test_the_pack_is_a_python_policy_project() -> None:
    project = yaml.safe_load((PACK_DIR / "PulumiPolicy.yaml").read_text())

    assert project["runtime"]["name"] == "python"
    assert re.fullmatch(r"\d+\.\d+\.\d+", project["version"])
    assert project["description"]


def requirement_pins() -> dict[str, tuple[str, int]]:
    """requirements.txt as name -> (version, number of hashes)."""
    pins: dict[str, tuple[str, int]] = {}
    name = ""
    for line in (PACK_DIR / "requirements.txt").read_text().splitlines():
        if "==" in line and not line.startswith((" ", "#")):
            name, version = line.split(" ", 1)[0].split(";", 1)[0].split("==")
            pins[name] = (version, 0)
        elif line.strip().startswith("--hash=sha256:"):
            pins[name] = (pins[name][0], pins[name][1] + 1)
    return pins


def test_requirements_pin_every_package_at_the_version_the_project_locks() -> None:
    locked = {
        package["name"]: package["version"]
        for package in tomllib.loads((ROOT / "uv.lock").read_text())["package"]
    }
    pins = requirement_pins()

    assert {name: version for name, (version, _) in pins.items()} == {
        name: locked[name] for name in pins
    }, "run gpu_platform/policy_pack/lock.sh"


def test_requirements_carry_hashes_so_pip_installs_only_what_was_locked() -> None:
    # With a hash on every requirement pip turns on --require-hashes, and refuses any package
    # that is not pinned here, transitive ones included.
    pins = requirement_pins()
    direct = [
        line.strip()
        for line in (PACK_DIR / "requirements.in").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]

    assert set(direct) <= set(pins)
    assert all(hashes for _, hashes in pins.values())


def test_importing_the_pack_collects_its_policies_without_starting_it() -> None:
    script = (
        "import json, runpy, sys; sys.path.insert(0, '.'); "
        "namespace = runpy.run_path('__main__.py', run_name='imported'); "
        "print(json.dumps([p.name for p in namespace['POLICIES']]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=PACK_DIR,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )

    assert len(json.loads(done.stdout)) == 57


def test_the_running_pack_names_itself_and_its_policies(policy_pack: PolicyPack) -> None:
    assert policy_pack.name == "gpu-platform"
    assert all(policy.description for policy in policy_pack.policies)
    assert len({policy.name for policy in policy_pack.policies}) == 57


def test_the_readme_documents_each_policy_its_level_and_parameters(
    policy_pack: PolicyPack,
) -> None:
    for policy in policy_pack.policies:
        section = README.split(f"### {policy.name}\n", 1)[1].split("\n### ", 1)[0]
        section = " ".join(section.split())
        row = re.search(rf"^\| `{policy.name}` \|.*$", README, re.M)

        assert row and f"| {policy.enforcement_level} |" in row[0], policy.name
        assert f"**Level.** {policy.enforcement_level}" in section, policy.name
        for key, schema in policy.config_schema.items():
            assert f"`{key}` (`{as_written(schema['default'])}`)" in section, (policy.name, key)


def as_written(value: object) -> str:
    """A default as the README writes it; the schema's numbers come back from protobuf as
    floats."""
    if isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return json.dumps(value)


def test_the_pack_reports_config_keys_a_policy_does_not_take(policy_pack: PolicyPack) -> None:
    # The engine passes such keys on (its schema cannot forbid them); the pack says so.
    policy_pack.configure({"gpu-pool-scaling": {"maxNodesPerPol": 8}}, strict=False)
    try:
        verdicts = policy_pack.analyze([eks_node_group()])
    finally:
        policy_pack.configure(None)

    assert [
        (v.enforcement_level, v.message) for v in verdicts if v.policy_name == "policy-config-known"
    ] == [
        (
            "mandatory",
            'the policy config gives policy "gpu-pool-scaling" the key "maxNodesPerPol", which '
            "it does not take, so the setting meant has its default. Fix: correct the name (the "
            "pack's README lists each policy's parameters) or remove it.",
        )
    ]


def test_the_pack_reports_a_policy_name_it_does_not_have(policy_pack: PolicyPack) -> None:
    # The engine passes an entry for any name on to the pack (pulumi
    # pkg/resource/analyzer/config.go, applyConfig), where no policy reads it.
    policy_pack.configure({"gpu-pool-scalling": "disabled"}, strict=False)
    try:
        verdicts = policy_pack.analyze([eks_node_group()])
    finally:
        policy_pack.configure(None)

    assert [v.message for v in verdicts if v.policy_name == "policy-config-known"] == [
        'the policy config names "gpu-pool-scalling", which is no policy of this pack, so what '
        "it sets applies to nothing. Fix: correct the name (the pack's README lists its "
        "policies) or remove it."
    ]


def test_the_pack_takes_all_as_every_policy_not_as_a_policy_name(policy_pack: PolicyPack) -> None:
    policy_pack.configure({"all": "advisory"}, strict=False)
    try:
        verdicts = policy_pack.analyze([eks_node_group()])
    finally:
        policy_pack.configure(None)

    assert [v for v in verdicts if v.policy_name == "policy-config-known"] == []


def test_prod_makes_every_policy_mandatory_but_the_advisory_by_design(
    policy_pack: PolicyPack,
) -> None:
    # The engine applies `all` to every policy first, then each policy's own entry (pulumi
    # pkg/resource/analyzer/config.go, applyConfig): without its own entry the notes on checks
    # deferred at preview would fail every preview with an unknown value (docs/ci.md).
    config = json.loads((ROOT / "policy-config" / "prod.json").read_text())

    levels = {
        name: level for name, (level, _) in reconcile_config(policy_pack.policies, config).items()
    }

    assert levels.pop("checks-deferred-at-preview") == "advisory"
    # Pod sets a team lets Kueue put on pools apart are its call (README.md).
    assert levels.pop("queued-gpu-jobs-select-one-pool") == "advisory"
    assert set(levels.values()) == {"mandatory"}
