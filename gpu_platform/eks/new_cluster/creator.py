"""Who created the cluster, kept in the stack's own state: the control plane component's output
`creator`, read back at the next `pulumi up` through the engine's
`pulumi:pulumi:readStackResourceOutputs` (pulumi pkg/resource/deploy/builtins.go: the outputs
of every resource in the stack's last snapshot, `pkg/backend/backend.go`
`GetStackResourceOutputs`; the `pulumi` package's functions go to the engine's built-in
provider, pkg/resource/deploy/providers/registry.go).

Only an update of the stack writes its state (or whoever may write its state backend, who can
change everything else the stack deploys as well), and whoever can run one is a cluster
administrator already. A cloud tag would not do: anyone with `eks:TagResource` could name
themselves the creator, and the next `pulumi up` would make them cluster-admin and drop the real
creator's access entry. The output is a secret, encrypted with the stack's secrets provider: a
writer of the state backend without the stack's key cannot put another principal there.

A stack updated before the platform kept the creator there has none; the access entries its
last update left name it instead: an entry's `principalArn` cannot change after creation
(botocore EKS CreateAccessEntryRequest), so the one entry of a principal not among
`administrators` is the creator's, where the cluster's old creator tag agrees. The cluster keeps
that tag until an update has recorded the creator (`Creator.recorded`): the provider changes a
resource's tags before the rest of its update (terraform-provider-aws
internal/provider/sdkv2/tags_interceptor.go, `UpdateTags` ahead of the resource's Update), and
the creator is recorded only once the cluster's update is done, minutes later; an update
interrupted in between would otherwise leave neither.
"""

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import pulumi

from gpu_platform.config import ConfigError, ConfigProblem, key_path

CONTROL_PLANE_TYPE = "gpu-platform:eks:ControlPlane"
CREATOR_OUTPUT = "creator"
ACCESS_ENTRY_TYPE = "aws:eks/accessEntry:AccessEntry"
READ_STACK_RESOURCE_OUTPUTS = "pulumi:pulumi:readStackResourceOutputs"
SELF_MANAGED_ORGANIZATION = "organization"
LEGACY_CREATOR_TAG = "gpu-platform.io/created-by"
"""The cluster's tag the platform once recorded the creator in."""


class Creator(NamedTuple):
    arn: str
    """The IAM role or user that created the cluster."""
    recorded: bool
    """Whether the stack's state records it already: until then the cluster carries it in its
    tag `LEGACY_CREATOR_TAG` too."""


def stack_names() -> list[str]:
    """The stack as the engine's backends may name it, in the order to try: Pulumi Cloud and the
    self-managed backends' project-scoped layout take `<organization>/<project>/<stack>` (the
    self-managed organization is `organization`); their legacy layout takes only `<stack>`
    (pulumi pkg/backend/diy/store.go: `legacyReferenceStore.ParseReference` parses it with
    `tokens.ParseStackName`, which refuses a `/`). Only there: Pulumi Cloud resolves a bare
    name in the user's default organization, which need not be the stack's, and the
    self-managed backends run every update in the organization `organization`
    (pkg/backend/diy/state.go)."""
    organization, stack = pulumi.get_organization(), pulumi.get_stack()
    full = f"{organization}/{pulumi.get_project()}/{stack}"
    return [full, stack] if organization == SELF_MANAGED_ORGANIZATION else [full]


def stack_state(cluster: str) -> Mapping[str, Any]:
    """The answer of `readStackResourceOutputs` for this stack, `{"outputs": {urn: {"type",
    "outputs"}}}`; ConfigError where no name of the stack can be read."""
    failures: list[str] = []
    for name in stack_names():
        try:
            state = pulumi.runtime.invoke(READ_STACK_RESOURCE_OUTPUTS, {"stackName": name})
        # The SDK raises a bare Exception for a failed invoke (pulumi/runtime/invoke.py).
        except Exception as error:
            failures.append(f"{name}: {error}")
            continue
        return state.value or {}
    raise ConfigError(
        [
            ConfigProblem(
                key_path("cluster", "name"),
                cluster,
                "a cluster this stack created and whose state it can read: EKS cluster"
                f" {cluster} exists, and who created it is kept only in the stack's state, which"
                f" the engine could not read ({'; '.join(failures)}); run from the stack that"
                " created it, with its state (a self-managed stack without a checkpoint has"
                " none), or name another cluster",
            )
        ]
    )


def creator_in(state: Mapping[str, Any], cluster_arn: str) -> str | None:
    """The creator the stack's last update recorded for the cluster `cluster_arn`, None where it
    recorded none. A stack may create several clusters (one per platform instance), each with its
    own control plane: only the one whose `cluster` output is this cluster's ARN speaks for it."""
    for resource in (state.get("outputs") or {}).values():
        outputs = resource.get("outputs") or {}
        if resource.get("type") == CONTROL_PLANE_TYPE and outputs.get("cluster") == cluster_arn:
            creator = outputs.get(CREATOR_OUTPUT)
            if isinstance(creator, str) and creator:
                return creator
    return None


def _entry_principals(state: Mapping[str, Any], cluster: str) -> Iterator[str]:
    """The principals of the access entries a control plane made for the cluster named
    `cluster` in the state, not those of other components (Karpenter's node role) or of
    another cluster the stack creates."""
    child = f"{CONTROL_PLANE_TYPE}${ACCESS_ENTRY_TYPE}"
    for urn, resource in (state.get("outputs") or {}).items():
        qualified_type = urn.split("::")[-2] if urn.count("::") >= 3 else ""
        outputs = resource.get("outputs") or {}
        principal = outputs.get("principalArn")
        if (
            qualified_type.endswith(child)
            and outputs.get("clusterName") == cluster
            and isinstance(principal, str)
        ):
            yield principal


def existing_creator(
    cluster: str,
    cluster_arn: str,
    deployer: str,
    administrators: Sequence[str],
    tagged: str | None,
) -> Creator:
    """The creator of a cluster that exists: the one the state recorded. In a state from before
    the platform recorded it, the cluster still carries the tag `LEGACY_CREATOR_TAG` it then
    read the creator from (`tagged`): the one previous access entry not among `administrators`
    if that tag names it too, so that neither a writer of the state backend nor one allowed
    `eks:TagResource` alone chooses it; the deployer where every previous entry is an
    administrator's (the creator keeps its access as one)."""
    state = stack_state(cluster)
    recorded = creator_in(state, cluster_arn)
    if recorded is not None:
        return Creator(recorded, recorded=True)
    previous = sorted(set(_entry_principals(state, cluster)) - set(administrators))
    if not previous:
        return Creator(deployer, recorded=False)
    if previous == [tagged]:
        return Creator(previous[0], recorded=False)
    if len(previous) == 1:
        why = (
            f"the access entry of {previous[0]}, not among the administrators, and the cluster's"
            f" tag {LEGACY_CREATOR_TAG} ({tagged or 'none'}) should both name the creator and do"
            " not: one of them was changed, or an update interrupted before it recorded the"
            f" creator removed the tag; if {previous[0]} is to keep its access, add"
            f" {previous[0]} to administrators for this update"
        )
    else:
        why = (
            f"the access entries of {', '.join(previous)} are not among the administrators, so"
            " which one is the creator's cannot be told"
        )
    raise ConfigError(
        [
            ConfigProblem(
                key_path("cluster", "create", "administrators"),
                list(administrators),
                "every principal that is to keep its access, for this update, but the cluster's"
                " creator: the stack's state records no creator (its last update came before the"
                f" platform kept it there), and {why}; the next update records it, and the"
                ' others may then be removed (docs/create-cluster.md, "Who the creator is")',
            )
        ]
    )
