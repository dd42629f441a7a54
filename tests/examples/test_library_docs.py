"""docs/library.md's program that builds two parts alone, run as the documentation shows it."""

import re
from pathlib import Path

import yaml

from gpu_platform.offline.program import run_program
from gpu_platform.project import Project
from tests.conftest import Config
from tests.repository import ROOT

EXAMPLE = re.search(
    r"<!-- parts-example:start -->\n```python\n(.*?)```\n<!-- parts-example:end -->",
    (ROOT / "docs" / "library.md").read_text(),
    re.S,
)


def test_the_parts_example_builds_the_operator_and_a_namespace_on_its_own_provider(
    tmp_path: Path, dev_config: Config
) -> None:
    assert EXAMPLE is not None
    (tmp_path / "Pulumi.yaml").write_text(yaml.safe_dump({"name": "parts", "runtime": "python"}))
    (tmp_path / "__main__.py").write_text(EXAMPLE.group(1))

    # The engine refuses a lookup through a default provider under
    # `pulumi:disable-default-providers` (pulumi v3.260.0 pkg/resource/deploy/default_providers.go,
    # `shouldDenyRequest`); the mock monitor does not, so the test reads what each names.
    config = {k: v for k, v in dev_config.items() if not k.startswith("aws:")}
    config["pulumi:disable-default-providers"] = ["*"]

    plan = run_program("dev", config=config, project=Project.find(tmp_path))

    (account,) = plan.of_type("pulumi:providers:aws")
    assert plan.invokes
    assert [i.token for i in plan.invokes if not (i.provider or "").startswith(account.urn)] == []
    (provider,) = plan.of_type("pulumi:providers:kubernetes")
    assert provider.name == "my-cluster"
    assert {r.name for r in plan.resources if r.type.startswith("gpu-platform:")} == {
        "gpu-operator",
        "ml-team",
    }
    assert all(
        (r.provider or "").startswith(provider.urn)
        for r in plan.resources
        if r.custom and r.type.startswith("kubernetes:")
    )
