"""Each command imports only what it uses: the offline plan starts in about two seconds because
it does not load moto's EC2 models, boto3, the other cloud's provider SDK or the other commands,
a pre-flight check loads its own cloud's client library, and no command that runs no program
loads Pulumi's SDKs. Checked on the real command in a fresh interpreter with `-X importtime`,
which lists every module the process imported."""

import os
import subprocess
import sys

import pytest

from tests.repository import ROOT

PULUMI_SDKS = {"pulumi", "pulumi_aws", "pulumi_gcp", "pulumi_kubernetes"}
"""What a command that runs no program (pre-flight checks, the config reference) does not load."""
OTHER_COMMANDS = (
    "gpu_platform.cli.fit",
    "gpu_platform.offline.fit",
    "gpu_platform.cli.preflight",
    "gpu_platform.preflight.check",
    "gpu_platform.eks.preflight.checks",
    "gpu_platform.gke.preflight.checks",
    "gpu_platform.cli.config_reference",
    "gpu_platform.cli.cli_reference",
    "gpu_platform.fit",
)


def imported_by(*args: str, env: dict[str, str] | None = None) -> set[str]:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "gpu_platform.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )
    # 4: a pre-flight check that found no credentials, which these runs are not given.
    assert result.returncode in (0, 1, 2, 3, 4), result.stderr
    # Lines read `import time: self | cumulative | <indent>module`.
    return {
        line.rsplit("|", 1)[1].strip()
        for line in result.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }


def top_level(modules: set[str]) -> set[str]:
    return {module.split(".")[0] for module in modules}


@pytest.fixture(scope="module")
def eks_plan_imports() -> set[str]:
    return imported_by("plan", "dev", "--json")


@pytest.fixture(scope="module")
def gke_plan_imports() -> set[str]:
    return imported_by("plan", "gke-dev", "--json")


def test_the_check_sees_what_the_plan_imports(eks_plan_imports: set[str]) -> None:
    assert {"pulumi_aws", "pulumi_kubernetes"} <= top_level(eks_plan_imports)
    assert "gpu_platform.eks.node_group" in eks_plan_imports


def test_an_eks_plan_imports_neither_moto_nor_boto3(eks_plan_imports: set[str]) -> None:
    assert top_level(eks_plan_imports) & {"moto", "boto3", "botocore"} == set()


def test_a_gke_plan_does_not_import_googles_auth_library(gke_plan_imports: set[str]) -> None:
    assert not any(m.startswith("google.auth") for m in gke_plan_imports)


def test_an_eks_plan_does_not_import_the_gke_side(eks_plan_imports: set[str]) -> None:
    assert "pulumi_gcp" not in top_level(eks_plan_imports)
    assert not any(m.startswith("gpu_platform.gke") for m in eks_plan_imports)


def test_a_node_group_plan_does_not_import_the_karpenter_side(eks_plan_imports: set[str]) -> None:
    assert not any(m.startswith("gpu_platform.eks.karpenter") for m in eks_plan_imports)
    assert not any(m.startswith("pulumi_aws.cloudwatch") for m in eks_plan_imports)


def test_a_gke_plan_does_not_import_the_eks_side(gke_plan_imports: set[str]) -> None:
    assert top_level(gke_plan_imports) & {"pulumi_aws", "boto3", "moto"} == set()
    assert not any(m.startswith("gpu_platform.eks") for m in gke_plan_imports)


@pytest.mark.parametrize("module", OTHER_COMMANDS)
def test_the_plan_does_not_import_another_commands_modules(
    eks_plan_imports: set[str], module: str
) -> None:
    assert module not in eks_plan_imports


def test_help_imports_no_command_and_no_pulumi() -> None:
    imported = imported_by("--help")

    assert top_level(imported) & {"pulumi", "boto3", "moto"} == set()
    assert {m for m in imported if m.startswith("gpu_platform")} == {
        "gpu_platform",
        "gpu_platform.cli",
        "gpu_platform.cli.app",
        "gpu_platform.cli.options",
    }


@pytest.fixture(scope="module")
def without_credentials(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """An environment where neither cloud's client finds credentials, or probes a metadata
    server for them (botocore's AWS_EC2_METADATA_DISABLED, google-auth's NO_GCE_CHECK)."""
    home = tmp_path_factory.mktemp("home")
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "AWS_SHARED_CREDENTIALS_FILE": str(home / "no-credentials"),
        "AWS_CONFIG_FILE": str(home / "no-config"),
        "AWS_EC2_METADATA_DISABLED": "true",
        "CLOUDSDK_CONFIG": str(home / "gcloud"),
        "NO_GCE_CHECK": "true",
    }


def test_a_gke_preflight_does_not_import_the_eks_check_or_boto3(
    without_credentials: dict[str, str],
) -> None:
    imported = imported_by("preflight", "gke-dev", env=without_credentials)

    assert "gpu_platform.gke.preflight.checks" in imported
    assert "gpu_platform.eks.preflight.checks" not in imported
    assert top_level(imported) & {"boto3", "botocore", "moto"} == set()
    assert top_level(imported) & PULUMI_SDKS == set()


def test_an_eks_preflight_does_not_import_the_gke_check_or_googles_auth_library(
    without_credentials: dict[str, str],
) -> None:
    imported = imported_by("preflight", "dev", env=without_credentials)

    assert "gpu_platform.eks.preflight.checks" in imported
    assert "gpu_platform.gke.preflight.checks" not in imported
    assert not any(m.startswith("google.auth") for m in imported)
    assert top_level(imported) & PULUMI_SDKS == set()


def test_the_config_reference_does_not_import_pulumi() -> None:
    imported = imported_by("config-reference")

    assert "gpu_platform.cli.config_reference" in imported
    assert top_level(imported) & PULUMI_SDKS == set()
