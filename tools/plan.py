"""The offline plan: what the program would create for a stack, without credentials.

Runs the real program under the Pulumi SDK's mock monitor (`tools.offline`) and prints the
resources as a tree of parents and children with the inputs that matter, the lookups that were
answered by offline stand-ins, and the stack outputs. `--json` prints the same for machines.
A configuration error is printed as the list of problems, and the command exits 2.
"""

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import typer
from rich.console import Console
from rich.tree import Tree

from components.config import ConfigError
from tools.offline import InvokeRecord, Plan, PlannedResource, run_program

EXIT_CONFIG_ERROR = 2
EXIT_PROGRAM_ERROR = 1

# The inputs worth reading in a plan, per resource type; other types show their scalars.
KEY_INPUTS: Mapping[str, Sequence[str]] = {
    "aws:eks/nodeGroup:NodeGroup": (
        "nodegroupName",
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
    "aws:autoscaling/tag:Tag": ("autoscalingGroupName", "tag"),
    "aws:iam/role:Role": ("name",),
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": ("policyArn",),
    "gcp:container/nodePool:NodePool": (
        "name",
        "nodeLocations",
        "autoscaling",
        "nodeConfig.machineType",
        "nodeConfig.imageType",
        "nodeConfig.guestAccelerators",
        "nodeConfig.spot",
        "nodeConfig.taints",
        "nodeConfig.labels",
    ),
    "kubernetes:helm.sh/v3:Release": ("chart", "version", "repositoryOpts.repo", "namespace"),
    "kubernetes:core/v1:Namespace": ("metadata.name", "metadata.labels"),
    "kubernetes:core/v1:ResourceQuota": ("metadata.namespace", "spec.hard"),
}
_MAX_VALUE_CHARS = 160


def main(
    stack: str = typer.Argument("dev", help="The stack to plan: Pulumi.<stack>.yaml."),
    as_json: bool = typer.Option(False, "--json", help="Print the plan as JSON."),
) -> None:
    """Plan a stack offline: no credentials, no Pulumi CLI, no cluster."""
    console = Console()
    errors = Console(stderr=True)
    try:
        plan = run_program(stack, raise_errors=False)
    except FileNotFoundError as missing:
        errors.print(f"[red]{missing}[/red]")
        raise typer.Exit(EXIT_CONFIG_ERROR) from None
    if isinstance(plan.error, ConfigError):
        errors.print(f"[red]{plan.error.report()}[/red]", highlight=False)
        raise typer.Exit(EXIT_CONFIG_ERROR)
    if plan.error is not None:
        errors.print(f"[red]The program failed: {plan.error}[/red]", highlight=False)
        raise typer.Exit(EXIT_PROGRAM_ERROR)
    if as_json:
        console.print_json(json.dumps(plan_as_json(plan)))
    else:
        print_plan(plan, console)


def plan_as_json(plan: Plan) -> dict[str, Any]:
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
                "inputs": r.inputs,
            }
            for r in plan.resources
        ],
        "standInLookups": [
            {"token": i.token, "args": i.args, "result": i.result} for i in plan.invokes
        ],
        "outputs": _shown_outputs(plan),
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
        for token, count in _invoke_counts(plan.invokes).items():
            console.print(f"  {token}" + (f" x{count}" if count > 1 else ""), highlight=False)
    console.print("\n[bold]Outputs[/bold]")
    for name, value in _shown_outputs(plan).items():
        console.print(f"  {name}: {_short(value)}", highlight=False)


def _add_children(
    node: Tree, parent: str | None, by_parent: Mapping[str | None, list[PlannedResource]]
) -> None:
    for resource in by_parent.get(parent, []):
        label = f"[cyan]{resource.type}[/cyan] [bold]{resource.name}[/bold]"
        flags = [f for f, on in (("protected", resource.protect),) if on]
        if resource.ignore_changes:
            flags.append("ignores changes to " + ", ".join(resource.ignore_changes))
        if flags:
            label += f" [yellow]({'; '.join(flags)})[/yellow]"
        child = node.add(label)
        for key, value in _key_inputs(resource):
            child.add(f"[dim]{key}[/dim] = {_short(value)}", highlight=False)
        _add_children(child, resource.urn, by_parent)


def _key_inputs(resource: PlannedResource) -> Iterable[tuple[str, Any]]:
    paths = KEY_INPUTS.get(resource.type)
    if paths is None:
        paths = [k for k, v in resource.inputs.items() if isinstance(v, str | int | float | bool)]
    for path in paths:
        value: Any = resource.inputs
        for part in path.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
        if value not in (None, "", [], {}):
            yield path, value


def _invoke_counts(invokes: Iterable[InvokeRecord]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for invoke in invokes:
        counts[invoke.token] = counts.get(invoke.token, 0) + 1
    return counts


def _shown_outputs(plan: Plan) -> dict[str, Any]:
    return {
        name: "[secret]" if name in plan.secret_outputs else value
        for name, value in plan.outputs.items()
    }


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= _MAX_VALUE_CHARS else text[: _MAX_VALUE_CHARS - 3] + "..."
