"""`GpuPlatformArgs(cluster_facts=...)`: a program that creates its cluster hands its outputs to
the platform, which looks nothing up about it.

The programs are docs/library.md's, previewed with the created cluster's outputs unknown, as on
a first `pulumi preview` (the stand-in answers nothing for the cluster), and the stand-ins'
cluster lookups do not find a cluster the program creates: a lookup of it fails the plan.
"""

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_platform import EksClusterFacts, GkeClusterFacts, GpuPlatformArgs, PlatformConfigError
from gpu_platform.offline.program import Plan, PlannedResource, run_program
from gpu_platform.offline.stand_ins import aws as aws_stand_in
from gpu_platform.offline.stand_ins import gcp as gcp_stand_in
from gpu_platform.project import Project
from gpu_platform.stack_files import stack_config
from tests.conftest import Config, dev_stack_config, gke_stack_config
from tests.repository import PROJECT, ROOT


def documented_program(cloud: str) -> str:
    """docs/library.md's program composing a cluster it creates with the platform, on `cloud`."""
    marker = f"<!-- facts-example-{cloud}"
    found = re.search(
        rf"{marker}:start -->\n```python\n(.*?)```\n{marker}:end -->",
        (ROOT / "docs" / "library.md").read_text(),
        re.S,
    )
    assert found is not None
    return found.group(1)


EKS_PROGRAM = documented_program("eks")
GKE_PROGRAM = documented_program("gke")

SUBNET_LOOKUPS = {
    "aws:ec2/getSubnet:getSubnet",
    "aws:ec2/getRouteTables:getRouteTables",
    "aws:ec2/getRouteTable:getRouteTable",
}
# Every lookup of an existing cluster and of its network.
CLUSTER_LOOKUPS = {
    "aws:eks/getCluster:getCluster",
    *SUBNET_LOOKUPS,
    "gcp:container/getCluster:getCluster",
}


@pytest.fixture
def created_outputs_unknown(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A created cluster's outputs unknown, as a provider's preview leaves them."""
    monkeypatch.setitem(aws_stand_in.OUTPUTS, "aws:eks/cluster:Cluster", lambda name, inputs: {})
    monkeypatch.setitem(
        gcp_stand_in.OUTPUTS, "gcp:container/cluster:Cluster", lambda name, inputs: {}
    )
    yield


def previewed(directory: Path, program: str, config: Config) -> Plan:
    (directory / "Pulumi.yaml").write_text(
        yaml.safe_dump({"name": PROJECT.name, "runtime": "python"})
    )
    (directory / "__main__.py").write_text(program)
    config = {**config, "pulumi:disable-default-providers": ["*"]}
    return run_program(
        "dev", config=config, project=Project.find(directory), preview=True, raise_errors=False
    )


def created_cluster(plan: Plan, type_: str) -> PlannedResource:
    (cluster,) = plan.of_type(type_)
    return cluster


def platform_provider(plan: Plan) -> PlannedResource:
    (provider,) = [r for r in plan.of_type("pulumi:providers:kubernetes") if r.parent is not None]
    return provider


def test_a_stand_in_lookup_of_a_cluster_the_program_creates_fails(tmp_path: Path) -> None:
    # What makes the other tests here mean something: the platform looking the created cluster
    # up would fail the plan, as EKS fails it on a first preview.
    program = EKS_PROGRAM.replace("cluster_facts=facts", "")

    plan = previewed(tmp_path, program, dev_stack_config())

    assert "reading EKS Cluster (ml-dev): ResourceNotFoundException" in str(plan.error)


def test_a_cluster_one_program_creates_is_found_by_lookups_after_it(tmp_path: Path) -> None:
    previewed(tmp_path, EKS_PROGRAM.replace("cluster_facts=facts", ""), dev_stack_config())

    assert aws_stand_in.get_cluster({"name": "ml-dev"})["name"] == "ml-dev"


@pytest.mark.usefixtures("created_outputs_unknown")
def test_an_eks_cluster_the_program_creates_flows_into_the_platform_unlooked_up(
    tmp_path: Path,
) -> None:
    plan = previewed(tmp_path, EKS_PROGRAM, dev_stack_config())

    assert plan.error is None
    # The node subnets exist already, and are looked up as the settings' are; the cluster is not.
    assert {i.token for i in plan.invokes} & CLUSTER_LOOKUPS == SUBNET_LOOKUPS
    cluster = created_cluster(plan, "aws:eks/cluster:Cluster")
    # The program's own system node group aside.
    groups = [g for g in plan.of_type("aws:eks/nodeGroup:NodeGroup") if g.name != "system"]
    # The dev stack's one pool, in the given subnets (its node group spans their zones).
    assert [g.inputs["subnetIds"] for g in groups] == [
        ["subnet-0a1b2c3d4e5f60017", "subnet-0a1b2c3d4e5f60013"]
    ]
    assert [
        g.name for g in groups if cluster.urn not in g.property_dependencies["clusterName"]
    ] == []
    associations = plan.of_type("aws:eks/podIdentityAssociation:PodIdentityAssociation")
    assert associations
    assert [
        a.name for a in associations if cluster.urn not in a.property_dependencies["clusterName"]
    ] == []
    # The platform reaches the cluster through a provider it makes from the given endpoint and
    # CA: unknown until the cluster exists, and waiting for it.
    provider = platform_provider(plan)
    assert "kubeconfig" in provider.unknown_inputs
    assert cluster.urn in provider.property_dependencies["kubeconfig"]
    on_cluster = [r for r in plan.resources if r.type.startswith("kubernetes:")]
    assert on_cluster
    assert {r.provider.rsplit("::", 1)[0] for r in on_cluster if r.provider} == {provider.urn}


def test_a_public_or_misplaced_node_subnet_in_the_facts_is_refused_by_its_key(
    tmp_path: Path,
) -> None:
    # The stand-in VPC's public subnet, its route table sending 0.0.0.0/0 to an internet
    # gateway, in us-east-1a; the documented program's first subnet is in us-east-1a.
    public = next(
        i for i, (_, is_public) in aws_stand_in.cluster_subnets("us-east-1").items() if is_public
    )
    program = EKS_PROGRAM.replace(
        '"subnet-0a1b2c3d4e5f60017": "us-east-1a"', f'"{public}": "us-east-1a"'
    ).replace(
        '"subnet-0a1b2c3d4e5f60013": "us-east-1b"', '"subnet-0a1b2c3d4e5f60013": "us-east-1c"'
    )

    plan = previewed(tmp_path, program, dev_stack_config())

    assert isinstance(plan.error, PlatformConfigError)
    assert [(p.path, p.value) for p in plan.error.problems] == [
        (f"{FACTS}.node_subnets", public),
        (f"{FACTS}.node_subnets['subnet-0a1b2c3d4e5f60013']", "us-east-1c"),
    ]
    assert "sends 0.0.0.0/0 to igw-" in plan.error.report()


@pytest.mark.usefixtures("created_outputs_unknown")
def test_the_platform_waits_for_what_the_documented_eks_program_gives_it_in_depends_on(
    tmp_path: Path,
) -> None:
    plan = previewed(tmp_path, EKS_PROGRAM, dev_stack_config())

    assert plan.error is None
    (cluster,) = plan.of_type("aws:eks/cluster:Cluster")
    # EKS CreateCluster defaults `accessConfig.authenticationMode` to CONFIG_MAP (botocore
    # data/eks/2017-11-01/service-2.json, `CreateAccessConfigRequest`), where access entries
    # are refused.
    assert cluster.inputs["accessConfig"]["authenticationMode"] == "API_AND_CONFIG_MAP"
    (agent,) = [
        r
        for r in plan.of_type("aws:eks/addon:Addon")
        if r.inputs["addonName"] == "eks-pod-identity-agent"
    ]
    system = plan.named("system", "aws:eks/nodeGroup:NodeGroup")
    provider = platform_provider(plan)
    assert {agent.urn, system.urn} <= set(provider.dependencies)
    # A resource registers once its provider has (pulumi 3.272
    # sdk/python/lib/pulumi/runtime/resource.py, `prepare_resource` awaits the provider's
    # reference), and the engine deletes it before its provider.
    releases = plan.of_type("kubernetes:helm.sh/v3:Release")
    assert releases
    assert {r.provider.rsplit("::", 1)[0] for r in releases if r.provider} == {provider.urn}


@pytest.mark.usefixtures("created_outputs_unknown")
def test_a_gke_cluster_the_program_creates_flows_into_the_platform(tmp_path: Path) -> None:
    plan = previewed(tmp_path, GKE_PROGRAM, gke_stack_config(dev_stack_config()))

    assert plan.error is None
    # The one lookup reads back the versions GKE moved the cluster and its pools to, on the
    # runs after the first (tests/gpu_platform/gke/test_node_driver.py); on the first it finds
    # nothing, and the plan goes on.
    assert {i.token for i in plan.invokes} & CLUSTER_LOOKUPS == {
        "gcp:container/getCluster:getCluster"
    }
    cluster = created_cluster(plan, "gcp:container/cluster:Cluster")
    (pool,) = plan.of_type("gcp:container/nodePool:NodePool")
    assert pool.inputs["cluster"] == "ml-dev"
    assert cluster.urn in pool.property_dependencies["cluster"]
    provider = platform_provider(plan)
    assert "kubeconfig" in provider.unknown_inputs
    assert cluster.urn in provider.property_dependencies["kubeconfig"]


EKS_SETTINGS: dict[str, Any] = {
    "cloud": "aws",
    "cluster": {"name": "ml", "region": "us-east-1"},
    "pools": [
        {
            "name": "t4",
            "instanceTypes": ["g4dn.xlarge"],
            "accelerator": "t4",
            "gpusPerNode": 1,
            "max": 2,
            "aws": {"amiReleaseVersion": "1.35.6-20260714"},
        }
    ],
}
EKS_FACTS: dict[str, Any] = {
    "name": "ml",
    "endpoint": "https://example.invalid",
    "certificate_authority": "Q0E=",
    "security_group_id": "sg-0a1b2c3d4e5f60001",
    "vpc_id": "vpc-0a1b2c3d4e5f60001",
    "kubernetes_version": "1.35",
    "node_subnets": {"subnet-0a1b2c3d4e5f60017": "us-east-1a"},
}
GKE_FACTS: dict[str, Any] = {
    "name": "ml",
    "endpoint": "203.0.113.10",
    "ca_certificate": "Q0E=",
    "kubernetes_version": "1.33",
}
FACTS = "GpuPlatformArgs.cluster_facts"


@pytest.mark.parametrize(
    ("facts", "expected"),
    [
        (
            EksClusterFacts(**{**EKS_FACTS, "kubernetes_version": None}),
            [(f"{FACTS}.kubernetes_version", None)],
        ),
        (
            EksClusterFacts(**{**EKS_FACTS, "kubernetes_version": "1.35.2"}),
            [(f"{FACTS}.kubernetes_version", "1.35.2")],
        ),
        (EksClusterFacts(**{**EKS_FACTS, "node_subnets": {}}), [(f"{FACTS}.node_subnets", {})]),
        (
            EksClusterFacts(**{**EKS_FACTS, "node_subnets": {"subnet-1": "us-west-2a"}}),
            [
                (f"{FACTS}.node_subnets", "subnet-1"),
                (f"{FACTS}.node_subnets['subnet-1']", "us-west-2a"),
            ],
        ),
        (EksClusterFacts(**{**EKS_FACTS, "name": "ml-other"}), [(f"{FACTS}.name", "ml-other")]),
        (GkeClusterFacts(**GKE_FACTS), [(FACTS, "GkeClusterFacts")]),
    ],
)
def test_a_missing_or_malformed_plain_fact_is_refused_by_its_argument(
    facts: EksClusterFacts | GkeClusterFacts, expected: list[tuple[str, Any]]
) -> None:
    with pytest.raises(PlatformConfigError) as raised:
        GpuPlatformArgs.from_settings(EKS_SETTINGS, cluster_facts=facts)

    assert [(p.path, p.value) for p in raised.value.problems] == expected


def test_a_bad_fact_is_reported_with_the_settings_problems_in_one_round() -> None:
    settings = {**EKS_SETTINGS, "pools": [{**EKS_SETTINGS["pools"][0], "max": True}]}
    facts = EksClusterFacts(**{**EKS_FACTS, "kubernetes_version": "1.35.2"})

    with pytest.raises(PlatformConfigError) as raised:
        GpuPlatformArgs.from_settings(settings, cluster_facts=facts)

    assert [p.path for p in raised.value.problems] == [
        "gpu-platform:pools[0].max",
        f"{FACTS}.kubernetes_version",
    ]


def test_facts_of_a_cluster_the_platform_creates_are_refused() -> None:
    settings = {
        key.removeprefix("gpu-platform:"): value
        for key, value in stack_config("eks-new", PROJECT).items()
        if key.startswith("gpu-platform:")
    }

    with pytest.raises(PlatformConfigError) as raised:
        GpuPlatformArgs.from_settings(
            settings, cluster_facts=EksClusterFacts(**{**EKS_FACTS, "name": "ml-new"})
        )

    assert [(p.path, p.value) for p in raised.value.problems] == [(FACTS, "EksClusterFacts")]


def test_a_gke_clusters_version_and_channel_are_refused_by_their_arguments() -> None:
    settings = {
        "cloud": "gcp",
        "cluster": {"name": "ml", "project": "p", "location": "us-central1"},
        "pools": [
            {
                "name": "l4",
                "instanceTypes": ["g2-standard-8"],
                "accelerator": "l4",
                "gpusPerNode": 1,
                "max": 2,
            }
        ],
    }
    facts = GkeClusterFacts(
        **{**GKE_FACTS, "kubernetes_version": "1.20", "release_channel": "regular"}
    )

    with pytest.raises(PlatformConfigError) as raised:
        GpuPlatformArgs.from_settings(settings, cluster_facts=facts)

    assert [(p.path, p.value) for p in raised.value.problems] == [
        (f"{FACTS}.kubernetes_version", "1.20"),
        (f"{FACTS}.release_channel", "regular"),
    ]
