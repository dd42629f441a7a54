"""GpuPlatform: the whole platform as one component, from stack config or from settings in code."""

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from gpu_platform.config import (
    ClusterSpec,
    ConfigError,
    EksPoolOptions,
    GpuPoolSpec,
    MigSharing,
    StackConfig,
    TenantNamespaceSpec,
)
from gpu_platform.offline.program import Plan, run_program
from gpu_platform.platform import GpuPlatform, GpuPlatformArgs, PlatformConfigError
from gpu_platform.project import Project
from gpu_platform.stack_files import stack_config
from tests.conftest import Config, dev_stack_config
from tests.repository import PROJECT, STACKS
from tests.shared_plans import shared_plan
from tests.stack_variants import AL2023_RELEASE

NAMESPACE = "gpu-platform:"

# A program that gives the platform its settings in code, not through stack config.
IN_CODE_PROGRAM = """\
import json
import pathlib

import pulumi

from gpu_platform.platform import GpuPlatform, GpuPlatformArgs

settings = json.loads((pathlib.Path(__file__).parent / "settings.json").read_text())
platform = GpuPlatform("gpu-platform", GpuPlatformArgs.from_settings(settings))
for name, value in platform.stack_outputs.items():
    pulumi.export(name, value)
"""


def in_code_project(directory: Path, settings: dict[str, Any]) -> Project:
    """A project named as this one, whose program builds the platform from `settings`."""
    (directory / "Pulumi.yaml").write_text(
        yaml.safe_dump({"name": PROJECT.name, "runtime": "python"})
    )
    (directory / "__main__.py").write_text(IN_CODE_PROGRAM)
    (directory / "settings.json").write_text(json.dumps(settings))
    return Project.find(directory)


def platform_settings(config: Config) -> dict[str, Any]:
    return {k.removeprefix(NAMESPACE): v for k, v in config.items() if k.startswith(NAMESPACE)}


def other_config(config: Config) -> Config:
    return {k: v for k, v in config.items() if not k.startswith(NAMESPACE)}


def declared(plan: Plan) -> list[tuple[str, Any]]:
    return sorted((r.urn, r.inputs) for r in plan.resources)


def test_the_platform_from_settings_in_code_declares_what_stack_config_declares(
    tmp_path: Path, dev_config: Config
) -> None:
    project = in_code_project(tmp_path, platform_settings(dev_config))

    in_code = run_program("dev", config=other_config(dev_config), project=project)
    from_config = run_program("dev", config=dev_config, project=PROJECT)

    assert declared(in_code) == declared(from_config)
    assert in_code.outputs == from_config.outputs


@pytest.fixture(scope="module", params=STACKS)
def stack_plan(request: pytest.FixtureRequest) -> Plan:
    return shared_plan(request.param)


def platform_of(plan: Plan) -> tuple[Any, list[Any]]:
    """The platform component and its direct children."""
    (platform,) = plan.of_type("gpu-platform:index:GpuPlatform")
    return platform, plan.children_of(platform)


def test_every_resource_is_a_descendant_of_the_platform(stack_plan: Plan) -> None:
    platform, _ = platform_of(stack_plan)
    urns = {r.urn: r for r in stack_plan.resources}

    def ancestors(urn: str) -> list[str | None]:
        parent = urns[urn].parent
        return [parent, *ancestors(parent)] if parent in urns else [parent]

    assert [
        r.urn
        for r in stack_plan.resources
        if r is not platform and platform.urn not in ancestors(r.urn)
    ] == []


def test_each_part_keeps_the_urn_it_had_at_the_stacks_root(stack_plan: Plan) -> None:
    # This project's stacks were created with the parts at the stack's root: without the alias
    # `pulumi up` would replace every one of them. Their descendants inherit it (pulumi
    # pkg/resource/deploy/step_generator.go, generateAliases: "multiply out any aliases our
    # parent had").
    _, children = platform_of(stack_plan)

    assert children
    # Besides, the SDK's RBAC kinds alias their own older API versions (pulumi_kubernetes 4.34.2
    # pulumi_kubernetes/rbac/v1/Role.py and its siblings: `alias_opts`, v1alpha1 and v1beta1).
    assert [c.urn for c in children if {"spec": {"noParent": True}} not in c.aliases] == []
    assert [c.urn for c in children if len(c.aliases) > 1 and "rbac" not in c.type] == []


def test_a_new_projects_platform_claims_no_root_resource(
    tmp_path: Path, dev_config: Config
) -> None:
    project = in_code_project(tmp_path, platform_settings(dev_config))

    plan = run_program("dev", config=other_config(dev_config), project=project)

    # The Kubernetes SDK aliases some kinds to their older API versions itself (a DaemonSet to
    # apps/v1beta2's, a Role to rbac v1beta1's, under the same parent): none claims the root.
    assert [
        r.urn for r in plan.resources if any(a["spec"].get("noParent") for a in r.aliases)
    ] == []


def test_the_platform_registers_its_stack_outputs(
    monkeypatch: pytest.MonkeyPatch, dev_config: Config
) -> None:
    registered: list[dict[str, Any]] = []
    monkeypatch.setattr(GpuPlatform, "register_outputs", lambda self, o: registered.append(o))

    run_program("dev", config=dev_config, project=PROJECT)

    (outputs,) = registered
    assert sorted(outputs) == [
        "deployRoleTags",
        "gpuModels",
        "gpuOperatorNamespace",
        "gpuOperatorVersion",
        "gpuPools",
        "helmReleaseNamespaces",
        "idleBilling",
        "kubeconfig",
        "nodeSubnets",
        "pools",
        "prometheusRuleNames",
    ]


def test_settings_in_code_are_refused_as_stack_config_is(dev_config: Config) -> None:
    settings = platform_settings(dev_config)
    settings["pools"][0]["max"] = -1

    with pytest.raises(ConfigError) as refused:
        GpuPlatformArgs.from_settings(settings)

    # What `pulumi up` prints as the message alone, without a traceback.
    assert isinstance(refused.value, pulumi.RunError)
    assert refused.value.report() == (
        "Invalid stack configuration (1 problem(s)):\n"
        "  gpu-platform:pools[0].max: got -1; expected greater than or equal to 1"
    )


def test_args_built_from_the_config_classes_pass_the_rules_across_fields() -> None:
    # A MIG-only stack hands out no whole GPU: a gpuQuota there is a rule across `pools` and
    # `namespaces`, which a StackConfig built in code has not met.
    mig_only = StackConfig(
        cloud="aws",
        cluster=ClusterSpec(name="ml", region="us-east-1"),
        pools=[
            GpuPoolSpec(
                name="h100",
                instance_types=["p5.48xlarge"],
                max=1,
                sharing=MigSharing(mode="mig", profile="all-1g.10gb"),
                aws=EksPoolOptions(ami_release_version=AL2023_RELEASE),
            )
        ],
        namespaces=[TenantNamespaceSpec(name="ml", gpu_quota=4)],
    )

    with pytest.raises(PlatformConfigError) as refused:
        GpuPlatformArgs(mig_only)

    assert [p.path for p in refused.value.problems] == ["StackConfig.namespaces[0].gpu_quota"]


def test_every_public_name_is_the_packages() -> None:
    # Asked of a fresh interpreter: the package alone loads no Pulumi SDK, for the commands
    # that only read stack files.
    script = (
        "import sys, gpu_platform\n"
        "assert 'pulumi' not in sys.modules\n"
        "from gpu_platform import GpuPlatform, GpuPlatformArgs, StackConfig, GpuPoolSpec\n"
        "from gpu_platform.platform import GpuPlatform as component\n"
        "from gpu_platform.config import StackConfig as model\n"
        "assert (GpuPlatform, StackConfig) == (component, model)\n"
    )

    subprocess.run([sys.executable, "-c", script], check=True)


# A program that creates its EKS cluster, hands its outputs to the platform and reaches it
# through a Kubernetes provider of its own, made from the cluster's outputs, with every default
# provider disabled.
COMPOSING_PROGRAM = """\
import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as kubernetes

from gpu_platform import EksClusterFacts, GpuPlatform, GpuPlatformArgs

cloud = aws.Provider("aws", region="us-east-1")
cluster = aws.eks.Cluster(
    "ml-dev",
    name="ml-dev",
    role_arn="arn:aws:iam::123456789012:role/eks-cluster",
    vpc_config={"subnet_ids": ["subnet-0a1b2c3d4e5f60017", "subnet-0a1b2c3d4e5f60013"]},
    opts=pulumi.ResourceOptions(provider=cloud),
)
kubeconfig = pulumi.Output.all(cluster.endpoint, cluster.certificate_authority.data).apply(
    lambda found: f"server: {found[0]}, ca: {found[1]}"
)
reach = kubernetes.Provider("ml-dev", kubeconfig=kubeconfig)
facts = EksClusterFacts(
    name=cluster.name,
    endpoint=cluster.endpoint,
    certificate_authority=cluster.certificate_authority.data,
    security_group_id=cluster.vpc_config.cluster_security_group_id,
    vpc_id=cluster.vpc_config.vpc_id,
    kubernetes_version="1.35",
    node_subnets={
        "subnet-0a1b2c3d4e5f60017": "us-east-1a",
        "subnet-0a1b2c3d4e5f60013": "us-east-1b",
    },
)
platform = GpuPlatform(
    "gpu-platform",
    GpuPlatformArgs.from_config(cluster_facts=FACTS),
    pulumi.ResourceOptions(providers=PROVIDERS),
)
"""


def composed(
    directory: Path,
    stack_config: Config,
    providers: str = "[cloud, reach]",
    facts: str = "facts",
) -> Plan:
    """`COMPOSING_PROGRAM` previewed, the platform given `providers` and `facts`: the
    cluster's endpoint and CA are unknown until it exists."""
    (directory / "Pulumi.yaml").write_text(
        yaml.safe_dump({"name": PROJECT.name, "runtime": "python"})
    )
    (directory / "__main__.py").write_text(
        COMPOSING_PROGRAM.replace("PROVIDERS", providers).replace("FACTS", facts)
    )
    config = {
        **{k: v for k, v in stack_config.items() if not k.startswith("aws:")},
        "pulumi:disable-default-providers": ["*"],
    }
    return run_program(
        "dev", config=config, project=Project.find(directory), preview=True, raise_errors=False
    )


@pytest.fixture(scope="module")
def composed_plan(tmp_path_factory: pytest.TempPathFactory) -> Plan:
    plan = composed(tmp_path_factory.mktemp("composed"), dev_stack_config())
    assert plan.error is None
    return plan


def provider_urn(reference: str | None) -> str:
    """A provider reference, `<urn>::<id>`, without the id."""
    return (reference or "").rsplit("::", 1)[0]


def test_with_default_providers_disabled_every_resource_takes_a_given_provider(
    composed_plan: Plan,
) -> None:
    # The engine refuses a default provider under `pulumi:disable-default-providers`; the
    # mock monitor does not, so the test reads what each registration names.
    (cloud,) = composed_plan.of_type("pulumi:providers:aws")
    (reach,) = composed_plan.of_type("pulumi:providers:kubernetes")
    expected = {"aws": cloud.urn, "kubernetes": reach.urn}

    assert [
        (r.urn, r.provider)
        for r in composed_plan.resources
        if r.custom
        and not r.type.startswith("pulumi:providers:")
        and provider_urn(r.provider) != expected[r.type.split(":")[0]]
    ] == []


def test_with_default_providers_disabled_every_lookup_takes_the_given_provider(
    composed_plan: Plan,
) -> None:
    (cloud,) = composed_plan.of_type("pulumi:providers:aws")

    assert composed_plan.invokes
    assert {provider_urn(i.provider) for i in composed_plan.invokes} == {cloud.urn}


# Two platforms in one stack, each on its cluster, their parts named under each.
TWO_PLATFORMS_PROGRAM = """\
import json
import pathlib

from gpu_platform import GpuPlatform, GpuPlatformArgs

settings = json.loads((pathlib.Path(__file__).parent / "settings.json").read_text())
for name, cluster in (("team-a", "ml-dev"), ("team-b", "ml-other")):
    settings["cluster"]["name"] = cluster
    GpuPlatform(name, GpuPlatformArgs.from_settings(settings, part_names_under_it=True))
"""


def test_two_platforms_in_one_stack_name_their_parts_apart(
    tmp_path: Path, dev_config: Config, shared_plan_for
) -> None:
    project = in_code_project(tmp_path, platform_settings(dev_config))
    (tmp_path / "__main__.py").write_text(TWO_PLATFORMS_PROGRAM)
    one = shared_plan_for(dev_config)

    plan = run_program("dev", config=other_config(dev_config), project=project)

    # The engine refuses a URN given twice; the mock monitor does not.
    urns = [r.urn for r in plan.resources]
    assert len(urns) == len(set(urns)) == 2 * len(one.resources)
    # The parts are the stack's one platform's, under the platform's name; the Kubernetes
    # objects keep their own names (a cluster each).
    team_a = {
        (r.type, r.name.removeprefix("team-a-")): r
        for r in plan.resources
        if r.name.startswith("team-a")
    }
    alone = {(r.type, "team-a" if r.name == "gpu-platform" else r.name): r for r in one.resources}
    assert team_a.keys() == alone.keys()
    assert [
        key
        for key, r in team_a.items()
        if r.type.startswith("kubernetes:") and r.inputs != alone[key].inputs
    ] == []


def test_a_second_platform_on_the_same_cluster_is_refused_before_it_registers(
    tmp_path: Path, dev_config: Config
) -> None:
    # Both would declare the pools' IAM role `ml-dev.pool-t4-shared`, the operator's Helm
    # release and the tenants' namespaces: `pulumi up` would fail partway.
    project = in_code_project(tmp_path, platform_settings(dev_config))
    (tmp_path / "__main__.py").write_text(TWO_PLATFORMS_PROGRAM.replace('"ml-other"', '"ml-dev"'))

    plan = run_program("dev", config=other_config(dev_config), project=project, raise_errors=False)

    assert isinstance(plan.error, PlatformConfigError)
    assert [(p.path, p.value) for p in plan.error.problems] == [
        ("gpu-platform:cluster.name", "ml-dev")
    ]
    assert "'team-a' is on it" in plan.error.report()
    assert not any(r.name.startswith("team-b") for r in plan.resources)


def test_a_kubernetes_provider_of_the_programs_own_is_refused_for_a_cluster_it_creates(
    tmp_path: Path,
) -> None:
    # The platform reaches a cluster it creates through a provider made from it, which waits
    # for the cluster's access entries and system nodes.
    plan = composed(tmp_path, stack_config("eks-new", PROJECT), facts="None")

    assert isinstance(plan.error, PlatformConfigError)
    assert [p.path for p in plan.error.problems] == ["gpu-platform:cluster.create"]


def test_an_instance_name_too_long_for_its_iam_roles_is_refused_by_name(
    tmp_path: Path, dev_config: Config
) -> None:
    # On ml-dev the cluster autoscaler's role is `ml-dev.<instance>-cluster-autoscaler`: an
    # instance name of 38 characters makes it IAM's 64 (IAM CreateRole, `RoleName`), 39 one more.
    project = in_code_project(tmp_path, platform_settings(dev_config))
    (tmp_path / "__main__.py").write_text(
        TWO_PLATFORMS_PROGRAM.replace('"team-a"', '"' + "a" * 39 + '"')
    )

    plan = run_program("dev", config=other_config(dev_config), project=project, raise_errors=False)

    assert isinstance(plan.error, PlatformConfigError)
    assert [(p.path, p.value) for p in plan.error.problems] == [("GpuPlatform.name", "a" * 39)]
    assert "a name of at most 38 characters on EKS cluster ml-dev" in plan.error.report()
    assert plan.resources == []


def test_an_instance_name_that_makes_a_role_name_of_iams_64_characters_plans(
    tmp_path: Path,
) -> None:
    # IAM CreateRole, `RoleName`: at most 64 characters. On a created ml-dev, an instance name
    # of 38 characters makes `ml-dev.<instance>-cluster-autoscaler` exactly 64; the system
    # node group's and the pools' roles do not take it.
    instance = "a" * 38
    config = stack_config("eks-new", PROJECT)
    project = in_code_project(tmp_path, platform_settings(config))
    (tmp_path / "__main__.py").write_text(
        TWO_PLATFORMS_PROGRAM.replace('"team-a"', f'"{instance}"')
    )

    plan = run_program("eks-new", config=other_config(config), project=project)

    names = {r.inputs["name"] for r in plan.of_type("aws:iam/role:Role")}
    assert max(len(name) for name in names) == 64
    assert {f"ml-dev.{instance}-cluster-autoscaler", "ml-dev.system-nodes"} <= names


def test_a_kubeconfig_context_beside_a_kubernetes_provider_of_the_programs_own_is_refused(
    tmp_path: Path,
) -> None:
    config = dev_stack_config()
    config["gpu-platform:cluster"] = {**config["gpu-platform:cluster"], "kubeconfigContext": "a"}

    plan = composed(tmp_path, config)

    assert isinstance(plan.error, PlatformConfigError)
    assert [(p.path, p.value) for p in plan.error.problems] == [
        ("gpu-platform:cluster.kubeconfigContext", "a")
    ]


# A program that disables every default provider and gives the platform its own, made from the
# stack's settings: a cloud provider, and a Kubernetes provider where the cluster exists (for one
# it creates, the platform makes its own).
EXPLICIT_PROVIDERS_PROGRAM = """\
import json
import pathlib

import pulumi
import pulumi_aws as aws
import pulumi_gcp as gcp
import pulumi_kubernetes as kubernetes

from gpu_platform import GpuPlatform, GpuPlatformArgs

settings = json.loads((pathlib.Path(__file__).parent / "settings.json").read_text())
cluster = settings["cluster"]
if settings["cloud"] == "aws":
    providers = [aws.Provider("cloud", region=cluster["region"])]
else:
    providers = [gcp.Provider("cloud", project=cluster["project"], region=cluster["location"])]
if "create" not in cluster:
    providers.append(kubernetes.Provider("reach", kubeconfig="kubeconfig"))
GpuPlatform(
    "gpu-platform",
    GpuPlatformArgs.from_settings(settings),
    pulumi.ResourceOptions(providers=providers),
)
"""


# A created GKE cluster in a network of the user's looks its subnet up; in a new one, nothing.
EXISTING_GKE_NETWORK = {
    "network": "shared",
    "subnetwork": "gke-us-central1",
    "podsRangeName": "gke-pods",
    "servicesRangeName": "gke-services",
}


@pytest.fixture(
    scope="module", params=["dev", "eks-new", "gke-dev", "gke-new", "gke-new/existingNetwork"]
)
def explicit_providers_plan(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Plan:
    """The stack's platform planned by `EXPLICIT_PROVIDERS_PROGRAM`: EKS and GKE, each on a
    cluster it finds and on one it creates (GKE's in a new network and in an existing one)."""
    stack, _, variant = request.param.partition("/")
    config = stack_config(stack, PROJECT)
    settings = platform_settings(config)
    if variant:
        settings["cluster"]["create"]["gcp"][variant] = EXISTING_GKE_NETWORK
    project = in_code_project(tmp_path_factory.mktemp("explicit"), settings)
    (project.program.parent / "__main__.py").write_text(EXPLICIT_PROVIDERS_PROGRAM)
    config = {
        **{k: v for k, v in other_config(config).items() if not k.startswith(("aws:", "gcp:"))},
        "pulumi:disable-default-providers": ["*"],
    }
    return run_program(stack, config=config, project=project)


def test_with_default_providers_disabled_every_call_names_a_provider_of_the_program(
    explicit_providers_plan: Plan,
) -> None:
    # Under `pulumi:disable-default-providers` the engine refuses a resource or invoke that names
    # no provider (pulumi v3.260.0 pkg/resource/deploy/default_providers.go, `shouldDenyRequest`;
    # sdk/go/common/diag/errors.go: "Default provider for '%v' disabled"); the mock monitor
    # does not, so the test reads what each registration and invoke names. A lookup goes
    # through the given cloud provider; a resource through a provider the program or the
    # platform declares, of its own package.
    plan = explicit_providers_plan
    providers = {r.urn: r.type for r in plan.resources if r.type.startswith("pulumi:providers:")}
    (cloud,) = [urn for urn, type_ in providers.items() if type_.split(":")[2] in ("aws", "gcp")]

    assert plan.invokes
    assert [(i.token, i.provider) for i in plan.invokes if provider_urn(i.provider) != cloud] == []
    assert [
        (r.urn, r.provider)
        for r in plan.resources
        if r.custom
        and r.urn not in providers
        and providers.get(provider_urn(r.provider)) != "pulumi:providers:" + r.type.split(":")[0]
    ] == []
