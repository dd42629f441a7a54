"""The offline plan: what the program would create for a stack, without credentials.

Plans the stack as `gpu_platform.offline.plan.plan_stack` does (the program under the Pulumi
SDK's mock monitor, then the policy pack over what it declared). Prints the resources as a tree
of parents and children with the inputs that matter, the lookups answered by offline stand-ins,
each pool's driver and how long its empty node bills, the subnets the GPU nodes use and why the
others are left out (EKS), the stack outputs and the policy verdicts; `--json` prints the same
for machines.

Exit codes: 0 planned; 1 the program or the policy pack failed; 2 a configuration error (the
stack's or the policy pack's) or a fact gpu-platform.lock lacks; 3 a mandatory policy violation.
"""

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.tree import Tree

from gpu_platform.cli.cli import errors, fail, plain_console, planning
from gpu_platform.idle_billing import minutes_text
from gpu_platform.offline.analyzer import PolicyPackError, Verdict
from gpu_platform.offline.plan import HELM_RELEASE, default_stack, plan_stack
from gpu_platform.offline.program import Plan, PlannedResource
from gpu_platform.project import Project

EXIT_PROGRAM_ERROR = 1
EXIT_CONFIG_ERROR = 2
EXIT_MANDATORY_VIOLATION = 3
SECRET = "[secret]"
GKE_NODE_POOL = "gcp:container/nodePool:NodePool"

# The inputs worth reading in a plan, per resource type; other types show their scalars.
KEY_INPUTS: Mapping[str, Sequence[str]] = {
    "aws:eks/nodeGroup:NodeGroup": (
        "nodeGroupNamePrefix",
        "amiType",
        "releaseVersion",
        "capacityType",
        "instanceTypes",
        "scalingConfig",
        "subnetIds",
        "taints",
        "labels",
    ),
    "aws:ec2/launchTemplate:LaunchTemplate": ("metadataOptions", "blockDeviceMappings"),
    "kubernetes:karpenter.sh/v1:NodePool": (
        "metadata.annotations",
        # One line each, so that a long list of zones hides no capacity type.
        "spec.template.spec.requirements.*",
        "spec.limits",
        "spec.template.spec.taints",
        "spec.template.metadata.labels",
        "spec.disruption",
    ),
    "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass": (
        "spec.amiSelectorTerms",
        "spec.capacityReservationSelectorTerms",
        "spec.metadataOptions",
        "spec.blockDeviceMappings",
        "spec.instanceStorePolicy",
    ),
    "aws:autoscaling/tag:Tag": ("autoscalingGroupName", "tag"),
    "aws:iam/role:Role": ("name",),
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": ("policyArn",),
    "gcp:container/nodePool:NodePool": (
        "name",
        "version",
        "nodeLocations",
        "autoscaling",
        "nodeConfig.machineType",
        "nodeConfig.imageType",
        "nodeConfig.guestAccelerators",
        "nodeConfig.spot",
        "nodeConfig.taints",
        "nodeConfig.labels",
        # Capacity, shown where the pool sets it; Dynamic Workload Scheduler pools repair no node.
        "nodeConfig.reservationAffinity",
        "nodeConfig.flexStart",
        "nodeConfig.maxRunDuration",
        "queuedProvisioning",
        "management",
    ),
    "kubernetes:nvidia.com/v1alpha1:NVIDIADriver": (
        "metadata.name",
        "spec.version",
        "spec.nodeSelector",
    ),
    HELM_RELEASE: ("chart", "version", "repositoryOpts.repo", "namespace"),
    "kubernetes:core/v1:Namespace": ("metadata.name", "metadata.labels"),
    "kubernetes:core/v1:ResourceQuota": ("metadata.namespace", "spec.hard"),
}
_MAX_VALUE_CHARS = 160


def run(
    stack: str | None,
    as_json: bool = False,
    policy_pack: Path | None = None,
    policy_config: Path | None = None,
) -> None:
    """Plan `stack` (None: the default stack) of the project in the current directory and run
    the policy pack over it (`gpu_platform.offline.plan.plan_stack`); print what it found."""
    console = plain_console()
    with planning("", EXIT_CONFIG_ERROR, EXIT_PROGRAM_ERROR):
        project = Project.find()
        named = stack or default_stack(project)
    # The stack named, for a fact the lock lacks: `gpu-platform lock <stack>` reads it.
    with planning(named, EXIT_CONFIG_ERROR, EXIT_PROGRAM_ERROR):
        try:
            planned = plan_stack(named, project, policy_pack, policy_config)
        except PolicyPackError as error:
            fail(str(error), EXIT_PROGRAM_ERROR)
    for note in planned.warnings:
        errors.print(f"warning: {note}", markup=False, highlight=False, soft_wrap=True)
    plan, verdicts = planned.plan, planned.verdicts
    if as_json:
        console.print_json(json.dumps(plan_as_json(plan, verdicts)))
    else:
        print_plan(plan, console)
        print_verdicts(verdicts, plan, console, planned.pack_dir)
    if planned.mandatory_violations:
        raise typer.Exit(EXIT_MANDATORY_VIOLATION)


def print_verdicts(
    verdicts: Sequence[Verdict], plan: Plan, console: Console, pack_dir: Path
) -> None:
    names = {r.urn: escape(f"{r.type} {r.name}") for r in plan.resources}
    violations = [v for v in verdicts if v.enforcement_level in ("mandatory", "advisory")]
    remediations = [v for v in verdicts if v.enforcement_level == "remediate"]
    mandatory = sum(v.mandatory for v in violations)
    console.print(
        f"\n[bold]Policy pack[/bold] ({escape(str(pack_dir))}): {mandatory} mandatory,"
        f" {len(violations) - mandatory} advisory violation(s), {len(remediations)} remediation(s)"
    )
    for verdict in sorted(violations, key=lambda v: (not v.mandatory, v.policy_name)):
        colour = "red" if verdict.mandatory else "yellow"
        where = names.get(verdict.urn, "the stack")
        console.print(
            f"  [{colour}]{verdict.enforcement_level}[/{colour}] {verdict.policy_name}"
            f" on {where}: {escape(verdict.message)}",
            highlight=False,
        )
    for verdict in remediations:
        where = names.get(verdict.urn, "the stack")
        console.print(f"  remediated by {verdict.policy_name} on {where}", highlight=False)


def plan_as_json(plan: Plan, verdicts: Sequence[Verdict] = ()) -> dict[str, Any]:
    return {
        "stack": plan.stack,
        "resources": [
            {
                "urn": r.urn,
                "type": r.type,
                "name": r.name,
                "parent": r.parent,
                "provider": r.provider,
                "dependencies": list(r.dependencies),
                "protect": r.protect,
                "ignoreChanges": list(r.ignore_changes),
                "customTimeouts": r.custom_timeouts,
                "inputs": {k: SECRET if k in r.secret_inputs else v for k, v in r.inputs.items()},
            }
            for r in plan.resources
        ],
        "standInLookups": [
            {"token": i.token, "args": i.args, "result": i.result} for i in plan.invokes
        ],
        "outputs": _shown_outputs(plan),
        "policyVerdicts": [
            {
                "policy": v.policy_name,
                "enforcementLevel": v.enforcement_level,
                "urn": v.urn or None,
                "message": v.message,
            }
            for v in verdicts
        ],
    }


def print_plan(plan: Plan, console: Console) -> None:
    tree = Tree(f"[bold]stack {plan.stack}[/bold]: {len(plan.resources)} resources")
    by_parent: dict[str | None, list[PlannedResource]] = {}
    urns = {r.urn for r in plan.resources}
    for resource in plan.resources:
        parent = resource.parent if resource.parent in urns else None
        by_parent.setdefault(parent, []).append(resource)
    _add_children(tree, None, by_parent)
    console.print(tree)
    if plan.invokes:
        console.print(
            "\n[bold]Lookups answered by offline stand-ins[/bold] (not read from an account):"
        )
        for token, count in Counter(i.token for i in plan.invokes).items():
            console.print(f"  {token}" + (f" x{count}" if count > 1 else ""), highlight=False)
    print_pool_software(plan, console)
    print_replacing_settings(plan, console)
    print_node_subnets(plan, console)
    print_own_autoscaler(plan, console)
    console.print("\n[bold]Outputs[/bold]")
    for name, value in _shown_outputs(plan).items():
        console.print(f"  {name}: {_short(value)}", highlight=False)


def print_pool_software(plan: Plan, console: Console) -> None:
    """Each pool's driver and CUDA ceiling, where a canary stands against its pool (ahead while
    it tries a new version, in step once the version is promoted), and how long its empty node
    bills after its last pod."""
    pools: Mapping[str, Mapping[str, Any]] | None = _output_section(
        plan, console, "gpuPools", "GPU pools"
    )
    if pools is None:
        return
    idle_billing = _idle_billing(plan)
    for name, pool in pools.items():
        line = (
            f"  {name}: NVIDIA driver {pool['nvidiaDriver']} (CUDA {pool['cuda']}), pinned by"
            f" {pool['pinnedBy']}"
            if pool["nvidiaDriver"] is not None
            # An EKS Auto Mode pool's nodes run the driver of Auto Mode's AMI.
            else f"  {name}: NVIDIA driver not pinned: the node image's own, unknown to the plan"
        )
        target = pools.get(pool["canaryOf"] or "")
        if target is not None:
            line += f"; canary of {pool['canaryOf']}, " + (
                "in step with it"
                if target["pinnedBy"] == pool["pinnedBy"]
                else f"ahead of it ({target['pinnedBy']}): promote by giving {pool['canaryOf']}"
                " the canary's version"
            )
        console.print(escape(line), highlight=False)
        idle = idle_billing.get(name)
        if idle is not None:
            print_idle_billing(idle, console)


def print_idle_billing(idle: Mapping[str, Any], console: Console) -> None:
    """How long one of the pool's empty nodes bills after its last pod, term by term with each
    delay's upstream source, the cluster's cooldowns that can hold it longer, and what a new
    node bills validating before its first pod."""
    seconds = idle["idleSeconds"]
    figure = "no bound (see below)" if seconds is None else minutes_text(seconds)
    console.print(
        escape(f"    idle after its last pod ({idle['provisioner']}): {figure}"), highlight=False
    )
    for delay in idle["afterLastPod"]:
        console.print(escape(f"      {_delay_line(delay)}"), highlight=False)
    if idle.get("deferredBy"):
        console.print(
            "    or later, while the whole cluster cools down (without bound where it keeps"
            " scaling up):",
            highlight=False,
        )
    for delay in idle.get("deferredBy", ()):
        console.print(escape(f"      {delay['term']} ({delay['source']})"), highlight=False)
    for delay in idle["beforeFirstPod"]:
        console.print(
            escape(f"    billed before its first pod, not after its last: {_delay_line(delay)}"),
            highlight=False,
        )


def _delay_line(delay: Mapping[str, Any]) -> str:
    seconds = delay["seconds"]
    shown = "no bound" if seconds is None else minutes_text(seconds)
    return f"{shown}: {delay['term']} ({delay['source']})"


def _idle_billing(plan: Plan) -> Mapping[str, Any]:
    """The stack's `idleBilling` output; empty where it has none or it is secret (the pools are
    then secret too, and shown as such)."""
    if "idleBilling" in plan.secret_outputs:
        return {}
    figures: Mapping[str, Any] = plan.outputs.get("idleBilling", {})
    return figures


def print_replacing_settings(plan: Plan, console: Console) -> None:
    """On a GKE stack, the settings whose change replaces a node pool and its nodes (the
    offline plan has no earlier state to tell whether one changed: `pulumi preview` does)."""
    if not plan.of_type(GKE_NODE_POOL):
        return
    # Imported here: a plan of an EKS stack loads nothing of the GKE side.
    from gpu_platform.gke.replacing_settings import REPLACING_SETTINGS

    console.print("\n[bold]Replacing a GKE node pool[/bold]")
    settings = ", ".join(REPLACING_SETTINGS)
    console.print(
        escape(
            f"  A change of {settings} replaces the node pool and its nodes, ending the jobs on"
            " them (docs/gke-capacity.md): `pulumi preview` shows it as a replacement."
        ),
        highlight=False,
    )


def print_node_subnets(plan: Plan, console: Console) -> None:
    """The subnets the GPU node groups use and those left out, each with what its route table
    makes it (EKS), in the stack output's order: used first, then left out, each by zone and id."""
    subnets: Mapping[str, Sequence[Mapping[str, str]]] | None = _output_section(
        plan, console, "nodeSubnets", "GPU node subnets"
    )
    if subnets is None:
        return
    for heading, key in (("used", "used"), ("left out", "leftOut")):
        for subnet in subnets[key]:
            line = f"  {heading} {subnet['id']} ({subnet['zone']}): {subnet['why']}"
            console.print(escape(line), highlight=False)


def print_own_autoscaler(plan: Plan, console: Console) -> None:
    """Where the cluster runs its own autoscaler, the flags and the priority expander's
    ConfigMap it must be given, which the stack cannot set on it."""
    settings: Mapping[str, Any] | None = _output_section(
        plan, console, "ownAutoscaler", "Settings for the cluster's own autoscaler"
    )
    if settings is None:
        return
    console.print("  Add to its container's arguments:", highlight=False)
    for flag in settings["flags"]:
        console.print(f"    {escape(flag)}", highlight=False)
    config_map = settings["priorityConfigMap"]
    if config_map is None:
        return
    console.print(
        escape(
            f"  Create ConfigMap {config_map['name']} in the namespace of its --namespace flag"
            f" (kube-system unless set), key {config_map['key']}:"
        ),
        highlight=False,
    )
    for line in config_map["data"].splitlines():
        console.print(f"    {escape(line)}", highlight=False)


def _output_section(plan: Plan, console: Console, name: str, title: str) -> Any:
    """The stack output `name` under a heading; None where the stack has none, or it is secret
    (then shown as such)."""
    if name not in plan.outputs:
        return None
    console.print(f"\n[bold]{title}[/bold]")
    if name in plan.secret_outputs:
        console.print(f"  {escape(SECRET)}", highlight=False)
        return None
    return plan.outputs[name]


def _add_children(
    node: Tree, parent: str | None, by_parent: Mapping[str | None, list[PlannedResource]]
) -> None:
    for resource in by_parent.get(parent, []):
        label = f"[cyan]{escape(resource.type)}[/cyan] [bold]{escape(resource.name)}[/bold]"
        flags = [f for f, on in (("protected", resource.protect),) if on]
        if resource.ignore_changes:
            flags.append("ignores changes to " + ", ".join(resource.ignore_changes))
        flags.extend(f"{op} within {limit}" for op, limit in resource.custom_timeouts.items())
        if flags:
            label += f" [yellow]({'; '.join(flags)})[/yellow]"
        child = node.add(label)
        for key, value in _key_inputs(resource):
            shown = escape(SECRET) if key.split(".")[0] in resource.secret_inputs else _short(value)
            child.add(f"[dim]{key}[/dim] = {shown}", highlight=False)
        _add_children(child, resource.urn, by_parent)


def _key_inputs(resource: PlannedResource) -> Iterable[tuple[str, Any]]:
    paths = KEY_INPUTS.get(resource.type)
    if paths is None:
        paths = [k for k, v in resource.inputs.items() if isinstance(v, str | int | float | bool)]
    for path in paths:
        for key, value in _values_at(resource.inputs, path.split("."), ""):
            yield key, _caps_first(value) if key == "spec.hard" else value


def _caps_first(hard: Mapping[str, Any]) -> str:
    """A quota's caps above 0, and how many it holds at 0: a tenant's quota holds every MIG
    slice the platform knows at 0 but those its `migQuota` allows, and a line of those would
    hide its caps."""
    caps = ", ".join(f"{k}: {v}" for k, v in sorted(hard.items()) if str(v) != "0")
    zeros = sum(str(v) == "0" for v in hard.values())
    return f"{caps or 'nothing'}; {zeros} more at 0" if zeros else caps


def _values_at(value: Any, parts: Sequence[str], shown: str) -> Iterable[tuple[str, Any]]:
    """The values at a dotted path, a `*` standing for each element of a list, one line each."""
    if not parts:
        if value not in (None, "", [], {}):
            yield shown, value
        return
    part, rest = parts[0], parts[1:]
    if part == "*":
        for index, element in enumerate(value if isinstance(value, list) else []):
            yield from _values_at(element, rest, f"{shown}[{index}]")
        return
    found = value.get(part) if isinstance(value, Mapping) else None
    yield from _values_at(found, rest, f"{shown}.{part}" if shown else part)


def _shown_outputs(plan: Plan) -> dict[str, Any]:
    return {
        name: SECRET if name in plan.secret_outputs else value
        for name, value in plan.outputs.items()
    }


def _short(value: Any) -> str:
    """A value as printed in the plan: at most one line's worth, never read as rich markup."""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    text = text if len(text) <= _MAX_VALUE_CHARS else text[: _MAX_VALUE_CHARS - 3] + "..."
    return escape(text)
