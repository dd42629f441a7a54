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

import pulumi
import pytest

from gpu_platform.offline.program import Plan, run_program
from gpu_platform.offline.stand_ins import LookupFailed, engine
from gpu_platform.offline.stand_ins import aws as stand_in
from tests.repository import PROJECT
from tests.shared_plans import shared_plan

from .plans import problems_of
from .test_new_cluster import ACCESS_ENTRY, CLUSTER, SUBNET, create_of, eks_new, only

Config = dict[str, Any]
CREATOR = "arn:aws:iam::123456789012:role/gpu-platform-deploy"  # the stand-in deployer's role
SOMEONE_ELSE = "arn:aws:iam::123456789012:role/platform-admins"
INTRUDER = "arn:aws:iam::123456789012:role/may-tag-clusters"
CONTROL_PLANE = "gpu-platform:eks:ControlPlane"
LEGACY_TAG = "gpu-platform.io/created-by"  # where the platform kept the creator before
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


def state_of(plan: Plan) -> dict[str, Any]:
    """What the update `plan` left in the stack's state, as `readStackResourceOutputs` answers
    it: every resource's and component's outputs by URN."""
    resources = {
        r.urn: {"type": r.type, "outputs": r.inputs | r.computed_outputs} for r in plan.resources
    }
    components = {
        urn: {"type": urn.split("::")[-2].split("$")[-1], "outputs": outputs}
        for urn, outputs in plan.component_outputs.items()
    }
    return resources | components


def without_recorded_creator(plan: Plan) -> dict[str, Any]:
    """The state an update before the platform recorded the creator left: the control plane's
    only output was the cluster's ARN."""
    state = state_of(plan)
    for resource in state.values():
        if resource["type"] == CONTROL_PLANE:
            resource["outputs"] = {"cluster": resource["outputs"]["cluster"]}
    return state


@pytest.fixture
def first_run() -> Plan:
    return shared_plan("eks-new", with_admins(ADMINS))


@pytest.fixture
def created(monkeypatch: pytest.MonkeyPatch, first_run: Plan) -> Callable[..., None]:
    """Makes the stand-in account hold the cluster the first run created, and the program run
    by `deployer`; `version` is the cluster's, `zones` what EC2 now lists as available."""

    def exists(
        deployer: str = SOMEONE_ELSE,
        version: str = "1.35",
        zones: list[str] | None = None,
        retagged: dict[str, str | None] | None = None,
        state: dict[str, Any] | None = None,
    ) -> None:
        # A tag retagged to None is removed.
        cluster_tags = {
            key: value
            for key, value in (only(first_run, CLUSTER).inputs["tags"] | (retagged or {})).items()
            if value is not None
        }
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
        recorded = state_of(first_run) if state is None else state
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
    created(deployer=SOMEONE_ELSE, retagged={LEGACY_TAG: INTRUDER})

    later = plan_of(with_admins(ADMINS))

    assert entries(later) == entries(first_run)
    assert INTRUDER not in entries(later).values()
    assert LEGACY_TAG not in only(later, CLUSTER).inputs["tags"]
    assert [i.args for i in later.invokes if i.token.startswith("pulumi:")] == [
        {"stackName": "organization/gpu-platform/eks-new"}
    ]


def test_the_creator_is_kept_in_the_state_as_a_secret(first_run: Plan) -> None:
    # Encrypted with the stack's secrets provider (pulumi sdk/python pulumi/output.py
    # `Output.secret`), which a writer of the state backend without the stack's key cannot forge.
    [control_plane] = [u for u in first_run.component_outputs if f"${CONTROL_PLANE}::" in u]
    assert first_run.component_outputs[control_plane]["creator"] == CREATOR
    assert first_run.component_secret_outputs[control_plane] == {"creator"}


def test_a_state_from_before_the_recorded_creator_keeps_the_creators_entry(
    first_run: Plan, created: Callable[..., None]
) -> None:
    state = without_recorded_creator(first_run)
    # Another component's access entry (Karpenter's node role) is no administrator's either.
    state[
        "urn:pulumi:eks-new::gpu-platform::gpu-platform:eks:Karpenter$aws:eks/accessEntry:AccessEntry::nodes"
    ] = {
        "type": ACCESS_ENTRY,
        "outputs": {"principalArn": "arn:aws:iam::123456789012:role/ml-new.karpenter-node"},
    }
    # The CI role, an administrator, runs the first update after the change, on a cluster
    # created with the tag the platform then kept the creator in.
    created(deployer=SOMEONE_ELSE, state=state, retagged={LEGACY_TAG: CREATOR})

    assert entries(plan_of(with_admins(ADMINS))) == entries(first_run)


def test_a_state_from_before_the_recorded_creator_where_every_entry_is_an_administrators(
    created: Callable[..., None],
) -> None:
    first = plan_of(with_admins([*ADMINS, CREATOR]))
    created(deployer=SOMEONE_ELSE, state=without_recorded_creator(first))

    # The creator keeps its entry as an administrator; the one running the update is the creator.
    later = plan_of(with_admins([*ADMINS, CREATOR]))
    assert entries(later) == entries(first)
    [control_plane] = [u for u in later.component_outputs if f"${CONTROL_PLANE}::" in u]
    assert later.component_outputs[control_plane]["creator"] == SOMEONE_ELSE


def test_a_state_from_before_the_recorded_creator_with_two_candidates_is_refused_by_key(
    first_run: Plan, created: Callable[..., None]
) -> None:
    created(
        deployer=SOMEONE_ELSE,
        state=without_recorded_creator(first_run),
        retagged={LEGACY_TAG: CREATOR},
    )

    # SOMEONE_ELSE removed from the administrators in the same update: its entry or the
    # creator's, which is which is unknown.
    problems = problems_of(plan_of(with_admins(ADMINS[1:]), raise_errors=False))

    expected = problems["gpu-platform:cluster.create.administrators"]
    assert expected.startswith(
        "every principal that is to keep its access, for this update, but the cluster's creator"
    )
    assert f"the access entries of {CREATOR}, {SOMEONE_ELSE} are not among" in expected


@pytest.mark.parametrize("tag", [INTRUDER, None], ids=["retagged", "untagged"])
def test_a_state_whose_creator_was_removed_and_a_tag_that_disagrees_are_refused_by_key(
    first_run: Plan, created: Callable[..., None], tag: str | None
) -> None:
    # The recorded creator deleted from the state (whoever may write its backend), and the
    # cluster's old tag rewritten (eks:TagResource) or absent (a cluster created since the
    # platform records the creator in the state): neither alone names the creator.
    created(
        deployer=SOMEONE_ELSE,
        state=without_recorded_creator(first_run),
        retagged={LEGACY_TAG: tag},
    )

    problems = problems_of(plan_of(with_admins(ADMINS), raise_errors=False))

    assert (
        f"the access entry of {CREATOR}, not among the administrators, and the cluster's tag"
        f" {LEGACY_TAG} ({tag or 'none'}) should both name the creator and do not"
    ) in problems["gpu-platform:cluster.create.administrators"]


def test_the_old_creator_tag_stays_until_the_state_records_the_creator(
    first_run: Plan, created: Callable[..., None]
) -> None:
    # terraform-provider-aws internal/provider/sdkv2/tags_interceptor.go: a resource's tags are
    # changed before its Update, and the cluster's update (cluster.go `resourceClusterUpdate`,
    # `updateVPCConfig` then `waitClusterUpdateSuccessful`) takes minutes before the control
    # plane's outputs, the recorded creator, are written. Until the state records the creator,
    # the cluster keeps the tag an interrupted update would otherwise have removed.
    assert only(first_run, CLUSTER).inputs["tags"][LEGACY_TAG] == CREATOR
    created(
        deployer=SOMEONE_ELSE,
        state=without_recorded_creator(first_run),
        retagged={LEGACY_TAG: CREATOR},
    )

    migrating = plan_of(with_admins(ADMINS))

    assert only(migrating, CLUSTER).inputs["tags"][LEGACY_TAG] == CREATOR
    [control_plane] = [u for u in migrating.component_outputs if f"${CONTROL_PLANE}::" in u]
    assert migrating.component_outputs[control_plane]["creator"] == CREATOR


def test_an_update_interrupted_after_the_tag_was_removed_names_the_way_out(
    first_run: Plan, created: Callable[..., None]
) -> None:
    # What an update that removed the tag at once and was interrupted before recording the
    # creator left: no record, the creator's entry, no tag.
    untagged = {"deployer": SOMEONE_ELSE, "state": without_recorded_creator(first_run)}
    created(**untagged, retagged={LEGACY_TAG: None})

    problems = problems_of(plan_of(with_admins(ADMINS), raise_errors=False))

    assert (
        f"if {CREATOR} is to keep its access, add {CREATOR} to administrators for this update"
    ) in problems["gpu-platform:cluster.create.administrators"]
    # Taking the way out: the creator keeps its entry, as an administrator now.
    later = plan_of(with_admins([*ADMINS, CREATOR]))
    assert entries(later) == entries(first_run)


def test_a_creator_the_engine_sends_as_a_secret_is_read_as_the_creator(
    first_run: Plan, created: Callable[..., None]
) -> None:
    # pulumi pkg/resource/deploy/source_eval.go `resmon.Invoke` (v3.272.0) marshals the
    # invoke's answer with `KeepSecrets: true`: the recorded creator, a secret output, arrives
    # in the secret envelope (sdk/python pulumi/runtime/rpc.py `_special_secret_sig`), and
    # goes through the SDK's deserialization (`deserialize_properties_unwrap_secrets`) here.
    state = state_of(first_run)
    for resource in state.values():
        if resource["type"] == CONTROL_PLANE:
            resource["outputs"]["creator"] = {
                "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270",
                "value": CREATOR,
            }
    # A tag naming another: only the recorded creator can name CREATOR here.
    created(deployer=SOMEONE_ELSE, state=state, retagged={LEGACY_TAG: INTRUDER})

    later = plan_of(with_admins(ADMINS))

    assert entries(later) == entries(first_run)
    assert LEGACY_TAG not in only(later, CLUSTER).inputs["tags"]


def test_only_the_control_planes_output_names_the_creator(
    first_run: Plan, created: Callable[..., None]
) -> None:
    # Another resource's output of the same name, listed first.
    other = {
        "urn:pulumi:eks-new::gpu-platform::gpu-platform:eks:NewCluster$aws:s3/bucket:Bucket::x": {
            "type": "aws:s3/bucket:Bucket",
            "outputs": {"creator": INTRUDER},
        }
    }
    created(
        deployer=SOMEONE_ELSE,
        state=other | without_recorded_creator(first_run),
        retagged={LEGACY_TAG: CREATOR},
    )

    assert entries(plan_of(with_admins(ADMINS))) == entries(first_run)


def test_a_legacy_self_managed_stack_is_read_by_its_bare_name(
    first_run: Plan, created: Callable[..., None], monkeypatch: pytest.MonkeyPatch
) -> None:
    created(deployer=SOMEONE_ELSE)
    state = state_of(first_run)

    def legacy(args: dict[str, Any]) -> dict[str, Any]:
        # pulumi pkg/backend/diy/store.go `legacyReferenceStore.ParseReference`:
        # tokens.ParseStackName refuses a name with "/".
        if "/" in args["stackName"]:
            raise LookupFailed(f"a stack name may not contain slashes: {args['stackName']}")
        return {"name": args["stackName"], "outputs": state}

    monkeypatch.setitem(engine.INVOKES, "pulumi:pulumi:readStackResourceOutputs", legacy)

    later = plan_of(with_admins(ADMINS))

    assert entries(later) == entries(first_run)
    assert [i.args for i in later.invokes if i.token.startswith("pulumi:")] == [
        {"stackName": "organization/gpu-platform/eks-new"},
        {"stackName": "eks-new"},
    ]


def test_a_pulumi_cloud_stack_is_never_read_by_its_bare_name(
    created: Callable[..., None], monkeypatch: pytest.MonkeyPatch
) -> None:
    created(deployer=SOMEONE_ELSE)

    def failing(args: dict[str, Any]) -> dict[str, Any]:
        raise LookupFailed("the service is unavailable")

    monkeypatch.setitem(engine.INVOKES, "pulumi:pulumi:readStackResourceOutputs", failing)
    # A Pulumi Cloud organization: a bare name would resolve in the user's default one.
    monkeypatch.setattr(pulumi, "get_organization", lambda: "acme")

    plan = plan_of(with_admins(ADMINS), raise_errors=False)

    assert [i.args for i in plan.invokes if i.token.startswith("pulumi:")] == [
        {"stackName": "acme/gpu-platform/eks-new"}
    ]
    assert "gpu-platform:cluster.name" in problems_of(plan)


def test_a_state_the_engine_cannot_read_is_refused_by_key(
    created: Callable[..., None], monkeypatch: pytest.MonkeyPatch
) -> None:
    created(deployer=SOMEONE_ELSE)

    def unreadable(args: dict[str, Any]) -> dict[str, Any]:
        # pulumi pkg/backend/backend.go `GetStackResourceOutputs`: `unknown stack %q`.
        raise LookupFailed(f'unknown stack "{args["stackName"]}"')

    monkeypatch.setitem(engine.INVOKES, "pulumi:pulumi:readStackResourceOutputs", unreadable)

    problems = problems_of(plan_of(with_admins(ADMINS), raise_errors=False))

    assert problems["gpu-platform:cluster.name"].startswith(
        "a cluster this stack created and whose state it can read: EKS cluster ml-new exists"
    )


def without_creator_access(admins: list[str]) -> Config:
    config = with_admins(admins)
    create_of(config).setdefault("aws", {})["creatorAccess"] = False
    return config


def test_creator_access_off_deletes_the_creators_entry_and_keeps_the_record(
    first_run: Plan, created: Callable[..., None]
) -> None:
    # terraform-aws-eks v21 variables.tf `enable_cluster_creator_admin_permissions`: the
    # creator's admin access entry only while it is true.
    created(deployer=SOMEONE_ELSE)

    later = plan_of(without_creator_access(ADMINS))

    assert sorted(entries(later).values()) == sorted(ADMINS)
    [control_plane] = [u for u in later.component_outputs if f"${CONTROL_PLANE}::" in u]
    assert later.component_outputs[control_plane]["creator"] == CREATOR


def test_creator_access_off_keeps_a_creator_listed_among_the_administrators(
    first_run: Plan, created: Callable[..., None]
) -> None:
    created(deployer=SOMEONE_ELSE)

    later = plan_of(without_creator_access([*ADMINS, CREATOR]))

    assert entries(later) == entries(first_run)


def test_creator_access_off_with_the_deployer_no_administrator_is_refused_by_key(
    created: Callable[..., None],
) -> None:
    created(deployer=INTRUDER)

    problems = problems_of(plan_of(without_creator_access(ADMINS), raise_errors=False))

    assert problems["gpu-platform:cluster.create.aws.creatorAccess"].startswith(
        f"true, or {INTRUDER}, who runs this update, among administrators"
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


def another_clusters_state(state: dict[str, Any]) -> dict[str, Any]:
    """`state` behind the control plane and access entry of another cluster the stack creates
    (a second platform instance, parts named under it), created by INTRUDER; its URNs sort
    first, as the engine's answer (a protobuf Struct) lists them."""
    prefix = "urn:pulumi:eks-new::gpu-platform::"
    other = {
        f"{prefix}gpu-platform:eks:NewCluster$gpu-platform:eks:ControlPlane::b.cluster": {
            "type": CONTROL_PLANE,
            "outputs": {
                "cluster": "arn:aws:eks:us-east-1:123456789012:cluster/ml-b",
                "creator": INTRUDER,
            },
        },
        f"{prefix}gpu-platform:eks:ControlPlane$aws:eks/accessEntry:AccessEntry::b.cluster-admin": {
            "type": ACCESS_ENTRY,
            "outputs": {"clusterName": "ml-b", "principalArn": INTRUDER},
        },
    }
    return other | state


def test_another_clusters_recorded_creator_is_not_this_clusters(
    first_run: Plan, created: Callable[..., None]
) -> None:
    created(deployer=SOMEONE_ELSE, state=another_clusters_state(state_of(first_run)))

    assert entries(plan_of(with_admins(ADMINS))) == entries(first_run)


def test_another_clusters_access_entries_are_no_candidates_for_this_clusters_creator(
    first_run: Plan, created: Callable[..., None]
) -> None:
    state = another_clusters_state(without_recorded_creator(first_run))
    created(deployer=SOMEONE_ELSE, state=state, retagged={LEGACY_TAG: CREATOR})

    assert entries(plan_of(with_admins(ADMINS))) == entries(first_run)
