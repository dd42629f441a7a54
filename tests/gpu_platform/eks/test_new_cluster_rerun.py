"""Later runs of a stack that created its cluster (eks-new): what the first run created stays
as it is, whoever runs `pulumi up` and whatever EC2 says of a zone today.

- Access entries: botocore's EKS CreateAccessEntryRequest `principalArn`: "You can't specify the
  same ARN in more than one access entry. This value can't be changed after access entry
  creation." An entry moved onto another principal is replaced, and its replacement collides
  with the entry that principal already has (terraform-aws-eks issue #2911, its
  `cluster_creator` entry following whoever applies).
- The creator: read back from the stack's state, what the engine's
  `pulumi:pulumi:readStackResourceOutputs` answers (pulumi pkg/resource/deploy/builtins.go and
  pkg/backend/backend.go `GetStackResourceOutputs`: `{"name", "outputs": {urn: {"type",
  "outputs"}}}`), never from a tag of the cluster, which anyone with `eks:TagResource` rewrites
  (botocore EKS TagResource).
- Zones: EC2 AvailabilityZoneState is `available`, `information`, `impaired` or `unavailable`;
  a zone leaving `available` must not move the created subnets.
- Kubernetes version: EKS user guide, update-cluster.adoc: "you can update only one minor version
  at a time"; "You cannot downgrade".
"""

from collections.abc import Callable
from typing import Any

import pytest

from gpu_platform.cli.offline import Plan, run_program
from gpu_platform.cli.stand_ins import aws as stand_in
from gpu_platform.cli.stand_ins import engine
from tests.repository import PROJECT

from .plans import problems_of
from .test_new_cluster import ACCESS_ENTRY, CLUSTER, SUBNET, create_of, eks_new, only

Config = dict[str, Any]
CREATOR = "arn:aws:iam::123456789012:role/gpu-platform-deploy"  # the stand-in deployer's role
SOMEONE_ELSE = "arn:aws:iam::123456789012:role/platform-admins"
INTRUDER = "arn:aws:iam::123456789012:role/may-tag-clusters"
ADMINS = [SOMEONE_ELSE, "arn:aws:iam::123456789012:role/sre", "arn:aws:iam::123456789012:user/ana"]


def plan_of(config: Config, raise_errors: bool = True) -> Plan:
    return run_program("eks-new", config=config, project=PROJECT, raise_errors=raise_errors)


def with_admins(admins: list[str]) -> Config:
    config = eks_new()
    create_of(config)["administrators"] = admins
    return config


def entries(plan: Plan) -> dict[str, str]:
    """Access entry resource name -> principal."""
    return {r.name: r.inputs["principalArn"] for r in plan.of_type(ACCESS_ENTRY)}


def private_zones(plan: Plan) -> list[str]:
    return sorted(
        r.inputs["availabilityZone"]
        for r in plan.of_type(SUBNET)
        if "kubernetes.io/role/internal-elb" in r.inputs["tags"]
    )


@pytest.fixture
def first_run() -> Plan:
    return plan_of(with_admins(ADMINS))


@pytest.fixture
def created(monkeypatch: pytest.MonkeyPatch, first_run: Plan) -> Callable[..., None]:
    """Makes the stand-in account hold the cluster the first run created, and the program run
    by `deployer`; `version` is the cluster's, `zones` what EC2 now lists as available."""

    def exists(
        deployer: str = SOMEONE_ELSE,
        version: str = "1.35",
        zones: list[str] | None = None,
        retagged: dict[str, str] | None = None,
        state: dict[str, Any] | None = None,
    ) -> None:
        cluster_tags = only(first_run, CLUSTER).inputs["tags"] | (retagged or {})
        subnet_zones = {f"subnet-{zone}": zone for zone in private_zones(first_run)}
        invokes = stand_in.INVOKES
        monkeypatch.setitem(
            invokes,
            "aws:eks/getClusters:getClusters",
            lambda args: {"names": ["ml-new"], "id": "us-east-1"},
        )
        monkeypatch.setitem(
            invokes,
            "aws:eks/getCluster:getCluster",
            lambda args: (
                stand_in.get_cluster(args)
                | {
                    "version": version,
                    "tags": cluster_tags,
                    "vpcConfig": {
                        "subnetIds": list(subnet_zones),
                        "clusterSecurityGroupId": "sg-1",
                    },
                }
            ),
        )
        monkeypatch.setitem(
            invokes,
            "aws:ec2/getSubnet:getSubnet",
            lambda args: stand_in.get_subnet(args) | {"availabilityZone": subnet_zones[args["id"]]},
        )
        monkeypatch.setitem(
            invokes,
            "aws:iam/getSessionContext:getSessionContext",
            lambda args: stand_in.get_session_context(args) | {"issuerArn": deployer},
        )
        # What the first run left in the stack's state: its components' outputs.
        recorded = (
            state
            if state is not None
            else {
                urn: {"type": urn.split("::")[-2].split("$")[-1], "outputs": outputs}
                for urn, outputs in first_run.component_outputs.items()
            }
        )
        monkeypatch.setitem(
            engine.INVOKES,
            "pulumi:pulumi:readStackResourceOutputs",
            lambda args: {"name": args["stackName"], "outputs": recorded},
        )
        if zones is not None:
            monkeypatch.setitem(
                invokes,
                "aws:index/getAvailabilityZones:getAvailabilityZones",
                lambda args: {"names": zones, "zoneIds": [f"use1-az{i}" for i in range(9)]},
            )

    return exists


def test_the_creator_keeps_its_access_entry_when_someone_else_runs_pulumi_up(
    first_run: Plan, created: Callable[..., None]
) -> None:
    created(deployer=SOMEONE_ELSE)

    later = entries(plan_of(with_admins(ADMINS)))

    assert CREATOR in entries(first_run).values()
    assert later == entries(first_run)


def test_a_cluster_retagged_with_another_creator_changes_no_access_entry(
    first_run: Plan, created: Callable[..., None]
) -> None:
    # The tag the platform once read the creator from, rewritten by someone who may tag clusters.
    created(deployer=SOMEONE_ELSE, retagged={"gpu-platform.io/created-by": INTRUDER})

    later = plan_of(with_admins(ADMINS))

    assert entries(later) == entries(first_run)
    assert INTRUDER not in entries(later).values()
    assert "gpu-platform.io/created-by" not in only(later, CLUSTER).inputs["tags"]
    assert [i.args for i in later.invokes if i.token.startswith("pulumi:")] == [
        {"stackName": "organization/gpu-platform/eks-new"}
    ]


def test_a_state_without_a_recorded_creator_gives_the_entry_to_the_one_running_the_update(
    created: Callable[..., None],
) -> None:
    created(deployer=SOMEONE_ELSE, state={})

    assert sorted(entries(plan_of(with_admins(ADMINS[1:]))).values()) == sorted(
        [SOMEONE_ELSE, *ADMINS[1:]]
    )


def test_removing_an_administrator_leaves_the_other_entries_as_they_are(first_run: Plan) -> None:
    fewer = entries(plan_of(with_admins([ADMINS[0], ADMINS[2]])))

    assert fewer == {name: arn for name, arn in entries(first_run).items() if arn != ADMINS[1]}


def test_the_creator_listed_among_the_administrators_has_one_entry() -> None:
    principals = list(entries(plan_of(with_admins([*ADMINS, CREATOR]))).values())

    assert sorted(principals) == sorted([CREATOR, *ADMINS])


def test_a_zone_no_longer_available_does_not_move_the_created_subnets(
    first_run: Plan, created: Callable[..., None]
) -> None:
    before = private_zones(first_run)
    # The first zone impaired: EC2 lists the others as available.
    created(zones=["us-east-1b", "us-east-1c", "us-east-1d", "us-east-1f"])

    assert before[0] == "us-east-1a"
    assert private_zones(plan_of(with_admins(ADMINS))) == before


@pytest.mark.parametrize(
    ("running", "allowed"), [("1.33", "1.33 or 1.34"), ("1.36", "1.36 or 1.37")]
)
def test_a_jump_of_two_minors_or_a_downgrade_is_refused_by_key(
    created: Callable[..., None], running: str, allowed: str
) -> None:
    created(version=running)

    problems = problems_of(plan_of(with_admins(ADMINS), raise_errors=False))

    assert problems["gpu-platform:cluster.create.kubernetesVersion"].startswith(
        f"{allowed}: the cluster runs Kubernetes {running}"
    )


def test_one_minor_up_is_planned(created: Callable[..., None]) -> None:
    created(version="1.34")

    assert only(plan_of(with_admins(ADMINS)), CLUSTER).inputs["version"] == "1.35"
