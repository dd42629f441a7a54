"""The pack as `pulumi policy new` lays it out, and as the engine and its README describe it."""

import json
import re
import subprocess
import sys
import tomllib

import yaml

from gpu_platform_cli.analyzer import PACK_DIR, PolicyPack

ROOT = PACK_DIR.parent
README = (PACK_DIR / "README.md").read_text()


def test_the_pack_is_a_python_policy_project() -> None:
    project = yaml.safe_load((PACK_DIR / "PulumiPolicy.yaml").read_text())

    assert project["runtime"]["name"] == "python"
    assert re.fullmatch(r"\d+\.\d+\.\d+", project["version"])
    assert project["description"]


def test_requirements_pin_the_versions_the_project_locks() -> None:
    locked = {
        package["name"]: package["version"]
        for package in tomllib.loads((ROOT / "uv.lock").read_text())["package"]
    }
    lines = (PACK_DIR / "requirements.txt").read_text().splitlines()
    pins = dict(line.split("==") for line in lines if line and not line.startswith("#"))

    assert "pulumi-policy" in pins
    assert pins == {name: locked[name] for name in pins}


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

    assert len(json.loads(done.stdout)) == 17


def test_the_running_pack_names_itself_and_its_policies(policy_pack: PolicyPack) -> None:
    assert policy_pack.name == "gpu-platform"
    assert all(policy.description for policy in policy_pack.policies)
    assert len({policy.name for policy in policy_pack.policies}) == 17


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
